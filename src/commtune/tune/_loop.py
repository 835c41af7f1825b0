"""The tuning loop: reference, batches of proposals, the verdict.

Flow (each step commits to the storage before the next starts, so ``kill -9`` loses no
finished trial):

1. open or resume the study; trials a killed tuner left RUNNING become FAIL ("interrupted");
2. the reference: the library's defaults (no knob set), run ``repeats`` times; if it fails the
   command itself is broken and tuning stops;
3. batches: the strategy proposes ``batch_size`` configurations; the scheduler
   (:mod:`commtune.tune._schedule`) runs them with controls beside them and races their
   repeats; a failed run fails its trial; a configuration already measured is answered from
   its earlier trial, not rerun;
4. the verdict (:func:`commtune.tune._decide.verdict`): under ``--gate risk`` (the default)
   the search's best, one or two at a time, in fresh pairs of runs beside the defaults, each
   pair's order by a coin, decided by the rule's paired test at ``--risk``; under ``--gate
   strict`` the top-k confirmation (:mod:`commtune.tune._confirm`): the best configurations
   and the defaults run again, interleaved, accepted only if faster beyond noise.

``max_runs`` bounds every run of the study; the search leaves the verdict its share of them
(``Plan.deciding_runs``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from commtune import stats
from commtune.knobs import Space, Value
from commtune.progress import Progress
from commtune.store import Claim
from commtune.strategies import distributions, get_strategy
from commtune.study import (
    INTERRUPTED,
    Acceptance,
    Gate,
    Plan,
    Role,
    StudyView,
    TrialRecord,
    TrialWriter,
    ask,
    config_key,
)
from commtune.trial import Executor, clean_shm, kill_leftovers
from commtune.tune._decide import contended, deterministic, verdict
from commtune.tune._reference import open_study, run_reference
from commtune.tune._schedule import Live, Scheduler, tell, tell_control
from commtune.tune._summary import TuneResult, summarize
from commtune.tune._target import Context, Observer, Target
from commtune.tune._train import train, training_done
from commtune.tune._workers import CONFIRM, TRAINING, Workers, config_claim

if TYPE_CHECKING:
    import optuna

MIN_TIMEOUT = 5.0
TIMEOUT_FACTOR = 5  # a run's timeout: this many times the reference's median wall time
EXACT_TIMEOUT = 2  # and this many times more in a deterministic study (a simulation)


@dataclass(frozen=True)
class New:
    """A configuration to run: claimed by this worker for ``trial``."""

    trial: optuna.Trial
    config: dict[str, Value]


@dataclass(frozen=True)
class Duplicate:
    """A configuration measured before (or being measured by another worker): answered from
    trial ``of``, not run."""

    trial: optuna.Trial
    of: TrialRecord | int | None  # a measured trial, one another worker runs, or this batch's


@dataclass(frozen=True)
class Spent:
    """The study's trials are all claimed (by this worker or others): nothing more runs."""

    trial: optuna.Trial


Proposal = New | Duplicate | Spent


