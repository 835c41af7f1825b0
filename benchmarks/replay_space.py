"""Measure every configuration of a small space once on the demo app, for the strategy race.

    python benchmarks/replay_space.py --mpi openmpi   # -> benchmarks/data/replay-openmpi.json

Runs ``commtune demo --strategy grid --repeats 1 --confirm 0`` over the space below (2 ranks)
and writes the study as a replay file: the recorded value of every configuration (null if it
failed) and five runs of the library defaults. The race answers from this file through the
replay executor, so its recorded values, noise included, are the surface's truth.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import optuna
from instrument import COMMTUNE

from commtune.store import Store
from commtune.study import Role, TrialRecord, spec_of

SPACES = {
    "openmpi": [
        "btl_vader_eager_limit",
        "btl_vader_single_copy_mechanism=cma,emulated,none",
        "coll_tuned_allreduce_algorithm",
    ],
    "mpich": [
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
        "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=16384,65536,262144",
        "UCX_RNDV_THRESH=4096,16384,65536,262144,1048576,4194304",
    ],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", choices=sorted(SPACES), required=True)
    parser.add_argument("-o", type=Path, help="output (default benchmarks/data/replay-MPI.json)")
    args = parser.parse_args()
    out = args.o or Path(__file__).with_name("data") / f"replay-{args.mpi}.json"
    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{tmp}/replay.db"
        knobs = [a for k in SPACES[args.mpi] for a in ("--knob", k)]
        cmd = [*COMMTUNE, "demo", "--mpi", args.mpi, *knobs]
        cmd += ["--strategy", "grid", "--trials", "100000", "--repeats", "1", "--confirm", "0"]
        cmd += ["--storage", storage, "--study", "replay", "--no-interposer"]
        subprocess.run(cmd, check=True)
        study = optuna.load_study(study_name="replay", storage=Store(storage).optuna)
        spec = spec_of(study).to_json()
        trials = [
            {"params": TrialRecord.of(t).config, "values": [t.value]}
            for t in study.get_trials()
            if TrialRecord.of(t).role is Role.SEARCH and t.state.name in ("COMPLETE", "FAIL")
        ]
        ref = next(t for t in study.get_trials() if TrialRecord.of(t).role is Role.REFERENCE)
    default = [r.value for r in TrialRecord.of(ref).runs]
    data = {
        "library": spec["library"],
        "description": f"ct_demo, 2 ranks, {args.mpi}: every configuration measured once",
        "space": spec["space"],
        "default": default,
        "trials": trials,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{len(trials)} configurations -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
