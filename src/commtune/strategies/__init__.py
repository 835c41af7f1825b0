"""Search strategies, by name. Modules are imported only when their strategy is used."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence

from commtune.errors import UsageError
from commtune.knobs import Value
from commtune.strategies._base import Strategy, derive_seed, distributions, grid

# name -> "module:class"; add a strategy by adding a line here.
STRATEGIES: dict[str, str] = {
    "random": "commtune.strategies._optuna:RandomStrategy",
    "grid": "commtune.strategies._optuna:GridStrategy",
    "tpe": "commtune.strategies._optuna:TPEStrategy",
    "cmaes": "commtune.strategies._optuna:CmaEsStrategy",
    "ga": "commtune.strategies._ga:GeneticStrategy",
    "model": "commtune.strategies._model:ModelStrategy",
    "dqn": "commtune.strategies._dqn:DQNStrategy",
    "auto": "commtune.strategies._auto:AutoStrategy",
    "predict": "commtune.strategies._auto:PredictStrategy",
}


def get_strategy(
    name: str,
    options: Mapping[str, str] | None = None,
    hints: Sequence[Mapping[str, Value]] = (),
) -> Strategy:
    """The strategy ``name`` with its options (UsageError for a bad name or option)."""
    if name not in STRATEGIES:
        raise UsageError(f"unknown strategy {name!r} (known: {', '.join(STRATEGIES)})")
    module, cls = STRATEGIES[name].split(":")
    strategy: Strategy = getattr(importlib.import_module(module), cls)(options, hints)
    return strategy


__all__ = ["STRATEGIES", "Strategy", "derive_seed", "distributions", "get_strategy", "grid"]
