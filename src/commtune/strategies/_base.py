"""Strategy: how the next configurations are proposed.

Contract:
- A strategy proposes from the space and the study's history only (what Optuna's storage
  holds); it never runs anything itself. The tuner asks it for a sampler before each batch:
  ``sampler(space, seed, n_trials)`` must be deterministic in its arguments, so the same seed
  gives the same trials (also in a fresh process), and a resumed study, whose ``n_trials`` has
  grown, does not repeat its earlier proposals.
- ``batch_size`` proposals are run together, their repeats interleaved, so drift of a shared
  machine hits them alike.
- ``exhausted(space, n_distinct)`` says when a strategy has nothing new to propose once
  ``n_distinct`` configurations are measured (grid: the whole space).
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from commtune.errors import UsageError
from commtune.knobs import KnobType, Space, Value

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


# -- strategy options --------------------------------------------------------------------------
@dataclass(frozen=True)
class Option:
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()


def parse_options(
    strategy: str, declared: Mapping[str, Option], given: Mapping[str, str]
) -> dict[str, Any]:
    """Options given as text (``--strategy-option KEY=VALUE``) checked against the declared."""
    out = {k: o.default for k, o in declared.items()}
    for key, text in given.items():
        option = declared.get(key)
        if option is None:
            known = ", ".join(declared) or "none"
            raise UsageError(f"strategy {strategy}: unknown option {key!r} (known: {known})")
        try:
            value = option.type(text)
        except ValueError:
            raise UsageError(
                f"strategy {strategy}: option {key}={text!r} is not a {option.type.__name__}"
            ) from None
        if option.choices and value not in option.choices:
            raise UsageError(
                f"strategy {strategy}: option {key} must be one of {', '.join(option.choices)}"
            )
        if isinstance(value, int | float) and value < 0:
            raise UsageError(f"strategy {strategy}: option {key} must not be negative")
        out[key] = value
    return out


def grid(space: Space) -> dict[str, list[Any]]:
    """Every internal value of each dimension (the grid of an exhaustive search)."""
    return {d.knob.name: [d.knob.to_internal(v) for v in d.candidates()] for d in space.dimensions}


class Strategy(abc.ABC):
    """Base class of every search strategy (see the module docstring for the contract).

    ``options`` (``--strategy-option KEY=VALUE``) are checked against ``OPTIONS``; ``hints``
    are configurations worth measuring early (earlier studies' answers, a platform sample's
    or a prediction's): a strategy that ``proposes_hints`` places them itself; for the
    others (Optuna's samplers) the tuner measures them first (``tune._loop``).
    """

    name: ClassVar[str]
    batch_size: ClassVar[int] = 4
    OPTIONS: ClassVar[dict[str, Option]] = {}
    # whether the strategy proposes the hints itself; else the tuner measures them first
    proposes_hints: ClassVar[bool] = False

    def __init__(
        self, options: Mapping[str, str] | None = None, hints: Sequence[Mapping[str, Value]] = ()
    ) -> None:
        self.options = parse_options(self.name, self.OPTIONS, options or {})
        self.hints = [dict(h) for h in hints]

    @abc.abstractmethod
    def sampler(self, space: Space, seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
        """The sampler for the next batch, after ``n_trials`` trials of the study."""

    def hint_configs(
        self, space: Space, fallback: Mapping[str, Value] | None = None
    ) -> list[dict[str, Value]]:
        """The hints as whole configurations of ``space``: a knob a hint does not name takes
        its default where that is a candidate, else its ``fallback`` value (else its first
        candidate); a hint naming a value the space does not hold is left out."""
        out: list[dict[str, Value]] = []
        for hint in self.hints:
            config: dict[str, Value] = {}
            for d in space.dimensions:
                candidates = d.candidates()
                value = hint.get(d.knob.name, d.knob.default)
                if value not in candidates:
                    if d.knob.name in hint:
                        break  # a value outside the space: not this space's configuration
                    value = (fallback or {}).get(d.knob.name, candidates[0])
                config[d.knob.name] = value
            else:
                if config not in out:
                    out.append(config)
        return out

    def exhausted(self, space: Space, n_distinct: int) -> bool:
        """True when every configuration this strategy can propose has been measured."""
        return n_distinct >= space.size()
