"""Tables for the terminal (rich) built from plain data."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from rich import box
from rich.table import Table
from rich.text import Text

from commtune.knobs import Value

F = TypeVar("F")

if TYPE_CHECKING:
    from commtune.knobs import KnobStatus
    from commtune.study import Acceptance
    from commtune.tune import TuneResult


def format_config(
    config: Mapping[str, Value], defaults: Mapping[str, Value] | None = None, sep: str = " "
) -> str:
    """``name=value`` pairs joined by ``sep``, leaving out knobs at their default."""
    items = [
        f"{k}={'1' if v is True else '0' if v is False else v}"
        for k, v in config.items()
        if defaults is None or defaults.get(k) != v
    ]
    return sep.join(items) or "(defaults)"


def compact_table(title: str) -> Table:
    """A table of configurations: no vertical rules, so that with one knob a line (``sep``
    of :func:`format_config`) an 80-column terminal folds only the longest settings."""
    return Table(
        title=title, box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False
    )


def result_table(result: TuneResult, defaults: Mapping[str, Value]) -> Table:
    from commtune.study import Gate  # the study record: not at --help

    acc = result.acceptance
    if acc is not None and acc.gate is Gate.INRUN:
        return inrun_table(acc)
    stat = result.statistic
    table = compact_table(f"study {result.study}: best configurations")
    configs = [format_config(row.config, defaults, sep="\n") for row in result.table]
    table.add_column("trial", justify="right")
    table.add_column("configuration", overflow="fold")
    table.add_column("runs", justify="right")
    table.add_column(stat, justify="right")
    table.add_column("vs ctrl", justify="right")
    table.add_column("spread", justify="right")
    table.add_column("speedup", justify="right")
    table.add_row("ref", "(library defaults)", "", f"{result.default_value:.4g}", "1", "", "1.00x")
    for row, config in zip(result.table, configs, strict=True):
        table.add_row(
            str(row.number),
            config,
            str(row.runs),
            f"{row.raw:.4g}",
            f"{row.value:.3f}",
            f"{100 * row.spread:.0f}%",
            f"{row.speedup:.2f}x",
        )
    table.caption = (
        f"configuration: the knobs not at their default; {stat}: of the runs as measured; "
        "vs ctrl: relative to the library defaults run "
        "next to them (what the search compares); speedup: 1 / vs ctrl; runs: raced, "
        "a configuration clearly slower than the best stops early"
    )
    return table


def inrun_table(acc: Acceptance) -> Table:
    """An in-run race's candidates, per call, pooled over its raced runs."""
    from commtune.study import InRunFinding

    found = _found(acc, InRunFinding)
    table = compact_table(f"{found.op} raced in-run ({found.raced_runs} run(s))")
    for name in ("algorithm", "blocks", "us a call", "ref us", "speedup", "interval"):
        table.add_column(name, justify="left" if name == "algorithm" else "right")
    for c in found.raced:
        low, high = c["interval"]
        table.add_row(c["name"], str(c["blocks"]), f"{1e6 * c['median_s']:.2f}",
                      f"{1e6 * c['reference_median_s']:.2f}", f"{c['speedup']:.3f}x",
                      f"{low:.3f}-{high:.3f}")  # fmt: skip
    table.caption = (
        f"against {found.reference_name} (the library's own decision) in the same blocks "
        f"of calls, each block every candidate once in a drawn order; "
        f"{found.promise or 'the calls own time'}"
    )
    return table


def _found(acc: Acceptance, kind: type[F]) -> F:
    """The verdict's finding, the record of its gate (``kind``)."""
    found = acc.finding_of(kind)
    if found is None:
        raise TypeError(f"a {acc.gate} verdict without its {kind.__name__}")
    return found


def noise_line(result: TuneResult) -> str:
    noise = result.noise
    return (
        f"{result.runs} runs in all; noise {100 * noise.cv:.1f} % (CV of a configuration's "
        f"runs), drift {noise.drift:.2f}x (slowest run of the defaults over the fastest)"
    )


def acceptance_lines(result: TuneResult) -> list[str]:
    """The verdict of a finished study, as the terminal shows it."""
    return verdict_lines(result.acceptance)


