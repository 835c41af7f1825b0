"""The tuning loop: reference, batches of proposals, confirmation.

Flow (each step commits to the storage before the next starts, so ``kill -9`` loses no
finished trial):

1. open or resume the study; trials a killed tuner left RUNNING become FAIL ("interrupted");
2. the reference: the library's defaults (no knob set), run ``repeats`` times; if it fails the
   command itself is broken and tuning stops;
3. batches: the strategy proposes ``batch_size`` configurations; the scheduler
   (:mod:`commtune.tune._schedule`) runs them with controls beside them and races their
   repeats; a failed run fails its trial; a configuration already measured is answered from
   its earlier trial, not rerun;
4. confirmation (:mod:`commtune.tune._confirm`): the best configurations and the default
   run again, interleaved; accepted only if faster beyond noise.

``max_runs`` bounds every run of the study; the search leaves the confirmation's first
rounds (``confirm`` times ``top + 1`` runs) to it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from commtune import stats
from commtune.errors import UsageError
from commtune.knobs import Space, Value
from commtune.progress import Progress
from commtune.strategies import distributions, get_strategy
from commtune.study import (
    INTERRUPTED,
    Role,
    Source,
    StudySpec,
    acceptance_of,
    config_key,
    config_of,
    fail_reason,
    record_fail_reason,
    role_of,
    run_values,
    run_walls,
    set_config,
    set_duplicate_of,
    set_fail_reason,
    set_role,
    set_spec,
    spec_of,
)
from commtune.trial import Executor, RunRecord, clean_shm, kill_leftovers
from commtune.tune._confirm import confirm
from commtune.tune._schedule import CONTROL_EVERY, Live, Scheduler, status_line, tell, tell_control
from commtune.tune._summary import TuneResult, summarize
from commtune.tune._train import train
from commtune.tune._trials import measured, reference_trial

if TYPE_CHECKING:
    import optuna

MIN_TIMEOUT = 5.0
MPI_ENV_PREFIXES = ("OMPI_MCA_", "OMPI_", "MPIR_CVAR_", "MPICH_", "HYDRA_", "UCX_", "PMIX_MCA_")


class ReferenceFailed(UsageError):
    """The library's default configuration failed: the command itself is broken."""


@dataclass
class TuneSettings:
    study: str
    spec: StudySpec  # its ``repeats`` is the cap of a configuration's runs
    space: Space
    strategy: str = "tpe"
    strategy_options: dict[str, str] = field(default_factory=dict)
    hints: list[dict[str, Value]] = field(default_factory=list)  # configurations to try early
    trials: int = 20
    timeout: float | None = None
    reference_timeout: float = 600.0
    confirm: int = 5  # first rounds of the confirmation (0: none)
    top: int = 3  # configurations the confirmation runs against the default
    max_runs: int | None = None  # every run of the study, controls and confirmation included
    seed: int | None = None
    # Controls beside the trials, and raced repeats (both False: the design before them,
    # every configuration run ``repeats`` times relative to the reference's median).
    controls: bool = True
    racing: bool = True
    control_every: int = CONTROL_EVERY  # trial runs between two control runs
    platform: str | None = None
    # Called after every recorded run of a trial (run index from 0): stores profiles, warns.
    on_run: Callable[[optuna.trial.BaseTrial, int, RunRecord], None] | None = None
    # Hints that need the reference run (a prediction from its profile): called once it is done.
    hints_from_reference: Callable[[optuna.trial.FrozenTrial], list[dict[str, Value]]] | None = None
    # The command at a training scale (``spec.scale``): runs the training before the search.
    executor_at: Callable[[Mapping[str, str]], Executor] | None = None

    def search_limit(self) -> int | None:
        """Runs the search may reach: ``max_runs`` less the confirmation's first rounds."""
        if self.max_runs is None:
            return None
        return self.max_runs - self.confirm * (self.top + 1)


