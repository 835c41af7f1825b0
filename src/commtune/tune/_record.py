"""A balanced, interleaved sweep of a whole space, written as a replay table.

Every configuration of the space and the library's defaults are run the same number of
times, in rounds: each round runs all of them once, in an order shuffled anew, so a machine
that drifts during the sweep (these machines do, 2.5x for minutes) slows every configuration
alike instead of the ones that happened to run late. A configuration that fails is recorded
as failed once and not run again. The table is what ``tune --replay`` and the strategy race
answer from (as Kernel Tuner keeps cache files): each configuration's recorded runs, its
median the truth, its spread the noise a replayed study sees.
"""

from __future__ import annotations

import itertools
import random
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from commtune.errors import UsageError
from commtune.knobs import Space, Value
from commtune.profile import Profile
from commtune.progress import Progress
from commtune.trial import Executor, ReplayExecutor, stderr_summary
from commtune.tune._loop import MIN_TIMEOUT, tidy_leftovers
from commtune.tune._reference import ReferenceFailed

MAX_RUNS = 20_000  # a sweep larger than this is refused (days of runs)


@dataclass
class Recording:
    """A finished sweep (see the module docstring); ``profile``: the first defaults run's."""

    library: str
    space: Space
    repeats: int
    default: list[float | None]
    values: dict[str, list[float | None]]  # ReplayExecutor.key(config) -> its runs
    configs: dict[str, dict[str, Value]]
    order: list[str]  # every run's configuration key, in the order run ("": the defaults)
    profile: Profile | None = field(default=None, compare=False)

    def to_json(self, **extra: Any) -> dict[str, Any]:
        """The replay file: what ``ReplayExecutor`` and ``race.replayed`` read, and how it
        was measured; ``order``: every run in the order run, as the index of its entry
        in ``trials`` (-1: the defaults), the time each value was measured in."""
        index = {key: i for i, key in enumerate(self.values)}
        return {
            "library": self.library,
            **extra,
            "repeats": self.repeats,
            "balanced": True,
            "space": self.space.to_json(),
            "default": self.default,
            "trials": [
                {"params": self.configs[key], "values": values}
                for key, values in self.values.items()
            ],
            "order": [index.get(key, -1) for key in self.order],
        }

    def failed(self) -> list[str]:
        return [key for key, values in self.values.items() if values and values[0] is None]


def configurations(space: Space) -> list[dict[str, Value]]:
    """Every configuration of the space (each knob's candidates, all combinations)."""
    dims = space.dimensions
    return [
        {d.knob.name: v for d, v in zip(dims, combo, strict=True)}
        for combo in itertools.product(*(d.candidates() for d in dims))
    ]


def record(
    executor: Executor,
    space: Space,
    repeats: int,
    ui: Progress,
    *,
    seed: int | None = None,
    timeout: float | None = None,
    reference_timeout: float = 600.0,
) -> Recording:
    """Run every configuration and the defaults ``repeats`` times, a shuffled round at a
    time. The first run is the defaults' (it sets the timeout: 5x its time, at least
    ``MIN_TIMEOUT``, unless ``timeout`` is given); a failing first run is an error."""
    configs = configurations(space)
    total = (len(configs) + 1) * repeats
    if total > MAX_RUNS:
        raise UsageError(
            f"recording {len(configs)} configurations {repeats} times is {total} runs "
            f"(at most {MAX_RUNS}): name fewer knobs or values"
        )
    tidy_leftovers(ui)  # as a study does
    rng = random.Random(seed)
    keys = {ReplayExecutor.key(c): c for c in configs}
    values: dict[str, list[float | None]] = {key: [] for key in keys}
    default: list[float | None] = []
    order: list[str] = []
    with ui.progress(f"recording {len(configs)} configurations x {repeats}", total) as bar:
        first = executor.run(None, reference_timeout)
        if first.value is None:
            said = stderr_summary(first.stderr_tail)
            raise ReferenceFailed(
                f"the first run (library defaults) failed with {first.failure}"
                + (f": {said}" if said else "")
                + "; the command itself does not work"
            )
        default.append(first.value)
        order.append("")
        bar.advance()
        timeout = timeout or max(MIN_TIMEOUT, 5 * first.wall)
        for round_ in range(repeats):
            todo: list[str] = list(keys) + ([""] if round_ else [])
            rng.shuffle(todo)
            for key in todo:
                runs = default if key == "" else values[key]
                if runs and runs[0] is None:  # failed once: not again
                    bar.advance()
                    continue
                run = executor.run(keys[key] if key else None, timeout)
                runs.append(run.value)
                order.append(key)
                if run.value is None and key == "":
                    ui.warn(f"a run of the defaults failed: {run.failure}")
                elif run.value is None:
                    ui.warn(f"{_short(keys[key])} failed: {run.failure}")
                best = [
                    statistics.median(x for x in v if x is not None)
                    for v in values.values()
                    if v and v[0] is not None
                ]
                bar.advance(status=f"best so far {min(best):.4g}" if best else None)
    return Recording(space.library, space, repeats, default, values, keys, order, first.profile)


def _short(config: Mapping[str, Value]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())
