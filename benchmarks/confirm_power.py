"""How often any tuner could accept a recorded table's best: the confirmation's ceiling.

    python benchmarks/confirm_power.py [--pairs 5,7,10,15] [--draws 200] [--jobs 2] [--json]

Per replay table (``benchmarks/data/table-*.json``), the table's best configuration by the
median of its recorded runs (``race.replayed``: the race's own truth and optimum) is
confirmed against the defaults as the tuner confirms its candidates
(``stats.compare_paired`` at 95 %: the signed-rank test and the bootstrap CI agree), each
pair a run of each from the race's replay executor (a recorded run drawn at random; a
failed run leaves its pair out, as the confirmation does). Prints the share of
``--draws`` confirmations that accept it with n pairs: a tuner that knew the best from the
start and spent every run on it could not do better. 5 pairs are what a 30-run study
leaves its confirmation (10 runs); 15 pairs are all 30 runs. Independent draws are the
pessimistic case: in a real study both runs of a pair meet the same state of the machine,
which the pairing cancels.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from commtune import stats
from commtune.harness import replayed
from commtune.trial import ReplayExecutor

DATA = Path(__file__).parent / "data"


def power(args: tuple[Path, tuple[int, ...], int]) -> dict:
    """The best and the defaults of one table, and the share of draws accepted per pairs."""
    path, pairs, draws = args
    surface = replayed(path)
    best = min(surface.configs(), key=surface.value)
    replay = surface.executor(0.0, seed=0)  # one file read: every draw takes its next runs
    assert isinstance(replay, ReplayExecutor)
    accepted = {}
    for n in pairs:
        hits = 0
        for i in range(draws):
            runs = [(replay.run(None, 1.0).value, replay.run(best, 1.0).value) for _ in range(n)]
            pairs_ = [r for r in runs if None not in r]
            if len(pairs_) >= 2:
                d, v = zip(*pairs_, strict=True)
                hits += stats.compare_paired(d, v, resamples=1000, seed=i).faster
        accepted[n] = hits / draws
    # how often one recorded run of the best beats one of the defaults
    default = np.asarray([x for x in replay.default if x is not None], dtype=float)
    values = np.asarray([x for x in replay.table[replay.key(best)] if x is not None])
    beats = float(np.mean(values[:, None] < default[None, :]))
    return {"table": path.stem.removeprefix("table-"), "best": best,
            "speedup": surface.default_value / surface.optimum, "beats": beats,
            "accepted": accepted}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", default="5,7,10,15", help="comma-separated pair counts")
    parser.add_argument("--draws", type=int, default=200, help="confirmations per count")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    parser.add_argument("--data", type=Path, default=DATA, help="where the table-*.json are")
    args = parser.parse_args()
    pairs = tuple(int(p) for p in args.pairs.split(","))
    paths = sorted(args.data.glob("table-*.json"))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(power, [(p, pairs, args.draws) for p in paths]))
    if args.json:
        print(json.dumps({"pairs": pairs, "draws": args.draws, "tables": rows}))
        return 0
    head = " | ".join(f"{n} pairs" for n in pairs)
    print(f"| table | best speedup | one run beats the defaults' | {head} |")
    print("|---|---|---|" + "---|" * len(pairs))
    for r in rows:
        cells = " | ".join(f"{100 * r['accepted'][n]:.0f} %" for n in pairs)
        print(f"| {r['table']} | {r['speedup']:.2f}x | {100 * r['beats']:.0f} % | {cells} |")
    med = " | ".join(
        f"**{100 * float(np.median([r['accepted'][n] for r in rows])):.0f} %**" for n in pairs
    )
    print(f"| **median** | | | {med} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
