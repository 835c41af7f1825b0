"""Search strategies, by name. Modules are imported only when their strategy is used."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence

from commtune.errors import UsageError
from commtune.knobs import Space, Value
from commtune.strategies._base import Option, Strategy, derive_seed, distributions, grid

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


def design_configs(space: Space, n: int, seed: int) -> list[dict[str, Value]]:
    """``n`` distinct configurations spread over ``space`` (a Latin hypercube of the
    strategies' points, a denser one where rows coincide; all of a space that small), the
    same for the same seed."""
    from commtune.strategies._history import History

    history = History.of_space(space)
    if space.size() <= n:
        points = list(history.all_points())
    else:
        m = n
        points = list(dict.fromkeys(history.design(m, seed)))
        while len(points) < n:
            m *= 2
            points = list(dict.fromkeys([*points, *history.design(m, seed)]))
        points = points[:n]
    out = []
    for p in points:
        params = history.params_of(p)
        out.append(
            {d.knob.name: d.knob.from_internal(params[d.knob.name]) for d in space.dimensions}
        )
    return out


Measured = tuple[Mapping[str, Value], float | None]  # a configuration and its value (None: failed)


def pretrain_dqn(
    space: Space,
    programs: Sequence[tuple[Mapping[str, float], float, Sequence[Measured]]],
    seed: int = 0,
) -> dict[str, object]:
    """A Q-network for ``--strategy dqn --strategy-option warm=FILE`` (its JSON), pre-trained
    on whole tables of other programs over ``space``: per program its reference features,
    its reference value and (configuration, value or None for a failed one) pairs."""
    from commtune.strategies._dqn import pretrain, program_history

    tables = [program_history(space, f, r, m) for f, r, m in programs]
    return pretrain(tables, seed=seed).to_json()


__all__ = [
    "STRATEGIES",
    "Option",
    "Strategy",
    "derive_seed",
    "design_configs",
    "distributions",
    "get_strategy",
    "grid",
    "pretrain_dqn",
]
