"""AITuning's case at scale (issue 50): the DQN (``--strategy dqn``: its 20 exploratory runs,
its ensemble), the tuner's default design and TPE, on a real program's tables recorded at 256
and 512 simulated ranks (CoMD on a simulated fat tree, ``benchmarks/smpi_tables.py``), in one
race, same seeds, at most 30 runs.

    python benchmarks/smpi_dqn.py [--tables table-smpi-comd-256-fat,table-smpi-comd-512-fat]
        [--seeds 20] [--jobs 2]

The simulation is deterministic: a table holds one run a configuration and the design spends
one run on each (no repeats, no controls), so seeds differ only in the search's own draws.
DQN and the default design are whole designs (the same verdict: the fastest rerun once and
handed back at its exact speedup); TPE and random are given the runs the default design
spent and hand back the best they measured. The figure is the gain captured:
(mean delivered speedup - 1) / (best - 1), with the tail and the runs spent.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor

from strategies import OPTIONS, TABLE_RUNS, StrategyRun, cell, surface, with_bases

from commtune.harness import run_tuner
from commtune.study import DEFAULTS

TABLES = ("table-smpi-comd-256-fat", "table-smpi-comd-512-fat")


def design(args: tuple[str, int, str, int]) -> StrategyRun:
    name, seed, strategy, runs = args
    return run_tuner(surface(name), 0.0, seed, runs, strategy, confirm=OPTIONS.confirm,
                      risk=OPTIONS.risk, min_gain=OPTIONS.min_gain,
                      explore=OPTIONS.explore)  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", default=",".join(TABLES))
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--runs", default=f"10,20,{TABLE_RUNS}",
                   help="the studies' bounds (a table of 40 configurations is nearly covered "
                   "by 30 runs: the smaller bounds tell the searches apart)")  # fmt: skip
    args = p.parse_args()
    names = [n.strip() for n in args.tables.split(",") if n.strip()]
    lines = ["| table | best | runs <= | default design | DQN | TPE, same runs "
             "| random, same runs |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    bounds = [int(r) for r in args.runs.split(",")]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for name, bound in ((n, b) for n in names for b in bounds):
            seeds = range(args.seeds)
            ours = list(pool.map(design, [(name, s, DEFAULTS.strategy, bound) for s in seeds]))
            dqn = list(pool.map(design, [(name, s, "dqn", bound) for s in seeds]))
            bases = with_bases(pool, ours, 1.0)
            best = surface(name).default_regret + 1.0
            cells = [cell(ours, StrategyRun.confirmed_share, best),
                     cell(dqn, StrategyRun.confirmed_share, best)]  # fmt: skip
            for b in ("tpe", "random"):
                cells.append(cell([r for r in bases if r.strategy == b],
                                  lambda r: r.share_after(len(r.regret)), best))  # fmt: skip
            shown = [f"{100 * c['gain']:.0f} % (tail {c['tail']}/{c['seeds']}; "
                     f"{c['runs']:g} runs; kept {c['kept']})" if c["gain"] is not None
                     else f"no gain (tail {c['tail']}/{c['seeds']})" for c in cells]  # fmt: skip
            lines.append(f"| {name.removeprefix('table-')} | {best:.2f}x | {bound} | "
                         + " | ".join(shown) + " |")  # fmt: skip
            print(lines[-1], file=sys.stderr)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
