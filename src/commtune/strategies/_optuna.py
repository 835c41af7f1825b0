"""The strategies that are Optuna's samplers: random, grid (exhaustive, OTPO's way), TPE and
CMA-ES.

Optuna's model-based samplers infer their joint ("relative") search space as the intersection
of the finished trials' parameters. The reference trial (library defaults, nothing set) has no
parameters, so that intersection would be empty and TPE and CMA-ES would fall back to sampling
each knob on its own (TPE) or at random (CMA-ES). They are given the whole space instead; trials
without parameters are then simply not observations.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar

from commtune.knobs import Space
from commtune.strategies._base import Strategy, derive_seed, distributions, grid

if TYPE_CHECKING:
    import optuna


class RandomStrategy(Strategy):
    name: ClassVar[str] = "random"

    def sampler(self, space: Space, seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
        import optuna

        return optuna.samplers.RandomSampler(seed=derive_seed(seed, n_trials))


class GridStrategy(Strategy):
    """Every configuration of the space, once, in a seeded random order."""

    name: ClassVar[str] = "grid"

    def sampler(self, space: Space, seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
        import optuna

        class _Grid(optuna.samplers.GridSampler):
            # Optuna's GridSampler calls study.stop() once the grid is done, which only works
            # inside study.optimize(); the tuner stops by itself (Strategy.exhausted).
            def after_trial(self, *args: object, **kwargs: object) -> None:
                return None

        # GridSampler skips grid points already in the study, so resuming continues the grid.
        return _Grid(grid(space), seed=seed)


class TPEStrategy(Strategy):
    """Optuna's tree-structured Parzen estimator; batches use the constant liar."""

    name: ClassVar[str] = "tpe"
    batch_size: ClassVar[int] = 2

    def sampler(self, space: Space, seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
        return tpe_sampler(space, derive_seed(seed, n_trials))


def tpe_sampler(
    space: Space, seed: int | None, n_startup: int | None = None
) -> optuna.samplers.BaseSampler:
    import optuna

    dists = distributions(space)

    class _TPE(optuna.samplers.TPESampler):
        def infer_relative_search_space(self, *args: object) -> dict[str, Any]:
            return dict(dists)

    return _TPE(
        seed=seed,
        n_startup_trials=min(8, max(3, space.size() // 4)) if n_startup is None else n_startup,
        multivariate=True,
        constant_liar=True,
    )


class CmaEsStrategy(Strategy):
    """Optuna's CMA-ES (with margin, for integer knobs); categorical knobs are sampled at
    random, as Optuna does."""

    name: ClassVar[str] = "cmaes"
    batch_size: ClassVar[int] = 4

    def sampler(self, space: Space, seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
        import optuna

        numeric = {
            name: dist
            for name, dist in distributions(space).items()
            if not isinstance(dist, optuna.distributions.CategoricalDistribution)
        }

        class _CmaEs(optuna.samplers.CmaEsSampler):
            def infer_relative_search_space(self, *args: object) -> dict[str, Any]:
                return dict(numeric) if len(numeric) > 1 else {}

        with warnings.catch_warnings():  # with_margin is "experimental" in Optuna
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return _CmaEs(
                seed=derive_seed(seed, 0),
                n_startup_trials=1,
                with_margin=True,
                warn_independent_sampling=False,
                independent_sampler=optuna.samplers.RandomSampler(seed=derive_seed(seed, n_trials)),
            )
