"""MPICH's collective selection (CSEL) JSON, as MPICH 4.0 reads it
(``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``).

A file replaces the library's whole tree, and MPICH aborts on a tree that leaves a collective
without an algorithm; so a file is the library's built-in tree (read from the library's own
bytes) with the intra-communicator subtree of each sampled collective replaced by
message-size ranges, and every other collective keeps its default subtree.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from commtune.errors import UsageError
from commtune.mpi._selection import Builtin, RulesError, Segment

# The size a CSEL tree compares, and how it relates to the sampled size (bytes per rank's
# buffer, or for allgather/alltoall the total of all ranks' blocks).
SIZE_KEY = {
    "allreduce": "avg_msg_size",
    "bcast": "avg_msg_size",
    "reduce": "avg_msg_size",
    "allgather": "total_msg_size",
    "alltoall": "avg_msg_size",  # per peer: total / ranks
}
# A range whose method is the library's own decision (the algorithm variables' "auto"): the
# built-in tree's subtree for it.
OWN = "auto"
_KEY = re.compile(r"^[a-z_]+(=|<=|<|>=|>)[A-Za-z0-9_]+$")
_PARAM = re.compile(r"^[a-z_]+=[A-Za-z0-9_-]+$")

# Algorithms MPICH asserts on when the count is below the largest power of two not above the
# ranks (allreduce_intra_reduce_scatter_allgather.c: "count >= pof2"). Forced through the CVAR
# the library falls back by itself; called from a selection file it aborts, so the file
# sends those counts to the fallback (the key MPICH's own tree uses: count<pow2).
NEEDS_POF2_COUNT = {"allreduce": "recursive_doubling", "reduce": "binomial"}


# The parameters an algorithm takes from a selection file, and the variable (after
# MPIR_CVAR_<COLLECTIVE>_) a forced algorithm takes each from: MPICH 4.1+ reads them from
# the algorithm's object ({"algorithm=MPIR_Allreduce_intra_tree": {"k=2": {}, ...}}) and
# leaves a missing one 0, which crashes a tree or recursive exchange (k = 0). From MPICH's
# src/mpi/coll/coll_algorithms.txt (extra_params / cvar_params), for the sampled collectives.
_RECEXCH = (("k", "RECEXCH_KVAL"), ("single_phase_recv", "RECEXCH_SINGLE_PHASE_RECV"))
_TREE = (("tree_type", "TREE_TYPE"), ("k", "TREE_KVAL"))
PARAMS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("allreduce", "tree"): (*_TREE, ("chunk_size", "TREE_PIPELINE_CHUNK_SIZE"),
                            ("buffer_per_child", "TREE_BUFFER_PER_CHILD")),
    ("allreduce", "recexch"): _RECEXCH,
    ("allreduce", "k_reduce_scatter_allgather"): _RECEXCH,
    ("allreduce", "recursive_multiplying"): (("k", "RECURSIVE_MULTIPLYING_KVAL"),),
    ("bcast", "tree"): (*_TREE, ("is_non_blocking", "IS_NON_BLOCKING")),
    ("bcast", "pipelined_tree"): (*_TREE, ("is_non_blocking", "IS_NON_BLOCKING"),
                                  ("chunk_size", "TREE_PIPELINE_CHUNK_SIZE"),
                                  ("recv_pre_posted", "RECV_PRE_POST")),
    ("allgather", "k_brucks"): (("k", "BRUCKS_KVAL"),),
    ("allgather", "recexch_doubling"): _RECEXCH,
    ("allgather", "recexch_halving"): _RECEXCH,
    ("alltoall", "k_brucks"): (("k", "BRUCKS_KVAL"),),
}  # fmt: skip


def builtin(library: Path, variables: Mapping[str, str] | None = None) -> Builtin:
    """MPICH's built-in MPIR-level selection tree and the algorithm names its parser knows,
    read from the library's own bytes (so the file fits exactly this MPICH); ``variables``:
    the installation's control variables (the parameters of algorithms come from them)."""
    data = library.read_bytes()
    names = {m.decode() for m in re.findall(rb"algorithm=(MPIR_[A-Za-z0-9_]+)", data)}
    for match in re.finditer(rb'\{"collective=bcast":\{"comm_type=intra"', data):
        end = data.find(b"\0", match.start())
        try:
            tree = json.loads(data[match.start() : end].decode())
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if "MPIR_Bcast_intra_binomial" in json.dumps(tree):
            return Builtin(tree, frozenset(names), dict(variables or {}))
    raise UsageError(f"cannot find MPICH's built-in collective selection in {library}")


def csel_name(op: str, algorithm: str, known: frozenset[str]) -> str | None:
    """CSEL name of a CVAR algorithm name (``recursive_doubling`` ->
    ``MPIR_Allreduce_intra_recursive_doubling``), None when the library has none."""
    for kind in ("intra", "allcomm"):
        name = f"MPIR_{op.capitalize()}_{kind}_{algorithm}"
        if name in known:
            return name
    return None