def verdict_lines(acc: Acceptance | None) -> list[str]:
    """The verdict in words (rich markup): the one place it is written, for the terminal
    and the report alike, with one run count."""
    from commtune.study import Gate, StrictFinding  # the study record: not at --help

    if acc is None:
        return ["no configuration to confirm: the default stays"]
    if acc.gate is Gate.RISK:
        return _risk_lines(acc)
    if acc.gate is Gate.EXACT:
        return _exact_lines(acc)
    if acc.gate is Gate.INRUN:
        return _inrun_lines(acc)
    if not acc.default_values:
        return [f"not accepted ({acc.reason}): the default stays"]
    found = acc.finding_of(StrictFinding) or StrictFinding()
    stat = found.statistic or "median"
    lines = []
    candidates = acc.candidates
    for c in candidates:
        if c.get("failure"):
            lines.append(f"  trial {c['trial']}: {c['failure']}")
        elif c.get("ci"):
            verdict = "faster" if c["faster"] else "not faster beyond noise"
            which = f"trial {c['trial']}" + (" reduced" if c.get("dropped") else "")
            lines.append(
                f"  {which} ({len(c['values'])} runs): {c['speedup']:.3f}x "
                f"[{c['ci'][0]:.3f}, {c['ci'][1]:.3f}], {verdict}"
            )
    runs = acc.runs()
    # the interval of each of k candidates is a (1 - 0.05 / k) one (Bonferroni)
    level = f"{100 * (1 - 0.05 / max(1, len(candidates))):.3g}%"
    what = f"{len(candidates)} best and the default" if candidates else "best and default"
    head = f"confirmation ({what}, {runs} runs, interleaved): "
    if acc.speedup is None or acc.ci is None or acc.p_value is None:
        head += "nothing was compared"
    else:
        head += (
            f"trial {acc.trial} {stat} speedup {acc.speedup:.3f}x, "
            f"{level} CI [{acc.ci[0]:.3f}, {acc.ci[1]:.3f}], p = {acc.p_value:.3g}"
        )
    mean = found.mean_speedup
    if mean is not None:
        head += f"; mean speedup {mean:.3f}x"
    lines.insert(0, head)
    dropped = acc.notes.dropped or {}
    if acc.accepted and dropped:
        lines.append(
            f"  reduced: {len(acc.params)} knob(s) of "
            f"{len(acc.notes.reduced_from or {}) or len(acc.params) + len(dropped)} set; "
            "left at the library's default: "
            + "; ".join(f"{k} ({why})" for k, why in dropped.items())
        )
    if acc.accepted:
        return [*lines, f"[green]accepted[/green]: trial {acc.trial} is faster beyond noise"]
    return [*lines, f"[yellow]not accepted[/yellow] ({acc.reason}): the default stays"]


def _inrun_lines(acc: Acceptance) -> list[str]:
    """An in-run race's verdict: the raced calls' test (the promise), the whole runs beside."""
    from commtune.study import InRunFinding

    found = _found(acc, InRunFinding)
    head = f"verdict in {found.raced_runs} raced run(s), {sum(found.calls)} calls of {found.op}"
    dropped = [f"{name} ({where})" for name, where in found.dropped.items()]
    if dropped:  # a raced run died in them: never evidence, never handed back
        head += (f"; {found.failed_runs} raced run(s) failed, dropped "
                 f"{', '.join(dropped)}")  # fmt: skip
    if found.selection:  # answered by message size: the file, tested on whole runs
        lines = [f"{head}: {acc.reason}"]
        if acc.accepted:
            return [*lines, f"[green]accepted[/green]: the selection file "
                    f"{found.selection['name']} ({format_config(acc.env)}; export --format "
                    "selection writes it)"]  # fmt: skip
        return [*lines, "[yellow]not accepted[/yellow]: the default stays"]
    if found.call_speedup is None or found.call_interval is None:
        return [f"{head}: {acc.reason}", "[yellow]not accepted[/yellow]: the default stays"]
    low, high = found.call_interval
    # a name raced at a segment size (pipeline@64K) and its own test's limit, where stored
    name = found.call_name or acc.params[found.knob]
    limit = found.call_limit if found.call_limit is not None else found.limit
    lines = [f"{head}: {name} {found.call_speedup:.3f}x the calls' time ({low:.3f}-"
             f"{high:.3f}), p = {found.call_p:.2g} at {limit:.2g}, raced on "
             f"{found.promise}"]  # fmt: skip
    if acc.speedup is not None and acc.ci is not None:
        # the promise is the whole runs' test (issue 93): the race only chose what it tests
        lines.append(f"the program's whole runs beside the defaults ({len(acc.best_values)} "
                     f"pairs, each pair's order by a coin): {acc.speedup:.3f}x "
                     f"({acc.ci[0]:.3f}-{acc.ci[1]:.3f}); the verdict, at --risk "
                     f"{found.risk:g}, is theirs")  # fmt: skip
    if acc.accepted:
        return [*lines, f"[green]accepted[/green]: {format_config(acc.params)}"]
    return [*lines, f"[yellow]not accepted[/yellow] ({acc.reason}): the default stays"]


