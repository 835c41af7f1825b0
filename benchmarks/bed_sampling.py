"""Platform sampling across the test bed's nodes, on every MPI installation (root).

    python benchmarks/bed_sampling.py [--runs openmpi:4:4,openmpi:4:8,...] [--full]
                                      [--ops pingpong,vector,burst,allreduce,bcast,alltoall]
                                      [--out FILE]

Per run ``MPI:NODES:RANKS`` (Debian's MPICH 4.0 on two nodes: its UCX hangs in
MPI_Finalize on four, see tests/test_testbed.py), a fresh test bed and storage:
``commtune sample --verify`` inside its first node with the bed's site environment, so the
sampler's plain launch lines spread the ranks over the nodes (ranks 0 and 1, the
ping-pong's, on two nodes), as a user's would in an allocation. Inside a node the sample
takes the network's protocol limit (no single-copy mechanism), and ``--verify`` times the
selection file against each chosen algorithm forced and the sampled thresholds (eager
limit, IOV density, aggregation) against the library's own, all in interleaved launches; a
sampled threshold slower than the library's where they differ is vetoed (not handed back).
Reported per run: the configuration handed back (and what was vetoed), the algorithms
chosen per collective, and the verification's medians: selection file over forced choice
(1 = the file gives what was chosen), and the sampled threshold's time over the library's
at the sizes where the two values differ.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE, last_json

from commtune.mpi import installation_of
from commtune.testbed import Cluster

# MPICH spins while it waits: eight (or four of Debian's on two nodes) of its ranks on this
# 2-core machine took minutes per launch (mpich:2:4 did not finish in 5 minutes)
RUNS = ("openmpi:4:4,openmpi:4:8,openmpi@5:4:4,openmpi@5:4:8,mpich:2:2,mpich@5:2:2,"
        "mpich@5:4:4,intel:4:4,intel:4:8")  # fmt: skip


def sample(mpi: str, nodes: int, ranks: int, ops: str, full: bool, storage: Path) -> dict:
    inst = installation_of(mpi)
    with Cluster(nodes, 1) as bed, tempfile.TemporaryDirectory() as out:
        argv = [*COMMTUNE, "sample", "--mpi", mpi, "--np", str(ranks),
                "--ops", ops, "--verify", "--no-plots", "-o", out, "--storage",
                f"sqlite:///{storage}", "--json", *([] if full else ["--quick"])]  # fmt: skip
        env = {**os.environ, **bed.site_env(inst)}
        start = time.perf_counter()
        done = bed.run(bed.hostnames[0], argv, timeout=3600, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"mpi": mpi, "error": tail, "seconds": seconds}
    data = last_json(done.stdout)
    data.update(mpi=mpi, library=f"{inst.vendor.value} {inst.version}", seconds=seconds)
    return data


def summary(d: dict) -> dict:
    fams = {(f["op"], f["family"]): f for f in d["families"]}
    algorithms = {op: sorted({s["method"] for s in f["segments"]})
                  for (op, name), f in fams.items() if name == "algorithm"}  # fmt: skip
    checks = d.get("verify", [])
    thresholds: dict[str, list[float]] = {}
    for c in d.get("verify_thresholds", []):
        if c["between"]:
            thresholds.setdefault(f"{c['knob']} {c['default']}->{c['sampled']}", []).append(
                c["ratio"]
            )
    ratios = {k: (statistics.median(v), min(v), max(v), len(v)) for k, v in thresholds.items()}
    return {
        "eager_threshold": d.get("eager_threshold"),
        "iov_threshold": d.get("iov_threshold"),
        "config": d["config"],
        "vetoed": d.get("vetoed", {}),
        "algorithms": algorithms,
        "file_over_forced": statistics.median(c["ratio"] for c in checks) if checks else None,
        "file_over_forced_max": max((c["ratio"] for c in checks), default=None),
        "file_over_best": statistics.median(c["vs_best"] for c in checks) if checks else None,
        "threshold_ratios": ratios,
        "failed": {f"{op}/{name}": f["failed"] for (op, name), f in fams.items() if f["failed"]},
    }


def row(d: dict, nodes: int, ranks: int) -> str:
    if "error" in d:
        failed = f"failed: {d['error']}"
        return f"| {d['mpi']} | {nodes} x {ranks} | {failed} | | | | {d['seconds']:.0f} s |"
    s = summary(d)
    config = ", ".join(f"{k}={v}" for k, v in s["config"].items()) or "library's"
    if s["vetoed"]:
        config += " (vetoed: " + ", ".join(s["vetoed"]) + ")"
    algos = "; ".join(f"{op}: {'/'.join(m)}" for op, m in s["algorithms"].items())
    verify = ("" if s["file_over_forced"] is None else
              f"{s['file_over_forced']:.3f} (max {s['file_over_forced_max']:.3f}), "
              f"vs best {s['file_over_best']:.3f}")  # fmt: skip
    ratios = "; ".join(f"{k}: {m:.3f} [{lo:.3f}, {hi:.3f}] over {n} sizes"
                       for k, (m, lo, hi, n) in s["threshold_ratios"].items())  # fmt: skip
    return (f"| {d['library']} | {nodes} x {ranks} | {config} | {algos} | {verify} | "
            f"{ratios or '-'} | {d['seconds']:.0f} s |")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default=RUNS, help="MPI:NODES:RANKS, comma-separated")
    parser.add_argument("--ops", default="pingpong,vector,burst,allreduce,bcast,alltoall")
    parser.add_argument("--full", action="store_true", help="full samples, not --quick")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/bed_sampling.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print("| MPI | nodes x ranks | sampled configuration | algorithms chosen | "
          "file / forced choice (median) | sampled / library's threshold (median [min, max]) "
          "| time |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for entry in args.runs.split(","):
            mpi, nodes, ranks = entry.split(":")
            data = sample(mpi, int(nodes), int(ranks), args.ops, args.full,
                          Path(tmp) / f"{entry.replace(':', '-')}.db")  # fmt: skip
            data.update(nodes=int(nodes), ranks=int(ranks))
            print(row(data, int(nodes), int(ranks)), flush=True)
            with args.out.open("a") as f:
                f.write(json.dumps(data) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
