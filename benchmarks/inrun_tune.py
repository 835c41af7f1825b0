"""A study raced in-run against the cold study on whole runs (issue 77, item 3), as a user
runs them, in one sitting, beside an exhaustive sweep of whole runs.

    python benchmarks/inrun_tune.py [--mpi openmpi,mpich] [--programs ct_demo,ct_solver]
                                    [--source minife=DIR --source comd=DIR] [--seeds 3]
                                    [--extra comd="-n 1"]
                                    [--runs 9] [--max-runs 30] [--inrun-runs N]
                                    [--op allreduce]
                                    [--nodes N --rate MBIT] [--json FILE]

``--programs`` takes ``OP:BYTES`` too: ``benchmarks/csrc/coll_loop.c``, that collective on
BYTES 300 times (e.g. ``bcast:524288`` with ``--op bcast``).

Per installation and program (2 ranks here; with ``--nodes``, on a test bed of that many
network namespaces, one rank a node, links shaped to ``--rate``; root only), the program's
own metric, for each seed in turn (the two studies interleaved, then the sweep):

1. ``commtune tune --knob <op's algorithm variable>``: raced in-run; its runs (raced and the
   whole-run check), the answer, its per-call figure and the whole runs' figure;
2. the same with ``--no-inrun --max-runs 30``: the cold study on whole runs; its runs and
   answer;
3. the sweep: every algorithm alone (set at launch, with what makes the variable govern),
   ``--runs`` runs each in rounds shuffled anew; each one's speedup (median over the
   defaults'), its bootstrap 90 % interval, and the best where that interval clears 1;
4. the cost (``--cost N``): N interleaved pairs of a plain run and a run racing the library's
   decision against itself (A/A), the program's metric: the median ratio and its range; and
   the raced runs' own measure, the median share of their time their barriers took (the
   rank that waited least, the barrier's price; the most, with late ranks' wait).

``--cost-only``: step 4 alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from apps import APPS
from instrument import timed

from commtune import native
from commtune.launch import launcher_for
from commtune.mpi import Installation, installation_of
from commtune.service import race
from commtune.service import race_candidates as candidates
from commtune.testbed import Cluster as Bed
from commtune.trial import Objective, run_process

CT_METRIC = r"regex:time ([0-9.eE+-]+) s"
CT_ARGS = {"ct_demo": ["1000"], "ct_solver": ["20000"]}
COLL_LOOP = Path(__file__).with_name("csrc") / "coll_loop.c"


@dataclass
class Where:
    """Where the runs go: here (``bed`` None) or inside the bed's first node, with the
    variables a launch across the bed needs."""

    inst: Installation
    bed: Bed | None = None

    def env(self) -> dict[str, str]:
        env = {**os.environ, **self.inst.tool_env()}
        if self.bed is not None:
            env.update(self.bed.network_env(self.inst), OMPI_ALLOW_RUN_AS_ROOT="1",
                       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")  # fmt: skip
        return env

    def inside(self, argv: list[str]) -> list[str]:
        return argv if self.bed is None else self.bed.command(self.bed.hostnames[0], argv)

    def launch(self, argv: list[str]) -> list[str]:
        if self.bed is None:
            return launcher_for(self.inst).command(2, argv)
        return self.bed.launch(self.inst, argv)


def program(where: Where, name: str, sources: dict[str, Path], work: Path,  # type: ignore[no-untyped-def]
            extra: dict[str, list[str]] | None = None):  # fmt: skip
    """The program's launch line and metric; ``extra``: arguments appended to a real
    program's own (``--extra comd="-n 1"``: CoMD prints, and reduces, every step)."""
    if name in CT_ARGS:
        binary = str(native.build(where.inst, f"demo/{name}.c"))
        return where.launch([binary, *CT_ARGS[name]]), CT_METRIC
    if ":" in name:  # OP:BYTES: benchmarks/csrc/coll_loop.c, that collective 300 times
        op, size = name.split(":")
        binary = work / "coll_loop"
        if not binary.exists():
            subprocess.run([where.inst.mpicc, "-O2", "-o", str(binary), str(COLL_LOOP)],
                           check=True, env={**os.environ, **where.inst.tool_env()})  # fmt: skip
        return where.launch([str(binary), op, size, "300"]), CT_METRIC
    app = APPS[name]
    binary = app.build(sources[name], where.inst)
    ranks = len(where.bed.hostnames) if where.bed else app.ranks
    (work / name).mkdir(parents=True, exist_ok=True)
    more = (extra or {}).get(name, [])
    return where.launch([*app.args(binary, work / name, ranks), *more]), app.metric


