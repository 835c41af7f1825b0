"""The rule that hands a configuration back: one paired randomization test, the stated risk
split over its looks.

The null, as every page states the promise: the configuration is ``tolerance`` (2 %) *slower*
than the defaults. A configuration is compared with the defaults only on runs made *after* it
was chosen, in pairs: each round runs it and the defaults beside each other, which of the two
goes first drawn by a fair coin. Each of its runs is counted ``tolerance`` faster than it was
(divided by ``1 + tolerance``) and each pair gives the difference of the logs of the two
times. Under the null, in every pair the two counted runs are equally likely to have come in
either order, whatever the machine did (warmed up, drifted, stepped, oscillated, ran another
job): the coin decided which of the pair's two slots the configuration got. So every pattern
of signs of the differences is as likely as the one measured, and the chance of a pattern at
least as favourable (the p-value) is exact: no model of the noise, none of the drift. The
statistic is the signed rank (Wilcoxon: the ranks of the pairs it wins, counted by the size of
the difference), ties between sign patterns broken by the sum of the differences, so the
p-value steps by 1 / 2 ** pairs and the risk is spent to its last share. Runs of the defaults
made earlier (the search's) do not join: under drift they tell nothing of the defaults now.

On a machine with two modes (runs 1.5-2x apart, for a few runs to tens of runs), a pair whose
two runs fell in different modes has the largest difference and a sign the modes chose: the
signed rank would let it decide. Where the pairs' levels (each pair's geometric mean, the same
whichever run was which) fall into two clusters, a pair whose two runs differ by more than the
clusters do is one run of each mode and scores nothing (:func:`split`); the others are ranked
among themselves (``modes``, the verdict's). Which pairs are split is a
function of each pair's two runs, not of their order, so under the null every sign pattern is
still as likely as the one measured: the p-value stays exact. Where the levels show one mode,
the signed rank is the ordinary one.

The stated risk is what the rule may spend on every chance to pass by luck. The first
configuration tested gets ``FIRST`` of it (four fifths), the later ones halve the rest between
them; where the runs could never pass a second one (:func:`total`), the first gets all of it;
a lone configuration, as ``commtune check`` tests, all of it; where the verdict races two
configurations side by side (``tune._decide``), half of it each. It is looked at twice at most:
*early*, as soon as winning every pair would pass on ``EARLY`` of its share, where that comes
before its runs end (a clear winner is decided without spending the runs), and when its runs
end, on the rest. The shares add up to ``risk``, so the chance that anything more than
``tolerance`` slower is handed back is at most ``risk``: the promise, for one study, on any
machine.

A pass also asks the estimate (the Hodges-Lehmann speedup of the pairs: the median of their
Walsh averages) to clear ``1 + min_gain``: a configuration no faster is not handed back with a
claim of gain it does not have.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")

LEVEL = 0.9  # the interval said beside the estimate
FIRST = 0.8  # the share of the risk the first configuration tested may spend
EARLY = 0.1  # the share of a configuration's risk its early look may spend
# ... where one configuration, chosen on other evidence (an in-run race's calls), is confirmed
# on whole runs: a third of the risk early, so that a clear winner is handed back in 6 pairs at
# a risk of 5 % (benchmarks/inrun_risk.py, faster_program: half the runs, the power kept)
CONFIRM_EARLY = 1 / 3
UNBOUNDED = 15  # the pairs a configuration's test ends at where the study has no bound
MOST = 64  # the most pairs more a study is told would decide
NO_FASTER_AFTER = 3  # pairs after which ``commtune check`` calls one its runs show no faster
ENUMERATED = 16  # up to these pairs every sign pattern is counted (the finest p-value)
COUNTED = 300  # up to these pairs the signed rank's law is counted exactly; beyond, drawn
DRAWS = 20_000  # random sign patterns beyond COUNTED pairs (an in-run race's thousands of calls)
DRAWN = 1_000  # drawn at a time


MODES = 1.2  # the pairs' levels in two clusters this far apart: a machine with two modes


def levels(defaults: Sequence[float], config: Sequence[float], tolerance: float) -> np.ndarray:
    """Each pair's level: the geometric mean of its two runs (the configuration's counted
    ``tolerance`` faster), the same whichever run was which."""
    n = min(len(defaults), len(config))
    d = np.asarray(defaults[:n], dtype=float)
    c = np.asarray(config[:n], dtype=float) / (1 + tolerance)
    return np.sqrt(d * c)


def modes_apart(values: Sequence[float] | np.ndarray, gap: float | None = None) -> float | None:
    """How far apart the clusters of ``values`` are: sorted, they break wherever one is
    ``gap`` (``MODES``) times the one before; of the groups of two or more, the least ratio
    of neighbouring groups' medians. None where fewer than two such groups."""
    ordered = sorted(float(v) for v in values if v > 0)
    step = MODES if gap is None else gap
    groups: list[list[float]] = [[]]
    for before, value in zip([0.0, *ordered], ordered, strict=False):  # each and the one before
        if before and value >= step * before:
            groups.append([])
        groups[-1].append(value)
    medians = [float(np.median(g)) for g in groups if len(g) >= 2]
    if len(medians) < 2:
        return None
    return min(high / low for low, high in itertools.pairwise(medians))


