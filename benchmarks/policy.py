"""The policy engine: a run-time rule on the phase program, its overhead, and whether the
built-in recommendations win when tuned.

    python benchmarks/policy.py [--mpi openmpi,mpich] [--rounds 10] [--skip-recommend]
                                [--nodes N]

With ``--nodes N`` (root), all of it inside the first node of a test bed of N nodes with the
bed's site environment: the 2 ranks on 2 nodes, over TCP.

Per MPI (2 ranks, libcommtune preloaded in every run so that it costs the same everywhere):

1. *Which algorithm for which phase*: ``ct_phases`` with only small (8 B) and only large
   (256 KiB) allreduces, every allreduce algorithm of the library, 3 interleaved rounds; the
   fastest of each phase is its static best.
2. *Policy vs static*: ``--rounds`` rotated rounds of the defaults, the small phase's best,
   the large phase's best (each a static setting of the whole run) and the run-time rule that
   sets the large phase's best when the mean allreduce of the last interval is above 4 KiB
   and the small phase's otherwise. Speedups: paired medians with bootstrap 95 % CIs, over
   the defaults and over the better static setting; the policy run's action log.
3. *Overhead*: the demo with a periodic rule that never fires against the demo without
   rules, interleaved pairs; the safe points and evaluations of the run.
4. *Recommendations* (unless ``--skip-recommend``): ``commtune profile`` of the demo, the
   solver and the phase program; each recommendation with a knob checked by ``commtune tune
   --knob K=V --trials 2`` (its confirmation decides): hit (accepted) or miss.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from instrument import COMMTUNE, last_json

from commtune import native, stats
from commtune.knobs import installed_knobs
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.trial import run_process
from commtune.util import TESTBED_ENV

KNOB = {"openmpi": "coll_tuned_allreduce_algorithm", "mpich": "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"}
CVAR = {"openmpi": "coll_tuned_allreduce_algorithm", "mpich": "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"}
SMALL = ["1", "100000", "0"]  # one round, only small allreduces
LARGE = ["1", "0", "2000"]  # only large ones
PHASES = ["2", "100000", "2000"]


def timed(argv: list[str], env: dict[str, str]) -> float | None:
    """The program's own "time T s" (the last one printed), None if the run failed."""
    result = run_process(argv, env, 300)
    found = re.findall(r"time ([0-9.eE+-]+) s", result.stdout)
    return float(found[-1]) if result.returncode == 0 and found else None


