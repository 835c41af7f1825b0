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
from functools import cache
from pathlib import Path
from typing import Any

from commtune import native
from commtune.profile._profile import FORMAT, Profile, ProfileError

# smpirun options that write the trace (put after smpirun, before the program)
TRACE_SIZES = "--cfg=tracing/smpi/display-sizes:yes"


def trace_args(path: str | Path) -> list[str]:
    return ["-trace", "-trace-file", str(path), TRACE_SIZES]


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


def from_paje(path: str | Path, classes: Mapping[str, str] | None = None) -> Profile:
    """The profile of the run traced in ``path``; ProfileError if it is not a trace."""
    classes = call_classes() if classes is None else classes
    codes: dict[str, str] = {}  # Paje event name -> its number in this file
    names: dict[str, str] = {}  # state value -> MPI call
    ranks: set[str] = set()
    open_calls: dict[str, list[tuple[str, float, int | None]]] = defaultdict(list)
    time: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    sizes: dict[str, list[int]] = defaultdict(list)
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
            ranks.add(parts[2])
        elif event == "PajePushState" and len(parts) >= 5:
            size = int(parts[5]) if len(parts) > 5 and parts[5].isdigit() else None
            open_calls[parts[3]].append((names.get(parts[4], parts[4]), float(parts[1]), size))
        elif event == "PajePopState" and len(parts) >= 4 and open_calls[parts[3]]:
            name, start, size = open_calls[parts[3]].pop()
            time[name] += float(parts[1]) - start
            calls[name] += 1
            if size is not None:
                sizes[name].append(size)
    if not ranks or not calls:
        raise ProfileError(f"{path}: no SMPI trace of MPI calls")
    n = len(ranks)
    operations: dict[str, Any] = {}
    for name, count in calls.items():
        seen = sizes.get(name) or []
        operations[name] = {
            "class": classes.get(name, "other"),
            "time": {"mean": time[name] / n},
            "calls": {"mean": count / n},
            "sizes": [{"min": min(seen), "max": max(seen), "calls": len(seen)}] if seen else [],
        }
    total = sum(v["time"]["mean"] for v in operations.values())
    data = {"format": FORMAT, "ranks": n, "features": {"mpi_time": total},
            "operations": operations, "cvars": [], "source": "SMPI trace"}  # fmt: skip
    return Profile.from_json(data)
