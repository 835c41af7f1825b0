"""Racing in runs of consecutive calls against whole runs, on the test bed (issue 77).

    python benchmarks/inrun_runs.py [--mpi openmpi] [--nodes 4] [--rate 1000]
        [--program bcast:32768] [--iterations 2000] [--candidates pipeline,binomial,...]
        [--runs 0,1,8,16] [--seeds 3] [--rounds 5] [--json FILE]

A broadcast raced call by call on the bed ranked the algorithms the other way round from
whole runs (history.md, "Issue 78, session 8"). Here, on a bed of ``--nodes`` nodes (one rank
a node, links shaped to ``--rate`` Mbit/s; root), ``benchmarks/csrc/coll_loop.c`` (OP of
BYTES, ``--iterations`` times) is raced with each unit ``--runs`` consecutive calls of one
candidate after a barrier (libctrace's ``COMMTUNE_RACE_RUN`` and ``_DRAIN``; 0: call by call
without the barrier, the design before), ``--seeds`` races each, interleaved; then every
candidate alone
in ``--rounds`` shuffled rounds of whole runs. Printed per candidate: the whole runs' speedup
over the defaults (median over median) and each run length's per-unit estimate (the median
over the seeds, and their range), then per run length whether its best is the whole runs'
best and how many of the candidate pairs it orders as whole runs do.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from itertools import combinations
from pathlib import Path

from inrun_tune import CT_METRIC, Where, alone

from commtune.mpi import installation_of
from commtune.service import race
from commtune.testbed import Cluster as Bed
from commtune.tune import decide_races

SOURCE = Path(__file__).resolve().parent / "csrc" / "coll_loop.c"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="openmpi")
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rate", type=float, default=1000.0)
    p.add_argument("--program", default="bcast:32768")
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--candidates", default="pipeline,split_binary_tree,binomial,knomial")
    p.add_argument("--runs", default="0,1,8,16")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if os.geteuid() != 0:
        p.error("the test bed needs root (network namespaces)")
    inst = installation_of(args.mpi)
    op, size = args.program.split(":")
    names = args.candidates.split(",")
    lengths = [int(r) for r in args.runs.split(",")]
    out: dict = {"program": args.program, "iterations": args.iterations, "nodes": args.nodes,
                 "rate": args.rate, "mpi": inst.describe(), "races": {}, "whole": {}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="inrun-runs-") as tmp, \
            Bed(args.nodes, 1, [args.rate]) as bed:  # fmt: skip
        binary = Path(tmp) / "coll_loop"
        subprocess.run([inst.mpicc, "-O2", "-o", str(binary), str(SOURCE)], check=True,
                       env={**os.environ, **inst.tool_env()})  # fmt: skip
        where = Where(inst, bed)
        os.environ.update(where.env())
        command = bed.launch(inst, [str(binary), op, size, str(args.iterations)])
        through = bed.command(bed.hostnames[0], [])
        for seed in range(1, args.seeds + 1):
            for r in lengths:
                extra = {"COMMTUNE_RACE_DRAIN": "0"} if r == 0 else {}
                done = race(inst, command, op, names, seed, 600, extra, through, max(r, 1))
                got = decide_races([done.race], 0.0, 0.0)
                est = {c.name: c.test.speedup for c in got}
                out["races"].setdefault(str(r), []).append(est)
                print(
                    f"run {r} seed {seed}: {len(done.race.time)} units, "
                    + ", ".join(f"{n} {v:.2f}x" for n, v in est.items()),
                    flush=True,
                )
        reference, times = alone(where, command, op, CT_METRIC, args.rounds,
                                 random.Random(77))  # fmt: skip
        base = statistics.median(times[reference])
        out["whole"] = {n: base / statistics.median(t) for n, t in times.items() if t}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    whole = out["whole"]
    heads = [f"units of {r}" if r else "call by call, no barrier" for r in lengths]
    print("| candidate | whole runs | " + " | ".join(heads) + " |")
    print("|---|---|" + "---|" * len(lengths))
    for n in names:
        cells = []
        for r in lengths:
            v = [e[n] for e in out["races"][str(r)] if n in e]
            cells.append(f"{statistics.median(v):.2f}x ({min(v):.2f}-{max(v):.2f})" if v else "-")
        print(f"| {n} | {whole.get(n, float('nan')):.2f}x | " + " | ".join(cells) + " |")
    best = max(names, key=lambda n: whole.get(n, 0.0))
    for r in lengths:
        med = {n: statistics.median(e[n] for e in out["races"][str(r)]) for n in names}
        agree = sum((whole[a] > whole[b]) == (med[a] > med[b])
                    for a, b in combinations(names, 2))  # fmt: skip
        head = heads[lengths.index(r)]
        print(f"{head}: best {max(med, key=med.get)} (whole runs: {best}); pairs ordered as "
              f"whole runs: {agree} of {len(names) * (len(names) - 1) // 2}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
