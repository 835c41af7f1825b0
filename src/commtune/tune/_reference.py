"""The study and its reference: the study opened or resumed (checked to be the same command
and space), and the library's defaults run ``repeats`` times by one worker while the others
wait: the first control level of the study (step 1 and 2 of ``_loop``'s flow)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from commtune import stats
from commtune.errors import UsageError
from commtune.families import recorded_prefixes
from commtune.study import (
    INTERRUPTED,
    Role,
    Source,
    StudyView,
    TrialRecord,
    acceptance_of,
    ask,
    raw_spec,
    set_installation,
    set_spec,
    spec_of,
)
from commtune.trial import stderr_summary
from commtune.tune._schedule import Live, status_line, tell
from commtune.tune._target import Context, Target
from commtune.tune._workers import POLL, REFERENCE

if TYPE_CHECKING:
    import optuna


class ReferenceFailed(UsageError):
    """The library's default configuration failed: the command itself is broken."""


# -- study bookkeeping ------------------------------------------------------------------------
def open_study(storage: optuna.storages.BaseStorage, target: Target) -> optuna.Study:
    """Create the study, or load it and check it was created for the same command and space."""
    import optuna

    try:
        study = optuna.load_study(study_name=target.study, storage=storage)
    except KeyError:
        try:
            study = optuna.create_study(
                study_name=target.study, storage=storage, direction="minimize"
            )
        except optuna.exceptions.DuplicatedStudyError:  # another worker made it just now
            study = optuna.load_study(study_name=target.study, storage=storage)
        else:
            set_spec(study, target.spec, target.platform)
            if target.installation is not None:
                set_installation(study, target.installation)
            return study
    for _ in range(50):  # a worker that made the study writes its spec just after
        if raw_spec(study.user_attrs):
            break
        time.sleep(0.2)
        study = optuna.load_study(study_name=target.study, storage=storage)
    stored = spec_of(study).to_json()
    verdict = acceptance_of(study)
    if verdict is not None and verdict.source is not Source.SEARCH:
        raise UsageError(
            f"study {target.study!r} holds a {verdict.source.value} result, not a search; "
            "use another --study name"
        )
    if stored != target.spec.to_json():
        diff = [k for k, v in target.spec.to_json().items() if stored.get(k) != v]
        raise UsageError(
            f"study {target.study!r} exists with a different {', '.join(diff)}; "
            "use another --study name"
        )
    return study


def inherited_mpi_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """MPI-related variables in the user's environment (they stay part of the baseline)."""
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith(recorded_prefixes())}


# -- running ----------------------------------------------------------------------------------
def _finished(study: optuna.Study) -> StudyView:
    """The study's finished trials (where the reference is looked for while waiting)."""
    from optuna.trial import TrialState

    return StudyView(study, (TrialState.COMPLETE,))


def run_reference(ctx: Context) -> TrialRecord:
    """The library's defaults, ``repeats`` times: the first control level of the study. One
    worker runs it; the others wait for it."""
    study, workers = ctx.study, ctx.workers
    while True:
        ref = _finished(study).reference()
        if ref is not None:
            return ref
        holder = workers.claim(REFERENCE, counted=True)
        if workers.mine(holder):
            break
        assert holder is not None
        if not workers.alive(holder.worker):
            workers.release(REFERENCE, worker=holder.worker)
            continue
        ctx.ui.info(f"worker {holder.worker} runs the reference; waiting for it")
        while (
            _finished(study).reference() is None
            and workers.claim(REFERENCE) == holder
            and workers.alive(holder.worker)
        ):
            time.sleep(POLL)
    try:
        return _reference_runs(ctx)
    except BaseException:
        workers.release(REFERENCE, worker=workers.me)  # the next worker (or start) runs it
        raise


def _reference_runs(ctx: Context) -> TrialRecord:
    study, plan = ctx.study, ctx.plan
    statistic = stats.statistic(plan.statistic)
    trial = ask(study)
    ctx.workers.bind(REFERENCE, trial.number)
    live = Live(trial, None, ctx.observer.run_done)
    live.write.role(Role.REFERENCE)
    live.write.config({})
    with ctx.ui.progress("reference (library defaults)", plan.repeats) as bar:
        try:
            for r in range(plan.repeats):
                if live.failure is not None:
                    break
                run = ctx.executor.run(None, plan.reference_timeout)
                live.record(run, f"{trial.number}.{r}", r)
                bar.advance(status=status_line(live, run))
        except BaseException:
            live.fail(live.failure or INTERRUPTED)
            tell(study, live, statistic)
            raise
    if live.failure is None:
        # The reference is its own block: its runs relative to their median.
        middle = stats.median([r.value for r in live.runs if r.value is not None])
        live.relate(lambda seq: middle)
    tell(study, live, statistic)
    if live.failure is not None:
        said = stderr_summary(live.runs[-1].stderr_tail) if live.runs else ""
        detail = f": {said}" if said else ""
        raise ReferenceFailed(
            f"the reference run (library defaults) failed with {live.failure}{detail}; "
            "the command itself does not work"
        )
    ref = StudyView(study).reference()
    assert ref is not None
    return ref
