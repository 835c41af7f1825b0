"""How well the search strategies tune the demo app, against exhaustive search.

1. Exhaustive: every configuration of a 48-point space (single-copy mechanism x eager limit x
   allreduce algorithm) on 2 ranks of Open MPI, 3 repeats each, with the demo's own timer.
   Its best speedup over the library defaults is the reference for the others.
2. random and tpe with budgets of 10 and 20 trials, 5 seeds each, run through the replay
   launcher on the exhaustive measurements (the same numbers the strategies would have met):
   the share of the exhaustive-best speedup each reaches, when its recommendation (its best
   observed trial) is judged by the exhaustive median of that configuration.

usage: python benchmarks/tune_demo.py [--mpi openmpi|mpich] [--out DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

import optuna
from instrument import COMMTUNE, last_json

from commtune import native
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.store import Store
from commtune.study import TrialRecord, config_key

SPACES = {
    "openmpi": [
        "btl_vader_single_copy_mechanism=cma,emulated,none",
        "btl_vader_eager_limit=4096,16384,65536,131072",
        "coll_tuned_allreduce_algorithm=ignore,recursive_doubling,ring,rabenseifner",
    ],
    "mpich": [
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=auto,nb,recursive_doubling,reduce_scatter_allgather",
        "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=16384,65536,262144",
        "UCX_RNDV_THRESH=auto,8192,65536,1048576",
    ],
}
METRIC = r"regex:time ([0-9.]+) s"


def commtune(args: list[str]) -> dict:
    done = subprocess.run(
        [*COMMTUNE, args[0], "--json", *args[1:]],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"commtune {' '.join(args)} failed:\n{done.stderr}")
    return last_json(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi", choices=sorted(SPACES))
    parser.add_argument("--out", default="benchmarks/out")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = out / f"tune_demo_{args.mpi}.db"
    # An existing database is resumed: delete benchmarks/out/ to measure again from scratch.
    storage = f"sqlite:///{db.resolve()}"
    installation = find_installation(Vendor(args.mpi))
    program = native.build(installation, "demo/ct_demo.c")
    command = launcher_for(installation).command(2, [str(program), "1000"])
    knobs = [a for k in SPACES[args.mpi] for a in ("--knob", k)]

    exhaustive = commtune(
        ["tune", *knobs, "--strategy", "grid", "--trials", "1000", "--repeats", "3",
         "--confirm", "5", "--metric", METRIC, "--study", "exhaustive", "--storage", storage,
         "--", *command]
    )  # fmt: skip
    study = optuna.load_study(study_name="exhaustive", storage=Store(storage).optuna)
    ref = study.trials[0]
    table = {}
    for t in study.trials[1:]:
        values = [r.value for r in TrialRecord.of(t).runs]
        table[config_key(TrialRecord.of(t).config)] = (t.value, values)
    medians = {k: v[0] for k, v in table.items() if v[0] is not None}
    best_key = min(medians, key=medians.__getitem__)
    best_speedup = ref.value / medians[best_key]
    replay = out / f"tune_demo_{args.mpi}_replay.json"
    replay.write_text(
        json.dumps(
            {
                "default": [r.value for r in TrialRecord.of(ref).runs],
                "trials": [
                    {"params": json.loads(k), "values": v[1] or [None]} for k, v in table.items()
                ],
            }
        )
    )

    shares: dict[str, list[float]] = {}
    for strategy in ("random", "tpe"):
        for budget in (10, 20):
            name = f"{strategy}-{budget}"
            for seed in range(1, 6):
                result = commtune(
                    ["tune", "--mpi", args.mpi, "--replay", str(replay), *knobs,
                     "--strategy", strategy, "--trials", str(budget), "--seed", str(seed),
                     "--confirm", "0", "--study", f"{name}-{seed}", "--storage", storage]
                )  # fmt: skip
                found = medians[config_key(result["best_params"])]
                shares.setdefault(name, []).append((ref.value / found) / best_speedup)
    summary = {
        "mpi": args.mpi,
        "space_size": len(table),
        "default_median": ref.value,
        "exhaustive_best": json.loads(best_key),
        "exhaustive_best_speedup": best_speedup,
        "exhaustive_confirmed_speedup": exhaustive["speedup"],
        "exhaustive_confirmed_ci": exhaustive["speedup_ci"],
        "accepted": exhaustive["accepted"],
        "share_of_best": {
            n: {"median": statistics.median(v), "min": min(v), "all": v} for n, v in shares.items()
        },
    }
    if args.json:
        print(json.dumps(summary, separators=(",", ":")))
    else:
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
