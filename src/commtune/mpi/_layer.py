"""The layers a run really uses, as the library's own selection says (issue 95): its
point-to-point layer and transports, and the collective component that serves each call on
``MPI_COMM_WORLD``. A knob of a layer the run does not use is never searched
(:meth:`Layer.unread`).

Open MPI says what it selected when asked (``pml_base_verbose``, ``btl_base_verbose``,
``coll_base_verbose``): :func:`parse_ompi_selection` reads that output. Its collective
components are stacked by priority, each enabled one replacing the functions it provides
(``ompi/mca/coll/base/coll_base_comm_select.c``): the component serving a call is the
enabled one of the highest priority that provides it (``_PROVIDES``, read from each
component's module file, 4.1 and 5.0); a wrapper (``sync``, ``monitoring``,
``accelerator``) passes the call on.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

WORLD = "MPI_COMM_WORLD"
UCX_SAYS = {"UCX_LOG_LEVEL": "info"}  # UCX logs each endpoint's transports and devices

_BLOCKING = frozenset({
    "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw", "barrier",
    "bcast", "exscan", "gather", "gatherv", "reduce", "reduce_scatter", "reduce_scatter_block",
    "scan", "scatter", "scatterv"})  # fmt: skip
# What each component provides of the blocking calls (None: every one, as far as commtune
# knows); tuned leaves alltoallw, gatherv and scatterv to the one below it.
_PROVIDES: Mapping[str, frozenset[str] | None] = {
    "tuned": _BLOCKING - {"alltoallw", "gatherv", "scatterv"},
    "han": frozenset(
        {"allgather", "allgatherv", "allreduce", "barrier", "bcast", "gather", "reduce", "scatter"}
    ),
    "sm": frozenset({"allreduce", "barrier", "bcast", "reduce"}),
    "adapt": frozenset({"bcast", "reduce"}),
    "xhc": frozenset({"allreduce", "barrier", "bcast", "reduce"}),
    "acoll": frozenset(
        {"allgather", "allreduce", "alltoall", "barrier", "bcast", "gather", "reduce"}
    ),
    "basic": _BLOCKING,
    "libnbc": frozenset(),  # the nonblocking calls only
    "inter": frozenset(),  # intercommunicators
    "ftagree": frozenset(),
}
_WRAPPERS = frozenset({"sync", "monitoring", "accelerator", "cuda"})

_PID = re.compile(r"^\[[^\]]*?:(\d+)\] (.*)$")
_INIT = re.compile(r"select: initializing (\w+) component (\w+)")
_SELECTED = re.compile(r"select: component (\w+) selected")
_SUCCESS = re.compile(r"select: init of component (\w+) returned success")
_NEW_COMM = re.compile(r"coll:base:comm_select: new communicator: (\S+)")
_ENABLED = re.compile(r"coll:base:comm_select: selecting\s+(\w+), priority\s+(-?\d+), Enabled")


@dataclass(frozen=True)
class Layer:
    """What one run selected: ``p2p`` its point-to-point layer as the library names it
    (Open MPI's PML: ``pml ucx``, ``pml ob1``, ``pml cm``; MPICH's device: ``ch4:ucx``),
    ``transports`` under it (the BTLs, the MTL, UCX's transport/device per endpoint),
    and ``collectives``: on ``MPI_COMM_WORLD``, the enabled collective components with their
    priorities, lowest first."""

    p2p: str
    transports: tuple[str, ...] = ()
    collectives: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)  # what the layer's own tool says

    def serves(self, op: str) -> tuple[str, int] | None:
        """The component (and its priority) that serves blocking ``op`` on
        ``MPI_COMM_WORLD``; None where the selection was not read."""
        for name, priority in reversed(self.collectives):
            if name in _WRAPPERS:
                continue
            provides = _PROVIDES.get(name)
            if provides is None or op in provides:
                return name, priority
        return None

    def describe(self) -> str:
        """One line: ``point-to-point: pml ucx; collectives on MPI_COMM_WORLD: tuned (30)``."""
        over = f" over {', '.join(self.transports)}" if self.transports else ""
        parts = [f"point-to-point: {self.p2p}{over}"]
        if self.collectives:
            stack = ", ".join(f"{n} ({p})" for n, p in reversed(self.collectives))
            parts.append(f"collective components on {WORLD} by priority: {stack}")
        return "; ".join(parts + list(self.notes))

    def to_json(self) -> dict[str, Any]:
        serves = {op: s[0] for op in sorted(_BLOCKING) if (s := self.serves(op))}
        return {"p2p": self.p2p, "transports": list(self.transports),
                "collectives": [list(c) for c in self.collectives], "serves": serves}  # fmt: skip


def parse_ompi_selection(stderr: str) -> Layer | None:
    """The layer the first rank of an Open MPI run says it selected (``pml_base_verbose``,
    ``btl_base_verbose`` and ``coll_base_verbose`` output, each line ``[host:pid] ...``);
    None where no PML selection is in ``stderr``."""
    ranks: dict[str, list[str]] = {}
    for line in stderr.splitlines():
        match = _PID.match(line.strip())
        if match:
            ranks.setdefault(match.group(1), []).append(match.group(2))
    for lines in ranks.values():
        layer = _one_rank(lines)
        if layer is not None:
            return layer
    return None


def _one_rank(lines: list[str]) -> Layer | None:
    # Open MPI 5 initialises the BTLs inside pml ob1's selection: a selected component is
    # the framework's that initialised it, not the last one named
    framework, pml, btls, mtl = "", None, [], None
    started: dict[str, set[str]] = {}
    world: list[tuple[str, int]] = []
    comm = None
    for text in lines:
        if m := _INIT.search(text):
            framework = m.group(1)
            started.setdefault(framework, set()).add(m.group(2))
        elif (m := _SUCCESS.search(text)) and framework == "btl":
            btls.append(m.group(1))
        elif m := _SELECTED.search(text):
            if m.group(1) in started.get("pml", ()):
                pml = m.group(1)
            elif m.group(1) in started.get("mtl", ()):
                mtl = m.group(1)
        elif m := _NEW_COMM.search(text):
            comm = m.group(1)
        elif (m := _ENABLED.search(text)) and comm == WORLD:
            world.append((m.group(1), int(m.group(2))))
    if pml is None:
        return None
    transports = [f"mtl {mtl}"] if pml == "cm" and mtl else [f"btl {b}" for b in btls]
    world.sort(key=lambda c: c[1])
    return Layer(f"pml {pml}", tuple(transports) if pml != "ucx" else (), tuple(world))


def ucx_transports(stderr: str) -> tuple[str, ...]:
    """The transports and devices UCX chose for the run's endpoints, as it logs them at
    ``UCX_LOG_LEVEL=info`` (``ep_cfg[1]: tag(sysv/memory cma/memory)``), over every process
    (one rank may talk to its node only), first seen first."""
    found: dict[str, None] = {}
    for line in stderr.splitlines():
        match = _UCX_EP.search(line)
        if match is not None:
            for lane in match.group(2).split():
                found[f"UCX {lane}"] = None
    return tuple(found)


def ucx_unread(layer: Layer, knob: str) -> str | None:
    """Why a run whose UCX chose ``layer.transports`` does not read UCX variable ``knob``:
    a transport's own (``UCX_TCP_*``, ``UCX_RC_*``, ...) that none of its lanes uses; None
    where it is read or the lanes were not said."""
    lanes = {t.split()[1].split("/")[0] for t in layer.transports if t.startswith("UCX ")}
    if not lanes:
        return None
    for prefix, names in _UCX_TRANSPORT_KNOBS:
        if knob.startswith(prefix) and not any(n.startswith(names) for n in lanes):
            return (f"a variable of UCX's {prefix.removeprefix('UCX_').rstrip('_').lower()} "
                    f"transport; UCX chose {', '.join(sorted(lanes))} for this run")  # fmt: skip
    return None


# UCX variables of one transport: (prefix, the lane names that transport goes by)
_UCX_TRANSPORT_KNOBS = (
    ("UCX_TCP_", ("tcp",)),
    ("UCX_RC_", ("rc",)),
    ("UCX_DC_", ("dc",)),
    ("UCX_UD_", ("ud",)),
    ("UCX_CMA_", ("cma",)),
    ("UCX_POSIX_", ("posix",)),
    ("UCX_SYSV_", ("sysv",)),
    ("UCX_XPMEM_", ("xpmem",)),
    ("UCX_KNEM_", ("knem",)),
)


# UCX 1.13: "ep_cfg[1]: tag(sysv/memory cma/memory)"; 1.20: "intra-node cfg#1 tag(...)"
_UCX_EP = re.compile(r"\[[^\]]*?:(\d+)\s*:\d+\].*(?:ep_cfg\[\d+\]:|cfg#\d+)\s+\w+\(([^)]*)\)")
_UCX_VERSION = re.compile(r"UCX\s+INFO\s+Version (\S+) \(loaded from (\S+)\)")


def ucx_loaded(text: str) -> tuple[str, ...]:
    """Which UCX the run loaded, as UCX logs it at ``UCX_LOG_LEVEL=info`` (a library may
    carry a UCX of its own, not the one on PATH): one note, or none."""
    match = _UCX_VERSION.search(text)
    return (f"UCX {match.group(1)} from {match.group(2)}",) if match else ()


def with_program(command: Sequence[str], program: Sequence[str]) -> list[str] | None:
    """``command`` (a launch line) with its program and the program's arguments replaced by
    ``program``: every launcher option kept (hosts, ``--mca``, rank count), so that what runs
    selects the layers the program's run selects. The program is the first executable (a
    file, or a command on PATH) after the launcher that is not an option's value: one after
    a word that is not an option first (``-n 2 ./app``), else one after a flag
    (``--oversubscribe ./app``); an executable after an option that takes it
    (``-launcher-exec AGENT``) is passed over while a later one qualifies. None: none."""
    after_flag = None
    for i in range(1, len(command)):
        word, before = command[i], command[i - 1]
        if word.startswith("-") or (i >= 2 and command[i - 2] in _PAIRED):
            continue
        executable = os.path.isfile(word) and os.access(word, os.X_OK)
        if not (executable or (os.sep not in word and shutil.which(word))):
            continue
        if not before.startswith("-") or i == 1:
            return [*command[:i], *program]
        if after_flag is None and (executable or before in _FLAGS):
            after_flag = i
    return None if after_flag is None else [*command[:after_flag], *program]


# launcher options that take no value, after which the program may come
_FLAGS = frozenset({"--oversubscribe", "--allow-run-as-root", "--report-bindings", "-v",
                    "--verbose", "--tag-output", "--timestamp-output", "-q"})  # fmt: skip
_PAIRED = frozenset({"--mca", "-mca", "--gmca", "-gmca", "--prtemca", "--pmixmca"})
