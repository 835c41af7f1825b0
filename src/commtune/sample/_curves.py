"""Curves of time against message size: crossings, the best method per size, prediction.

As NewMadeleine does: each method (protocol, single-copy mechanism, collective algorithm) is
sampled at the same sizes; where two curves cross between adjacent samples the threshold is
found by linear interpolation of their difference; prediction between samples interpolates in
log-log space (straight lines there: latency-bound and bandwidth-bound parts alike).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from commtune.mpi import Segment

# Two methods closer than this (relative) at a size are a tie: noise, not a reason to switch.
TIE = 0.03


@dataclass(frozen=True)
class Curve:
    """One method's time (ns) per size (bytes), sizes ascending; q1/q3 give the spread."""

    method: str
    sizes: tuple[int, ...]
    times: tuple[float, ...]
    q1: tuple[float, ...] = ()
    q3: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if len(self.sizes) != len(self.times) or not self.sizes:
            raise ValueError(f"curve {self.method}: sizes and times differ in length or are empty")
        if any(b <= a for a, b in zip(self.sizes, self.sizes[1:], strict=False)):
            raise ValueError(f"curve {self.method}: sizes must be strictly ascending")

    def at(self, size: int) -> float | None:
        """The sampled time at ``size``, None when not sampled there."""
        try:
            return self.times[self.sizes.index(size)]
        except ValueError:
            return None

    def spread(self, size: int) -> float:
        """Interquartile range over median at ``size`` (0 when not recorded)."""
        if not self.q1 or not self.q3 or size not in self.sizes:
            return 0.0
        i = self.sizes.index(size)
        return (self.q3[i] - self.q1[i]) / self.times[i] if self.times[i] > 0 else 0.0

    def restricted(self, low: float) -> Curve:
        """The samples at sizes of at least ``low``."""
        keep = [i for i, s in enumerate(self.sizes) if s >= low] or [len(self.sizes) - 1]
        pick = lambda values: tuple(values[i] for i in keep) if values else ()  # noqa: E731
        return Curve(self.method, pick(self.sizes), pick(self.times), pick(self.q1), pick(self.q3))

    def predict(self, size: float) -> float:
        """Time at ``size`` by log-log interpolation; the end segments extend beyond the ends."""
        xs = [math.log(max(s, 1)) for s in self.sizes]
        ys = [math.log(max(t, 1e-12)) for t in self.times]
        if len(xs) == 1:
            return self.times[0]
        x = math.log(max(size, 1))
        i = 1
        while i < len(xs) - 1 and x > xs[i]:
            i += 1
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))

    def to_json(self) -> dict[str, object]:
        return {
            "sizes": list(self.sizes),
            "median_ns": list(self.times),
            "q1_ns": list(self.q1),
            "q3_ns": list(self.q3),
        }

    @classmethod
    def from_json(cls, method: str, data: Mapping[str, Sequence[float]]) -> Curve:
        return cls(
            method,
            tuple(int(s) for s in data["sizes"]),
            tuple(float(t) for t in data["median_ns"]),
            tuple(float(t) for t in data.get("q1_ns", ())),
            tuple(float(t) for t in data.get("q3_ns", ())),
        )


@dataclass(frozen=True)
class Crossing:
    """Curve ``faster_below`` is faster below ``size``, ``faster_above`` above it."""

    size: float
    faster_below: str
    faster_above: str

    def to_json(self) -> dict[str, object]:
        return {"size": self.size, "below": self.faster_below, "above": self.faster_above}


def crossings(a: Curve, b: Curve) -> list[Crossing]:
    """Every crossing of ``a`` and ``b`` over the sizes both sampled, interpolated linearly.

    Between adjacent common sizes s0 < s1 where d = t_a - t_b changes sign, the threshold is
    s0 + (s1 - s0) * d0 / (d0 - d1). A sample where the curves are exactly equal counts as
    the crossing itself.
    """
    common = sorted(set(a.sizes) & set(b.sizes))
    diffs = [(s, a.at(s) - b.at(s)) for s in common]  # type: ignore[operator]
    out: list[Crossing] = []
    last_sign = 0
    last: tuple[int, float] | None = None
    for s, d in diffs:
        sign = (d > 0) - (d < 0)
        if sign != 0 and last_sign not in (0, sign) and last is not None:
            s0, d0 = last
            at = float(s0) if d0 == 0 else s0 + (s - s0) * d0 / (d0 - d)
            below, above = (a.method, b.method) if sign > 0 else (b.method, a.method)
            out.append(Crossing(at, below, above))
        if sign != 0:
            last_sign = sign
            last = (s, d)
        elif last is not None:  # equal here: remember the point as the start of the interval
            last = (s, 0.0)
    return out


def best_methods(
    curves: Sequence[Curve], prefer: str | None = None, tie: float = TIE
) -> list[tuple[int, str]]:
    """(size, method) at every sampled size: the fastest, unless the previous choice (or
    ``prefer``, the library default) is within noise of it: ``tie`` or the measured spread
    (interquartile range over median) of either curve, whichever is larger. A lone sample
    whose neighbours agree, and whose neighbours' method is within 10 % there, takes theirs:
    noise does not split the range into slivers."""
    sizes = sorted({s for c in curves for s in c.sizes})
    out: list[tuple[int, str]] = []
    previous: str | None = None
    for size in sizes:
        times = {c.method: t for c in curves if (t := c.at(size)) is not None}
        spread = {c.method: c.spread(size) for c in curves if c.at(size) is not None}
        fastest = min(times, key=lambda m: times[m])
        choice = fastest
        for keep in (previous, prefer):
            if keep is None or keep not in times:
                continue
            noise = max(tie, spread[keep], spread[fastest])
            if times[keep] <= times[fastest] * (1 + noise):
                choice = keep
                break
        out.append((size, choice))
        previous = choice
    for i in range(1, len(out) - 1):
        (size, lone), before, after = out[i], out[i - 1][1], out[i + 1][1]
        if lone != before == after:
            curve = next(c for c in curves if c.method == before)
            other = next(c for c in curves if c.method == lone)
            t_before, t_lone = curve.at(size), other.at(size)
            if t_before is not None and t_lone is not None and t_before <= t_lone * 1.10:
                out[i] = (size, before)
    return out


def segments(curves: Sequence[Curve], prefer: str | None = None) -> list[Segment]:
    """The best method per size as ranges; a boundary is where the two curves cross (by
    interpolation), or midway in log space when they do not cross in that interval."""
    by_name = {c.method: c for c in curves}
    chosen = best_methods(curves, prefer)
    out: list[Segment] = []
    low: float = chosen[0][0]
    for (s0, m0), (s1, m1) in itertools.pairwise(chosen):
        if m0 == m1:
            continue
        pair = crossings(by_name[m0], by_name[m1])
        inside = [c.size for c in pair if s0 <= c.size <= s1]
        boundary = inside[-1] if inside else math.sqrt(s0 * s1)
        out.append(Segment(low, boundary, m0))
        low = boundary
    out.append(Segment(low, None, chosen[-1][1]))
    return out


def method_at(segs: Sequence[Segment], size: float) -> str:
    for seg in segs:
        if seg.high is None or size < seg.high:
            return seg.method
    return segs[-1].method


def geometric_mean_ratio(curve: Curve, best: Mapping[int, float]) -> float:
    """How much slower than ``best`` (size -> time) ``curve`` is, as a geometric mean ratio."""
    logs = [math.log(t / best[s]) for s, t in zip(curve.sizes, curve.times, strict=True)]
    return math.exp(sum(logs) / len(logs)) if logs else math.inf
