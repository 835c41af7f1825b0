"""What ``--risk`` holds: how often the verdict hands back a configuration that is slower.

    python benchmarks/risk_calibration.py [--seeds 200] [--noises 0.03,0.05,0.1,0.2]
        [--choices 6,16] [--slower 0.04] [--risk 0.05] [--jobs 2] [--json]
    python benchmarks/risk_calibration.py --figure docs/benchmarks/risk_rule.png

A machine where every configuration but the defaults is ``--slower`` (4 %: beyond the 2 %
tolerance) slower than the defaults, and one where all are equal (``--slower 0``: the null
machine), each a categorical knob of ``--choices`` values, run-to-run noise ``--noises``
(Gaussian, multiplicative, as :class:`commtune.race.SurfaceExecutor` deals it). Each case is
``--seeds`` studies by the tuner's defaults (the race's design, <= 30 runs, ``--gate risk``
at ``--risk``). On the slower machine anything handed back is a slowdown: the share of
studies that hand something back is the realised rate of what ``--risk`` bounds, printed with
its 95 % interval (Clopper-Pearson). On the null machine nothing costs the user speed; the
figure is how often a gain is claimed, and how large.

``--figure PNG`` draws the rule itself (docs/architecture.md, "The verdict, on one page"):
for the first configuration tested with 5 pairs of runs left and 6 runs of the defaults
from the search, the chance that one 2 % slower wins at least k pairs, against the share of
the risk each of its looks may spend.

This is the adversarial case, not the tables' (``benchmarks/strategies.py --tables``), where
few configurations sit just beyond the tolerance.
"""

from __future__ import annotations

import argparse
import json
import statistics
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from scipy.stats import binomtest

from commtune.knobs import Dimension, Space
from commtune.race import Surface, cat_knob, race_tuner
from commtune.study import DEFAULTS

RUNS = 30  # the race's bound on a study's runs (benchmarks/strategies.py, TABLE_RUNS)


@dataclass(frozen=True)
class Case:
    noise: float
    choices: int
    slower: float
    risk: float


def flat(choices: int, slower: float) -> Surface:
    """One knob of ``choices`` values, the first the default; every other ``slower``."""
    names = tuple(f"v{i}" for i in range(choices))
    knob = cat_knob("algo", names, names[0])  # ad hoc: the study knows its default

    def f(c: dict) -> float:
        return 1.0 if c["algo"] == names[0] else 1.0 + slower

    said = f"{choices - 1} configurations {100 * slower:g} % slower than the defaults"
    return Surface(f"flat-{choices}-{slower:g}", Space("synthetic", (Dimension(knob),)), f, said)


def study(args: tuple[Case, int]) -> tuple[Case, bool, float | None]:
    """One study: whether it handed anything back, and the speedup it claimed."""
    case, seed = args
    run = race_tuner(flat(case.choices, case.slower), case.noise, seed, RUNS, risk=case.risk)
    return case, run.changed, run.estimate if run.changed else None


def summarise(case: Case, results: list[tuple[bool, float | None]]) -> dict:
    n, k = len(results), sum(changed for changed, _ in results)
    low, high = binomtest(k, n).proportion_ci(0.95)
    claims = [c for changed, c in results if changed and c is not None]
    if case.slower <= 0:
        held = None  # nothing handed back costs speed: no bound to hold
    elif low > case.risk:
        held = False
    elif high <= case.risk:
        held = True
    else:
        held = None  # the interval holds the stated risk: not told apart at these seeds
    return {"noise": case.noise, "choices": case.choices, "slower": case.slower,
            "risk": case.risk, "studies": n, "handed_back": k, "share": k / n,
            "interval": [low, high], "held": held,
            "claims_median": statistics.median(claims) if claims else None,
            "claims_max": max(claims) if claims else None}  # fmt: skip


