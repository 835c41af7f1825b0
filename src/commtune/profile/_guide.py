"""The space a program's profile calls for, when the user names no knob (TunIO's first step:
the parameters that matter most for this program, not all of them).

A knob joins when the profiled run exercises its mechanism, with the share of the run's MPI
time that mechanism carried as its expected impact:

* point-to-point calls (sends, receives and their waits): the transport's protocol knobs
  (the ``p2p`` group on one node, the ``network`` group across nodes), with the message
  sizes seen;
* each collective that takes ``MIN_SHARE`` or more of the MPI time (every one the profile
  records: the v-variants, reduce_scatter(_block), gather(v), scatter(v), barrier,
  (ex)scan): the knobs that select its algorithm (the catalog's ``collective``), and the
  same component's segment size, at half the impact (it matters only for some algorithms;
  a component whose algorithm is not chosen, e.g. han's, is left out);
* one-sided calls (puts, gets, accumulates, their synchronization; coarrays over MPI): the
  catalog's ``rma`` knobs (Open MPI's rdma component, MPICH's ch4 RMA progress);
* MPI-IO calls: the I/O hints, the HDF5 properties only if HDF5 opened the file (the
  catalog's first ``PER_LAYER`` of each: there are 8-13 of each layer);
* more ranks than cores on a node: the progress knobs (yielding, binding).

Knobs come ordered by impact, at most ``MAX_KNOBS``, each with its reason. Intel MPI's
catalog has no one-sided knob: there its share is only named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from commtune.knobs import Knob
from commtune.profile._profile import Profile

MIN_SHARE = 0.05  # a mechanism carrying less of the MPI time is left out
MAX_KNOBS = 6
PER_LAYER = 3  # I/O hints: the catalog's first 3 of MPI-IO's, and of HDF5's where it is used
P2P_CLASSES = ("send", "recv", "wait")


@dataclass(frozen=True)
class Choice:
    knob: str
    impact: float  # share of the profiled run's MPI time its mechanism carried
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"knob": self.knob, "impact": round(self.impact, 4), "reason": self.reason}


def guided(profile: Profile, knobs: Iterable[Knob], across_nodes: bool = False) -> list[Choice]:
    """The knobs (of those available, ``knobs``) the profile's mechanisms call for, the
    highest impact first (see the module docstring)."""
    available = list(knobs)
    ops = {
        name: op
        for name, op in profile.operations.items()
        if op.get("class") not in ("init", "finalize")
    }
    total = sum(_time(op) for op in ops.values())
    if total <= 0:
        return []
    out: dict[str, Choice] = {}

    def add(knob: Knob, impact: float, reason: str) -> None:
        if impact >= MIN_SHARE and (knob.name not in out or out[knob.name].impact < impact):
            out[knob.name] = Choice(knob.name, impact, reason)

    p2p = [op for op in ops.values() if op.get("class") in P2P_CLASSES]
    share = sum(_time(op) for op in p2p) / total
    group = "network" if across_nodes else "p2p"
    sized = [op for op in p2p if op.get("class") == "send"]
    reason = f"point-to-point: {share:.0%} of MPI time, messages {_sizes(sized)}"
    for knob in available:
        if group in knob.presets and (knob.default_space or across_nodes):
            add(knob, share, reason)
    for name, op in ops.items():
        if op.get("class") != "coll":
            continue
        coll = name.removeprefix("MPI_").lower()
        share = _time(op) / total
        calls = int(op.get("calls", {}).get("mean", 0))
        reason = f"{name}: {share:.0%} of MPI time, {calls} calls, {_sizes([op])}"
        mine = [k for k in available if k.collective == coll]
        algorithms = [k for k in mine if not _segment(k)]
        for knob in algorithms:
            add(knob, share, reason)
        for knob in mine:  # a segment size only of a component whose algorithm is chosen
            if _segment(knob) and any(knob.name.startswith(_stem(a)) for a in algorithms):
                add(knob, share / 2, reason)
    rma = [op for op in ops.values() if op.get("class") == "rma"]
    share = sum(_time(op) for op in rma) / total
    reason = f"one-sided: {share:.0%} of MPI time, {sum(_calls(op) for op in rma)} calls"
    for knob in available:
        if "rma" in knob.presets:
            add(knob, share, reason)
    io = [op for op in ops.values() if op.get("class") == "io"]
    share = sum(_time(op) for op in io) / total
    hdf5 = any(h.kind == "hdf5" for h in profile.hints)
    reason = f"MPI-IO: {share:.0%} of MPI time, {sum(_calls(op) for op in io)} calls"
    hints = [k for k in available if "io" in k.presets]
    layers = [("", [k for k in hints if not k.name.startswith("hdf5_")])]
    if hdf5:
        layers.append((" (through HDF5)", [k for k in hints if k.name.startswith("hdf5_")]))
    for said, members in layers:
        for knob in members[:PER_LAYER]:
            add(knob, share, reason + said)
    crowded = _oversubscribed(profile)
    if crowded:
        wait = sum(_time(op) for op in ops.values() if op.get("class") == "wait") / total
        for knob in available:
            if "progress" in knob.presets:
                add(knob, max(wait, MIN_SHARE), crowded)
    return sorted(out.values(), key=lambda c: -c.impact)[:MAX_KNOBS]


def one_sided(profile: Profile) -> float:
    """The share of MPI time in one-sided calls."""
    ops = [op for op in profile.operations.values() if op.get("class") not in ("init", "finalize")]
    total = sum(_time(op) for op in ops)
    rma = sum(_time(op) for op in ops if op.get("class") == "rma")
    return rma / total if total > 0 else 0.0


def _segment(knob: Knob) -> bool:
    return any("seg" in t for t in knob.name.lower().split("_"))


def _stem(algorithm: Knob) -> str:
    """``coll_tuned_allreduce_algorithm`` -> ``coll_tuned_allreduce``."""
    return algorithm.name.rsplit("_", 1)[0]


def _time(op: Mapping[str, Any]) -> float:
    return float(op.get("time", {}).get("mean", 0.0))


def _calls(op: Mapping[str, Any]) -> int:
    return int(op.get("calls", {}).get("mean", 0))


def _sizes(ops: Sequence[Mapping[str, Any]]) -> str:
    buckets = [b for op in ops for b in op.get("sizes", []) if b.get("calls")]
    if not buckets:
        return "none"
    low = min(int(b["min"]) for b in buckets)
    high = max(int(b["max"]) for b in buckets)
    return f"{_bytes(low)}-{_bytes(high)}"


def _bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.0f} {unit}"
    return f"{n} B"


def _oversubscribed(profile: Profile) -> str:
    """Why the progress knobs matter ('' when they do not): more ranks than cores."""
    data = profile.data
    cpus, per_node = data.get("cpus"), data.get("node_ranks")
    if isinstance(cpus, int) and isinstance(per_node, int) and per_node > cpus > 0:
        return f"{per_node} ranks on {cpus} cores of a node: how waiting ranks yield matters"
    return ""
