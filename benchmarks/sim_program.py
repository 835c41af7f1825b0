"""A real program on the test bed and in its calibrated simulation (issue 65): CoMD (ECP-copa/
CoMD, a snapshot given with ``--source``) built with the real library's ``mpicc`` and with
``smpicc``, run at 4 and 8 ranks (one a bed node) under a few of the library's allreduce
algorithms, on the bed (interleaved rounds, the median) and in SMPI on the platform
``commtune calibrate`` measured on the same bed under load (every node launched), its
computation simulated (timed here, scaled by the calibrated speeds) (root).

    python benchmarks/sim_program.py --source comd=DIR --nodes 4,8 --rate 1000 --rounds 5

Reported per rank count and configuration: CoMD's own total time on the bed (median and
spread) and simulated, their ratio; and whether the two agree on the fastest configuration
(and on the order of all of them).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from apps import APPS, comd_box
from smpi_agreement import calibrate, site

from commtune.knobs import apply, load_catalog
from commtune.mpi import Vendor, find_installation, installation_of, read_calibration
from commtune.mpi import write_cluster as write_platform
from commtune.testbed import Cluster as Bed

# the library's allreduce choices compared (its own decision first), and SMPI's port of each
CONFIGS = {
    "openmpi": {"ignore": None, "recursive_doubling": "rdb", "ring": "lr",
                "rabenseifner": "rab_rdb"},
    "mpich": {"auto": None, "recursive_doubling": "rdb",
              "reduce_scatter_allgather": "rab_rdb"},
}  # fmt: skip
TOTAL = re.compile(APPS["comd"].metric.removeprefix("regex:"))  # CoMD's own "total" timer


def comd(binary: Path, ranks: int) -> list[str]:
    return [str(binary), *comd_box(ranks)]


def total(text: str) -> float:
    found = TOTAL.findall(text)
    if not found:
        raise RuntimeError(f"no total time in: {text.strip()[-300:]}")
    return float(found[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", required=True, help="comd=DIR: a snapshot of ECP-copa/CoMD")
    p.add_argument("--mpi", default="openmpi")
    p.add_argument("--nodes", default="4,8")
    p.add_argument("--rate", type=float, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    name, _, where = args.source.partition("=")
    app = APPS[name]
    inst = installation_of(args.mpi)
    smpi = find_installation(Vendor.SMPI)
    real_bin = app.build(Path(where), inst)
    sim_bin = app.build(Path(where), smpi)
    configs = CONFIGS[inst.vendor.value]
    knob = load_catalog(inst.vendor.value)[inst.impl.algorithm_knob("allreduce")]
    selector = smpi.impl.decides_as(inst.impl) or {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="sim-program-") as tmp:
        work = Path(tmp)
        for nodes in (int(n) for n in args.nodes.split(",")):
            argv = comd(real_bin, nodes)
            with Bed(nodes, 1, [args.rate]) as bed:
                cal_dir = work / f"cal{nodes}"
                cal = calibrate(bed, inst, args.mpi, cal_dir, ranks=nodes)
                calibration = read_calibration(str(cal_dir))
                cluster = replace(calibration.cluster(nodes, 1, "flat"), backbone="100Gbps")
                platform, hosts = write_platform(cluster, str(work / f"sim{nodes}"))
                real: dict[str, list[float]] = {c: [] for c in configs}
                for k in range(args.rounds):  # interleaved, the order rotating
                    order = list(configs)[k % len(configs) :] + list(configs)[: k % len(configs)]
                    for config in order:
                        extra = apply([knob], {knob.name: config}, inst.impl).env
                        env = {**site(bed, inst), **extra}
                        done = bed.run(bed.hostnames[0], bed.launch(inst, argv), timeout=900,
                                       env=env, cwd=work)  # fmt: skip
                        if done.returncode != 0:
                            raise RuntimeError(f"{config}: {done.stderr.strip()[-300:]}")
                        real[config].append(total(done.stdout))
            for config, port in configs.items():
                chosen = [f"--cfg=smpi/allreduce:{port}"] if port else []
                cfg = [f"--cfg={k}:{v}" for k, v in selector.items()]
                sim_argv = ["smpirun", "-np", str(nodes), "-platform", platform, "-hostfile",
                            hosts, *calibration.cfg_args(), *cfg, *chosen,
                            "--log=root.thres:critical", *comd(sim_bin, nodes)]  # fmt: skip
                done = subprocess.run(sim_argv, capture_output=True, text=True, cwd=work,
                                      timeout=3600, check=True)  # fmt: skip
                median = statistics.median(real[config])
                row = {"nodes": nodes, "config": config, "real": real[config],
                       "real_median": median,
                       "real_spread": (max(real[config]) - min(real[config])) / median,
                       "simulated": total(done.stdout),
                       "calibration": cal["agreement"]["median"]}  # fmt: skip
                row["ratio"] = row["simulated"] / median
                print(json.dumps(row), file=sys.stderr)
                rows.append(row)
    print(f"{app.name} on {inst.describe()}: the bed (median of {args.rounds} interleaved "
          "rounds) against SMPI on the platform calibrated under load\n")  # fmt: skip
    print("| ranks | allreduce | real: median (spread) | simulated | sim/real |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['nodes']} | {r['config']} | {r['real_median']:.3f} s "
            f"({r['real_spread']:.0%}) | {r['simulated']:.3f} s | {r['ratio']:.2f} |"
        )
    for nodes in sorted({r["nodes"] for r in rows}):
        mine = [r for r in rows if r["nodes"] == nodes]
        by_real = [r["config"] for r in sorted(mine, key=lambda r: r["real_median"])]
        by_sim = [r["config"] for r in sorted(mine, key=lambda r: r["simulated"])]
        print(f"\n{nodes} ranks: fastest on the bed {by_real[0]}, in simulation {by_sim[0]} "
              f"({'the same' if by_real[0] == by_sim[0] else 'not the same'}); order on the "
              f"bed {', '.join(by_real)}; simulated {', '.join(by_sim)}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
