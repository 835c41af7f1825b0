"""Collective selection files: Open MPI's coll_tuned dynamic rules, MPICH's CSEL JSON.

Neither library says which algorithm it picked, Open MPI silently falls back to its fixed
decisions on a file it cannot read, and MPICH aborts on a tree that leaves a collective
without an algorithm. So every file is written from the sampled choices, then read back by a
parser that follows the library's own rules, and only then handed out.

Open MPI (4.1 reader, :mod:`commtune.mpi._ompi_rules`): per collective and communicator size,
``bytes algorithm fan-in/out segment-size`` lines from 0 up. The largest listed size not above
the actual one applies. Sizes are the total bytes (allgather and alltoall: times the
communicator size).

MPICH (4.0, ``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``): the library's built-in tree,
with the intra-communicator subtree of each sampled collective replaced by message-size
ranges; every other collective keeps its default subtree (a missing one aborts MPICH).
"""

from __future__ import annotations

import copy
import json
import math
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from commtune.errors import UsageError
from commtune.mpi import COLL_IDS, RulesError
from commtune.mpi import parse_rules as parse_ompi_rules
from commtune.sample._curves import Segment

# The collectives sampled, by Open MPI's COLLTYPE number
OMPI_COLL_IDS = {
    op: COLL_IDS[op] for op in ("allgather", "allreduce", "alltoall", "bcast", "reduce")
}

# MPICH: the size a CSEL tree compares, and how it relates to the sampled size (bytes per
# rank's buffer, or for allgather/alltoall the total of all ranks' blocks).
MPICH_SIZE_KEY = {
    "allreduce": "avg_msg_size",
    "bcast": "avg_msg_size",
    "reduce": "avg_msg_size",
    "allgather": "total_msg_size",
    "alltoall": "avg_msg_size",  # per peer: total / ranks
}
MPICH_ENV = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"
OMPI_ENV = {
    "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
    "OMPI_MCA_coll_tuned_dynamic_rules_filename": "",
}


# -- Open MPI ---------------------------------------------------------------------------------
def ompi_rules(
    choices: Mapping[str, Sequence[tuple[int, int]]], ranks: int, header: str = ""
) -> str:
    """Rules text. ``choices``: collective -> [(from bytes, algorithm number)], ascending."""
    lines = [f"# {line}" for line in header.splitlines()] if header else []
    lines.append(f"{len(choices):<10d} # number of collectives")
    for op, rules in choices.items():
        lines.append(f"{OMPI_COLL_IDS[op]:<10d} # collective: {op}")
        lines.append(f"{1:<10d} # number of communicator sizes")
        lines.append(f"{ranks:<10d} # communicator size")
        lines.append(f"{len(rules):<10d} # number of message sizes")
        for start, algorithm in rules:
            lines.append(f"{start} {algorithm} 0 0")
    return "\n".join(lines) + "\n"


def validate_ompi_rules(text: str, algorithms: Mapping[str, int]) -> None:
    """Check the text parses and names only algorithms that exist (``algorithms``: collective
    -> how many numbers its algorithm variable has)."""
    by_id = {OMPI_COLL_IDS[op]: n for op, n in algorithms.items()}
    for coll, comms in parse_ompi_rules(text).items():
        if coll not in by_id:
            raise RulesError(f"collective id {coll} is not one commtune samples")
        for rules in comms.values():
            for size, alg, _, _ in rules:
                if not 0 <= alg < by_id[coll]:
                    raise RulesError(f"collective {coll}, size {size}: no algorithm {alg}")


