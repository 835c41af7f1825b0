"""A study with a simulated twin against one without, on the test bed (issue 67).

    python benchmarks/twin_bed.py [--mpi openmpi] [--nodes 4] [--rate 1000] [--repeats 9]
        [--seeds 20] [--program demo|comd|minife --source SNAPSHOT] [--table RECORDED]
        [--topology flat] [--json FILE]

On the bed (links shaped by ``tc tbf``, one rank a node) with one library:

1. ``commtune calibrate`` measures two nodes; ``commtune cluster --calibration`` grows the
   platform to the bed's size (``--topology``, default flat: the bed's bridge, a non-blocking
   switch); ``ct_demo`` is built by the library's ``mpicc`` and by
   ``smpicc``.
2. **The table**: ``tune --record --repeats 9`` over the library's allreduce and broadcast
   algorithms that SMPI ports (the twin's space, in the library's settings), every
   configuration 9 times in shuffled rounds. Its truths (a configuration's median) give
   each design's delivered speedup, against the library's defaults.
3. **The twin, live**: ``tune --twin 'smpirun ...' -- mpirun ...`` once (<= 10 real runs):
   the simulation's ranking, and what the real runs said.
4. **The race on the table**, every seed: the twin's real part (the verdict testing the
   simulation's ranking, at most 10 runs), the cold study at 30 runs, and Optuna's TPE and
   random at 30 runs, each answered from the table's recorded runs.

Reported per design: gain captured (mean delivered speedup - 1 over the table's best - 1),
the tail (studies handing back something more than 2 % slower than the defaults), runs.
Root only (the bed's namespaces).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from apps import APPS, comd_box
from instrument import answer, argv

from commtune import native
from commtune.harness import replayed, run_strategy, run_tuner
from commtune.knobs import load_catalog
from commtune.mpi import Installation, Vendor, find_installation, installation_of
from commtune.testbed import Cluster as Bed

METRIC = r"regex:time ([0-9.eE+-]+) s"
ITERATIONS = "300"
OPS = ("allreduce", "bcast")  # what ct_demo calls that SMPI ports for both libraries
TOLERANCE = 1.02
MINIFE_EDGE = "50"  # miniFE's mesh edge: small, so that its messages weigh against compute


def commtune(bed: Bed, env: dict[str, str], cwd: Path, *args: str) -> dict:
    """``commtune ARGS --json`` on the bed's first node, in ``cwd``: its answer."""
    return answer(bed.run(bed.hostnames[0], argv(*args), timeout=7200, env=env, cwd=cwd), args)


def program(inst: Installation, name: str, source: Path | None,
            nodes: int) -> tuple[Path, Path, list[str], str]:  # fmt: skip
    """The program built by the library's wrapper and by SMPI's, its arguments at ``nodes``
    ranks and its metric: ct_demo, or CoMD or miniFE from a snapshot (``--source``)."""
    smpi = find_installation(Vendor.SMPI)
    if name == "demo":
        return (native.build(inst, "demo/ct_demo.c"), native.build(smpi, "demo/ct_demo.c"),
                [ITERATIONS], METRIC)  # fmt: skip
    if source is None:
        raise SystemExit(f"twin_bed.py: --program {name} needs --source (a snapshot of "
                         f"{APPS[name].repo})")  # fmt: skip
    if name == "comd":
        args, metric = comd_box(nodes), APPS[name].metric
    else:  # miniFE: a CG solve whose dot products are 8-byte allreduces; its whole run timed
        args, metric = ["-nx", MINIFE_EDGE, "-ny", MINIFE_EDGE, "-nz", MINIFE_EDGE], "wall"
    return APPS[name].build(source, inst), APPS[name].build(source, smpi), args, metric


def table_knobs(mpi: str) -> list[str]:
    """``--knob`` specs of the twin's space in the library's settings: each op's algorithm
    knob at its default and at every algorithm SMPI ports faithfully."""
    impl = Vendor(mpi).impl
    catalog = load_catalog(mpi)
    specs = []
    for op in OPS:
        knob = catalog[impl.algorithm_knob(op)]
        values = [knob.format(knob.default), *impl.smpi_ports[op].values()]
        specs += ["--knob", f"{knob.name}={','.join(dict.fromkeys(values))}"]
    return specs


def delivered(surface, config: dict | None) -> float:
    """The defaults' truth over the handed-back configuration's (1.0: defaults kept)."""
    if not config:
        return 1.0
    return surface.default_value / surface.value({**surface.space.defaults(), **config})


def summary(surface, speedups: list[float], runs: list[int]) -> dict:
    best = surface.default_value / surface.optimum
    mean = statistics.fmean(speedups)
    return {"gain": (mean - 1) / (best - 1) if best > TOLERANCE - 0.01 else None,
            "tail": sum(s * TOLERANCE < 1 for s in speedups), "studies": len(speedups),
            "median": statistics.median(speedups), "worst": min(speedups),
            "runs": statistics.median(runs)}  # fmt: skip