def split(defaults: Sequence[float], config: Sequence[float], tolerance: float,
          modes: bool = True) -> np.ndarray:  # fmt: skip
    """The pairs split by the machine's modes. A pair's level (:func:`levels`) is its two
    runs' mode times the configuration's speed: on a machine with two modes ``m`` apart the
    levels fall into groups ``sqrt(m)`` apart (both runs fast, one of each, both slow).
    Where they fall into two clusters ``r`` apart (:func:`modes_apart`), a pair is split
    where its two runs differ by more than ``r``: one of each mode differ by about ``m``,
    two of one mode by the configuration's gain (less than ``sqrt(m)`` for the line to
    tell them apart). None where ``modes`` is off, the levels show one mode, or more than
    two thirds of the pairs would be split (a gain that large sets them apart). Which pairs
    these are depends on each pair's two runs, never on which run was which."""
    n = min(len(defaults), len(config))
    apart = modes_apart(levels(defaults, config, tolerance)) if modes and n else None
    if apart is None:
        return np.zeros(n, dtype=bool)
    cut = np.abs(differences(defaults[:n], config[:n], tolerance)) > math.log(apart)
    # nearly every pair apart by more than the levels' clusters: the configuration's gain,
    # not the modes, sets them apart (a gain beyond sqrt(m)): the ordinary signed rank
    return cut if 3 * int(cut.sum()) <= 2 * n else np.zeros(n, dtype=bool)


def first_pass(limit: float) -> int:
    """The fewest pairs of runs in which winning every pair passes at ``limit``."""
    return max(1, math.ceil(math.log2(1 / limit) - 1e-12)) if limit > 0 else 10**9


def fewest(risk: float) -> int:
    """The fewest pairs in which a verdict can pass anything at ``risk`` (its first
    configuration then spends the whole risk: no second could pass, :func:`total`)."""
    return first_pass(risk)


def coins(seed: int | None = None) -> Iterator[bool]:
    """The fair coins that order each pair of runs (True: the configuration first): the
    design the test's exactness rests on. Seeded: a study's orders can be told again."""
    rng = random.Random(seed)
    while True:
        yield rng.random() < 0.5


def shuffled(items: Sequence[T], seed: int | None, round_: int) -> list[T]:
    """A round's runs in an order drawn uniformly at random, seeded by the study's seed and
    the round: where a round runs the defaults and several configurations, each of them and
    the defaults are as likely to hold either of their two places, whatever the others got,
    so each one's pairs are as exact as a coin would make them."""
    out = list(items)
    random.Random(f"{seed}/{round_}").shuffle(out)
    return out


def total(risk: float, arm: int = 0, pairs: int | None = None) -> float:
    """What the ``arm``-th configuration tested (from 1; 0: a lone configuration) may spend of
    ``risk``, in a verdict with ``pairs`` pairs of runs in all (None: unbounded). Where the
    second could never pass (the pairs less the first one's first cannot pass it at its
    share), the first gets the whole risk and the later ones none."""
    if arm == 0:
        return risk
    alone = pairs is not None and pairs - 1 < first_pass((1 - FIRST) * risk / 2)
    if alone:
        return risk if arm == 1 else 0.0
    return FIRST * risk if arm == 1 else (1 - FIRST) * risk / 2 ** (arm - 1)


def looks(risk: float, arm: int, pairs: int, verdict: int | None = None,
          share: float = EARLY) -> list[tuple[int, float]]:  # fmt: skip
    """The looks at the ``arm``-th configuration tested when ``pairs`` pairs of runs are left
    for it (of ``verdict`` pairs the verdict had: :func:`total`): (the pairs after which each
    is made, the share of the risk it may spend; ``share`` of it at the early look). Empty:
    it could not pass."""
    mine = total(risk, arm, verdict)
    if mine <= 0:
        return []
    early = first_pass(share * mine)
    if early < pairs:
        return [(early, share * mine), (pairs, (1 - share) * mine)]
    return [(pairs, mine)] if first_pass(mine) <= pairs else []


def differences(
    defaults: Sequence[float] | np.ndarray, config: Sequence[float] | np.ndarray, tolerance: float
) -> np.ndarray:
    """Pair by pair, log(the defaults' time) less log(the configuration's counted
    ``tolerance`` faster): above 0 where the configuration wins the pair."""
    d = np.log(np.asarray(defaults, dtype=float))
    c = np.log(np.asarray(config, dtype=float) / (1 + tolerance))
    return d - c


