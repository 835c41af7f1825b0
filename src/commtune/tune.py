"""The tuning loop: reference, batches of proposals with interleaved repeats, acceptance.

Flow (each step commits to the storage before the next starts, so ``kill -9`` loses no
finished trial):

1. open or resume the study; trials a killed tuner left RUNNING become FAIL ("interrupted");
2. the reference: the library's defaults (no knob set), run ``repeats`` times; if it fails the
   command itself is broken and tuning stops;
3. batches: the strategy proposes ``batch_size`` configurations; repeat r of every one runs
   before repeat r+1 of any (interleaving); a failed run fails its trial and skips its remaining
   repeats; a configuration already measured is answered from its earlier trial, not rerun;
4. acceptance: the best configuration and the default run again, interleaved, ``confirm``
   times each; accepted only if faster beyond noise (:func:`commtune.stats.compare`).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from commtune import stats
from commtune.errors import UsageError
from commtune.knobs import Space, Value
from commtune.progress import Bar, Progress
from commtune.strategies import distributions, get_strategy
from commtune.study import (
    INTERRUPTED,
    Acceptance,
    Role,
    Source,
    StudySpec,
    acceptance_of,
    config_key,
    config_of,
    fail_reason,
    not_applied_of,
    record_fail_reason,
    role_of,
    run_relatives,
    run_values,
    run_walls,
    runs_of,
    set_acceptance,
    set_config,
    set_duplicate_of,
    set_fail_reason,
    set_features,
    set_not_applied,
    set_role,
    set_runs,
    set_spec,
    spec_of,
)
from commtune.trial import Executor, RunRecord, clean_shm

if TYPE_CHECKING:
    import optuna

MIN_TIMEOUT = 5.0
MPI_ENV_PREFIXES = ("OMPI_MCA_", "OMPI_", "MPIR_CVAR_", "MPICH_", "HYDRA_", "UCX_", "PMIX_MCA_")


class ReferenceFailed(UsageError):
    """The library's default configuration failed: the command itself is broken."""


@dataclass
class TuneSettings:
    study: str
    spec: StudySpec
    space: Space
    strategy: str = "tpe"
    strategy_options: dict[str, str] = field(default_factory=dict)
    hints: list[dict[str, Value]] = field(default_factory=list)  # configurations to try early
    trials: int = 20
    timeout: float | None = None
    reference_timeout: float = 600.0
    confirm: int = 5
    seed: int | None = None
    # Blocked comparisons: each batch's blocks run the library defaults beside it (False:
    # the design before them, every run relative to the reference's median; for the race).
    controls: bool = True
    platform: str | None = None
    # Called after every recorded run of a trial (run index from 0): stores profiles, warns.
    on_run: Callable[[optuna.trial.BaseTrial, int, RunRecord], None] | None = None
    # Hints that need the reference run (a prediction from its profile): called once it is done.
    hints_from_reference: Callable[[optuna.trial.FrozenTrial], list[dict[str, Value]]] | None = None


@dataclass
class Row:
    """One configuration in the result table. ``value``: the median of its runs relative to
    the control runs of their blocks (the library's defaults = 1); ``raw``: the median of
    its runs as measured; ``spread`` of the relative values."""

    number: int
    config: dict[str, Value]
    value: float
    spread: float
    speedup: float
    raw: float = float("nan")


@dataclass(frozen=True)
class Noise:
    """What the machine did, from the runs of the library's defaults: ``cv`` the noise
    (median coefficient of variation of a configuration's drift-corrected runs), ``drift``
    the slowest control block over the fastest."""

    cv: float
    drift: float

    def to_json(self) -> dict[str, float]:
        return {"cv": self.cv, "drift": self.drift}


