"""In-run racing against whole runs (issue 77): what one raced run says, what whole runs of
each candidate alone say, and what racing costs.

    python benchmarks/inrun_race.py [--mpi openmpi,mpich] [--programs ct_demo,ct_solver]
                                    [--runs 9] [--aa 20] [--pairs 10] [--aa-only] [--json FILE]

Per installation and program (2 ranks on this machine, the program's allreduce calls):

1. the race: one ``commtune race`` run of every algorithm the library lists against its own
   decision (the per-call estimate, its interval, the test at --risk 0.05);
2. the whole-run sweep: every candidate alone (the variable set at launch, with what makes it
   govern), ``--runs`` runs each, in rounds shuffled anew, the program's own time: each
   candidate's median over the reference's, and whether the sweep's best stands out of its
   noise (its runs' 90 % interval of the ratio clear of 1);
3. A/A: ``--aa`` races of the reference against itself (two labels of one decision): how many
   say faster (the stated risk is 5 %); where a candidate runs on a duplicate communicator of
   its own (Open MPI), also with each label its own duplicate: what the communicator alone
   does to a call's time;
4. overhead: ``--pairs`` interleaved pairs of a plain run and an A/A-raced run, the program's
   own time: the median ratio and its spread.

``--aa-only``: step 3 alone (seeds 1000-1019; the separate duplicates 2000-2019).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

from inrun_tune import CT_METRIC, Where, alone

from commtune import native
from commtune.launch import launcher_for
from commtune.mpi import installation_of
from commtune.service import race
from commtune.service import race_candidates as candidates
from commtune.trial import run_process
from commtune.tune import decide_race

METRIC = CT_METRIC
TIME = re.compile(METRIC.removeprefix("regex:"))
ARGS = {"ct_demo": ["1000"], "ct_solver": ["20000"], "ct_phases": ["20", "2000", "150"]}


def own_time(inst, command, variables) -> float | None:  # type: ignore[no-untyped-def]
    plan = launcher_for(inst).plan(command, variables)
    done = run_process(plan.argv, plan.env, 300)
    found = TIME.findall(done.stdout)
    return float(found[-1]) if done.returncode == 0 and found else None


def sweep(inst, command, op, runs, rng):  # type: ignore[no-untyped-def]
    """Each algorithm alone (``inrun_tune.alone``, the program's own time): its speedup over
    the reference's median and its runs' spread."""
    reference, times = alone(Where(inst), command, op, METRIC, runs, rng)
    ref = statistics.median(times[reference])
    return {n: {"runs": len(v), "speedup": ref / statistics.median(v) if v else None,
                "spread": (max(v) - min(v)) / statistics.median(v) if v else None}
            for n, v in times.items()}  # fmt: skip


def aa_only(inst, program: str, args) -> dict:  # type: ignore[no-untyped-def]
    binary = str(native.build(inst, f"demo/{program}.c"))
    command = launcher_for(inst).command(2, [binary, *ARGS[program]])
    ref = candidates(inst, "allreduce", [])[1][0]
    said, apart, est = 0, 0, []
    for seed in range(args.aa):
        r = decide_race(race(inst, command, "allreduce", [ref], 1000 + seed, 600).race,
                        0.05, 0.01)  # fmt: skip
        said += any(x.test.passed for x in r)
        est.append(r[0].test.speedup)
        if inst.impl.race_mode == "dup":
            two = race(inst, command, "allreduce", [ref], 2000 + seed, 600,
                       {"COMMTUNE_RACE_SHARE": "0"})  # fmt: skip
            apart += any(x.test.passed for x in decide_race(two.race, 0.05, 0.01))
    return {"installation": inst.describe(), "program": program, "aa_said_faster": said,
            "aa_races": args.aa, "aa_apart_said_faster": apart if inst.impl.race_mode == "dup"
            else None, "estimates": [min(est), max(est)]}  # fmt: skip


def one(inst, program: str, args) -> dict:  # type: ignore[no-untyped-def]
    rng = random.Random(77)
    binary = str(native.build(inst, f"demo/{program}.c"))
    command = launcher_for(inst).command(2, [binary, *ARGS[program]])
    start = time.perf_counter()
    done = race(inst, command, "allreduce", [], 7, 600)
    raced = decide_race(done.race, 0.05, 0.01)
    whole = sweep(inst, command, "allreduce", args.runs, rng)
    ref_name = done.race.names[0]
    aa_said, apart_said, apart = 0, 0, []
    for seed in range(args.aa):
        aa = race(inst, command, "allreduce", [ref_name], 100 + seed, 600)
        aa_said += any(r.test.passed for r in decide_race(aa.race, 0.05, 0.01))
        if inst.impl.race_mode == "dup":
            two = race(inst, command, "allreduce", [ref_name], 300 + seed, 600,
                       {"COMMTUNE_RACE_SHARE": "0"})  # fmt: skip
            said = decide_race(two.race, 0.05, 0.01)
            apart_said += any(r.test.passed for r in said)
            apart += [r.test.speedup for r in said]
    ratios = []
    for i in range(args.pairs):
        pair = []
        for raced_run in (False, True) if i % 2 == 0 else (True, False):
            if raced_run:
                r = race(inst, command, "allreduce", [ref_name], 500 + i, 600)
                found = TIME.findall(r.stdout)
                pair.append(float(found[-1]) if found else None)
            else:
                pair.append(own_time(inst, command, dict(inst.impl.race_env)))
        plain, with_race = pair if i % 2 == 0 else pair[::-1]
        if plain and with_race:
            ratios.append(with_race / plain)
    best_sweep = max((n for n in whole if n != ref_name and whole[n]["speedup"]),
                     key=lambda n: whole[n]["speedup"], default=None)  # fmt: skip
    return {
        "installation": inst.describe(), "program": program, "calls": len(done.race.time),
        "race": [r.to_json() for r in raced], "race_best": raced[0].name if raced else None,
        "sweep": whole, "sweep_best": best_sweep, "aa_said_faster": aa_said, "aa_races": args.aa,
        "aa_apart_said_faster": apart_said if apart else None,
        "aa_apart_speedups": [min(apart), max(apart)] if apart else None,
        "overhead_median": statistics.median(ratios) if ratios else None,
        "overhead_range": [min(ratios), max(ratios)] if ratios else None,
        "seconds": round(time.perf_counter() - start),
    }  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--programs", default="ct_demo,ct_solver")
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--aa", type=int, default=20)
    p.add_argument("--pairs", type=int, default=10)
    p.add_argument("--json", type=Path)
    p.add_argument("--aa-only", action="store_true", help="the A/A races alone")
    args = p.parse_args()
    rows = []
    for spec in args.mpi.split(","):
        inst = installation_of(spec)
        for program in args.programs.split(","):
            row = aa_only(inst, program, args) if args.aa_only else one(inst, program, args)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    if args.aa_only:
        return 0
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    for r in rows:
        print(f"{r['installation']} {r['program']}: race best {r['race_best']} "
              f"(calls {r['calls']}), sweep best {r['sweep_best']}; A/A said faster "
              f"{r['aa_said_faster']}/{r['aa_races']}; "
              f"overhead {r['overhead_median']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
