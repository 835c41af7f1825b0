"""What an in-run race says at each message size (issue 95, item 3): the libraries decide a
collective's algorithm by communicator size and message size (Open MPI's dynamic rules,
MPICH's CSEL), and a race's blocks are already stratified by both (``Race.stratified``). Here
every candidate is tested against the reference on each message size's blocks alone, by the
race's own rule (:func:`~commtune.tune._inrun.weighed` on one stratum), each test at the
caller's share of the risk split over the sizes; a size's choice is its fastest candidate
that passes, else the reference. Adjacent sizes with one choice form a range
(:func:`ranges`), the form a selection file takes.

This is evidence from the race, not a verdict: where the choices differ by size
(:func:`chooses_by_size`), the study writes them as the library's selection file
(``service._inrun_file``) and that file, exactly as exported, is what its whole runs test
beside the defaults; else the one algorithm that won is tested, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from commtune.mpi import Segment
from commtune.tune._inrun import STRATA, WARMUP_BLOCKS, Race, weighed


@dataclass(frozen=True)
class SizeChoice:
    """One message size (on a communicator of ``ranks``): its calls' share of the raced
    calls' time, the fastest candidate passing its test there (None: the reference), that
    candidate's speedup in the calls' time and interval, and the best estimate's name and
    speedup whether or not it passed."""

    bytes: int
    ranks: int
    share: float
    chosen: str | None
    speedup: float | None
    interval: tuple[float, float] | None
    best: str
    best_speedup: float
    blocks: int

    def to_json(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "ranks": self.ranks, "share": self.share,
                "chosen": self.chosen, "speedup": self.speedup,
                "interval": list(self.interval) if self.interval else None,
                "best": self.best, "best_speedup": self.best_speedup,
                "blocks": self.blocks}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SizeChoice:
        interval = data.get("interval")
        return cls(int(data["bytes"]), int(data["ranks"]), float(data["share"]), data["chosen"],
                   data.get("speedup"), (float(interval[0]), float(interval[1])) if interval
                   else None, str(data["best"]), float(data["best_speedup"]),
                   int(data["blocks"]))  # fmt: skip


def by_size(races: Sequence[Race], limit: float, min_gain: float,
            warmup: int = WARMUP_BLOCKS) -> list[SizeChoice]:  # fmt: skip
    """Each message size's choice over ``races`` (pooled: a run's blocks its own strata),
    smallest size first; each candidate's test at ``limit`` split over the sizes."""
    pooled: dict[tuple[int, int], dict[str, list[list[np.ndarray]]]] = {}
    for r, race in enumerate(races):
        blocks, strata, calls = race.stratified(warmup)
        for s in np.unique(strata):
            at = strata == s
            key = (_of(race.slot_bytes, int(s), -1), _of(race.slot_ranks, int(s), race.ranks))
            for j in range(1, race.k):
                kept = at & ~np.isnan(blocks[:, j])
                parts = pooled.setdefault(key, {}).setdefault(race.names[j], [[], [], [], []])
                given = (blocks[kept, 0], blocks[kept, j], strata[kept] + STRATA * r, calls[kept])
                for part, values in zip(parts, given, strict=True):
                    part.append(values)
    spent = {key: _spent(c) for key, c in pooled.items()}
    total = sum(spent.values()) or 1.0
    share_limit = limit / max(1, len(pooled))
    out = []
    for (size, ranks), candidates in sorted(pooled.items()):
        tests = {}
        for name, parts in candidates.items():
            ref, mine, strata, calls = (np.concatenate(p) for p in parts)
            if len(ref):
                tests[name] = (weighed(ref, mine, strata, share_limit, min_gain, calls), len(ref))
        if not tests:
            continue
        best = max(tests, key=lambda n: tests[n][0].speedup)
        passing = [n for n in tests if tests[n][0].passed]
        chosen = max(passing, key=lambda n: tests[n][0].speedup) if passing else None
        t = tests[chosen][0] if chosen else None
        out.append(SizeChoice(size, ranks, spent[(size, ranks)] / total, chosen,
                              t.speedup if t else None, t.interval if t else None, best,
                              tests[best][0].speedup, tests[best][1]))  # fmt: skip
    return out


def ranges(choices: Sequence[SizeChoice], reference: str) -> list[Segment]:
    """The choices of one communicator size as ranges of message sizes: adjacent sizes with
    one choice (the reference where none passed) merged; a range runs from its first size
    up to (not including) the next range's first, the last one open: the ranges of
    ``commtune sample`` (``sample.segments``), which every library's writer takes."""
    ordered = sorted(choices, key=lambda c: c.bytes)
    out: list[Segment] = []
    for i, c in enumerate(ordered):
        method = c.chosen or reference
        high = float(ordered[i + 1].bytes) if i + 1 < len(ordered) else None
        if out and out[-1].method == method:
            out[-1] = Segment(out[-1].low, high, method)
        else:
            out.append(Segment(float(c.bytes) if out else 0.0, high, method))
    return out


# The collectives whose sizes a selection file states as every rank's blocks together (what
# ``commtune sample`` writes: ``mpi._selection``), where a race records one rank's block.
_TIMES_RANKS = frozenset({"allgather", "alltoall"})


def by_comm_size(choices: Sequence[SizeChoice], op: str,
                 reference: str) -> dict[int, list[Segment]]:  # fmt: skip
    """Each communicator size's :func:`ranges`, their sizes in a selection file's terms (the
    sampled sizes: for allgather and alltoall one rank's block times the ranks)."""
    out: dict[int, list[Segment]] = {}
    for ranks in sorted({c.ranks for c in choices}):
        scale = ranks if op in _TIMES_RANKS else 1
        mine = [replace(c, bytes=c.bytes * scale) for c in choices if c.ranks == ranks]
        out[ranks] = ranges(mine, reference)
    return out


def chooses_by_size(segs: Mapping[int, Sequence[Segment]], reference: str) -> bool:
    """Whether ``segs`` (:func:`by_comm_size`) say more than one algorithm does: some size
    chose an algorithm, and not one algorithm at every size of every communicator."""
    methods = {s.method for ranges in segs.values() for s in ranges}
    return bool(methods - {reference}) and len(methods) > 1


def _of(values: Sequence[int], index: int, default: int) -> int:
    return int(values[index]) if index < len(values) else default


def _spent(candidates: dict[str, list[list[np.ndarray]]]) -> float:
    """The raced calls' time at one size: every candidate's blocks, the reference's and its
    own, each a time a call times its calls."""
    total = 0.0
    for ref, mine, _, calls in candidates.values():
        for a, b, n in zip(ref, mine, calls, strict=True):
            total += float(((a + b) * n).sum())
    return total
