"""The scheduler: which runs the tuner makes, in which order, and how they are recorded.

The executors here record every call and answer from a table, some with drifting phases
(every run of a phase multiplied by the same factor); nothing depends on which
configuration wins a noisy comparison: every value is exact.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import optuna
import pytest

from commtune import stats
from commtune.knobs import Dimension, Knob, KnobType, Space
from commtune.progress import Silent
from commtune.study import Plan, Role, StudyView, TrialRecord, acceptance_of
from commtune.trial import Executor, RunRecord
from commtune.tune import (
    CONFIRM_CAP,
    Context,
    Target,
    open_study,
    run_reference,
    search,
    summarize,
    tune,
)

KNOB = "algo"
COST = {None: 1.0, "a": 1.0, "b": 1.0, "fast": 0.5, "slow": 2.0}


class Table(Executor):
    """Answers ``COST[value] * phase``; the phase factor changes every ``period`` runs.
    ``noisy`` configurations alternate between 0.5x and 1.5x their cost."""

    def __init__(
        self,
        period: int = 10**9,
        factors: tuple[float, ...] = (1.0, 2.5),
        noisy: tuple[str, ...] = (),
    ) -> None:
        self.calls: list[str | None] = []
        self.period, self.factors, self.noisy = period, factors, noisy
        self.seen: dict[str | None, int] = {}

    def run(self, config: Mapping[str, object] | None, timeout: float) -> RunRecord:
        value = None if config is None else str(config[KNOB])
        phase = self.factors[(len(self.calls) // self.period) % len(self.factors)]
        self.calls.append(value)
        result = COST[value] * phase
        if value in self.noisy:
            n = self.seen[value] = self.seen.get(value, 0) + 1
            result *= 0.5 if n % 2 else 1.5
        return RunRecord(result, result, 0)


def _settings(repeats: int, trials: int, choices: tuple[str, ...], **kw: object) -> Target:
    knob = Knob(KNOB, "synthetic", KnobType.CATEGORICAL, "a", KNOB, "ALGO", (), choices=choices)
    space = Space("synthetic", (Dimension(knob),))
    # the table has no noise: exact=False keeps the design of noisy runs under test
    plan = Plan(strategy="grid", trials=trials, repeats=repeats, confirm=0, seed=1, gate="strict",
                exact=False)  # fmt: skip
    return Target.of("b", ["x"], space, dataclasses.replace(plan, **kw))  # type: ignore[arg-type]


def _search(settings: Target, executor: Executor) -> optuna.Study:
    study = open_study(optuna.storages.InMemoryStorage(), settings)
    ctx = Context.solo(study, settings, executor, Silent(), 60.0)
    run_reference(ctx)
    search(ctx)
    return study


def _searched(study: optuna.Study) -> list[TrialRecord]:
    return StudyView(study).by_role(Role.SEARCH)


def test_fixed_repeats_with_a_control_every_few_trial_runs() -> None:
    settings = _settings(3, 3, ("a", "fast"), racing=False, control_every=4)
    executor = Table()
    study = _search(settings, executor)
    # reference: 3 runs of the defaults (the first controls); one batch of the grid's two
    # configurations in three blocks, rotated block by block; a control run opens the
    # second block (block 0's runs get one after them) and one closes the batch.
    calls = executor.calls
    assert calls[:3] == [None, None, None]
    trial_runs = calls[3:]
    assert [i for i, c in enumerate(trial_runs) if c is None] == [2, 7]
    blocks = [trial_runs[0:2], trial_runs[3:5], trial_runs[5:7]]
    assert len(trial_runs) == 8
    assert blocks[0] == blocks[2] and blocks[1] == blocks[0][::-1]
    trials = StudyView(study).records
    assert [t.role for t in trials].count(Role.CONTROL) == 1
    seqs = sorted(r.seq for t in trials for r in t.runs)
    assert seqs == list(range(len(calls)))  # every run has its place in time, once
    for t in _searched(study):
        assert len(t.runs) == 3
        assert t.value == pytest.approx(COST[t.config[KNOB]])
    result = summarize(study, None)
    assert result.runs == len(calls) == StudyView(study).runs_spent()


def test_a_space_the_budget_covers_is_raced_whole_in_one_batch() -> None:
    """Four configurations, a budget of six trials: whatever the strategy, all four run in
    one batch, block by block, and the clearly slower ones stop after their first run
    (F-race); with a budget that does not cover the space, the strategy's batches."""
    settings = _settings(3, 6, ("a", "b", "fast", "slow"), strategy="random", control_every=100)
    executor = Table()
    study = _search(settings, executor)
    first_block = executor.calls[3:7]
    assert sorted(first_block) == ["a", "b", "fast", "slow"]  # the whole space, one block
    runs = {t.config[KNOB]: len(t.runs) for t in _searched(study)}
    # the racing rules (test_racing_stops_the_clearly_worse_after_one_run_...): 4x slower
    # stops after one run, 2x slower after two
    assert runs["slow"] == 1 and runs["fast"] >= max(runs["a"], runs["b"])
    assert sum(runs.values()) < 4 * 3
    small = _settings(3, 3, ("a", "b", "fast", "slow"), strategy="random", control_every=100)
    executor = Table()
    study = _search(small, executor)
    assert len(_searched(study)) == 2  # the budget, sampled


