""":func:`check`: a plan refused before anything runs or is written, with the one line that
says what cannot work."""

from __future__ import annotations

import os
from dataclasses import replace

from commtune.errors import UsageError
from commtune.mpi import Vendor
from commtune.store import normalize_url
from commtune.strategies import get_strategy
from commtune.study import Gate, Plan
from commtune.trial import Objective


def check(plan: Plan) -> Plan:
    """``plan`` as the service runs it (its storage URL normalised), or a UsageError naming
    what cannot work, before anything runs or is written."""
    get_strategy(plan.strategy, dict(plan.strategy_options))  # a bad name or option
    twice = next((m for i, m in enumerate(plan.metrics) if m in plan.metrics[:i]), None)
    if twice is not None:
        raise UsageError(f"--metric {twice} is given twice")
    objectives = [Objective.parse(m) for m in plan.metrics]
    if plan.record and plan.replay:
        raise UsageError("--record and --replay: one or the other")
    if plan.record:
        _writable(plan.record)
    without = not plan.interposer or plan.replay
    if any(o.needs_profile for o in objectives[1:]) and without:
        raise UsageError("a profile: --metric needs the interposer (libcommtune)")
    if objectives[0].needs_profile and without:
        raise UsageError(f"--metric {plan.metric} needs the interposer (libcommtune)")
    if plan.twin is not None:
        clash = next((f for f, on in (("--as", plan.as_library), ("--gate strict", plan.gate
                      is Gate.STRICT), ("--record", plan.record), ("--replay", plan.replay))
                      if on), None)  # fmt: skip
        if clash:
            raise UsageError(f"--twin and {clash}: the twin's simulated study chooses the space "
                             "and the library, and --gate risk's rule decides")  # fmt: skip
    _check_runs(plan)
    real = Vendor.real()
    if plan.as_library is not None and plan.as_library not in real:
        raise UsageError(f"--as {plan.as_library}: one of {', '.join(real)}")
    if plan.strategy == "predict" and not plan.interposer:
        raise UsageError("--strategy predict needs the interposer (the reference's profile)")
    if (plan.trains or plan.train_from) and plan.strategy != "model":
        raise UsageError("--train and --train-from are for --strategy model (its training)")
    if plan.sbatch is not None and any(
        a.startswith(("--wait", "--parsable", "--output", "--error")) for a in plan.sbatch
    ):
        raise UsageError("--sbatch: commtune sets --wait, --parsable, --output and --error itself")
    return replace(plan, storage=normalize_url(plan.storage))


def _check_runs(plan: Plan) -> None:
    """``--max-runs`` leaves the reference its runs, the search one (unless a twin alone
    searched) and the verdict its first decision (``Plan.deciding_runs``). A ``--record``
    runs every configuration ``--repeats`` times whatever the budget: none to check."""
    if plan.max_runs is None or plan.record:
        return
    if not plan.decides:
        what = "the search 1 (--confirm 0: no verdict)"
    elif plan.gate is Gate.RISK:
        what = f"a first pass of the verdict at --risk {plan.risk:g} {plan.deciding_runs()}"
    else:
        what = f"the confirmation's first rounds {plan.deciding_runs()}"
    alone = plan.twin is not None and not (plan.knobs or plan.presets)
    least = plan.repeats + plan.deciding_runs() + (0 if alone else 1)
    if plan.max_runs < least:
        raise UsageError(
            f"--max-runs {plan.max_runs} leaves no run to decide: the reference takes "
            f"{plan.repeats}, {what}; at least {least}"
        )


def _writable(path: str) -> None:
    """A file can be written there (checked before hours of runs, not after)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"--record {path}: no directory {directory}")
    if not os.access(directory, os.W_OK):
        raise UsageError(f"--record {path}: {directory} is not writable")
