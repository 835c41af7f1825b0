"""Which knobs did not take: the profile's MPI_T read-back against what the appliers intended
(``knobs.Applied.checks``: MPI_T name -> the knob and the value it must read back)."""

from __future__ import annotations

from collections.abc import Mapping

from commtune.knobs import Check
from commtune.profile._profile import Profile


def not_applied(profile: Profile, checks: Mapping[str, Check]) -> dict[str, str]:
    """knob -> why it did not take, for every checked variable that did not read back right."""
    out: dict[str, str] = {}
    for check in profile.cvars:
        intent = checks.get(check.name)
        if intent is not None and not check.applied:
            out.setdefault(intent.knob, f"{check.name}: {check.reason}")
    return out
