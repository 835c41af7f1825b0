"""What the installed MPI library really has: knob names, enumerators and defaults.

Open MPI: ``ompi_info --parsable --all`` lists every MCA variable with its enumerators.
MPICH: MPI_T, through commtune's helper ``ct_probe cvars`` (its algorithm variables are plain
ints for MPI_T; the algorithm names appear only in the description, which the vendor parses:
``MPIVendor.algorithm_names``). Intel MPI: MPI_T too; most of its variables are ``MPIR_CVAR_*``
listed under their ``I_MPI_*`` names as well (``MPIVendor.aliases``). The variables of a layer
the library runs over (UCX under ch4:ucx, libfabric under ch4:ofi) are its family's tool's
(``commtune.families``).

Results are cached per installation in the build cache: discovery costs one ``ompi_info`` or
one MPI launch per machine, not per command.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from commtune import families, native
from commtune.errors import UsageError
from commtune.knobs._apply import Apply
from commtune.knobs._catalog import load_catalog
from commtune.knobs._knob import Knob, KnobType
from commtune.mpi import Installation, MPIVendor, Variable
from commtune.util import write_atomic


def parse_cvar_lines(
    text: str, known: dict[str, tuple[str, ...]], vendor: MPIVendor
) -> dict[str, Variable]:
    """Variables printed by ``ct_probe cvars``; ``known`` gives catalog choices per name; a
    variable without enumerators takes the algorithm names its description lists, where the
    vendor lists them there."""
    out: dict[str, Variable] = {}
    aliased: dict[str, Variable] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        enum = tuple(item[1] for item in entry.get("enum") or ())
        if not enum:
            enum = vendor.algorithm_names(
                entry["name"], entry["description"], known.get(entry["name"], ())
            )
        value = entry.get("value")
        kind = _MPIT_KINDS.get(str(entry.get("datatype")), "")
        var = Variable(
            entry["name"],
            None if value is None else str(value),
            enum,
            entry["description"],
            kind,
            entry.get("scope") != "constant",
            None if vendor.reads_back_text or kind != "string" else "",
        )
        out[var.name] = var
        for alias in vendor.aliases(var):  # set by another name, read back by this one
            names = enum or vendor.algorithm_names(alias, var.description, known.get(alias, ()))
            mpit = var.mpit if var.mpit == "" else var.name
            aliased[alias] = replace(var, name=alias, enumerators=names, mpit=mpit)
    # a variable MPI_T lists by its own name is that one, not another's alias
    return {**aliased, **out}


# MPI_T datatypes (as ct_probe names them) -> the kinds of a Variable
_MPIT_KINDS = {"int": "int", "unsigned": "int", "unsigned long": "int",
               "unsigned long long": "int", "count": "int", "char": "string",
               "double": "float", "bool": "bool"}  # fmt: skip


def _discover_uncached(installation: Installation) -> dict[str, Variable]:
    found = installation.impl.tool_variables(installation)
    if found is None:
        known = {k.name: k.choices for k in load_catalog(installation.vendor.value).values()}
        found = parse_cvar_lines(_probe_output(installation, "cvars"), known, installation.impl)
    for family in families.of(installation.impl):  # a layer it runs over: its variables too
        if family.runs_over(installation):
            layer = family.discover(installation)
            found.update({k: v for k, v in layer.items() if k not in found})
    return found


def _tools_stamp(installation: Installation) -> str:
    """What the discovery reads, as it stands: the library's launcher and the layers' tools
    found (path, size, time of change). A tool installed, upgraded or removed since (UCX's
    ``ucx_info`` after ``apt install ucx-utils``) makes another key: discovered again."""
    layers = families.of(installation.impl)
    tools = [installation.launcher, *(t for f in layers for t in f.tools(installation))]
    stamps = []
    for tool in tools:
        try:
            st = os.stat(tool)
        except OSError:
            continue
        stamps.append(f"{tool}:{st.st_size}:{int(st.st_mtime)}")
    return ";".join(stamps)


# How discovery reads what the tools print: raised when that reading changes, so that a cache
# filled by an earlier commtune is read again (2: MPICH's device-collectives enumeration; 3:
# the layers' tools read by their families).
READING = 3


def cache_path(installation: Installation) -> Path:
    """Where :func:`discover` keeps what it found for ``installation``: a key of the
    installation, its catalog and the tools it reads as they stand."""
    catalog = load_catalog(installation.vendor.value)
    known = json.dumps([sorted((k.name, k.choices) for k in catalog.values()),
                        _tools_stamp(installation), READING,
                        [f.name for f in families.of(installation.impl)]])  # fmt: skip
    digest = hashlib.sha256(known.encode()).hexdigest()[:10]
    key = f"{installation.vendor.value}-{installation.version}-{installation.launcher}-{digest}"
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", key)
    return native.cache_dir() / "discovery" / f"{safe}.json"


@functools.cache
def discover(installation: Installation) -> dict[str, Variable]:
    """Control variables of the installation, by name (cached per installation, per catalog
    and per state of the tools read: the catalog's choices help read the library's
    descriptions, so a catalog that gains a knob reads them again; a layer's tool installed
    or changed since is read)."""
    path = cache_path(installation)
    if path.exists():
        data = json.loads(path.read_text())
        return {name: Variable.from_json(name, v) for name, v in data.items()}
    found = _discover_uncached(installation)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(  # a temporary file of this process's own: two may fill the cache at once
        path,
        json.dumps({v.name: v.to_json() for v in found.values()}),
    )
    return found


@dataclass(frozen=True)
class KnobStatus:
    """A catalog knob on this installation: present or not, with its domain as installed."""

    knob: Knob
    available: bool
    reason: str = ""


def enumerators(installation: Installation) -> dict[str, tuple[str, ...]]:
    """Each variable's enumerators in the library's own order (what MPI_T reads back)."""
    return {name: var.enumerators for name, var in discover(installation).items()}


def catalog_statuses(library: str, version: str | None = None) -> dict[str, KnobStatus]:
    """Every catalog knob of ``library`` without an installation to ask (recorded
    measurements): each available that the library at ``version`` has (None: every one)."""
    out = {}
    for name, knob in load_catalog(library).items():
        ok = version is None or knob.in_version(version)
        out[name] = KnobStatus(knob, ok, "" if ok else f"not in {library} {version}")
    return out


def installed_knobs(installation: Installation) -> dict[str, KnobStatus]:
    """Every catalog knob of the installation's library, checked against what it really has.

    Categorical domains become the catalog's values that the library lists (Open MPI
    enumerators, MPICH description), plus values it lists that the catalog does not know.
    Values that abort ``MPI_Init`` are removed later, by probing (``trial/_probe.py``).
    """
    catalog = load_catalog(installation.vendor.value)
    variables = discover(installation)
    out = {}
    for name, knob in catalog.items():
        if not knob.in_version(installation.version):
            title = installation.vendor.title
            reason = f"{title} {installation.version} has no {name} ({title} {knob.versions} has)"
            out[name] = KnobStatus(knob, False, reason)
            continue
        if knob.requires_device is not None:
            ok = knob.requires_device in installation.device
            reason = "" if ok else f"needs the {knob.requires_device} device"
            var = variables.get(name)
            out[name] = KnobStatus(layer_domain(knob, var) if var else knob, ok, reason)
            continue
        if knob.apply in (Apply.INFO, Apply.HDF5, Apply.LAUNCH):
            # a hint or an HDF5 property: found at run time, in the program's own MPI-IO or
            # HDF5, and read back per run (a program without them reports them unchecked);
            # a launcher option: every launcher of the family has it
            out[name] = KnobStatus(knob, True)
            continue
        var = variables.get(name)
        if var is None:
            out[name] = KnobStatus(knob, False, f"{installation.describe()} has no such variable")
            continue
        knob = knob.at_version(installation.version)
        own = integer_value(var.value)
        if knob.type in (KnobType.INT, KnobType.LOG2) and own is not None:
            # the library's own default (MPICH 5's queue cell is 8 KiB, 4.0's 68 KiB): the
            # reference runs set it, and a default another version has may abort this one
            knob = replace(knob, default=own)
        if knob.type is KnobType.CATEGORICAL and var.enumerators:
            listed = set(var.enumerators)
            if installation.impl.keeps_unlisted_choices:
                # documented values that this version may reject: kept for probing
                known = list(knob.choices)
            else:
                known = [c for c in knob.choices if c in listed or c == knob.default]
            extra = [e for e in var.enumerators if e not in knob.choices]
            knob = replace(knob, choices=tuple(known + extra))
        out[name] = KnobStatus(knob, True)
    return out


_UCX_ITEM = re.compile(r"(?:^|\s)- ([\w/]+)\s*:")


def layer_domain(knob: Knob, var: Variable) -> Knob:
    """``knob`` taking what the layer's own tool says its variable takes (``ucx_info``'s
    syntax: memory units take any size, "inf" and "auto"; a transport list takes the
    transports and aliases it describes), beside what the catalog lists."""
    syntax = var.syntax
    if syntax.startswith("memory units") and knob.type in (KnobType.INT, KnobType.LOG2):
        words = [w for w in ("inf", "auto") if f'"{w}"' in syntax]
        return replace(knob, any_size=True,
                       words=tuple(dict.fromkeys([*knob.words, *words])))  # fmt: skip
    if syntax.startswith("comma-separated list") and knob.type is KnobType.CATEGORICAL:
        described = [w for group in _UCX_ITEM.findall(var.description) for w in group.split("/")]
        extra = ["all"] if '"all"' in syntax else []
        return replace(knob, items=tuple(dict.fromkeys([*knob.items, *described, *extra])))
    return knob


def integer_value(text: str | None) -> int | None:
    """``text`` as the integer it writes (``4096``, ``0x10``), else None (``auto``, none)."""
    try:
        return int(text or "", 0)
    except ValueError:
        return None


def _probe_output(installation: Installation, mode: str) -> str:
    """What ``ct_probe MODE`` (cvars | pvars) prints on one rank of the installation."""
    probe = native.build(installation, "tools/ct_probe.c")
    argv = installation.command(1, [str(probe), mode])
    done = subprocess.run(
        argv,
        capture_output=True,
        encoding="utf-8",
        errors="replace",  # descriptions in Latin-1 ("Intel(R)" as one byte)
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        env=installation.tool_env(),
    )
    if done.returncode != 0:
        raise UsageError(f"cannot list the MPI_T variables of {installation.describe()}")
    return done.stdout


def list_mpit(installation: Installation, performance: bool = False) -> list[dict[str, object]]:
    """Every MPI_T control (or performance) variable of the installation, as ``ct_probe``
    prints it after MPI_Init: name, datatype, scope or class, binding, value, enum items,
    description."""
    text = _probe_output(installation, "pvars" if performance else "cvars")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]
