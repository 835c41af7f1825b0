"""What every run says of every configuration: empirical-Bayes posteriors of speedups.

A configuration's effect is ``theta``, the log of its run time over the defaults' (below 0:
faster; the speedup is ``exp(-theta)``). Each of its runs, divided by the control run of the
defaults nearest to it in time, is one observation ``y = theta + e``, the noise ``e`` drawn
from a Student-t of ``NU`` degrees of freedom (heavy tails: a run caught by another job, a
configuration whose runs fall into two clusters) of the study's own scale.

The prior is the study's distribution of effects, estimated from all its configurations at
once (Robbins' empirical Bayes with a nonparametric prior on a grid, fitted by EM, the
Kiefer-Wolfowitz NPMLE), mixed with a broad normal so that no effect is ruled out. The
configuration a search picks looked good partly by luck (the winner's curse); its posterior
pulls it back toward what the study's configurations are like, by as much as its own runs
leave room for: one lucky run moves it little, ten consistent runs move it to their own
median.

``pair_posterior`` is the same for a lone configuration (``commtune check``, a prediction):
the prior is then the mixture alone, half its mass at no effect.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

NU = 3.0  # degrees of freedom of the run noise
GRID = np.linspace(-1.6, 1.6, 641)  # theta: speedups from 0.2x to 5x, 0.5 % steps
SPEEDUPS = np.exp(-GRID)
STEP = float(GRID[1] - GRID[0])
PRIOR_SCALE = 0.1  # the noise assumed before the study has measured its own
T_MEDIAN = 0.765  # |t| of NU = 3 is below this half the time
PRIOR_WEIGHT = 2  # deviations the assumed noise counts as
MIN_SCALE = 0.01
BROAD = 0.35  # the broad component's standard deviation (log): most knobs move < 1.4x
BROAD_WEIGHT = 0.1  # its share of the prior: no effect is ruled out
EM_STEPS = 300
SMOOTH = 0.03  # the width (log) the estimated prior is smoothed by
LEVEL = 0.9  # the interval said beside the expected speedup


@dataclass(frozen=True)
class Posterior:
    """A configuration's effect after its runs: weights over ``GRID``."""

    weights: np.ndarray
    runs: int

    speedups = SPEEDUPS

    def expected(self) -> float:
        """The posterior mean of the speedup."""
        return float(self.weights @ self.speedups)

    def median(self) -> float:
        """The posterior median of the speedup: as likely above as below."""
        cdf = np.cumsum(self.weights[::-1])  # ascending speedup
        return float(self.speedups[::-1][min(int(np.searchsorted(cdf, 0.5)), len(GRID) - 1)])

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        """The central ``level`` interval of the speedup."""
        cdf = np.cumsum(self.weights[::-1])  # ascending speedup
        s = self.speedups[::-1]
        tail = (1 - level) / 2
        low = s[min(int(np.searchsorted(cdf, tail)), len(s) - 1)]
        high = s[min(int(np.searchsorted(cdf, 1 - tail)), len(s) - 1)]
        return float(low), float(high)

    def risk(self, tolerance: float) -> float:
        """The probability of being more than ``tolerance`` (0.02: 2 %) slower than the
        defaults."""
        return float(self.weights[np.log1p(tolerance) < GRID].sum())

    def gain(self, margin: float) -> float:
        """The probability of being more than ``margin`` faster than the defaults."""
        return float(self.weights[-np.log1p(margin) > GRID].sum())

    def draw(self, rng: np.random.Generator) -> float:
        """One speedup drawn from the posterior (Thompson sampling)."""
        return float(self.speedups[rng.choice(len(GRID), p=self.weights)])

    def above(self, other: Posterior, margin: float = 0.0) -> float:
        """The probability that this configuration is faster than ``other`` by more than
        ``margin`` (independent posteriors)."""
        mine = np.cumsum(self.weights)  # P(theta <= g)
        shift = round(float(np.log1p(margin)) / STEP)
        # P(theta_self < theta_other - shift): for each value of other, the mass below it
        below = np.concatenate([np.zeros(1 + shift), mine])[: len(GRID)]
        return float(other.weights @ below)

    def curve(self, points: int = 80) -> dict[str, list[float]]:
        """The posterior density of the speedup on ``points`` points where it has mass: what
        the report plots."""
        cdf = np.cumsum(self.weights)
        lo = max(0, int(np.searchsorted(cdf, 0.0005)) - 2)
        hi = min(len(GRID) - 1, int(np.searchsorted(cdf, 0.9995)) + 2)
        idx = np.unique(np.linspace(lo, hi, points).round().astype(int))
        # density per unit of speedup: d theta / d speedup = 1 / speedup
        dens = self.weights[idx] / STEP / self.speedups[idx]
        return {
            "speedup": [round(float(x), 5) for x in self.speedups[idx][::-1]],
            "density": [round(float(x), 5) for x in dens[::-1]],
        }


