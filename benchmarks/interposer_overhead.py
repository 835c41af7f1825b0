"""What libcommtune costs, measured side by side on this machine (issue 3).

For each installed MPI, PAIRS interleaved pairs of runs of the same binary, one without and one
with libcommtune preloaded (which one goes first alternates):

1. 0-byte ping-pong between 2 ranks (native/bench/ct_latency.c): one-way latency, the median of
   15 blocks per run. One one-way trip holds two wrapped calls (a send and a receive), so the
   cost per call is the latency delta / 2.
2. A loop of MPI_Test on MPI_REQUEST_NULL on each of 2 ranks: ns per call, a direct and far
   less noisy measure of the wrapper's own cost.
3. The demo app (1000 iterations, its own timer): the profile's wall-time overhead.

Reported: the median over pairs of each side and of the per-pair delta, with the spread
(min..max) of the deltas.

``--against DIR``: the "without" side is libcommtune built from another source tree's
``native/`` (a checkout of an earlier commit: ``git worktree add /tmp/before REV``), so the
delta is what this tree's libcommtune costs more (or less) per call than that one's, measured
interleaved in one run.

usage: python benchmarks/interposer_overhead.py [--mpi openmpi|mpich] [--pairs N] [--json]
                                                [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

from commtune import native
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation

RESULT = re.compile(r"result ([0-9.]+)")
DEMO = re.compile(r"time ([0-9.eE+-]+) s")


def _built_from(installation: object, native_dir: str) -> str:
    """libcommtune built from the C sources under ``native_dir``."""
    saved = os.environ.get("COMMTUNE_NATIVE_DIR")
    os.environ["COMMTUNE_NATIVE_DIR"] = native_dir
    try:
        return str(native.build_interposer(installation))  # type: ignore[arg-type]
    finally:
        if saved is None:
            del os.environ["COMMTUNE_NATIVE_DIR"]
        else:
            os.environ["COMMTUNE_NATIVE_DIR"] = saved


def measure(vendor: Vendor, pairs: int, against: str | None = None) -> dict[str, dict[str, float]]:
    installation = find_installation(vendor)
    launcher = launcher_for(installation)
    latency = native.build(installation, "bench/ct_latency.c")
    demo = native.build(installation, "demo/ct_demo.c")
    library = str(native.build_interposer(installation))
    other = _built_from(installation, os.path.join(against, "native")) if against else None
    cases = {
        "pingpong_ns": ([str(latency), "pingpong", "0", "20000"], RESULT),
        "test_ns": ([str(latency), "test", "1000000"], RESULT),
        "demo_s": ([str(demo), "1000"], DEMO),
    }
    samples: dict[str, dict[str, list[float]]] = {c: {"off": [], "on": []} for c in cases}
    for pair in range(pairs):
        for case, (program, pattern) in cases.items():
            order = ("off", "on") if pair % 2 == 0 else ("on", "off")
            for side in order:
                preload = library if side == "on" else other
                plan = launcher.plan(
                    launcher.command(2, program),
                    {"COMMTUNE_PROFILE": "/dev/null"} if preload else {},
                    preload=preload,
                )
                done = subprocess.run(
                    plan.argv, env=plan.env, capture_output=True, text=True, check=False
                )
                match = pattern.search(done.stdout)
                if done.returncode != 0 or match is None:
                    raise SystemExit(f"{' '.join(plan.argv)} failed:\n{done.stderr[-2000:]}")
                samples[case][side].append(float(match.group(1)))
        print(f"{vendor.value}: pair {pair + 1}/{pairs}", file=sys.stderr)
    out = {}
    for case, sides in samples.items():
        deltas = [on - off for on, off in zip(sides["on"], sides["off"], strict=True)]
        out[case] = {
            "off_median": statistics.median(sides["off"]),
            "on_median": statistics.median(sides["on"]),
            "delta_median": statistics.median(deltas),
            "delta_min": min(deltas),
            "delta_max": max(deltas),
        }
    out["per_call_ns"] = {
        "pingpong": out["pingpong_ns"]["delta_median"] / 2,
        "test_loop": out["test_ns"]["delta_median"],
    }
    demo = out["demo_s"]
    out["demo_overhead_percent"] = {"median": 100 * demo["delta_median"] / demo["off_median"]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpi", choices=[v.value for v in Vendor], action="append")
    parser.add_argument("--pairs", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--against", metavar="DIR", help="a source tree: its libcommtune is 'without'"
    )
    args = parser.parse_args()
    vendors = [Vendor(v) for v in args.mpi] if args.mpi else list(Vendor)
    results = {v.value: measure(v, args.pairs, args.against) for v in vendors}
    if args.json:
        print(json.dumps(results, separators=(",", ":")))
        return 0
    print(f"| MPI | measure | without | with | delta (median, min..max over {args.pairs} pairs) |")
    print("|---|---|---|---|---|")
    for vendor, r in results.items():
        for case, unit in (("pingpong_ns", "ns"), ("test_ns", "ns"), ("demo_s", "s")):
            c = r[case]
            print(
                f"| {vendor} | {case.removesuffix('_ns').removesuffix('_s')} "
                f"| {c['off_median']:.4g} {unit} | {c['on_median']:.4g} {unit} "
                f"| {c['delta_median']:+.3g} ({c['delta_min']:+.3g}..{c['delta_max']:+.3g}) |"
            )
        per = r["per_call_ns"]
        print(
            f"| {vendor} | per call | | | ping-pong {per['pingpong']:.1f} ns, "
            f"MPI_Test loop {per['test_loop']:.1f} ns; demo "
            f"{r['demo_overhead_percent']['median']:+.2f} % |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
