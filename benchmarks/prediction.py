"""Prediction from one run against exhaustive search, on bundled apps that are not the
training benchmark.

    python benchmarks/prediction.py [--mpi openmpi,mpich] [--quick] [--rounds 7] [--repeats 3]
                                    [--nodes N]

Per MPI (2 ranks): ``commtune train`` (timed, fresh storage; its runs and minutes are the
training cost), then for each app (ct_demo, ct_solver): ``commtune predict`` (one profiled run),
``commtune tune --strategy grid`` over the model's selected knobs (every configuration,
``--repeats`` runs each: the exhaustive best), and finally ``--rounds`` interleaved rounds of
default, exhaustive best and predicted. Speedups are medians over rounds of the program's own
time; the share is (predicted speedup - 1) / (best speedup - 1) and also the paper's ratio
predicted speedup / best speedup.

``--apps`` also takes the real programs of ``benchmarks/apps`` (``--sources DIR``: their
snapshots, as ``app_build.py`` takes them), each with its own metric; for them ``predict``
runs with ``--verify`` (5 interleaved pairs: what a user runs to be handed the prediction only
where it is faster), the exhaustive grid runs only where the selected knobs have at most
``--grid-limit`` configurations, and the rounds say whether what the verification handed
back (the prediction, or the defaults) was slower than the defaults.

With ``--nodes N`` (root), all of it runs inside the first node of a test bed of N nodes with
the bed's site environment (``Cluster.site_env``: a plain ``mpirun -n 2`` puts one rank on
each of two nodes, over TCP): the model is trained across nodes (4 ranks on 4 nodes and 2 on
2), stored as the bed's platform, and predicts for the apps across nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from apps import APPS as REAL
from instrument import COMMTUNE, last_json

from commtune import native
from commtune.knobs import Dimension, Space, apply, installed_knobs
from commtune.launch import Launcher, launcher_for
from commtune.mpi import Installation, installation_of
from commtune.trial import Objective, run_process
from commtune.util import TESTBED_ENV

APPS = {"ct_demo": ("demo/ct_demo.c", "300"), "ct_solver": ("demo/ct_solver.c", "20000")}
METRIC = r"regex:time ([0-9.eE+-]+) s"


def cli(args: list[str], cwd: Path | None = None) -> dict:
    done = subprocess.run([*COMMTUNE, *args], capture_output=True, text=True, check=False,
                          cwd=cwd)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"commtune {args[0]} failed: {done.stderr[-2000:]}")
    return last_json(done.stdout)


def timed(command: list[str], env: dict[str, str], remove: list[str], launcher: Launcher,
          metric: str, cwd: str) -> float:  # fmt: skip
    plan = launcher.plan(command, env, remove=remove)
    t0 = time.perf_counter()
    result = run_process(plan.argv, plan.env, 600, cwd=cwd)
    value = Objective.parse(metric).extract(time.perf_counter() - t0, result.stdout)
    if value is None:
        raise SystemExit(f"no {metric} in the output of {command[-1]}: {result.stdout[-500:]}")
    return value


def program(name: str, inst: Installation, sources: Path | None,
            work: Path) -> tuple[list[str], str]:  # fmt: skip
    """The command and metric of app ``name``: a bundled one or a real program."""
    if name in APPS:
        source, iters = APPS[name]
        binary = str(native.build(inst, source))
        return launcher_for(inst).command(2, [binary, iters]), METRIC
    app = REAL[name]
    if sources is None and app.languages:
        raise SystemExit(f"{name}: --sources DIR (a snapshot of {app.repo})")
    binary = app.build((sources or Path(".")) / app.repo.replace("/", "+"), inst)
    return app.command(inst, binary, work), app.metric


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi,mpich")
    parser.add_argument("--quick", action="store_true", help="train --quick")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--nodes", type=int, help="inside a test bed of N nodes (root)")
    parser.add_argument("--apps", default="ct_demo,ct_solver",
                        help=f"of {', '.join([*APPS, *REAL])}")  # fmt: skip
    parser.add_argument("--sources", type=Path, help="the real programs' snapshots")
    parser.add_argument("--grid-limit", type=int, default=400,
                        help="most configurations of the exhaustive grid")  # fmt: skip
    args = parser.parse_args()
    if args.nodes and not os.environ.get(TESTBED_ENV):
        from commtune.testbed import rerun_inside

        mpis = [installation_of(m) for m in args.mpi.split(",")]
        return rerun_inside(args.nodes, mpis, [sys.executable, __file__, *sys.argv[1:]])
    results = []
    for mpi in args.mpi.split(","):
        installation = installation_of(mpi)
        launcher = launcher_for(installation)
        with tempfile.TemporaryDirectory() as tmp:
            storage = f"sqlite:///{tmp}/bench.db"
            t0 = time.perf_counter()
            ranks = ["--np", "2,4"] if args.nodes else []
            train = cli(["train", "--mpi", mpi, "--storage", storage, "--json", *ranks]
                        + (["--quick"] if args.quick else []))  # fmt: skip
            train_minutes = (time.perf_counter() - t0) / 60
            print(
                f"{mpi}: trained {train['model']} on {train['selected']} with {train['runs']} "
                f"runs in {train_minutes:.1f} min; CV {train['cv']}",
                file=sys.stderr,
            )
            knobs = installed_knobs(installation)
            for app in args.apps.split(","):
                work = Path(tmp) / app
                work.mkdir()
                command, metric = program(app, installation, args.sources, work)
                real = app in REAL
                verify = ["--verify", "--metric", metric] if real else []
                pred = cli(["predict", "--mpi", mpi, "--storage", storage, *verify, "--json",
                            "--", *command], cwd=work)  # fmt: skip
                objs = [knobs[k].knob for k in pred["params"]]
                remove = [k.env for k in objs]
                configs = {
                    "default": {},
                    "predicted": apply(objs, pred["params"], installation.impl).env,
                }
                size = Space(installation.vendor.value, tuple(Dimension(o) for o in objs)).size()
                grid = None
                if size <= args.grid_limit:
                    knob_args = [a for k in pred["params"] for a in ("--knob", k)]
                    grid = cli(["tune", "--mpi", mpi, "--strategy", "grid", "--trials", "100000",
                                "--repeats", str(args.repeats), "--confirm", "0",
                                "--no-interposer", "--metric", metric, *knob_args,
                                "--storage", storage, "--study", f"grid-{app}", "--json",
                                "--", *command], cwd=work)  # fmt: skip
                    configs["best"] = apply(objs, grid["best_params"], installation.impl).env
                times: dict[str, list[float]] = {k: [] for k in configs}
                for _ in range(args.rounds):
                    for name, env in configs.items():
                        times[name].append(timed(command, env, remove, launcher, metric,
                                                 str(work)))  # fmt: skip
                med = {k: statistics.median(v) for k, v in times.items()}
                best = med["default"] / med["best"] if grid else None
                predicted = med["default"] / med["predicted"]
                verified = pred.get("verify")
                handed = predicted if verified is None or verified["faster"] else 1.0
                row = {
                    "mpi": installation.describe(),
                    "app": app,
                    "selected": list(pred["params"]),
                    "configs": size,
                    "best_params": grid["best_params"] if grid else None,
                    "predicted_params": pred["params"],
                    "best_speedup": best,
                    "predicted_speedup": predicted,
                    "verify": verified,
                    "handed_back_speedup": handed,
                    "share_of_gain": (predicted - 1) / (best - 1) if best and best > 1 else None,
                    "ratio": predicted / best if best else None,
                    "spread": {k: [min(v), max(v)] for k, v in times.items()},
                    "train_runs": train["runs"],
                    "train_minutes": train_minutes,
                    "model": train["model"],
                    "cv": train["cv"],
                    "where": os.environ.get(TESTBED_ENV, "one node"),
                }
                results.append(row)
                print(json.dumps(row), file=sys.stderr)
    header = ["MPI", "app", "knobs (configs)", "exhaustive best", "predicted", "predicted/best",
              "verified (--verify)", "handed back"]  # fmt: skip
    print("| " + " | ".join([*header, "model, training"]) + " |")
    print("|---" * (len(header) + 1) + "|")
    for r in results:
        best = f"{r['best_speedup']:.3f}x" if r["best_speedup"] else "not run"
        ratio = f"{100 * r['ratio']:.1f} %" if r["ratio"] else "-"
        v = r["verify"]
        verified = "-" if v is None else (
            f"{v['speedup']:.3f}x [{v['ci'][0]:.3f}, {v['ci'][1]:.3f}]: "
            + ("faster" if v["faster"] else "defaults kept")
        )  # fmt: skip
        print(
            f"| {r['mpi']} | {r['app']} | {', '.join(r['selected'])} ({r['configs']}) | "
            f"{best} | {r['predicted_speedup']:.3f}x | {ratio} | {verified} | "
            f"{r['handed_back_speedup']:.3f}x | "
            f"{r['model']}, {r['train_runs']} runs, {r['train_minutes']:.1f} min |"
        )
    Path("benchmarks/out").mkdir(parents=True, exist_ok=True)
    Path("benchmarks/out/prediction.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
