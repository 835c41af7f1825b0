"""Which MPI_T control variable, with which value, proves that a knob took.

A configuration reaches the library through environment variables (``OMPI_MCA_x`` is Open MPI's
variable ``x``; MPICH's ``MPIR_CVAR_X`` is its own name). libcommtune reads each back after
MPI_Init. Variables outside MPI_T (``UCX_*``) cannot be checked this way and are not listed.
MPICH 4.0 exposes its algorithm variables as plain integers: the intended value is then the
position of the name in the variable's own list of algorithms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from commtune.knobs import Knob, KnobType, Value, environment
from commtune.launch import Vendor
from commtune.profile._profile import Profile

_OMPI_PREFIX = "OMPI_MCA_"
_MPICH_PREFIX = "MPIR_CVAR_"


@dataclass(frozen=True)
class CvarIntent:
    knob: str  # the knob that set it (for a required variable: the knob that required it)
    value: str  # as libcommtune compares it


def cvar_name(env_name: str, vendor: Vendor) -> str | None:
    if vendor is Vendor.OPENMPI and env_name.startswith(_OMPI_PREFIX):
        return env_name.removeprefix(_OMPI_PREFIX)
    if vendor is Vendor.MPICH and env_name.startswith(_MPICH_PREFIX):
        return env_name
    return None


def intended_cvars(
    knobs: Sequence[Knob],
    config: Mapping[str, Value],
    vendor: Vendor,
    enumerators: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, CvarIntent]:
    """MPI_T name -> what it must read back, for every variable that applies ``config``.

    ``enumerators``: for MPICH, each algorithm variable's names in the library's own order.
    """
    by_env = {k.env: k for k in knobs}
    out: dict[str, CvarIntent] = {}
    for env_name, text in environment(knobs, config).items():
        name = cvar_name(env_name, vendor)
        if name is None:
            continue
        knob = by_env.get(env_name)
        if knob is None:  # a variable another knob requires
            owner = next(k for k in knobs if env_name in k.requires and k.name in config)
            out.setdefault(name, CvarIntent(owner.name, text))
            continue
        names = (enumerators or {}).get(knob.name, ())
        if vendor is Vendor.MPICH and knob.type is KnobType.CATEGORICAL and text in names:
            text = str(list(names).index(text))
        out[name] = CvarIntent(knob.name, text)
    return out


def not_applied(profile: Profile, intents: Mapping[str, CvarIntent]) -> dict[str, str]:
    """knob -> why it did not take, for every checked variable that did not read back right."""
    out: dict[str, str] = {}
    for check in profile.cvars:
        intent = intents.get(check.name)
        if intent is not None and not check.applied:
            out.setdefault(intent.knob, f"{check.name}: {check.reason}")
    return out
