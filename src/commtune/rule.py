"""The rule that hands a configuration back: one rank test, the stated risk split over its looks.

A configuration is compared with the defaults only on runs made *after* it was chosen, each
beside a run of the defaults (the order alternating, so neither always gets the warmer
machine). Each of its runs is counted ``tolerance`` (2 %) slower than it was, and the
statistic is how many (its run, a run of the defaults) pairs it then still wins: the
Mann-Whitney count. Were the configuration ``tolerance`` slower than the defaults, every
order of the two lists of runs would be as likely as the one measured, whatever the
machine's noise (heavy tails, modes, a run caught by another job), so the chance of a count
this high (the p-value) is exact: no model of the noise is assumed.

The stated risk is what the rule may spend on every chance to pass by luck. The first
configuration tested gets ``FIRST`` of it (four fifths: most studies test one), the later
ones halve the rest between them (a tenth, a twentieth, ...); a lone configuration, as
``commtune check`` tests, all of it. It is looked at
twice at most: *early*, as soon as winning every pair of runs would pass on ``EARLY`` of
its share (a clear winner is decided without spending the runs), and when its runs end (the
pairs the budget left it when its test began), on the rest. The shares add up to ``risk``,
so the chance that anything more than ``tolerance`` slower is handed back is at most
``risk``: the promise, for one study, on any machine whose runs do not depend on the runs
before them.

A pass also asks the estimate (the Hodges-Lehmann speedup: the median over every pair of
runs of the defaults' time over the configuration's) to clear ``1 + min_gain``: a
configuration no faster is not handed back with a claim of gain it does not have.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.9  # the interval said beside the estimate
FIRST = 0.8  # the share of the risk the first configuration tested may spend
EARLY = 0.1  # the share of a configuration's risk its early look may spend
UNBOUNDED = 15  # the pairs a configuration's test ends at where the study has no bound
MOST = 64  # the most pairs more a study is told would decide
NO_FASTER_AFTER = 3  # pairs after which a configuration its runs show no faster is dropped


def total(risk: float, arm: int = 0) -> float:
    """What the ``arm``-th configuration tested (from 1; 0: a lone configuration) may spend
    of ``risk``."""
    if arm == 0:
        return risk
    return FIRST * risk if arm == 1 else (1 - FIRST) * risk / 2 ** (arm - 1)


@functools.cache
def _counts(n: int, m: int) -> np.ndarray:
    """The orders of ``n`` runs of one side and ``m`` of the other giving each count U = 0 ..
    n m of (run of the first, run of the second) pairs in which the first's is lower. The
    highest of all the runs is either the first's (lower than none: U of the rest) or the
    second's (every run of the first is lower: n more)."""
    if n == 0 or m == 0:
        return np.ones(1)
    out = np.zeros(n * m + 1)
    first = _counts(n - 1, m)
    out[: len(first)] += first
    second = _counts(n, m - 1)
    out[n : n + len(second)] += second
    return out


@functools.cache
def _null(n: int, m: int) -> np.ndarray:
    """P(U = u) for runs in a random order."""
    counts = _counts(n, m)
    return counts / counts.sum()


def first_pass(limit: float, earlier: int = 0) -> int:
    """The fewest pairs of runs in which winning every pair (and being faster than the
    ``earlier`` runs of the defaults it is compared with too) passes at ``limit``."""
    n = 1
    while _null(n, n + earlier)[-1] > limit:
        n += 1
    return n


def looks(risk: float, arm: int, pairs: int, earlier: int = 0) -> list[tuple[int, float]]:
    """The looks at the ``arm``-th configuration tested when ``pairs`` pairs of runs are left
    for it (and ``earlier`` runs of the defaults are compared with its runs too): (the pairs
    after which each is made, the share of the risk it may spend)."""
    mine = total(risk, arm)
    early = first_pass(EARLY * mine, earlier)
    if early < pairs:
        return [(early, EARLY * mine), (pairs, (1 - EARLY) * mine)]
    return [(pairs, mine)] if first_pass(mine, earlier) <= pairs else []


def wins(defaults: Sequence[float], config: Sequence[float], tolerance: float) -> int:
    """The pairs of runs (one of each) in which the configuration, counted ``tolerance``
    slower, is faster than the defaults. A tie is not a win (the count can only be lower
    than a random breaking of ties would give: the test stays exact)."""
    slowed = np.asarray(config, dtype=float) * (1 + tolerance)
    return int((slowed[:, None] < np.asarray(defaults, dtype=float)[None, :]).sum())


def p_value(defaults: Sequence[float], config: Sequence[float], tolerance: float) -> float:
    """The chance that a configuration ``tolerance`` slower than the defaults wins as many
    pairs as this one did."""
    if not defaults or not config:
        return 1.0
    u = wins(defaults, config, tolerance)
    return float(_null(len(config), len(defaults))[u:].sum())


