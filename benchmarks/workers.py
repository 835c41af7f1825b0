"""Several workers on one study: wall time of a study with 1, 2 and 4 workers, and the share
of the best speedup each reaches.

    python benchmarks/workers.py [--workers 1,2,4] [--trials 24] [--rounds 12]
                                 [--storage sqlite|journal] [--repeat 2]

The demo (Open MPI, 2 ranks) tuned over its eager limit, single-copy mechanism and allreduce
algorithm (140 configurations) with ``--trials`` trials, ``--repeat`` times per worker count,
the counts interleaved. Each worker is its own slice of the machine (``taskset``): the cores
are split evenly among the workers; with more workers than cores, workers share a core.
Every study starts from an empty storage; the wall time runs from the first worker's start to
the last one's end. Reported per study: wall time, trials and runs made, the trials of each
worker, configurations measured twice (must be 0), the verdict.

The share of the best speedup: at the end, on the whole machine, ``--rounds`` rotated rounds
of the defaults and each study's best configuration (its accepted one, else its best by the
search), interleaved; each configuration's paired median speedup over the defaults with a
95 % bootstrap CI; a study's share is its configuration's speedup over the best of them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
from instrument import COMMTUNE, last_json

from commtune import native, stats
from commtune.knobs import installed_knobs
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.study import Role, TrialRecord, config_key
from commtune.trial import run_process

KNOBS = ["btl_vader_eager_limit=4K,8K,16K,32K,64K", "btl_vader_single_copy_mechanism",
         "coll_tuned_allreduce_algorithm"]  # fmt: skip
ITERATIONS = 300


def slices(workers: int) -> list[str]:
    """The cores of each worker, for ``taskset -c``."""
    cores = sorted(os.sched_getaffinity(0))
    if workers >= len(cores):
        return [str(cores[i % len(cores)]) for i in range(workers)]
    per = len(cores) // workers
    return [",".join(map(str, cores[i * per : (i + 1) * per])) for i in range(workers)]


def study(workers: int, trials: int, storage_kind: str, tmp: Path, tag: str) -> dict[str, object]:
    inst = find_installation(Vendor.OPENMPI)
    demo = native.build(inst, "demo/ct_demo.c")
    command = launcher_for(inst).command(2, [str(demo), str(ITERATIONS)])
    url = (f"sqlite:///{tmp / f'{tag}.db'}" if storage_kind == "sqlite"
           else f"journal://{tmp / f'{tag}.journal'}")  # fmt: skip
    args = ["tune", "--mpi", "openmpi", *[a for k in KNOBS for a in ("--knob", k)],
            "--trials", str(trials), "--study", tag, "--storage", url, "--json", "--",
            *command]  # fmt: skip
    start = time.perf_counter()
    procs = []
    for cores in slices(workers):
        procs.append(subprocess.Popen(["taskset", "-c", cores, *COMMTUNE, *args],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))  # fmt: skip
        time.sleep(0.2)
    outs = [p.communicate() for p in procs]
    wall = time.perf_counter() - start
    failed = [err.strip().splitlines()[-1:] for p, (_, err) in zip(procs, outs, strict=True)
              if p.returncode != 0]  # fmt: skip
    result = last_json(outs[0][0]) if not failed else {}
    from commtune.store import Store

    s = optuna.load_study(study_name=tag, storage=Store(url).optuna)
    searched = [t for t in s.get_trials() if TrialRecord.of(t).role is Role.SEARCH
                and t.state.name in ("COMPLETE", "FAIL")]  # fmt: skip
    keys = [config_key(TrialRecord.of(t).config) for t in searched]
    per_worker: dict[str, int] = {}
    for t in searched:
        per_worker[TrialRecord.of(t).worker or "?"] = (
            per_worker.get(TrialRecord.of(t).worker or "?", 0) + 1
        )
    best = result.get("accepted_params") or result.get("best_params") or {}
    return {
        "workers": workers, "tag": tag, "wall": wall, "failed": failed,
        "trials": result.get("trials"), "runs": result.get("runs"),
        "per_worker": sorted(per_worker.values(), reverse=True),
        "measured_twice": len(keys) - len(set(keys)),
        "accepted": result.get("accepted"), "speedup": result.get("speedup"),
        "best": best,
    }  # fmt: skip


def final_rounds(rows: list[dict[str, object]], rounds: int) -> dict[str, dict[str, float]]:
    """Interleaved rounds of the defaults and every study's best (see the module)."""
    inst = find_installation(Vendor.OPENMPI)
    launcher = launcher_for(inst)
    demo = native.build(inst, "demo/ct_demo.c")
    command = launcher.command(2, [str(demo), str(ITERATIONS)])
    knobs = installed_knobs(inst)
    from commtune.knobs import apply

    def plan(config: dict[str, object]) -> tuple[list[str], dict[str, str]]:
        used = [knobs[k].knob for k in config]
        applied = apply(used, config, inst.impl) if config else None  # type: ignore[arg-type]
        p = launcher.plan(command, applied.env if applied else {})
        return p.argv, p.env

    runs = {"default": plan({})}
    for r in rows:
        runs[str(r["tag"])] = plan(r["best"])  # type: ignore[arg-type]
    names = list(runs)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(rounds):
        order = names[i % len(names) :] + names[: i % len(names)]
        row = {}
        for n in order:
            res = run_process(*runs[n], 120)
            row[n] = res.wall if res.returncode == 0 else None
        if all(v is not None for v in row.values()):
            for n, v in row.items():
                times[n].append(v)  # type: ignore[arg-type]
    out = {}
    for n in names[1:]:
        c = stats.compare_paired(times["default"], times[n])
        out[n] = {"speedup": c.speedup, "ci": [c.ci_low, c.ci_high]}
    out["default"] = {"median": stats.median(times["default"]),
                      "spread": stats.spread(times["default"])}  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--storage", choices=("sqlite", "journal"), default="sqlite")
    parser.add_argument("--out", default="benchmarks/out/workers.json")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            order = counts if rep % 2 == 0 else counts[::-1]  # interleaved, alternating order
            for w in order:
                row = study(w, args.trials, args.storage, Path(tmp), f"w{w}r{rep}")
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    final = final_rounds(rows, args.rounds)
    best = max(v["speedup"] for k, v in final.items() if k != "default")
    for r in rows:
        f = final[str(r["tag"])]
        r["final_speedup"], r["final_ci"] = f["speedup"], f["ci"]
        r["share"] = f["speedup"] / best
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "final": final}, indent=1) + "\n")
    print(
        "| workers | study | wall (s) | trials | runs | trials per worker | measured twice "
        "| verdict | best, re-measured | share of best |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["workers"], r["tag"])):
        verdict = "accepted" if r["accepted"] else "default stays"
        lo, hi = r["final_ci"]
        print(f"| {r['workers']} | {r['tag']} | {r['wall']:.0f} | {r['trials']} | {r['runs']} | "
              f"{'/'.join(map(str, r['per_worker']))} | {r['measured_twice']} | {verdict} "
              f"{r['speedup']:.2f}x | {r['final_speedup']:.2f}x [{lo:.2f}, {hi:.2f}] | "
              f"{r['share']:.2f} |")  # fmt: skip
    d = final["default"]
    print(f"\ndefaults in the final rounds: median {d['median']:.3f} s, spread {d['spread']:.2f}")
    for w in counts:
        walls = [r["wall"] for r in rows if r["workers"] == w]
        print(f"{w} worker(s): median wall {stats.median(walls):.0f} s over {len(walls)} studies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
