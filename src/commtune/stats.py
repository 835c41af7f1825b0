"""Statistics for noisy timings: medians, spread, and the speedup with its confidence interval."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def spread(values: Sequence[float]) -> float:
    """(max - min) / median: the run-to-run spread as a fraction."""
    arr = np.asarray(values, dtype=float)
    mid = float(np.median(arr))
    return float((arr.max() - arr.min()) / mid) if mid > 0 and len(arr) > 1 else 0.0


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
    """Default against candidate: speedup = median(default) / median(candidate)."""

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
) -> Comparison:
    """Bootstrap CI of the ratio of medians, and a one-sided Mann-Whitney U test.

    The candidate is called faster only when both agree: the lower end of the CI is above 1
    and the probability that the default is not slower is below 1 - level.
    """
    from scipy.stats import mannwhitneyu

    a = np.asarray(default, dtype=float)
    b = np.asarray(candidate, dtype=float)
    speedup = float(np.median(a) / np.median(b))
    rng = np.random.default_rng(seed)
    ra = np.median(rng.choice(a, size=(resamples, len(a))), axis=1)
    rb = np.median(rng.choice(b, size=(resamples, len(b))), axis=1)
    ratios = ra / rb
    alpha = (1 - level) / 2
    low, high = (float(x) for x in np.quantile(ratios, [alpha, 1 - alpha]))
    p = float(mannwhitneyu(a, b, alternative="greater").pvalue)
    return Comparison(speedup, low, high, p, low > 1.0 and p < 1 - level)
