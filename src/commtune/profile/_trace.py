"""A profile from SimGrid's trace: what the guide needs of a simulated run, where no preloaded
library reaches the program.

``smpirun -trace -trace-file F --cfg=tracing/smpi/display-sizes:yes`` writes a Paje trace:
every MPI call of every rank as a state pushed and popped at simulated times, with the
size the call passes. :func:`from_paje` sums it into libcommtune's profile shape (per
operation: its class, mean time and calls a rank, its sizes), the classes from the
interposer's own list of MPI calls (``mpi.protos``), so :func:`commtune.profile.guided`
chooses the space of a simulated run as it does of a real one. The sizes are those SMPI
traces (elements of the call's datatype; bytes for byte buffers).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from commtune import native
from commtune.profile._profile import FORMAT, Profile, ProfileError


@cache
def call_classes() -> dict[str, str]:
    """MPI call -> its class (send, recv, wait, coll, rma, io, init, finalize), from the
    interposer's list."""
    out = {}
    for line in (native.interposer_dir() / "mpi.protos").read_text().splitlines():
        match = re.match(r"(\w+)\s*\|\s*\w+\s+(MPI_\w+)\(", line)
        if match:
            out[match.group(2)] = match.group(1)
    return out


def _stats(values: list[float]) -> dict[str, float]:
    return {"mean": sum(values) / len(values), "min": min(values), "max": max(values),
            "sum": sum(values)}  # fmt: skip


def _buckets(seen: list[int]) -> list[dict[str, int]]:
    """Sizes as libcommtune bins them: powers of two, [2^k, 2^(k+1) - 1] (0 alone)."""
    counts: dict[int, int] = defaultdict(int)
    for size in seen:
        counts[size.bit_length()] += 1
    return [{"min": 0 if k == 0 else 1 << (k - 1), "max": 0 if k == 0 else (1 << k) - 1,
             "calls": c} for k, c in sorted(counts.items())]  # fmt: skip


P2P = ("send", "recv", "wait")
COMM = (*P2P, "coll", "rma")


@dataclass
class _Traced:
    """A Paje trace's MPI calls, per rank and call: time, calls, bytes (or elements: what
    SMPI traces), each call's sizes, and each rank's last event (its simulated wall)."""

    ranks: list[str] = field(default_factory=list)
    time: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    calls: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    volume: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    sizes: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    end: dict[str, float] = field(default_factory=lambda: defaultdict(float))


def from_paje(
    path: str | Path, vendor: str, title: str, classes: Mapping[str, str] | None = None
) -> Profile:
    """The profile of the run of ``vendor`` (its value and title) traced in ``path``;
    ProfileError if it is not a trace."""
    classes = call_classes() if classes is None else classes
    traced = _read_paje(path)
    ranks, time, calls = traced.ranks, traced.time, traced.calls
    volume, sizes, end = traced.volume, traced.sizes, traced.end
    if not ranks or not calls:
        raise ProfileError(f"{path}: no trace of MPI calls")
    if all(classes.get(op) not in COMM for _, op in calls):
        # SNAP at 256 ranks: "Process called exit when leaving - Skipping cleanups", and
        # the trace names its calls but holds MPI_Init alone (measured); a profile of zeros
        # would read as a program that does not communicate
        raise ProfileError(
            f"{path}: the trace holds no communication (the simulator did not write "
            "the program's calls: did it exit before its cleanup?)"
        )
    n = len(ranks)
    operations: dict[str, Any] = {}
    for name in sorted({op for _, op in calls}):
        operations[name] = {
            "class": classes.get(name, "other"),
            "calls": _stats([float(calls[(r, name)]) for r in ranks]),
            "bytes": _stats([float(volume[(r, name)]) for r in ranks]),
            "time": _stats([time[(r, name)] for r in ranks]),
            "sizes": _buckets(sizes.get(name, [])),
        }

    # per rank: all MPI time and the communication's (one pass over the rank x call sums)
    mpi: dict[str, float] = defaultdict(float)
    comm: dict[str, float] = defaultdict(float)
    p2p = coll = 0.0
    for (rank, op), t in time.items():
        kind = classes.get(op, "other")
        mpi[rank] += t
        comm[rank] += t if kind in COMM else 0.0
        p2p += t if kind in P2P else 0.0
        coll += t if kind == "coll" else 0.0
    walls = [end[r] for r in ranks]
    p2p_bytes = sum(v for (_, op), v in volume.items() if classes.get(op) == "send")
    coll_bytes = sum(v for (_, op), v in volume.items() if classes.get(op) == "coll")
    total_comm, total_wall = sum(comm.values()), sum(walls)
    data = {
        "format": FORMAT, "version": 1, "vendor": vendor, "library": f"{title} (trace)",
        "ranks": n, "source": f"{title} trace",
        "wall_time": _stats(walls), "mpi_time": _stats([mpi[r] for r in ranks]),
        "comm_time": _stats([comm[r] for r in ranks]),
        "features": {
            "p2p_time_share": p2p / total_comm if total_comm else 0.0,
            "p2p_bytes": p2p_bytes / n,
            "coll_time_share": coll / total_comm if total_comm else 0.0,
            "coll_bytes": coll_bytes / n,
            "comm_size": n,
            "comm_time_share": total_comm / total_wall if total_wall else 0.0,
            "mpi_time": sum(mpi.values()) / n,
        },
        "operations": operations, "cvars": [], "hints": [], "user": [], "pvars": [],
    }  # fmt: skip
    return Profile.from_json(data)


def _read_paje(path: str | Path) -> _Traced:
    """The MPI calls of the Paje trace in ``path``, each state pushed and popped."""
    codes: dict[str, str] = {}  # Paje event name -> its number in this file
    names: dict[str, str] = {}  # state value -> MPI call
    open_calls: dict[str, list[tuple[str, float, int | None]]] = defaultdict(list)
    t = _Traced()
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError as exc:
        raise ProfileError(f"cannot read trace {path}: {exc.strerror}") from None
    for line in lines:
        if line.startswith("%EventDef"):
            _, event, number = line.split()[:3]
            codes[number] = event
            continue
        if not line or line[0] in "%#":
            continue
        parts = line.split()
        event = codes.get(parts[0], "")
        if event == "PajeDefineEntityValue" and len(parts) >= 4:
            names[parts[1]] = parts[3].strip('"').replace("PMPI_", "MPI_", 1)
        elif event == "PajeCreateContainer" and len(parts) >= 6 and parts[5].startswith('"rank'):
            t.ranks.append(parts[2])
        elif event == "PajePushState" and len(parts) >= 5:
            size = int(parts[5]) if len(parts) > 5 and parts[5].isdigit() else None
            open_calls[parts[3]].append((names.get(parts[4], parts[4]), float(parts[1]), size))
        elif event == "PajePopState" and len(parts) >= 4 and open_calls[parts[3]]:
            rank = parts[3]
            name, start, size = open_calls[rank].pop()
            stop = float(parts[1])
            t.time[(rank, name)] += stop - start
            t.calls[(rank, name)] += 1
            t.end[rank] = max(t.end[rank], stop)
            if size is not None:
                t.sizes[name].append(size)
                t.volume[(rank, name)] += size
    return t
