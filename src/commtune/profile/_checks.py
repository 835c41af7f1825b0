"""Which knobs did not take: the profile's MPI_T, MPI-IO hint and HDF5 property read-back
against what the appliers intended (``knobs.Applied.checks``: MPI_T name -> the knob and the
value it must read back; ``knobs.Applied.settings()``: hint or property key -> the same), and
the ranks' CPU sets against the bindings asked (``knobs.Applied.bindings``)."""

from __future__ import annotations

from collections.abc import Mapping

from commtune.knobs import Check
from commtune.profile._profile import Profile


def not_applied(
    profile: Profile,
    checks: Mapping[str, Check],
    hints: Mapping[str, Check] | None = None,
    bindings: Mapping[str, Check] | None = None,
) -> dict[str, str]:
    """knob -> why it did not take, for every checked variable that did not read back right,
    every MPI-IO hint (``hints``: key -> its knob) the library did not take, and every
    binding (``bindings``: knob -> its value) the ranks' CPU sets contradict."""
    out: dict[str, str] = {}
    for binding in (bindings or {}).values():
        problem = binding_problem(binding.value, profile.cpusets)
        if problem is not None:
            out.setdefault(binding.knob, problem)
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


# Bindings whose CPU sets say whether they took: each rank on part of the CPUs, or each on all.
BOUND = ("core", "hwthread")
UNBOUND = ("none", "node")


def binding_problem(value: str, cpusets: list[frozenset[int]]) -> str | None:
    """Why the ranks' CPU sets contradict binding ``value`` (``core``: each rank on part of
    the CPUs the ranks have; ``none``: each on all of them), or None (they agree, or the
    value is one whose CPU sets say nothing on this machine: numa, socket, the default)."""
    if value not in BOUND + UNBOUND:
        return None
    if not cpusets or not all(cpusets):
        return f"binding {value}: the ranks reported no CPU sets"
    every = frozenset().union(*cpusets)
    sets = ", ".join(_ranges(s) for s in cpusets)
    if value in BOUND and any(s == every for s in cpusets) and len(every) > 1:
        return f"binding {value}: a rank runs on every CPU ({sets})"
    if value in UNBOUND and any(s != every for s in cpusets):
        return f"binding {value}: the ranks are bound ({sets})"
    return None


def _ranges(cpus: frozenset[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))
