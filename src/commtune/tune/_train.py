"""Training runs at small scale, for the ``model`` strategy (Behzad et al.'s training set).

At each training scale (``Scale.training_scales()``: fewer ranks, smaller files) the same
space-filling design of the space runs once per configuration, with the library's defaults
at that scale as its controls (every ``CONTROL_EVERY`` runs, first and last), through the
scheduler that runs the search: each run is relative to the nearest control run, so a
training value says how much faster than the defaults a configuration is *at its scale*,
and drift between scales cancels. The runs are training trials (role ``training``, their
scale recorded); the search never counts them as measured at the target, the model fits
them with the scale values as inputs.

A study resumed after an interruption runs only the design points not trained yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from commtune import stats
from commtune.knobs import Value
from commtune.strategies import design_configs, distributions
from commtune.study import INTERRUPTED, Role, StudyView, ask, config_key
from commtune.tune._schedule import Live, Scheduler, tell, tell_control
from commtune.tune._target import Context, Target

if TYPE_CHECKING:
    import optuna

TRAIN_REPEATS = 1  # runs per training configuration: the paper runs each once


def training_size(target: Target) -> int:
    """Configurations of the design at each training scale: the model's ``initial`` option,
    by default ``max(8, 2 x knobs + 2)`` (the design it would run at the target)."""
    given = int(target.plan.strategy_options.get("initial", "0") or 0)
    return given or max(8, 2 * len(target.space.dimensions) + 2)


def trained(study: optuna.Study) -> set[tuple[str, str]]:
    """(scale key, configuration key) of every training run already made (interrupted ones
    are made again)."""
    return {
        (config_key(t.scale), t.key)
        for t in StudyView(study).training()
        if t.scale and t.finished and not t.interrupted and t.config
    }


def training_done(ctx: Context) -> bool:
    """Whether every training run of the study is made (by this worker or another)."""
    scale = ctx.target.spec.scale
    if scale is None or not scale.train:
        return True
    design = design_configs(ctx.space, training_size(ctx.target), ctx.plan.seed or 0)
    done = trained(ctx.study)
    return all(
        (config_key(values), config_key(c)) in done
        for values in scale.training_scales()
        for c in design
    )


def train(ctx: Context) -> None:
    """Run the training design at every training scale not done yet (see the module)."""
    study, plan, space, ui = ctx.study, ctx.plan, ctx.space, ctx.ui
    scale = ctx.target.spec.scale
    if scale is None or not scale.train:
        return
    design = design_configs(space, training_size(ctx.target), plan.seed or 0)
    statistic = stats.statistic(plan.statistic)
    done = trained(study)
    for values in scale.training_scales():
        todo = [c for c in design if (config_key(values), config_key(c)) not in done]
        if not todo:
            continue
        label = ", ".join(f"{k}={v}" for k, v in values.items())
        scheduler = Scheduler(
            study,
            ctx.executor.at(scale.command(values)),
            ctx.timeout,
            repeats=TRAIN_REPEATS,
            statistic=plan.statistic,
            racing=False,
            control_every=plan.control_every,
            limit=plan.search_limit(ctx.settled),
            scale=values,
        )
        if not scheduler.affordable(len(todo)):
            ui.info(f"the run budget (--max-runs {plan.max_runs}) is spent")
            return
        batch = [_training_trial(ctx, config, values) for config in todo]
        with ui.progress(f"training at {label}", scheduler.estimate(len(batch)) + 1) as bar:
            try:
                scheduler.run_batch(batch, bar)
                scheduler.close(bar)
            except BaseException:
                _finish(study, scheduler, batch, statistic, interrupted=True)
                raise
        _finish(study, scheduler, batch, statistic)


def _training_trial(ctx: Context, config: dict[str, Value], values: Mapping[str, str]) -> Live:
    """A trial with exactly ``config``'s parameters (enqueued, so no sampler decides)."""
    import optuna

    study, space = ctx.study, ctx.space
    saved = study.sampler
    study.sampler = optuna.samplers.RandomSampler(seed=0)
    try:
        study.enqueue_trial(space.internal(config))
        trial = ask(study, fixed_distributions=distributions(space))
    finally:
        study.sampler = saved
    live = Live(trial, config, ctx.observer.run_done)
    live.write.role(Role.TRAINING)
    live.write.scale(values)
    live.write.config(config)
    return live


def _finish(
    study: optuna.Study,
    scheduler: Scheduler,
    batch: list[Live],
    statistic: Callable[[Sequence[float]], float],
    interrupted: bool = False,
) -> None:
    scheduler.settle(batch)
    for live in batch:
        if interrupted and live.failure is None:
            live.fail(INTERRUPTED)
        tell(study, live, statistic)
    if scheduler.control is not None:
        tell_control(study, scheduler.control)
