"""The sample's launch-time curves, measured fairly? Agreement where methods cannot differ.

    cd benchmarks && python -m investigations.sample_fairness [--mpi openmpi,mpich] [--times 3]
        [--full]

Per MPI: ``commtune sample --quick --refresh --ops pingpong`` ``--times`` times, each a
fresh sample. Below the eager limit (Open MPI's vader: 4 KiB; the sizes up to 1 KiB are
used, for MPICH's UCX rendezvous scheme too) no single-copy mechanism is used at all, so
every mechanism's curve must agree with the others within noise. Per sample: the median over
those sizes of max/min across the mechanisms' medians, the largest such ratio, and the
share of sizes where the spread between mechanisms is within the curves' own noise (the
larger of 5 % and the interquartile range over the median); then the same statistic for
one method (the library's default mechanism) across the separate samples, the noise
between launches that no comparison of launches can go below. ``--full``: then one full
sample per MPI (every operation), timed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE, last_json

from commtune.store import Store

BELOW = 1024  # bytes: below every eager limit / rendezvous threshold of both MPIs here


def sample(mpi: str, storage: str, out: Path, extra: list[str]) -> tuple[dict, float]:
    args = [*COMMTUNE, "sample", "--mpi", mpi, "--storage", storage]
    args += ["-o", str(out), "--json", "--refresh", *extra]
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return last_json(done.stdout), time.perf_counter() - t0


def agreement(profile: dict) -> tuple[float, float, float, list[str]]:
    (fam,) = [f for f in profile["families"] if f["family"] == "single_copy"]
    curves = fam["curves"]
    ratios, within = [], 0
    sizes = [s for s in next(iter(curves.values()))["sizes"] if s <= BELOW]
    for size in sizes:
        medians, noise = [], []
        for c in curves.values():
            i = c["sizes"].index(size)
            medians.append(c["median_ns"][i])
            noise.append((c["q3_ns"][i] - c["q1_ns"][i]) / c["median_ns"][i])
        ratio = max(medians) / min(medians)
        ratios.append(ratio)
        within += ratio - 1 <= max(0.05, *noise)
    return statistics.median(ratios), max(ratios), within / len(sizes), sorted(curves)


def across_samples(profiles: list[dict]) -> float:
    """The same method (the library's default mechanism) in separate samples: the median over
    the sizes up to 1 KiB of max/min of its medians, the noise between launches itself."""
    fams = [next(f for f in p["families"] if f["family"] == "single_copy") for p in profiles]
    curves = [f["curves"][f["default"]] for f in fams]
    ratios = []
    for size in curves[0]["sizes"]:
        if size <= BELOW:
            values = [c["median_ns"][c["sizes"].index(size)] for c in curves]
            ratios.append(max(values) / min(values))
    return statistics.median(ratios)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi,mpich")
    parser.add_argument("--times", type=int, default=3)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    print("| MPI | sample | mechanisms | median max/min <= 1 KiB | worst | sizes within noise |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{tmp}/fair.db"
        for mpi in args.mpi.split(","):
            profiles = []
            for i in range(args.times):
                result, _ = sample(mpi, storage, Path(tmp) / mpi, ["--quick", "--ops", "pingpong"])
                stored = Store(storage).sample(result["platform"])
                assert stored is not None
                profiles.append(stored)
                median, worst, share, methods = agreement(stored)
                print(
                    f"| {mpi} | quick {i + 1} | {', '.join(methods)} | {median:.3f} "
                    f"| {worst:.3f} | {100 * share:.0f} % |",
                    flush=True,
                )
            if len(profiles) > 1:
                print(f"| {mpi} | the default mechanism across the {len(profiles)} samples | "
                      f"| {across_samples(profiles):.3f} | | |")  # fmt: skip
        if args.full:
            for mpi in args.mpi.split(","):
                result, wall = sample(mpi, storage, Path(tmp) / f"{mpi}-full", [])
                print(
                    f"{mpi}: full sample {result['wall_seconds']:.1f} s sampling, "
                    f"{wall:.1f} s command",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
