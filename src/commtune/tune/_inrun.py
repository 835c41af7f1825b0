"""Evidence from inside one run (issue 77): a collective's algorithms raced call by call.

``libctrace`` (``native/race/ct_race.c``) assigns the program's calls of one collective to the
candidates in randomized complete blocks within strata of one message size (every block of K
calls of a size holds each candidate once, in an order a seed draws) and writes the slowest
rank's time of every raced call. Because the
assignment within each block is random, swapping two candidates' labels within a block is as
likely as what was drawn: for the reference and one candidate, the pairs of their calls in
each block are the verdict's pairs, their order drawn by a coin (``commtune.rule``), and the
same paired test is exact whatever the noise and its dependence between calls. The stated risk
is split evenly over the K - 1 candidates, one look each.

The claim is stronger than the whole-run verdict's: a candidate is said faster only where the
test rejects that it is at most ``min_gain`` faster a call (its calls counted ``min_gain``
slower), so that two labels of one algorithm (an A/A race) are said faster at no more than the
stated rate, and a candidate 2 % slower a fortiori. With thousands of calls the stronger claim
costs little; with the whole-run test's null (2 % slower) and ``min_gain`` as a bar on the
estimate alone, an A/A race on sub-microsecond calls was said faster in 3 of 20 races.

What the promise is about: the tuned calls' time (per call, the slowest rank's), not the
program's; the program's share of it is the profile's to say, and whole runs show the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from commtune import rule

WARMUP_BLOCKS = 2  # each candidate's first calls (a new communicator's first): not evidence
MOST_BLOCKS = 2000  # blocks the test reads at most: every m-th, chosen without their labels


@dataclass(frozen=True)
class Race:
    """What one raced run recorded: the collective (``op``), the variable and how it was
    applied (``mode``), the candidates (``names``, the reference first; their ``values``),
    the seed, the ranks, why it was ``refused`` or failed (``error``), and per raced call its
    candidate and time (the slowest rank's, seconds)."""

    op: str
    cvar: str
    mode: str
    seed: int
    ranks: int
    names: tuple[str, ...]
    values: tuple[int, ...]
    refused: str | None
    error: str | None
    candidate: np.ndarray
    time: np.ndarray
    slot: np.ndarray  # the stratum (message size) of each call
    slot_bytes: tuple[int, ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any], names: Sequence[str]) -> Race:
        return cls(str(data["op"]), str(data["cvar"]), str(data["mode"]), int(data["seed"]),
                   int(data["ranks"]), tuple(names), tuple(int(v) for v in data["values"]),
                   data.get("refused"), data.get("error"),
                   np.asarray(data.get("candidate") or [], dtype=int),
                   np.asarray(data.get("time") or [], dtype=float),
                   np.asarray(data.get("slot") or [], dtype=int),
                   tuple(data.get("slot_bytes") or ()))  # fmt: skip

    @property
    def k(self) -> int:
        return len(self.values)

    def blocks(self, warmup: int = WARMUP_BLOCKS) -> np.ndarray:
        """The times as a (blocks, candidates) array: column j candidate j's time in each
        complete block of each message size, the first ``warmup`` blocks of a size left out."""
        parts = []
        slots = self.slot if len(self.slot) == len(self.time) else np.zeros(len(self.time), int)
        for s in np.unique(slots):
            mine = slots == s
            whole = int(mine.sum()) // self.k
            if whole <= warmup:
                continue
            t = self.time[mine][: whole * self.k].reshape(whole, self.k)
            c = self.candidate[mine][: whole * self.k].reshape(whole, self.k)
            parts.append(np.take_along_axis(t, np.argsort(c, axis=1), axis=1)[warmup:])
        if not parts:
            return np.zeros((0, self.k))
        out = np.concatenate(parts)
        step = -(-len(out) // MOST_BLOCKS)  # thinned evenly, whatever the labels: still exact
        return out[::step]


@dataclass(frozen=True)
class Raced:
    """One candidate against the reference: its name, the blocks compared, the median time
    per call of each, the rule's test on the per-block pairs."""

    name: str
    blocks: int
    reference_median: float
    median: float
    test: rule.Test

    def to_json(self) -> dict[str, Any]:
        t = self.test
        return {"name": self.name, "blocks": self.blocks, "reference_median_s":
                self.reference_median, "median_s": self.median, "speedup": t.speedup,
                "interval": list(t.interval), "p_value": t.p, "limit": t.limit,
                "passed": t.passed, "won": t.won}  # fmt: skip


def decide_race(
    race: Race, risk: float, min_gain: float, warmup: int = WARMUP_BLOCKS
) -> list[Raced]:
    """Each candidate against the reference on the blocks after ``warmup``, at ``risk``
    split over the candidates; fastest estimate first. The test is the claim of ``min_gain``
    faster a call, which implies the promise (see the module docstring)."""
    blocks = race.blocks(warmup)
    if not len(blocks):
        return []
    share = risk / (race.k - 1)
    out = []
    for j in range(1, race.k):
        ref, mine = blocks[:, 0], blocks[:, j]
        # the null: at most min_gain faster (its calls counted min_gain slower); it implies the
        # promise's (more than ``tolerance`` slower is further inside it)
        test = rule.test(list(ref), list(mine), limit=share, tolerance=-min_gain,
                         min_gain=min_gain)  # fmt: skip
        out.append(Raced(race.names[j], len(blocks), float(np.median(ref)),
                         float(np.median(mine)), test))  # fmt: skip
    return sorted(out, key=lambda r: -r.test.speedup)
