"""Splitting one message over several links so that every chunk ends at the same time.

NewMadeleine §III-C: with each link's sampled transfer time T_i(size) and the time r_i at
which it becomes free, find the chunk sizes x_i (sum N) that equalise r_i + T_i(x_i). For two
rails the paper uses a dichotomy on the split; here the dichotomy is on the common end time E
(one bisection for any number of rails): x_i(E) is the largest chunk link i finishes by E,
and the sum of x_i(E) grows with E. For linear links (T = latency + size / bandwidth) the
closed form is the bandwidth-weighted rule: E = (N + sum b_i (r_i + l_i)) / sum b_i,
x_i = b_i (E - r_i - l_i), links that would get a negative chunk left out.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from commtune.sample import Curve


@dataclass(frozen=True)
class Link:
    """A link's transfer time (seconds) for a size (bytes), and when it becomes free."""

    name: str
    time: Callable[[float], float]
    release: float = 0.0

    @classmethod
    def sampled(cls, name: str, curve: Curve, release: float = 0.0) -> Link:
        """From a sampled curve (ns), made non-decreasing: a chunk costs no more than the
        sampled time of any larger size (a noisy sample, slower at a small size than at a
        large one, would otherwise break the bisections, which need a time that grows with
        the size); a zero-byte chunk costs nothing (the link is unused)."""
        # the fastest sampled time at each size and above (suffix minima)
        floor = list(itertools.accumulate(reversed(curve.times), min))[::-1]

        def time(x: float) -> float:
            if x <= 0:
                return 0.0
            later = bisect.bisect_right(curve.sizes, x)  # the first sample above x
            t = curve.predict(x)
            return (min(t, floor[later]) if later < len(floor) else t) * 1e-9

        return cls(name, time, release)

    @classmethod
    def linear(cls, name: str, latency: float, bandwidth: float, release: float = 0.0) -> Link:
        return cls(name, lambda x: latency + x / bandwidth if x > 0 else 0.0, release)


def _chunk_by(link: Link, end: float, total: int) -> int:
    """Largest chunk (bytes, at most ``total``) ``link`` delivers by ``end`` (its time must
    not fall as the size grows: :meth:`Link.sampled` makes a sampled curve so)."""
    if link.release + link.time(1) > end:
        return 0
    lo, hi = 1, total
    if link.release + link.time(hi) <= end:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if link.release + link.time(mid) <= end:
            lo = mid
        else:
            hi = mid
    return lo


def split(total: int, links: Sequence[Link]) -> list[int]:
    """Chunk sizes (bytes, summing to ``total``) that make every used link end together."""
    if total <= 0 or not links:
        return [0] * len(links)
    lo = 0.0
    hi = min(link.release + link.time(total) for link in links)  # the best single link
    for _ in range(100):
        mid = (lo + hi) / 2
        if sum(_chunk_by(link, mid, total) for link in links) >= total:
            hi = mid
        else:
            lo = mid
    chunks = [_chunk_by(link, hi, total) for link in links]
    # the bisection lands on a slight excess: take it back from the latest finisher
    excess = sum(chunks) - total
    while excess > 0:
        i = max(
            (k for k in range(len(links)) if chunks[k] > 0),
            key=lambda k: links[k].release + links[k].time(chunks[k]),
        )
        take = min(excess, chunks[i])
        chunks[i] -= take
        excess -= take
    return chunks


def finish_time(chunks: Sequence[int], links: Sequence[Link]) -> float:
    """When the last chunk arrives (predicted); unused links do not count."""
    ends = [link.release + link.time(x) for x, link in zip(chunks, links, strict=True) if x > 0]
    return max(ends, default=0.0)
