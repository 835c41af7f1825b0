"""The knob catalog: data files per library (``data/<library>.json``) loaded into Knob objects.

The files hold what commtune knows about a knob (type, domain, default, step, presets, how it is
applied). What the *installed* library has is found by discovery (``_discovery.py``) and merged
in by :func:`installed_knobs`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from commtune import families
from commtune.errors import UsageError
from commtune.knobs._apply import APPLIERS, Apply
from commtune.knobs._knob import Knob, KnobType, version_in
from commtune.mpi import VENDOR_NAMES, Vendor

if TYPE_CHECKING:
    from commtune.mpi import MPIVendor

LIBRARIES = VENDOR_NAMES
# network: the transport between nodes (TCP limits, buffers, links, UCX's TCP and rails,
# libfabric's): on one node they do nothing, so no other preset holds them.
PRESETS = ("p2p", "collectives", "progress", "io", "network", "rma")


@cache
def load_catalog(library: str) -> dict[str, Knob]:
    """Every knob of ``library`` declared in the catalog, by name: its own
    (``data/<library>.json``), then those of each family it reads (``commtune.families``; a
    family of a layer gets its device as every knob's requirement, one the library names
    only (``MPIVendor.named_only``) no preset and no place in the default space)."""
    text = resources.files("commtune.knobs").joinpath("data", f"{library}.json").read_text()
    data = json.loads(text)
    prefix = data.get("env_prefix", "")
    out = {entry["name"]: _knob_from_json(entry, library, prefix) for entry in data["knobs"]}
    vendor = Vendor(library).impl
    for family in families.of(vendor):
        mine = prefix if family.env_prefix is None else family.env_prefix
        for entry in family.entries():
            knob = _knob_from_json(entry, library, mine)
            if family.device is not None:
                knob = replace(knob, requires_device=family.device)
            if family.name in vendor.named_only:
                knob = replace(knob, presets=(), default_space=False)
            if knob.name in out:
                raise UsageError(f"catalog {library}: knob {knob.name} of family "
                                 f"{family.name} is already the library's own")  # fmt: skip
            out[knob.name] = knob
    return out


def layer_places(library: str, family: str) -> dict[str, tuple[tuple[str, ...], bool]]:
    """Knob name -> (presets, in the default space) of a family ``library`` names only
    (``MPIVendor.named_only``), as its catalog has them: its knobs' places when the run's
    layer is that family's (``knobs.with_layer``)."""
    data = json.loads(resources.files("commtune.knobs").joinpath("data", f"{library}.json")
                      .read_text())  # fmt: skip
    for fam in families.of(Vendor(library).impl):
        if fam.name == family:
            mine = data.get("env_prefix", "") if fam.env_prefix is None else fam.env_prefix
            knobs = [_knob_from_json(e, library, mine) for e in fam.entries()]
            return {k.name: (k.presets, k.default_space) for k in knobs}
    return {}


def knob_from_json(entry: dict[str, Any], library: str) -> Knob:
    """A knob stored with a study's space (one made from a library's variable)."""
    return replace(_knob_from_json(entry, library, ""), adhoc=True)


def with_segments(knobs: Sequence[Knob], vendor: MPIVendor) -> list[Knob]:
    """``knobs`` and, for each collective's algorithm variable among them, the library's
    segment size variable of that collective (``MPIVendor.segment_knob``): an answer raced
    at a segment size (``pipeline@64K``) sets both, and a run or an export that applied the
    algorithm alone would run it as one segment."""
    out = list(knobs)
    for knob in knobs:
        op = knob.collective
        segment = vendor.segment_knob(op) if op else None
        if op is None or segment is None or vendor.algorithm_knob(op) != knob.name:
            continue
        catalog = load_catalog(knob.library)
        if segment in catalog and all(k.name != segment for k in out):
            out.append(catalog[segment])
    return out


def _knob_from_json(entry: dict[str, Any], library: str, prefix: str) -> Knob:
    how = Apply(entry.get("apply", Apply.ENV.value))
    if how not in APPLIERS:
        raise UsageError(
            f"catalog {library}: knob {entry['name']} is applied by {how.value!r}, "
            "which this version of commtune cannot apply yet"
        )
    bounds = tuple((b["versions"], b.get("low"), b.get("high")) for b in entry.get("bounds", ()))
    clauses = ([entry["versions"]] if entry.get("versions") else []) + [b[0] for b in bounds]
    for versions in clauses:
        try:
            version_in("0", versions)
        except ValueError as exc:
            raise UsageError(f"catalog {library}: knob {entry['name']}: {exc}") from None
    return Knob(
        name=entry["name"],
        library=library,
        type=KnobType(entry["type"]),
        default=entry["default"],
        description=entry["description"],
        env=entry.get("env", prefix + entry["name"]),
        presets=tuple(entry.get("presets", ())),
        low=entry.get("low"),
        high=entry.get("high"),
        step=entry.get("step", 1),
        choices=tuple(entry.get("choices", ())),
        requires=dict(entry.get("requires", {})),
        apply=how,
        default_space=entry.get("default_space", False),
        requires_device=entry.get("requires_device"),
        versions=entry.get("versions"),
        mpit=entry.get("mpit"),
        bounds=bounds,
        binding=entry.get("binding", False),
        words=tuple(entry.get("words", ())),
        any_size=entry.get("any_size", False),
        items=tuple(entry.get("items", ())),
        collective=entry.get("collective"),
    )
