"""How far to trust a simulated cluster: the same collective benchmark on the test bed's
namespace nodes (links shaped by ``tc tbf``, one rank a node, over TCP) and on SMPI, on two
platforms side by side in one run (root):

- **uncalibrated**: a flat cluster of the shaped rate whose link latency is set so that
  SMPI's one-byte ping-pong takes what the bed's takes, SMPI's own (InfiniBand) factors and
  zero overheads (what the project did before issue 65);
- **calibrated**: ``commtune calibrate`` run on the bed's first two nodes with the same MPI,
  its node and links as a flat cluster of the bed's size (a 100 Gb/s switch: the bed's
  bridge), its configuration (factors per size segment, overheads, thresholds) on every run;
- **under load**: the same, calibrated with every bed node launched (``mpirun -np N``: the
  pair 0, 1 measured while every other pair does the same).

    python benchmarks/smpi_agreement.py --nodes 4,8 --rates 1000,400 --reps 10 \\
        --json agreement.json

Per collective, two algorithms the library forces and SMPI ports faithfully (Open MPI:
allreduce recursive doubling against ring, bcast binomial against scatter-allgather,
reduce linear against in-order binary, allgather Bruck against ring, alltoall linear
against pairwise; MPICH: its names of the same where it has them); eight sizes from 8 B to
4 MiB. Reported per platform: how often the faster algorithm agrees with the bed's, and the
simulated over the real time (median, the share of points within 0.8-1.25 and 0.5-2).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from instrument import COMMTUNE, last_json

from commtune.mpi import (
    Cluster,
    Installation,
    Vendor,
    find_installation,
    installation_of,
    read_calibration,
    write_cluster,
)
from commtune.testbed import Cluster as Bed

SOURCE = Path(__file__).resolve().parent / "csrc" / "coll_time.c"
SIZES = (8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20)
# library -> collective -> ((the library's name, SMPI's) of the two algorithms); every pair
# is among the library's faithful ports (MPIVendor.smpi_ports)
PAIRS = {
    "openmpi": {
        "allreduce": (("recursive_doubling", "rdb"), ("ring", "lr")),
        "bcast": (("binomial", "binomial_tree"), ("scatter_allgather", "scatter_rdb_allgather")),
        "reduce": (("linear", "ompi_basic_linear"), ("in-order_binary", "ompi_in_order_binary")),
        "allgather": (("bruck", "bruck"), ("ring", "ring")),
        "alltoall": (("linear", "basic_linear"), ("pairwise", "pair")),
    },
    "mpich": {
        "allreduce": (("recursive_doubling", "rdb"), ("reduce_scatter_allgather", "rab_rdb")),
        "bcast": (("binomial", "binomial_tree"),
                  ("scatter_ring_allgather", "scatter_LR_allgather")),
        "reduce": (("binomial", "binomial"), ("reduce_scatter_gather", "scatter_gather")),
        "allgather": (("brucks", "bruck"), ("ring", "ring")),
        "alltoall": (("brucks", "bruck"), ("pairwise", "pair")),
    },
}  # fmt: skip
PLATFORMS = ("uncalibrated", "calibrated", "under load")
CLEAR = 0.1  # the bed's two algorithms this far apart: a comparison its noise does not decide


def build(cc: str, out: Path, env: dict[str, str] | None = None) -> str:
    subprocess.run([cc, "-O2", "-o", str(out), str(SOURCE)], check=True, env=env)
    return str(out)


def value(text: str) -> float:
    return float(text.rsplit("time ", maxsplit=1)[-1].split(maxsplit=1)[0])


def site(bed: Bed, inst: Installation) -> dict[str, str]:
    env = {**os.environ, **inst.tool_env(), **bed.site_env(inst)}
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def real_run(bed: Bed, inst: Installation, program: str, op: str, size: int, reps: int,
             extra: dict[str, str]) -> str:  # fmt: skip
    """coll_time across the bed's nodes with ``inst`` and ``extra`` variables: its output."""
    env = {**os.environ, **inst.tool_env(), **bed.network_env(inst), **extra}
    done = bed.run(bed.hostnames[0], bed.launch(inst, [program, op, str(size), str(reps)]),
                   timeout=600, env=env)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{op} {extra} {size}: {done.stderr.strip()[-300:]}")
    return done.stdout