def _exact_lines(acc: Acceptance) -> list[str]:
    """The verdict of a study whose runs do not differ (a deterministic simulation)."""
    from commtune.study import ExactFinding

    found = _found(acc, ExactFinding)
    lines = [f"verdict from deterministic runs ({found.arms or 0} configurations measured "
             f"once, the fastest once more): {found.said or acc.reason}"]  # fmt: skip
    if acc.accepted:
        return [*lines, f"[green]accepted[/green]: trial {acc.trial}"]
    return [*lines, "[yellow]not accepted[/yellow]: the default stays"]


def _risk_lines(acc: Acceptance) -> list[str]:
    """``--gate risk``'s verdict (:mod:`commtune.rule`): each configuration tested beside
    the defaults, what its runs there say, and the rule's sentence for the one handed back
    (or, where none passed, the best tested)."""
    from commtune.study import RiskFinding

    found = _found(acc, RiskFinding)
    ranked = "ranked by the simulation" if found.twin else "measured by the search"
    head = (
        f"verdict on fresh runs ({found.arms or 0} configurations {ranked}, "
        f"{found.tested or 0} tested beside the defaults in {acc.runs()} runs)"
    )
    lines = [head]
    for c in acc.candidates:
        name = c.get("label") or f"trial {c['trial']}"
        if c.get("failure"):
            lines.append(f"  {name}: {c['failure']}")
        elif c.get("speedup") is not None:
            low, high = c["ci"]
            end = "passed" if c["faster"] else (c.get("dropped") or "not passed")
            lines.append(
                f"  {name} ({len(c['values'])} runs): {c['speedup']:.3f}x "
                f"({low:.3f}-{high:.3f}), p = {c['p_value']:.2g}: {end}"
            )
    winner = found.label or f"trial {acc.trial}"
    if found.said:
        lines.append(f"{winner}: {found.said}")
    if acc.accepted:
        return [*lines, f"[green]accepted[/green]: {winner}"]
    return [*lines, f"[yellow]not accepted[/yellow] ({acc.reason}): the default stays"]


def knobs_table(statuses: Iterable[KnobStatus], title: str,
                layer_of: Callable[[str], str | None]) -> Table:  # fmt: skip
    """The catalog's knobs, each with the layer that reads it (``layer_of``: the vendor's
    ``knob_layer``; empty: the library itself)."""
    table = compact_table(title)
    for column in ("knob", "type", "domain", "default", "presets", "read by", "available"):
        table.add_column(column, overflow="fold")
    for s in statuses:
        k = s.knob
        table.add_row(
            k.name,
            k.type.value,
            k.describe_domain().replace("|", " | "),  # the domain has the step: [0, 64] step 8
            str(k.format(k.default)),
            ", ".join(k.presets),
            layer_of(k.name) or "",
            "yes" if s.available else f"no: {s.reason}",
        )
    return table


