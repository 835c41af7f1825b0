"""Which knobs did not take: the profile's MPI_T, MPI-IO hint and HDF5 property read-back
against what the appliers intended (``knobs.Applied.checks``: MPI_T name -> the knob and the
value it must read back; ``knobs.Applied.settings()``: hint or property key -> the same)."""

from __future__ import annotations

from collections.abc import Mapping

from commtune.knobs import Check
from commtune.profile._profile import Profile


def not_applied(
    profile: Profile, checks: Mapping[str, Check], hints: Mapping[str, Check] | None = None
) -> dict[str, str]:
    """knob -> why it did not take, for every checked variable that did not read back right
    and every MPI-IO hint (``hints``: key -> its knob) the library did not take."""
    out: dict[str, str] = {}
    for check in profile.cvars:
        intent = checks.get(check.name)
        if intent is not None and not check.applied:
            out.setdefault(intent.knob, f"{check.name}: {check.reason}")
    seen = {h.name: h for h in profile.hints}
    for key, intent in (hints or {}).items():
        hint = seen.get(key)
        if hint is None:
            out.setdefault(intent.knob, f"{key}: not in the profile (the program opened no file)")
        elif not hint.applied:
            kind = "HDF5 property" if hint.kind == "hdf5" else "hint"
            out.setdefault(intent.knob, f"{kind} {key}: {hint.reason}")
    return out