def ompi_choices(
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


# -- MPICH ------------------------------------------------------------------------------------
_KEY = re.compile(r"^[a-z_]+(=|<=|<|>=|>)[A-Za-z0-9_]+$")


def library_path(binary: Path) -> Path:
    """The MPICH shared library ``binary`` is linked with (``ldd``)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        if "libmpi" in line and "=>" in line:
            return Path(line.split("=>", 1)[1].split("(")[0].strip())
    raise UsageError(f"cannot find the MPI library {binary} is linked with (ldd)")


def mpich_builtin(library: Path) -> tuple[dict[str, Any], set[str]]:
    """MPICH's built-in MPIR-level selection tree and the algorithm names its parser knows,
    read from the library's own bytes (so the file fits exactly this MPICH)."""
    data = library.read_bytes()
    names = {m.decode() for m in re.findall(rb"algorithm=(MPIR_[A-Za-z0-9_]+)", data)}
    for match in re.finditer(rb'\{"collective=bcast":\{"comm_type=intra"', data):
        end = data.find(b"\0", match.start())
        try:
            tree = json.loads(data[match.start() : end].decode())
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if "MPIR_Bcast_intra_binomial" in json.dumps(tree):
            return tree, names
    raise UsageError(f"cannot find MPICH's built-in collective selection in {library}")


def mpich_name(op: str, algorithm: str, known: set[str]) -> str | None:
    """CSEL name of a CVAR algorithm name (``recursive_doubling`` ->
    ``MPIR_Allreduce_intra_recursive_doubling``), None when the library has none."""
    for kind in ("intra", "allcomm"):
        name = f"MPIR_{op.capitalize()}_{kind}_{algorithm}"
        if name in known:
            return name
    return None


# Algorithms MPICH asserts on when the count is below the largest power of two not above the
# ranks (allreduce_intra_reduce_scatter_allgather.c: "count >= pof2"). Forced through the CVAR
# the library falls back by itself; called from a selection file it aborts, so the file
# sends those counts to the fallback (the key MPICH's own tree uses: count<pow2).
NEEDS_POF2_COUNT = {"allreduce": "recursive_doubling", "reduce": "binomial"}


def mpich_tree(
    base: Mapping[str, Any],
    segs: Mapping[str, Sequence[Segment]],
    ranks: int,
    known: set[str],
) -> dict[str, Any]:
    tree = copy.deepcopy(dict(base))
    for op, ranges in segs.items():
        key = MPICH_SIZE_KEY[op]
        scale = 1.0 / ranks if op == "alltoall" else 1.0
        subtree: dict[str, Any] = {}
        for seg in ranges:
            name = mpich_name(op, seg.method, known)
            if name is None:
                raise RulesError(f"{op}: MPICH has no selection name for {seg.method!r}")
            leaf: dict[str, Any] = {f"algorithm={name}": {}}
            fallback = NEEDS_POF2_COUNT.get(op)
            if fallback and "reduce_scatter" in seg.method and seg.method != fallback:
                other = mpich_name(op, fallback, known)
                if other is not None:
                    leaf = {"count<pow2": {f"algorithm={other}": {}}, "count=any": leaf}
            if seg.high is None:
                subtree[f"{key}=any"] = leaf
            else:
                subtree[f"{key}<={max(0, math.ceil(seg.high * scale) - 1)}"] = leaf
        collective = tree.setdefault(f"collective={op}", {})
        collective["comm_type=intra"] = subtree
    return tree


def validate_mpich_tree(text: str, base: Mapping[str, Any], known: set[str]) -> None:
    """The text is JSON, every key is ``name OP value``, every leaf names an algorithm the
    library knows, every collective of the built-in tree is still there, and every subtree
    ends in an algorithm."""
    try:
        tree = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RulesError(f"not JSON: {exc}") from None
    missing = set(base) - set(tree)
    if missing:
        raise RulesError(f"collectives missing (MPICH would abort): {sorted(missing)}")

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            raise RulesError(f"{path}: not an object")
        for key, child in node.items():
            if key.startswith("algorithm="):
                if key.split("=", 1)[1] not in known:
                    raise RulesError(f"{path}: this MPICH has no {key}")
                continue
            if not key.startswith("collective=") and not _KEY.match(key):
                raise RulesError(f"{path}: malformed key {key!r}")
            if not child:
                raise RulesError(f"{path}/{key}: no algorithm below")
            walk(child, f"{path}/{key}")

    walk(tree, "")
