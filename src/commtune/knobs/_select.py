"""From the command line to a Space: ``--knob`` specs, presets, the default space.

``--knob NAME`` tunes a knob over its whole domain; ``--knob NAME=V1,V2`` restricts it to the
listed values. Values are separated by ``|`` when any contains a comma, as in
``--knob 'UCX_TLS=sm,self|tcp,self'``; a single value with a comma (``UCX_TLS=sm,self``) is
read as one value of a knob whose values contain commas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from commtune.errors import UsageError
from commtune.knobs._catalog import PRESETS
from commtune.knobs._discovery import KnobStatus
from commtune.knobs._knob import Dimension, Knob, Space, Value


def split_values(knob: Knob, text: str) -> list[str]:
    if "|" in text:
        return [v for v in text.split("|") if v]
    if any("," in str(c) for c in knob.choices) or "," not in text:
        return [text]
    return [v for v in text.split(",") if v]


def lookup(statuses: dict[str, KnobStatus], name: str, library: str) -> Knob:
    status = statuses.get(name)
    if status is None:
        close = [n for n in statuses if name.lower() in n.lower()][:3]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UsageError(f"unknown knob {name!r} for {library}{hint}")
    if not status.available:
        raise UsageError(f"knob {name} is not available here: {status.reason}")
    return status.knob


def parse_knob_spec(statuses: dict[str, KnobStatus], spec: str, library: str) -> Dimension:
    name, sep, values_text = spec.partition("=")
    knob = lookup(statuses, name.strip(), library)
    if not sep:
        return Dimension(knob)
    values: list[Value] = [knob.parse(v) for v in split_values(knob, values_text)]
    if not values:
        raise UsageError(f"knob {knob.name}: no value given after '='")
    return Dimension(knob, tuple(dict.fromkeys(values)))


def build_space(
    statuses: dict[str, KnobStatus],
    library: str,
    specs: Sequence[str] = (),
    presets: Sequence[str] = (),
) -> Space:
    """The space of ``--knob`` specs and ``--preset`` groups; the default space if neither."""
    dims: dict[str, Dimension] = {}
    for preset in presets:
        members = [s.knob for s in statuses.values() if preset in s.knob.presets and s.available]
        if preset not in PRESETS:
            raise UsageError(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
        if not members:
            raise UsageError(f"preset {preset}: none of its knobs is available in this {library}")
        for knob in members:
            dims.setdefault(knob.name, Dimension(knob))
    for spec in specs:
        dim = parse_knob_spec(statuses, spec, library)
        dims[dim.knob.name] = dim
    if not dims:
        dims = {
            s.knob.name: Dimension(s.knob)
            for s in statuses.values()
            if s.knob.default_space and s.available
        }
    return Space(library, tuple(dims.values()))


def space_from_json(
    library: str, entries: Sequence[Mapping[str, Any]], knobs: Mapping[str, Knob] | None = None
) -> Space:
    """The space a study or a model stored with ``Space.to_json()``; ``knobs``: the installed
    library's knobs (their choices are what the library has), else the catalog's."""
    from commtune.knobs._catalog import load_catalog

    catalog = knobs if knobs is not None else load_catalog(library)
    dims = []
    for entry in entries:
        if entry["knob"] not in catalog:
            raise UsageError(f"stored space names knob {entry['knob']!r}, unknown to {library}")
        values = tuple(entry["values"]) if entry.get("values") is not None else None
        dims.append(Dimension(catalog[entry["knob"]], values))
    return Space(library, tuple(dims))