def wins(defaults: Sequence[float], config: Sequence[float], tolerance: float) -> int:
    """The pairs in which the configuration, counted ``tolerance`` faster, is faster than the
    defaults' run beside it. A tie is not a win."""
    if not len(config):
        return 0
    return int((differences(defaults, config, tolerance) > 0).sum())


def ranks(x: np.ndarray) -> np.ndarray:
    """Twice the ranks of ``|x|`` (ties averaged): integers."""
    from scipy.stats import rankdata

    return np.rint(2 * rankdata(np.abs(x))).astype(np.int64)


@functools.cache
def _signs(n: int) -> np.ndarray:
    """Every pattern of ``n`` signs, one a row (+1 / -1)."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    return (2 * bits - 1).astype(np.int8)


def _tail(scores: np.ndarray, observed: int) -> float:
    """P(sum of the scores of the pairs won >= ``observed``) over fair coins (integer scores:
    the distribution by counting)."""
    dist = np.zeros(int(scores.sum()) + 1)
    dist[0] = 1.0
    for s in scores:  # each coin halves the mass it moves: no overflow at thousands of pairs
        dist[s:] = dist[s:] + dist[: len(dist) - s]
        dist *= 0.5
    dist /= dist.sum()
    return float(dist[observed:].sum())


def p_value(defaults: Sequence[float], config: Sequence[float], tolerance: float,
            modes: bool = False) -> float:  # fmt: skip
    """The chance that a configuration ``tolerance`` slower than the defaults, its pairs'
    order drawn by coins, does at least as well as this one: the share of the sign patterns
    of the differences whose signed rank (then sum) is at least the one measured;
    ``modes``: a pair split by the machine's modes (:func:`split`) scores nothing."""
    n = min(len(defaults), len(config))
    if n == 0:
        return 1.0
    x = differences(defaults[:n], config[:n], tolerance)
    return _p(x, split(defaults, config, tolerance, modes))


def _p(x: np.ndarray, cut: np.ndarray) -> float:
    """:func:`p_value` of the differences ``x``, the pairs ``cut`` scoring nothing."""
    n = len(x)
    r = np.zeros(n, dtype=np.int64)
    if (~cut).any():
        r[~cut] = ranks(x[~cut])
    won = x > 0
    w = int(r[won].sum())
    if n > COUNTED:  # a randomization test on drawn patterns: exact, p at least 1/(DRAWS+1)
        return drawn(r, w)
    if n > ENUMERATED:
        return _tail(r, w)
    signs = _signs(n)
    w_all = ((signs > 0) * r).sum(axis=1)
    size = np.where(cut, 0.0, np.abs(x))
    t = float(np.where(won, size, -size).sum())
    t_all = signs @ size
    better = (w_all > w) | ((w_all == w) & (t_all >= t - 1e-12 * (1 + abs(t))))
    return float(better.mean())


