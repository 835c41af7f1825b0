"""How often any tuner could accept a recorded table's best: the confirmation's ceiling.

    python benchmarks/confirm_power.py [--pairs 5,7,10,15] [--draws 200] [--jobs 2] [--json]

Per replay table (``benchmarks/data/table-*.json``), the table's best configuration by the
median of its recorded runs is confirmed against the defaults as the tuner confirms its
candidates (``stats.compare_paired`` at 95 %: the signed-rank test and the bootstrap CI
agree), each pair a run of each drawn from the recorded ones, as the replayed race draws
them. Prints the share of ``--draws`` confirmations that accept it with n pairs: a tuner
that knew the best from the start and spent every run on it could not do better. 5 pairs
are what a 30-run study leaves its confirmation (10 runs); 15 pairs are all 30 runs.
Independent draws are the pessimistic case: in a real study both runs of a pair meet the
same state of the machine, which the pairing cancels.
"""

from __future__ import annotations

import argparse
import json
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from commtune import stats

DATA = Path(__file__).parent / "data"


def complete(trial: dict) -> bool:
    return bool(trial.get("values")) and None not in trial["values"]


def power(args: tuple[Path, tuple[int, ...], int]) -> dict:
    """The best and the defaults of one table, and the share of draws accepted per pairs."""
    path, pairs, draws = args
    table = json.loads(path.read_text())
    default = np.asarray(table["default"], dtype=float)
    best = min((t for t in table["trials"] if complete(t)),
               key=lambda t: statistics.median(t["values"]))  # fmt: skip
    values = np.asarray(best["values"], dtype=float)
    rng = np.random.default_rng(0)
    accepted = {}
    for n in pairs:
        draw = [(rng.choice(default, n), rng.choice(values, n)) for _ in range(draws)]
        hits = sum(stats.compare_paired(d, v, resamples=1000, seed=i).faster
                   for i, (d, v) in enumerate(draw))  # fmt: skip
        accepted[n] = hits / draws
    # how often one run of the best beats one run of the defaults
    beats = float(np.mean(values[:, None] < default[None, :]))
    return {"table": path.stem.removeprefix("table-"), "best": best["params"],
            "speedup": float(np.median(default) / np.median(values)), "beats": beats,
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
