"""What ``--risk`` holds: how often the verdict hands back a configuration that is slower.

    python benchmarks/risk_calibration.py [--seeds 200] [--noises 0.03,0.1,0.2]
        [--choices 6,16] [--slower 0.02,0.025,0.04] [--risks 0.01,0.05,0.2]
        [--drifts none,warmup,trend,step,wave] [--jobs 2] [--json]
    python benchmarks/risk_calibration.py --figure docs/benchmarks/risk_rule.png

A machine where every configuration but the defaults is ``--slower`` slower than the defaults:
exactly the 2 % tolerance (the null the promise is stated at: the hardest case), and beyond it
(2.5 %, 4 %); or all equal (``--slower 0``: nothing handed back costs speed). Each a
categorical knob of ``--choices`` values, run-to-run noise ``--noises`` (Gaussian,
multiplicative, as :class:`commtune.harness.SurfaceExecutor` deals it), and the machine
drifting as ``--drifts`` says (``commtune.harness.DRIFTS``: the first runs 10 % slower, a 10 %
trend over the study, a 10 % step midway, a slow 10 % oscillation; every one making the
machine faster over the study, so runs made earlier flatter what runs later; or
``modes:F:A-B``, a machine with two modes ``F`` times apart in stretches of ``A``-``B`` runs,
issue 96). Each case is
``--seeds`` studies by the tuner's defaults (the race's design, <= 30 runs, ``--gate risk``
at each of ``--risks``). On a slower machine anything handed back is a slowdown: the share
of studies that hand something back is the realised rate of what ``--risk`` bounds, printed
with its 95 % interval (Clopper-Pearson); "exceeded" where the interval lies above the stated
risk.

``--figure PNG`` draws the rule itself (docs/architecture.md, "The verdict, on one page"):
for the first configuration tested with 7 pairs of runs (a 30-run study's verdict) and with
16, the chance that one 2 % slower does at least as well, against the share of the risk each
look may spend.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from scipy.stats import binomtest

from commtune import rule
from commtune.harness import DRIFTS, Surface, cat_knob, modes, run_tuner
from commtune.knobs import Dimension, Space
from commtune.study import DEFAULTS

RUNS = 30  # the race's bound on a study's runs (benchmarks/strategies.py, TABLE_RUNS)


@dataclass(frozen=True)
class Case:
    noise: float
    choices: int
    slower: float
    risk: float
    drift: str = ""  # one of commtune.harness.DRIFTS; "": none


def _modes(shape: str) -> bool:
    try:
        return shape.startswith("modes:") and bool(modes(shape))
    except ValueError:
        return False


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
    run = run_tuner(flat(case.choices, case.slower), case.noise, seed, RUNS, risk=case.risk,
                     shape=case.drift)  # fmt: skip
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
            "risk": case.risk, "drift": case.drift or None, "studies": n, "handed_back": k,
            "share": k / n, "interval": [low, high], "held": held,
            "claims_median": statistics.median(claims) if claims else None,
            "claims_max": max(claims) if claims else None}  # fmt: skip


def figure(risk: float, path: Path) -> None:
    """For the first configuration tested in 7 and in 16 pairs of runs, the chance that one
    2 % slower reaches at least each signed rank, against the share each look may spend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from commtune import rule

    fig, ax = plt.subplots(figsize=(6.4, 3.4), layout="constrained")
    colors = iter(("C0", "C1", "C2"))
    for pairs in (7, 16):
        for n, share in rule.looks(risk, 1, pairs, pairs):
            color = next(colors)
            cdf = rule._rank_cdf(n)
            tail = 1.0 - np.concatenate([[0.0], cdf[:-1]])  # P(W >= w)
            ws = np.arange(len(tail)) / (len(tail) - 1)
            said = f"{pairs} pairs, look after {n}"
            ax.step(ws, tail, where="post", color=color, label=said)
            ax.axhline(share, color=color, linestyle="--", linewidth=1,
                       label=f"the share it may spend: {100 * share:.2g} %")  # fmt: skip
    ax.set_yscale("log")
    ax.set_ylim(1e-5, 1.2)
    ax.set_xlabel("signed rank of the pairs it wins (its runs counted 2 % faster), of its most")
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
        "--noises", default="0.03,0.1,0.2", help="run-to-run noises, comma-separated"
    )
    parser.add_argument("--choices", default="6,16", help="the knob's values, comma-separated")
    parser.add_argument("--slower", default="0.02,0.025,0.04", help="how much slower every "
                        "configuration is (0: the null machine), comma-separated")  # fmt: skip
    parser.add_argument("--risks", default=f"{DEFAULTS.risk:g}",
                        help="the tuner's --risk, comma-separated")  # fmt: skip
    parser.add_argument("--drifts", default="none", help="how the machine drifts, "
                        f"comma-separated: none, {', '.join(DRIFTS)}, or modes:F:A-B (two "
                        "modes F times apart, stretches of A-B runs)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ordinary", action="store_true", help="the ordinary signed rank "
                        "everywhere (no pair split by a machine's modes set aside)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    parser.add_argument("--figure", type=Path, help="draw the rule at --risk here, and stop")
    args = parser.parse_args()
    try:
        risks = [float(r) for r in args.risks.split(",")]
        cases = [Case(float(n), int(c), float(s), r, "" if d == "none" else d)
                 for r in risks for d in args.drifts.split(",") for s in args.slower.split(",")
                 for n in args.noises.split(",") for c in args.choices.split(",")]  # fmt: skip
    except ValueError as err:
        parser.error(f"not a number: {err}")
    if not all(0 < r < 1 for r in risks):
        parser.error(f"--risks {args.risks}: probabilities between 0 and 1")
    if args.figure is not None:
        figure(risks[0], args.figure)
        print(f"plot: {args.figure}")
        return 0
    if args.seeds < 1 or args.jobs < 1 or any(c.choices < 2 or c.noise < 0 or c.slower < 0
                                              for c in cases):  # fmt: skip
        parser.error("--seeds and --jobs >= 1, --choices >= 2, --noises and --slower >= 0")
    if any(c.drift and c.drift not in DRIFTS and not _modes(c.drift) for c in cases):
        parser.error(f"--drifts {args.drifts}: none or one of {', '.join(DRIFTS)}")
    if args.ordinary:
        rule.MODES = math.inf  # the workers fork from here
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
    table = Table(title=f"studies handing a configuration back ({args.seeds} a case, "
                        f"<= {RUNS} runs)")  # fmt: skip
    for col in ("--risk", "drift", "machine", "noise", "values", "handed back", "95 % interval",
                "the risk", "claims (median, max)"):  # fmt: skip
        table.add_column(col)
    for r in rows:
        machine = f"{100 * r['slower']:g} % slower" if r["slower"] > 0 else "all equal"
        held = {True: "held", False: "exceeded", None: "not told apart"}[r["held"]]
        claims = (f"{r['claims_median']:.3f}x, {r['claims_max']:.3f}x"
                  if r["claims_median"] is not None else "-")  # fmt: skip
        table.add_row(f"{r['risk']:g}", r["drift"] or "none", machine,
                      f"{100 * r['noise']:g} %", str(r["choices"]),
                      f"{r['handed_back']}/{r['studies']} ({100 * r['share']:.1f} %)",
                      f"{100 * r['interval'][0]:.1f}-{100 * r['interval'][1]:.1f} %",
                      held if r["slower"] > 0 else "-", claims)  # fmt: skip
    Console(width=150).print(table)
    slow = [r for r in rows if r["slower"] > 0]
    print(f"{sum(r['held'] is False for r in slow)} of {len(slow)} cases exceeded their stated "
          f"risk; the largest share handed back over the risk stated: "
          f"{max((r['share'] / r['risk'] for r in slow), default=0):.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
