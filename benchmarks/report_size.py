"""Time and size of the study report of a 50-trial study.

    python benchmarks/report_size.py [--trials 50] [--repeat 5]

The study is tuned from the recorded demo surface (``benchmarks/data/replay-openmpi.json``,
the replay executor: no MPI runs, the same trials every time), then ``commtune report`` writes
its page ``--repeat`` times, each in a fresh process (Python and matplotlib start included, as
a user sees it). Reported: the median and spread of the wall time, the page's size, its
images.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE

from commtune import stats

REPLAY = Path(__file__).parent / "data" / "replay-openmpi.json"
KNOBS = ["--knob", "btl_vader_eager_limit", "--knob",
         "btl_vader_single_copy_mechanism=cma,emulated,none", "--knob",
         "coll_tuned_allreduce_algorithm"]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{tmp}/s.db"
        subprocess.run([*COMMTUNE, "tune", "--replay", str(REPLAY), "--mpi", "openmpi", *KNOBS,
                        "--trials", str(args.trials), "--study", "big", "--storage", storage,
                        "--json"], check=True, capture_output=True)  # fmt: skip
        page = Path(tmp) / "big.html"
        walls = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run([*COMMTUNE, "report", "big", "-o", str(page), "--storage", storage],
                           check=True, capture_output=True)  # fmt: skip
            walls.append(time.perf_counter() - start)
        text = page.read_text()
        print(
            f"{args.trials}-trial study: report in {stats.median(walls):.2f} s (median of "
            f"{len(walls)}, {min(walls):.2f}-{max(walls):.2f} s), "
            f"{page.stat().st_size / 1024:.0f} KiB, {text.count('<img ')} images"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
