"""Strategy: how the next configurations are proposed.

Contract:
- A strategy proposes from the space and the study's history only (what Optuna's storage
  holds); it never runs anything itself. The tuner asks it for a sampler before each batch:
  ``sampler(space, seed, n_trials)`` must be deterministic in its arguments, so the same seed
  gives the same trials (also in a fresh process), and a resumed study, whose ``n_trials`` has
  grown, does not repeat its earlier proposals.
- ``batch_size`` proposals are run together, their repeats interleaved, so drift of a shared
  machine hits them alike.
- ``exhausted(space, study)`` says when a strategy has nothing new to propose (grid).
"""

from __future__ import annotations

import abc
import hashlib
from typing import TYPE_CHECKING, Any, ClassVar

from commtune.knobs import KnobType, Space

if TYPE_CHECKING:
    import optuna


def derive_seed(seed: int | None, n_trials: int) -> int | None:
    """A sampler seed for the batch that starts after ``n_trials`` trials."""
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}:{n_trials}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def distributions(space: Space) -> dict[str, optuna.distributions.BaseDistribution]:
    """Optuna distributions of the space's internal values (LOG2 knobs: the exponent)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    out: dict[str, Any] = {}
    for dim in space.dimensions:
        knob = dim.knob
        if dim.values is not None or knob.type in (KnobType.CATEGORICAL, KnobType.BOOL):
            out[knob.name] = CategoricalDistribution(
                [knob.to_internal(v) for v in dim.candidates()]
            )
        else:
            values = [knob.to_internal(v) for v in dim.candidates()]
            step = 1 if knob.type is KnobType.LOG2 else knob.step
            out[knob.name] = IntDistribution(int(values[0]), int(values[-1]), step=step)
    return out


def grid(space: Space) -> dict[str, list[Any]]:
    """Every internal value of each dimension (the grid of an exhaustive search)."""
    return {d.knob.name: [d.knob.to_internal(v) for v in d.candidates()] for d in space.dimensions}


class Strategy(abc.ABC):
    """Base class of every search strategy (see the module docstring for the contract)."""

    name: ClassVar[str]
    batch_size: ClassVar[int] = 4

    @abc.abstractmethod
    def sampler(self, space: Space, seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
        """The sampler for the next batch, after ``n_trials`` trials of the study."""

    def exhausted(self, space: Space, n_distinct: int) -> bool:
        """True when every configuration this strategy can propose has been measured."""
        return n_distinct >= space.size()
