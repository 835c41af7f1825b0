"""``commtune race``: one collective's algorithms raced call by call inside one run of the
user's program (issue 77; the decision: ``tune._inrun``). This module makes the run: the
library's algorithm variable and its candidates by name, ``libctrace`` built with the
installation's ``mpicc`` and preloaded alone, the launch variables that make the variable
govern (Open MPI: dynamic rules; MPICH: no device collectives), and the race it wrote."""

from __future__ import annotations

import json
import os
import struct
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from commtune import native
from commtune.errors import UsageError
from commtune.knobs import Value, enumerators
from commtune.launch import launcher_for
from commtune.mpi import Installation
from commtune.trial import run_process
from commtune.tune import RUN, RUN_MAX, Halving, Race
from commtune.util import parse_size

OPS = ("allreduce", "bcast", "reduce", "allgather", "alltoall")
SEGMENTS = ("8K", "64K", "512K")  # a segmented algorithm's segment sizes raced
SIZED = 2  # the segmented algorithms that passed raced at those sizes, the fastest first


class RaceFailed(UsageError):
    """A raced run of the program that crashed, hung or ended without writing its race: a
    failed run, not bad input. ``suspects``: the candidates (never the reference) the run was
    in when it ended, or that ran last before it ended where no raced call was under way
    (libctrace's ``COMMTUNE_RACE_WATCH``); ``where`` says which of the two. ``tune`` races
    again without them, or searches the space on whole runs, where each candidate fails or
    not on its own."""

    def __init__(self, message: str, suspects: Sequence[str] = (), where: str = "") -> None:
        super().__init__(message)
        self.suspects = tuple(suspects)
        self.where = where


