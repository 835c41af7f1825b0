"""Strategies of our own (ga, model, dqn, auto) as Optuna samplers that rebuild from history.

The tuner makes a new sampler before every batch (see :mod:`commtune.strategies._base`), so
none of these keeps state between batches: each proposal is computed from the study's trials
in order (:class:`History`) and a random generator seeded by the strategy's seed and the
number of trials so far. A population, a fitted model or a trained Q-network is therefore
rebuilt from the trials every time, which makes "same seed, same trials" and resuming a study
hold without any state of our own in the storage.

Configurations are *points*: one index per dimension into the dimension's candidates, so every
knob type looks alike to the strategies (ordinal for integer and log2 knobs, unordered for
categorical and boolean ones).
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from commtune.errors import UsageError
from commtune.knobs import KnobType, Space
from commtune.strategies._base import Strategy, derive_seed, distributions
from commtune.study import StudyView, magnitude, spec_of

if TYPE_CHECKING:
    import optuna

Point = tuple[int, ...]
ENUMERATE_LIMIT = 20000  # spaces up to this size are enumerated whole; larger ones are sampled


@dataclass
class History:
    """The space as index grids and what the study has measured, in trial order."""

    levels: list[list[Any]]  # internal values of each dimension's candidates
    ordinal: list[bool]  # True: integer/log2 knob (its levels are ordered)
    names: list[str]
    log2: list[bool]  # True: a log2 knob (its internal values are exponents)
    points: list[Point] = field(default_factory=list)  # finished trials, in order
    values: list[float] = field(default_factory=list)
    features: list[dict[str, float] | None] = field(default_factory=list)
    failed: list[Point] = field(default_factory=list)
    pending: list[Point] = field(default_factory=list)
    order: list[tuple[Point, float | None]] = field(default_factory=list)  # every trial, in order
    arms: list[str | None] = field(default_factory=list)  # who proposed each (``auto``'s arms)
    default: Point | None = None  # the library's defaults, when they are candidates
    reference: float | None = None  # the value of the reference run (library defaults)
    reference_features: dict[str, float] | None = None
    space: Space | None = None
    # Training runs at other scales (``tune/_train.py``): (point, scale values, value), and
    # the scale this study is tuned at; the names in both are ``scale_names``.
    training: list[tuple[Point, dict[str, float], float]] = field(default_factory=list)
    target_scale: dict[str, float] = field(default_factory=dict)
    # The study and the trial being sampled (``auto`` asks Optuna's samplers for that trial).
    study: optuna.Study | None = None
    trial: optuna.trial.FrozenTrial | None = None

    @classmethod
    def of_space(cls, space: Space) -> History:
        levels = [[d.knob.to_internal(v) for v in d.candidates()] for d in space.dimensions]
        ordinal = [d.ordinal for d in space.dimensions]
        log2 = [d.knob.type is KnobType.LOG2 for d in space.dimensions]
        history = cls(levels, ordinal, space.names, log2, space=space)
        candidates = [d.candidates() for d in space.dimensions]
        if all(d.knob.default in c for d, c in zip(space.dimensions, candidates, strict=True)):
            history.default = tuple(
                c.index(d.knob.default) for d, c in zip(space.dimensions, candidates, strict=True)
            )
        return history

    @classmethod
    def of_study(
        cls, space: Space, study: optuna.Study, trial: optuna.trial.FrozenTrial | None = None
    ) -> History:
        from optuna.trial import TrialState

        history = cls.of_space(space)
        history.study, history.trial = study, trial
        seen_values: dict[Point, float] = {}
        history.read_training(study)
        for record in StudyView(study).records:
            t = record.trial
            features = dict(record.features) if record.features is not None else None
            if record.is_training:
                continue
            if record.is_reference:
                if t.state is TrialState.COMPLETE and t.value is not None:
                    history.reference = float(t.value)
                    history.reference_features = features
                    if history.default is not None:
                        history.order.append((history.default, float(t.value)))
                        history.arms.append("default")
                continue
            point = history.point_of(t.params)
            if point is None:
                continue
            if t.state in (TrialState.COMPLETE, TrialState.FAIL):
                history.arms.append(record.arm)
            if t.state is TrialState.COMPLETE and t.value is not None:
                history.order.append((point, float(t.value)))
                if point not in seen_values:  # a duplicate repeats an earlier measurement
                    seen_values[point] = float(t.value)
                    history.points.append(point)
                    history.values.append(float(t.value))
                    history.features.append(features)
            elif t.state is TrialState.FAIL:
                history.order.append((point, None))
                history.failed.append(point)
            elif t.state is TrialState.RUNNING:
                history.pending.append(point)
        if (
            history.default is not None
            and history.reference is not None
            and history.default not in seen_values
        ):
            history.points.insert(0, history.default)
            history.values.insert(0, history.reference)
            history.features.insert(0, history.reference_features)
        return history

    def read_training(self, study: optuna.Study) -> None:
        """The study's training runs, or those of the study it trains from (``train_from``),
        and its target scale."""
        import optuna

        try:
            scale = spec_of(study).scale
        except UsageError:
            return
        if not scale:
            return
        self.target_scale = {k: magnitude(v) for k, v in scale.target.items()}
        source = study
        if scale.train_from:
            try:
                source = optuna.load_study(study_name=scale.train_from, storage=study._storage)
            except KeyError:
                return
        for record in StudyView(source).training():
            t, values = record.trial, record.scale
            if not record.complete or not values or t.value is None:
                continue
            point = self.point_of(t.params) if record.config else self.default
            if point is not None and values.keys() == self.target_scale.keys():
                self.training.append((point, {k: magnitude(v) for k, v in values.items()},
                                      float(t.value)))  # fmt: skip

    # -- points -------------------------------------------------------------------------------
    def point_of(self, params: Mapping[str, Any]) -> Point | None:
        try:
            return tuple(lv.index(params[n]) for n, lv in zip(self.names, self.levels, strict=True))
        except (KeyError, ValueError):
            return None

    def params_of(self, point: Point) -> dict[str, Any]:
        return {n: lv[i] for n, lv, i in zip(self.names, self.levels, point, strict=True)}

    @property
    def sizes(self) -> list[int]:
        return [len(lv) for lv in self.levels]

    def size(self) -> int:
        return int(np.prod(self.sizes, dtype=np.int64))

    def seen(self) -> set[Point]:
        return {*self.points, *self.failed, *self.pending}

    def n_measured(self) -> int:
        """Distinct configurations measured or being measured (the reference included)."""
        return len(self.seen())

    def best(self) -> tuple[Point, float] | None:
        if not self.values:
            return None
        i = int(np.argmin(self.values))
        return self.points[i], self.values[i]

    def random_point(self, rng: np.random.Generator) -> Point:
        return tuple(int(rng.integers(n)) for n in self.sizes)

    def unseen_random(self, rng: np.random.Generator, seen: set[Point] | None = None) -> Point:
        """A random configuration not measured yet (any one if every one is)."""
        seen = self.seen() if seen is None else seen
        if len(seen) >= self.size():
            return self.random_point(rng)
        if self.size() <= ENUMERATE_LIMIT and len(seen) > self.size() // 2:
            free = [p for p in self.all_points() if p not in seen]
            return free[int(rng.integers(len(free)))]
        while True:
            point = self.random_point(rng)
            if point not in seen:
                return point

    def neighbours(self, point: Point) -> list[Point]:
        """Configurations one step away: an ordinal knob up or down, another categorical level."""
        out = []
        for d, (i, n) in enumerate(zip(point, self.sizes, strict=True)):
            steps = [i - 1, i + 1] if self.ordinal[d] else list(range(n))
            for j in steps:
                if 0 <= j < n and j != i:
                    out.append((*point[:d], j, *point[d + 1 :]))
        return out

    def all_points(self) -> Iterator[Point]:
        return itertools.product(*(range(n) for n in self.sizes))

    def candidates(self, rng: np.random.Generator, limit: int = ENUMERATE_LIMIT) -> list[Point]:
        """Every configuration of the space, or ``limit`` random ones of a larger space."""
        if self.size() <= limit:
            return list(self.all_points())
        return list({self.random_point(rng) for _ in range(limit)})

    def design(self, n: int, seed: int | None) -> list[Point]:
        """A space-filling design of ``n`` points: a Latin hypercube in index space.

        Depends on the study seed only (not on how many trials ran), so every batch continues
        the same design.
        """
        from scipy.stats import qmc

        if n <= 0:
            return []
        sample = qmc.LatinHypercube(d=len(self.sizes), seed=seed).random(n)
        sizes = np.array(self.sizes)
        idx = np.minimum((sample * sizes).astype(int), sizes - 1)
        return [tuple(int(v) for v in row) for row in idx]

    def next_of_design(self, n: int, seed: int | None, rng: np.random.Generator) -> Point:
        """The first point of the design not measured yet (the default counts as measured)."""
        seen = self.seen()
        for point in self.design(n, seed):
            if point not in seen:
                return point
        return self.unseen_random(rng, seen)

    def nearest_unseen(self, point: Point, rng: np.random.Generator) -> Point:
        """``point`` if new, else a random unmeasured neighbour, widening until one is found."""
        seen = self.seen()
        if point not in seen:
            return point
        frontier = [point]
        visited = {point}
        for _ in range(3):
            ring = [q for p in frontier for q in self.neighbours(p) if q not in visited]
            free = [q for q in ring if q not in seen]
            if free:
                return free[int(rng.integers(len(free)))]
            visited.update(ring)
            frontier = ring
        return self.unseen_random(rng, seen)

    def normalised(self, point: Point) -> np.ndarray:
        """Each index scaled to [0, 1]."""
        return np.array(
            [i / max(n - 1, 1) for i, n in zip(point, self.sizes, strict=True)], dtype=float
        )


# -- the sampler --------------------------------------------------------------------------------
class HistoryStrategy(Strategy):
    """A strategy that proposes one point at a time from the :class:`History`."""

    proposes_hints: ClassVar[bool] = True  # hint_points, where each strategy wants them

    def sampler(self, space: Space, seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
        return _sampler_class()(self, space, seed, n_trials)

    def hint_points(self, history: History, seed: int | None) -> list[Point]:
        """The hints (configurations from a platform sample or a prediction) as points. A knob
        a hint does not name takes its default when that is a candidate, else its value in the
        first point of a seeded design (stable, so a hint is one configuration)."""
        space = history.space
        if space is None:
            return []
        design = history.params_of(history.design(1, 0 if seed is None else seed)[0])
        fallback = {d.knob.name: d.knob.from_internal(design[d.knob.name])
                    for d in space.dimensions}  # fmt: skip
        points = (history.point_of(space.internal(c)) for c in self.hint_configs(space, fallback))
        return [p for p in points if p is not None]

    @abc.abstractmethod
    def propose(self, history: History, rng: np.random.Generator, seed: int | None) -> Point:
        """The next configuration to measure; ``seed`` is the study's (for designs)."""


