"""Search strategies, by name. Modules are imported only when their strategy is used."""

from __future__ import annotations

import importlib

from commtune.errors import UsageError
from commtune.strategies._base import Strategy, derive_seed, distributions, grid

# name -> "module:class"; add a strategy by adding a line here.
STRATEGIES: dict[str, str] = {
    "random": "commtune.strategies._optuna:RandomStrategy",
    "grid": "commtune.strategies._optuna:GridStrategy",
    "tpe": "commtune.strategies._optuna:TPEStrategy",
}


def get_strategy(name: str) -> Strategy:
    if name not in STRATEGIES:
        raise UsageError(f"unknown strategy {name!r} (known: {', '.join(STRATEGIES)})")
    module, cls = STRATEGIES[name].split(":")
    strategy: Strategy = getattr(importlib.import_module(module), cls)()
    return strategy


__all__ = ["STRATEGIES", "Strategy", "derive_seed", "distributions", "get_strategy", "grid"]
