"""A study with a simulated twin against one without, on the test bed (issue 67).

    python benchmarks/twin_bed.py [--nodes 4] [--rate 1000] [--seeds 3] [--json FILE]

The bed's nodes (links shaped by ``tc tbf``, one rank a node, Open MPI 4.1), a platform
``commtune calibrate`` measured on two of them and ``commtune cluster --calibration`` grew to
the bed's size, ``ct_demo`` built by ``mpicc`` and by ``smpicc``. Per seed, interleaved:

- *twin*: ``tune --twin 'smpirun ... demo.smpi' -- mpirun ... demo`` (<= 10 real runs);
- *cold*: ``tune --max-runs 30 -- mpirun ... demo`` (the default design, its space guided by
  the profile);

and each answer handed back checked by ``commtune check`` (the rule on fresh interleaved
pairs, up to 10): the speedup it delivers on the bed, against Open MPI's defaults. A study
that keeps the defaults delivers 1.0 (measured: nothing set). Reported per design: real
runs spent, answers handed back, the delivered speedups (median and range), and those more
than 2 % slower than the defaults (the tail). Root only (the bed's namespaces).
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

from commtune.mpi import installation_of
from commtune.testbed import Cluster as Bed

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "native" / "demo" / "ct_demo.c"
METRIC = r"regex:time ([0-9.eE+-]+) s"
ITERATIONS = "300"


def commtune(bed: Bed, env: dict[str, str], *args: str) -> dict:
    """``commtune ARGS --json`` on the bed's first node: its last line."""
    argv = [sys.executable, "-m", "commtune", *args]
    if "--" in argv:
        argv.insert(argv.index("--"), "--json")
    else:
        argv.append("--json")
    done = bed.run(bed.hostnames[0], argv, timeout=3600, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])}: {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1000.0, help="Mbit/s of each link")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sim-budget", type=float, default=120.0)
    parser.add_argument("--json", type=Path, help="write every study's figures here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("the test bed needs root (network namespaces)")
    inst = installation_of("openmpi")
    work = Path(tempfile.mkdtemp(prefix="twin-bed-"))
    real = work / "demo"
    simulated = work / "demo.smpi"
    subprocess.run([inst.mpicc, "-O2", "-o", str(real), str(SOURCE)], check=True,
                   env={**os.environ, **inst.tool_env()})  # fmt: skip
    subprocess.run(["smpicc", "-O2", "-o", str(simulated), str(SOURCE)], check=True)
    rows: list[dict] = []
    with Bed(args.nodes, 1, [args.rate]) as bed:
        env = {**os.environ, **inst.tool_env(), **bed.network_env(inst)}
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        calibrated = work / "cal"
        site = {**env, **bed.site_env(inst)}  # the plain launch line spreads over the nodes
        commtune(bed, site, "calibrate", "--mpi", "openmpi", "--one-node", "none", "--out",
                 str(calibrated), "--", inst.launcher, "-np", "2")  # fmt: skip
        grown = work / "cluster"
        subprocess.run([sys.executable, "-m", "commtune", "cluster", "--calibration",
                        str(calibrated), "--nodes", str(args.nodes), "--out", str(grown)],
                       check=True, capture_output=True)  # fmt: skip
        launch = bed.launch(inst, [str(real), ITERATIONS])
        twin = (f"smpirun -np {args.nodes} -platform {grown}/platform.xml -hostfile "
                f"{grown}/hosts {simulated} {ITERATIONS}")  # fmt: skip
        for seed in range(args.seeds):
            for design in ("twin", "cold"):
                storage = f"sqlite:///{work}/{design}-{seed}.db"
                extra = (["--twin", twin, "--sim-budget", str(args.sim_budget)]
                         if design == "twin" else ["--max-runs", "30"])  # fmt: skip
                out = commtune(bed, env, "tune", "--storage", storage, "--seed", str(seed),
                               "--metric", METRIC, *extra, "--", *launch)  # fmt: skip
                delivered = 1.0
                if out["accepted"]:
                    check = commtune(bed, env, "check", out["study"], "--storage", storage,
                                     "--force", "--", *launch)  # fmt: skip
                    delivered = check["speedup"]
                rows.append({"design": design, "seed": seed, "runs": out["runs"],
                             "accepted": out["accepted"], "params": out["accepted_params"],
                             "claimed": out["speedup"] if out["accepted"] else None,
                             "delivered": delivered,
                             "twin": out.get("twin")})  # fmt: skip
                print(json.dumps(rows[-1], default=str), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, default=str, indent=1))
    for design in ("twin", "cold"):
        mine = [r for r in rows if r["design"] == design]
        got = [r["delivered"] for r in mine]
        print(f"{design}: real runs {statistics.median(r['runs'] for r in mine):g} (median), "
              f"handed back {sum(r['accepted'] for r in mine)} of {len(mine)}, delivered "
              f"{statistics.median(got):.3f}x ({min(got):.3f}-{max(got):.3f}), more than 2 % "
              f"slower: {sum(g < 1 / 1.02 for g in got)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
