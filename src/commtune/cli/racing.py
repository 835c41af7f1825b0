"""``commtune race``: a collective's algorithms raced call by call inside one run (issue 77)."""

from __future__ import annotations

import argparse
import random

from commtune.cli._common import (
    Command,
    add_json,
    add_mpi,
    fraction,
    need_command,
    positive,
    print_json,
)
from commtune.study import DEFAULTS
from commtune.study import RACE_RUN as RUN


def _add_race(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    p.add_argument("--op", default="allreduce",
                   help="the collective raced: allreduce (default), bcast, reduce, allgather, "
                   "alltoall")  # fmt: skip
    p.add_argument("--candidates", default="",
                   help="its algorithms raced against the library's own decision, comma-"
                   "separated (default: every one the library lists); NAME@SIZE: that "
                   "algorithm with that segment size, where the library has one "
                   "(pipeline@64K)")  # fmt: skip
    p.add_argument("--seed", type=int, help="the blocks' seed (default: drawn, and printed)")
    p.add_argument("--risk", type=fraction, default=DEFAULTS.risk,
                   help="the chance, at most, that a candidate said faster is not faster by "
                   "--min-gain a call (default 0.05), split over the candidates")  # fmt: skip
    p.add_argument("--min-gain", type=fraction, default=DEFAULTS.min_gain,
                   help="the gain a call a candidate is said faster by (default 0.01)")  # fmt: skip
    p.add_argument("--run", type=positive(int), default=RUN,
                   help=f"consecutive calls of one candidate a unit, timed after a barrier "
                   f"(default {RUN}): calls made back to back carry cost over")  # fmt: skip
    p.add_argument("--warmup", type=int, default=2,
                   help="blocks of calls of each size at the start that are not evidence "
                   "(default 2)")  # fmt: skip
    p.add_argument("--plot", metavar="PNG",
                   help="draw each candidate's call times by block and its estimate in this "
                   "file")  # fmt: skip
    p.add_argument("--timeout", type=positive(float), default=600.0,
                   help="seconds the run may take")  # fmt: skip
    add_json(p)


def cmd_race(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.mpi import resolve_command
    from commtune.report import UI
    from commtune.service import race
    from commtune.tune import decide_race

    command = need_command(command, "to race the algorithms in")
    inst = resolve_command(command, args.mpi)
    ui = UI(json_mode=args.json)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    names = [n for n in args.candidates.split(",") if n]
    done = race(inst, command, args.op, names, seed, args.timeout, run=args.run)
    r = done.race
    ui.info(f"{inst.describe()}: {r.op} raced in one run, {r.raced_calls} calls in {len(r.time)} "
            f"units of {r.units_said()}, blocks of {r.k} units (seed {seed}), each block every "
            f"candidate once in a drawn order; the run took {done.wall:.2f} s")  # fmt: skip
    if cost := r.overhead_said():
        ui.info(cost)
    for said in r.refusals():
        ui.warn(said)
    raced = decide_race(r, args.risk, args.min_gain, args.warmup)
    if not raced:
        ui.warn(f"too few calls of {r.op} to race: {r.raced_calls} in units of {r.run}, "
                f"{args.warmup} blocks of warm-up")  # fmt: skip
    ui.info(f"{r.said()}, against {r.names[0]} (the library's own decision under "
            f"{', '.join(f'{k}={v}' for k, v in done.launch.items())}):")  # fmt: skip
    for c in raced:
        t = c.test
        ui.info(f"  {c.name}: {t.speedup:.3f}x ({t.interval[0]:.3f}-{t.interval[1]:.3f}) in "
                f"{c.blocks} blocks, median {1e6 * c.median:.1f} us against "
                f"{1e6 * c.reference_median:.1f} us; p = {t.p:.3g} at {t.limit:.3g}: "
                f"{'passed' if t.passed else 'not shown faster'}")  # fmt: skip
    if args.plot and raced:
        from pathlib import Path

        from commtune.report import race_plot

        race_plot(r, raced, Path(args.plot), args.warmup)
        ui.info(f"plot: {args.plot}")
    passing = [c for c in raced if c.test.passed]
    best = passing[0] if passing else None
    if best is not None:
        ui.info(
            f"faster in the calls' time beyond --risk {args.risk:g}: {best.name}; the promise is "
            f"about the {r.op} calls' time, not the program's (whole runs show that)"
        )
    else:
        ui.info(f"no candidate shown faster in the calls' time than {r.names[0]}: the "
                "library's own decision stays")  # fmt: skip
    if args.json:
        print_json({"op": r.op, "library": inst.describe(), "seed": seed, "calls": r.raced_calls,
                    "run": r.run, "run_max": r.run_max, "units": len(r.time),
                    "measured": r.said(), "overhead": r.overhead(),
                    "reference": r.names[0], "launch": dict(done.launch), "wall_s": done.wall,
                    "candidates": [c.to_json() for c in raced],
                    "fell_back": r.refused_names(),
                    "answer": best.name if best else None})  # fmt: skip
    return 0


COMMANDS = [
    Command(
        "race",
        "race a collective's algorithms call by call inside one run",
        _add_race,
        cmd_race,
        takes_command=True,
    ),
]
