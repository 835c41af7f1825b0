"""From the command line to a Space: ``--knob`` specs, presets, the default space.

``--knob NAME`` tunes a knob over its whole domain; ``--knob NAME=V1,V2`` restricts it to the
listed values. Values are separated by ``|`` when any contains a comma, as in
``--knob 'UCX_TLS=sm,self|tcp,self'``; a single value with a comma (``UCX_TLS=sm,self``) is
read as one value of a knob whose values contain commas.

A variable of the installed library that the catalog does not hold is a knob too
(:func:`variable_knob`): its domain comes from the library (an enumeration is categorical, a
boolean is a boolean); an integer takes the user's values (``NAME=1,2,4``) or a range
(``NAME=1..64`` by one, ``NAME=4k..1M`` by powers of two); a string, the user's values. Where
the library states no value as its default (UCX's "auto", libfabric's "provider specific"),
the default is :data:`UNSET`: the reference runs leave the variable unset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from commtune import families
from commtune.errors import UsageError
from commtune.knobs._apply import UNSET, Apply
from commtune.knobs._catalog import PRESETS
from commtune.knobs._discovery import KnobStatus, integer_value
from commtune.knobs._knob import Dimension, Knob, KnobType, Space, Value
from commtune.mpi import Variable, Vendor
from commtune.util import parse_size

RANGE_VALUES = 256  # a range stepping by one may hold at most this many values


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


def parse_knob_spec(
    statuses: dict[str, KnobStatus],
    spec: str,
    library: str,
    variables: Mapping[str, Variable] | None = None,
) -> Dimension:
    """``NAME[=VALUES]`` as a dimension: a catalog knob, else (``variables``: what the
    installed library reports) a variable of the library (:func:`variable_knob`), set by
    the environment variable its vendor or its family names (``families.env_name``)."""
    name, sep, values_text = spec.partition("=")
    name = name.strip()
    if name not in statuses and variables is not None and name in variables:
        env = families.env_name(Vendor(library).impl, name)
        return variable_knob(variables[name], library, env, values_text if sep else None)
    knob = lookup(statuses, name, library)
    if not sep:
        return Dimension(knob)
    values: list[Value] = [knob.parse(v) for v in split_values(knob, values_text)]
    if not values:
        raise UsageError(f"knob {knob.name}: no value given after '='")
    return Dimension(knob, tuple(dict.fromkeys(values)))


def variable_knob(var: Variable, library: str, env: str, values_text: str | None) -> Dimension:
    """A dimension of a variable the installed library reports and the catalog does not
    hold; see the module docstring. UsageError for a constant, or values it cannot take."""
    where = f"{var.name} ({library}'s own variable, not in commtune's catalog)"
    if not var.settable:
        raise UsageError(f"{where} is a constant of this build: it cannot be set")

    def make(kind: KnobType, default: Value, **domain: Any) -> Knob:
        description = var.description or f"{library} variable {var.name}"
        return Knob(var.name, library, kind, default, description, env, apply=Apply.ENV,
                    adhoc=True, mpit=var.mpit, **domain)  # fmt: skip

    given = [v.strip() for v in (values_text or "").split(",") if v.strip()]
    if var.kind == "bool" or set(var.enumerators) in ({"false", "true"}, {"0", "1"}):
        knob = make(KnobType.BOOL, UNSET if var.value is None else _truthy(var.value))
    elif var.enumerators:
        default = var.value if var.value in var.enumerators else var.enumerators[0]
        knob = make(KnobType.CATEGORICAL, default, choices=var.enumerators)
    elif var.kind == "int":
        return _integer_dimension(var, make, (values_text or "").strip(), where)
    elif not given:
        raise UsageError(f"{where} takes text: give its values ({var.name}=A,B)")
    else:
        default = var.value or UNSET
        knob = make(KnobType.CATEGORICAL, default, choices=tuple(dict.fromkeys([default, *given])))
    values = tuple(dict.fromkeys(knob.parse(v) for v in given)) or None
    return Dimension(knob, values)


def _integer_dimension(
    var: Variable, make: Callable[..., Knob], text: str, where: str
) -> Dimension:
    if not text:
        raise UsageError(
            f"{where} is an integer: give its values ({var.name}=1,2,4) or a range "
            f"({var.name}=1..64, or {var.name}=4k..1M by powers of two)"
        )
    own = integer_value(var.value)  # "auto", or none stated: the reference leaves it unset
    default: Value = UNSET if own is None else own
    try:
        if ".." not in text:
            values = tuple(dict.fromkeys(_size(v) for v in text.split(",") if v.strip()))
            knob = make(KnobType.INT, default, low=min(values), high=max(values))
            return Dimension(knob, values)
        low_text, _, high_text = text.partition("..")
        low, high = _size(low_text), _size(high_text)
        if low >= high:
            raise ValueError(f"the range {text} is empty")
        powers = all(v > 0 and v & (v - 1) == 0 for v in (low, high))
        sized = any(t.strip()[-1:].lower() in ("k", "m", "g", "t") for t in (low_text, high_text))
        if powers and (sized or high - low + 1 > RANGE_VALUES):
            return Dimension(make(KnobType.LOG2, default, low=low, high=high))
        if high - low + 1 > RANGE_VALUES:
            raise ValueError(
                f"the range {text} holds {high - low + 1} values: give a list, or powers of "
                "two with a size suffix (4k..1M)"
            )
        return Dimension(make(KnobType.INT, default, low=low, high=high))
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a whole number (4096, 4k, 1M)") from None


def _truthy(text: str | None) -> bool:
    return (text or "").strip().lower() in ("1", "true", "yes", "on")


def build_space(
    statuses: dict[str, KnobStatus],
    library: str,
    specs: Sequence[str] = (),
    presets: Sequence[str] = (),
    variables: Mapping[str, Variable] | None = None,
    across_nodes: bool = False,
) -> Space:
    """The space of ``--knob`` specs and ``--preset`` groups; the default space if neither:
    the catalog's default knobs, or, for ranks on different nodes (``across_nodes``), the
    network transport's knobs and the default collective ones (the shared-memory knobs of
    the default space do nothing between nodes)."""
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
        dim = parse_knob_spec(statuses, spec, library, variables)
        dims[dim.knob.name] = dim
    if not dims:
        dims = {s.knob.name: Dimension(s.knob) for s in statuses.values()
                if s.available and _default(s.knob, across_nodes)}  # fmt: skip
    return Space(library, tuple(dims.values()))


def _default(knob: Knob, across_nodes: bool) -> bool:
    if not across_nodes:
        return knob.default_space
    return "network" in knob.presets or (knob.default_space and "collectives" in knob.presets)


def space_from_json(
    library: str, entries: Sequence[Mapping[str, Any]], knobs: Mapping[str, Knob] | None = None
) -> Space:
    """The space a study or a model stored with ``Space.to_json()``; ``knobs``: the installed
    library's knobs (their choices are what the library has), else the catalog's."""
    from commtune.knobs._catalog import knob_from_json, load_catalog

    catalog = knobs if knobs is not None else load_catalog(library)
    dims = []
    for entry in entries:
        if entry.get("definition"):
            knob = catalog.get(entry["knob"]) or knob_from_json(entry["definition"], library)
        elif entry["knob"] in catalog:
            knob = catalog[entry["knob"]]
        else:
            raise UsageError(f"stored space names knob {entry['knob']!r}, unknown to {library}")
        values = tuple(entry["values"]) if entry.get("values") is not None else None
        dims.append(Dimension(knob, values, entry.get("baseline")))
    return Space(library, tuple(dims))
