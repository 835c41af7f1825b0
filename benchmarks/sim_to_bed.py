"""From a simulated answer to the real machine, at the scale that runs here (issues 50, 65):
the test bed's nodes (links shaped by ``tc tbf``, one rank a node) simulated on a platform
``commtune calibrate`` measured on two of them with the first library (``--platform
calibrated``; ``uncalibrated``: the flat cluster of the shaped rate with the one-byte latency
matched, SMPI's own factors), ``commtune sample --mpi smpi`` on it, and the selection files it
writes for Open MPI and MPICH timed on the bed against each library's own decision (root).

    python benchmarks/sim_to_bed.py --nodes 4 --rate 1000 --rounds 5 --json sim_to_bed.json

Per library, collective and size (``benchmarks/csrc/coll_time.c``: the median of REPS calls,
the slowest rank's time): the library with its defaults and with the simulated selection
file, interleaved, ``--rounds`` launches each; the median of each. Reported: where the
simulation chose other than the library's own decision, how often the file is also faster on
the real links, and the real gain or loss (defaults over file); where the simulation kept
the library's decision, what the file costs (it should be nothing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from instrument import COMMTUNE, last_json
from smpi_agreement import build, calibrate, latency_matched, real_run, value

from commtune.mpi import (
    CONFIGURATION_FILE,
    Vendor,
    find_installation,
    installation_of,
    read_calibration,
    write_cluster,
)
from commtune.testbed import Cluster as Bed

OPS = ("allreduce", "bcast", "alltoall")
SIZES = (8, 512, 32768, 262144, 1 << 20)


OWN = ("ignore", "auto")  # the library's own decision, as each selection file names it


def report(rows: list[dict]) -> None:
    """The table, and the summary by whether the file changes the library's decision at a
    size (its algorithm there is not the library's own)."""
    print("| library | collective | size | simulated choice (saved in simulation) "
          "| real: defaults / file (median of rounds) | real gain |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in rows:
        saved = r["sim_saved"]
        said = f"{r['sim_algorithm']} ({100 * saved:+.0f} %)" if saved is not None else "-"
        print(f"| {r['library']} | {r['op']} | {r['size']} | {said} | "
              f"{r['defaults_s'] * 1e6:.0f} / {r['file_s'] * 1e6:.0f} us | "
              f"{r['real_gain']:.2f}x |")  # fmt: skip
    changed = [r for r in rows if r["sim_algorithm"] not in (None, *OWN)]
    kept = [r for r in rows if r["sim_algorithm"] in OWN]
    for label, group in (("changes the library's decision", changed),
                         ("keeps the library's decision", kept)):  # fmt: skip
        if not group:
            continue
        gains = sorted(r["real_gain"] for r in group)
        faster = sum(g > 1.0 for g in gains)
        print(f"\nwhere the file {label} ({len(group)} sizes): faster on the bed in {faster}; "
              f"real gain median {statistics.median(gains):.2f}x (range {gains[0]:.2f}-"
              f"{gains[-1]:.2f})")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rate", type=float, default=1000, help="Mbit/s of every node's link")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--libraries", default="openmpi,mpich")
    p.add_argument("--platform", choices=("calibrated", "uncalibrated"), default="calibrated")
    p.add_argument("--json", type=Path)
    p.add_argument("--report", type=Path, help="only print the report of a saved --json")
    args = p.parse_args()
    if args.report:
        report(json.loads(args.report.read_text())["rows"])
        return 0
    libraries = [installation_of(n) for n in args.libraries.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="sim-to-bed-") as tmp:
        work = Path(tmp)
        sim_prog = build(find_installation(Vendor.SMPI).mpicc, work / "coll_sim")
        programs = {i.vendor.value: build(i.mpicc, work / f"coll_{i.vendor.value}")
                    for i in libraries}  # fmt: skip
        with Bed(args.nodes, 1, [args.rate]) as bed:
            first = libraries[0]
            if args.platform == "calibrated":
                spec = args.libraries.split(",")[0]
                calibrate(bed, first, spec, work / "cal")
                calibration = read_calibration(str(work / "cal"))
                cluster = replace(calibration.cluster(args.nodes, 1, "flat"), backbone="100Gbps")
                platform, hosts = write_cluster(cluster, str(work / "bed"))
                # beside the platform: every simulation of the sampler runs with it
                (work / "bed" / CONFIGURATION_FILE).write_text(calibration.cfg_text("bed"))
            else:
                one_way = value(real_run(bed, first, programs[first.vendor.value], "pingpong",
                                         1, 50, {}))  # fmt: skip
                cluster = latency_matched(sim_prog, work, args.nodes, args.rate, one_way)
                platform, hosts = write_cluster(cluster, str(work / "bed"))
            print(f"{args.nodes} nodes, {args.platform}: {cluster.describe()}", file=sys.stderr)
            out_dir = work / "sample"
            sampled = subprocess.run(
                [*COMMTUNE, "sample", "--mpi", "smpi", "--platform",
                 platform, "--hostfile", hosts, "--np", str(args.nodes), "--ops", ",".join(OPS),
                 "--for", args.libraries, "-o", str(out_dir), "--storage",
                 f"sqlite:///{work / 's.db'}", "--json"],
                capture_output=True, text=True, check=True)  # fmt: skip
            sample = last_json(sampled.stdout)
            simulated = {(s["target"], s["op"], s["size"]): s for s in sample["savings"]}
            for inst in libraries:
                vendor = inst.vendor.value
                env_file = sample["env"].get(vendor)
                if env_file is None:
                    print(f"{vendor}: no file written (its own decision everywhere)",
                          file=sys.stderr)  # fmt: skip
                    continue
                for op in OPS:
                    for size in SIZES:
                        times: dict[str, list[float]] = {"defaults": [], "file": []}
                        for k in range(args.rounds):  # interleaved, the order alternating
                            arms = ("defaults", "file") if k % 2 == 0 else ("file", "defaults")
                            for arm in arms:
                                extra = env_file if arm == "file" else {}
                                times[arm].append(
                                    value(
                                        real_run(
                                            bed, inst, programs[vendor], op, size, args.reps, extra
                                        )
                                    )
                                )
                        sim = simulated.get((vendor, op, size))
                        d, f = (statistics.median(times[a]) for a in ("defaults", "file"))
                        row = {"library": vendor, "op": op, "size": size,
                               "defaults_s": d, "file_s": f, "real_gain": d / f,
                               "spread": {a: (max(t) - min(t)) / statistics.median(t)
                                          for a, t in times.items()},
                               "sim_saved": sim["saved"] if sim else None,
                               "sim_algorithm": sim["algorithm"] if sim else None}  # fmt: skip
                        print(json.dumps(row), file=sys.stderr)
                        rows.append(row)
    report(rows)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "sample": sample}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