# -- study bookkeeping ------------------------------------------------------------------------
def open_study(storage: optuna.storages.BaseStorage, settings: TuneSettings) -> optuna.Study:
    """Create the study, or load it and check it was created for the same command and space."""
    import optuna

    try:
        study = optuna.load_study(study_name=settings.study, storage=storage)
    except KeyError:
        study = optuna.create_study(
            study_name=settings.study, storage=storage, direction="minimize"
        )
        set_spec(study, settings.spec, settings.platform)
        return study
    stored = spec_of(study).to_json()
    verdict = acceptance_of(study)
    if verdict is not None and verdict.source is not Source.SEARCH:
        raise UsageError(
            f"study {settings.study!r} holds a {verdict.source.value} result, not a search; "
            "use another --study name"
        )
    if stored != settings.spec.to_json():
        diff = [k for k, v in settings.spec.to_json().items() if stored.get(k) != v]
        raise UsageError(
            f"study {settings.study!r} exists with a different {', '.join(diff)}; "
            "use another --study name"
        )
    return study


def recover(study: optuna.Study) -> int:
    """Mark trials left RUNNING by a killed tuner as failed; returns how many."""
    from optuna.trial import TrialState

    storage = study._storage
    n = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        record_fail_reason(study, trial, INTERRUPTED)
        storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        n += 1
    return n


def inherited_mpi_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """MPI-related variables in the user's environment (they stay part of the baseline)."""
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith(MPI_ENV_PREFIXES)}


# -- running ----------------------------------------------------------------------------------
def run_reference(
    study: optuna.Study, settings: TuneSettings, executor: Executor, ui: Progress
) -> optuna.trial.FrozenTrial:
    """The library's defaults, ``repeats`` times: the first control level of the study."""
    ref = reference_trial(study)
    if ref is not None:
        return ref
    statistic = stats.statistic(settings.spec.statistic)
    trial = study.ask()
    set_role(trial, Role.REFERENCE)
    set_config(trial, {})
    live = Live(trial, None, settings.on_run)
    with ui.progress("reference (library defaults)", settings.spec.repeats) as bar:
        try:
            for r in range(settings.spec.repeats):
                if live.failure is not None:
                    break
                run = executor.run(None, settings.reference_timeout)
                live.record(run, f"{trial.number}.{r}", r)
                bar.advance(status=status_line(live, run))
        except BaseException:
            live.failure = live.failure or INTERRUPTED
            set_fail_reason(trial, live.failure)
            tell(study, live, statistic)
            raise
    if live.failure is None:
        # The reference is its own block: its runs relative to their median.
        middle = stats.median([r.value for r in live.runs if r.value is not None])
        live.relate(lambda seq: middle)
    tell(study, live, statistic)
    if live.failure is not None:
        tail = live.runs[-1].stderr_tail.strip().splitlines() if live.runs else []
        detail = f": {tail[-1]}" if tail else ""
        raise ReferenceFailed(
            f"the reference run (library defaults) failed with {live.failure}{detail}; "
            "the command itself does not work"
        )
    ref = reference_trial(study)
    assert ref is not None
    return ref