@dataclass
class TuneResult:
    study: str
    trials: int
    failed_trials: int
    default_value: float  # the reference's median, as measured
    best: Row | None
    acceptance: Acceptance | None
    table: list[Row] = field(default_factory=list)
    not_applied: dict[str, str] = field(default_factory=dict)
    runs: int = 0  # every run the study made: trials, controls, confirmation
    noise: Noise = field(default_factory=lambda: Noise(0.0, 1.0))

    def to_json(self) -> dict[str, Any]:
        acc = self.acceptance
        speedup = acc.speedup if acc else (self.best.speedup if self.best else 1.0)
        return {
            "study": self.study,
            "trials": self.trials,
            "failed_trials": self.failed_trials,
            "best_params": self.best.config if self.best else {},
            "best_value": self.best.value if self.best else 1.0,
            "best_raw": self.best.raw if self.best else self.default_value,
            "default_value": 1.0,
            "default_raw": self.default_value,
            "speedup": speedup,
            "speedup_ci": list(acc.ci) if acc and acc.ci else None,
            "accepted": bool(acc and acc.accepted),
            "not_applied": self.not_applied,
            "runs": self.runs,
            "noise": self.noise.to_json(),
        }


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


def measured(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """Trials that ran (reference and search), finished or failed; duplicates excluded."""
    from optuna.trial import TrialState

    return [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state in (TrialState.COMPLETE, TrialState.FAIL)
        and role_of(t) in (Role.REFERENCE, Role.SEARCH)
    ]


def reference_trial(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    from optuna.trial import TrialState

    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if role_of(t) is Role.REFERENCE:
            return t
    return None


def value_of(trial: optuna.trial.FrozenTrial) -> float:
    """The objective of a finished trial (median of its runs)."""
    assert trial.value is not None, f"trial {trial.number} has no value"
    return float(trial.value)


def inherited_mpi_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """MPI-related variables in the user's environment (they stay part of the baseline)."""
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith(MPI_ENV_PREFIXES)}


# -- running ----------------------------------------------------------------------------------
class _Live:
    """A trial being measured in the current batch (or the batch's control runs)."""

    def __init__(
        self,
        trial: optuna.Trial,
        config: dict[str, Value] | None,
        on_run: Callable[[optuna.trial.BaseTrial, int, RunRecord], None] | None = None,
        *,
        control: bool = False,
    ) -> None:
        self.trial = trial
        self.config = config
        self.on_run = on_run
        self.control = control  # the batch's control runs: a failed run fails only its block
        self.runs: list[RunRecord] = []
        self.blocks: list[str] = []
        self.relative: dict[str, float] = {}  # block -> the run's value over the control's
        self.failure: str | None = None
        self.not_applied: dict[str, str] = {}

    def _store(self) -> None:
        records = []
        for run, block in zip(self.runs, self.blocks, strict=True):
            records.append({**run.to_json(), "block": block, "relative": self.relative.get(block)})
        set_runs(self.trial, records)

    def record(self, run: RunRecord, block: str) -> None:
        self.runs.append(run)
        self.blocks.append(block)
        self._store()
        if run.not_applied.keys() - self.not_applied.keys():
            self.not_applied = {**run.not_applied, **self.not_applied}
            set_not_applied(self.trial, self.not_applied)
        if run.profile is not None and len(self.runs) == 1:
            set_features(self.trial, run.profile.features)
        if run.failure is not None and not self.control:
            self.failure = run.failure
            set_fail_reason(self.trial, run.failure)
        if self.on_run is not None:
            self.on_run(self.trial, len(self.runs) - 1, run)

    def value_in(self, block: str) -> float | None:
        for run, b in zip(self.runs, self.blocks, strict=True):
            if b == block:
                return run.value
        return None

    def relate(self, block: str, control: float) -> None:
        """The run of ``block`` relative to that block's control value (stored with the
        trial's value when it is told: every run is already stored as it ended)."""
        value = self.value_in(block)
        if value is not None and control > 0:
            self.relative[block] = value / control


def _run_blocks(
    batch: list[_Live],
    control: _Live | None,
    repeats: int,
    executor: Executor,
    timeout: float,
    bar: Bar,
    fallback: float,
) -> None:
    """``repeats`` blocks. Block r runs the control (the library's defaults) and every trial
    of the batch that has not failed once each: the trials rotated by r, the control first
    in even blocks and last in odd ones, so no position is always the same configuration's.
    Each run is recorded as it ends; once the block ends, every trial's run is related to
    the block's control run (``fallback``, the reference's median, where that one failed)
    so drift between blocks cancels. Without a control (the reference itself) runs are
    related to ``fallback``."""
    for r in range(repeats):
        active = [live for live in batch if live.failure is None]
        if not active:
            break
        k = r % len(active)
        order = active[k:] + active[:k]
        sequence: list[_Live] = list(order)
        if control is not None:
            sequence = [control, *order] if r % 2 == 0 else [*order, control]
        anchor = control or active[0]
        block = f"{anchor.trial.number}.{r}"
        for live in sequence:
            run = executor.run(live.config, timeout)
            live.record(run, block)
            bar.advance(status=_status_line(live, run, "control" if live.control else "trial"))
        measured_control = control.value_in(block) if control is not None else None
        anchor_value = measured_control if measured_control else fallback
        for live in order:
            live.relate(block, anchor_value)


def _status_line(live: _Live, run: RunRecord, what: str = "trial") -> str:
    if run.failure:
        return f"[red]{what} {live.trial.number} failed: {run.failure}[/red]"
    return f"{what} {live.trial.number}: {run.value:.4g}"


def _tell(study: optuna.Study, live: _Live) -> float | None:
    """Finish the trial in the storage; returns its value (None if it failed)."""
    from optuna.trial import TrialState

    live._store()  # with the relative values
    if live.failure is not None or not live.relative:
        study.tell(live.trial, state=TrialState.FAIL)
        return None
    value = stats.median(list(live.relative.values()))
    study.tell(live.trial, value)
    return value


def run_reference(
    study: optuna.Study, settings: TuneSettings, executor: Executor, ui: Progress
) -> optuna.trial.FrozenTrial:
    ref = reference_trial(study)
    if ref is not None:
        return ref
    trial = study.ask()
    set_role(trial, Role.REFERENCE)
    set_config(trial, {})
    live = _Live(trial, None, settings.on_run)
    with ui.progress("reference (library defaults)", settings.spec.repeats) as bar:
        try:
            for r in range(settings.spec.repeats):
                if live.failure is not None:
                    break
                run = executor.run(None, settings.reference_timeout)
                live.record(run, f"{trial.number}.{r}")
                bar.advance(status=_status_line(live, run))
        except BaseException:
            live.failure = live.failure or INTERRUPTED
            set_fail_reason(trial, live.failure)
            _tell(study, live)
            raise
    if live.failure is None:
        # The reference is its own block: its runs relative to their median.
        middle = stats.median([r.value for r in live.runs if r.value is not None])
        for block in live.blocks:
            live.relate(block, middle)
    _tell(study, live)
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
    repeats = settings.spec.repeats
    ref = reference_trial(study)
    assert ref is not None, "the reference runs before the search"
    reference = stats.median(run_values(ref))
    done = measured(study)
    remaining = settings.trials - len(done)
    if remaining <= 0:
        return
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
    total = remaining * repeats  # the trials' runs; each batch adds its blocks' control runs
    with ui.progress(f"{settings.strategy} search", total) as bar:
        while remaining > 0:
            if strategy.exhausted(space, len(known)):
                ui.info(f"all {space.size()} configurations of the space are measured")
                break
            n_trials = len(study.get_trials(deepcopy=False))
            study.sampler = strategy.sampler(space, settings.seed, n_trials)
            batch: list[_Live] = []
            in_batch: set[str] = set()
            size = min(strategy.batch_size, remaining, space.size() - len(known))
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
                    batch.append(_Live(trial, config, settings.on_run))
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
            control = _control_trial(study) if settings.controls else None
            if control is not None:
                total += repeats
                bar.grow(total)
            try:
                _run_blocks(batch, control, repeats, executor, timeout, bar, reference)
            except BaseException:
                for live in batch:
                    if live.failure is None and len(live.runs) < repeats:
                        live.failure = INTERRUPTED
                        set_fail_reason(live.trial, INTERRUPTED)
                    _tell(study, live)
                if control is not None:
                    _tell_control(study, control)
                raise
            if control is not None:
                _tell_control(study, control)
            for live in batch:
                value = _tell(study, live)
                known[config_key(live.config)] = (live.trial.number, value)
                if live.failure is not None:
                    bar.advance(repeats - len(live.runs))
            remaining -= len(batch)


def _control_trial(study: optuna.Study) -> _Live:
    """A trial holding a batch's control runs. Asked with a sampler that samples nothing, so
    the strategy's sampler neither sees nor spends anything on it."""
    import optuna

    saved = study.sampler
    study.sampler = optuna.samplers.RandomSampler(seed=0)
    try:
        trial = study.ask()
    finally:
        study.sampler = saved
    set_role(trial, Role.CONTROL)
    set_config(trial, {})
    return _Live(trial, None, control=True)


def _tell_control(study: optuna.Study, control: _Live) -> None:
    """The control trial's value is 1 (the defaults, relative to themselves); its runs keep
    the raw values (their spread over the study is the drift)."""
    from optuna.trial import TrialState

    if any(r.value is not None for r in control.runs):
        study.tell(control.trial, 1.0)
    else:
        last = control.runs[-1].failure if control.runs else None
        set_fail_reason(control.trial, last or INTERRUPTED)
        study.tell(control.trial, state=TrialState.FAIL)


def best_trials(study: optuna.Study, limit: int = 5) -> list[optuna.trial.FrozenTrial]:
    from optuna.trial import TrialState

    done = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if role_of(t) is Role.SEARCH
    ]
    return sorted(done, key=value_of)[:limit]


