"""Knob families: the variables that are not one library's own, each declared once in a module
of its own (the contract: ``_family.py``). The registry below is the one list: a vendor names
the families it reads (``MPIVendor.families``); the catalog, discovery, the recorded
environment and the export formats ask it.

Add a family: a module with its ``FAMILY`` (catalog data in ``data/<name>.json``), a line in
``BUILT_IN``, its name in the ``families`` of each vendor that reads it. A site's own family
(or a test's) is added at run time with :func:`register`.
"""

from __future__ import annotations

from commtune.families import hdf5, libfabric, ompio, romio, ucx
from commtune.families._family import Export, Family, Format, candidates, tool_output
from commtune.mpi import ENV_PREFIXES, MPIVendor, Vendor

BUILT_IN = (romio.FAMILY, ompio.FAMILY, hdf5.FAMILY, ucx.FAMILY, libfabric.FAMILY)
_REGISTRY: dict[str, Family] = {family.name: family for family in BUILT_IN}


def register(family: Family) -> None:
    """Adds ``family`` to the registry (a vendor reads it once it names it); replaces one of
    the same name."""
    _REGISTRY[family.name] = family


def unregister(name: str) -> None:
    """Removes a family :func:`register` added (a built-in one stays)."""
    if name not in {f.name for f in BUILT_IN}:
        _REGISTRY.pop(name, None)


def registered() -> tuple[Family, ...]:
    """Every family, built-in first."""
    return tuple(_REGISTRY.values())


def of(vendor: MPIVendor) -> tuple[Family, ...]:
    """The families ``vendor`` reads, in its order; KeyError names one the registry lacks."""
    return tuple(_REGISTRY[name] for name in vendor.families)


def recorded_prefixes() -> tuple[str, ...]:
    """The prefixes of every variable a library or a family it reads takes: what a study
    records of the user's environment, since they change what is measured."""
    own = [p for family in registered() for p in family.prefixes]
    return tuple(dict.fromkeys([*ENV_PREFIXES, *own]))


def env_name(vendor: MPIVendor, variable: str) -> str:
    """The environment variable that sets ``variable`` (as discovery names it): a family's
    own name where one of the vendor's families has its prefix, else the vendor's rule."""
    if any(variable.startswith(f.prefixes) for f in of(vendor) if f.prefixes):
        return variable
    return vendor.env_name(variable)


def formats(vendor: MPIVendor) -> tuple[str, ...]:
    """Every export format a study of ``vendor``'s library has: the base ones it reads, those
    of its families, its own."""
    mine = set(vendor.families)
    carried = [f.name for family in registered() for f in family.formats
               if mine.intersection(f.families)]  # fmt: skip
    return tuple(dict.fromkeys([*vendor.base_formats, *carried, *vendor.export_formats]))


def report_formats(vendor: MPIVendor) -> tuple[str, ...]:
    """The files a study's report shows for ``vendor``: its shell lines, its own formats, its
    families' (but those that repeat another's settings); JSON is the report's own data."""
    carried = [f for f in formats(vendor) if (found := format_named(f)) and found.in_report]
    base = [f for f in vendor.base_formats if f != "json"]
    return tuple(dict.fromkeys([*base, *vendor.export_formats, *carried]))


def format_named(name: str) -> Format | None:
    """The family format called ``name`` (None: a base or a vendor's own format)."""
    return next((f for family in registered() for f in family.formats if f.name == name), None)


def all_formats() -> tuple[str, ...]:
    """Every format any library has (``--format``'s choices)."""
    return tuple(dict.fromkeys(f for v in Vendor for f in formats(v.impl)))


__all__ = [
    "BUILT_IN",
    "Export",
    "Family",
    "Format",
    "all_formats",
    "candidates",
    "env_name",
    "format_named",
    "formats",
    "of",
    "recorded_prefixes",
    "register",
    "registered",
    "report_formats",
    "tool_output",
    "unregister",
]
