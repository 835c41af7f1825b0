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
from commtune.mpi import ENV_PREFIXES
from commtune.progress import Progress
from commtune.store import Claim
from commtune.strategies import distributions, get_strategy
from commtune.study import (
    INTERRUPTED,
    Acceptance,
    Role,
    Source,
    StudySpec,
    acceptance_of,
    ask,
    config_key,
    config_of,
    fail_reason,
    raw_spec,
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
from commtune.trial import Executor, RunRecord, clean_shm, kill_leftovers, stderr_summary
from commtune.tune._confirm import confirm
from commtune.tune._schedule import CONTROL_EVERY, Live, Scheduler, status_line, tell, tell_control
from commtune.tune._summary import TuneResult, summarize
from commtune.tune._train import train, training_done
from commtune.tune._trials import best_trials, measured, reference_trial
from commtune.tune._workers import CONFIRM, POLL, REFERENCE, TRAINING, Workers, config_claim

if TYPE_CHECKING:
    import optuna

MIN_TIMEOUT = 5.0


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
        try:
            study = optuna.create_study(
                study_name=settings.study, storage=storage, direction="minimize"
            )
        except optuna.exceptions.DuplicatedStudyError:  # another worker made it just now
            study = optuna.load_study(study_name=settings.study, storage=storage)
        else:
            set_spec(study, settings.spec, settings.platform)
            return study
    for _ in range(50):  # a worker that made the study writes its spec just after
        if raw_spec(study.user_attrs):
            break
        time.sleep(0.2)
        study = optuna.load_study(study_name=settings.study, storage=storage)
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


def inherited_mpi_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """MPI-related variables in the user's environment (they stay part of the baseline)."""
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES)}


# -- running ----------------------------------------------------------------------------------
def run_reference(
    study: optuna.Study,
    settings: TuneSettings,
    executor: Executor,
    ui: Progress,
    workers: Workers | None = None,
) -> optuna.trial.FrozenTrial:
    """The library's defaults, ``repeats`` times: the first control level of the study. One
    worker runs it; the others wait for it."""
    workers = workers or Workers.solo(study.study_name)
    while True:
        ref = reference_trial(study)
        if ref is not None:
            return ref
        holder = workers.claim(REFERENCE, counted=True)
        if workers.mine(holder):
            break
        assert holder is not None
        if not workers.alive(holder.worker):
            workers.release(REFERENCE, worker=holder.worker)
            continue
        ui.info(f"worker {holder.worker} runs the reference; waiting for it")
        while (
            reference_trial(study) is None
            and workers.claim(REFERENCE) == holder
            and workers.alive(holder.worker)
        ):
            time.sleep(POLL)
    try:
        return _reference_runs(study, settings, executor, ui, workers)
    except BaseException:
        workers.release(REFERENCE, worker=workers.me)  # the next worker (or start) runs it
        raise


def _reference_runs(
    study: optuna.Study,
    settings: TuneSettings,
    executor: Executor,
    ui: Progress,
    workers: Workers,
) -> optuna.trial.FrozenTrial:
    statistic = stats.statistic(settings.spec.statistic)
    trial = ask(study)
    workers.bind(REFERENCE, trial.number)
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
        said = stderr_summary(live.runs[-1].stderr_tail) if live.runs else ""
        detail = f": {said}" if said else ""
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
    workers: Workers | None = None,
) -> None:
    """Batches of proposals to the study's budget, shared with the study's other workers:
    each configuration is claimed before it runs (:mod:`commtune.tune._workers`)."""
    import optuna

    workers = workers or Workers.solo(study.study_name)
    workers.sync(study)
    strategy = get_strategy(settings.strategy, settings.strategy_options, settings.hints)
    space = settings.space
    dists = distributions(space)
    statistic = stats.statistic(settings.spec.statistic)
    remaining = settings.trials - workers.counted()
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
    duplicates_in_a_row = 0
    start = scheduler.spent
    total = scheduler.estimate(remaining)
    spent = False  # the study's trials are all claimed, by this worker or others
    with ui.progress(f"{settings.strategy} search", total) as bar:
        while remaining > 0 and not spent:
            known = _known(study)  # every worker's measurements so far
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
                trial = ask(study, fixed_distributions=dists)
                config = {
                    d.knob.name: d.knob.from_internal(trial.params[d.knob.name])
                    for d in space.dimensions
                }
                set_config(trial, config)
                key = config_key(config)
                earlier = known.get(key)
                holder = None
                if earlier is None and key not in in_batch:
                    holder = _claim(study, workers, config, trial.number, settings.trials)
                    if holder is None:  # the other workers took the last trials
                        set_role(trial, Role.UNUSED)
                        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                        spent = True
                        break
                    if workers.mine(holder, trial.number):
                        set_role(trial, Role.SEARCH)
                        batch.append(Live(trial, config, settings.on_run))
                        in_batch.add(key)
                        duplicates_in_a_row = 0
                        continue
                # Proposed again: answer from the earlier measurement, run nothing.
                set_role(trial, Role.DUPLICATE)
                if holder is not None and holder.trial is not None:  # another worker runs it
                    set_duplicate_of(trial, holder.trial)
                    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                elif earlier is not None:
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
                if not spent:
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
                    workers.release(trial=live.trial.number)  # to be run again
                if scheduler.control is not None:
                    tell_control(study, scheduler.control)
                raise
            scheduler.settle(batch)
            if scheduler.control is not None:
                tell_control(study, scheduler.control)
            for live in batch:
                tell(study, live, statistic)
                if live.failure == INTERRUPTED or fail_reason(live.trial) == INTERRUPTED:
                    workers.release(trial=live.trial.number)
            remaining = settings.trials - workers.counted()
            bar.grow(scheduler.spent - start + scheduler.estimate(max(0, remaining)))