EXPECTED_VALUE = 0.5  # a risk from which the rule is the expected speedup alone


def acceptable(
    post: Posterior,
    risk: float,
    tolerance: float,
    slow_share: float = 0.0,
    min_gain: float = 0.0,
    limit: float | None = None,
) -> bool:
    """The risk gate's rule: the expected speedup (the posterior's mean, shrunk for the
    winner's curse) clears ``1 + min_gain`` (the claim of gain); and, below a risk of one
    half, faster than the defaults more likely than not, and more than ``tolerance`` slower
    with probability below ``limit`` (``risk``, or less where several arms were looked at),
    at least ``slow_share`` (the share of runs in a slow cluster). What ``risk`` bounds is
    what costs the user: a configuration slower than the defaults. One no faster than them
    costs nothing in speed; ``min_gain`` keeps it from being handed back with a claim of
    gain (issue 47: the probability of being faster at ``1 - risk`` kept the defaults on
    most tables whose gain is a few per cent, at no lower a tail). At a risk of one half the
    user asked for the expected-value decision: what is expected to be faster is handed
    back."""
    if post.expected() <= 1.0 + min_gain:
        return False
    if risk >= EXPECTED_VALUE:
        return True
    bound = risk if limit is None else limit
    return post.gain(0.0) > 0.5 and max(post.risk(tolerance), slow_share) < bound


@dataclass(frozen=True)
class SlowMode:
    """The machine's second mode: a ``share`` of all runs, whatever they run, take
    ``exp(shift)`` times as long (the defaults' runs fall into two clusters: a bimodal
    machine, or phases of drift)."""

    share: float
    shift: float


def _t_loglik(y: np.ndarray, scale: float, slow: SlowMode | None = None) -> np.ndarray:
    """log p(y_i | theta_g) summed over the runs: one row over GRID. With a ``slow`` mode,
    each run is in it with its share (a mixture of two Student-t's)."""

    def density(shift: float) -> np.ndarray:
        z = (y[:, None] - GRID[None, :] - shift) / scale
        return (1 + z * z / NU) ** (-(NU + 1) / 2)

    if slow is None:
        z = (y[:, None] - GRID[None, :]) / scale
        return (-(NU + 1) / 2 * np.log1p(z * z / NU)).sum(axis=0)
    mixed = (1 - slow.share) * density(0.0) + slow.share * density(slow.shift)
    return np.log(np.maximum(mixed, 1e-300)).sum(axis=0)


def noise_scale(
    groups: Mapping[Hashable, Sequence[float]], controls: Sequence[float] = ()
) -> float:
    """The noise of one run's log ratio, robustly: the absolute deviations of every
    configuration's logs from their own median (configurations of two runs or more), and the
    log ratios of successive control runs of the defaults (``controls``, in time order: a
    ratio of two runs holds two runs' noise, as a run over its control does), pooled."""
    deviations: list[float] = []
    for values in groups.values():
        if len(values) >= 2:
            arr = np.asarray(values, dtype=float)
            # the deviation from the median of n runs underestimates by sqrt((n - 1) / n)
            deviations += list(np.abs(arr - np.median(arr)) * np.sqrt(len(arr) / (len(arr) - 1)))
    logs = np.log(np.asarray(controls, dtype=float))
    deviations += list(np.abs(np.diff(logs)))
    # the median: robust to up to half the deviations being a second mode's (a t of NU = 3
    # of scale s has a median absolute value of T_MEDIAN s; the lower quartile, measured in
    # issue 47's seventh part, read a machine whose runs repeat to 3 digits as noiseless);
    # the prior's scale counts as PRIOR_WEIGHT deviations, so that three lucky runs do not
    # make a quiet machine
    deviations += [PRIOR_SCALE * T_MEDIAN] * PRIOR_WEIGHT
    return max(MIN_SCALE, float(np.median(deviations)) / T_MEDIAN)


_NORMAL = np.exp(-0.5 * (GRID / BROAD) ** 2)
# a configuration's own runs' prior, not pulled toward the study's other configurations
OWN_PRIOR = _NORMAL / _NORMAL.sum()


