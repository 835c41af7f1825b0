"""Open MPI's ``coll_tuned`` dynamic rules file, as the 4.1 reader takes it.

Integers separated by anything, ``#`` to the end of a line a comment. Number of collectives;
per collective its id (``COLLTYPE_T``), the number of communicator sizes; per communicator
size, the size and the number of message sizes; per message size ``bytes algorithm
fan-in/out segment-size``. The first message size must be 0, or the collective falls back to
the fixed rules.

The reader consults the file before a forced algorithm variable (MPICH is the other way
round), so a configuration that forces a collective's algorithm while a rules file is loaded
gets a copy of the file without that collective (:func:`without_forced`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from commtune.mpi._selection import RulesError, Segment
from commtune.util import write_atomic

# COLLTYPE_T of ompi/mca/coll/base/coll_base_functions.h (4.1)
_COLLTYPES = """allgather allgatherv allreduce alltoall alltoallv alltoallw barrier bcast exscan
gather gatherv reduce reduce_scatter reduce_scatter_block scan scatter scatterv"""
COLL_IDS = {name: number for number, name in enumerate(_COLLTYPES.split())}
# What coll_tuned's dynamic decision compares with a rule's message size, per collective
# (coll_tuned_decision_dynamic.c): the total bytes of all ranks' blocks, as commtune samples
# them (ct_sample's SIZE); for alltoallv and barrier no size at all (it looks up size 0).
# allgatherv (per-rank in 5.0) and scan/exscan (the type's size times the ranks) are not
# written from samples.
RULES_SIZE_TOTAL = frozenset({"allreduce", "bcast", "reduce", "allgather", "alltoall", "gather",
                              "scatter", "reduce_scatter", "reduce_scatter_block"})  # fmt: skip
RULES_SIZE_ZERO = frozenset({"alltoallv", "barrier"})
USE_ENV = "OMPI_MCA_coll_tuned_use_dynamic_rules"
FILE_ENV = "OMPI_MCA_coll_tuned_dynamic_rules_filename"
_NOT_FORCED = ("", "0", "ignore")  # an algorithm variable left to the library

Rule = tuple[int, int, int, int]  # bytes, algorithm, fan-in/out, segment size
Rules = dict[int, dict[int, list[Rule]]]  # collective id -> communicator size -> rules


def parse_rules(text: str) -> Rules:
    """The file's rules, as Open MPI 4.1 reads them; RulesError where it would give up."""
    numbers = [int(n) for n in re.findall(r"-?\d+", re.sub(r"#[^\n]*", "", text))]
    pos = 0

    def take(what: str) -> int:
        nonlocal pos
        if pos >= len(numbers):
            raise RulesError(f"file ends where {what} was expected")
        pos += 1
        return numbers[pos - 1]

    out: Rules = {}
    for _ in range(take("the number of collectives")):
        coll = take("a collective id")
        if coll in out:
            raise RulesError(f"collective {coll} listed twice")
        out[coll] = {}
        for _ in range(take("the number of communicator sizes")):
            comm = take("a communicator size")
            rules = [
                (take("a message size"), take("an algorithm"), take("a fan"), take("a segsize"))
                for _ in range(take("the number of message sizes"))
            ]
            if not rules or rules[0][0] != 0:
                raise RulesError(f"collective {coll}: the first message size must be 0")
            sizes = [r[0] for r in rules]
            if sizes != sorted(set(sizes)):
                raise RulesError(f"collective {coll}: message sizes not strictly ascending")
            out[coll][comm] = rules
    if pos != len(numbers):
        raise RulesError(f"{len(numbers) - pos} numbers after the last rule")
    return out


def format_rules(rules: Mapping[int, Mapping[int, Sequence[Rule]]], header: str = "") -> str:
    """The text of ``rules`` (what :func:`parse_rules` reads back)."""
    names = {number: name for name, number in COLL_IDS.items()}
    lines = [f"# {line}" for line in header.splitlines()] if header else []
    lines.append(f"{len(rules):<10d} # number of collectives")
    for coll, comms in rules.items():
        lines.append(f"{coll:<10d} # collective: {names.get(coll, '?')}")
        lines.append(f"{len(comms):<10d} # number of communicator sizes")
        for comm, entries in comms.items():
            lines.append(f"{comm:<10d} # communicator size")
            lines.append(f"{len(entries):<10d} # number of message sizes")
            lines.extend(" ".join(str(n) for n in entry) for entry in entries)
    return "\n".join(lines) + "\n"


