"""How far to trust a simulated cluster: the same collective benchmark on the test bed's
namespace nodes (links shaped by ``tc tbf``, Open MPI 4.1 over TCP, one rank a node) and on
SMPI with a platform of the same figures (root).

    python benchmarks/smpi_agreement.py --nodes 4,8 --rate 1000 --reps 10 \\
        --json benchmarks/out/smpi_agreement.json

Per collective, two algorithms that Open MPI and SMPI both have (SMPI's ports of Open MPI's
and MPICH's): allreduce recursive doubling against ring, bcast linear against binomial tree,
alltoall linear against pairwise; eight message sizes from 8 B to 4 MiB. Open MPI's are
forced by its dynamic rules variables, SMPI's by ``--cfg=smpi/<op>:<name>``. The platform is
a flat cluster: each node's link at the shaped rate, a switch of 100 Gb/s (the bed's
bridge), and a link latency calibrated so that SMPI's one-byte ping-pong takes what the
bed's takes (SMPI's own latency factors stay). Reported: how often the two agree on the
faster algorithm, and the ratio of simulated to real time per size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from commtune.mpi import Cluster, Installation, find_installation, installation_of, write_cluster
from commtune.mpi._vendor import Vendor
from commtune.testbed import Cluster as Bed

SOURCE = Path(__file__).resolve().parent / "csrc" / "coll_time.c"
SIZES = (8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20)
# collective -> ((Open MPI's number, SMPI's name) of the two algorithms)
PAIRS = {
    "allreduce": (("3", "rdb"), ("4", "lr")),
    "bcast": (("1", "flattree"), ("6", "binomial_tree")),
    "alltoall": (("1", "basic_linear"), ("2", "pair")),
}
NAMES = {"allreduce": ("recursive doubling", "ring"), "bcast": ("linear", "binomial tree"),
         "alltoall": ("linear", "pairwise")}  # fmt: skip


def build(cc: str, out: Path) -> str:
    subprocess.run([cc, "-O2", "-o", str(out), str(SOURCE)], check=True)
    return str(out)


def value(text: str) -> float:
    return float(text.rsplit("time ", maxsplit=1)[-1].split(maxsplit=1)[0])


def real_run(bed: Bed, inst: Installation, program: str, op: str, size: int, reps: int,
             extra: dict[str, str]) -> str:  # fmt: skip
    """coll_time across the bed's nodes with ``inst`` and ``extra`` variables: its output."""
    env = {**os.environ, **inst.tool_env(), **bed.network_env(inst), **extra}
    done = bed.run(bed.hostnames[0], bed.launch(inst, [program, op, str(size), str(reps)]),
                   timeout=600, env=env)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{op} {extra} {size}: {done.stderr.strip()[-300:]}")
    return done.stdout


def real(bed: Bed, program: str, op: str, algorithm: str | None, size: int, reps: int) -> float:
    extra = (
        {}
        if algorithm is None
        else {
            "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
            f"OMPI_MCA_coll_tuned_{op}_algorithm": algorithm,
        }
    )
    return value(real_run(bed, installation_of("openmpi"), program, op, size, reps, extra))


def simulated(program: str, platform: str, hosts: str, nodes: int, op: str,
              algorithm: str | None, size: int) -> float:  # fmt: skip
    cfg = [f"--cfg=smpi/{op}:{algorithm}"] if algorithm else []
    argv = ["smpirun", "-np", str(nodes), "-platform", platform, "-hostfile", hosts, *cfg,
            "--log=root.thres:critical", program, op, str(size), "3"]  # fmt: skip
    return value(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)


def calibrated(program: str, work: Path, nodes: int, rate: float, one_way: float) -> Cluster:
    """The flat cluster whose one-byte ping-pong takes ``one_way`` (a line through two
    latencies: SMPI's time is linear in the link latency)."""

    def cluster(lat_us: float) -> Cluster:
        return Cluster(nodes, 1, "flat", f"{rate:g}Mbps", f"{lat_us:.3f}us",
                       backbone="100Gbps")  # fmt: skip

    points = []
    for lat in (1.0, 50.0):
        platform, hosts = write_cluster(cluster(lat), str(work / f"cal{lat:g}"))
        points.append((lat, simulated(program, platform, hosts, 2, "pingpong", None, 1)))
    (l0, t0), (l1, t1) = points
    slope = (t1 - t0) / (l1 - l0)
    lat = max(0.001, l0 + (one_way - t0) / slope)
    return cluster(lat)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="4,8")
    p.add_argument("--rate", type=float, default=1000, help="Mbit/s of every node's link")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="smpi-agree-") as tmp:
        work = Path(tmp)
        real_prog = build(installation_of("openmpi").mpicc, work / "coll_real")
        sim_prog = build(find_installation(Vendor.SMPI).mpicc, work / "coll_sim")
        for nodes in (int(n) for n in args.nodes.split(",")):
            with Bed(nodes, 1, [args.rate]) as bed:
                one_way = real(bed, real_prog, "pingpong", None, 1, 50)
                cluster = calibrated(sim_prog, work, nodes, args.rate, one_way)
                platform, hosts = write_cluster(cluster, str(work / f"bed{nodes}"))
                print(f"{nodes} nodes: one-way {one_way * 1e6:.1f} us real; {cluster.describe()}",
                      file=sys.stderr)  # fmt: skip
                for op, algorithms in PAIRS.items():
                    for size in SIZES:
                        r = [real(bed, real_prog, op, a, size, args.reps) for a, _ in algorithms]
                        s = [simulated(sim_prog, platform, hosts, nodes, op, b, size)
                             for _, b in algorithms]  # fmt: skip
                        row = {"nodes": nodes, "op": op, "size": size, "real": r, "sim": s,
                               "agree": (r[0] < r[1]) == (s[0] < s[1]),
                               "ratio": [s[i] / r[i] for i in range(2)]}  # fmt: skip
                        print(json.dumps(row), file=sys.stderr)
                        rows.append(row)
    print(
        "| nodes | collective (A vs B) | sizes where A is faster: real / simulated | agree "
        "| sim/real time, median (range) |"
    )
    print("|---|---|---|---|---|")
    for nodes in sorted({r["nodes"] for r in rows}):
        for op in PAIRS:
            mine = [r for r in rows if r["nodes"] == nodes and r["op"] == op]
            ratios = [x for r in mine for x in r["ratio"]]
            real_a = sum(r["real"][0] < r["real"][1] for r in mine)
            sim_a = sum(r["sim"][0] < r["sim"][1] for r in mine)
            a, b = NAMES[op]
            print(
                f"| {nodes} | {op} ({a} vs {b}) | {real_a} / {sim_a} of {len(mine)} | "
                f"{sum(r['agree'] for r in mine)} of {len(mine)} | "
                f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |"
            )
    agree = sum(r["agree"] for r in rows)
    print(f"\nall: the faster algorithm agrees in {agree} of {len(rows)} comparisons")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
