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
