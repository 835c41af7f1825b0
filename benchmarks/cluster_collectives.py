"""Collective tuning across the test bed's nodes, on every MPI installation (root).

    python benchmarks/cluster_collectives.py [--mpi openmpi,mpich:2,openmpi@5,mpich@5,intel]
                                             [--nodes 4] [--trials 16] [--args 8,4000,300]
                                             [--out FILE]

Per installation (``NAME:N``: on N nodes instead of ``--nodes``; Debian's MPICH 4.0 on 2, its
UCX 1.13 TCP transport hangs in MPI_Finalize in half the four-node runs), a fresh test bed
of ``--nodes`` nodes (one rank each, over TCP) and a fresh
storage: ``commtune tune --preset collectives`` of ``ct_phases`` (phases of small and large
allreduces: the collective-heavy program; ``--args``: rounds, small calls, large calls), the
tuner on the first node and every run a job across all nodes, as a user would run it. Its
result as the tuner reports it: verdict, the accepted configuration's confirmed speedup and
95 % CI against the defaults (run beside it), the runs spent, noise and drift.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from demo_verdicts import result_cells  # the benchmarks' directory is on the path
from instrument import COMMTUNE, last_json

from commtune import native
from commtune.mpi import installation_of
from commtune.testbed import Cluster

METRIC = r"regex:time ([0-9.eE+-]+) s"


def study(mpi: str, nodes: int, trials: int, args: list[str], storage: Path) -> dict:
    inst = installation_of(mpi)
    program = str(native.build(inst, "demo/ct_phases.c"))
    with Cluster(nodes, 1) as bed:
        argv = [*COMMTUNE, "tune", "--mpi", mpi, "--preset",
                "collectives", "--trials", str(trials), "--metric", METRIC, "--storage",
                f"sqlite:///{storage}", "--study", "coll", "--json", "--",
                *bed.launch(inst, [program, *args])]  # fmt: skip
        env = {**inst.tool_env(), **bed.network_env(inst)}
        start = time.perf_counter()
        done = bed.run(bed.hostnames[0], argv, timeout=7200, env=env)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"mpi": mpi, "error": tail, "seconds": time.perf_counter() - start}
    data = last_json(done.stdout)
    data["seconds"] = time.perf_counter() - start
    data["mpi"], data["library"] = mpi, f"{inst.vendor.value} {inst.version}"
    return data


def row(d: dict, nodes: int) -> str:
    if "error" in d:
        return f"| {d['mpi']} | {nodes} | failed: {d['error']} | | | | | | {d['seconds']:.0f} s |"
    return f"| {d['library']} | {nodes} | {result_cells(d)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi,mpich:2,openmpi@5,mpich@5,intel")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--args", default="8,4000,300")
    parser.add_argument("--out", type=Path,
                        default=Path("benchmarks/out/cluster_collectives.jsonl"))  # fmt: skip
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print("| MPI | nodes | verdict | speedup [95 % CI] | accepted | runs | noise | drift | time |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for entry in args.mpi.split(","):
            mpi, _, count = entry.partition(":")
            nodes = int(count) if count else args.nodes
            data = study(mpi, nodes, args.trials, args.args.split(","), Path(tmp) / f"{mpi}.db")
            data["nodes"] = nodes
            print(row(data, nodes), flush=True)
            with args.out.open("a") as f:
                f.write(json.dumps(data) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