def forced_collectives(env: Mapping[str, str]) -> list[str]:
    """The collectives whose algorithm ``env`` forces (not left to the library)."""
    return [
        name
        for name in COLL_IDS
        if env.get(f"OMPI_MCA_coll_tuned_{name}_algorithm", "").strip().lower() not in _NOT_FORCED
    ]


def without_forced(env: Mapping[str, str], directory: Path) -> dict[str, str]:
    """For a run with environment ``env``: when it loads a rules file that lists collectives
    whose algorithm ``env`` forces, a copy of the file without them, written in
    ``directory`` (named by its content), and the variable that loads the copy instead.
    Nothing when there is no such conflict, or the file cannot be read (the library then
    says so itself)."""
    if env.get(USE_ENV, "0").strip().lower() not in ("1", "true", "yes", "y", "t"):
        return {}
    path = env.get(FILE_ENV, "")
    forced = {COLL_IDS[name] for name in forced_collectives(env)}
    if not path or not forced:
        return {}
    try:
        rules = parse_rules(Path(path).read_text())
    except (OSError, UnicodeDecodeError, RulesError):
        return {}
    dropped = sorted(forced & rules.keys())
    if not dropped:
        return {}
    names = {number: name for name, number in COLL_IDS.items()}
    text = format_rules(
        {c: r for c, r in rules.items() if c not in dropped},
        f"{path} without {', '.join(names[c] for c in dropped)}: their algorithm is forced\n"
        "(written by commtune; Open MPI would use the file's choice over the forced one)",
    )
    target = directory / f"coll-rules-{hashlib.sha256(text.encode()).hexdigest()[:16]}.conf"
    if not target.exists():
        directory.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text)  # whole or not at all, whoever writes it first
    return {FILE_ENV: str(target)}


# -- written from sampled ranges (``commtune sample``) -------------------------------------------
def sampled_rules(
    choices: Mapping[str, Sequence[tuple[int, int]]], ranks: int, header: str = ""
) -> str:
    """Rules text. ``choices``: collective -> [(from bytes, algorithm number)], ascending.
    Sizes are the total bytes (allgather and alltoall: times the communicator size)."""
    return format_rules(
        {
            COLL_IDS[op]: {ranks: [(start, algorithm, 0, 0) for start, algorithm in rules]}
            for op, rules in choices.items()
        },
        header,
    )


def validate_sampled(text: str, algorithms: Mapping[str, int]) -> None:
    """Check the text parses and names only algorithms that exist (``algorithms``: collective
    -> how many numbers its algorithm variable has)."""
    by_id = {COLL_IDS[op]: n for op, n in algorithms.items()}
    for coll, comms in parse_rules(text).items():
        if coll not in by_id:
            raise RulesError(f"collective id {coll} is not one commtune samples")
        for rules in comms.values():
            for size, alg, _, _ in rules:
                if not 0 <= alg < by_id[coll]:
                    raise RulesError(f"collective {coll}, size {size}: no algorithm {alg}")


def choices_of(
    segs: Mapping[str, Sequence[Segment]], values: Mapping[str, Mapping[str, int]]
) -> dict[str, list[tuple[int, int]]]:
    """Segments as (from bytes, algorithm number) lists, first from 0."""
    out: dict[str, list[tuple[int, int]]] = {}
    for op, ranges in segs.items():
        rules: list[tuple[int, int]] = []
        for i, seg in enumerate(ranges):
            start = 0 if i == 0 else math.ceil(seg.low)
            alg = values[op][seg.method]
            if rules and rules[-1][0] == start:
                rules[-1] = (start, alg)
            elif not rules or rules[-1][1] != alg:
                rules.append((start, alg))
        out[op] = rules
    return out
