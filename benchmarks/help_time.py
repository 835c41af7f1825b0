"""How long ``commtune --help`` takes (start-up: what every command pays before it works),
this tree against another source tree, interleaved.

Each pair runs ``python -m commtune --help`` once with this tree's ``src`` and once with
``DIR/src`` (a checkout of an earlier commit: ``git worktree add /tmp/before REV``), which
one goes first alternating; reported: the median, min and max of each side and of the
per-pair difference.

usage: python benchmarks/help_time.py --against DIR [--pairs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from instrument import COMMTUNE

HERE = Path(__file__).resolve().parent.parent


def once(src: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    subprocess.run([*COMMTUNE, "--help"], env=env, check=True,
                   stdout=subprocess.DEVNULL, cwd=src.parent)  # fmt: skip
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, metavar="DIR")
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sides = {"before": Path(args.against).resolve() / "src", "after": HERE / "src"}
    times: dict[str, list[float]] = {"before": [], "after": []}
    for pair in range(args.pairs):
        order = ("before", "after") if pair % 2 == 0 else ("after", "before")
        for side in order:
            times[side].append(once(sides[side]))
    deltas = [a - b for a, b in zip(times["after"], times["before"], strict=True)]
    out = {
        side: {"median": statistics.median(v), "min": min(v), "max": max(v)}
        for side, v in {**times, "delta": deltas}.items()
    }
    if args.json:
        print(json.dumps(out, separators=(",", ":")))
        return 0
    print(f"| | median | min..max ({args.pairs} pairs) |\n|---|---|---|")
    for side, r in out.items():
        print(f"| {side} | {r['median']:.3f} s | {r['min']:.3f}..{r['max']:.3f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