def test_each_run_is_related_to_the_nearest_control_run() -> None:
    # phases of 7 runs alternating 2.5x and 1x: some runs fall between controls that
    # disagree (the machine changed phase in between) and cannot be placed
    settings = _settings(3, 3, ("a", "fast"), racing=False)
    executor = Table(period=7, factors=(2.5, 1.0))
    study = _search(settings, executor)
    controls = sorted(
        (r.seq, r.value)
        for t in StudyView(study).by_role(Role.REFERENCE, Role.CONTROL)
        for r in t.runs
    )
    placed = unplaced = 0
    for t in _searched(study):
        for run in t.runs:
            before = [c for c in controls if c[0] < run.seq][-1:]
            after = [c for c in controls if c[0] > run.seq][:1]
            if (
                before
                and after
                and max(before[0][1], after[0][1]) > 1.4 * min(before[0][1], after[0][1])
            ):  # the prior noise (10 %) times DISAGREE_Z
                # unplaced, or the best guess for a configuration with no run placed
                guess = run.value / math.sqrt(before[0][1] * after[0][1])
                assert run.relative is None or run.relative == pytest.approx(guess)
                unplaced += 1
                continue
            distance = min(abs(s - run.seq) for s, _ in controls)
            nearest = [v for s, v in controls if abs(s - run.seq) == distance]
            level = math.prod(nearest) ** (1 / len(nearest))
            assert run.relative == pytest.approx(run.value / level)
            placed += 1
        assert len(t.relatives()) == 3 or len(t.runs) == 6  # counted runs, capped
    assert placed and unplaced
    assert StudyView(study).noise().drift == pytest.approx(2.5)


def test_a_step_of_drift_cancels_with_controls_and_not_without() -> None:
    class Step(Table):  # everything 2.5x slower from the 6th run on (the reference is fast)
        def run(self, config: Mapping[str, object] | None, timeout: float) -> RunRecord:
            self.factors = (1.0,) if len(self.calls) < 5 else (2.5,)
            return super().run(config, timeout)

    for controls, factor in ((True, 1.0), (False, 2.5)):
        settings = _settings(3, 3, ("a", "fast"), racing=False, control_every=2, controls=controls)
        study = _search(settings, Step())
        for t in _searched(study):  # the median of each configuration's three runs
            assert t.value == pytest.approx(factor * COST[t.config[KNOB]])


def test_racing_stops_the_clearly_worse_after_one_run_and_the_separated_after_two() -> None:
    settings = _settings(3, 5, ("a", "b", "fast", "slow"))
    executor = Table()
    study = _search(settings, executor)
    runs = {t.config[KNOB]: len(t.runs) for t in _searched(study)}
    assert set(runs) == {"a", "b", "fast", "slow"}
    assert runs["slow"] == 1  # twice the defaults' time: out after one run
    assert runs["fast"] == 2  # half of it: separated from the incumbent after two
    assert all(1 <= n <= 3 for n in runs.values())
    trial_runs = [c for c in executor.calls[3:] if c is not None]
    assert len(trial_runs) == sum(runs.values())
    # no racing: every configuration to the cap
    fixed = _search(_settings(3, 5, ("a", "b", "fast", "slow"), racing=False), Table())
    assert all(len(t.runs) == 3 for t in _searched(fixed))