def search(
    study: optuna.Study,
    settings: TuneSettings,
    executor: Executor,
    timeout: float,
    ui: Progress,
) -> None:
    import optuna

    strategy = get_strategy(settings.strategy, settings.strategy_options, settings.hints)
    space = settings.space
    dists = distributions(space)
    statistic = stats.statistic(settings.spec.statistic)
    remaining = settings.trials - len(measured(study))
    if remaining <= 0:
        return
    scheduler = Scheduler(
        study,
        executor,
        timeout,
        repeats=settings.spec.repeats,
        statistic=settings.spec.statistic,
        controls=settings.controls,
        racing=settings.racing,
        control_every=settings.control_every,
        limit=settings.search_limit(),
    )
    # configuration -> (trial number, its value; None if it failed)
    known: dict[str, tuple[int, float | None]] = {}
    for t in study.get_trials(deepcopy=False):
        # A configuration that failed is not run again either, unless it was interrupted.
        if (
            role_of(t) is Role.SEARCH
            and t.state.name in ("COMPLETE", "FAIL")
            and fail_reason(t) != INTERRUPTED
        ):
            known.setdefault(config_key(config_of(t)), (t.number, t.value))
    duplicates_in_a_row = 0
    start = scheduler.spent
    total = scheduler.estimate(remaining)
    with ui.progress(f"{settings.strategy} search", total) as bar:
        while remaining > 0:
            if strategy.exhausted(space, len(known)):
                ui.info(f"all {space.size()} configurations of the space are measured")
                break
            size = min(strategy.batch_size, remaining, space.size() - len(known))
            size = scheduler.affordable(size)
            if size <= 0:
                ui.info(f"the run budget (--max-runs {settings.max_runs}) is spent")
                break
            n_trials = len(study.get_trials(deepcopy=False))
            study.sampler = strategy.sampler(space, settings.seed, n_trials)
            batch: list[Live] = []
            in_batch: set[str] = set()
            while len(batch) < size:
                trial = study.ask(fixed_distributions=dists)
                config = {
                    d.knob.name: d.knob.from_internal(trial.params[d.knob.name])
                    for d in space.dimensions
                }
                set_config(trial, config)
                key = config_key(config)
                earlier = known.get(key)
                if earlier is None and key not in in_batch:
                    set_role(trial, Role.SEARCH)
                    batch.append(Live(trial, config, settings.on_run))
                    in_batch.add(key)
                    duplicates_in_a_row = 0
                    continue
                # Proposed again: answer from the earlier measurement, run nothing.
                set_role(trial, Role.DUPLICATE)
                if earlier is not None:
                    number, value = earlier
                    set_duplicate_of(trial, number)
                    if value is not None:
                        study.tell(trial, value)
                    else:
                        study.tell(trial, state=optuna.trial.TrialState.FAIL)
                else:
                    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                duplicates_in_a_row += 1
                if duplicates_in_a_row >= 200:
                    break
            if not batch:
                ui.info("the strategy proposes only configurations already measured; stopping")
                break
            try:
                scheduler.run_batch(batch, bar)
            except BaseException:
                scheduler.settle(batch)
                for live in batch:
                    if live.failure is None:
                        live.failure = INTERRUPTED
                        set_fail_reason(live.trial, INTERRUPTED)
                    tell(study, live, statistic)
                if scheduler.control is not None:
                    tell_control(study, scheduler.control)
                raise
            scheduler.settle(batch)
            if scheduler.control is not None:
                tell_control(study, scheduler.control)
            for live in batch:
                value = tell(study, live, statistic)
                known[config_key(live.config)] = (live.trial.number, value)
            remaining -= len(batch)
            bar.grow(scheduler.spent - start + scheduler.estimate(remaining))


def tune(settings: TuneSettings, storage: Any, executor: Executor, ui: Progress) -> TuneResult:
    """Run (or resume) a study to its budget, confirm the best, and return the result."""
    left = kill_leftovers()  # a tuner killed with kill -9 could not stop its run
    if left:
        ui.warn(f"killed {len(left)} process(es) that an earlier tuner left running")
        time.sleep(0.5)  # their shared memory is free once they are gone
    stale = clean_shm(until=time.time() - 60)  # left by killed jobs, e.g. an earlier tuner
    if stale:
        ui.info(f"removed {len(stale)} stale MPI shared-memory segment(s) from /dev/shm")
    study = open_study(storage, settings)
    interrupted = recover(study)
    if interrupted:
        ui.warn(f"{interrupted} trial(s) of an interrupted run are marked failed")
    ref = run_reference(study, settings, executor, ui)
    timeout = settings.timeout or max(MIN_TIMEOUT, 5 * stats.median(run_walls(ref)))
    ui.info(
        f"reference: {stats.median(run_values(ref)):.4g} (median of {len(run_values(ref))}); "
        f"run timeout {timeout:.1f} s"
    )
    if settings.hints_from_reference is not None:
        settings.hints = [*settings.hints_from_reference(ref), *settings.hints]
    if settings.executor_at is not None:
        train(study, settings, settings.executor_at, timeout, ui)
    search(study, settings, executor, timeout, ui)
    acceptance = confirm(
        study,
        executor,
        timeout,
        ui,
        rounds=settings.confirm,
        top=settings.top,
        statistic=settings.spec.statistic,
        max_runs=settings.max_runs,
    )
    return summarize(study, acceptance)
