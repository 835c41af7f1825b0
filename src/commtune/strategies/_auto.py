"""``auto``: a portfolio of strategies sharing one study, with OpenTuner's AUC bandit.

Every arm proposes from the whole history, so a configuration found by one is known to all
(the GA breeds from TPE's finds, the model fits every measurement). Before each proposal the
bandit picks the arm with the highest score ``AUC + c * sqrt(2 ln N / n_arm)``: ``AUC`` is the
area under the curve of the arm's last ``window`` proposals, where a proposal counts 1 if it
was the best configuration measured so far when it finished and later proposals weigh more
(Fialho et al., as in OpenTuner's ``AUCBanditMetaTechnique``); ``N`` is the number of bandit
proposals and ``n_arm`` the arm's share. An arm not yet used goes first.

Before the bandit: the hints (a configuration from the platform's sample or a prediction), then
a space-filling design shared by all arms. The reference run already measured the defaults.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from commtune.errors import UsageError
from commtune.knobs import Value
from commtune.strategies._base import Option, distributions
from commtune.strategies._dqn import DQNStrategy
from commtune.strategies._ga import GeneticStrategy
from commtune.strategies._history import History, HistoryStrategy, Point
from commtune.strategies._model import ModelStrategy
from commtune.study import mark

ARMS = ("tpe", "cmaes", "ga", "model", "dqn", "random")
OPTUNA_ARMS = ("tpe", "cmaes")


class AutoStrategy(HistoryStrategy):
    name: ClassVar[str] = "auto"
    batch_size: ClassVar[int] = 2
    OPTIONS: ClassVar[dict[str, Option]] = {
        "arms": Option(str, "cmaes,ga", f"comma-separated strategies of {', '.join(ARMS)}"),
        "initial": Option(int, 3, "size of the shared design, the reference included"),
        "window": Option(int, 12, "proposals of an arm the AUC looks at"),
        "c": Option(float, 0.15, "weight of exploration in the bandit's score"),
    }

    def __init__(
        self, options: Mapping[str, str] | None = None, hints: Sequence[Mapping[str, Value]] = ()
    ) -> None:
        super().__init__(options, hints)
        self.arms = [a.strip() for a in str(self.options["arms"]).split(",") if a.strip()]
        unknown = [a for a in self.arms if a not in ARMS]
        if unknown or not self.arms:
            raise UsageError(
                f"strategy auto: arms must be among {', '.join(ARMS)} (got {self.options['arms']})"
            )
        self.members: dict[str, HistoryStrategy] = {
            "ga": GeneticStrategy({"population": "6", "elite": "3"}),
            "model": ModelStrategy({"initial": "4", "refit": "always"}),
            "dqn": DQNStrategy({"explore": "1000"}),
        }

    def propose(self, history: History, rng: np.random.Generator, seed: int | None) -> Point:
        study, trial = history.study, history.trial
        assert study is not None and trial is not None
        n0 = int(self.options["initial"])
        seen = history.seen()
        arm = "design"
        hints = [p for p in self.hint_points(history, seed) if p not in seen]
        if hints:
            point, arm = hints[0], "hint"
        elif history.n_measured() < n0:
            point = history.next_of_design(n0, seed, rng)
        else:
            arm = self.choose(history)
            point = self.ask_arm(arm, history, rng, seed)
        mark(study, trial, arm=arm)
        return point

    def credits(self, history: History) -> dict[str, list[float]]:
        """For each arm, 1 or 0 per proposal it made: was it a new best when it finished?"""
        out: dict[str, list[float]] = {a: [] for a in self.arms}
        best = math.inf
        for (_, value), arm in zip(history.order, history.arms, strict=True):
            win = value is not None and value < best
            if value is not None:
                best = min(best, value)
            if arm in out:
                out[arm].append(1.0 if win else 0.0)
        return out

    def choose(self, history: History) -> str:
        credits = self.credits(history)
        for arm in self.arms:
            if not credits[arm]:
                return arm
        total = sum(len(c) for c in credits.values())
        window = max(1, int(self.options["window"]))
        scores = {}
        for arm in self.arms:
            recent = credits[arm][-window:]
            weights = np.arange(1, len(recent) + 1)
            auc = float(np.dot(weights, recent) / weights.sum())
            bonus = float(self.options["c"]) * math.sqrt(2 * math.log(total) / len(credits[arm]))
            scores[arm] = auc + bonus
        return max(self.arms, key=lambda a: scores[a])

    def ask_arm(
        self, arm: str, history: History, rng: np.random.Generator, seed: int | None
    ) -> Point:
        if arm == "random":
            return history.unseen_random(rng)
        if arm in OPTUNA_ARMS:
            return self.ask_optuna(arm, history, rng)
        return self.members[arm].propose(history, rng, seed)

    @staticmethod
    def ask_optuna(arm: str, history: History, rng: np.random.Generator) -> Point:
        """A proposal of one of Optuna's samplers, made for the trial being sampled."""
        from commtune.strategies import get_strategy

        study, trial, space = history.study, history.trial, history.space
        assert study is not None and trial is not None and space is not None
        n_trials = len(study.get_trials(deepcopy=False))
        sampler = get_strategy(arm).sampler(space, int(rng.integers(2**31)), n_trials)
        joint = sampler.infer_relative_search_space(study, trial)
        params = sampler.sample_relative(study, trial, joint)
        for name, dist in distributions(space).items():
            if name not in params:
                params[name] = sampler.sample_independent(study, trial, name, dist)
        point = history.point_of(params)
        return point if point is not None else history.unseen_random(rng)


class PredictStrategy(AutoStrategy):
    """``auto`` started from the configuration the prediction model gives for the reference
    run's profile (``commtune train``); ``tune`` passes it as the first hint."""

    name: ClassVar[str] = "predict"