def test_the_statistic_is_the_users_choice() -> None:
    settings = _settings(4, 2, ("noisy",), racing=False, statistic="p90")
    COST["noisy"] = 1.0
    try:
        study = _search(settings, Table(noisy=("noisy",)))
    finally:
        del COST["noisy"]
    (trial,) = _searched(study)
    relatives = trial.relatives()
    assert sorted(relatives) == pytest.approx([0.5, 0.5, 1.5, 1.5])
    assert trial.value == pytest.approx(stats.statistic("p90")(relatives))
    assert trial.value > 1.4  # the median would say 1.0


def test_max_runs_bounds_the_whole_study_confirmation_included() -> None:
    settings = _settings(3, 5, ("a", "b", "fast", "slow"), confirm=2, max_runs=10, racing=False)
    executor = Table()
    study = open_study(optuna.storages.InMemoryStorage(), settings)
    result = tune(settings, study._storage, executor, Silent())
    assert result.runs == len(executor.calls) <= 10
    # the search stopped where the runs left were those of confirming one candidate
    assert result.trials < 5


def test_top_k_confirmation_interleaves_the_default_and_the_candidates() -> None:
    COST.update(fast_b=0.505, fast_c=0.51)  # within noise of the best: all three confirmed
    try:
        settings = _settings(3, 5, ("fast_b", "fast_c", "fast", "slow"), confirm=6, top=3,
                             racing=False)  # fmt: skip
        executor = Table()
        study = open_study(optuna.storages.InMemoryStorage(), settings)
        result = tune(settings, study._storage, executor, Silent())
    finally:
        del COST["fast_b"], COST["fast_c"]
    acc = acceptance_of(study)
    assert acc is not None and result.acceptance is not None
    searched_runs = StudyView(study).runs_spent()
    confirmation = executor.calls[searched_runs:]
    candidates = acc.candidates
    assert sorted(c["params"][KNOB] for c in candidates) == ["fast", "fast_b", "fast_c"]
    # each round runs the default and every candidate once, rotated; at the first look
    # (round 3) the two whose CI lies below the leader's speedup leave; decided after 6
    # rounds (the signed-rank test of 6 pairs at the level corrected for 3 candidates)
    assert len(confirmation) == 3 * 4 + 3 * 2
    for i in range(3):
        assert sorted(confirmation[4 * i : 4 * i + 4], key=str) == sorted(
            [None, "fast", "fast_b", "fast_c"], key=str
        )
    for i in range(3):
        assert sorted(confirmation[12 + 2 * i : 14 + 2 * i], key=str) == [None, "fast"]
    assert confirmation[0] is None and confirmation[4] is not None  # the order rotates
    assert acc.accepted and acc.params == {KNOB: "fast"} and acc.speedup == pytest.approx(2.0)
    assert acc.default_values == [1.0] * 6 and acc.runs() == 18
    assert result.runs == len(executor.calls)


def test_the_runs_left_bound_how_many_candidates_are_confirmed() -> None:
    """Three candidates within noise of each other, but after the search the runs left
    (--max-runs) hold 6 rounds of one candidate and the default, not of three: the best
    alone is confirmed, and accepted within the bound."""
    COST.update(fast_b=0.505, fast_c=0.51)
    try:
        verdicts, searched, spent = [], 0, 0
        for max_runs in (None, 0):
            if max_runs == 0:  # the search's own runs, and room for 6 rounds of two and 5 more
                max_runs = searched + 2 * 6 + 5
            settings = _settings(3, 5, ("fast_b", "fast_c", "fast", "slow"), confirm=6, top=3,
                                 racing=False, max_runs=max_runs)  # fmt: skip
            executor = Table()
            study = open_study(optuna.storages.InMemoryStorage(), settings)
            result = tune(settings, study._storage, executor, Silent())
            acc = acceptance_of(study)
            assert acc is not None
            verdicts.append(acc)
            searched, spent = len(executor.calls) - acc.runs(), result.runs
    finally:
        del COST["fast_b"], COST["fast_c"]
    unbounded, bounded = verdicts
    assert len(unbounded.candidates) == 3
    assert [c["params"][KNOB] for c in bounded.candidates] == ["fast"]
    assert bounded.accepted and spent <= searched + 2 * 6 + 5