def intra_subtree(base: Builtin, op: str, ranges: Sequence[Segment], ranks: int) -> dict[str, Any]:
    """The intra-communicator subtree of collective ``op`` choosing by message size;
    RulesError if this MPICH has no selection name for one of the algorithms."""
    key = SIZE_KEY.get(op)
    scale = 1.0 / ranks if op == "alltoall" else 1.0
    subtree: dict[str, Any] = {}
    for seg in ranges:
        if seg.method == OWN:  # the library's own decision over this range: its subtree
            own = copy.deepcopy(base.tree.get(f"collective={op}", {}).get("comm_type=intra"))
            if own is None:
                raise RulesError(f"{op}: MPICH's own tree has no intra-communicator subtree")
            if key is None:
                return dict(own)
            subtree[f"{key}=any" if seg.high is None else
                    f"{key}<={max(0, math.ceil(seg.high * scale) - 1)}"] = own  # fmt: skip
            continue
        name = csel_name(op, seg.method, base.known)
        if name is None:
            raise RulesError(f"{op}: MPICH has no selection name for {seg.method!r}")
        leaf: dict[str, Any] = {f"algorithm={name}": parameters(base, op, seg.method)}
        fallback = NEEDS_POF2_COUNT.get(op)
        if fallback and "reduce_scatter" in seg.method and seg.method != fallback:
            other = csel_name(op, fallback, base.known)
            if other is not None:
                leaf = {"count<pow2": {f"algorithm={other}": {}}, "count=any": leaf}
        if key is None:  # one algorithm whatever the size (a single open range)
            if len(ranges) > 1:
                raise RulesError(f"{op}: no size to choose by in MPICH's terms")
            return leaf
        if seg.high is None:
            subtree[f"{key}=any"] = leaf
        else:
            subtree[f"{key}<={max(0, math.ceil(seg.high * scale) - 1)}"] = leaf
    return subtree


def parameters(base: Builtin, op: str, algorithm: str) -> dict[str, Any]:
    """The object of an algorithm's leaf: each parameter it takes at the value the library's
    own variable has (what the algorithm forced by its variable would run with); RulesError
    where this MPICH lists no such variable (the algorithm would run with 0)."""
    out: dict[str, Any] = {}
    for param, suffix in PARAMS.get((op, algorithm), ()):
        cvar = f"MPIR_CVAR_{op.upper()}_{suffix}"
        value = base.variables.get(cvar)
        if value is None:
            if not base.variables:  # no variables given: the library's own defaults apply
                return {}
            raise RulesError(f"{op}: {algorithm} takes {param} from {cvar}, which is not set")
        out[f"{param}={value}"] = {}
    return out


def by_comm_size(trees: Mapping[int, dict[str, Any]]) -> dict[str, Any]:
    """One tree from trees written each for one communicator size (ranks -> tree): each
    collective's intra subtree chooses by ``comm_size`` first (the boundaries midway between
    the sizes, the largest taking any larger), where the trees differ."""
    counts = sorted(trees)
    tree = copy.deepcopy(dict(trees[counts[-1]]))
    for key in tree:
        subs = [trees[n].get(key, {}).get("comm_type=intra") for n in counts]
        if len(counts) == 1 or any(s is None for s in subs) or all(s == subs[0] for s in subs):
            continue
        by_size: dict[str, Any] = {}
        for i, (n, sub) in enumerate(zip(counts, subs, strict=True)):
            last = i == len(counts) - 1
            by_size["comm_size=any" if last else f"comm_size<={(n + counts[i + 1]) // 2}"] = sub
        tree[key] = {**tree[key], "comm_type=intra": by_size}
    return tree


def with_subtrees(base: Builtin, subtrees: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The built-in tree with each collective's intra-communicator subtree replaced."""
    tree = copy.deepcopy(dict(base.tree))
    for op, subtree in subtrees.items():
        tree.setdefault(f"collective={op}", {})["comm_type=intra"] = subtree
    return tree


def validate(text: str, base: Builtin) -> None:
    """The text is JSON, every key is ``name OP value``, every leaf names an algorithm the
    library knows, every collective of the built-in tree is still there, and every subtree
    ends in an algorithm."""
    try:
        tree = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RulesError(f"not JSON: {exc}") from None
    missing = set(base.tree) - set(tree)
    if missing:
        raise RulesError(f"collectives missing (MPICH would abort): {sorted(missing)}")

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            raise RulesError(f"{path}: not an object")
        for key, child in node.items():
            if key.startswith("algorithm="):
                if key.split("=", 1)[1] not in base.known:
                    raise RulesError(f"{path}: this MPICH has no {key}")
                bad = [p for p in child if not _PARAM.match(p) or child[p]]
                if bad:
                    raise RulesError(f"{path}/{key}: malformed parameter {bad[0]!r}")
                continue
            if not key.startswith("collective=") and not _KEY.match(key):
                raise RulesError(f"{path}: malformed key {key!r}")
            if not child:
                raise RulesError(f"{path}/{key}: no algorithm below")
            walk(child, f"{path}/{key}")

    walk(tree, "")