def real(bed: Bed, inst: Installation, program: str, op: str, algorithm: str | None,
         size: int, reps: int) -> float:  # fmt: skip
    """coll_time across the bed's nodes, the algorithm forced by the library's variable."""
    from commtune.knobs import apply, load_catalog

    extra: dict[str, str] = {}
    if algorithm is not None:
        knob = load_catalog(inst.vendor.value)[inst.impl.algorithm_knob(op)]
        extra = apply([knob], {knob.name: algorithm}, inst.impl).env
    return value(real_run(bed, inst, program, op, size, reps, extra))


def simulated(program: str, platform: str, hosts: str, nodes: int, op: str,
              algorithm: str | None, size: int, cfg: list[str]) -> float:  # fmt: skip
    chosen = [f"--cfg=smpi/{op}:{algorithm}"] if algorithm else []
    argv = ["smpirun", "-np", str(nodes), "-platform", platform, "-hostfile", hosts, *cfg,
            *chosen, "--cfg=smpi/simulate-computation:no", "--log=root.thres:critical",
            program, op, str(size), "3"]  # fmt: skip
    return value(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)


def latency_matched(program: str, work: Path, nodes: int, rate: float,
                    one_way: float) -> Cluster:  # fmt: skip
    """The flat cluster whose one-byte ping-pong takes ``one_way`` (a line through two
    latencies: SMPI's time is linear in the link latency): the uncalibrated platform."""

    def cluster(lat_us: float) -> Cluster:
        return Cluster(nodes, 1, "flat", f"{rate:g}Mbps", f"{lat_us:.3f}us",
                       backbone="100Gbps")  # fmt: skip

    points = []
    for lat in (1.0, 50.0):
        platform, hosts = write_cluster(cluster(lat), str(work / f"lat{lat:g}"))
        points.append((lat, simulated(program, platform, hosts, 2, "pingpong", None, 1, [])))
    (l0, t0), (l1, t1) = points
    slope = (t1 - t0) / (l1 - l0)
    return cluster(max(0.001, l0 + (one_way - t0) / slope))


def calibrate(bed: Bed, inst: Installation, spec: str, out: Path, ranks: int = 2) -> dict:
    """``commtune calibrate`` on the bed's first ``ranks`` nodes (the plain launch line
    spreads; more than 2: pairs side by side)."""
    argv = [*COMMTUNE, "calibrate", "--mpi", spec, "--json",
            "--one-node", "none", "--out", str(out), "--", inst.launcher, "-np",
            str(ranks)]  # fmt: skip
    done = bed.run(bed.hostnames[0], argv, timeout=900, env=site(bed, inst))
    if done.returncode != 0:
        raise RuntimeError(f"calibrate: {done.stderr.strip()[-500:]}")
    return last_json(done.stdout)


def summary(rows: list[dict], platform: str) -> dict:
    ratios = [x for r in rows for x in r["ratio"][platform]]
    return {
        "agree": sum(r["agree"][platform] for r in rows), "of": len(rows),
        "ratio_median": statistics.median(ratios),
        "within_0.8_1.25": sum(0.8 <= x <= 1.25 for x in ratios) / len(ratios),
        "within_0.5_2": sum(0.5 <= x <= 2 for x in ratios) / len(ratios),
    }  # fmt: skip