CONFIRM_CAP = 3  # the sequential confirmation adds pairs up to 3x --confirm (5 + 5 -> 15 + 15)


def confirm(
    study: optuna.Study,
    settings: TuneSettings,
    executor: Executor,
    timeout: float,
    ui: Progress,
) -> Acceptance | None:
    """Run the best configuration and the default again, interleaved; accept if faster.

    Confirmed whenever the best is faster than the defaults or within the noise of them in
    the search (its value relative to its blocks' controls below 1 + 2 CV, at least 1.02).
    Sequential: after ``confirm`` pairs, while the verdict is undecided (not faster, yet a
    speedup above 1 inside the CI) one more pair at a time, up to ``CONFIRM_CAP`` times as
    many. A candidate whose runs fall into two clusters is reported with both.
    """
    best = best_trials(study, 1)
    ref = reference_trial(study)
    if not best or ref is None or settings.confirm <= 0:
        return None
    top = best[0]
    n_measured = len(measured(study))
    stored = acceptance_of(study)
    if stored and stored.trial == top.number and stored.measured_trials == n_measured:
        return stored
    config = config_of(top)
    # Every verdict names the trial confirmed and the trials measured when it was reached.
    verdict = functools.partial(
        Acceptance, Source.SEARCH, config, trial=top.number, measured_trials=n_measured
    )
    band = max(0.02, 2 * noise_of(study).cv)
    if value_of(top) >= value_of(ref) * (1 + band):
        acc = verdict(
            False,
            "no configuration came within noise of the default in the search",
            speedup=value_of(ref) / value_of(top),
            ci=(0.0, 0.0),
            p_value=1.0,
        )
        set_acceptance(study, acc)
        return acc
    default_values: list[float] = []
    best_values: list[float] = []
    failure = ""
    cmp: stats.Comparison | None = None  # of the runs so far (None: not compared since)
    with ui.progress("confirming best vs default", 2 * settings.confirm) as bar:
        for i in range(CONFIRM_CAP * settings.confirm):
            if i >= settings.confirm:
                if len(default_values) < 2 or len(best_values) < 2:
                    break
                cmp = stats.compare(default_values, best_values)
                if cmp.faster or cmp.ci_high <= 1.0:  # decided: accepted, or ruled out
                    break
                bar.grow(2 * (i + 1))
            cmp = None
            order: list[dict[str, Value] | None] = [None, config] if i % 2 == 0 else [config, None]
            for which in order:
                run = executor.run(which, timeout)
                bar.advance()
                if run.value is None:
                    if which is not None:
                        failure = f"the best configuration failed when run again: {run.failure}"
                    continue
                (default_values if which is None else best_values).append(run.value)
            if failure:
                break
    if failure or len(default_values) < 2 or len(best_values) < 2:
        acc = verdict(
            False,
            failure or "too few successful runs to compare",
            speedup=1.0,
            ci=(0.0, 0.0),
            p_value=1.0,
            default_values=default_values,
            best_values=best_values,
        )
    else:
        cmp = cmp or stats.compare(default_values, best_values)
        split = stats.clusters(best_values)
        reason = ""
        if not cmp.faster:
            reason = "not faster beyond noise"
            if len(split) == 2:
                (n1, m1), (n2, m2) = split
                reason += (
                    f": its runs fall into two clusters ({n1} at {m1:.4g}, {n2} at {m2:.4g}) "
                    f"against a default at {stats.median(default_values):.4g}"
                )
        mean_speedup = (sum(default_values) / len(default_values)) / (
            sum(best_values) / len(best_values)
        )
        acc = verdict(
            cmp.faster,
            reason,
            speedup=cmp.speedup,
            ci=(cmp.ci_low, cmp.ci_high),
            p_value=cmp.p_value,
            default_values=default_values,
            best_values=best_values,
            extra={
                "mean_speedup": mean_speedup,
                "clusters": [{"runs": n, "median": m} for n, m in split] if len(split) == 2 else [],
            },
        )
    set_acceptance(study, acc)
    return acc