def _known(study: optuna.Study) -> dict[str, tuple[int, float | None]]:
    """configuration -> (trial number, its value; None if it failed) of the search trials
    that ran; one that failed is not run again either, unless it was interrupted."""
    known: dict[str, tuple[int, float | None]] = {}
    for t in study.get_trials(deepcopy=False):
        if (
            role_of(t) is Role.SEARCH
            and t.state.name in ("COMPLETE", "FAIL")
            and fail_reason(t) != INTERRUPTED
        ):
            known.setdefault(config_key(config_of(t)), (t.number, t.value))
    return known


def _claim(
    study: optuna.Study,
    workers: Workers,
    config: dict[str, Value],
    number: int,
    trials: int,
) -> Claim | None:
    """Claim ``config`` for trial ``number`` within the study's ``trials``: the holder, or
    None if the budget is spent. A claim whose worker died is taken back first."""
    key = config_claim(config)
    holder = workers.claim(key, trial=number, counted=True, limit=trials)
    if holder is not None and not workers.mine(holder) and not workers.alive(holder.worker):
        workers.recover(study)
        workers.release(key, worker=holder.worker)
        holder = workers.claim(key, trial=number, counted=True, limit=trials)
    return holder


def _train(
    study: optuna.Study,
    settings: TuneSettings,
    executor_at: Callable[[Mapping[str, str]], Executor],
    timeout: float,
    ui: Progress,
) -> bool:
    train(study, settings, executor_at, timeout, ui)
    return True


def tune(
    settings: TuneSettings,
    storage: Any,
    executor: Executor,
    ui: Progress,
    workers: Workers | None = None,
) -> TuneResult:
    """Run (or resume) a study to its budget, confirm the best, and return the result.
    Several tuners may run it at once on one storage (``workers``, see ``_workers``)."""
    left = kill_leftovers()  # a tuner killed with kill -9 could not stop its run
    if left:
        ui.warn(f"killed {len(left)} process(es) that an earlier tuner left running")
        time.sleep(0.5)  # their shared memory is free once they are gone
    stale = clean_shm(until=time.time() - 60)  # left by killed jobs, e.g. an earlier tuner
    if stale:
        ui.info(f"removed {len(stale)} stale MPI shared-memory segment(s) from /dev/shm")
    study = open_study(storage, settings)
    workers = workers or Workers.solo(settings.study)
    with workers.heartbeat():
        interrupted = workers.recover(study)
        if interrupted:
            ui.warn(f"{interrupted} trial(s) of an interrupted run are marked failed")
        ref = run_reference(study, settings, executor, ui, workers)
        timeout = settings.timeout or max(MIN_TIMEOUT, 5 * stats.median(run_walls(ref)))
        ui.info(
            f"reference: {stats.median(run_values(ref)):.4g} (median of "
            f"{len(run_values(ref))}); run timeout {timeout:.1f} s"
        )
        if settings.hints_from_reference is not None:
            settings.hints = [*settings.hints_from_reference(ref), *settings.hints]
        executor_at = settings.executor_at
        if executor_at is not None:
            workers.once(
                TRAINING,
                lambda: True if training_done(study, settings) else None,
                lambda: _train(study, settings, executor_at, timeout, ui),
                ui,
                "training",
            )
        search(study, settings, executor, timeout, ui, workers)
        while workers.wait_for_others(study, ui):  # a worker died: its trials run here
            ui.warn("a worker stopped during its trials; they are run again")
            search(study, settings, executor, timeout, ui, workers)

        def confirmed() -> Acceptance | None:
            stored = acceptance_of(study)
            if stored is not None and stored.measured_trials == len(measured(study)):
                return stored
            return None

        def run_confirmation() -> Acceptance | None:
            return confirm(
                study,
                executor,
                timeout,
                ui,
                rounds=settings.confirm,
                top=settings.top,
                statistic=settings.spec.statistic,
                max_runs=settings.max_runs,
            )

        if settings.confirm <= 0 or not best_trials(study, 1):
            acceptance = run_confirmation()  # nothing to run: no need to wait on another
        else:
            acceptance = workers.once(CONFIRM, confirmed, run_confirmation, ui, "confirmation")
    return summarize(study, acceptance)