def rounds_of(runs: dict[str, tuple[list[str], dict[str, str]]], n: int) -> dict[str, list[float]]:
    """``n`` rotated rounds of every named run; a round with a failure is dropped whole."""
    names = list(runs)
    out: dict[str, list[float]] = {k: [] for k in names}
    for r in range(n):
        order = names[r % len(names) :] + names[: r % len(names)]
        row = {name: timed(*runs[name]) for name in order}
        if all(v is not None for v in row.values()):
            for name, v in row.items():
                out[name].append(v)  # type: ignore[arg-type]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi,mpich")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--skip-recommend", action="store_true")
    parser.add_argument("--out", default="benchmarks/out/policy.json")
    parser.add_argument("--nodes", type=int, help="inside a test bed of N nodes (root)")
    args = parser.parse_args()
    if args.nodes and not os.environ.get(TESTBED_ENV):
        from commtune.testbed import rerun_inside

        mpis = [find_installation(Vendor(m)) for m in args.mpi.split(",")]
        return rerun_inside(args.nodes, mpis, [sys.executable, __file__, *sys.argv[1:]])
    results = []
    for mpi in args.mpi.split(","):
        row = bench(mpi, args.rounds, not args.skip_recommend)
        results.append(row)
        print(json.dumps(row), file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    for r in results:
        print(summary(r))
    return 0


def bench(mpi: str, rounds: int, recommend: bool) -> dict[str, object]:
    """Steps 1-4 of the module docstring for one MPI."""
    inst = find_installation(Vendor(mpi))
    launcher = launcher_for(inst)
    lib = str(native.build_interposer(inst))
    phases = str(native.build(inst, "demo/ct_phases.c"))
    knob = installed_knobs(inst)[KNOB[mpi]].knob  # the algorithms this build lists
    # not the automatic choices, and not MPICH 4.0's "ring" (documented later; this
    # build aborts in MPI_Init with it)
    skip = ("ignore", "auto", "nb", "ring") if mpi == "mpich" else ("ignore",)
    algorithms = [c for c in knob.domain() if c not in skip]
    base = {"COMMTUNE_PROFILE": os.devnull, "COMMTUNE_PVAR_INTERVAL": "0.02"}
    if mpi == "openmpi":  # forced algorithms, static or at run time, need dynamic rules
        base["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1"

    def plan(program_args: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        p = launcher.plan(
            launcher.command(2, [phases, *program_args]), {**base, **env}, preload=lib
        )
        return p.argv, p.env

    def algo_env(a: str) -> dict[str, str]:
        return {knob.env: str(a)}

    # 1. the best algorithm of each phase
    best = {}
    for phase, program_args in (("small", SMALL), ("large", LARGE)):
        runs = {a: plan(program_args, algo_env(a)) for a in algorithms}
        times = rounds_of(runs, 3)
        medians = {a: stats.median(v) for a, v in times.items() if v}
        best[phase] = min(medians, key=medians.__getitem__)
        print(f"{mpi} {phase}: " + ", ".join(f"{a} {m:.4f}" for a, m in medians.items()),
              file=sys.stderr)  # fmt: skip
    # 2. policy vs static
    with tempfile.TemporaryDirectory() as tmp:
        rule = {"rules": [{"name": "phase-switch", "when": "periodic", "operation": {
            "condition": {"stmt": "if", "leftoperand": "ct:MPI_Allreduce.mean_bytes",
                          "operator": ">", "rightoperand": 4096},
            "result": {"leftoperand": CVAR[mpi], "operator": "=",
                       "rightoperand": mpit(inst, knob, best["large"])},
            "else": {"leftoperand": CVAR[mpi], "operator": "=",
                     "rightoperand": mpit(inst, knob, best["small"])}}}]}  # fmt: skip
        rule_path = Path(tmp) / "switch.json"
        rule_path.write_text(json.dumps(rule))
        never = {"rules": [{"name": "never", "when": "periodic", "operation": {
            "condition": {"stmt": "if", "leftoperand": "ct:MPI_Allreduce.calls",
                          "operator": "<", "rightoperand": 0},
            "result": {"leftoperand": CVAR[mpi], "operator": "=",
                       "rightoperand": mpit(inst, knob, best["small"])}}}]}  # fmt: skip
        never_path = Path(tmp) / "never.json"
        never_path.write_text(json.dumps(never))
        runs = {
            "default": plan(PHASES, {}),
            f"static {best['small']}": plan(PHASES, algo_env(best["small"])),
            f"static {best['large']}": plan(PHASES, algo_env(best["large"])),
            "policy": plan(PHASES, {"COMMTUNE_POLICY": str(rule_path)}),
        }
        times = rounds_of(runs, rounds)
        statics = [k for k in times if k.startswith("static")]
        best_static = min(statics, key=lambda k: stats.median(times[k]))
        vs_default = stats.compare_paired(times["default"], times["policy"])
        vs_static = stats.compare_paired(times[best_static], times["policy"])
        log_path = Path(tmp) / "profile.json"
        argv, env = plan(
            PHASES, {"COMMTUNE_POLICY": str(rule_path), "COMMTUNE_PROFILE": str(log_path)}
        )
        run_process(argv, env, 300)
        log = json.loads(log_path.read_text()).get("policy", {}) if log_path.exists() else {}
        # 3. overhead: the demo, a rule that never fires, against no rules
        demo = str(native.build(inst, "demo/ct_demo.c"))
        pairs = {
            "no rules": _plan_demo(launcher, demo, {**base}, lib),
            "rules": _plan_demo(launcher, demo, {**base, "COMMTUNE_POLICY": str(never_path)}, lib),
        }  # fmt: skip
        over = rounds_of(pairs, 5 * rounds)
        overhead = stats.compare_paired(over["no rules"], over["rules"])
    row = {
        "mpi": mpi,
        "best_small": best["small"],
        "best_large": best["large"],
        "medians": {k: stats.median(v) for k, v in times.items()},
        "rounds": len(times["default"]),
        "best_static": best_static,
        "policy_vs_default": [vs_default.speedup, vs_default.ci_low, vs_default.ci_high],
        "policy_vs_best_static": [vs_static.speedup, vs_static.ci_low, vs_static.ci_high],
        "actions": log.get("actions", []),
        "safe_points": log.get("safe_points"),
        "evaluations": log.get("evaluations"),
        "evaluation_seconds": log.get("evaluation_seconds"),
        "sync_seconds": log.get("sync_seconds"),
        "overhead_demo": [1 / overhead.speedup, 1 / overhead.ci_high, 1 / overhead.ci_low],
        "overhead_rounds": len(over["rules"]),
    }
    if recommend:
        row["recommendations"] = recommendations(inst, launcher)
    return row


def mpit(inst, knob, value: str) -> str:  # type: ignore[no-untyped-def]
    """``value`` of ``knob`` as MPI_T takes it (MPICH: an algorithm's position)."""
    from commtune.knobs import enumerators

    return str(inst.impl.mpit_value(value, tuple(enumerators(inst).get(knob.name, ())), True))


def _plan_demo(launcher, demo: str, env: dict[str, str], lib: str):  # type: ignore[no-untyped-def]
    p = launcher.plan(launcher.command(2, [demo, "1000"]), env, preload=lib)
    return p.argv, p.env


def recommendations(inst, launcher) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    """Each program's recommendations with a knob, each checked by a tuned study."""
    out = []
    programs = {
        "demo": (native.build(inst, "demo/ct_demo.c"), ["1000"]),
        "solver": (native.build(inst, "demo/ct_solver.c"), ["20000"]),
        "phases": (native.build(inst, "demo/ct_phases.c"), PHASES),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (program, program_args) in programs.items():
            command = launcher.command(2, [str(program), *program_args])
            done = subprocess.run([*COMMTUNE, "policy", "run", "--json", "--", *command],
                                  capture_output=True, text=True, check=False)  # fmt: skip
            if done.returncode != 0:
                out.append({"program": name, "error": done.stderr[-300:]})
                continue
            actions = last_json(done.stdout)["actions"]
            for a in actions:
                entry = {"program": name, "rule": a["rule"], "knob": a["target"],
                         "value": a["value"]}  # fmt: skip
                if a["target"] is not None:
                    value = str(a["value"]).lower() if isinstance(a["value"], bool) else a["value"]
                    tune = subprocess.run(
                        [*COMMTUNE, "tune", "--knob", f"{a['target']}={value}", "--trials", "2",
                         "--storage", f"sqlite:///{tmp}/r.db", "--study", f"{name}-{a['rule']}",
                         "--json", "--", *command],
                        capture_output=True, text=True, check=False,
                    )  # fmt: skip
                    if tune.returncode == 0:
                        result = last_json(tune.stdout)
                        entry.update(accepted=result["accepted"], speedup=result["speedup"],
                                     ci=result["speedup_ci"], reason=result["reason"])  # fmt: skip
                    else:
                        entry["error"] = tune.stderr.strip().splitlines()[-1:]
                out.append(entry)
    return out


def summary(r: dict) -> str:
    d, s = r["policy_vs_default"], r["policy_vs_best_static"]
    o = r["overhead_demo"]
    lines = [
        f"## {r['mpi']}: small phase best {r['best_small']}, large phase best {r['best_large']}",
        "medians: " + ", ".join(f"{k} {v:.3f} s" for k, v in r["medians"].items()),
        f"policy vs default: {d[0]:.3f}x [{d[1]:.3f}, {d[2]:.3f}]; vs {r['best_static']}: "
        f"{s[0]:.3f}x [{s[1]:.3f}, {s[2]:.3f}] ({r['rounds']} rounds)",
        f"actions: {len(r['actions'])} at {r['safe_points']} safe points, "
        f"{r['evaluations']} evaluations in {r['evaluation_seconds']} s, "
        f"sync {r['sync_seconds']} s; "
        f"overhead on the demo: {100 * (o[0] - 1):+.2f} % [{100 * (o[1] - 1):+.2f}, "
        f"{100 * (o[2] - 1):+.2f}] ({r['overhead_rounds']} pairs)",
    ]
    for rec in r.get("recommendations", []):
        lines.append(f"  {rec}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
