"""The smallest answer on the bundled programs: knobs set before and after the reduction.

    python benchmarks/reduction.py [--mpi openmpi] [--programs ct_demo,ct_solver,ct_phases]

Per program (the arguments of ``replay_tables.py``, 2 ranks), ``commtune tune --json`` with
the tuner's defaults and no knob named (the space from the program's profile), each in a
fresh storage. Prints one Markdown row per program: the space chosen, the verdict, the knobs
the best measured configuration set and those the accepted one sets (what was dropped, and
why), the accepted speedup with its 95 % CI, and the runs spent.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

from instrument import COMMTUNE, last_json
from replay_tables import METRIC, PROGRAMS  # the benchmarks' directory is on the path

from commtune import native
from commtune.knobs import installed_knobs
from commtune.mpi import installation_of


def tune(mpi: str, program: str, storage: str) -> dict:
    inst = installation_of(mpi)
    source, args = PROGRAMS[program]
    binary = str(native.build(inst, source))
    argv = [*COMMTUNE, "tune", "--mpi", mpi, "--metric", METRIC,
            "--storage", storage, "--json", "--", *inst.command(2, [binary, *args])]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=3600)
    data = last_json(done.stdout)
    data["seconds"] = time.perf_counter() - start
    return data


def row(program: str, d: dict, defaults: dict) -> str:
    space = ", ".join(c["knob"] for c in d.get("space_from_profile", [])) or "default"
    best = {k: v for k, v in (d.get("best_params") or {}).items() if v != defaults.get(k)}
    kept = d.get("accepted_params") or {}
    dropped = d.get("dropped") or {}
    speed = "-"
    if d.get("accepted") and d.get("speedup_ci"):
        lo, hi = d["speedup_ci"]
        speed = f"{d['speedup']:.3f}x [{lo:.3f}, {hi:.3f}]"
    verdict = "accepted" if d.get("accepted") else "default stays"
    why = "; ".join(f"{k}: {v}" for k, v in dropped.items()) or "-"
    return (f"| {program} | {space} | {verdict} "
            f"| {len(best)} ({', '.join(f'{k}={v}' for k, v in best.items())}) "
            f"| {len(kept)} ({', '.join(f'{k}={v}' for k, v in kept.items())}) | {why} "
            f"| {speed} | {d.get('runs')} | {d['seconds']:.0f} s |")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi")
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    args = parser.parse_args()
    statuses = installed_knobs(installation_of(args.mpi))
    defaults = {name: s.knob.default for name, s in statuses.items()}
    print(
        "| program | space (from its profile) | verdict | knobs set: best measured "
        "| accepted (reduced) | dropped | speedup [95 % CI] | runs | time |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for program in args.programs.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            data = tune(args.mpi, program, f"sqlite:///{tmp}/s.db")
        print(row(program, data, defaults), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