def _broad() -> np.ndarray:
    """The prior's fixed part: half its mass at no effect, half a normal of ``BROAD``."""
    null = np.zeros_like(GRID)
    null[len(GRID) // 2] = 1.0
    return 0.5 * OWN_PRIOR + 0.5 * null


BROAD_PRIOR = _broad()
_KERNEL = np.exp(-0.5 * (np.arange(-40, 41) * STEP / SMOOTH) ** 2)
SMOOTHING = _KERNEL / _KERNEL.sum()


def _blurred(lik: np.ndarray, sd: float) -> np.ndarray:
    """A likelihood over ``GRID`` convolved with a normal of ``sd``: the evidence when
    every run shares one unknown offset of that spread."""
    if sd < STEP:
        return lik
    half = min(len(GRID) // 2, int(4 * sd / STEP))
    kernel = np.exp(-0.5 * (np.arange(-half, half + 1) * STEP / sd) ** 2)
    out = np.convolve(lik, kernel / kernel.sum(), mode="same")
    return out / out.max()


def fit(
    groups: Mapping[Hashable, Sequence[float]],
    scale: float | None = None,
    slow: SlowMode | None = None,
    shared: Mapping[Hashable, int] | None = None,
    pooled: bool = True,
) -> dict[Hashable, Posterior]:
    """Every configuration's posterior from its log ratios (``groups``: key -> the logs of
    its runs over their controls), the prior estimated from all of them. ``shared``: key ->
    the runs of the defaults its runs were divided by; their mean's error is common to
    all the configuration's runs (it does not average out over them), a normal of
    ``scale / sqrt(runs)``. ``pooled=False``: each from its own runs alone, under a broad
    normal prior (what its runs say, not shrunk toward the others: where more runs of it
    would be worth making)."""
    keys = [k for k, v in groups.items() if len(v)]
    if not keys:
        return {}
    s = scale if scale is not None else noise_scale(groups)
    loglik = np.array([_t_loglik(np.asarray(groups[k], dtype=float), s, slow) for k in keys])
    lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    if shared:
        lik = np.array(
            [
                _blurred(row, s / math.sqrt(shared[k])) if shared.get(k) else row
                for k, row in zip(keys, lik, strict=True)
            ]
        )
    if not pooled:
        return {
            k: Posterior(row * OWN_PRIOR / (row * OWN_PRIOR).sum(), len(groups[k]))
            for k, row in zip(keys, lik, strict=True)
        }
    prior = np.full(len(GRID), 1.0 / len(GRID))
    joint = lik * prior
    for _ in range(EM_STEPS):
        joint = lik * prior
        joint /= joint.sum(axis=1, keepdims=True)
        new = joint.mean(axis=0)
        if np.abs(new - prior).max() < 1e-7:
            prior = new
            break
        prior = new
    out: dict[Hashable, Posterior] = {}
    n = len(keys)
    for i, (k, row) in enumerate(zip(keys, lik, strict=True)):
        # the prior of the others: a configuration's own runs do not make its prior (else
        # a well-measured lucky one gets an atom of its own and is not pulled back at all);
        # the EM's fixed point less its own share, which is the prior one step from the
        # others' NPMLE
        own = np.maximum(n * prior - joint[i], 0.0) if n > 1 else np.zeros_like(prior)
        post = row * _smoothed(own)
        out[k] = Posterior(post / post.sum(), len(groups[k]))
    return out


def _smoothed(atoms: np.ndarray) -> np.ndarray:
    """The NPMLE's prior is a few atoms; smoothed, a posterior is not narrower than the runs
    allow; mixed with the broad prior, no effect is ruled out."""
    total = atoms.sum()
    if total <= 0:
        return BROAD_PRIOR
    smooth = np.convolve(atoms / total, SMOOTHING, mode="same")
    return (1 - BROAD_WEIGHT) * smooth / smooth.sum() + BROAD_WEIGHT * BROAD_PRIOR


def pair_posterior(
    default: Sequence[float], candidate: Sequence[float], scale: float | None = None
) -> Posterior:
    """A lone configuration run in pairs beside the defaults (``default[i]`` next to
    ``candidate[i]``): its posterior under the broad prior (half at no effect)."""
    y = np.log(np.asarray(candidate, dtype=float) / np.asarray(default, dtype=float))
    s = scale if scale is not None else noise_scale({"c": list(y)}, default)
    ll = _t_loglik(y, s)
    post = np.exp(ll - ll.max()) * BROAD_PRIOR
    return Posterior(post / post.sum(), len(y))
