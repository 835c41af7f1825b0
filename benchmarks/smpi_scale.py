"""Tuning at cluster scale on SimGrid's SMPI: programs built with smpicc, simulated at 256 and
1,024 ranks on a full-bisection fat tree and a 4:1 tapered one.

Per case (program, ranks, cluster): the defaults (SMPI's own selector) and each library's
decision logic SMPI carries (its ``ompi``, ``mpich``, ``mvapich2``, ``impi`` selectors) run
once each (the simulation is deterministic: one run is the value); then ``commtune tune``
with its default design and with random search at the same ``--max-runs``, no knob named
(the default space). Reported: the speedup handed back over the defaults and over the
Open MPI and MPICH selectors (the libraries' own choices), the runs, and the wall time
(the study's cost). Computation is not simulated (``smpi/simulate-computation:no``): the
figures are the communication's, which is what the knobs change.

    python benchmarks/smpi_scale.py --cases demo-256-fat,comd-256-taper --max-runs 30 \\
        --json benchmarks/out/smpi_scale.json

CoMD comes from its public snapshot (``fetch`` ECP-copa/CoMD; ``--comd DIR``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE, last_json
from smpi_tables import CLUSTERS

from commtune import native
from commtune.mpi import (
    NO_COMPUTE,
    Vendor,
    find_installation,
    simulated_time,
    write_cluster,
)

SELECTORS = ("default", "ompi", "mpich", "mvapich2", "impi")


def program(name: str, ranks: int, comd: Path | None) -> list[str]:
    inst = find_installation(Vendor.SMPI)
    if name == "demo":
        return [str(native.build(inst, "demo/ct_demo.c")), "10"]
    if name == "comd":
        from apps import APPS, comd_weak

        if comd is None:
            raise SystemExit("smpi_scale.py: comd needs --comd (a snapshot of ECP-copa/CoMD)")
        binary = APPS["comd"].build(comd, inst)
        return [str(binary), *comd_weak(ranks)]
    raise SystemExit(f"smpi_scale.py: unknown program {name}")


def simulate(command: list[str], args: list[str], cwd: str) -> tuple[float | None, float]:
    argv = [command[0], *args, "--cfg=smpi/display-timing:yes",
            "--log=root.thres:critical", "--log=smpi_utils.thres:info", *command[1:]]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, check=False)
    return simulated_time(done.stderr), time.perf_counter() - t0


def case(name: str, max_runs: int, comd: Path | None, work: Path) -> dict[str, object]:
    prog, ranks_text, where = name.split("-")
    ranks = int(ranks_text)
    cluster = CLUSTERS[where]
    platform, hosts = write_cluster(cluster, str(work / where))
    command = ["smpirun", "-np", str(ranks), "-platform", platform, "-hostfile", hosts,
               NO_COMPUTE, *program(prog, ranks, comd)]  # fmt: skip
    cwd = str(work)
    logic = {}
    for selector in SELECTORS:
        value, wall = simulate(command, [f"--cfg=smpi/coll-selector:{selector}"], cwd)
        logic[selector] = value
        print(f"{name}: selector {selector}: {value} s simulated ({wall:.1f} s wall)",
              file=sys.stderr)  # fmt: skip
    studies = {}
    for strategy in ("tpe", "random"):
        storage = f"sqlite:///{work / f'{name}-{strategy}.db'}"
        argv = [*COMMTUNE, "tune", "--json", "--max-runs",
                str(max_runs), "--seed", "1", "--strategy", strategy, "--storage", storage,
                "--", *command]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, check=False)
        wall = time.perf_counter() - t0
        try:
            data = last_json(done.stdout)
        except (IndexError, json.JSONDecodeError):
            print(done.stderr[-2000:], file=sys.stderr)
            raise
        default = data["default_value"]
        handed = default / data["speedup"] if data["accepted"] else default
        studies[strategy] = {
            "accepted": data["accepted"],
            "speedup": data["speedup"] if data["accepted"] else 1.0,
            "config": data["accepted_params"],
            "runs": data["runs"],
            "wall_s": round(wall, 1),
            "vs_ompi": logic["ompi"] / handed if logic["ompi"] else None,
            "vs_mpich": logic["mpich"] / handed if logic["mpich"] else None,
        }
        print(f"{name}: {strategy}: {studies[strategy]}", file=sys.stderr)
    return {"case": name, "ranks": ranks, "cluster": cluster.describe(),
            "selectors": logic, "studies": studies}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="demo-256-fat,demo-256-taper,comd-256-fat,comd-256-taper")
    p.add_argument("--max-runs", type=int, default=30)
    p.add_argument("--comd", type=Path)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="smpi-scale-") as tmp:
        for name in args.cases.split(","):
            rows.append(case(name, args.max_runs, args.comd, Path(tmp)))
    print(
        "| case | cluster | defaults (s) | ompi sel. | mpich sel. | tuned (s) | vs defaults "
        "| vs ompi | vs mpich | runs | wall | random: vs defaults |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        sel = r["selectors"]
        tpe, rnd = r["studies"]["tpe"], r["studies"]["random"]
        tuned = sel["default"] / tpe["speedup"]
        print(f"| {r['case']} | {r['cluster']} | {sel['default']:.4g} | {sel['ompi']:.4g} | "
              f"{sel['mpich']:.4g} | {tuned:.4g} | {tpe['speedup']:.2f}x | {tpe['vs_ompi']:.2f}x "
              f"| {tpe['vs_mpich']:.2f}x | {tpe['runs']} | {tpe['wall_s']:.0f} s | "
              f"{rnd['speedup']:.2f}x |")  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
