"""Does ``commtune calibrate`` order the collectives as the machine does? (issue 78)

    python benchmarks/calibration_order.py [--mpi openmpi,mpich@5] [--nodes 4,8]
                                           [--rates 1000,400] [--json FILE]

Per library, rate and node count: a test bed of that many nodes (one rank a node, links
shaped by ``tc tbf``; root), ``commtune calibrate --json --allow-worse-order --one-node none
-- mpirun -np NODES`` inside it: the ping-pong fitted under the load of every node's pair,
checked out of sample (a fresh launch on sizes the fit never saw), and its own check of how
the platform orders the collectives on all the nodes (every pair of algorithms SMPI ports
faithfully, 5 collectives, 6 sizes, on the bed and simulated on the calibrated platform and
on SimGrid's own factors on the same links). Printed: one Markdown row per case (the faster
of two where the bed's differ by > 10 %: calibrated / SimGrid's factors; sim/real median per
collective; how often the bed's own two launches agree (no platform can be expected to do
better); the ping-pong in and out of sample; the largest bandwidth factor, the smallest
latency factor; whether the command would have refused it), and the totals, with the clear pairs the
calibrated platform simulates as a tie (within 1 %: SMPI's ports send the same messages, so no
factor can order them) and its agreement on the rest that the bed's launches order alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE, last_json
from smpi_agreement import site

from commtune.mpi import installation_of
from commtune.testbed import Cluster as Bed


def calibrate(spec: str, nodes: int, rate: float, out: Path) -> dict:
    inst = installation_of(spec)
    argv = [*COMMTUNE, "calibrate", "--mpi", spec, "--json", "--allow-worse-order",
            "--one-node", "none", "--out", str(out), "--", inst.launcher, "-np",
            str(nodes)]  # fmt: skip
    start = time.perf_counter()
    with Bed(nodes, 1, [rate]) as bed:
        done = bed.run(bed.hostnames[0], argv, timeout=1800, env=site(bed, inst))
    if done.returncode != 0:
        raise RuntimeError(f"calibrate {spec} {nodes} nodes: {done.stderr.strip()[-500:]}")
    data = last_json(done.stdout)
    data["seconds"] = time.perf_counter() - start
    return data


def row(spec: str, nodes: int, rate: float, d: dict) -> str:
    o = d["ordering"]
    mine, theirs = o["agree"]["calibrated"], o["agree"]["plain"]
    ratios = " ".join(f"{op} {o['ratio']['calibrated'][op]:.2f}/{o['ratio']['plain'][op]:.2f}"
                      for op in o["ratio"]["calibrated"])  # fmt: skip
    cal = d["calibration"]
    bw = max(p[1] for p in cal["bw_factor"])
    lat = min(p[1] for p in cal["lat_factor"])
    pp, held, plain = d["agreement"], d["held_out"], d["held_out_plain"]
    refused = "refused" if mine < theirs else "kept"
    steady = "-" if o.get("steady") is None else o["steady"]
    return (f"| {spec} | {nodes} | {rate:g} | {mine} / {theirs} / {steady} of {o['clear']} | "
            f"{ratios} | "
            f"{pp['median']:.2f} ({pp['within_0.8_1.25']:.0%}) | {held['median']:.2f} "
            f"({held['within_0.8_1.25']:.0%}) / {plain['median']:.2f} | {bw:.2f} / {lat:.2f} | "
            f"{refused} | {d['seconds']:.0f} s |")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="openmpi,mpich@5")
    p.add_argument("--nodes", default="4,8")
    p.add_argument("--rates", default="1000,400", help="Mbit/s of every node's link")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    print("| MPI | nodes | Mbit/s | faster of two agrees: calibrated / SimGrid's / the machine's "
          "two launches with each other (of clear) | "
          "sim/real median per collective: calibrated/SimGrid's | ping-pong in sample: median "
          "(within 0.8-1.25) | held out: calibrated / SimGrid's | largest bw / smallest lat "
          "factor | check | time |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    results = []
    with tempfile.TemporaryDirectory(prefix="calibration-order-") as tmp:
        for spec in args.mpi.split(","):
            for rate in (float(r) for r in args.rates.split(",")):
                for nodes in (int(n) for n in args.nodes.split(",")):
                    d = calibrate(spec, nodes, rate, Path(tmp) / f"{spec}-{nodes}-{rate:g}")
                    print(row(spec, nodes, rate, d), flush=True)
                    results.append({"mpi": spec, "nodes": nodes, "rate": rate, **d})
                    if args.json:  # every case kept as soon as it is measured
                        args.json.write_text(json.dumps(results, indent=1) + "\n")
    mine = sum(r["ordering"]["agree"]["calibrated"] for r in results)
    theirs = sum(r["ordering"]["agree"]["plain"] for r in results)
    clear = sum(r["ordering"]["clear"] for r in results)
    per_op: dict[str, list[float]] = {}
    for r in results:
        for op, v in r["ordering"]["ratio"]["calibrated"].items():
            if v is not None:
                per_op.setdefault(op, []).append(v)
    # the pairs no platform can order (simulated as a tie), and those the bed itself repeats
    clear_pairs = [q for r in results for q in r["ordering"]["pairs"] if q["clear"]]
    tied = sum(q["tied"]["calibrated"] for q in clear_pairs)
    told = [q for q in clear_pairs if not q["tied"]["calibrated"] and q["steady"] is not False]
    right = sum(q["agrees"]["calibrated"] for q in told)
    print(f"\nsimulated as a tie on the calibrated platform: {tied} of {clear}; of the "
          f"{len(told)} it tells apart and the bed's launches order alike, it agrees in "
          f"{right} ({right / max(len(told), 1):.0%})")  # fmt: skip
    print(
        f"all: calibrated {mine} of {clear} ({mine / max(clear, 1):.0%}), SimGrid's own "
        f"factors {theirs} ({theirs / max(clear, 1):.0%}); sim/real median per collective "
        "over the cases: "
        + ", ".join(f"{op} {statistics.median(v):.2f}" for op, v in per_op.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