def study(where: Where, command, knob: str, metric: str, seed: int, storage: str,  # type: ignore[no-untyped-def]
          extra: list[str]) -> dict:  # fmt: skip
    """One ``commtune tune`` as a user types it; its JSON answer and its seconds."""
    try:
        data, seconds = timed("tune", "--knob", knob, "--metric", metric, "--seed", str(seed),
                              "--study", f"s{seed}-{'-'.join(extra) or 'inrun'}", "--storage",
                              storage, *extra, "--", *command, timeout=3600,
                              env=where.env(), inside=where.inside)  # fmt: skip
    except RuntimeError as exc:
        return {"error": str(exc)[-300:]}
    inrun = data.get("inrun") or {}
    answer = (data.get("accepted_params") or {}).get(knob)
    return {"runs": data["runs"], "accepted": data["accepted"],
            # with the segment size it was raced at where it names one (pipeline@8K)
            "answer": inrun.get("call_name", answer) if answer else None,
            "speedup": data.get("speedup"), "speedup_ci": data.get("speedup_ci"),
            "call_speedup": inrun.get("call_speedup"),
            "call_interval": inrun.get("call_interval"), "share": inrun.get("share"),
            "raced_runs": inrun.get("raced_runs"), "failed_runs": inrun.get("failed_runs"),
            "dropped": inrun.get("dropped"), "seconds": round(seconds, 1)}  # fmt: skip


def alone(where: Where, command, op: str, metric: str, runs: int,  # type: ignore[no-untyped-def]
          rng: random.Random) -> tuple[str, dict[str, list[float]]]:  # fmt: skip
    """Every algorithm of ``op`` alone (set at launch, with what makes the variable govern),
    ``runs`` runs each in rounds shuffled anew: the reference's name and each one's metric."""
    inst = where.inst
    knob, everyone, _ = candidates(inst, op, [])
    env = inst.impl.env_name(knob)
    objective = Objective.parse(metric)
    times: dict[str, list[float]] = {n: [] for n in everyone}
    for _ in range(runs):
        order = list(everyone)
        rng.shuffle(order)
        for name in order:
            variables = dict(inst.impl.race_env)
            if name != everyone[0]:
                variables[env] = name
            plan = launcher_for(inst).plan(command, variables)
            done = run_process(where.inside(plan.argv), {**where.env(), **plan.env}, 600)
            value = objective.extract(done.wall, done.stdout) if done.returncode == 0 else None
            if value is not None:
                times[name].append(value)
    return everyone[0], times


def sweep(where: Where, command, op: str, metric: str, runs: int, rng: random.Random) -> dict:  # type: ignore[no-untyped-def]
    """:func:`alone`'s speedups over the defaults (medians), bootstrap 90 % intervals, the
    best where its interval clears 1."""
    reference, times = alone(where, command, op, metric, runs, rng)
    everyone = [reference]
    ref = times[everyone[0]]
    out: dict[str, dict] = {}
    for name, mine in times.items():
        if name == everyone[0] or not mine:
            continue
        interval = _interval(lambda mine=mine: statistics.median(rng.choices(ref, k=len(ref)))
                             / statistics.median(rng.choices(mine, k=len(mine))))  # fmt: skip
        out[name] = {"runs": len(mine), "speedup": statistics.median(ref) / statistics.median(mine),
                     "interval": interval}  # fmt: skip
    best = max(out, key=lambda n: out[n]["speedup"], default=None)
    clear = best is not None and out[best]["interval"][0] > 1.0
    return {"reference": everyone[0], "candidates": out, "best": best, "best_clear": clear}


def cost(where: Where, command, op: str, metric: str, pairs: int) -> dict:  # type: ignore[no-untyped-def]
    """``pairs`` interleaved pairs of a plain run and an A/A-raced one: the raced run's metric
    over the plain run's (here, not on a bed)."""
    inst, objective = where.inst, Objective.parse(metric)
    _, everyone, _ = candidates(inst, op, [])
    ratios, barriers, units = [], [], None
    for i in range(pairs):
        pair: dict[bool, float | None] = {}
        for raced in (False, True) if i % 2 == 0 else (True, False):
            if raced:
                done = race(inst, command, op, [everyone[0]], 900 + i, 600)
                pair[raced] = objective.extract(done.wall, done.stdout)
                units = done.race.units_said()
                if done.race.overhead() is not None:
                    barriers.append(done.race.overhead())
            else:
                plan = launcher_for(inst).plan(command, dict(inst.impl.race_env))
                run = run_process(plan.argv, plan.env, 600)
                ok = run.returncode == 0
                pair[raced] = objective.extract(run.wall, run.stdout) if ok else None
        if pair[False] and pair[True]:
            ratios.append(pair[True] / pair[False])
    # the run's own measure: its barriers' share of its time (least, most any rank spent)
    shares = {side: statistics.median(b[i] for b in barriers) if barriers else None
              for i, side in enumerate(("barrier_least", "barrier_most"))}  # fmt: skip
    return {"pairs": len(ratios), "median": statistics.median(ratios) if ratios else None,
            "interval": _median_interval(ratios), "ratios": ratios,
            "range": [min(ratios), max(ratios)] if ratios else None,
            "units": units, **shares}  # fmt: skip


