"""Platform sampling, measured: wall time, the selection file against the forced choices, and
the demo app with the sampled configuration against the defaults.

    python benchmarks/sampling.py [--mpi openmpi,mpich,openmpi@5,mpich@5,intel] [--full] [--pairs 7]

Per MPI: a quick sample with --verify (alternating launches; ratios of the file's time to the
chosen algorithm forced and to the best algorithm measured again), optionally a full sample
(wall time only), then the demo app (ct_demo, 2 ranks) run in interleaved pairs: library
defaults vs the sampled environment (knob values and the selection file). Medians and ranges.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE, last_json

from commtune import native
from commtune.launch import launcher_for
from commtune.mpi import installation_of


def sample(mpi: str, storage: str, out: Path, quick: bool, verify: bool) -> tuple[dict, float]:
    args = [*COMMTUNE, "sample", "--mpi", mpi, "--storage", storage, "-o", str(out), "--json"]
    args += ["--refresh"] + (["--quick"] if quick else []) + (["--verify"] if verify else [])
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return last_json(done.stdout), time.perf_counter() - t0


def demo_pairs(mpi: str, env: dict[str, str], pairs: int) -> tuple[list[float], list[float]]:
    installation = installation_of(mpi)
    program = native.build(installation, "demo/ct_demo.c")
    launcher = launcher_for(installation)
    command = launcher.command(2, [str(program), "1000"])
    default, tuned = [], []
    for _ in range(pairs):
        for variables, into in (({}, default), (env, tuned)):
            plan = launcher.plan(command, variables)
            t0 = time.perf_counter()
            subprocess.run(plan.argv, env=plan.env, capture_output=True, check=True)
            into.append(time.perf_counter() - t0)
    return default, tuned


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} (range {min(values):.3f}..{max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpi", default="openmpi,mpich")
    parser.add_argument("--full", action="store_true", help="also time a full sample")
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{tmp}/bench.db"
        for mpi in args.mpi.split(","):
            print(f"== {mpi}")
            quick, wall = sample(mpi, storage, Path(tmp) / mpi, quick=True, verify=True)
            print(f"quick sample: {quick['wall_seconds']:.1f} s sampling, {wall:.1f} s command")
            print(f"config: {quick['config']}  eager threshold: {quick['eager_threshold']}")
            checks = quick["verify"]
            for op in sorted({c["op"] for c in checks}):
                mine = [c for c in checks if c["op"] == op]
                ratio = [c["ratio"] for c in mine]
                best = [c["vs_best"] for c in mine]
                within = sum(r <= 1.03 for r in best)
                print(
                    f"  {op:9s} file/forced {summary(ratio)}; file/best {summary(best)}; "
                    f"within 3 % of best at {within}/{len(best)} sizes"
                )
            if args.full:
                full, wall = sample(mpi, storage, Path(tmp) / f"{mpi}-full", quick=False,
                                    verify=False)  # fmt: skip
                print(f"full sample: {full['wall_seconds']:.1f} s sampling, {wall:.1f} s command")
            env = dict(quick["env"])
            env_file = Path(quick["files"]["env"]).read_text().splitlines()
            for line in env_file:
                if line.startswith("export "):
                    name, value = line.removeprefix("export ").split("=", 1)
                    env[name] = value
            default, tuned = demo_pairs(mpi, env, args.pairs)
            ratios = [d / t for d, t in zip(default, tuned, strict=True)]
            print(f"demo default {summary(default)} s; sampled {summary(tuned)} s")
            print(f"demo speedup per pair {summary(ratios)}")


if __name__ == "__main__":
    main()