@dataclass
class _Proposer:
    """Asks the strategy for configurations and decides what each is (:data:`Proposal`)."""

    ctx: Context
    known: dict[str, TrialRecord]  # every worker's measured configurations
    in_batch: dict[str, int] = field(default_factory=dict)  # configuration -> its trial

    def __post_init__(self) -> None:
        self.dists = distributions(self.ctx.space)

    def propose(self) -> Proposal:
        study, space, workers = self.ctx.study, self.ctx.space, self.ctx.workers
        trial = ask(study, fixed_distributions=self.dists)
        config = {
            d.knob.name: d.knob.from_internal(trial.params[d.knob.name]) for d in space.dimensions
        }
        write = TrialWriter(trial)
        write.config(config)
        key = config_key(config)
        earlier = self.known.get(key)
        if earlier is not None or key in self.in_batch:
            write.role(Role.DUPLICATE)
            return Duplicate(trial, earlier or self.in_batch[key])
        holder = _claim(study, workers, config, trial.number, self.ctx.plan.trials)
        if holder is None:  # the other workers took the last trials
            write.role(Role.UNUSED)
            return Spent(trial)
        if workers.mine(holder, trial.number):
            write.role(Role.SEARCH)
            self.in_batch[key] = trial.number
            return New(trial, config)
        write.role(Role.DUPLICATE)  # another worker claimed it first
        return Duplicate(trial, holder.trial)

    def answer(self, proposal: Duplicate | Spent) -> None:
        """Finish a trial that runs nothing: a duplicate takes its earlier trial's value (or
        failure); one whose earlier trial is still running, or in this batch, and an unused
        one are pruned."""
        from optuna.trial import TrialState

        of = proposal.of if isinstance(proposal, Duplicate) else None
        if isinstance(of, TrialRecord):
            TrialWriter(proposal.trial).duplicate_of(of.number)
            if of.value is not None and of.complete:
                self.ctx.study.tell(proposal.trial, of.value)
            else:
                self.ctx.study.tell(proposal.trial, state=TrialState.FAIL)
            return
        if of is not None:
            TrialWriter(proposal.trial).duplicate_of(of)
        self.ctx.study.tell(proposal.trial, state=TrialState.PRUNED)


@dataclass
class _Batch:
    lives: list[Live]
    spent: bool  # the study's budget is claimed to the last trial


def _propose_batch(
    proposer: _Proposer, size: int, on_run: Callable[..., None] | None, repeated: int
) -> tuple[_Batch, int]:
    """Up to ``size`` new configurations; returns the batch and the duplicates proposed in
    a row so far (``repeated`` carried over batches)."""
    lives: list[Live] = []
    while len(lives) < size:
        proposal = proposer.propose()
        if isinstance(proposal, New):
            lives.append(Live(proposal.trial, proposal.config, on_run))
            repeated = 0
            continue
        proposer.answer(proposal)
        if isinstance(proposal, Spent):
            return _Batch(lives, spent=True), repeated
        repeated += 1
        if repeated >= 200:
            return _Batch(lives, spent=False), repeated  # only known ones, 200 in a row
    return _Batch(lives, spent=False), repeated


def search(ctx: Context) -> None:
    """Batches of proposals to the study's budget, shared with the study's other workers:
    each configuration is claimed before it runs (:mod:`commtune.tune._workers`)."""
    study, workers, plan, space, ui = ctx.study, ctx.workers, ctx.plan, ctx.space, ctx.ui
    if ctx.ranked is not None:
        return  # a simulation searched (--twin): the real runs are the verdict's
    workers.sync(study)
    hints = [dict(h) for h in ctx.hints]
    strategy = get_strategy(plan.strategy, dict(plan.strategy_options), hints)
    statistic = stats.statistic(plan.statistic)
    remaining = plan.trials - workers.counted()
    if remaining <= 0:
        return
    # A space the budget covers is raced whole, F-race's way: every configuration in one
    # batch, its repeats in blocks, the clearly slower ones stopped after each block
    # (a strategy would only choose the order in which all of them are measured).
    whole = space.size() <= remaining and plan.racing
    if whole:
        strategy = get_strategy("grid", {}, hints)
        ui.info(f"the {space.size()} configurations fit the budget: raced whole")
    # the hints a strategy of Optuna's samplers does not propose itself: measured first
    hinted = [] if whole or strategy.proposes_hints else _fresh(ctx, strategy.hint_configs(space))
    if hinted:
        ui.info(f"the search starts with {len(hinted)} hinted configuration(s)")
    scheduler = Scheduler(
        study,
        ctx.executor,
        ctx.timeout,
        repeats=plan.search_repeats(),
        statistic=plan.statistic,
        controls=plan.controls,
        racing=plan.racing,
        control_every=plan.control_every,
        limit=plan.search_limit(ctx.settled),
    )
    repeated = 0  # duplicates proposed in a row
    start = scheduler.spent
    total = scheduler.estimate(remaining)
    with ui.progress(f"{plan.strategy} search", total) as bar:
        while remaining > 0:
            view = StudyView(study)
            known = view.known()
            if strategy.exhausted(space, len(known)):
                ui.info(f"all {space.size()} configurations of the space are measured")
                break
            wanted = space.size() if whole else strategy.batch_size
            size = min(wanted, remaining, space.size() - len(known))
            size = scheduler.affordable(size)
            if size <= 0 and _widened(ctx, scheduler):
                continue
            if size <= 0:
                ui.info(f"the run budget (--max-runs {plan.max_runs}) is spent")
                break
            study.sampler = strategy.sampler(space, plan.seed, len(view.records))
            hinted = _enqueue(study, space, hinted, size)
            proposer = _Proposer(ctx, known)
            batch, repeated = _propose_batch(proposer, size, ctx.observer.run_done, repeated)
            if not batch.lives:
                if not batch.spent:
                    ui.info("the strategy proposes only configurations already measured; stopping")
                break
            _run_batch(study, scheduler, batch.lives, statistic, workers, bar)
            if batch.spent:
                break
            remaining = plan.trials - workers.counted()
            bar.grow(scheduler.spent - start + scheduler.estimate(max(0, remaining)))


