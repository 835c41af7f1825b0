"""Find the values of a knob that make the installed library abort, once per platform.

A documented value may be rejected by the installed version (MPICH 4.0.2 aborts ``MPI_Init``
on ``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring``). Each categorical value in a space is tried
once, alone, with ``ct_probe init`` (init, one small call of each tuned collective, finalize);
the outcome is remembered in the storage per platform, and values that fail are dropped from the
knob's domain on that platform.
"""

from __future__ import annotations

from collections.abc import Callable

from commtune import native
from commtune.knobs import KnobType, Space, Value, apply
from commtune.launch import Launcher
from commtune.store import Store
from commtune.trial._process import run_process, stderr_summary

PROBE_RANKS = 2
PROBE_TIMEOUT = 60.0


def probe_space(
    space: Space,
    launcher: Launcher,
    store: Store,
    platform: str,
    progress: Callable[[str], None] | None = None,
) -> tuple[Space, dict[str, list[Value]]]:
    """The space without values that abort the library here, and those values per knob."""
    to_test = [
        (dim.knob, value)
        for dim in space.dimensions
        if dim.knob.type is KnobType.CATEGORICAL
        for value in dim.candidates()
        if value != dim.knob.default
    ]
    known = {dim.knob.name: store.knob_values(platform, dim.knob.name) for dim in space.dimensions}
    program: list[str] | None = None
    bad: dict[str, list[Value]] = {}
    for knob, value in to_test:
        status = known[knob.name].get(value)
        if status is None:
            if program is None:
                program = [str(native.build(launcher.installation, "tools/ct_probe.c")), "init"]
            if progress:
                progress(f"testing {knob.name}={value}")
            variables = apply([knob], {knob.name: value}, launcher.installation.impl).env
            plan = launcher.plan(launcher.command(PROBE_RANKS, program), variables)
            result = run_process(plan.argv, plan.env, PROBE_TIMEOUT)
            ok = result.returncode == 0
            said = stderr_summary(result.stderr_tail)
            reason = "" if ok else (said or f"exit status {result.returncode}")
            if result.timed_out:
                reason = f"hangs (timeout {PROBE_TIMEOUT:.0f} s)"
            store.record_knob_value(platform, knob.name, value, ok, reason[:500])
            status = (ok, reason)
        if not status[0]:
            bad.setdefault(knob.name, []).append(value)
    return space.drop_values(bad), bad