def _sampler_class() -> type:
    import optuna

    class HistorySampler(optuna.samplers.BaseSampler):
        """Asks its strategy for a point, given the study's history, and returns its params."""

        def __init__(
            self, strategy: HistoryStrategy, space: Space, seed: int | None, n_trials: int
        ) -> None:
            self.strategy = strategy
            self.space = space
            self.seed = seed
            self.rng = np.random.default_rng(derive_seed(seed, n_trials))
            self.dists = distributions(space)

        def infer_relative_search_space(
            self, study: optuna.Study, trial: optuna.trial.FrozenTrial
        ) -> dict[str, optuna.distributions.BaseDistribution]:
            return dict(self.dists)

        def sample_relative(
            self,
            study: optuna.Study,
            trial: optuna.trial.FrozenTrial,
            search_space: dict[str, optuna.distributions.BaseDistribution],
        ) -> dict[str, Any]:
            history = History.of_study(self.space, study, trial)
            point = self.strategy.propose(history, self.rng, self.seed)
            point = history.nearest_unseen(point, self.rng)
            return history.params_of(point)

        def sample_independent(
            self,
            study: optuna.Study,
            trial: optuna.trial.FrozenTrial,
            param_name: str,
            param_distribution: optuna.distributions.BaseDistribution,
        ) -> Any:
            return optuna.samplers.RandomSampler(
                seed=int(self.rng.integers(2**31))
            ).sample_independent(study, trial, param_name, param_distribution)

    return HistorySampler