def figure(risk: float, path: Path, pairs: int = 5, earlier: int = 6) -> None:
    """The chance that a configuration 2 % slower wins at least k of the pairs of runs, at
    each of the first configuration's looks, against the share the look may spend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from commtune import rule

    fig, ax = plt.subplots(figsize=(6.4, 3.4), layout="constrained")
    for (n, share), color in zip(rule.looks(risk, 1, pairs, earlier), ("C0", "C1"), strict=False):
        null = rule._null(n, n + earlier)
        tail = np.cumsum(null[::-1])[::-1]  # P(U >= k)
        ks = np.arange(len(tail)) / (n * (n + earlier))
        said = f"after {n} pairs: {n} runs against {n + earlier} of the defaults"
        ax.step(ks, tail, where="post", color=color, label=said)
        ax.axhline(share, color=color, linestyle="--", linewidth=1,
                   label=f"the share this look may spend: {100 * share:.2g} %")  # fmt: skip
    ax.set_yscale("log")
    ax.set_ylim(1e-5, 1.2)
    ax.set_xlabel("share of the pairs of runs it wins (its runs counted 2 % slower)")
    ax.set_ylabel("chance for one 2 % slower")
    ax.set_title(f"--risk {risk:g}: the first configuration tested passes below its line",
                 fontsize=10)  # fmt: skip
    ax.legend(fontsize=7, loc="lower left")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=200, help="studies per case")
    parser.add_argument(
        "--noises", default="0.03,0.05,0.1", help="run-to-run noises, comma-separated"
    )
    parser.add_argument("--choices", default="6,16", help="the knob's values, comma-separated")
    parser.add_argument("--slower", default="0.04,0", help="how much slower every "
                        "configuration is (0: the null machine), comma-separated")  # fmt: skip
    parser.add_argument("--risk", type=float, default=DEFAULTS.risk, help="the tuner's --risk")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    parser.add_argument("--figure", type=Path, help="draw the rule at --risk here, and stop")
    args = parser.parse_args()
    if args.figure is not None:
        figure(args.risk, args.figure)
        print(f"plot: {args.figure}")
        return 0
    try:
        cases = [Case(float(n), int(c), float(s), args.risk) for s in args.slower.split(",")
                 for n in args.noises.split(",") for c in args.choices.split(",")]  # fmt: skip
    except ValueError as err:
        parser.error(f"not a number: {err}")
    if args.seeds < 1 or args.jobs < 1 or any(c.choices < 2 or c.noise < 0 or c.slower < 0
                                              for c in cases):  # fmt: skip
        parser.error("--seeds and --jobs >= 1, --choices >= 2, --noises and --slower >= 0")
    if not 0 < args.risk < 1:
        parser.error(f"--risk {args.risk:g}: a probability between 0 and 1")
    jobs = [(case, seed) for case in cases for seed in range(args.seeds)]
    results: dict[Case, list[tuple[bool, float | None]]] = {case: [] for case in cases}
    console = Console(stderr=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool, Progress(console=console) as bar:
        task = bar.add_task("studies", total=len(jobs))
        for case, changed, claim in pool.map(study, jobs, chunksize=4):
            results[case].append((changed, claim))
            bar.advance(task)
    rows = [summarise(case, results[case]) for case in cases]
    if args.json:
        print(json.dumps({"seeds": args.seeds, "runs": RUNS, "cases": rows}))
        return 0
    table = Table(title=f"--risk {args.risk:g}: studies handing a configuration back "
                        f"({args.seeds} a case, <= {RUNS} runs)")  # fmt: skip
    for col in ("machine", "noise", "values", "handed back", "95 % interval", "the risk",
                "claims (median, max)"):  # fmt: skip
        table.add_column(col)
    for r in rows:
        machine = f"{100 * r['slower']:g} % slower" if r["slower"] > 0 else "all equal"
        held = {True: "held", False: "exceeded", None: "not told apart"}[r["held"]]
        claims = (f"{r['claims_median']:.3f}x, {r['claims_max']:.3f}x"
                  if r["claims_median"] is not None else "-")  # fmt: skip
        table.add_row(machine, f"{100 * r['noise']:g} %", str(r["choices"]),
                      f"{r['handed_back']}/{r['studies']} ({100 * r['share']:.1f} %)",
                      f"{100 * r['interval'][0]:.1f}-{100 * r['interval'][1]:.1f} %",
                      held if r["slower"] > 0 else "-", claims)  # fmt: skip
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
