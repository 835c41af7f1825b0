"""UCX, the communication layer MPICH's ch4:ucx device (and Open MPI's ``pml ucx``) runs
over: ``UCX_*`` variables, found by ``ucx_info -c -f`` of the UCX the library loads (its own,
else PATH's), each with the syntax UCX states (memory units, transport lists)."""

from __future__ import annotations

import re

from commtune.families._family import Family, candidates, data, tool_output
from commtune.mpi import Installation, Variable

_UCX_LINE = re.compile(r"^(UCX_[A-Z0-9_]+)=(.*)$")


def parse_ucx_info(text: str) -> dict[str, Variable]:
    """UCX's variables from ``ucx_info -c -f``: each ``UCX_NAME=value`` after its comment,
    whose ``syntax:`` line gives the kind (``[A|B]`` and ``<y|n>`` are enumerations, numbers
    and memory units integers, the rest text)."""
    out: dict[str, Variable] = {}
    comment: list[str] = []
    for line in text.splitlines():
        if line.startswith("#"):
            comment.append(line.lstrip("#").strip())
            continue
        match = _UCX_LINE.match(line.strip())
        if match is None:
            comment = []
            continue
        name, value = match.groups()
        syntax = next((c.split(":", 1)[1].strip() for c in comment if c.startswith("syntax:")), "")
        words = [c for c in comment if c and not c.startswith("syntax:")]
        kind, enumerators = _ucx_kind(syntax)
        out[name] = Variable(name, value, enumerators, " ".join(words), kind, syntax=syntax)
        comment = []
    return out


def _ucx_kind(syntax: str) -> tuple[str, tuple[str, ...]]:
    choice = re.fullmatch(r"[\[<]([\w|-]+)[\]>]", syntax)
    if choice:
        return "string", tuple(choice.group(1).split("|"))
    if re.match(r"(unsigned )?(integer|long)\b|memory units|unsigned long:", syntax):
        return "int", ()
    return "string", ()


# How discovery reads what the tools print: raised when that reading changes, so that a cache
# filled by an earlier commtune is read again (2: MPICH's device-collectives enumeration).
READING = 2


def discover(installation: Installation) -> dict[str, Variable]:
    return parse_ucx_info(tool_output(installation, ("ucx_info",), ["-c", "-f"]))


def tools(installation: Installation) -> list[str]:
    return candidates(installation, ("ucx_info",))


FAMILY = Family(
    name="ucx",
    title="UCX",
    catalog=data("ucx"),
    prefixes=("UCX_",),
    device="ucx",
    discover=discover,
    tools=tools,
)