def summarize(study: optuna.Study, acceptance: Acceptance | None) -> TuneResult:
    from optuna.trial import TrialState

    ref = reference_trial(study)
    if ref is None:
        raise UsageError(f"study {study.study_name!r} has no reference trial yet")
    ran = measured(study)
    failed = sum(1 for t in ran if t.state is TrialState.FAIL)
    rows = [
        Row(
            t.number,
            config_of(t),
            value_of(t),
            stats.spread(run_relatives(t)),
            value_of(ref) / value_of(t),
            stats.median(run_values(t)),
        )
        for t in best_trials(study, 5)
    ]
    missing: dict[str, str] = {}
    for t in ran:
        for knob, reason in not_applied_of(t).items():
            missing.setdefault(knob, reason)
    return TuneResult(
        study.study_name,
        len(ran),
        failed,
        stats.median(run_values(ref)),
        rows[0] if rows else None,
        acceptance,
        rows,
        missing,
        runs_spent(study, acceptance),
        noise_of(study),
    )


def runs_spent(study: optuna.Study, acceptance: Acceptance | None) -> int:
    """Every run the study made: its trials' (controls included) and the confirmation's."""
    runs = sum(len(runs_of(t)) for t in study.get_trials(deepcopy=False))
    if acceptance is not None:
        runs += len(acceptance.default_values) + len(acceptance.best_values)
    return runs