def test_candidates_are_as_many_as_the_runs_left_can_accept() -> None:
    """Room for 5 rounds of two candidates and the default (15 runs) but not for the 6
    pairs that two candidates need to be accepted at the corrected level: the best is
    confirmed alone, and accepted after 5 rounds."""
    COST.update(fast_b=0.505)
    try:
        settings = _settings(3, 5, ("fast_b", "fast", "slow"), confirm=5, top=3,
                             racing=False)  # fmt: skip
        study = open_study(optuna.storages.InMemoryStorage(), settings)
        searched = tune(settings, study._storage, Table(), Silent()).runs
        acc = acceptance_of(study)
        assert acc is not None and len(acc.candidates) == 2  # unbounded: both
        searched -= acc.runs()
        bounded = dataclasses.replace(settings, plan=dataclasses.replace(
            settings.plan, max_runs=searched + 15))  # fmt: skip
        study = open_study(optuna.storages.InMemoryStorage(), bounded)
        result = tune(bounded, study._storage, Table(), Silent())
    finally:
        del COST["fast_b"]
    acc = acceptance_of(study)
    assert acc is not None and [c["params"][KNOB] for c in acc.candidates] == ["fast"]
    assert acc.accepted and acc.runs() == 5 * 2 and result.runs == searched + 10


def test_candidates_dominated_in_the_search_are_not_confirmed() -> None:
    """a and b came within noise of the default but are twice as slow as fast: only fast is
    confirmed, and it is decided after 5 rounds (the signed-rank test of 5 pairs, one
    candidate): 10 runs instead of 6 rounds of four."""
    settings = _settings(3, 5, ("a", "b", "fast", "slow"), confirm=6, top=3, racing=False)
    executor = Table()
    study = open_study(optuna.storages.InMemoryStorage(), settings)
    tune(settings, study._storage, executor, Silent())
    acc = acceptance_of(study)
    assert acc is not None and acc.accepted and acc.params == {KNOB: "fast"}
    assert [c["params"][KNOB] for c in acc.candidates] == ["fast"]
    assert acc.runs() == 5 * 2


def test_a_candidate_not_worth_setting_stops_the_confirmation_at_the_first_look() -> None:
    """A candidate as fast as the default (within the search's noise band, so confirmed):
    after 3 rounds its CI ends below 1.02, and the confirmation stops there (it used to
    run 5 rounds, then more while undecided)."""
    settings = _settings(2, 2, ("a",), confirm=5, top=1, racing=False)
    executor = Table()
    study = open_study(optuna.storages.InMemoryStorage(), settings)
    tune(settings, study._storage, executor, Silent())
    acc = acceptance_of(study)
    assert acc is not None and not acc.accepted
    assert len(acc.default_values) == 3 and acc.runs() == 3 * 2


def test_an_undecided_candidate_gets_more_pairs_up_to_the_cap() -> None:
    settings = _settings(2, 2, ("noisy",), confirm=3, top=1, racing=False)
    COST["noisy"] = 0.7
    try:
        executor = Table(noisy=("noisy",))
        study = open_study(optuna.storages.InMemoryStorage(), settings)
        tune(settings, study._storage, executor, Silent())
    finally:
        del COST["noisy"]
    acc = acceptance_of(study)
    assert acc is not None and not acc.accepted
    # runs alternate 0.35 and 1.05 against a default at 1.0: undecided every round
    assert len(acc.default_values) == len(acc.best_values) == CONFIRM_CAP * 3
    assert "two clusters" in acc.reason
    mean = sum(acc.best_values) / len(acc.best_values)
    assert acc.finding.mean_speedup == pytest.approx(1.0 / mean)


def test_a_failed_control_run_is_left_out_of_the_stream() -> None:
    settings = _settings(2, 3, ("a", "fast"), racing=False, control_every=1)

    class ControlFails(Table):
        def run(self, config: Mapping[str, object] | None, timeout: float) -> RunRecord:
            record = super().run(config, timeout)
            if config is None and len(self.calls) > 2:  # every control run after the reference
                return RunRecord(None, 0.0, 1, "exit status 1")
            return record

    study = _search(settings, ControlFails())
    searched = _searched(study)
    assert len(searched) == 2 and all(t.state.name == "COMPLETE" for t in searched)
    for t in searched:  # related to the reference's last run, the only control left
        assert t.relatives() == pytest.approx([COST[t.config[KNOB]]] * 2)
    (control,) = StudyView(study).controls()
    assert control.failed and control.values() == []


def test_the_cli_offers_every_statistic() -> None:
    from commtune.cli.tuning import OBJECTIVES

    assert OBJECTIVES == stats.STATISTICS
    with pytest.raises(ValueError, match="unknown statistic"):
        stats.statistic("p99")


