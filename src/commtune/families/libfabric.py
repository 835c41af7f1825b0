"""libfabric, the fabric layer Intel MPI's ch4:ofi device (and Open MPI's ``mtl ofi``) runs
over: ``FI_*`` variables, found by ``fi_info -e`` of the libfabric the installation would use
(where the vendor keeps it: ``MPIVendor.fabric_info``)."""

from __future__ import annotations

import re

from commtune.families._family import Family, candidates, data, tool_output
from commtune.mpi import Installation, Variable

_FI_LINE = re.compile(r"^# (FI_[A-Z0-9_]+): (\w+)")
_FI_DEFAULT = re.compile(r"\(default:?\s*([^)]*)\)|Default:\s*(\S+)")


def parse_fi_info(text: str) -> dict[str, Variable]:
    """libfabric's variables from ``fi_info -e``: ``# FI_NAME: Type`` then a line of text
    ending with its default where it says one. Booleans and integers (``Integer``,
    ``size_t``) are typed; the rest is text."""
    out: dict[str, Variable] = {}
    name = kind = ""
    for line in text.splitlines():
        match = _FI_LINE.match(line)
        if match:
            name, word = match.groups()
            kind = {"Boolean": "bool", "Integer": "int", "size_t": "int"}.get(word, "string")
            out[name] = Variable(name, None, (), "", kind, mpit="")
            continue
        if name and line.startswith("# "):
            description = line[2:].strip()
            default = _FI_DEFAULT.search(description)
            said = next((g for g in default.groups() if g), "") if default else ""
            out[name] = Variable(name, _fi_literal(said.strip(), kind), (), description, kind,
                                 mpit="")  # fmt: skip
        name = ""
    return out


def _fi_literal(said: str, kind: str) -> str | None:
    """A default libfabric states as a value (16384, yes), else None: its text defaults are
    prose ("all available", "provider specific"), not values to set."""
    if kind == "int" and re.fullmatch(r"-?\d+", said):
        return said
    if kind == "bool" and said.lower() in ("0", "1", "no", "yes", "false", "true", "off", "on"):
        return said
    return None


def discover(installation: Installation) -> dict[str, Variable]:
    return parse_fi_info(tool_output(installation, installation.impl.fabric_info, ["-e"]))


def tools(installation: Installation) -> list[str]:
    return candidates(installation, installation.impl.fabric_info)


FAMILY = Family(
    name="libfabric",
    title="libfabric",
    catalog=data("libfabric"),
    prefixes=("FI_",),
    device="ofi",
    discover=discover,
    tools=tools,
)