def folded_table(title: str, columns: Iterable[str], rows: Iterable[Iterable[str]]) -> Table:
    """A compact table whose cells fold rather than cut (names and paths printed whole)."""
    table = compact_table(title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def library_variables_table(rows: Iterable[dict[str, Any]], title: str) -> Table:
    """Every variable of an installed library (``knobs --all``)."""

    def how(r: dict[str, Any]) -> str:
        return "yes (catalog)" if r["catalog"] else "yes" if r["tunable"] else "no: constant"

    cells = ((r["name"], r["type"], str(r["default"]), " | ".join(r["enumerators"]), how(r))
             for r in rows)  # fmt: skip
    return folded_table(title, ("variable", "type", "default", "values", "tunable"), cells)


def installations_table(rows: Iterable[dict[str, Any]], title: str) -> Table:
    """The MPI installations found (``Installation.to_json`` each, ``default`` marked)."""
    cells = ((r["name"] + (" (default)" if r.get("default") else ""),
              f"{r['title']} {r['version']}", r["device_label"], r["launcher"], r["mpicc"])
             for r in rows)  # fmt: skip
    return folded_table(title, ("--mpi", "library", "device", "launcher", "compiler"), cells)


def trials_table(trials: list[dict[str, Any]], title: str) -> Table:
    table = compact_table(title)
    table.add_column("trial", justify="right")
    table.add_column("role")
    table.add_column("state")
    table.add_column("runs", justify="right")
    table.add_column("value", justify="right")
    # the note on a line of its own below the settings: a column of its own would take the
    # room the settings need, for the few trials that have one
    table.add_column("configuration (note)", overflow="fold")
    for t in trials:
        value = t["value"]
        reference = t["role"] == "reference"
        config = Text("(library defaults)" if reference else format_config(t["params"], sep="\n"))
        if t.get("note"):
            config.append(f"\n({t['note']})", style="italic")
        table.add_row(
            str(t["number"]),
            t["role"],
            t["state"].lower(),
            str(len(t.get("runs") or [])),
            "" if value is None else f"{value:.4g}",
            config,
        )
    return table


def studies_table(rows: list[dict[str, Any]], title: str) -> Table:
    """One row a study: its library, trials, verdict and the command it tunes."""
    table = compact_table(title)
    table.add_column("study", overflow="fold")
    table.add_column("mpi")
    table.add_column("trials", justify="right")
    table.add_column("speedup", justify="right")
    table.add_column("accepted")
    table.add_column("command", overflow="fold")
    for r in rows:
        speedup = "" if r["speedup"] is None else f"{r['speedup']:.2f}x"
        accepted = "yes" if r["accepted"] else "proposal, not measured" if r.get("proposal") \
            else "no"  # fmt: skip
        if r["source"] not in (None, "search"):
            accepted += f" ({r['source']})"
        mpi = r["mpi"] or "-"  # a study of Optuna's, not commtune's, in the same storage
        table.add_row(r["study"], mpi, str(r["trials"]), speedup, accepted, r["command"])
    return table


def knowledge_table(rows: Sequence[Any], title: str) -> Table:
    """The studies of one platform and library (``knowledge.Known``), best speedup first."""
    table = compact_table(title)
    for column in ("study", "program", "verdict", "speedup", "answer", "runs", "profiled"):
        table.add_column(column, overflow="fold")
    for k in rows:
        speedup = "" if k.speedup is None else f"{k.speedup:.2f}x"
        if k.ci:
            speedup += f" [{k.ci[0]:.2f}, {k.ci[1]:.2f}]"
        verdict = "accepted" if k.accepted else "near the best" if k.answer else "default stays"
        answer = " ".join(f"{n}={v}" for n, v in k.answer.items()) or "-"
        table.add_row(k.study, k.program, verdict, speedup, answer, str(k.runs),
                      "yes" if k.features is not None else "no")  # fmt: skip
    return table


def differences_table(differences: Sequence[Any], title: str) -> Table:
    """What differs between where a study measured and here (``tune.Difference``)."""
    table = compact_table(title)
    for column in ("what", "study's", "here"):
        table.add_column(column, overflow="fold")
    for d in differences:
        table.add_row(d.what, d.then, d.now)
    return table


def pareto_table(front: list[dict[str, Any]], metric: str, metrics: list[str]) -> Table:
    """The trials no other beats on the value and every further objective at once."""
    table = Table(
        title=f"Pareto front: {metric} (relative to the defaults) and {', '.join(metrics)}"
    )
    table.add_column("trial", justify="right")
    table.add_column("value", justify="right")
    for m in metrics:
        table.add_column(m, justify="right")
    for p in front:
        label = "ref" if p["role"] == "reference" else str(p["number"])
        table.add_row(label, f"{p['value']:.4g}", *(f"{p['objectives'][m]:.4g}" for m in metrics))
    return table


def guided_table(choices: Iterable[Any], title: str) -> Table:
    """The knobs a program's profile chose (``profile.guided``): impact and reason."""
    return folded_table(title, ("knob", "impact", "why"),
                        ((c.knob, f"{c.impact:.0%}", c.reason) for c in choices))  # fmt: skip


def next_steps(
    result: TuneResult,
    vendor: str,
    storage: str | None,
    command: Sequence[str] | None = None,
    bed: tuple[str, int] | None = None,
) -> list[str]:
    """What to type next, every line as it runs when pasted into a shell (explanations are
    ``#`` comment lines): run with the accepted settings (the tuned ``command`` itself where
    it is not a template), write them out, see the report; ``storage``: the ``--storage``
    to repeat (None: the default one). ``bed``: the test bed (name, nodes) the study ran
    across, gone now: the run goes through ``commtune bed exec`` on one brought up again
    under the same name (its hosts and agent are in the command), and down after."""
    import re
    import shlex

    from commtune.mpi import Vendor

    me = invoked_as()
    given = f" --storage {shlex.quote(storage)}" if storage else ""
    study = shlex.quote(result.study)
    steps = []
    if result.acceptance is not None and result.acceptance.accepted:
        impl = Vendor(vendor).impl
        fmt, name = impl.settings_file
        templated = not command or any("{" in arg for arg in command)
        launch = f"{impl.launcher_word} ..." if templated else shlex.join(command or ())
        run = f"{me} run --study {study}{given} -- {launch}"
        if bed is not None:
            steps.append(f"  {me} bed up --nodes {bed[1]} --name {bed[0]}")
            run = f"{me} bed exec {bed[0]} -- {run}"
        steps += [
            "  # the program with these settings:",
            f"  {run}",
            f"  {me} export {study}{given} --format {fmt} --output {name}",
        ]
        if bed is not None:
            steps.append(f"  {me} bed down {bed[0]}")
    page = re.sub(r"[^\w.-]+", "_", result.study) + ".html"
    steps.append(f"  {me} report {study}{given} -o {page}")
    return ["next:", *steps]


def invoked_as() -> str:
    """How to type commtune again: ``commtune`` where the shell finds this one by that
    name, else the path it was started from (a virtual environment's ``bin`` not on the
    ``PATH``)."""
    import shutil
    import sys
    from pathlib import Path

    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if script is None or script.name != "commtune":
        return "commtune"
    found = shutil.which("commtune")
    return "commtune" if found and Path(found).resolve() == script else str(script)


def by_size_table(rows: Sequence[Mapping[str, Any]], op: str, reference: str) -> Table:
    """An in-run race per message size (``tune.by_size``): each size's share of the raced
    calls' time, the fastest candidate passing its test there and its gain in the calls'
    time, the best estimate beside. The race's evidence: where the choices differ by size
    their selection file is what the whole runs test (the verdict says how it did)."""
    table = compact_table(f"{op} per message size, from the race (each size's test at its "
                          "share of the race's; whole runs decide)")  # fmt: skip
    for column in ("size", "ranks", "share", "chosen", "calls' speedup", "interval", "best"):
        table.add_column(column, overflow="fold")
    for r in rows:
        interval = r.get("interval")
        table.add_row(
            _bytes(int(r["bytes"])),
            str(r["ranks"]),
            f"{float(r['share']):.0%}",
            r["chosen"] or f"{reference} (none passed)",
            f"{r['speedup']:.3f}x" if r.get("speedup") else "",
            f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "",
            f"{r['best']} {float(r['best_speedup']):.3f}x",
        )
    return table


def _bytes(n: int) -> str:
    if n < 0:
        return "?"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"