def live_twin(args: argparse.Namespace, work: Path, table: Path) -> dict:
    """On the bed: calibrate, grow the platform, record the table (unless given), and run
    ``tune --twin`` once; its ``--json`` answer."""
    inst = installation_of(args.mpi)
    real, simulated, program_args, metric = program(inst, args.program, args.source, args.nodes)
    with Bed(args.nodes, 1, [args.rate]) as bed:
        env = {**os.environ, **inst.tool_env(), **bed.network_env(inst)}
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        calibrated, grown = work / "cal", work / "cluster"
        site = {**env, **bed.site_env(inst)}  # the plain launch line spreads over the nodes
        commtune(bed, site, work, "calibrate", "--mpi", args.mpi, "--one-node", "none", "--out",
                 str(calibrated), "--", inst.launcher, "-np", "2")  # fmt: skip
        commtune(bed, env, work, "cluster", "--calibration", str(calibrated), "--nodes",
                 str(args.nodes), "--topology", args.topology, "--out", str(grown))  # fmt: skip
        launch = bed.launch(inst, [str(real), *program_args])
        twin = (f"smpirun -np {args.nodes} -platform {grown}/platform.xml -hostfile "
                f"{grown}/hosts {simulated} {' '.join(program_args)}")  # fmt: skip
        if args.table is None:
            commtune(bed, env, work, "tune", "--record", str(table), "--repeats",
                     str(args.repeats), "--metric", metric, *table_knobs(args.mpi), "--",
                     *launch)  # fmt: skip
        return commtune(bed, env, work, "tune", "--storage", f"sqlite:///{work}/twin.db",
                        "--twin", twin, "--sim-budget", str(args.sim_budget), "--metric",
                        metric, "--", *launch)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi", choices=("openmpi", "mpich"))
    parser.add_argument("--program", default="demo", choices=("demo", "comd", "minife"))
    parser.add_argument(
        "--source", type=Path, help="a snapshot of the program's repository (comd, minife)"
    )
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1000.0, help="Mbit/s of each link")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--sim-budget", type=float, default=120.0)
    parser.add_argument("--topology", default="flat",
                        help="the grown platform's (default flat: the bed's bridge)")  # fmt: skip
    parser.add_argument("--table", type=Path, help="use this recorded table, record none")
    parser.add_argument("--again", type=Path, metavar="JSON",
                        help="an earlier run's --json: race its table and live twin's ranking "
                        "again, without the bed")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    if args.again:
        earlier = json.loads(args.again.read_text())
        table, live = args.table or Path(earlier["table"]), earlier["live"]
        live["twin"] = {"ranking": earlier["ranking"], "fidelity": earlier.get("fidelity")}
    else:
        if os.geteuid() != 0:
            parser.error("the test bed needs root (network namespaces)")
        work = Path(tempfile.mkdtemp(prefix="twin-bed-"))
        name = "ct_demo" if args.program == "demo" else args.program
        table = args.table or work / f"table-bed{args.nodes}-{args.mpi}-{name}.json"
        live = live_twin(args, work, table)
    surface = replayed(table)
    space = surface.space
    names = set(space.names)
    ranked = [{k: space[k].knob.parse(v) for k, v in r["settings"].items()}
              for r in live["twin"]["ranking"] if set(r["settings"]) <= names]  # fmt: skip
    designs: dict[str, tuple[list[float], list[int]]] = {}
    for seed in range(args.seeds):
        runs = {"cold": run_tuner(surface, 0.0, seed, 30)}
        if ranked:  # an empty ranking: the reference's 2 runs alone, the defaults kept
            runs |= {"twin": run_tuner(surface, 0.0, seed, 10, ranked=ranked),
                     "twin, 30": run_tuner(surface, 0.0, seed, 30, ranked=ranked)}  # fmt: skip
        for name in ("twin", "twin, 30", "cold"):
            run = runs.get(name)
            got = designs.setdefault(name, ([], []))
            got[0].append(delivered(surface, run.answer) if run else 1.0)
            got[1].append(run.runs + run.confirm_runs if run else 2)  # search and verdict
        for strategy in ("tpe", "random"):
            run = run_strategy(strategy, surface, 0.0, seed, 30, design="fixed", repeats=1)
            got = designs.setdefault(strategy, ([], []))
            got[0].append(delivered(surface, run.known if run.changed else None))
            got[1].append(run.runs)
    best = surface.default_value / surface.optimum
    out = {"table": str(table), "mpi": args.mpi, "nodes": args.nodes, "rate": args.rate,
           "topology": args.topology,
           "best": best, "ranking": live["twin"]["ranking"],
           "simulated_speedups": {json.dumps(r["settings"]): r["simulated"]
                                  for r in live["twin"]["ranking"]},
           "live": {k: live.get(k) for k in ("runs", "accepted", "accepted_params", "reason")},
           "fidelity": live["twin"].get("fidelity"),
           "designs": {k: summary(surface, *v) for k, v in designs.items()}}  # fmt: skip
    print(f"table {table.name}: best {best:.3f}x against {args.mpi}'s defaults; the twin "
          f"live: {live['runs']} real runs, "
          + (f"handed back {live['accepted_params']}" if live["accepted"] else
             f"kept the defaults ({live['reason']})"))  # fmt: skip
    if live["twin"].get("fidelity"):
        print(f"  {live['twin']['fidelity']}")
    for r in live["twin"]["ranking"]:
        truth = delivered(surface, {k: space[k].knob.parse(v) for k, v in r["settings"].items()}
                          ) if set(r["settings"]) <= names else None  # fmt: skip
        print(
            f"  simulation #{r['rank']} {r['settings']}: simulated {r['simulated']:.3f}x, "
            f"the table {'-' if truth is None else f'{truth:.3f}x'}"
        )
    for name, fig in out["designs"].items():
        gain = "-" if fig["gain"] is None else f"{100 * fig['gain']:.0f} %"
        print(
            f"{name:>8}: gain captured {gain}, tail {fig['tail']}/{fig['studies']}, runs "
            f"{fig['runs']:g}, delivered median {fig['median']:.3f}x worst {fig['worst']:.3f}x"
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