def _interval(draw, resamples: int = 2000) -> list[float]:  # type: ignore[no-untyped-def]
    """A bootstrap 90 % interval: the 5th and 95th percentiles of ``resamples`` draws of
    ``draw()`` (a statistic of one resample): an estimate."""
    boots = sorted(draw() for _ in range(resamples))
    return [boots[resamples // 20], boots[resamples - resamples // 20 - 1]]


def _median_interval(ratios: list[float]) -> list[float] | None:
    """The median ratio's bootstrap 90 % interval (seeded)."""
    if len(ratios) < 3:
        return None
    rng = random.Random(77)
    return _interval(lambda: statistics.median(rng.choices(ratios, k=len(ratios))))


def one(where: Where, name: str, args, work: Path) -> dict:  # type: ignore[no-untyped-def]
    inst = where.inst
    command, metric = program(where, name, args.sources, work, args.extra)
    if args.cost_only:
        return {"installation": inst.describe(), "program": name, "metric": metric,
                "cost": cost(where, command, args.op, metric, args.cost)}  # fmt: skip
    knob = inst.impl.algorithm_knob(args.op)
    storage = f"sqlite:///{work / f'{inst.vendor.value}-{name}.db'}"
    studies = []
    for seed in range(1, args.seeds + 1):
        more = ["--inrun-runs", str(args.inrun_runs)] if args.inrun_runs else []
        raced = study(where, command, knob, metric, seed, storage, more)
        cold = study(where, command, knob, metric, seed, storage,
                     ["--no-inrun", "--max-runs", str(args.max_runs)])  # fmt: skip
        studies.append({"seed": seed, "inrun": raced, "cold": cold})
        print(json.dumps(studies[-1]), file=sys.stderr)
    whole = sweep(where, command, args.op, metric, args.runs, random.Random(77))
    print(json.dumps({"sweep": whole}), file=sys.stderr)  # kept if a later step fails
    paid = cost(where, command, args.op, metric, args.cost) if args.cost else None
    return {"cost": paid, "installation": inst.describe(), "program": name, "metric": metric,
            "bed": where.bed.describe() if where.bed else None, "studies": studies,
            "sweep": whole}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--programs", default="ct_demo,ct_solver")
    p.add_argument("--source", action="append", default=[], metavar="NAME=DIR")
    p.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="NAME=ARGS",
        help="arguments appended to a real program's own (comd='-n 1')",
    )
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--max-runs", type=int, default=30)
    p.add_argument("--inrun-runs", type=int, help="the in-run study's raced runs (tune's 3)")
    p.add_argument("--op", default="allreduce")
    p.add_argument("--cost", type=int, default=0, help="pairs measuring racing's cost")
    p.add_argument("--cost-only", action="store_true")
    p.add_argument("--nodes", type=int, help="on a test bed of this many nodes (root)")
    p.add_argument("--rate", type=int, default=1000, help="the bed's links, Mbit/s")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if args.nodes and (args.cost or args.cost_only):  # its raced runs are launched here
        p.error("--cost measures racing's cost here, not on a bed: drop --nodes or --cost")
    args.sources = {k: Path(v).resolve() for k, v in (s.split("=", 1) for s in args.source)}
    args.extra = {k: v.split() for k, v in (s.split("=", 1) for s in args.extra)}
    args.json = args.json.resolve() if args.json else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="inrun-tune-") as tmp, contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.chdir(tmp))  # programs' output files (CoMD's YAML) go there
        bed = stack.enter_context(Bed(args.nodes, 1, [args.rate])) if args.nodes else None
        for spec in args.mpi.split(","):
            where = Where(installation_of(spec), bed)
            for name in args.programs.split(","):
                rows.append(one(where, name, args, Path(tmp)))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    for r in rows:
        if r.get("cost"):
            print(f"{r['installation'][:24]} {r['program']}: racing's cost {r['cost']}")
        if "sweep" not in r:
            continue
        s = r["sweep"]
        best = f"{s['best']} ({'clear' if s['best_clear'] else 'within noise'})"
        for st in r["studies"]:
            i, c = st["inrun"], st["cold"]
            print(f"{r['installation'][:24]} {r['program']} seed {st['seed']}: in-run "
                  f"{i.get('runs')} runs -> {i.get('answer')} (call {i.get('call_speedup')}, "
                  f"whole {i.get('speedup')}); cold {c.get('runs')} runs -> {c.get('answer')} "
                  f"({c.get('speedup')}); sweep best {best}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
