"""``commtune studies``, ``show``, ``export``, ``run`` and ``check``: what a storage holds,
the verdict of a study handed back in the library's own forms, and whether it still holds
on another installation or platform (``tune._stale``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from commtune.cli._common import (
    Command,
    add_json,
    add_storage,
    need_command,
    positive,
    print_json,
)
from commtune.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

    import optuna

    from commtune.knobs import Value
    from commtune.mpi import Installation


def _add_export(p: argparse.ArgumentParser) -> None:
    from commtune.report import FORMATS

    p.add_argument("study")
    p.add_argument("--format", choices=(*FORMATS, SELECTION), default="env",
                   help=f"{SELECTION}: the collective selection file a study answering by "
                   "message size hands back, as the library reads it")  # fmt: skip
    p.add_argument("--onto", metavar="FILE",
                   help="with --format selection: this site-wide selection file (commtune "
                   "sample's) with the study's collectives replaced by its answer")  # fmt: skip
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument(
        "--best",
        action="store_true",
        help="export the best measured configuration even if it was not accepted",
    )
    p.add_argument(
        "--trial",
        type=int,
        metavar="N",
        help="export trial N's configuration (e.g. a point of the Pareto front)",
    )
    p.add_argument(
        "--proposal",
        action="store_true",
        help="export a proposal no run has measured (a simulated study's answer for a real "
        "library), its header saying so; commtune check measures it",
    )
    add_storage(p)


def _add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--study", required=True)
    p.add_argument(
        "--no-check",
        action="store_true",
        help="on another installation or platform than the study's, run the configuration "
        "without checking it against the defaults first",
    )
    p.add_argument("--timeout", type=positive(float), default=600.0, help=_TIMEOUT_HELP)
    add_storage(p)


_TIMEOUT_HELP = "seconds a run of the check may take (default 600)"


def _add_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("study")
    p.add_argument(
        "--force",
        action="store_true",
        help="check even where nothing differs from the study's installation and platform",
    )
    p.add_argument("--timeout", type=positive(float), default=600.0, help=_TIMEOUT_HELP)
    p.add_argument(
        "--max-runs",
        type=positive(int),
        help="bound on the check's runs, pairs of the defaults and the configuration "
        "(default 20: commtune.tune's MAX_ROUNDS pairs); undecided at it, the "
        "configuration is not used",
    )
    add_json(p)
    add_storage(p)


def _add_studies(p: argparse.ArgumentParser) -> None:
    add_json(p)
    add_storage(p)


def _add_knowledge(p: argparse.ArgumentParser) -> None:
    add_json(p)
    add_storage(p)


def _add_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("study")
    add_json(p)
    add_storage(p)


def _chosen(study: optuna.Study, best: bool) -> tuple[dict[str, Value], dict[str, str]] | None:
    """The accepted configuration and the variables it needs beyond its knobs (a selection
    file); with ``best``, else the best measured one. None: the default stays."""
    from commtune.service import handed_env
    from commtune.study import StudyView

    view = StudyView(study)
    verdict = view.acceptance()
    if verdict is not None and verdict.accepted:
        return dict(verdict.params), handed_env(verdict)
    if best:
        top = view.best(1)
        return (dict(top[0].config), {}) if top else None
    return None


SELECTION = "selection"  # export's format of a study's selection file, whatever the library


def cmd_export(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.report import render
    from commtune.service import load_study, measured_on, study_knobs
    from commtune.study import StudyView
    from commtune.util import write_atomic

    store, study = load_study(args.storage, args.study)
    library, knobs = study_knobs(study)
    if args.trial is not None:
        trials = [t for t in StudyView(study).records if t.number == args.trial]
        if not trials or not trials[0].complete:
            raise UsageError(f"study {args.study!r} has no finished trial {args.trial}")
        chosen: tuple[dict[str, Any], dict[str, str]] | None = (dict(trials[0].config), {})
    else:
        chosen = _chosen(study, args.best)
    name = args.study
    if chosen is None and args.proposal and _proposed(study) is not None:
        chosen = _proposed(study)
        name = f"{args.study} (a proposal no run has measured: commtune check measures it)"
    if chosen is None and _proposed(study) is not None:
        raise UsageError(
            f"study {args.study!r} holds a proposal no run has measured against the "
            f"defaults: `commtune check {args.study} -- CMD` measures it first (--proposal "
            "exports it as it stands)"
        )
    if chosen is None:
        raise UsageError(
            f"study {args.study!r} has no accepted configuration (the default stays); "
            "--best exports the best measured one anyway"
        )
    config, extra = chosen
    if args.onto and args.format != SELECTION:
        raise UsageError("--onto merges selection files: it takes --format selection")
    if args.format == SELECTION:
        from commtune.service import selection_text
        from commtune.study import acceptance_of

        text = selection_text(acceptance_of(study), args.study, library, args.onto)
    else:
        text = render(args.format, library, knobs, config, name, extra, measured_on(store, study))
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_run(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.knobs import apply
    from commtune.launch import launcher_for
    from commtune.mpi import resolve_command
    from commtune.report import UI
    from commtune.service import load_study, stale_check, study_knobs

    command = need_command(command)
    store, study = load_study(args.storage, args.study)
    library, knobs = study_knobs(study)
    inst = resolve_command(command, library)
    chosen = _chosen(study, best=False)
    proposed = _proposed(study)
    if chosen is None and proposed is None:
        print(
            f"commtune: study {args.study} accepted no configuration; running with the "
            "library defaults",
            file=sys.stderr,
        )
    config, extra = chosen or proposed or ({}, {})
    _check_knobs_exist(config, inst, args.study)
    if proposed is not None:
        # a proposal no run has measured: checked against the defaults here first, always
        print(f"commtune: study {args.study} holds a proposal no run has measured against "
              "the defaults; checking it first", file=sys.stderr)  # fmt: skip
        check = stale_check(store, study, inst, command, knobs, config, extra, args.timeout,
                             UI(json_mode=True), stored=False, proposal=True)  # fmt: skip
        print(f"commtune: study {args.study}: {check.line()}", file=sys.stderr)
        if not check.use_configuration:
            config, extra = {}, {}
    elif config and not args.no_check:
        # messages go to stderr: the command's own output is the user's
        check = stale_check(store, study, inst, command, knobs, config, extra, args.timeout,
                             UI(json_mode=True), stored=True)  # fmt: skip
        if check.verdict != "unchanged":
            print(f"commtune: study {args.study}: {check.line()}", file=sys.stderr)
        if not check.use_configuration:
            config, extra = {}, {}
    launcher, remove = launcher_for(inst), [k.env for k in knobs]
    applied = apply(knobs, config, inst.impl)
    variables = launcher.reconciled({**applied.env, **extra}, remove=remove)
    plan = launcher.plan(command, variables, remove=remove, options=applied.launch)
    sys.stdout.flush()
    try:
        os.execvpe(plan.argv[0], plan.argv, plan.env)
    except OSError as exc:
        raise UsageError(f"cannot run {plan.argv[0]}: {exc.strerror}") from None


def cmd_check(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.mpi import resolve_command
    from commtune.report import UI, differences_table
    from commtune.service import load_study, stale_check, study_knobs
    from commtune.tune import MIN_ROUNDS

    if args.max_runs is not None and args.max_runs < 2 * MIN_ROUNDS:
        raise UsageError(f"--max-runs {args.max_runs}: a check needs at least "
                         f"{2 * MIN_ROUNDS} runs ({MIN_ROUNDS} pairs) to say a configuration "
                         "is no faster")  # fmt: skip
    command = need_command(command, "to check the study's configuration with")
    store, study = load_study(args.storage, args.study)
    library, knobs = study_knobs(study)
    inst = resolve_command(command, library)
    ui = UI(json_mode=args.json)
    chosen = _chosen(study, best=False)
    proposed = _proposed(study)
    if proposed is not None:
        config, extra = proposed
        _check_knobs_exist(config, inst, args.study)
        check = stale_check(store, study, inst, command, knobs, config, extra, args.timeout,
                             ui, stored=False, proposal=True,
                             max_runs=args.max_runs)  # fmt: skip
        ui.info(f"{inst.describe()}: the proposal {check.line()}")
        if args.json:
            print_json({"study": args.study, **check.to_json()})
        return 0
    if chosen is None:
        ui.info(
            f"study {args.study} accepted no configuration: the defaults stay, nothing to check"
        )
        if args.json:
            print_json({"study": args.study, "verdict": None, "runs": 0})
        return 0
    config, extra = chosen
    _check_knobs_exist(config, inst, args.study)  # refused, naming the knob
    check = stale_check(store, study, inst, command, knobs, config, extra, args.timeout, ui,
                         stored=False, force=args.force, max_runs=args.max_runs)  # fmt: skip
    if check.differences:
        ui.print(differences_table(check.differences, f"study {args.study} then and now"))
    ui.info(f"{inst.describe()}: {check.line()}")
    if args.json:
        print_json({"study": args.study, **check.to_json()})
    return 0


def _proposed(study: optuna.Study) -> tuple[dict[str, Value], dict[str, str]] | None:
    """A proposal no run has measured (an unverified prediction) and its variables."""
    from commtune.study import acceptance_of

    verdict = acceptance_of(study)
    if verdict is None or not verdict.proposal:
        return None
    return dict(verdict.params), dict(verdict.env)


def _check_knobs_exist(config: Mapping[str, Any], inst: Installation, study: str) -> None:
    """A configuration runs on another installation only if it has every knob set."""
    from commtune.knobs import installed_knobs

    if not config:
        return
    statuses = installed_knobs(inst)
    for name in config:
        status = statuses.get(name)
        if status is None or not status.available:
            why = status.reason if status is not None else "not a knob of this library"
            raise UsageError(
                f"study {study}'s configuration sets {name}, which {inst.describe()} "
                f"at {inst.prefix} cannot take: {why}"
            )


def cmd_studies(args: argparse.Namespace, command: list[str] | None) -> int:
    import optuna

    from commtune.report import UI, studies_table
    from commtune.store import Store
    from commtune.study import raw_acceptance, raw_spec

    store = Store(args.storage, create=False)
    rows: list[dict[str, Any]] = []
    for summary in optuna.get_all_study_summaries(store.optuna, include_best_trial=False):
        spec = raw_spec(summary.user_attrs)
        verdict = raw_acceptance(summary.user_attrs)
        rows.append(
            {
                "study": summary.study_name,
                "mpi": spec.get("library"),
                "trials": summary.n_trials,
                "command": " ".join(spec.get("command", [])),
                "speedup": verdict.get("speedup"),
                "accepted": bool(verdict.get("accepted")),
                "proposal": not verdict.get("accepted")
                and bool((verdict.get("extra") or {}).get("proposal")),
                "source": verdict.get("source"),
            }
        )
    ui = UI(json_mode=args.json)
    ui.print(studies_table(rows, f"studies in {store.url}"))
    if args.json:
        print_json({"studies": rows})
    return 0


def cmd_knowledge(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.knowledge import known
    from commtune.report import UI, knowledge_table
    from commtune.store import Store

    store = Store(args.storage, create=False)
    entries = known(store)
    groups: dict[tuple[str | None, str], list[Any]] = {}
    for entry in entries:
        groups.setdefault((entry.platform, entry.library), []).append(entry)
    ui = UI(json_mode=args.json)
    out = []
    for (platform, library), rows in sorted(groups.items(), key=lambda g: str(g[0])):
        fingerprint = store.platform(platform) if platform else None
        where = "an unrecorded platform"
        if fingerprint is not None:
            where = (f"{fingerprint.mpi_vendor} {fingerprint.mpi_version} on "
                     f"{fingerprint.nodes or fingerprint.cpu_model}")  # fmt: skip
        rows.sort(key=lambda k: -(k.speedup or 0.0))
        ui.print(knowledge_table(rows, f"{library} on {where} (platform {platform})"))
        out.append({"platform": platform, "library": library, "where": where,
                    "studies": [k.to_json() for k in rows]})  # fmt: skip
    if not entries:
        ui.info(f"no tuning studies in {store.url}")
    if args.json:
        print_json({"knowledge": out})
    return 0


def cmd_show(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.report import UI, trials_table
    from commtune.service import load_study
    from commtune.study import StudyView

    _, study = load_study(args.storage, args.study)
    view = StudyView(study)
    trials: list[dict[str, Any]] = []
    for t in view.records:
        note = str(t.failure or "")
        if t.duplicate_of is not None:
            note = f"same as trial {t.duplicate_of}"
        trials.append(
            {
                "number": t.number,
                "role": t.role.value if t.role else "?",
                "state": t.state.name,
                "value": t.value,
                "params": dict(t.config),
                "runs": t.values(),
                "relative": t.relatives(),
                "not_applied": dict(t.not_applied),
                "note": note,
            }
        )
    ui = UI(json_mode=args.json)
    ui.print(trials_table(trials, f"study {args.study}"))
    noise = view.noise()
    verdict = view.acceptance()
    runs = view.runs_spent(verdict)
    from commtune.study import Gate, InRunFinding

    if verdict is not None and verdict.gate is Gate.INRUN:  # raced: no trials
        from commtune.report import inrun_table, verdict_lines

        ui.print(inrun_table(verdict))
        for line in verdict_lines(verdict):
            ui.info(line)
        found = verdict.finding_of(InRunFinding)
        raced = found.raced_runs if found else 0
        runs += raced
        ui.info(f"{runs} runs: {raced} raced, the rest whole runs")
    else:
        ui.info(f"{runs} runs; noise {100 * noise.cv:.1f} %, drift {noise.drift:.2f}x")
    spec = view.spec()
    metrics = spec.objectives
    front = view.pareto(metrics) if metrics else []
    if front:
        from commtune.report import pareto_table

        ui.print(pareto_table(front, spec.metric, metrics))
    if args.json:
        print_json(
            {
                "study": args.study,
                "spec": spec.to_json(),
                "trials": trials,
                "acceptance": verdict.to_json() if verdict else None,
                "runs": runs,
                "noise": noise.to_json(),
                "pareto": front,
            }
        )
    return 0


def _add_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("study", nargs="?", help="the study to report on")
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="STUDY",
        help="several studies side by side (e.g. one app tuned on two MPIs or two machines)",
    )
    p.add_argument("-o", "--output", default="report.html", help="default: report.html")
    add_json(p)
    add_storage(p)


def cmd_report(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.report import UI, collect, page
    from commtune.service import load_study
    from commtune.util import write_atomic

    names = list(args.compare or []) if args.study is None else [args.study, *(args.compare or [])]
    if not names:
        raise UsageError("name a study, or several after --compare")
    if args.compare is not None and len(names) < 2:
        raise UsageError("--compare needs at least two studies")
    loaded = [load_study(args.storage, name) for name in names]  # all found, or nothing written
    ui = UI(json_mode=args.json)
    with ui.progress("writing the report", len(loaded)) as bar:
        data = []
        for store, study in loaded:
            data.append(collect(store, study))
            bar.advance(status=study.study_name)
    title = f"commtune: {' vs '.join(names)}" if len(names) > 1 else f"commtune study {names[0]}"
    text = page(data, title)
    write_atomic(args.output, text)
    size = len(text.encode())
    ui.info(f"wrote {args.output} ({size / 1024:.0f} KiB; open it in any browser, offline)")
    if args.json:
        print_json({"report": os.path.abspath(args.output), "bytes": size, "studies": names})
    return 0


COMMANDS = [
    Command(
        "export", "write a study's configuration in a library's format", _add_export, cmd_export
    ),
    Command(
        "run",
        "run a command with a study's accepted configuration",
        _add_run,
        cmd_run,
        takes_command=True,
    ),
    Command(
        "check",
        "check a study's configuration against the defaults on this installation",
        _add_check,
        cmd_check,
        takes_command=True,
    ),
    Command("studies", "list the studies in a storage", _add_studies, cmd_studies),
    Command(
        "knowledge",
        "what earlier studies found, per platform and library",
        _add_knowledge,
        cmd_knowledge,
    ),
    Command("show", "show one study and its trials", _add_show, cmd_show),
    Command(
        "report", "write a study's report: one HTML page with its plots", _add_report, cmd_report
    ),
]