def estimate(
    defaults: Sequence[float], config: Sequence[float]
) -> tuple[float, tuple[float, float]]:
    """The speedup (Hodges-Lehmann: the median over every pair of runs of the defaults' time
    over the configuration's) and its ``LEVEL`` interval (the rank test's, inverted)."""
    ratios = np.sort((np.asarray(defaults, dtype=float)[None, :]
                      / np.asarray(config, dtype=float)[:, None]).ravel())  # fmt: skip
    cdf = np.cumsum(_null(len(config), len(defaults)))
    k = max(1, int(np.searchsorted(cdf, (1 - LEVEL) / 2, side="right")))
    k = min(k, len(ratios))
    return float(np.median(ratios)), (float(ratios[k - 1]), float(ratios[len(ratios) - k]))


@dataclass(frozen=True)
class Test:
    """A configuration against the rule."""

    runs: int  # the configuration's runs beside the defaults
    beside: int  # the defaults' runs beside them
    won: int  # the pairs of runs it wins, counted ``tolerance`` slower
    p: float
    limit: float  # the share of the risk this look may spend (0: not a look)
    speedup: float
    interval: tuple[float, float]
    passed: bool
    tolerance: float
    min_gain: float

    def says(self) -> str:
        """The test in words: the one sentence of the verdict."""
        low, high = self.interval
        text = (f"{self.speedup:.3g}x ({round(100 * LEVEL)} % interval {low:.3g}-{high:.3g}) "
                f"in {self.runs} runs beside {self.beside} of the defaults; counted "
                f"{self.tolerance:.0%} slower, it wins {self.won} of the "
                f"{self.runs * self.beside} pairs of runs, which a configuration "
                f"{self.tolerance:.0%} slower than the defaults does with probability "
                f"{_percent(self.p)}")  # fmt: skip
        if self.passed:
            return f"{text}: below the {_percent(self.limit)} of the risk this look may spend"
        if self.limit <= 0:
            return f"{text} (not a look: no risk to spend here)"
        if self.p > self.limit:
            return f"{text}: not below the {_percent(self.limit)} this look may spend"
        return f"{text}; but {self.speedup:.3g}x is below the worthwhile {self.min_gain:.0%} gain"


def _percent(p: float) -> str:
    return f"{100 * p:.2g} %" if p < 0.1 else f"{100 * p:.0f} %"


def test(
    defaults: Sequence[float],
    config: Sequence[float],
    *,
    limit: float,
    tolerance: float,
    min_gain: float,
) -> Test:
    """The rule at a look that may spend ``limit`` of the risk (0: its figures only)."""
    p = p_value(defaults, config, tolerance)
    speedup, interval = estimate(defaults, config)
    passed = p <= limit and speedup >= 1 + min_gain
    won = wins(defaults, config, tolerance)
    return Test(len(config), len(defaults), won, p, limit, speedup, interval, passed,
                tolerance, min_gain)  # fmt: skip


def limit_at(schedule: Sequence[tuple[int, float]], pairs: int) -> float:
    """The share of the risk a look after ``pairs`` pairs may spend (0: no look there)."""
    return next((share for n, share in schedule if n == pairs), 0.0)


def could_pass(
    schedule: Sequence[tuple[int, float]],
    defaults: Sequence[float] = (),
    config: Sequence[float] = (),
    tolerance: float = 0.0,
) -> bool:
    """Whether a configuration with these runs so far could still pass at a look to come,
    winning every pair of runs from here on."""
    n, m = len(config), len(defaults)
    u = wins(defaults, config, tolerance) if n and m else 0
    for pairs, share in schedule:
        extra = pairs - n
        if extra <= 0:
            continue
        best = u + extra * (m + extra) + n * extra  # its new runs below every run of theirs
        if float(_null(n + extra, m + extra)[best:].sum()) <= share:
            return True
    return False


def more_pairs(
    defaults: Sequence[float],
    config: Sequence[float],
    *,
    limit: float,
    tolerance: float,
    min_gain: float,
) -> int | None:
    """The pairs of runs more that would decide at a look spending ``limit``, if they went
    as these did (each side's runs repeated in turn); None beyond ``MOST``, or if runs like
    these never would."""
    if not defaults or not config:
        return None
    for extra in range(1, MOST + 1):
        d = [*defaults, *(defaults[i % len(defaults)] for i in range(extra))]
        c = [*config, *(config[i % len(config)] for i in range(extra))]
        if test(d, c, limit=limit, tolerance=tolerance, min_gain=min_gain).passed:
            return extra
    return None