def drawn(scores: np.ndarray, observed: float, draws: int = DRAWS) -> float:
    """P(the sum of the scores of the pairs won >= ``observed``) over fair coins, by at least
    ``draws`` random sign patterns (seeded by the pairs' number): an exact randomization
    test, p at least 1 / (the patterns drawn + 1)."""
    rng, at_least = np.random.default_rng(len(scores)), 0
    chunks = -(-draws // DRAWN)
    floor = observed - 1e-12 * max(1.0, abs(observed))  # float scores: the observed included
    for _ in range(chunks):  # in chunks: thousands of pairs, bounded memory
        flips = rng.integers(0, 2, size=(DRAWN, len(scores)), dtype=np.int8)
        at_least += int(((flips @ scores) >= floor).sum())
    return float((1 + at_least) / (chunks * DRAWN + 1))


@functools.cache
def _rank_cdf(n: int) -> np.ndarray:
    """P(W <= w) for the signed rank of ``n`` pairs under fair coins, w = 0 .. n(n+1)/2."""
    dist = np.zeros(n * (n + 1) // 2 + 1)
    dist[0] = 1.0
    for k in range(1, n + 1):
        dist[k:] = dist[k:] + dist[:-k]
        dist *= 0.5  # a probability throughout: no overflow at thousands of pairs
    return np.cumsum(dist / dist.sum())


def estimate(
    defaults: Sequence[float], config: Sequence[float]
) -> tuple[float, tuple[float, float]]:
    """The speedup of the pairs (Hodges-Lehmann: exp of the median of the Walsh averages of
    log(the defaults' time / the configuration's)) and its ``LEVEL`` interval (the signed-rank
    test's, inverted)."""
    n = min(len(defaults), len(config))
    x = differences(defaults[:n], config[:n], 0.0)
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2)
    if n > COUNTED:  # the signed rank's law by its normal limit (the interval, not the test)
        from scipy.stats import norm

        mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        k = max(1, int(mean + norm.ppf((1 - LEVEL) / 2) * sd))
    else:
        k = max(1, int(np.searchsorted(_rank_cdf(n), (1 - LEVEL) / 2, side="right")))
    k = min(k, len(walsh))
    low, high = walsh[k - 1], walsh[len(walsh) - k]
    return float(np.exp(np.median(walsh))), (float(np.exp(low)), float(np.exp(high)))


@dataclass(frozen=True)
class Test:
    """A configuration against the rule."""

    runs: int  # the pairs of runs: its runs, each beside one of the defaults
    won: int  # the pairs it wins, counted ``tolerance`` faster
    p: float
    limit: float  # the share of the risk this look may spend (0: not a look)
    speedup: float
    interval: tuple[float, float]
    passed: bool
    tolerance: float
    min_gain: float
    split: int = 0  # the pairs split by the machine's modes (:func:`split`): no score

    def says(self) -> str:
        """The test in words: the one sentence of the verdict."""
        low, high = self.interval
        text = (f"{self.speedup:.3g}x ({round(100 * LEVEL)} % interval {low:.3g}-{high:.3g}) "
                f"in {self.runs} pairs of runs beside the defaults, each pair's order drawn "
                f"at random; counted {self.tolerance:.0%} faster, it wins {self.won} of the "
                f"{self.runs} pairs, as well as a configuration {self.tolerance:.0%} slower "
                f"than the defaults does with probability {_percent(self.p)}")  # fmt: skip
        if self.split:
            text += (f" ({self.split} pairs split by the machine's two modes count for "
                     "nothing)")  # fmt: skip
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
    modes: bool = False,
) -> Test:
    """The rule at a look that may spend ``limit`` of the risk (0: its figures only), on the
    pairs (``defaults[i]``, ``config[i]``); ``modes``: pairs split by the machine's modes
    score nothing (:func:`split`)."""
    if len(defaults) != len(config):
        raise ValueError(f"{len(defaults)} runs of the defaults beside {len(config)}: pairs")
    p = p_value(defaults, config, tolerance, modes)
    speedup, interval = estimate(defaults, config)
    passed = p <= limit and speedup >= 1 + min_gain
    won = wins(defaults, config, tolerance)
    cut = int(split(defaults, config, tolerance, modes).sum())
    return Test(len(config), won, p, limit, speedup, interval, passed, tolerance, min_gain, cut)


def limit_at(schedule: Sequence[tuple[int, float]], pairs: int) -> float:
    """The share of the risk a look after ``pairs`` pairs may spend (0: no look there)."""
    return next((share for n, share in schedule if n == pairs), 0.0)


def could_pass(
    schedule: Sequence[tuple[int, float]],
    defaults: Sequence[float] = (),
    config: Sequence[float] = (),
    tolerance: float = 0.0,
    modes: bool = False,
) -> bool:
    """Whether a configuration with these pairs so far could still pass at a look to come,
    winning every pair from here on by more than any so far (``modes``: none of them split,
    and the pairs split so far scoring nothing or, were the line drawn elsewhere, their
    ranks)."""
    n = min(len(defaults), len(config))
    x = differences(defaults[:n], config[:n], tolerance) if n else np.zeros(0)
    cuts = [np.zeros(n, dtype=bool)]
    if modes:
        cuts.append(split(defaults, config, tolerance))
    top = float(np.abs(x).max()) if n else 0.0
    for pairs, share in schedule:
        extra = pairs - n
        if extra <= 0:
            continue
        best = np.concatenate([x, top + 1.0 + np.arange(extra)])
        if any(_p(best, np.concatenate([cut, np.zeros(extra, dtype=bool)])) <= share
               for cut in cuts):  # fmt: skip
            return True
    return False


def more_pairs(
    defaults: Sequence[float],
    config: Sequence[float],
    *,
    limit: float,
    tolerance: float,
    min_gain: float,
    modes: bool = False,
) -> int | None:
    """The pairs of runs more that would decide at a look spending ``limit``, if they went
    as these did (the pairs repeated in turn); None beyond ``MOST``, or if pairs like these
    never would."""
    if not defaults or not config:
        return None
    n = min(len(defaults), len(config))
    for extra in range(1, MOST + 1):
        d = [*defaults[:n], *(defaults[i % n] for i in range(extra))]
        c = [*config[:n], *(config[i % n] for i in range(extra))]
        if test(d, c, limit=limit, tolerance=tolerance, min_gain=min_gain, modes=modes).passed:
            return extra
    return None
