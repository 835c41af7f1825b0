"""The twin's blind spots on the test bed (issue 78, item 3): a study with a simulated twin
that races on the machine what its simulation cannot model, the same twin without
(``--no-inrun``), and the cold study on whole runs, on programs whose gain is a collective's
algorithm.

    python benchmarks/twin_blind.py [--mpi openmpi] [--nodes 4] [--rate 1000]
        [--programs bcast:32768,bcast:524288,demo] [--seeds 1] [--rounds 7] [--sim-budget 60]
        [--designs "twin,twin --no-inrun,cold"] [--json FILE]

On a bed of ``--nodes`` nodes (one rank a node; root): ``commtune calibrate`` on all of them
(``--allow-worse-order``: the platform whatever its check says), the platform grown to the bed
(``commtune cluster --calibration``, flat), each program built by the library's ``mpicc`` and
by ``smpicc`` (``bcast:BYTES``: ``benchmarks/csrc/coll_loop.c`` broadcasting BYTES, 300
times; ``demo``: ct_demo, 300 iterations). Per program and seed, in turn, no knob named:
``tune --twin`` (``--sim-budget``, 60 s), the same with ``--no-inrun``, and ``tune --no-inrun
--max-runs 30`` (the cold study). Then every answer handed back, timed against the defaults in
``--rounds`` rounds in a shuffled order (the library's variables set at launch): the delivered
speedup, the median of the defaults' runs over the answer's. Printed, per program and design:
the answer, the real runs it spent (a twin's raced runs included), the delivered speedup and
its share of the cold study's gain.
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
from pathlib import Path

from twin_bed import commtune

from commtune import native
from commtune.launch import launcher_for
from commtune.mpi import Installation, Vendor, find_installation, installation_of
from commtune.testbed import Cluster as Bed
from commtune.trial import Objective, run_process

SOURCE = Path(__file__).resolve().parent / "csrc" / "coll_loop.c"
ITERATIONS = "300"  # ct_demo's and coll_loop's (at 1,000 its simulated run took minutes)
METRIC = r"regex:time ([0-9.eE+-]+) s"


def programs(spec: str, inst: Installation, work: Path) -> dict[str, tuple[str, str, list[str]]]:
    """name -> (the real build, the SMPI build, its arguments)."""
    smpi = find_installation(Vendor.SMPI)
    out = {}
    for item in spec.split(","):
        if item == "demo":
            out[item] = (str(native.build(inst, "demo/ct_demo.c")),
                         str(native.build(smpi, "demo/ct_demo.c")), [ITERATIONS])  # fmt: skip
            continue
        op, size = item.split(":")
        real, sim = work / "coll_loop", work / "coll_loop.smpi"
        if not real.exists():
            subprocess.run([inst.mpicc, "-O2", "-o", str(real), str(SOURCE)], check=True,
                           env={**os.environ, **inst.tool_env()})  # fmt: skip
            subprocess.run([smpi.mpicc, "-O2", "-o", str(sim), str(SOURCE)], check=True,
                           capture_output=True)  # fmt: skip
        out[item] = (str(real), str(sim), [op, size, ITERATIONS])
    return out


def delivered(bed: Bed, inst: Installation, env: dict[str, str], launch: list[str],
              answers: dict[str, dict[str, str]],
              rounds: int) -> dict[str, float | None]:  # fmt: skip
    """Each answer's delivered speedup over the defaults ({}: the defaults), ``rounds``
    rounds in a shuffled order, the library's variables set at launch."""
    objective = Objective.parse(METRIC)
    times: dict[str, list[float]] = {name: [] for name in answers}
    rng = random.Random(78)
    for _ in range(rounds):
        order = list(answers)
        rng.shuffle(order)
        for name in order:
            variables = {
                **inst.impl.race_env,
                **{inst.impl.env_name(k): str(v) for k, v in answers[name].items()},
            }
            plan = launcher_for(inst).plan(launch, variables)
            done = run_process(bed.command(bed.hostnames[0], plan.argv), {**env, **plan.env},
                               600)  # fmt: skip
            value = objective.extract(done.wall, done.stdout) if done.returncode == 0 else None
            if value is not None:
                times[name].append(value)
    base = statistics.median(times["defaults"])
    return {n: base / statistics.median(t) if t else None for n, t in times.items()}


