"""Blocked comparisons: which runs the tuner makes, in which order, and how they are recorded.

The executor here records every call and answers from a table whose values drift (every run
of a phase multiplied by the same factor); nothing depends on which configuration wins.
"""

from __future__ import annotations

from collections.abc import Mapping

import optuna
import pytest

from commtune.knobs import Dimension, Space, load_catalog
from commtune.progress import Silent
from commtune.study import Role, StudySpec, config_of, role_of, run_relatives, runs_of
from commtune.trial import Executor, RunRecord
from commtune.tune import TuneSettings, noise_of, open_study, run_reference, search, summarize

KNOB = "MPIR_CVAR_ASYNC_PROGRESS"
COST = {None: 1.0, False: 1.0, True: 0.5}


class Drifting(Executor):
    """Answers ``COST[value] * phase``; the phase factor changes every ``period`` runs."""

    def __init__(self, period: int = 3, factors: tuple[float, ...] = (1.0, 2.5)) -> None:
        self.calls: list[bool | None] = []
        self.period, self.factors = period, factors

    def run(self, config: Mapping[str, object] | None, timeout: float) -> RunRecord:
        value = None if config is None else bool(config[KNOB])
        phase = self.factors[(len(self.calls) // self.period) % len(self.factors)]
        self.calls.append(value)
        result = COST[value] * phase
        return RunRecord(result, result, 0)


def _study(repeats: int, trials: int) -> tuple[optuna.Study, TuneSettings]:
    knob = load_catalog("mpich")[KNOB]
    space = Space("mpich", (Dimension(knob),))
    spec = StudySpec(["x"], "mpich", space.to_json(), "wall", repeats)
    settings = TuneSettings(
        study="b", spec=spec, space=space, strategy="grid", trials=trials, confirm=0, seed=1
    )
    storage = optuna.storages.InMemoryStorage()
    return open_study(storage, settings), settings


def test_every_block_runs_the_defaults_beside_the_batch_alternating_sides() -> None:
    study, settings = _study(repeats=3, trials=3)
    executor = Drifting()
    run_reference(study, settings, executor, Silent())
    search(study, settings, executor, 60.0, Silent())
    # reference: 3 runs of the defaults; one batch of the grid's two configurations in three
    # blocks: control first, then last, then first; the trials rotated block by block.
    assert executor.calls[:3] == [None, None, None]
    blocks = [executor.calls[3:6], executor.calls[6:9], executor.calls[9:12]]
    assert len(executor.calls) == 12
    assert blocks[0][0] is None and blocks[1][-1] is None and blocks[2][0] is None
    assert blocks[0][1:] == blocks[2][1:] and blocks[1][:2] == blocks[0][1:][::-1]
    trials = study.get_trials()
    roles = [role_of(t) for t in trials]
    assert roles.count(Role.CONTROL) == 1 and roles.count(Role.SEARCH) == 2
    control = next(t for t in trials if role_of(t) is Role.CONTROL)
    assert control.value == 1.0 and len(runs_of(control)) == 3
    for t in trials:
        if role_of(t) is not Role.SEARCH:
            continue
        runs = runs_of(t)
        assert [r["block"] for r in runs] == [f"{control.number}.{r}" for r in range(3)]
        # each run divided by its own block's control run: the drift cancels exactly
        expected = COST[config_of(t)[KNOB]]
        assert run_relatives(t) == pytest.approx([expected] * 3)
        assert t.value == pytest.approx(expected)
    noise = noise_of(study)
    assert noise.cv == pytest.approx(0.0, abs=1e-12) and noise.drift == pytest.approx(2.5)
    result = summarize(study, None)
    assert result.runs == 12 and result.best is not None
    assert result.best.value == pytest.approx(0.5) and result.best.speedup == pytest.approx(2.0)


def test_a_failed_control_run_falls_back_to_the_reference() -> None:
    study, settings = _study(repeats=2, trials=3)

    class ControlFails(Drifting):
        def run(self, config: Mapping[str, object] | None, timeout: float) -> RunRecord:
            record = super().run(config, timeout)
            if config is None and len(self.calls) > 2:  # every control run after the reference
                return RunRecord(None, 0.0, 1, "exit status 1")
            return record

    executor = ControlFails(period=1000)
    run_reference(study, settings, executor, Silent())
    search(study, settings, executor, 60.0, Silent())
    searched = [t for t in study.get_trials() if role_of(t) is Role.SEARCH]
    assert len(searched) == 2 and all(t.state.name == "COMPLETE" for t in searched)
    for t in searched:  # related to the reference's median (1.0) instead
        assert run_relatives(t) == pytest.approx([COST[config_of(t)[KNOB]]] * 2)
    control = next(t for t in study.get_trials() if role_of(t) is Role.CONTROL)
    assert control.state.name == "FAIL"
