"""The strategies that are Optuna's samplers: random, grid (exhaustive, OTPO's way) and TPE."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from commtune.knobs import Space
from commtune.strategies._base import Strategy, derive_seed, grid

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
        import optuna

        return optuna.samplers.TPESampler(
            seed=derive_seed(seed, n_trials),
            n_startup_trials=min(8, max(3, space.size() // 4)),
            multivariate=True,
            constant_liar=True,
        )