def one(bed: Bed, inst: Installation, env: dict[str, str], work: Path, name: str,
        built: tuple[str, str, list[str]], grown: Path,
        args: argparse.Namespace) -> dict:  # fmt: skip
    real, sim, program_args = built
    launch = bed.launch(inst, [real, *program_args])
    twin = (f"smpirun -np {args.nodes} -platform {grown}/platform.xml -hostfile {grown}/hosts "
            f"{sim} {' '.join(program_args)}")  # fmt: skip
    common = ["--metric", METRIC]
    budget = str(args.sim_budget)
    designs = {"twin": ["--twin", twin, "--sim-budget", budget],
               "twin --no-inrun": ["--twin", twin, "--sim-budget", budget, "--no-inrun"],
               "cold": ["--no-inrun", "--max-runs", "30"]}  # fmt: skip
    designs = {d: extra for d, extra in designs.items() if d in args.designs.split(",")}
    studies = []
    for seed in range(1, args.seeds + 1):
        for design, extra in designs.items():
            # a storage a design: one shared, the designs resumed one study (the same name)
            slug = design.replace(" --", "-")
            storage = f"sqlite:///{work}/{name.replace(':', '-')}-{seed}-{slug}.db"
            d = commtune(bed, env, work, "tune", "--storage", storage, "--seed", str(seed),
                         *common, *extra, "--", *launch)  # fmt: skip
            raced = (d.get("twin") or {}).get("raced") or []  # raced runs, raced or not
            spent = sum(r.get("runs", 1) for r in raced)
            said = d.get("twin") or {}
            studies.append({"seed": seed, "design": design, "runs": d["runs"] + spent,
                            "answer": d["accepted_params"] if d["accepted"] else {},
                            "raced": said.get("raced"), "ranking": said.get("ranking"),
                            # the simulation's own runs, why it ranked nothing, the in-run field
                            "sim_runs": said.get("runs"), "nothing": said.get("nothing"),
                            "in_run": said.get("in_run")})  # fmt: skip
            print(json.dumps(studies[-1]), file=sys.stderr, flush=True)
    answers = {"defaults": {}}
    for s in studies:
        answers.setdefault(json.dumps(s["answer"], sort_keys=True), s["answer"])
    speedups = delivered(bed, inst, env, launch, answers, args.rounds)
    for s in studies:
        s["delivered"] = speedups[json.dumps(s["answer"], sort_keys=True)] if s["answer"] else 1.0
    return {"program": name, "studies": studies}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="openmpi")
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rate", type=float, default=1000.0)
    p.add_argument("--programs", default="bcast:32768,bcast:524288,demo")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sim-budget", type=float, default=60.0,
                   help="the twin's --sim-budget (a calibration that makes the simulated "
                   "program slower than it needs more)")  # fmt: skip
    p.add_argument("--designs", default="twin,twin --no-inrun,cold",
                   help="which studies, comma-separated (of the default)")  # fmt: skip
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if os.geteuid() != 0:
        p.error("the test bed needs root (network namespaces)")
    inst = installation_of(args.mpi)
    rows = []
    with tempfile.TemporaryDirectory(prefix="twin-blind-") as tmp, \
            Bed(args.nodes, 1, [args.rate]) as bed:  # fmt: skip
        work = Path(tmp)
        env = {**os.environ, **inst.tool_env(), **bed.network_env(inst),
               "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}  # fmt: skip
        site = {**env, **bed.site_env(inst)}
        cal, grown = work / "cal", work / "cluster"
        commtune(bed, site, work, "calibrate", "--mpi", args.mpi, "--one-node", "none",
                 "--allow-worse-order", "--out", str(cal), "--", inst.launcher, "-np",
                 str(args.nodes))  # fmt: skip
        commtune(bed, env, work, "cluster", "--calibration", str(cal), "--nodes",
                 str(args.nodes), "--topology", "flat", "--out", str(grown))  # fmt: skip
        for name, built in programs(args.programs, inst, work).items():
            rows.append(one(bed, inst, env, work, name, built, grown, args))
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1) + "\n")
    print("| program | design | seed | answer | real runs | delivered | of the cold study's gain |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        cold = {s["seed"]: s["delivered"] for s in r["studies"] if s["design"] == "cold"}
        for s in r["studies"]:
            answer = " ".join(f"{k}={v}" for k, v in s["answer"].items()) or "defaults"
            gain = cold.get(s["seed"])
            share = ("-" if gain is None or s["delivered"] is None or gain <= 1.0 else
                     f"{(s['delivered'] - 1) / (gain - 1):.0%}")  # fmt: skip
            got = "-" if s["delivered"] is None else f"{s['delivered']:.3f}x"
            print(f"| {r['program']} | {s['design']} | {s['seed']} | {answer} | {s['runs']} | "
                  f"{got} | {share} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
