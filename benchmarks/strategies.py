"""The strategy race: every strategy on every surface, through the real tuning loop.

    python benchmarks/strategies.py [--quick] [--json] [--seeds N] [--budget N] [--jobs N]
                                    [--strategies a,b] [--surfaces a,b] [--png FILE]

Surfaces: the synthetic ones of ``commtune.harness`` at 0, 10 and 30 % Gaussian noise, and the
replayed real measurements in ``benchmarks/data/replay-*.json`` (made by
``benchmarks/replay_space.py``). Per strategy and surface: the median over seeds of the trials
until the recommended configuration (best observed) is within 2 % of the optimum, noise-free
(a run that never gets there counts as the budget), and the median regret after 10, 20 and 50
trials. ``--quick``: 10 seeds and a budget of 30 (default: 20 seeds, budget 50).
``--json`` prints one line whose ``summary`` maps each strategy to the mean over surfaces of
its median trials-to-2 %. A PNG of the median best-so-far regret curves is written.

Designs (``--no-drift`` leaves them out): the synthetic surfaces at 10 % noise, without drift
and on a machine that goes through phases of 5-30 runs at 1x and at 2.5x (or 1.3x) speed,
each run by two designs of up to 3 runs per configuration, same seeds: ``fixed`` (the design
before blocked comparisons: 3 runs each, every run relative to the reference, measured once
at the start) and ``raced`` (a control run of the defaults every 4 trial runs, each run
relative to the nearest control, repeats raced). The JSON line's ``drift`` maps each
strategy to the median share of the best speedup its recommendation holds after 15 trials
on the drift cases (raced), ``drift_fixed`` the same for the fixed design, ``runs`` /
``runs_fixed`` the median runs spent; ``designs`` holds the share after the whole budget
(median and worst seed) and the runs, per strategy, drift and design.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from commtune.harness import (
    SYNTHETIC,
    StrategyRun,
    Summary,
    Surface,
    held_out,
    replayed,
    run_strategy,
    run_tuner,
)
from commtune.study import DEFAULTS

STRATEGIES = ["random", "grid", "tpe", "cmaes", "ga", "model", "dqn", "auto"]
NOISES = [0.0, 0.1, 0.3]
DRIFTS = [2.5, 1.3]  # phase factors of the drift cases (at 10 % noise)
DESIGNS = ("fixed", "raced", "risk")  # risk: raced search, then --gate risk's duel
DESIGN_REPEATS = 3
CONFIRM_ROUNDS = 5  # the designs end with tune's confirmation (5 rounds, up to 15)
DRIFT_TRIALS = 15
TOLERANCE = 1.02  # the tail: handed back a configuration more than 2 % slower than the defaults
DATA = Path(__file__).with_name("data")
_SURFACES: dict[str, Surface] = {}


@dataclass
class Options:
    """Set from the command line before the workers start."""

    truth: str = "median"  # a replayed table's truth (--truth)
    confirm: int = DEFAULTS.confirm  # the tuner's first confirmation rounds (--confirm)
    risk: float = DEFAULTS.risk  # the tuner's --risk (--risk)
    min_gain: float = DEFAULTS.min_gain  # the tuner's --min-gain (--min-gain, a fraction)
    explore: float = DEFAULTS.explore  # the share of the runs the tuner's search may spend


OPTIONS = Options()


def table_path(name: str) -> Path:
    """A table's file: a stem in benchmarks/data (``table-mpich-ct_demo``) or a path of a
    table recorded elsewhere (a user's own ``tune --record``)."""
    return Path(name) if name.endswith(".json") else DATA / f"{name}.json"


def surface(name: str) -> Surface:
    if name not in _SURFACES:
        maker = SYNTHETIC.get(name)
        _SURFACES[name] = maker() if maker else replayed(table_path(name), OPTIONS.truth)
    return _SURFACES[name]


def job(args: tuple[str, str, float, int, int, float, str, int]) -> StrategyRun:
    strategy, name, noise, seed, budget, drift, design, repeats = args
    run = run_strategy(
        strategy,
        surface(name),
        noise,
        seed,
        budget,
        drift=drift,
        design="raced" if design == "risk" else design,
        repeats=repeats,
        confirm_rounds=CONFIRM_ROUNDS if repeats > 1 else 0,
        gate="risk" if design == "risk" else "strict",
    )
    return replace(run, design=design)


def drift_summary(runs: list[StrategyRun], design: str) -> tuple[dict, dict]:
    """strategy -> median share of the best speedup after DRIFT_TRIALS trials, and median
    runs spent, over the drift cases of one design."""
    shares: dict[str, list[float]] = {}
    spent: dict[str, list[int]] = {}
    for r in runs:
        if r.drift != 1.0 and r.design == design:
            shares.setdefault(r.strategy, []).append(r.share_after(DRIFT_TRIALS))
            spent.setdefault(r.strategy, []).append(r.runs)
    return (
        {s: float(np.median(v)) for s, v in shares.items()},
        {s: float(np.median(v)) for s, v in spent.items()},
    )


def design_cells(runs: list[StrategyRun], budget: int) -> list[dict]:
    """Per strategy, drift and design: the share of the best speedup after DRIFT_TRIALS and
    after the budget (median and worst seed) and the median runs."""
    out = []
    for strategy, drift, design in sorted({(r.strategy, r.drift, r.design) for r in runs}):
        sel = [r for r in runs if (r.strategy, r.drift, r.design) == (strategy, drift, design)]
        at15 = [r.share_after(DRIFT_TRIALS) for r in sel]
        end = [r.share_after(budget) for r in sel]
        picked = [r.measured_share_after(budget) for r in sel]
        verdict = [r.confirmed_share() for r in sel]
        # each study's delivered speedup on its own surface; the gain per surface, averaged
        best = {n: surface(n).default_regret + 1.0 for n in {r.surface for r in sel}}
        delivered = [best[r.surface] * r.confirmed_share() for r in sel]
        gains = [
            (float(np.mean([d for r, d in zip(sel, delivered, strict=True) if r.surface == n]))
             - 1) / (b - 1) if b > 1 else 1.0
            for n, b in best.items()
        ]  # fmt: skip
        out.append(
            {
                "strategy": strategy,
                "drift": drift,
                "design": design,
                "share15": float(np.median(at15)),
                "share15_worst": float(min(at15)),
                "share": float(np.median(end)),
                "share_worst": float(min(end)),
                "picked": float(np.median(picked)),
                "picked_worst": float(min(picked)),
                "confirmed": float(np.median(verdict)),
                "confirmed_worst": float(min(verdict)),
                "gain": float(np.mean(gains)),
                "tail": sum(d * TOLERANCE < 1.0 for d in delivered),
                "runs": float(np.median([r.runs for r in sel])),
                "confirm_runs": float(np.median([r.confirm_runs for r in sel])),
                "seeds": len(sel),
            }
        )
    return out


def design_table(cells: list[dict]) -> str:
    lines = [
        f"| strategy | drift | design | share@{DRIFT_TRIALS} (median / worst) "
        "| share@budget (median / worst) | of the best measured (median / worst) "
        "| confirmed (median / worst) | gain captured | tail | runs | confirmation runs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(
            f"| {c['strategy']} | {c['drift']:g}x | {c['design']} "
            f"| {100 * c['share15']:.1f} % / {100 * c['share15_worst']:.1f} % "
            f"| {100 * c['share']:.1f} % / {100 * c['share_worst']:.1f} % "
            f"| {100 * c['picked']:.1f} % / {100 * c['picked_worst']:.1f} % "
            f"| {100 * c['confirmed']:.1f} % / {100 * c['confirmed_worst']:.1f} % "
            f"| {100 * c['gain']:.0f} % | {c['tail']}/{c['seeds']} "
            f"| {c['runs']:g} | {c['confirm_runs']:g} |"
        )
    return "\n".join(lines)


def plot(summary: Summary, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = summary.cases()
    cols = 4
    rows = -(-len(cases) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    cells = summary.cells()
    for ax, (name, noise) in zip(axes.flat, cases, strict=False):
        for strategy in summary.strategies():
            runs = cells.get((strategy, name, noise), [])
            if not runs:
                continue
            n = min(len(r.regret) for r in runs)
            curve = np.median([r.regret[:n] for r in runs], axis=0)
            ax.plot(np.arange(1, n + 1), np.maximum(curve, 1e-4), label=strategy)
        ax.axhline(0.02, color="grey", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_title(f"{name}, noise {noise:.0%}", fontsize=9)
        ax.set_xlabel("trials")
        ax.set_ylabel("regret (median)")
    for ax in list(axes.flat)[len(cases) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def table(summary: Summary) -> str:
    cells = summary.cells()
    strategies = summary.strategies()
    lines = [
        "| surface | noise | " + " | ".join(strategies) + " |",
        "|---|---|" + "---|" * len(strategies),
    ]
    for name, noise in summary.cases():
        row = [
            f"{summary.median_trials(cells[(s, name, noise)]):g}"
            if (s, name, noise) in cells
            else "-"
            for s in strategies
        ]
        lines.append(f"| {name} | {noise:.0%} | " + " | ".join(row) + " |")
    mean = summary.per_strategy()
    lines.append("| **mean** | | " + " | ".join(f"**{mean[s]:.1f}**" for s in strategies) + " |")
    return "\n".join(lines)


def regret_table(summary: Summary) -> str:
    cells = summary.cells()
    marks = [n for n in (10, 20, 50) if n <= summary.budget]
    lines = [
        "| strategy | " + " | ".join(f"regret@{n}" for n in marks) + " | reached |",
        "|---|" + "---|" * (len(marks) + 1),
    ]
    for s in summary.strategies():
        runs = [r for (st, *_), rs in cells.items() if st == s for r in rs]
        values = [f"{100 * np.median([r.regret_after(n) for r in runs]):.1f} %" for n in marks]
        reached = sum(r.reached is not None for r in runs)
        lines.append(f"| {s} | " + " | ".join(values) + f" | {reached}/{len(runs)} |")
    return "\n".join(lines)


# -- the replay tables: the whole design against TPE and random at the same runs -----------------
TABLE_RUNS = 30  # the study's bound, confirmation included (issue 28)
KNOWN_RUNS = 15  # the same with what the other programs' studies found
OURS = DEFAULTS.strategy  # the tuner's defaults: strategy, trials, repeats, confirmation
KEYS = ("ours", "tpe", "random", "strict", "known", "cold15")  # the table race's columns


def tables() -> list[str]:
    return sorted(p.stem for p in DATA.glob("table-*.json"))


def installation_of_table(name: str) -> str:
    """``table-openmpi-ct_demo`` -> ``openmpi`` (the programs of one installation share a
    space); a table recorded elsewhere is its own."""
    name = Path(name).stem
    if not name.startswith("table-") or name.count("-") < 2:
        return name
    return name.split("-")[1] + ("-" + name.split("-")[2] if name.count("-") > 2 else "")


def ours(args: tuple[str, int, int, tuple[dict, ...], float, str]) -> StrategyRun:
    name, seed, max_runs, hints, drift, gate = args
    return run_tuner(surface(name), 0.0, seed, max_runs, OURS, confirm=OPTIONS.confirm,
                      gate=gate, risk=OPTIONS.risk, min_gain=OPTIONS.min_gain,
                      explore=OPTIONS.explore, hints=hints, drift=drift)  # fmt: skip


def plain(args: tuple[str, str, int, int, float]) -> StrategyRun:
    strategy, name, seed, budget, drift = args
    return run_strategy(strategy, surface(name), 0.0, seed, budget, design="fixed", repeats=1,
                    drift=drift)  # fmt: skip


def known_hints(
    name: str, seed: int, found: dict[tuple[str, int], StrategyRun]
) -> tuple[dict, ...]:
    """What the other programs' studies (same installation, same seed) left in the knowledge
    base (accepted, else near the best), the most similar program first (by the recorded
    reference profiles), as a new study would get it."""
    from commtune.knowledge import distance

    mine = json.loads(table_path(name).read_text()).get("features") or {}
    others = []
    for other in tables():
        if other == name or installation_of_table(other) != installation_of_table(name):
            continue
        run = found.get((other, seed))
        if run is None or not run.known:
            continue
        theirs = json.loads(table_path(other).read_text()).get("features") or {}
        # knowledge.similar's order: the nearest program first, accepted answers before others
        far = distance(mine, theirs) if mine and theirs else 1.0
        others.append((far, run.answer is None, run.known))
    out: list[dict] = []
    for _, _, answer in sorted(others, key=lambda item: item[:2]):
        if answer not in out:
            out.append(answer)
    return tuple(out)


def cell(runs: list[StrategyRun], share: Callable[[StrategyRun], float], best: float) -> dict:
    """What the studies of one table handed back, as a user feels it: the **gain captured**
    (mean over seeds of the delivered speedup - 1, over the best speedup - 1; the delivered
    speedup is the defaults' true value over the handed-back configuration's, 1 when the
    defaults are kept), the **tail** (studies handing back a configuration more than
    ``TOLERANCE`` slower than the defaults), the median and worst share of the best speedup,
    the runs, and the estimate's bias (the mean estimated over the mean true speedup of
    what was handed back, where something was)."""
    shares = [share(r) for r in runs]
    delivered = [best * x for x in shares]
    # where nothing beats the defaults there is no gain to capture: its figure is absent
    # (the table is reported apart, by its tail and its runs), never a 1.0 of a tie
    handed = [(r.estimate, d) for r, d in zip(runs, delivered, strict=True)
              if r.estimate is not None and r.changed]  # fmt: skip
    return {
        "gain": (float(np.mean(delivered)) - 1.0) / (best - 1.0) if has_gain(best) else None,
        "tail": sum(d * TOLERANCE < 1.0 for d in delivered),
        "share": float(np.median(shares)),
        "worst": float(min(shares)),
        "runs": float(np.median([total(r) for r in runs])),
        "kept": sum(not r.changed for r in runs),
        "seeds": len(shares),
        "bias": (
            float(np.mean([e for e, _ in handed]) / np.mean([d for _, d in handed]))
            if handed
            else None
        ),
        "handed": len(handed),
    }


NO_GAIN = DEFAULTS.min_gain  # a table whose best is not this much faster has no gain to capture


def has_gain(best: float) -> bool:
    """Whether a table's best configuration beats the defaults by more than ``NO_GAIN``
    (the tuner's default --min-gain: a smaller gain is one it is told not to propose)."""
    return best > 1.0 + NO_GAIN


def gains(row: dict, held: bool = True) -> bool:
    """Whether a table has a gain to capture: its best beats the defaults by more than
    ``NO_GAIN``, and (``held``) so does the best of half its rounds on the other half
    (``race.held_out``): a best that only its own few runs favour is the table's noise, and
    what a study captures of it is luck. ``held=False``: the earlier yardstick, the best on
    its own runs alone."""
    return has_gain(row["optimum_speedup"]) and (not held or has_gain(row["held_out"]))


def total(run: StrategyRun) -> int:
    """Every run of the study: the reference, the search's, its controls, the confirmation."""
    return run.runs + run.confirm_runs


def with_bases(
    pool: ProcessPoolExecutor, full: list[StrategyRun], d: float, names: Sequence[str] = ()
) -> list[StrategyRun]:
    """TPE and random search on each study's table and seed, given the runs it spent;
    ``names``: the tables as given (a table recorded elsewhere is its path, a run names its
    stem)."""
    given = {Path(n).stem: n for n in names}
    jobs = [(b, given.get(r.surface, r.surface), r.seed, max(2, total(r)), d)
            for r in full for b in ("tpe", "random")]  # fmt: skip
    return list(pool.map(plain, jobs))


def base_row(name: str, full: list[StrategyRun], bases: list[StrategyRun]) -> dict:
    """A table's row with the tuner's, TPE's and random's cells."""
    best = surface(name).default_regret + 1.0
    mine = surface(name).name
    row: dict = {"table": name, "optimum_speedup": best,
                 "held_out": held_out(table_path(name), OPTIONS.truth)}  # fmt: skip
    row["ours"] = cell([r for r in full if r.surface == mine], StrategyRun.confirmed_share, best)
    for b in ("tpe", "random"):
        row[b] = cell([r for r in bases if r.surface == mine and r.strategy == b],
                      lambda r: r.share_after(len(r.regret)), best)  # fmt: skip
    return row


def table_race(names: list[str], seeds: int, jobs: int, phases: bool = False) -> list[dict]:
    """Per table and seed: the tuner's whole design bounded at TABLE_RUNS (search,
    controls, confirmation), TPE and random search given the runs it spent (one run per
    trial, the best measured handed back), and the design bounded at KNOWN_RUNS starting
    from the other programs' answers (leave one program out). ``phases``: the machine's
    state held over stretches of runs (``ReplayExecutor``'s phases) instead of drawn anew
    for every run."""
    d = 2.0 if phases else 1.0  # a replayed table's drift: its recorded rounds as phases
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        studies = [(n, s) for n in names for s in range(seeds)]
        full = list(pool.map(ours, [(n, s, TABLE_RUNS, (), d, "risk") for n, s in studies]))
        strict = list(pool.map(ours, [(n, s, TABLE_RUNS, (), d, "strict") for n, s in studies]))
        found = {(r.surface, r.seed): r for r in full}
        bases = with_bases(pool, full, d, names)
        known_jobs = [(n, s, KNOWN_RUNS, known_hints(n, s, found), d, "risk") for n in names
                      for s in range(seeds)]  # fmt: skip
        known = list(pool.map(ours, known_jobs))
        cold = list(pool.map(ours, [(n, s, KNOWN_RUNS, (), d, "risk") for n, s in studies]))
    out = []
    for name in names:
        row = base_row(name, full, bases)
        best, confirmed, mine = (
            row["optimum_speedup"],
            StrategyRun.confirmed_share,
            surface(name).name,
        )
        row["strict"] = cell([r for r in strict if r.surface == mine], confirmed, best)
        row["known"] = cell([r for r in known if r.surface == mine], confirmed, best)
        row["cold15"] = cell([r for r in cold if r.surface == mine], confirmed, best)
        row["hinted"] = sum(bool(h) for n, _, _, h, _, _ in known_jobs if n == name)
        out.append(row)
    return out


def risk_curve(names: list[str], seeds: int, jobs: int, risks: list[float]) -> list[dict]:
    """The tuner's design at each ``--risk`` (the rest of its settings its defaults), TPE
    and random at the runs it spent, same seeds, in one race: per risk the summary of
    ``summary`` (gain captured on the median table with a gain, per group; the tail over
    every table)."""
    out = []
    saved = OPTIONS.risk
    try:
        for risk in risks:
            OPTIONS.risk = risk
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                studies = [(n, s) for n in names for s in range(seeds)]
                full = list(pool.map(ours, [(n, s, TABLE_RUNS, (), 1.0, "risk")
                                            for n, s in studies]))  # fmt: skip
                bases = with_bases(pool, full, 1.0, names)
            rows = [base_row(name, full, bases) for name in names]
            out.append({"risk": risk, "summary": summary(rows, ("ours", "tpe", "random")),
                        "rows": rows})  # fmt: skip
    finally:
        OPTIONS.risk = saved
    return out


def curve_table(curve: list[dict]) -> str:
    """One line per --risk: the gain captured on the median table with a gain (every table,
    the project's programs, real programs), TPE's and random's at the same runs, and the
    tail over every table."""
    apart = ("no gain", "tail_all", "studies_all", "own")
    groups = [g for g in curve[0]["summary"] if g not in apart]
    head = " | ".join(f"gain, {g}: tuner / TPE / random" for g in groups)
    lines = [f"| --risk | {head} | tail, every table: tuner / TPE / random | wins |",
             "|---|" + "---|" * len(groups) + "---|---|"]  # fmt: skip
    for point in curve:
        f = point["summary"]
        gains = " | ".join(" / ".join(f"{100 * f[g]['gain'][k]:.0f} %" for k in
                                      ("ours", "tpe", "random")) for g in groups)  # fmt: skip
        tail = " / ".join(f"{f['tail_all'][k]}" for k in ("ours", "tpe", "random"))
        wins = f"{f['all']['wins']}/{f['all']['tables']}" if "all" in f else "-"
        lines.append(f"| {point['risk']:g} | {gains} | {tail} of {f['studies_all']['ours']} "
                     f"| {wins} |")  # fmt: skip
    return "\n".join(lines)


def curve_plot(curve: list[dict], path: Path) -> None:
    """Gain captured (median table with a gain) and tail against --risk, TPE's and
    random's beside as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    risks = [p["risk"] for p in curve]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    for k, style in (("ours", "o-"), ("tpe", "--"), ("random", ":")):
        a.plot(risks, [100 * p["summary"]["all"]["gain"][k] for p in curve], style, label=k)
        b.plot(risks, [100 * p["summary"]["tail_all"][k] / p["summary"]["studies_all"][k]
                       for p in curve], style, label=k)  # fmt: skip
    a.set(xscale="log", xlabel="--risk", ylabel="gain captured, median table (%)")
    b.set(xscale="log", xlabel="--risk", ylabel="studies > 2 % slower (%)")
    b.axhline(1.0, color="grey", lw=0.5)
    a.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


DQN_BUDGET = 30  # below the tables' sizes (42-60): a space the budget covers is raced whole


def prior_for(name: str) -> str | None:
    """A Q-network pre-trained on the other programs' tables of the same installation (the
    held-out one's never), or for a synthetic surface on its siblings, written under
    benchmarks/out/priors; None: no other table."""
    from commtune.strategies import pretrain_dqn
    from commtune.trial import ReplayExecutor

    if name in SYNTHETIC:
        programs = [({}, *sibling(surface(name), k)) for k in range(SIBLINGS)]
    else:
        same = installation_of_table(name)
        others = [t for t in tables() if t != name and installation_of_table(t) == same]
        if not others:
            return None
        programs = []
        for other in others:
            surf = surface(other)
            features = json.loads((DATA / f"{other}.json").read_text()).get("features") or {}
            measured = [(c, surf.table.get(ReplayExecutor.key(c))) for c in surf.configs()]
            programs.append((features, surf.default_value, measured))
    path = Path(__file__).with_name("out") / "priors" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(pretrain_dqn(surface(name).space, programs)))
    return str(path)


SIBLINGS = 2  # the "other programs" a synthetic surface's Q-network is pre-trained on
SYNTHETIC_DQN_BUDGET = 50  # as the synthetic surfaces' race


def sibling(surf: Surface, k: int) -> tuple[float, list[tuple[dict, float | None]]]:
    """Another program on the same platform, for a synthetic surface: its values times a
    factor per knob value (1 + 5 % x a normal draw, seeded by ``k``), so its optimum lies
    near the surface's but not always on it; crashes stay crashes. Its defaults' value and
    every configuration's value (None: a crash)."""
    rng = np.random.default_rng(1000 + k)
    factor = {(d.knob.name, str(v)): 1.0 + 0.05 * float(rng.standard_normal())
              for d in surf.space.dimensions for v in d.candidates()}  # fmt: skip

    def value(c: dict) -> float | None:
        v = surf.value(c)
        if not math.isfinite(v):
            return None
        return v * math.prod(factor.get((n, str(x)), 1.0) for n, x in c.items())

    reference = value(dict(surf.space.defaults()))
    return reference or 1.0, [(c, value(c)) for c in surf.configs()]


def dqn_budget(name: str) -> int:
    return SYNTHETIC_DQN_BUDGET if name in SYNTHETIC else DQN_BUDGET


def dqn_job(args: tuple[str, int, str]) -> StrategyRun:
    name, seed, warm = args
    options = {"warm": warm} if warm else None
    return run_strategy("dqn", surface(name), 0.0, seed, dqn_budget(name), options)


def dqn_race(names: list[str], seeds: int, jobs: int) -> list[dict]:
    """``--strategy dqn`` cold and warm (pre-trained on the other programs' tables, or a
    synthetic surface's siblings) on each table or surface: trials to within 2 % of the
    best (the budget if never) and the share after 20."""
    priors = {n: prior_for(n) for n in names}
    work = [(n, s, w) for n in names if priors[n] for s in range(seeds)
            for w in ("", priors[n])]  # fmt: skip
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(dqn_job, work))
    out = []
    for name in names:
        cell = {}
        for label, warm in (("cold", False), ("warm", True)):
            sel = [r for r, (n, _, w) in zip(runs, work, strict=True) if n == name
                   and bool(w) == warm]  # fmt: skip
            if sel:
                cell[label] = {
                    "trials": float(np.median([r.trials_to_reach(dqn_budget(name)) for r in sel])),
                    "reached": sum(r.reached is not None for r in sel),
                    "share20": float(np.median([r.share_after(20) for r in sel])),
                    "seeds": len(sel),
                }
        if cell:
            out.append({"table": name, **cell})
    return out


def dqn_table(rows: list[dict]) -> str:
    lines = ["| table | cold: trials to 2 % (reached) | warm | cold: share after 20 | warm |",
             "|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        c, w = r["cold"], r["warm"]
        name = r["table"].removeprefix("table-")
        lines.append(f"| {name} | {c['trials']:g} ({c['reached']}/{c['seeds']}) "
                     f"| {w['trials']:g} ({w['reached']}/{w['seeds']}) "
                     f"| {100 * c['share20']:.1f} % | {100 * w['share20']:.1f} % |")  # fmt: skip
    return "\n".join(lines)


def tables_table(rows: list[dict]) -> str:
    """Per table and column: gain captured, tail, median share of the best, runs, kept
    defaults; the bottom lines: the median table's figures and the tables where the tuner's
    gain is at least TPE's and random's."""
    lines = [
        f"| table | best | tuner, <= {TABLE_RUNS} runs | TPE, same runs "
        f"| random, same runs | --gate strict, <= {TABLE_RUNS} runs "
        f"| tuner + knowledge, <= {KNOWN_RUNS} runs "
        f"| tuner cold, <= {KNOWN_RUNS} runs | tuner's estimate / truth |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def c(d: dict) -> str:
        gain = "no gain" if d["gain"] is None else f"{100 * d['gain']:.0f} %"
        return (f"{gain} (tail {d['tail']}/{d['seeds']}; share "
                f"{100 * d['share']:.1f} %; {d['runs']:g} runs; kept {d['kept']})")  # fmt: skip

    for r in rows:
        cells = " | ".join(c(r[k]) for k in KEYS)
        bias = r["ours"]["bias"]
        said = f"{bias:.3f} ({r['ours']['handed']})" if bias is not None else "-"
        name = Path(r["table"]).stem.removeprefix("table-")
        best = f"{r['optimum_speedup']:.2f}x ({r['held_out']:.3f}x held out)"
        lines.append(f"| {name} | {best} | {cells} | {said} |")
    lines += summary_lines(rows)
    return "\n".join(lines)


def groups_of(rows: list[dict], held: bool = True) -> list[tuple[str, list[dict]]]:
    """Every table with a gain (``gains``), then each group (the project's programs, real
    programs, simulated at scale) where two or more have tables; the tables where nothing
    beats the defaults apart."""
    gain = [r for r in rows if gains(r, held)]
    groups = {"project's programs": [r for r in gain if not _real(r) and not _simulated(r)],
              "real programs": [r for r in gain if _real(r)],
              "simulated at scale": [r for r in gain if _simulated(r)]}  # fmt: skip
    several = sum(bool(members) for members in groups.values()) >= 2
    parts = [("", gain), *groups.items()] if several else [("", gain)]
    return [(label, members) for label, members in parts if members]


def summary(rows: list[dict], keys: tuple[str, ...] = KEYS) -> dict:
    """The race's figures per group (``groups_of``) and column: the median table's gain
    captured, the tail and the studies, the tables where the tuner's gain is at least
    TPE's and random's; and the tables where nothing beats the defaults, apart (their
    tail and runs: no gain to capture, no win to count). ``own``: the same groups by the
    earlier yardstick (a table's best on its own runs, not held out)."""

    def figures(members: list[dict]) -> dict:
        return {"tables": len(members),
                "gain": {k: float(np.median([r[k]["gain"] for r in members])) for k in keys},
                "tail": {k: sum(r[k]["tail"] for r in members) for k in keys}}  # fmt: skip

    out: dict = {"own": {label or "all": figures(members)
                         for label, members in groups_of(rows, held=False)}}  # fmt: skip
    for label, members in groups_of(rows):
        out[label or "all"] = {
            **figures(members),
            "studies": {k: sum(r[k]["seeds"] for r in members) for k in keys},
            "share": {k: float(np.median([r[k]["share"] for r in members])) for k in keys},
            "wins": sum(
                r["ours"]["gain"] >= max(r["tpe"]["gain"], r["random"]["gain"]) for r in members
            ),
        }
    null = [r for r in rows if not gains(r)]
    out["no gain"] = {
        "tables": [Path(r["table"]).stem for r in null],
        "tail": {k: sum(r[k]["tail"] for r in null) for k in keys},
        "studies": {k: sum(r[k]["seeds"] for r in null) for k in keys},
        "runs": {k: float(np.median([r[k]["runs"] for r in null])) if null else None for k in keys},
    }
    out["tail_all"] = {k: sum(r[k]["tail"] for r in rows) for k in keys}
    out["studies_all"] = {k: sum(r[k]["seeds"] for r in rows) for k in keys}
    return out


def summary_lines(rows: list[dict]) -> list[str]:
    figures = summary(rows)
    lines = []
    for label, members in groups_of(rows):
        f = figures[label or "all"]
        total = " | ".join(f"**{100 * f['gain'][k]:.0f} %** (tail {f['tail'][k]}/"
                           f"{f['studies'][k]}; share {100 * f['share'][k]:.1f} %)"
                           for k in KEYS)  # fmt: skip
        name = f"median table with a gain{', ' + label if label else ''} ({len(members)})"
        lines.append(f"| **{name}** | | {total} | |")
    null = figures["no gain"]
    if null["tables"]:
        cells = " | ".join(f"tail {null['tail'][k]}/{null['studies'][k]}; "
                           f"{null['runs'][k]:g} runs" for k in KEYS)  # fmt: skip
        lines.append(f"| **no gain to capture ({len(null['tables'])}: nothing beats the "
                     f"defaults by {100 * NO_GAIN:g} % on runs it was not chosen on)** | "
                     f"| {cells} | |")  # fmt: skip
    for label, f in figures["own"].items():
        said = "" if label == "all" else f", {label}"
        cells = " | ".join(f"{100 * f['gain'][k]:.0f} % (tail {f['tail'][k]})" for k in KEYS)
        lines.append(f"| the earlier yardstick: median table whose best beats the defaults "
                     f"on its own runs{said} ({f['tables']}) | | {cells} | |")  # fmt: skip
    every = " | ".join(f"tail {figures['tail_all'][k]}/{figures['studies_all'][k]}"
                       for k in KEYS)  # fmt: skip
    lines.append(f"| **every table ({len(rows)})** | | {every} | |")
    bias = [r["ours"]["bias"] for r in rows if r["ours"]["bias"] is not None]
    if bias:
        lines.append(f"\nthe tuner's estimate over the truth of what it handed back: "
                     f"{min(bias):.3f}-{max(bias):.3f} over the tables")  # fmt: skip
    for label, members in groups_of(rows):
        said = f" ({label})" if label else ""
        lines.append(f"\ntuner's gain >= TPE's and random's on {figures[label or 'all']['wins']}"
                     f" of {len(members)} tables with a gain{said}")  # fmt: skip
    return lines


def _simulated(row: dict) -> bool:
    """A table recorded on SimGrid's SMPI at scale (``benchmarks/smpi_tables.py``)."""
    return Path(row["table"]).stem.startswith("table-smpi-")


def _real(row: dict) -> bool:
    """A table of a real program (``benchmarks/apps``: ``table-app-*``), not of the
    project's own programs."""
    return Path(row["table"]).stem.startswith("table-app-")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 seeds, budget 30")
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--budget", type=int)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--surfaces", help="comma-separated (default: all)")
    parser.add_argument("--png", type=Path, default=Path("benchmarks/out/strategies.png"))
    parser.add_argument("--runs", type=Path, help="write every run (JSON lines) here")
    parser.add_argument("--no-drift", action="store_true", help="leave out the drift cases")
    parser.add_argument("--tables", nargs="*", metavar="TABLE",
                        help="only the replay tables' race of whole designs: these tables "
                        "(paths of tune --record tables, or stems in benchmarks/data), or "
                        "with none named benchmarks/data/table-*.json")  # fmt: skip
    parser.add_argument("--phases", action="store_true",
                        help="with --tables: the machine's state held over stretches of runs "
                        "(the recorded rounds), not drawn anew for every run")  # fmt: skip
    parser.add_argument("--no-dqn", action="store_true", help="with --tables: no dqn race")
    parser.add_argument("--dqn-only", action="store_true",
                        help="with --tables: only the dqn race (--surfaces may name "
                        "synthetic surfaces: pre-trained on their siblings)")  # fmt: skip
    parser.add_argument("--truth", choices=("median", "mean"), default="median",
                        help="a table configuration's truth: the median of its recorded "
                        "runs, or their mean (what node-hours follow)")  # fmt: skip
    parser.add_argument("--confirm", type=int, default=DEFAULTS.confirm,
                        help="with --tables: the tuner's first confirmation rounds (the "
                        "search gets the runs they leave)")  # fmt: skip
    parser.add_argument("--risk", type=float, default=DEFAULTS.risk,
                        help="with --tables: the tuner's --risk")  # fmt: skip
    parser.add_argument("--min-gain", type=float, default=DEFAULTS.min_gain,
                        help="with --tables: the tuner's --min-gain (a fraction)")  # fmt: skip
    parser.add_argument("--risks", type=lambda t: [float(x) for x in t.split(",")],
                        help="with --tables: the gain-against-tail curve of the tuner's "
                        "--risk at these values (e.g. 0.01,0.05,0.5), TPE and random at "
                        "the same runs; a table and --png's plot")  # fmt: skip
    parser.add_argument("--explore", type=float, default=DEFAULTS.explore,
                        help="with --tables: the share of the runs the tuner's search may "
                        "spend")  # fmt: skip
    args = parser.parse_args()
    OPTIONS.explore = args.explore
    OPTIONS.truth, OPTIONS.confirm = args.truth, args.confirm
    OPTIONS.risk, OPTIONS.min_gain = args.risk, args.min_gain
    if args.tables is not None:
        start = time.perf_counter()
        names = args.tables or (args.surfaces.split(",") if args.surfaces else tables())
        for name in names:
            if not table_path(name).is_file():
                parser.error(f"no table {name} ({table_path(name)})")
        if args.risks:
            curve = risk_curve(names, args.seeds or 20, args.jobs, args.risks)
            if args.json:
                print(json.dumps({"curve": [{k: p[k] for k in ("risk", "summary")}
                                            for p in curve],
                                  "seconds": round(time.perf_counter() - start)}))  # fmt: skip
            else:
                png = args.png.with_name("risk_curve.png")
                curve_plot(curve, png)
                print(curve_table(curve))
                print(f"\nplot: {png}")
            return 0
        rows = [] if args.dqn_only else table_race(names, args.seeds or 20, args.jobs, args.phases)
        dqn = [] if args.no_dqn else dqn_race(names, args.seeds or 20, args.jobs)
        if args.json:
            print(json.dumps({"tables": rows, "dqn": dqn,
                              "seconds": round(time.perf_counter() - start)}))  # fmt: skip
        else:
            if rows:
                print(tables_table(rows))
            if dqn:
                print(
                    "\n--strategy dqn, cold and pre-trained on the other programs' tables "
                    "(a synthetic surface: on its siblings):\n"
                )
                print(dqn_table(dqn))
        return 0
    seeds = args.seeds or (10 if args.quick else 20)
    budget = args.budget or (30 if args.quick else 50)
    names = (
        args.surfaces.split(",")
        if args.surfaces
        else [*SYNTHETIC, *sorted(p.stem for p in DATA.glob("replay-*.json")), *tables()]
    )
    cases = [(n, noise) for n in names for noise in (NOISES if n in SYNTHETIC else [0.0])]
    jobs = [
        (s, n, noise, seed, budget, 1.0, "raced", 1)
        for n, noise in cases
        for s in args.strategies.split(",")
        for seed in range(seeds)
    ]
    if not args.no_drift:
        jobs += [
            (s, n, 0.1, seed, budget, drift, design, DESIGN_REPEATS)
            for n in names
            if n in SYNTHETIC
            for drift in (1.0, *DRIFTS)
            for design in DESIGNS
            for s in args.strategies.split(",")
            for seed in range(seeds)
        ]
    start = time.perf_counter()
    done: list[StrategyRun] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, run in enumerate(pool.map(job, jobs, chunksize=4)):
            done.append(run)
            if not args.json and (i + 1) % 50 == 0:
                elapsed = time.perf_counter() - start
                print(f"  {i + 1}/{len(jobs)} runs, {elapsed:.0f} s", file=sys.stderr)
    designed = [r for r in done if r.repeats == DESIGN_REPEATS]
    summary = Summary([r for r in done if r.repeats == 1], budget)
    cells = design_cells(designed, budget)
    args.png.parent.mkdir(parents=True, exist_ok=True)
    plot(summary, args.png)
    if args.runs:
        args.runs.write_text("".join(json.dumps(r.to_json()) + "\n" for r in done))
    elapsed = time.perf_counter() - start
    if args.json:
        out = summary.to_json()
        drift, runs = drift_summary(designed, "raced")
        drift_fixed, runs_fixed = drift_summary(designed, "fixed")
        out.update(
            seeds=seeds,
            seconds=round(elapsed, 1),
            losses_to_random_at_30=summary.losses_to_random(),
            drift=drift,
            drift_fixed=drift_fixed,
            runs=runs,
            runs_fixed=runs_fixed,
            designs=cells,
        )
        print(
            json.dumps(
                {
                    k: out[k]
                    for k in (
                        "summary",
                        "budget",
                        "seeds",
                        "seconds",
                        "losses_to_random_at_30",
                        "drift",
                        "drift_fixed",
                        "runs",
                        "runs_fixed",
                        "designs",
                        "cells",
                    )
                },
                separators=(",", ":"),
            )
        )
    else:
        print(
            f"{len(done)} runs ({seeds} seeds, budget {budget}) in {elapsed:.0f} s; PNG {args.png}"
        )
        print("\nMedian trials to within 2 % of the optimum (budget if never):\n")
        print(table(summary))
        print("\nMedian regret over every surface and seed:\n")
        print(regret_table(summary))
        print(f"\nlosses to random at 30 % noise: {summary.losses_to_random() or 'none'}")
        if designed:
            print("\nDesigns (10 % noise, up to 3 runs each; drift: phases of 5-30 runs):\n")
            print(design_table(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
