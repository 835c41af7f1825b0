"""The one pair runner: every run a verdict makes beside the defaults.

The study's verdict (``_decide``), ``commtune check`` and ``run --study``'s stale check
(``_stale.recheck``), ``predict --verify`` and the whole runs after an in-run race
(``_whole``) all run their configurations beside the defaults here, in rounds
(:class:`Rounds`): each round runs the defaults and the configurations it holds, in an order
drawn at random (one configuration: a fair coin, ``rule.coins``, the design the rule's
exactness rests on; several: ``rule.shuffled``), and keeps each run beside its round. A run
that fails is counted once, where it failed (:class:`Failed`): its configuration is out, and
every one of the round where the defaults' run failed; it is never evidence.

:func:`lone` tests one configuration so, at the looks of the rule (:mod:`commtune.rule`),
and returns what it found as one frozen record (:class:`Lone`); each caller decides what to
stop on (a pass, no look to come could pass, its runs showing it no faster) and words it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from commtune import rule
from commtune.knobs import Value
from commtune.trial import Executor


class Ran(Protocol):
    """One run, as the runner reads it (``trial.TrialRun`` is one)."""

    @property
    def value(self) -> float | None: ...

    @property
    def failure(self) -> str | None: ...

    @property
    def secondary(self) -> Mapping[str, float | None]: ...


UNBOUNDED = 2**62  # the runs left of a runner its caller bounds itself
Runner = Callable[[Mapping[str, Value] | None], Ran]  # None: the defaults' run


@dataclass(frozen=True)
class Failed:
    """A run that failed: the defaults' (``of_defaults``) or the configuration's, in round
    ``round`` (from 0), for ``why`` (the run's own reason; empty where it gave none)."""

    of_defaults: bool
    round: int
    why: str

    def comparison(self) -> str:
        """The failure as ``check`` and ``predict --verify`` say it: nothing is concluded."""
        which = "the defaults" if self.of_defaults else "the configuration"
        return (f"{which} could not run here (round {self.round + 1} of the comparison): "
                f"{self.why or 'no value of the metric in its output'}; nothing is concluded, "
                "nothing stored")  # fmt: skip


@dataclass
class Entrant:
    """A configuration run beside the defaults: its runs and the defaults' by round."""

    config: dict[str, Value]
    rounds: dict[int, float] = field(default_factory=dict, kw_only=True)  # round -> its run
    beside: dict[int, float] = field(default_factory=dict, kw_only=True)  # -> the defaults'
    others: dict[int, dict[str, float | None]] = field(default_factory=dict, kw_only=True)
    failed: Failed | None = field(default=None, kw_only=True)

    def pairs(self) -> tuple[list[float], list[float]]:
        """(the defaults' runs, its runs beside them): the rounds in which both ran."""
        both = [i for i in self.rounds if i in self.beside]
        return [self.beside[i] for i in both], [self.rounds[i] for i in both]

    @property
    def failure(self) -> str:
        """Why it is out, as the verdict says it (empty: it is not)."""
        if self.failed is None:
            return ""
        if self.failed.of_defaults:
            return f"the defaults' run failed: {self.failed.why}"
        return f"failed when run again: {self.failed.why}"


@dataclass
class Rounds:
    """The runs beside the defaults, round by round (the module docstring). ``left``: the
    runs it may still make, counted down (its callers stop at 0); ``bar``: advanced at every
    run."""

    run: Runner
    seed: int | None
    bar: Any = None
    left: int = UNBOUNDED
    done: int = 0  # the rounds made
    default_others: dict[int, dict[str, float | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.coins = rule.coins(self.seed)  # a one-configuration round's order

    def order(self, entrants: Sequence[Entrant]) -> list[Entrant | None]:
        """This round's runs in the order they are made (None: the defaults')."""
        if len(entrants) == 1:
            return [entrants[0], None] if next(self.coins) else [None, entrants[0]]
        return rule.shuffled([None, *entrants], self.seed, self.done)

    def round(self, entrants: Sequence[Entrant]) -> None:
        """One round of the defaults and ``entrants``; a run that fails puts its entrant out
        (every entrant of the round, where the defaults' run failed)."""
        for which in self.order(entrants):
            if all(e.failed for e in entrants):
                break
            ran = self.run(None if which is None else which.config)
            self.left -= 1
            if self.bar is not None:
                self.bar.advance()
            if ran.value is None:
                failed = Failed(which is None, self.done, ran.failure or "")
                for e in entrants if which is None else [which]:
                    e.failed = failed
                if which is None:
                    break
            elif which is None:
                for e in entrants:
                    e.beside[self.done] = ran.value
                self.default_others[self.done] = dict(ran.secondary)
            else:
                which.rounds[self.done] = ran.value
                which.others[self.done] = dict(ran.secondary)
        self.done += 1


class Stop(enum.Enum):
    """Why a lone test stopped."""

    PASSED = "passed"  # a look passed it
    NO_FASTER = "no faster"  # its runs show it no faster (``Slower``)
    HOPELESS = "hopeless"  # no look to come could pass it
    ENDED = "ended"  # its pairs ran out
    FAILED = "failed"  # a run failed


@dataclass(frozen=True)
class Slower:
    """Stop a lone test as no faster from ``after`` pairs on, where its interval ends below
    ``negligible`` or its estimate is at most 1 (``commtune check``)."""

    after: int
    negligible: float


@dataclass(frozen=True)
class Lone:
    """One configuration's test beside the defaults: its pairs, the rule's test (at the look
    that passed it; else its figures on every pair, no look: ``limit`` 0), the looks it had,
    why it stopped and the run that failed (no evidence)."""

    defaults: tuple[float, ...]
    config: tuple[float, ...]
    test: rule.Test | None
    looks: tuple[tuple[int, float], ...]
    stop: Stop
    failed: Failed | None = None

    @property
    def passed(self) -> bool:
        return self.stop is Stop.PASSED

    @property
    def pairs(self) -> int:
        return len(self.config)


def lone(
    run: Runner,
    config: Mapping[str, Value],
    looks: Sequence[tuple[int, float]],
    *,
    tolerance: float,
    min_gain: float,
    seed: int | None,
    bar: Any = None,
    pairs: int | None = None,
    hopeless: bool = True,
    slower: Slower | None = None,
    grow: Callable[[int], None] | None = None,
) -> Lone:
    """``config`` tested alone beside the defaults, a pair a round (its order by a coin), up
    to ``pairs`` pairs (None: the last look's): the rule at each of ``looks`` (``rule.looks``),
    stopping once one passes it, where ``hopeless`` once no look to come could, where
    ``slower`` says it is no faster, or where a run fails. ``grow(n)`` is told of each round
    made after the first ``slower.after``, but the last (a progress bar's more runs)."""
    last = pairs if pairs is not None else (looks[-1][0] if looks else 0)
    entrant = Entrant(dict(config))
    rounds = Rounds(run, seed, bar)
    stop, test = Stop.ENDED, None
    for n in range(1, last + 1):
        rounds.round([entrant])
        if entrant.failed is not None:
            stop = Stop.FAILED
            break
        defaults, mine = entrant.pairs()
        limit = rule.limit_at(looks, n)
        judged = slower is not None and n >= slower.after  # check's no-faster stop applies
        if limit > 0 or judged:  # the rule's test where a look or the stop reads it
            test = rule.test(defaults, mine, limit=limit, tolerance=tolerance,
                             min_gain=min_gain, modes=True)  # fmt: skip
            if test.passed:
                stop = Stop.PASSED
                break
            if (
                slower is not None
                and judged
                and (test.interval[1] < slower.negligible or test.speedup <= 1.0)
            ):
                stop = Stop.NO_FASTER
                break
        if hopeless and not rule.could_pass(looks, defaults, mine, tolerance, modes=True):
            stop = Stop.HOPELESS
            break
        if grow is not None and slower is not None and slower.after <= n < last:
            grow(2)
    defaults, mine = entrant.pairs()
    if defaults and stop is not Stop.PASSED:  # its figures on every pair, no look
        test = rule.test(defaults, mine, limit=0.0, tolerance=tolerance, min_gain=min_gain,
                         modes=True)  # fmt: skip
    elif not defaults:
        test = None
    return Lone(tuple(defaults), tuple(mine), test, tuple(looks), stop, entrant.failed)


def executor_runner(executor: Executor, timeout: float,
                    configured: Executor | None = None) -> Runner:  # fmt: skip
    """The runs of a ``trial.Executor``: the defaults' by ``executor``, the configuration's by
    ``configured`` (the same if None: it may carry variables only the configuration sets)."""

    def run(config: Mapping[str, Value] | None) -> Ran:
        if config is None:
            return executor.run(None, timeout)
        return (configured or executor).run(dict(config), timeout)

    return run
