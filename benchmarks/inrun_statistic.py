"""What a raced unit should be timed by: each reading of libctrace's race against a sweep of
whole runs, on the test bed (issue 93, item 1).

    python benchmarks/inrun_statistic.py [--mpi openmpi] [--nodes 4] [--rate 1000]
        [--ops allreduce,bcast,reduce,allgather,alltoall] [--sizes 8,65536,1048576]
        [--cases OP:BYTES,...] [--iterations 400] [--unit 4] [--seeds 2] [--rounds 4]
        [--json FILE]

On a bed of ``--nodes`` nodes (one rank a node, links shaped to ``--rate`` Mbit/s; root),
``benchmarks/csrc/coll_loop.c`` (OP of BYTES, ``--iterations`` times) is raced with *every*
algorithm the library lists (``--seeds`` raced runs, units of ``--unit`` calls after a
barrier), then each algorithm is run alone in ``--rounds`` shuffled rounds of whole runs (the
sweep: its speedups over the library's own decision, medians). One raced run gives four
readings of each unit, each read by the race's own estimate (``tune.decide_races``):

- ``after_last_arrival`` (what the race reads since issue 93): each call from the last rank's
  arrival to the last rank's departure, summed;
- ``least`` (what it read before for allreduce, allgather, alltoall): the least time any rank
  spent inside the calls;
- ``most`` (before, for bcast and reduce): the most any rank spent inside them;
- ``span``: the slowest rank's time from the unit's barrier to its last call's end.

A pair of candidates (the reference among them) counts where the sweep separates it: the
bootstrap 95 % interval of the ratio of their whole runs' medians excludes 1. Printed per
reading: of those pairs, how many the race orders as the sweep does (the medians over the
seeds), per case and in all; the goal (issue 93) is 95 % for the race's reading.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from commtune.tune import Race, decide_races

SOURCE = Path(__file__).resolve().parent / "csrc" / "coll_loop.c"
READINGS = ("after_last_arrival", "least", "most", "span")


def reading(r: Race, name: str) -> Race:
    """The race with its units timed by reading ``name``."""
    time = {"after_last_arrival": r.time, "least": r.time_least, "most": r.time_slowest,
            "span": r.time_span}[name]  # fmt: skip
    if time is None:
        raise SystemExit(f"the race wrote no {name} times: an older libctrace?")
    return dataclasses.replace(r, time=time)


def separated(a: list[float], b: list[float], rng: random.Random, draws: int = 2000) -> int:
    """+1 where ``a``'s runs are faster than ``b``'s beyond noise (the bootstrap 95 %
    interval of median(b) / median(a) above 1), -1 where slower, 0 where not separated."""

    def ratio() -> float:
        return statistics.median(rng.choices(b, k=len(b))) / statistics.median(
            rng.choices(a, k=len(a))
        )

    ratios = sorted(ratio() for _ in range(draws))
    low, high = ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]
    return 1 if low > 1 else -1 if high < 1 else 0


def case(where: Where, binary: Path, op: str, size: int, args: argparse.Namespace,
         rng: random.Random) -> dict:  # fmt: skip
    """One collective at one size: every reading's speedups over the seeds, the sweep's, and
    the pairs the sweep separates."""
    inst = where.inst
    command = where.launch([str(binary), op, str(size), str(args.iterations)])
    through = where.bed.command(where.bed.hostnames[0], []) if where.bed else ()
    said: dict[str, dict[str, list[float]]] = {r: {} for r in READINGS}
    names: tuple[str, ...] = ()
    refused: set[str] = set()
    for seed in range(1, args.seeds + 1):
        done = race(inst, command, op, [], seed, 900, None, through, args.unit, args.unit)
        names = done.race.names
        refused |= {n.split(" (")[0] for n in done.race.refused_names()}
        for r in READINGS:
            for c in decide_races([reading(done.race, r)], 0.0, 0.0):
                said[r].setdefault(c.name, []).append(c.test.speedup)
    reference, times = alone(where, command, op, CT_METRIC, args.rounds, rng)
    base = statistics.median(times[reference])
    whole = {n: base / statistics.median(t) for n, t in times.items() if t}
    spread = {n: max(t) / min(t) for n, t in times.items() if len(t) > 1}
    ranked = [n for n in names if n in whole and n not in refused]
    pairs, agree = [], dict.fromkeys(READINGS, 0)
    for a, b in combinations(ranked, 2):
        sign = separated(times[a], times[b], rng)
        if sign == 0:
            continue
        pairs.append((a, b, sign))
        for r in READINGS:
            med = {n: statistics.median(v) for n, v in said[r].items()}
            med[reference] = 1.0
            if a in med and b in med and (med[a] > med[b]) == (sign > 0):
                agree[r] += 1
    line = ", ".join(f"{n} {whole[n]:.2f}x" for n in ranked)
    print(f"{op} {size} B: whole {line}; separated pairs {len(pairs)}; " + ", ".join(
        f"{r} {agree[r]}" for r in READINGS), flush=True)  # fmt: skip
    return {"op": op, "bytes": size, "whole": whole, "spread": spread, "said": said,
            "times": times,
            "refused": sorted(refused), "pairs": pairs, "agree": agree,
            "candidates": list(names)}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="openmpi")
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rate", type=float, default=1000.0)
    p.add_argument("--ops", default="allreduce,bcast,reduce,allgather,alltoall")
    p.add_argument("--sizes", default="8,65536,1048576")
    p.add_argument("--cases", help="OP:BYTES pairs instead of every op at every size")
    p.add_argument("--iterations", type=int, default=400)
    p.add_argument("--unit", type=int, default=4)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if os.geteuid() != 0:
        p.error("the test bed needs root (network namespaces)")
    inst = installation_of(args.mpi)
    rng = random.Random(93)
    cases = []
    with tempfile.TemporaryDirectory(prefix="inrun-statistic-") as tmp, \
            Bed(args.nodes, 1, [args.rate]) as bed:  # fmt: skip
        binary = Path(tmp) / "coll_loop"
        subprocess.run([inst.mpicc, "-O2", "-o", str(binary), str(SOURCE)], check=True,
                       env={**os.environ, **inst.tool_env()})  # fmt: skip
        where = Where(inst, bed)
        os.environ.update(where.env())
        chosen = ([(c.split(":")[0], int(c.split(":")[1])) for c in args.cases.split(",")]
                  if args.cases else [(op, int(size)) for op in args.ops.split(",")
                                      for size in args.sizes.split(",")])  # fmt: skip
        for op, size in chosen:
            cases.append(case(where, binary, op, size, args, rng))
    out = {"mpi": inst.describe(), "nodes": args.nodes, "rate": args.rate,
           "iterations": args.iterations, "unit": args.unit, "seeds": args.seeds,
           "rounds": args.rounds, "cases": cases}  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    total = sum(len(c["pairs"]) for c in cases)
    print(f"\n{inst.describe()}, {args.nodes} nodes at {args.rate:g} Mbit/s: {total} pairs the "
          "sweep separates (95 % bootstrap)")  # fmt: skip
    print("| reading | ordered as whole runs | share |")
    print("|---|---|---|")
    for r in READINGS:
        agree = sum(c["agree"][r] for c in cases)
        print(
            f"| {r} | {agree} of {total} | {agree / total:.0%} |" if total else f"| {r} | - | - |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