def watched(prefix: str, names: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """What the ranks' pages of ``COMMTUNE_RACE_WATCH`` (``prefix.<rank>``) say of a run that
    ended without its race: the candidates of ``names`` under way on any rank, else those
    that ran last; and which of the two. The reference (``names[0]``, and any candidate the
    library refused, which ran as it) is never a suspect."""
    under_way: set[int] = set()
    last: set[int] = set()
    page = Path(prefix)
    for rank in page.parent.glob(f"{page.name}.*"):
        data = rank.read_bytes()
        if len(data) < 8:
            continue
        now, before = struct.unpack("=ii", data[:8])  # each +1; 0: none
        if now:
            under_way.add(now - 1)
        if before:
            last.add(before - 1)
    for found, where in ((under_way, "in the call under way when it ended"),
                         (last, "the last raced before it ended")):  # fmt: skip
        if found:
            named = sorted(names[c] for c in found if 0 < c < len(names))
            return tuple(named), (where if named else "")
    return (), ""


@dataclass(frozen=True)
class RacedRun:
    """One raced run of the program: its race, the variables it ran under, its wall time and
    its output (the strategy race's run is ``commtune.harness.StrategyRun``)."""

    race: Race
    launch: Mapping[str, str]
    wall: float
    stdout: str


def candidates(
    inst: Installation, op: str, names: Sequence[str]
) -> tuple[str, list[str], list[int]]:
    """The algorithm variable of ``op`` and the candidates, the library's own decision first
    (its first enumerator: Open MPI's ``ignore``, MPICH's ``auto``), with their integer codes
    (their place in the variable's list); ``names`` empty: every algorithm it lists."""
    if op not in OPS:
        raise UsageError(f"--op {op}: one of {', '.join(OPS)}")
    if inst.impl.race_mode is None:
        raise UsageError(f"{inst.impl.title}: in-run racing writes the algorithm variable "
                         "through MPI_T while the program runs; this library reads its "
                         "algorithms from environment variables only")  # fmt: skip
    knob = inst.impl.algorithm_knob(op)
    listed = enumerators(inst).get(knob) or ()
    if len(listed) < 2:
        raise UsageError(f"{inst.describe()} lists no algorithms of {op} ({knob})")
    chosen = list(names) or list(listed[1:])
    unknown = [n for n in chosen if split_name(n)[0] not in listed]
    if unknown:
        raise UsageError(f"--candidates {','.join(unknown)}: not an algorithm of {knob} "
                         f"(it lists {', '.join(listed[1:])}; {listed[0]} is the "
                         "reference)")  # fmt: skip
    # the reference named again is an A/A race: two labels of one decision
    everyone = [listed[0], *dict.fromkeys(chosen)]
    return knob, everyone, [listed.index(split_name(n)[0]) for n in everyone]


def split_name(name: str) -> tuple[str, int | None]:
    """A candidate's algorithm and its segment size: ``pipeline@256K`` is the pipeline with
    262144-byte segments (None: the segment size as launched)."""
    algorithm, at, size = name.partition("@")
    if not at:
        return name, None
    try:
        return algorithm, parse_size(size)
    except ValueError:
        raise UsageError(f"--candidates {name}: {size!r} is not a segment size (e.g. "
                         "pipeline@64K)") from None  # fmt: skip


def sized_field(inst: Installation, op: str, halved: Halving) -> list[str]:
    """The next run's field where ``halved`` passed algorithms that cut a message into
    segments (``MPIVendor.segmented``, forced at the launch's segment size: one segment): the
    fastest ``SIZED`` of them, each again and at every size of ``SEGMENTS``
    (``pipeline@64K``); else none."""
    if inst.impl.race_mode != "dup" or inst.impl.segment_knob(op) is None:
        return []
    leads = [c.name for c in halved.pooled if c.name in halved.passed
             and c.name in inst.impl.segmented.get(op, ())][:SIZED]  # fmt: skip
    return [*leads, *(f"{name}@{size}" for name in leads for size in SEGMENTS)]


def sized_config(inst: Installation, knob: str, op: str, name: str) -> dict[str, Value]:
    """A raced candidate's static setting: its algorithm, and the segment size it was
    raced at where it names one (``pipeline@64K``: both variables)."""
    algorithm, size = split_name(name)
    segment = inst.impl.segment_knob(op)
    config: dict[str, Value] = {knob: algorithm}
    if size is not None and segment is not None:
        config[segment] = size
    return config


def segments(inst: Installation, op: str, names: Sequence[str]) -> dict[str, str]:
    """libctrace's variables racing each candidate's segment size with its algorithm (none
    where no name gives one): the library's segment size variable of ``op``, and per
    candidate its size (-1: as launched)."""
    sizes = [split_name(n)[1] for n in names]
    if all(size is None for size in sizes):
        return {}
    knob = inst.impl.segment_knob(op)
    if knob is None or inst.impl.race_mode != "dup":
        raise UsageError(f"--candidates {','.join(n for n in names if '@' in n)}: "
                         f"{inst.impl.title} has no segment size of {op} that a race can "
                         "set")  # fmt: skip
    return {
        "COMMTUNE_RACE_CVAR2": inst.impl.mpit_name(knob) or knob,
        "COMMTUNE_RACE_VALUES2": ",".join(str(-1 if z is None else z) for z in sizes),
    }


def rules(inst: Installation, op: str, names: Sequence[str]) -> str:
    """libctrace's ``COMMTUNE_RACE_RULES``: each candidate's stated restrictions
    (``MPIVendor.race_rules``; ``-``: none)."""
    return ",".join(inst.impl.race_rules.get((op, split_name(n)[0]), "-") for n in names)


def race(inst: Installation, command: Sequence[str], op: str, names: Sequence[str], seed: int,
         timeout: float, extra: Mapping[str, str] | None = None,
         through: Sequence[str] = (), run: int = RUN,
         run_max: int = RUN_MAX) -> RacedRun:  # fmt: skip
    """One run of ``command`` with ``op``'s candidates raced in it, in units of ``run``
    consecutive calls (doubling as the blocks go, up to ``run_max``), each after a barrier
    (``extra``: more of libctrace's variables, e.g.
    ``COMMTUNE_RACE_SHARE``; ``through``: the launch line's prefix, a bed's node)."""
    knob, everyone, codes = candidates(inst, op, names)
    mode, governs = inst.impl.race_mode, dict(inst.impl.race_env)
    library = native.build_race(inst)
    with tempfile.TemporaryDirectory(prefix="commtune-race-") as tmp:
        out, watch = os.path.join(tmp, "race.json"), os.path.join(tmp, "watch")
        variables = {**governs, "COMMTUNE_RACE_OP": op,
                     "COMMTUNE_RACE_CVAR": inst.impl.mpit_name(knob) or knob,
                     "COMMTUNE_RACE_VALUES": ",".join(map(str, codes)),
                     "COMMTUNE_RACE_MODE": str(mode), "COMMTUNE_RACE_SEED": str(seed),
                     "COMMTUNE_RACE_OUT": out, "COMMTUNE_RACE_RUN": str(run),
                     "COMMTUNE_RACE_RUN_MAX": str(max(run, run_max)),
                     "COMMTUNE_RACE_DRAIN": "1", "COMMTUNE_RACE_WATCH": watch,
                     "COMMTUNE_RACE_RULES": rules(inst, op, everyone),
                     **segments(inst, op, everyone),
                     **(extra or {})}  # fmt: skip
        plan = launcher_for(inst, through).plan(command, variables, preload=str(library))
        try:
            done = run_process(plan.argv, plan.env, timeout).ended_well("the raced run", timeout)
            with open(out) as f:
                data = json.load(f)
        except UsageError as exc:
            raise RaceFailed(str(exc), *watched(watch, everyone)) from None
        except (OSError, ValueError):
            why = ("the raced run wrote no race: libctrace writes it at MPI_Finalize, which "
                   "it sees through the C bindings and Fortran's (mpif.h, use mpi, use "
                   "mpi_f08, gfortran's names); a program that ends without MPI_Finalize, or "
                   "reaches MPI another way, is not raced")  # fmt: skip
            raise RaceFailed(why, *watched(watch, everyone)) from None
    result = Race.from_json(data, everyone)
    if result.refused:  # the program ran untouched: a run spent, nothing raced (tune: whole runs)
        raise RaceFailed(f"in-run racing refused by {inst.describe()}: {result.refused}")
    if result.error:  # the ranks disagreed: nothing of the run is evidence
        raise RaceFailed(f"the raced run: {result.error}")
    launch = {k: v for k, v in variables.items() if not k.startswith("COMMTUNE_")}
    return RacedRun(result, launch, done.wall, done.stdout)
