"""What ``--risk`` holds for a study raced in-run (issue 77): how often its raced runs hand
back a candidate that is no faster a call, on simulated per-call times.

    python benchmarks/inrun_risk.py [--studies 200] [--risks 0.01,0.05,0.2]
        [--drifts none,warmup,trend,step,wave] [--noises 0.05,0.3] [--ar 0.9]
        [--nulls aa,boundary,slower_program,aa_program,faster_program] [--candidates 6]
        [--calls 1200]
        [--jobs 2] [--json]

Each study is what ``commtune tune`` does in-run (:func:`commtune.tune.halving`: up to
``Plan.inrun_runs`` raced runs, the field halved between them, each run's units sized by the
calls the run before made, each test at the risk split over the candidates and the runs),
on runs drawn here as libctrace writes them: ``--calls`` calls of a collective a run at two
message sizes (the larger 5 times the smaller's time), each size's calls assigned to the
candidates in units of consecutive calls, in complete blocks in an order drawn anew for
every block. A call's time is the size's base x the candidate's factor x the run's drift x
the exponential of an AR(1) noise (``--ar`` its autocorrelation from call to call, ``--noises``
the sd of its log), and one call in 50 is a straggler (3x).

The candidates (``--candidates``, beside the reference, the library's own decision) are all
no faster a call in the sense the race's test states it:

- ``aa``: the reference's own algorithm under other labels (the A/A race, issue 77's "two
  labels of one algorithm");
- ``boundary``: every candidate exactly ``--min-gain`` faster a call, the null the in-run
  test is exact at (it claims *more* than ``--min-gain`` faster);
- ``slower_program`` (issue 93, item 5, the promise where it is hardest): every candidate 5 %
  faster a call, so the race passes one, and the program exactly ``--tolerance`` slower than
  the defaults (an algorithm that slows the computation between the calls): the whole study,
  the race then its answer's whole runs (:func:`commtune.tune.whole_runs`, up to
  ``--pairs`` pairs, each run with the noise's sd and the drift over the runs);
- ``aa_program``: the A/A race, then the same whole-run test of what it handed back on a
  program as fast as the defaults;
- ``faster_program`` (not a null: what the test finds, and the runs it takes): every
  candidate 5 % faster a call and the program 5 % faster.
For the first two, handed back is what the race passed (its own claim); for the last two,
what the whole-run test passed (what ``tune`` hands back).

Drifts within each run (every one making the machine faster over the run, so that a
candidate drawn later is flattered where the order is not randomized): ``warmup``, the
first fifth of the calls up to 10 % slower; ``trend``, 10 % slower at the start, linearly to
none; ``step``, 10 % slower until midway; ``wave``, a 10 % peak-to-peak oscillation of four
periods. Each case: ``--studies`` studies; handed back is any answer; printed with its 95 %
interval (Clopper-Pearson), "exceeded" where the interval lies above the stated risk.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from scipy.signal import lfilter
from scipy.stats import binomtest

from commtune.study import DEFAULTS
from commtune.tune import Race, halving, whole_runs

STRAGGLERS = 0.02  # the share of calls that straggle
STRAGGLE = 3.0  # how much slower a straggling call is
SIZES = (1e-5, 5e-5)  # the two message sizes' time a call (s), alternating call by call

DRIFTS: dict[str, Callable[[float], float]] = {  # t: the share of the run's calls made
    "none": lambda t: 1.0,
    "warmup": lambda t: 1.0 + 0.10 * max(0.0, 1.0 - t / 0.2),
    "trend": lambda t: 1.0 + 0.10 * (1.0 - t),
    "step": lambda t: 1.10 if t < 0.5 else 1.0,
    "wave": lambda t: 1.0 + 0.05 * math.sin(2 * math.pi * 4 * t),
}
NULLS = ("aa", "boundary", "slower_program", "aa_program")
POWER = ("faster_program",)  # not a null: handed back is the test's power
WHOLE = ("slower_program", "aa_program", *POWER)  # the race, then its answer's whole runs


@dataclass(frozen=True)
class Case:
    null: str
    drift: str
    noise: float
    ar: float
    risk: float
    candidates: int
    calls: int
    min_gain: float
    tolerance: float = DEFAULTS.tolerance
    pairs: int = 15


def drawn_run(rng: np.random.Generator, case: Case, field: Sequence[str], run: int) -> Race:
    """One raced run of ``field`` against the reference, in units of ``run`` calls."""
    k = len(field) + 1
    factor = np.ones(k)
    if case.null == "boundary":
        factor[1:] = 1.0 / (1.0 + case.min_gain)
    elif case.null in ("slower_program", *POWER):  # the calls clearly faster
        factor[1:] = 1.0 / 1.05
    units = case.calls // run
    calls = units * run
    size = np.arange(units) % len(SIZES)  # the units alternate between the sizes
    candidate = np.empty(units, int)
    for s in range(len(SIZES)):
        mine = np.flatnonzero(size == s)
        for b in range(0, len(mine) - len(mine) % k, k):  # complete blocks, each drawn anew
            candidate[mine[b : b + k]] = rng.permutation(k)
        candidate[mine[len(mine) - len(mine) % k :]] = rng.permutation(k)[: len(mine) % k]
    # per call: AR(1) noise on the log, the run's drift, stragglers
    shocks = rng.normal(0.0, case.noise * math.sqrt(1 - case.ar**2), calls)
    start = rng.normal(0.0, case.noise)  # the stationary level before the first call
    noise = lfilter([1.0], [1.0, -case.ar], shocks, zi=[case.ar * start])[0]
    drift = np.array([DRIFTS[case.drift](i / calls) for i in range(calls)])
    straggle = np.where(rng.random(calls) < STRAGGLERS, STRAGGLE, 1.0)
    per_call = np.exp(noise) * drift * straggle
    per_unit = per_call.reshape(units, run).sum(axis=1)
    unit_time = np.array(SIZES)[size] * factor[candidate] * per_unit
    names = ("reference", *field)
    return Race("allreduce", "simulated", "call", 0, 4, names, tuple(range(k)), None, None,
                candidate, unit_time, size, run=run)  # fmt: skip


def study(args: tuple[Case, int, int]) -> tuple[Case, bool, int]:
    """One study (the ``seed``-th of the ``index``-th case): whether its raced runs handed
    anything back, and the runs they took."""
    case, index, seed = args
    rng = np.random.default_rng([index, seed])
    names = [f"c{j}" for j in range(1, case.candidates + 1)]

    def racer(field: Sequence[str], r: int, run: int) -> Race:
        return drawn_run(rng, case, field, run)

    done = halving(racer, names, DEFAULTS.inrun_runs, case.risk, case.min_gain)
    if case.null not in WHOLE or done.answer is None:
        return case, done.answer is not None, len(done.races)
    slower = {"slower_program": 1 + case.tolerance, "faster_program": 1 / 1.05}.get(case.null, 1.0)
    made = [0]

    def run(answer: bool) -> tuple[float | None, str]:  # a whole run of the program
        t = made[0] / (2 * case.pairs)
        made[0] += 1
        noise = math.exp(rng.normal(0.0, case.noise))
        return (slower if answer else 1.0) * DRIFTS[case.drift](t) * noise, ""

    whole = whole_runs(run, case.pairs, case.risk, case.tolerance, case.min_gain, seed)
    return case, whole.passed, len(done.races) + made[0]


def summarise(case: Case, results: list[tuple[bool, int]]) -> dict:
    n, k = len(results), sum(handed for handed, _ in results)
    low, high = binomtest(k, n).proportion_ci(0.95)
    held = (
        None
        if case.null in POWER
        else False
        if low > case.risk
        else True
        if high <= case.risk
        else None
    )
    return {**asdict(case), "studies": n, "handed_back": k, "share": k / n,
            "interval": [low, high], "held": held,
            "runs_median": float(np.median([r for _, r in results]))}  # fmt: skip


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=200, help="studies per case")
    parser.add_argument("--risks", default="0.01,0.05,0.2", help="the stated --risk, comma list")
    parser.add_argument("--drifts", default=",".join(DRIFTS), help="drifts within a run, comma "
                        f"list of {', '.join(DRIFTS)}")  # fmt: skip
    parser.add_argument("--noises", default="0.05,0.3", help="sd of a call's log time")
    parser.add_argument("--ar", type=float, default=0.9, help="the noise's autocorrelation")
    parser.add_argument("--nulls", default=",".join(NULLS), help=f"comma list of {NULLS + POWER}")
    parser.add_argument("--candidates", type=int, default=6, help="beside the reference")
    parser.add_argument("--calls", type=int, default=1200, help="raced calls a run")
    parser.add_argument("--min-gain", type=float, default=DEFAULTS.min_gain)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    args = parser.parse_args()
    try:
        risks, noises = _floats(args.risks), _floats(args.noises)
    except ValueError as err:
        parser.error(f"not a number: {err}")
    drifts, nulls = args.drifts.split(","), args.nulls.split(",")
    if bad := [d for d in drifts if d not in DRIFTS] + [n for n in nulls if n not in NULLS + POWER]:
        parser.error(f"not a drift or null: {', '.join(bad)}")
    if not all(0 < r < 1 for r in risks) or not 0 <= args.ar < 1 or args.studies < 1:
        parser.error("--risks in (0, 1), --ar in [0, 1), --studies >= 1")
    cases = [Case(n, d, s, args.ar, r, args.candidates, args.calls, args.min_gain)
             for r in risks for n in nulls for d in drifts for s in noises]  # fmt: skip
    jobs = [(case, i, seed) for i, case in enumerate(cases) for seed in range(args.studies)]
    results: dict[Case, list[tuple[bool, int]]] = {case: [] for case in cases}
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool, \
            Progress(console=Console(stderr=True)) as bar:  # fmt: skip
        task = bar.add_task("studies", total=len(jobs))
        for case, handed, runs in pool.map(study, jobs, chunksize=8):
            results[case].append((handed, runs))
            bar.advance(task)
    rows = [summarise(case, results[case]) for case in cases]
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps({"studies": args.studies, "seconds": seconds, "cases": rows}))
        return 0
    table = Table(title=f"in-run studies handing a candidate back ({args.studies} a case; "
                        f"{args.candidates} candidates, {args.calls} calls a run, AR "
                        f"{args.ar:g}, {100 * STRAGGLERS:g} % stragglers)")  # fmt: skip
    for col in ("--risk", "candidates", "drift", "noise", "handed back", "95 % interval",
                "the risk", "runs (median)"):  # fmt: skip
        table.add_column(col)
    for r in rows:
        null = {"aa": "A/A", "boundary": f"{100 * r['min_gain']:g} % faster a call",
                "slower_program": f"calls 5 % faster, program {100 * r['tolerance']:g} % slower",
                "aa_program": "A/A, then whole runs",
                "faster_program": "calls and program 5 % faster (power)"}[r["null"]]  # fmt: skip
        held = {True: "held", False: "exceeded", None: "not told apart"}[r["held"]]
        held = "-" if r["null"] in POWER else held
        table.add_row(f"{r['risk']:g}", null, r["drift"], f"{100 * r['noise']:g} %",
                      f"{r['handed_back']}/{r['studies']} ({100 * r['share']:.1f} %)",
                      f"{100 * r['interval'][0]:.1f}-{100 * r['interval'][1]:.1f} %", held,
                      f"{r['runs_median']:g}")  # fmt: skip
    Console(width=150).print(table)
    for risk in risks:
        mine = [r for r in rows if r["risk"] == risk and r["null"] not in POWER]
        if not mine:
            continue
        k, n = sum(r["handed_back"] for r in mine), sum(r["studies"] for r in mine)
        print(
            f"stated {risk:g}: {k} of {n} studies handed back ({100 * k / n:.2f} %), "
            f"{sum(r['held'] is False for r in mine)} of {len(mine)} cases exceeded it"
        )
    print(f"{seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