def report(rows: list[dict], pairs: dict, lib: str) -> None:
    """The table per rate, node count and collective, and the summary per platform: all
    comparisons, and those where the bed's two times differ by more than ``CLEAR``."""
    platforms = [p for p in PLATFORMS if p in rows[0]["agree"]]
    print(f"{lib}: the faster of two algorithms, bed against SMPI, per platform\n")
    print(f"| rate | nodes | collective (A vs B) | agree: {' / '.join(platforms)} | "
          f"sim/real median: {' / '.join(platforms)} |")  # fmt: skip
    print("|---|---|---|---|---|")
    for rate in sorted({r["rate"] for r in rows}, reverse=True):
        for nodes in sorted({r["nodes"] for r in rows}):
            for op, pair in pairs.items():
                mine = [r for r in rows if (r["rate"], r["nodes"], r["op"]) == (rate, nodes, op)]
                if not mine:
                    continue
                a, b = (name for name, _ in pair)
                got = [summary(mine, name) for name in platforms]
                agree = " / ".join(str(g["agree"]) for g in got)
                ratio = " / ".join(f"{g['ratio_median']:.2f}" for g in got)
                print(
                    f"| {rate:g} | {nodes} | {op} ({a} vs {b}) | {agree} of {len(mine)} | {ratio} |"
                )
    print()
    clear = [r for r in rows if max(r["real"]) / min(r["real"]) > 1 + CLEAR]
    for name in platforms:
        s = summary(rows, name)
        per_op = [statistics.median(x for r in rows if r["op"] == op for x in r["ratio"][name])
                  for op in pairs if any(r["op"] == op for r in rows)]  # fmt: skip
        sure = sum(r["agree"][name] for r in clear)
        print(f"{name}: the faster algorithm agrees in {s['agree']} of {s['of']} "
              f"({s['agree'] / s['of']:.0%}), in {sure} of the {len(clear)} where the bed's two "
              f"differ by more than {CLEAR:.0%}; sim/real median {s['ratio_median']:.2f}, per "
              f"collective {min(per_op):.2f}-{max(per_op):.2f}; points within 0.8-1.25 "
              f"{s['within_0.8_1.25']:.0%}, within 0.5-2 {s['within_0.5_2']:.0%}")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="openmpi", help="a --mpi spec (openmpi, mpich@5, ...)")
    p.add_argument("--nodes", default="4,8")
    p.add_argument("--rates", default="1000", help="Mbit/s of every node's link, a comma list")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--ops", default=",".join(PAIRS["openmpi"]))
    p.add_argument("--json", type=Path)
    p.add_argument("--report", type=Path, help="only print the report of a saved --json")
    args = p.parse_args()
    inst = installation_of(args.mpi)
    pairs = {op: PAIRS[inst.vendor.value][op] for op in args.ops.split(",")}
    if args.report:
        saved = json.loads(args.report.read_text())
        report(saved["rows"], pairs, saved["installation"])
        return 0
    rows: list[dict] = []
    calibrations = []
    with tempfile.TemporaryDirectory(prefix="smpi-agree-") as tmp:
        work = Path(tmp)
        real_prog = build(inst.mpicc, work / "coll_real", {**os.environ, **inst.tool_env()})
        sim_prog = build(find_installation(Vendor.SMPI).mpicc, work / "coll_sim")
        for rate in (float(r) for r in args.rates.split(",")):
            for nodes in (int(n) for n in args.nodes.split(",")):
                with Bed(nodes, 1, [rate]) as bed:
                    cal_dir = work / f"cal-{nodes}-{rate:g}"
                    cal = calibrate(bed, inst, args.mpi, cal_dir)
                    load_dir = work / f"load-{nodes}-{rate:g}"
                    calibrate(bed, inst, args.mpi, load_dir, ranks=nodes)
                    agreement = cal["agreement"]
                    calibrations.append({"nodes": nodes, "rate": rate,
                                         "agreement": agreement["median"],
                                         "within": agreement["within_0.8_1.25"]})  # fmt: skip
                    one_way = real(bed, inst, real_prog, "pingpong", None, 1, 50)
                    plain = latency_matched(sim_prog, work, nodes, rate, one_way)
                    files = {"uncalibrated": (*write_cluster(plain, str(work / f"u{nodes}")), [])}
                    for name, where in (("calibrated", cal_dir), ("under load", load_dir)):
                        calibration = read_calibration(str(where))
                        measured = replace(calibration.cluster(nodes, 1, "flat"),
                                           backbone="100Gbps")  # fmt: skip
                        platform, hosts = write_cluster(measured, str(where / "bed"))
                        files[name] = (platform, hosts, calibration.cfg_args())
                    print(f"{nodes} nodes at {rate:g} Mbit/s: one-way {one_way * 1e6:.1f} us; "
                          f"calibration agrees {cal['agreement']['median']:.2f} at the "
                          "median", file=sys.stderr)  # fmt: skip
                    for op, algorithms in pairs.items():
                        for size in SIZES:
                            r = [real(bed, inst, real_prog, op, a, size, args.reps)
                                 for a, _ in algorithms]  # fmt: skip
                            row: dict = {"nodes": nodes, "rate": rate, "op": op,
                                         "size": size, "real": r, "sim": {}, "agree": {},
                                         "ratio": {}}  # fmt: skip
                            for name, (platform, hosts, cfg) in files.items():
                                s = [simulated(sim_prog, platform, hosts, nodes, op, b, size,
                                               cfg) for _, b in algorithms]  # fmt: skip
                                row["sim"][name] = s
                                row["agree"][name] = (r[0] < r[1]) == (s[0] < s[1])
                                row["ratio"][name] = [s[i] / r[i] for i in range(2)]
                            print(json.dumps(row), file=sys.stderr)
                            rows.append(row)
    lib = inst.describe()
    report(rows, pairs, lib)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"installation": lib, "calibrations": calibrations,
                                         "rows": rows}, indent=1) + "\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