def _widened(ctx: Context, scheduler: Scheduler) -> bool:
    """Where the search reached its share of ``--max-runs`` (``Plan.explore``) and none of
    its configurations beat the defaults' runs, the verdict would test nothing and leave its
    runs unspent: the search goes on into them, up to the runs a first pass needs (issue 75,
    item 3). True where the limit was raised."""
    plan = ctx.plan
    if plan.gate is not Gate.RISK or plan.max_runs is None or ctx.settled:
        return False
    widest = replace(plan, explore=1.0).search_limit()
    if widest is None or scheduler.limit is None or scheduler.limit >= widest:
        return False
    if contended(ctx.study):
        return False
    ctx.ui.info(f"nothing the search measured beat the defaults' runs: it goes on, up to "
                f"{widest} of --max-runs {plan.max_runs}")  # fmt: skip
    scheduler.limit = widest
    return True


def _fresh(ctx: Context, configs: Sequence[dict[str, Value]]) -> list[dict[str, Value]]:
    """The hinted configurations (earlier studies' answers, a platform sample's or a
    prediction's) that are neither measured yet nor the defaults themselves."""
    known = StudyView(ctx.study).known()
    defaults = ctx.space.defaults()
    return [c for c in configs if config_key(c) not in known and c != defaults]


def _enqueue(
    study: optuna.Study, space: Space, hinted: list[dict[str, Value]], size: int
) -> list[dict[str, Value]]:
    """Up to ``size`` hinted configurations are the next batch's trials (Optuna hands an
    enqueued trial to the next ``ask``, whatever the sampler: no more than the batch asks
    for, so that no control run's trial takes one); the rest is returned."""
    for config in hinted[:size]:
        study.enqueue_trial(space.internal(config), skip_if_exists=True)
    return hinted[size:]


def _run_batch(
    study: optuna.Study,
    scheduler: Scheduler,
    batch: list[Live],
    statistic: Callable[[Sequence[float]], float],
    workers: Workers,
    bar: Any,
) -> None:
    """Run the batch (its controls beside it) and tell its trials; an interrupted trial's
    configuration is released to be run again, here or by another worker."""
    try:
        scheduler.run_batch(batch, bar)
    except BaseException:
        scheduler.settle(batch)
        for live in batch:
            if live.failure is None:
                live.fail(INTERRUPTED)
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
        if live.failure == INTERRUPTED:
            workers.release(trial=live.trial.number)


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


def tidy_leftovers(ui: Progress) -> None:
    """Before the first run: what an earlier tuner killed with kill -9 left running, and the
    MPI shared-memory segments killed jobs left in /dev/shm."""
    left = kill_leftovers()
    if left:
        ui.warn(f"killed {len(left)} process(es) that an earlier tuner left running")
        time.sleep(0.5)  # their shared memory is free once they are gone
    stale = clean_shm(until=time.time() - 60)
    if stale:
        ui.info(f"removed {len(stale)} stale MPI shared-memory segment(s) from /dev/shm")


