"""The stale check as ``commtune check`` and ``run --study`` make it: what differs from the
study's installation and platform, and where something does (or asked), the study's
configuration beside the defaults here (``tune.recheck``), stored on the study; a proposal no
run has measured becomes what its check said."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from commtune.knobs import Knob, Value
from commtune.mpi import Installation
from commtune.progress import Progress
from commtune.store import Store
from commtune.study import (
    DEFAULTS,
    Acceptance,
    Gate,
    RiskFinding,
    acceptance_of,
    add_check,
    checks_of,
    installation_of,
    platform_of,
    set_acceptance,
)
from commtune.tune import MAX_ROUNDS, UNCHANGED, StaleCheck, differences, recheck

if TYPE_CHECKING:
    import optuna

    from commtune.trial import Executor


def stale_check(
    store: Store,
    study: optuna.Study,
    inst: Installation,
    command: list[str],
    knobs: list[Knob],
    config: Mapping[str, Value],
    extra: Mapping[str, str],
    timeout: float,
    ui: Progress,
    *,
    stored: bool,
    force: bool = False,
    proposal: bool = False,
    max_runs: int | None = None,
) -> StaleCheck:
    """What differs from the study's installation and platform, and, where something does
    (or ``force``), the configuration (with ``extra``: the variables only it sets) checked
    against the defaults here, stored on the study. ``stored``: a check stored for this
    installation and platform answers instead. ``proposal``: the study holds a proposal no
    run has measured (a prediction): it is checked in any case, by the tuner's rule at its
    default risk, and the study's verdict becomes what the runs said (accepted with its
    figures, or the defaults kept). ``max_runs``: the check's bound (None: MAX_ROUNDS
    pairs)."""
    from commtune.platform import Fingerprint

    key = platform_of(study)
    then = store.platform(key) if key else None
    now = Fingerprint.of(inst)
    diffs = differences(then, installation_of(study), now, inst)
    here = inst.to_json()
    if not diffs and not force and not proposal:
        return StaleCheck(UNCHANGED, [], here, now.key)
    if stored:
        for data in reversed(checks_of(study)):
            check = StaleCheck.from_json(data)
            if check.platform == now.key and check.installation.get("prefix") == here["prefix"]:
                return check
    defaults, configured = _executors(study, inst, command, knobs, extra)
    why = (
        "checking the proposal against the defaults" if proposal else "checking as asked (--force)"
    )
    ui.info(f"{inst.describe()} differs from study {study.study_name}'s: "
            + "; ".join(map(str, diffs)) if diffs else why)  # fmt: skip
    accepted = acceptance_of(study)
    if proposal and accepted is not None:  # the rule the check applies: the tuner's at its risk
        accepted = replace(accepted, gate=Gate.RISK, finding=RiskFinding(
            risk_limit=DEFAULTS.risk, tolerance=DEFAULTS.tolerance,
            min_gain=DEFAULTS.min_gain))  # fmt: skip
    pairs = MAX_ROUNDS if max_runs is None else max_runs // 2
    verdict, test, rounds, runs, decided = recheck(
        defaults, config, timeout, ui, configured=configured, rule=_rule(accepted),
        max_rounds=pairs)  # fmt: skip
    check = StaleCheck(verdict, diffs, here, store.save_platform(now),
                       test.speedup if test else None, test.interval if test else None,
                       rounds, runs, decided)  # fmt: skip
    add_check(study, check.to_json())
    if proposal and accepted is not None:
        _proposal_checked(study, accepted, check)
    return check


def _rule(accepted: Acceptance | None) -> tuple[float, float, float] | None:
    """The rule of the verdict checked, at its risk (None: the tuner's defaults, where it
    said none)."""
    found = accepted.finding if accepted is not None else None
    if isinstance(found, RiskFinding):
        return found.risk_limit, found.tolerance, found.min_gain
    return None


def _executors(
    study: optuna.Study,
    inst: Installation,
    command: list[str],
    knobs: list[Knob],
    extra: Mapping[str, str],
) -> tuple[Executor, Executor]:
    """The runs of a check: the defaults', and the configuration's (with ``extra``)."""
    from commtune.knobs import enumerators
    from commtune.launch import launcher_for
    from commtune.service._common import profiling
    from commtune.study import spec_of
    from commtune.trial import LocalExecutor, Objective

    launcher, objective = launcher_for(inst), Objective.parse(spec_of(study).metric)
    interposer, names = profiling(inst), enumerators(inst)
    defaults = LocalExecutor(launcher, command, knobs, objective, profiling=interposer,
                             enumerators=names)  # fmt: skip
    configured = LocalExecutor(launcher, command, knobs, objective, profiling=interposer,
                               enumerators=names, variables=extra)  # fmt: skip
    return defaults, configured


def _proposal_checked(study: optuna.Study, accepted: Acceptance, check: Any) -> None:
    """A proposal's verdict becomes what its check said (accepted with its figures, or the
    defaults kept): a proposal no more."""
    undecided = "" if check.decided else f" (undecided after {check.rounds} rounds)"
    reason = f"proposed, then checked against the defaults: {check.verdict}{undecided}"
    set_acceptance(study, replace(
        accepted, accepted=check.use_configuration, speedup=check.speedup, ci=check.ci,
        notes=replace(accepted.notes, proposal=False), reason=reason))  # fmt: skip