def test_a_verdict_without_a_comparison_stores_no_figures_as_measured() -> None:
    """Nothing came within noise of the default: no confirmation ran, so the verdict holds no
    speedup, CI or p-value (once stored as 1.0, (0, 0) and 1 as if measured); the search's
    own estimate is kept under its name."""
    settings = _settings(2, 2, ("slow",), confirm=3, top=1, racing=False)
    executor = Table()
    study = open_study(optuna.storages.InMemoryStorage(), settings)
    result = tune(settings, study._storage, executor, Silent())
    acc = acceptance_of(study)
    assert acc is not None and not acc.accepted and acc.default_values == []
    assert (acc.speedup, acc.ci, acc.p_value) == (None, None, None)
    assert acc.finding.search_speedup == pytest.approx(0.5)
    data = result.to_json()
    assert data["speedup_ci"] is None and data["p_value"] is None
    # nothing handed back: no speedup said; the search's is under its own name
    assert data["speedup"] is None and data["search_speedup"] == pytest.approx(0.5)


def test_json_says_what_was_measured_and_null_for_what_was_not() -> None:
    """``--json``'s ``default_value`` is the defaults' measured statistic (it was a constant
    1.0); with no configuration measured, no best and no speedup are said."""
    from commtune.tune import TuneResult

    data = TuneResult("s", 1, 0, 2.5, None, None).to_json()
    assert data["default_value"] == data["default_raw"] == 2.5
    assert data["best_value"] is None and data["best_raw"] is None
    assert data["speedup"] is None and data["search_speedup"] is None


class FailsAfterItsFirstRun(Table):
    """A configuration's runs after its first fail: with one repeat, every confirmation run."""

    def run(self, config: Mapping[str, object] | None, timeout: float) -> RunRecord:
        record = super().run(config, timeout)
        if config is not None and self.calls.count(str(config[KNOB])) > 1:
            return RunRecord(None, 0.0, 1, failure="exit status 1")
        return record


def test_a_confirmation_whose_candidates_all_failed_stores_no_figures() -> None:
    settings = _settings(1, 2, ("fast",), confirm=3, top=1, racing=False)
    study = open_study(optuna.storages.InMemoryStorage(), settings)
    executor = FailsAfterItsFirstRun()
    tune(settings, study._storage, executor, Silent())
    assert executor.calls.count("fast") > 1  # the confirmation ran it, and it failed
    acc = acceptance_of(study)
    assert acc is not None and not acc.accepted and acc.default_values
    assert (acc.speedup, acc.ci, acc.p_value) == (None, None, None)


def test_a_trial_asked_after_the_budget_is_spent_is_unused_not_a_duplicate() -> None:
    """Another worker claims the study's last trial between this worker's look at the budget
    and its claim: the trial it asked is recorded as unused (it was once a 'duplicate' of
    nothing, without duplicate_of)."""
    from commtune.store import Claim
    from commtune.tune import Observer, Workers

    class Raced(Workers):
        def claim(self, key: str, **kw: object) -> Claim | None:
            if key.startswith("config:"):  # the other worker is first, once
                self.claims.claim("config:other", "other", trial=None, counted=True, limit=None)
            return super().claim(key, **kw)  # type: ignore[arg-type]

    settings = _settings(1, 2, ("fast", "slow"), racing=False)
    study = open_study(optuna.storages.InMemoryStorage(), settings)
    workers = Raced.solo(study.study_name)
    ctx = Context(study, settings, Table(), Silent(), workers, Observer(), 60.0)
    run_reference(ctx)
    workers.sync(study)
    search(ctx)
    view = StudyView(study)
    (unused,) = view.by_role(Role.UNUSED)
    assert unused.state.name == "PRUNED" and unused.duplicate_of is None
    assert not view.by_role(Role.DUPLICATE)


def test_min_pairs_is_where_the_signed_rank_test_first_can_say_faster() -> None:
    for k in (1, 2, 3, 4):
        level = 1 - 0.05 / k
        n = stats.min_pairs(level)
        assert n == {1: 5, 2: 6, 3: 6, 4: 7}[k]
        for pairs, faster in ((n, True), (n - 1, False)):  # every pair 2x faster
            default = [1.0 + 0.01 * i for i in range(pairs)]
            cmp = stats.compare_paired(default, [d / 2 for d in default], level=level)
            assert cmp.faster is faster
