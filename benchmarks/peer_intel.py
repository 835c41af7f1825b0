"""Intel MPI's own tuners beside commtune, on the same programs, interleaved in one run.

    python benchmarks/peer_intel.py [--rounds 15] [--trials 16] [--out FILE]

Intel MPI ships two tuners: ``mpitune_fast`` benchmarks the collectives (IMB) and writes a
tuning file (``I_MPI_TUNING_BIN``); the run-time autotuner (``I_MPI_TUNING_MODE=auto``) tries
the algorithms of each collective inside the application's own run. Per program, 2 ranks:

1. *Intel's tuning file*: ``mpitune_fast -hosts localhost -n 1 -ppn 2 -c <collectives>``,
   once for every program (it benchmarks the library, not the program); its wall time is
   the cost.
2. *commtune*: ``commtune tune --mpi intel`` on the program (its default space: the allreduce
   preset, the shared-memory eager threshold and CMA), ``--trials`` trials; its accepted
   configuration (the defaults when it accepts none) and the runs and wall time it spent.
3. *Side by side*: ``--rounds`` rotated rounds of the library's defaults, the tuning file,
   the autotuner and commtune's configuration. Each against the defaults of its round:
   paired median speedup with a bootstrap 95 % CI.

Programs: ``ct_demo`` (point-to-point and small allreduces) and ``ct_phases`` (allreduces
only, small and large phases: the collective-heavy one).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE, last_json

from commtune import native, stats
from commtune.knobs import apply, installed_knobs
from commtune.launch import launcher_for
from commtune.mpi import installation_of
from commtune.trial import run_process

COLLECTIVES = "allreduce,bcast,reduce,allgather,alltoall,barrier"
PROGRAMS = {
    "demo": ("demo/ct_demo.c", ["3000"]),  # about 0.3 s with Intel MPI here
    "phases": ("demo/ct_phases.c", ["8", "40000", "3000"]),  # about 0.5 s of allreduces
}


def timed(argv: list[str], env: dict[str, str]) -> float | None:
    result = run_process(argv, env, 300)
    found = re.findall(r"time ([0-9.eE+-]+) s", result.stdout)
    return float(found[-1]) if result.returncode == 0 and found else None


def tuning_file(inst, directory: Path) -> tuple[Path, float]:  # type: ignore[no-untyped-def]
    """mpitune_fast's tuning file for 2 ranks on this node, and its wall time."""
    tool = str(Path(inst.prefix) / "bin" / "mpitune_fast")
    t0 = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)  # it writes its host files in the cwd
    done = subprocess.run(
        [tool, "-hosts", "localhost", "-n", "1", "-ppn", "2", "-c", COLLECTIVES, "-d",
         str(directory)], env=inst.tool_env(), capture_output=True, text=True, check=False,
        cwd=directory,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    files = sorted(directory.rglob("*.dat"), key=lambda p: p.stat().st_mtime)
    if done.returncode != 0 or not files:
        raise SystemExit(f"mpitune_fast failed: {done.stderr[-500:] or done.stdout[-500:]}")
    return files[-1], seconds


def commtune_tune(command: list[str], trials: int, storage: Path) -> tuple[dict, float]:
    t0 = time.perf_counter()
    args = [*COMMTUNE, "tune", "--mpi", "intel", "--trials", str(trials), "--study", "peer",
            "--storage", str(storage), "--metric", r"regex:time ([0-9.]+) s", "--json", "--",
            *command]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"commtune tune failed: {done.stderr[-800:]}")
    return last_json(done.stdout), time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--out", default="benchmarks/out/peer_intel.json")
    args = parser.parse_args()
    inst = installation_of("intel")
    launcher = launcher_for(inst)
    knobs = {n: s.knob for n, s in installed_knobs(inst).items() if s.available}
    results: dict[str, object] = {"installation": inst.name, "programs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        dat, mpitune_seconds = tuning_file(inst, Path(tmp) / "mpitune")
        results["mpitune_fast_seconds"] = mpitune_seconds
        print(f"mpitune_fast: {mpitune_seconds:.1f} s, {dat.name}", file=sys.stderr)
        for name, (source, program_args) in PROGRAMS.items():
            binary = str(native.build(inst, source))
            command = launcher.command(2, [binary, *program_args])
            result, tune_seconds = commtune_tune(command, args.trials, Path(tmp) / f"{name}.db")
            config = result["accepted_params"]
            env_ct = apply([knobs[k] for k in config], config, inst.impl).env
            print(f"{name}: commtune {result['runs']} runs, {tune_seconds:.0f} s, "
                  f"accepted {config or 'nothing'}", file=sys.stderr)  # fmt: skip
            arms = {
                "defaults": {},
                "Intel tuning file": {"I_MPI_TUNING_BIN": str(dat)},
                "Intel autotuner": {"I_MPI_TUNING_MODE": "auto"},
                "commtune": env_ct,
            }
            plans = {a: launcher.plan(command, env) for a, env in arms.items()}
            times: dict[str, list[float]] = {a: [] for a in arms}
            order = list(arms)
            for r in range(args.rounds):
                row = {a: timed(plans[a].argv, plans[a].env)
                       for a in order[r % 4 :] + order[: r % 4]}  # fmt: skip
                if all(v is not None for v in row.values()):
                    for a, v in row.items():
                        times[a].append(v)  # type: ignore[arg-type]
            rows = {}
            for a in arms:
                c = stats.compare_paired(times["defaults"], times[a])
                rows[a] = {"median_s": stats.median(times[a]), "speedup": c.speedup,
                           "ci": [c.ci_low, c.ci_high],
                           "spread": stats.spread(times[a])}  # fmt: skip
            results["programs"][name] = {  # type: ignore[index]
                "rounds": len(times["defaults"]), "arms": rows,
                "commtune": {"runs": result["runs"], "seconds": tune_seconds,
                             "accepted": config, "speedup": result.get("speedup"),
                             "speedup_ci": result.get("speedup_ci")},
            }  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    return 0


def table(results: dict) -> str:
    lines = ["| program | arm | median s | speedup vs defaults [95 % CI] | spread | cost |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for name, p in results["programs"].items():
        for arm, r in p["arms"].items():
            cost = {"defaults": "-", "Intel autotuner": "inside each run",
                    "Intel tuning file": f"mpitune_fast {results['mpitune_fast_seconds']:.0f} s "
                                         "(once, every program)",
                    "commtune": f"{p['commtune']['runs']} runs, "
                                f"{p['commtune']['seconds']:.0f} s"}[arm]  # fmt: skip
            ci = f"[{r['ci'][0]:.2f}, {r['ci'][1]:.2f}]"
            lines.append(f"| {name} | {arm} | {r['median_s']:.4f} | {r['speedup']:.2f}x {ci} "
                         f"| {r['spread']:.0%} | {cost} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
