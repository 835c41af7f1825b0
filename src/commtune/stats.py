"""Statistics for noisy timings: medians, spread, and the speedup with its confidence interval."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


def median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


STATISTICS = ("median", "mean", "p90")  # what a trial's value is, of its runs (--objective)


def majority_median(values: Sequence[float | None]) -> float | None:
    """The median of a recorded configuration's runs (None: a failed run), or None where
    most of them failed: the truth of a replay table's configuration."""
    measured = [float(v) for v in values if v is not None]
    return float(np.median(measured)) if 2 * len(measured) > len(values) else None


def statistic(name: str) -> Callable[[Sequence[float] | np.ndarray], float]:
    """The summary of a configuration's runs: ``median`` (robust, the default), ``mean``
    (what throughput follows) or ``p90`` (penalises a heavy tail)."""
    _known(name)
    return lambda values: float(rows(name, np.asarray(values, dtype=float)[None, :])[0])


def _known(name: str) -> None:
    if name not in STATISTICS:
        raise ValueError(f"unknown statistic {name!r} (one of {', '.join(STATISTICS)})")


def spread(values: Sequence[float]) -> float:
    """(max - min) / median: the run-to-run spread as a fraction."""
    arr = np.asarray(values, dtype=float)
    mid = float(np.median(arr))
    return float((arr.max() - arr.min()) / mid) if mid > 0 and len(arr) > 1 else 0.0


# Runs whose values differ by less than this share are the same measurement: a simulation
# that does not time its compute bursts (SMPI) gives one value a configuration.
EXACT = 1e-9


def exact(values: Sequence[float]) -> bool:
    """Whether at least two runs were made and all gave the same value (:data:`EXACT`)."""
    return len(values) >= 2 and max(values) <= min(values) * (1 + EXACT)


# A value written with fewer significant digits repeats by rounding alone: a program that
# prints "time 1.23 s" gives one value twice in a row on a machine with 1 % noise.
EXACT_DIGITS = 4


def digits(value: float) -> int:
    """The significant digits of ``value`` as written (``repr``: a parsed "1.23" has 3,
    "1200" has 2: a trailing zero may be rounding)."""
    mantissa = repr(abs(float(value))).split("e")[0].replace(".", "")
    return max(1, len(mantissa.strip("0")))


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation (sample standard deviation over the mean)."""
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean()) if len(arr) else 0.0
    return float(arr.std(ddof=1) / mean) if mean > 0 and len(arr) > 1 else 0.0


def clusters(values: Sequence[float], gap: float = 1.3) -> list[tuple[int, float]]:
    """(runs, median) of each cluster: two when the sorted values have a jump of ``gap``
    times between neighbours with at least two runs on each side, else one."""
    ordered = sorted(values)
    if len(ordered) >= 4 and ordered[0] > 0:
        jumps = [ordered[i + 1] / ordered[i] for i in range(len(ordered) - 1)]
        i = max(range(len(jumps)), key=jumps.__getitem__)
        low, high = ordered[: i + 1], ordered[i + 1 :]
        if jumps[i] >= gap and len(low) >= 2 and len(high) >= 2:
            return [(len(low), median(low)), (len(high), median(high))]
    return [(len(ordered), median(ordered))] if ordered else []


@dataclass(frozen=True)
class Comparison:
    """Default against candidate: speedup = stat(default) / stat(candidate), the statistic
    ``median`` unless told otherwise."""

    speedup: float
    ci_low: float
    ci_high: float
    p_value: float
    faster: bool  # beyond noise: CI above 1 and the rank test significant


def compare(
    default: Sequence[float],
    candidate: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 4000,
    seed: int = 0,
    stat: str = "median",
) -> Comparison:
    """Bootstrap CI of the ratio of the statistic (see :func:`statistic`), and a one-sided
    Mann-Whitney U test.

    The candidate is called faster only when both agree: the lower end of the CI is above 1
    and the probability that the default is not slower is below 1 - level.
    """
    from scipy.stats import mannwhitneyu

    summary = statistic(stat)  # ValueError for an unknown name
    a = np.asarray(default, dtype=float)
    b = np.asarray(candidate, dtype=float)
    rng = np.random.default_rng(seed)
    ra = rows(stat, rng.choice(a, size=(resamples, len(a))))
    rb = rows(stat, rng.choice(b, size=(resamples, len(b))))
    p = float(mannwhitneyu(a, b, alternative="greater").pvalue)
    return _comparison(summary(a) / summary(b), ra / rb, p, level)


def _comparison(speedup: float, boot: np.ndarray, p: float, level: float) -> Comparison:
    """The verdict from the speedup, its bootstrap replicates and the test's p-value."""
    alpha = (1 - level) / 2
    low, high = (float(x) for x in np.quantile(boot, [alpha, 1 - alpha]))
    return Comparison(speedup, low, high, p, low > 1.0 and p < 1 - level)


# per statistic: of every row, and of every row leaving NaN (a failed run) out
_ROWS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]] = {
    "mean": (lambda s: s.mean(axis=1), lambda s: np.nanmean(s, axis=1)),
    "p90": (lambda s: np.quantile(s, 0.9, axis=1), lambda s: np.nanquantile(s, 0.9, axis=1)),
    "median": (lambda s: np.median(s, axis=1), lambda s: np.nanmedian(s, axis=1)),
}


def rows(stat: str, samples: np.ndarray, *, failed: bool = False) -> np.ndarray:
    """The statistic of every row of ``samples`` (a bootstrap sample, a recorded table);
    ``failed``: NaN marks a failed run, left out (a row of failures alone gives NaN)."""
    _known(stat)
    plain, without = _ROWS[stat]
    if not failed or not np.isnan(samples).any():
        return plain(samples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN row
        return without(samples)


def min_pairs(level: float) -> int:
    """The fewest pairs with which :func:`compare_paired` can call a candidate faster at
    ``level``: the signed-rank test's smallest one-sided p-value of ``n`` pairs is
    ``2 ** -n`` (every pair favouring the candidate), so ``n`` must bring it below
    ``1 - level`` (5 pairs at 95 %, 6 at the level corrected for two or three)."""
    return max(1, math.floor(math.log2(1 / (1 - level))) + 1)


def compare_paired(
    default: Sequence[float],
    candidate: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 4000,
    seed: int = 0,
    stat: str = "median",
) -> Comparison:
    """Default against candidate, run in pairs next to each other in time (``default[i]``
    beside ``candidate[i]``): each pair's ratio cancels whatever the machine did to both.
    speedup = 1 / stat(candidate[i] / default[i]); a bootstrap CI over the pairs, and a
    one-sided Wilcoxon signed-rank test that the log ratios are below 0. Faster only when
    both agree, as in :func:`compare`."""
    from scipy.stats import wilcoxon

    summary = statistic(stat)
    rel = np.asarray(candidate, dtype=float) / np.asarray(default, dtype=float)
    rng = np.random.default_rng(seed)
    boot = 1.0 / rows(stat, rng.choice(rel, size=(resamples, len(rel))))
    logs = np.log(rel)
    p = (
        1.0
        if np.all(logs == 0)
        else float(wilcoxon(logs, alternative="less", zero_method="zsplit").pvalue)
    )
    return _comparison(1.0 / summary(rel), boot, p, level)