def noise_of(study: optuna.Study) -> Noise:
    """The noise and the drift of the study's machine, from its runs (see :class:`Noise`)."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    levels: list[float] = []  # one per control block: the reference's median, each control run
    spreads: list[float] = []
    for t in trials:
        role = role_of(t)
        if role is Role.REFERENCE and run_values(t):
            levels.append(stats.median(run_values(t)))
        elif role is Role.CONTROL:
            levels += run_values(t)
        if role in (Role.REFERENCE, Role.SEARCH) and t.state is TrialState.COMPLETE:
            relatives = run_relatives(t)
            if len(relatives) >= 2:
                spreads.append(stats.cv(relatives))
    drift = max(levels) / min(levels) if len(levels) >= 2 and min(levels) > 0 else 1.0
    return Noise(stats.median(spreads) if spreads else 0.0, drift)


def tune(settings: TuneSettings, storage: Any, executor: Executor, ui: Progress) -> TuneResult:
    """Run (or resume) a study to its budget, confirm the best, and return the result."""
    study = open_study(storage, settings)
    stale = clean_shm(until=time.time() - 60)  # left by killed jobs, e.g. an earlier tuner
    if stale:
        ui.info(f"removed {len(stale)} stale MPI shared-memory segment(s) from /dev/shm")
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
    search(study, settings, executor, timeout, ui)
    acceptance = confirm(study, settings, executor, timeout, ui)
    return summarize(study, acceptance)
