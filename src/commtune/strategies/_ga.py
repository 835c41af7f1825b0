"""``ga``: the genetic algorithm of H5Tuner (Behzad et al.), over the study's history.

Initial population: a Latin hypercube (space-filling, unlike H5Tuner's random one). Then every
proposal is a child: two parents chosen by tournament or roulette from the parent pool, uniform
crossover, per-gene mutation. The parent pool is the ``elite`` best configurations measured so
far plus the most recent ``population - elite`` ones (with ``elite = population`` this is the
(mu+lambda) scheme). Mutation of an integer or log2 knob moves it a few steps up or down (its
domain step, so values stay valid), or, one time in four, to any value; a categorical or
boolean knob takes another of its values. A failed configuration has the worst fitness.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from commtune.strategies._base import Option
from commtune.strategies._history import History, HistoryStrategy, Point


class GeneticStrategy(HistoryStrategy):
    name: ClassVar[str] = "ga"
    batch_size: ClassVar[int] = 4
    OPTIONS: ClassVar[dict[str, Option]] = {
        "population": Option(int, 8, "size of the parent pool and of the initial design"),
        "elite": Option(int, 3, "best configurations always kept in the parent pool"),
        "selection": Option(str, "tournament", "parent selection", ("tournament", "roulette")),
        "tournament": Option(int, 3, "contestants per tournament"),
        "crossover": Option(float, 0.8, "probability that a child mixes two parents"),
        "mutation": Option(float, 0.0, "per-knob mutation probability (0: 1/number of knobs)"),
    }

    def propose(self, history: History, rng: np.random.Generator, seed: int | None) -> Point:
        o = self.options
        size = max(2, int(o["population"]))
        if history.n_measured() < size:
            hints = [p for p in self.hint_points(history, seed) if p not in history.seen()]
            return hints[0] if hints else history.next_of_design(size, seed, rng)
        pool, fitness = self.parents(history, size, min(int(o["elite"]), size))
        seen = history.seen()
        child = pool[0]
        for _ in range(20):
            a = pool[self.select(fitness, rng)]
            b = pool[self.select(fitness, rng)]
            child = crossover(a, b, rng) if rng.random() < o["crossover"] else a
            child = mutate(history, child, rng, o["mutation"] or 1.0 / len(child))
            if child not in seen:
                return child
        return history.nearest_unseen(child, rng)

    @staticmethod
    def parents(history: History, size: int, elite: int) -> tuple[list[Point], np.ndarray]:
        """The parent pool and its fitness (higher is better, failures worst)."""
        worst = max(history.values) if history.values else 1.0
        scored = [(p, worst * 1.5 if v is None else v) for p, v in history.order]
        ranked = sorted(dict(scored).items(), key=lambda pv: pv[1])
        pool = dict(ranked[:elite])
        for p, v in reversed(scored):
            if len(pool) >= size:
                break
            pool.setdefault(p, v)
        points = list(pool)
        values = np.array([pool[p] for p in points])
        return points, values.max() - values + 1e-12 * (1 + abs(values.max()))

    def select(self, fitness: np.ndarray, rng: np.random.Generator) -> int:
        if self.options["selection"] == "roulette":
            return int(rng.choice(len(fitness), p=fitness / fitness.sum()))
        k = min(max(1, int(self.options["tournament"])), len(fitness))
        contestants = rng.choice(len(fitness), size=k, replace=False)
        return int(contestants[np.argmax(fitness[contestants])])


def crossover(a: Point, b: Point, rng: np.random.Generator) -> Point:
    """Uniform crossover: each knob from either parent."""
    return tuple(x if rng.random() < 0.5 else y for x, y in zip(a, b, strict=True))


def mutate(history: History, point: Point, rng: np.random.Generator, rate: float) -> Point:
    out = list(point)
    for d, n in enumerate(history.sizes):
        if n < 2 or rng.random() >= rate:
            continue
        if history.ordinal[d] and rng.random() < 0.75:
            step = int(rng.geometric(0.5)) * (1 if rng.random() < 0.5 else -1)
            out[d] = int(np.clip(out[d] + step, 0, n - 1))
        else:
            others = [i for i in range(n) if i != out[d]]
            out[d] = others[int(rng.integers(len(others)))]
    return tuple(out)