def exact_plan(plan: Plan) -> Plan:
    """The plan of a study whose runs do not differ (``stats.exact``): every configuration
    runs once, no control beside it (nothing drifts), and the search takes every run but
    the one the verdict makes of the best (``tune._decide``): ``--max-runs 30`` buys as
    many configurations as it has runs left after the reference."""
    explore, trials = plan.explore, plan.trials
    if plan.max_runs is not None:
        explore = max(plan.explore, (plan.max_runs - 1) / plan.max_runs)
        trials = max(trials, plan.max_runs)  # the runs bound the study, not the trials
    return replace(plan, controls=False, repeats=1, explore=explore, gate=Gate.RISK, trials=trials)


def settled(ctx: Context, ref: TrialRecord) -> Context:
    """The context of the rest of the study once its reference is known: the plan of a
    deterministic study (:func:`exact_plan`) where the reference's runs gave one value."""
    if deterministic(ctx.plan, ctx.executor, ref):
        if ctx.plan.gate is Gate.STRICT:
            ctx.ui.warn("the defaults' runs gave one value (deterministic runs): decided on "
                        "the values themselves, --gate strict has no noise to test against; "
                        "--assume-noise to test anyway")  # fmt: skip
        return replace(ctx, target=replace(ctx.target, plan=exact_plan(ctx.plan)), settled=True)
    return ctx


def tune(
    target: Target,
    storage: Any,
    executor: Executor,
    ui: Progress,
    workers: Workers | None = None,
    observer: Observer | None = None,
    ranked: Sequence[Mapping[str, Value]] | None = None,
) -> TuneResult:
    """Run (or resume) a study to its budget, decide on its best, and return the result.
    Several tuners may run it at once on one storage (``workers``, see ``_workers``). A study
    at a training scale (``spec.scale`` with training values) trains first, with
    ``executor.at`` running the command at each training scale. ``ranked``: what a
    simulation ranked, best first (``--twin``): no search, the verdict tests them."""
    tidy_leftovers(ui)
    study = open_study(storage, target)
    workers = workers or Workers.solo(target.study)
    ctx = Context(study, target, executor, ui, workers, observer or Observer(),
                  ranked=None if ranked is None else tuple(ranked))  # fmt: skip
    plan = target.plan
    with workers.heartbeat():
        interrupted = workers.recover(study)
        if interrupted:
            ui.warn(f"{interrupted} trial(s) of an interrupted run are marked failed")
        ref = run_reference(ctx)
        exact = deterministic(plan, executor, ref)
        # a simulation's cost differs by far more between configurations than a run's time
        # (a linear algorithm at 1,024 ranks): its runs are given EXACT_TIMEOUT times more
        factor = TIMEOUT_FACTOR * (EXACT_TIMEOUT if exact else 1)
        timeout = plan.timeout or max(MIN_TIMEOUT, factor * stats.median(ref.walls()))
        ui.info(
            f"reference: {stats.median(ref.values()):.4g} (median of "
            f"{len(ref.values())}); run timeout {timeout:.1f} s"
        )
        ctx = replace(ctx, timeout=timeout, hints=tuple(ctx.observer.hints(ref)))
        if exact:
            ctx = settled(ctx, ref)
            plan = ctx.plan
            ui.info("the defaults' runs gave one value: a deterministic program (a simulation); "
                    "one run a configuration, no controls, the best run once more")  # fmt: skip
        if target.spec.trains():

            def run_training() -> bool:
                train(ctx)
                return True

            workers.once(
                TRAINING,
                lambda: True if training_done(ctx) else None,
                run_training,
                ui,
                "training",
            )
        search(ctx)
        while workers.wait_for_others(study, ui):  # a worker died: its trials run here
            ui.warn("a worker stopped during its trials; they are run again")
            search(ctx)

        def run_confirmation() -> Acceptance | None:
            return verdict(study, executor, timeout, ui, plan, ctx.ranked)

        if not plan.decides or not StudyView(study).best(1):
            acceptance = run_confirmation()  # nothing to run: no need to wait on another
        else:
            acceptance = workers.once(
                CONFIRM, lambda: StudyView(study).verdict(), run_confirmation, ui, "confirmation"
            )
    return summarize(study, acceptance)
