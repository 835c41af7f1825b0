"""Evidence from inside one run (issues 77, 93): a collective's algorithms raced call by call.

``libctrace`` (``native/race/ct_race.c``) assigns the program's calls of one collective to the
candidates in randomized complete blocks within strata of one communicator and message size.
A unit is ``run`` consecutive calls of one size on one communicator made by one candidate,
after a barrier (every rank has ended every earlier call, so what one candidate sent has
arrived before the next is timed); every block of K units holds each candidate once, in an
order a seed draws. A unit's time is what its calls cost the program (``said_time``). Because
the assignment within each block is random, swapping two candidates' labels within a block is
as likely as what was drawn: for the reference and one candidate, the pairs of their units in
each block are the verdict's pairs, their order drawn by a coin (``commtune.rule``), and the
same paired test is exact under the sharp null (the two units alike in law) whatever the
noise and its dependence between calls; the claim it tests (more than ``min_gain`` faster)
is exact where the effect is one factor on every call. The stated risk is split evenly over
the K - 1 candidates, one look each. A static setting serves every size, so the test weighs
each stratum by its share of the calls' time (:func:`weighed`): a candidate faster only at
the sizes that cost little is not handed back. The race only chooses: a study tests its
answer on whole runs (:func:`whole_runs`), the program's promise.

Why units and a barrier: calls made back to back carry cost over. A call whose sends completed
into the network's buffers hands their cost to the calls after it, and a pipelined broadcast
streams through consecutive calls of its own. Raced one call at a time, a 32 KiB broadcast on
4 bed nodes ranked its algorithms the other way round from whole runs; in units of 16 calls
after a barrier the race's speedups were within 3 % of whole runs' (history.md, "Issue 77,
session 9").

The claim is stronger than the whole-run verdict's: a candidate is said faster only where the
test rejects that it is at most ``min_gain`` faster a call (its calls counted ``min_gain``
slower), so that two labels of one algorithm (an A/A race) are said faster at no more than the
stated rate, and a candidate 2 % slower a fortiori. With thousands of calls the stronger claim
costs little; with the whole-run test's null (2 % slower) and ``min_gain`` as a bar on the
estimate alone, an A/A race on sub-microsecond calls was said faster in 3 of 20 races.

What the promise is about: the tuned calls' time, not the program's; the program's share of
it is the profile's to say, and whole runs show the rest. What a unit costs (issue 93): each
of its calls from the last rank's arrival to the last rank's departure, summed (libctrace
times each rank's calls from its own exit from the unit's barrier and combines them in one
allreduce at the unit's end: no shared clock). The least any rank spent inside the calls (what
this read before) ranks an allreduce that is a reduce then a broadcast first: the rank that
leaves while the broadcast is still on its way spends least (on 4 bed nodes nonoverlapping
raced 3.02x faster a call, whole runs 0.74x). The slowest rank's time inside the calls holds
the program's imbalance (the wait for late ranks); its time from the barrier holds the
computation between the calls. Any statistic keeps the test exact: the labels are drawn, not
the times.

Where the blocks come from: every communicator of two ranks or more is raced, each in its own
sequence of calls (its members make them in the same order), and a block is K consecutive
units of one message size on one communicator. Blocks of one communicator size and message
size form one stratum of the test (:func:`weighed`): each block's order is drawn apart from
every other's, so pooling them keeps the test exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from commtune import rule
from commtune.study import RACE_RUN

FELL_BACK = 128  # added by libctrace to a call's candidate where the library ran its own
WARMUP_BLOCKS = 2  # each candidate's first calls (a new communicator's first): not evidence
MOST_BLOCKS = 2000  # blocks the test reads at most: every m-th, chosen without their labels
RUN = RACE_RUN  # the calls of a unit: consecutive calls of one candidate, after a barrier
MIN_RUN = 2  # a unit's calls at least: one call after a barrier put the bed's best second
TARGET_BLOCKS = 24  # a run's blocks a unit's length aims at, where the run's calls are known
# a unit's length doubles every GROW_BLOCKS blocks of its message size (libctrace's constant)
# up to RUN_MAX calls: a long run pays a barrier every few hundred calls, not every RUN
GROW_BLOCKS = 24
RUN_MAX = 64
BOOTSTRAP = 1000  # resamples of the blocks for the interval of a race's speedup (an estimate)
STRATA = 1 << 16  # a pooled run's strata apart from another run's of the same message size


def run_length(calls: int | None, k: int) -> int:
    """The calls of a unit for a run that makes ``calls`` raced calls among ``k``
    candidates: ``RUN``, fewer where that gives fewer than ``TARGET_BLOCKS`` blocks
    (``MIN_RUN`` at least); ``RUN`` where the calls are not known yet."""
    if calls is None:
        return RUN
    return max(MIN_RUN, min(RUN, calls // (k * TARGET_BLOCKS)))


def said_time(op: str, run: int, run_max: int | None = None) -> str:
    """What a raced unit's time is (per call: over its calls); ``run_max``: its length grew
    up to that many calls."""
    unit = f"{run} consecutive calls" if run > 1 else "one call"
    if run_max and run_max > run:
        unit += f" (doubling every {GROW_BLOCKS} blocks of a size, up to {run_max})"
    unit += " after a barrier"
    return (
        f"the {op} calls' own time: units of {unit}, each call from the last rank's arrival "
        "to the last rank's departure, per call, each communicator and message size "
        "weighed by its time"
    )


@dataclass(frozen=True)
class Race:
    """What one raced run recorded: the collective (``op``), the variable and how it was
    applied (``mode``), the candidates (``names``, the reference first; their ``values``),
    the seed, the ranks, why it was ``refused`` or failed (``error``), and per unit (``run``
    consecutive calls) its candidate and time in seconds (``time``: what :meth:`said` says,
    its calls from the last rank's arrival to the last rank's departure; ``time_slowest``:
    the most any rank spent inside the calls), its communicator (``comm``) and stratum
    (``slot``: a communicator size and a message size)."""

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
    # (stratum, candidate) where the library refused the candidate (MPICH's fallback check):
    # its calls there ran the reference, marked FELL_BACK + candidate, never evidence
    fell_back: tuple[tuple[int, int], ...] = ()
    time_slowest: np.ndarray | None = None  # per unit the most any rank spent in its calls
    run: int = 1  # a unit of the blocks: consecutive calls of one candidate (COMMTUNE_RACE_RUN)
    raced: int | None = None  # the calls raced (incomplete units' included); None: the units'
    # per unit its calls (its length grows with its stratum's blocks, up to COMMTUNE_RACE_RUN_MAX);
    # None: every unit ``run`` calls
    unit_calls: np.ndarray | None = None
    # racing's own cost: the least and the most any rank spent in the units' barriers (s),
    # and the run's time from MPI_Init's end to MPI_Finalize's start; None: not written
    barrier: tuple[float, float] | None = None
    span: float | None = None
    # per candidate its segment size (COMMTUNE_RACE_VALUES2; -1: as launched); () none raced
    values2: tuple[int, ...] = ()
    # per unit its communicator (None: one); per stratum its communicator's ranks
    comm: np.ndarray | None = None
    slot_ranks: tuple[int, ...] = ()
    # per unit, beside ``time``: the least any rank spent inside its calls, and the slowest
    # rank's time from its barrier to its last call's end (the computation between included);
    # what libctrace measured before issue 93 and another reading, kept for the benchmarks
    time_least: np.ndarray | None = None
    time_span: np.ndarray | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], names: Sequence[str]) -> Race:
        def ints(key: str) -> np.ndarray:
            return np.asarray(data.get(key) or [], dtype=int)

        most = data.get("time_calls")

        def times(key: str) -> np.ndarray | None:
            return np.asarray(data[key], dtype=float) if data.get(key) is not None else None

        return cls(str(data["op"]), str(data["cvar"]), str(data["mode"]), int(data["seed"]),
                   int(data["ranks"]), tuple(names), tuple(int(v) for v in data["values"]),
                   data.get("refused"), data.get("error"), ints("candidate"),
                   np.asarray(data.get("time") or [], dtype=float), ints("slot"),
                   tuple(data.get("slot_bytes") or ()),
                   tuple((int(a), int(b)) for a, b in data.get("fell_back") or ()),
                   np.asarray(most, dtype=float) if most is not None else None,
                   int(data.get("run") or 1), data.get("raced_calls"),
                   np.asarray(data["unit_calls"], dtype=float) if "unit_calls" in data else None,
                   tuple(data["barrier"]) if data.get("barrier") else None,
                   data.get("span"), tuple(int(v) for v in data.get("values2") or ()),
                   ints("comm") if "comm" in data else None,
                   tuple(int(v) for v in data.get("slot_ranks") or ()),
                   times("time_last"), times("time_span"))  # fmt: skip

    @property
    def raced_calls(self) -> int:
        """The calls raced in the run."""
        if self.raced is not None:
            return self.raced
        return int(self.calls_of_units.sum())

    @property
    def calls_of_units(self) -> np.ndarray:
        """Per unit its calls."""
        if self.unit_calls is not None and len(self.unit_calls) == len(self.time):
            return self.unit_calls
        return np.full(len(self.time), float(self.run))

    def overhead(self) -> tuple[float, float] | None:
        """Racing's own cost as shares of the run's time: the least and the most any rank
        spent in the units' barriers (the least: the barrier itself; the most: with the wait
        for ranks that arrive late, which the calls would have paid). None: not measured."""
        if self.barrier is None or not self.span:
            return None
        return self.barrier[0] / self.span, self.barrier[1] / self.span

    def coarse(self) -> bool:
        """Its units were longer than its calls allow for ``TARGET_BLOCKS`` blocks: a run
        with shorter ones (:func:`run_length`) would give more. A run that made no raced
        call is not: the program does not call the collective, and no unit gives it blocks;
        nor one whose calls, in units of ``MIN_RUN``, would not give a block past the
        warm-up (CoMD's 19 allreduce calls among 7 candidates: a second run is not spent)."""
        calls = self.raced_calls
        return (run_length(calls, self.k) < self.run
                and calls // (self.k * MIN_RUN) > WARMUP_BLOCKS)  # fmt: skip

    def said(self) -> str:
        """What a unit's time is, as the terminal and the verdict say it."""
        return said_time(self.op, self.run, self.run_max)

    @property
    def run_max(self) -> int:
        """The calls of its longest unit."""
        return int(self.calls_of_units.max()) if len(self.time) else self.run

    def units_said(self) -> str:
        """Its units' length as the terminal says it: ``8`` or ``8-64 calls``."""
        return f"{self.run}-{self.run_max}" if self.run_max > self.run else f"{self.run}"

    def overhead_said(self) -> str | None:
        """Racing's own cost as a sentence; None where the run did not measure it."""
        cost = self.overhead()
        if cost is None:
            return None
        return (
            f"racing's barriers took {100 * cost[0]:.2f} % of the run (the rank that "
            f"waited least) to {100 * cost[1]:.2f} % (the most, late ranks waited for)"
        )

    @property
    def k(self) -> int:
        return len(self.values)

    def refused_names(self) -> list[str]:
        """The candidates the library refused at some message size (their calls there ran
        the reference and are not evidence), with the sizes: ``name (8 B, 16 B)``, and the
        communicator's ranks where it is not the world's (``8 B on 2 ranks``)."""
        sizes: dict[int, list[str]] = {}
        for s, c in self.fell_back:
            b = self.slot_bytes[s] if s < len(self.slot_bytes) else None
            said = f"{b} B" if b is not None else f"size {s}"
            ranks = self.slot_ranks[s] if s < len(self.slot_ranks) else self.ranks
            if ranks != self.ranks:
                said += f" on {ranks} ranks"
            sizes.setdefault(c, []).append(said)
        return [f"{self.names[c]} ({', '.join(v)})" for c, v in sorted(sizes.items())]

    def refusals(self) -> list[str]:
        """:meth:`refused_names` as the sentences the terminal says."""
        return [f"{r}: the library ran its own decision instead (its restrictions not met "
                "at these sizes); those calls are not evidence"
                for r in self.refused_names()]  # fmt: skip

    def blocks(self, warmup: int = WARMUP_BLOCKS) -> np.ndarray:
        """The times a call as a (blocks, candidates) array: column j candidate j's unit in
        each complete block of each message size over the unit's calls, the first ``warmup``
        blocks of a size left out; NaN where the library refused the candidate and ran its
        own decision."""
        return self.stratified(warmup)[0]

    def stratified(self, warmup: int = WARMUP_BLOCKS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`blocks`, each block's stratum (a communicator size and a message size) and
        the calls of each of its units (one length a block): each communicator's units of a
        size in blocks of K, its first ``warmup`` blocks left out (a new communicator's first
        calls)."""
        parts, strata, lengths = [], [], []
        n = len(self.time)
        slots = self.slot if len(self.slot) == n else np.zeros(n, int)
        comms = self.comm if self.comm is not None and len(self.comm) == n else np.zeros(n, int)
        calls = self.calls_of_units
        per_call = self.time / calls
        for g, s in sorted({(int(g), int(s)) for g, s in zip(comms, slots, strict=True)}):
            mine = (slots == s) & (comms == g)
            whole = int(mine.sum()) // self.k
            if whole <= warmup:
                continue
            t = per_call[mine][: whole * self.k].reshape(whole, self.k)
            c = self.candidate[mine][: whole * self.k].reshape(whole, self.k)
            t = np.where(c >= FELL_BACK, np.nan, t)  # the library ran its own: no evidence
            c = c % FELL_BACK
            parts.append(np.take_along_axis(t, np.argsort(c, axis=1), axis=1)[warmup:])
            strata.append(np.full(len(parts[-1]), s))
            lengths.append(calls[mine][: whole * self.k : self.k][warmup:])
        if not parts:
            return np.zeros((0, self.k)), np.zeros(0, int), np.zeros(0)
        out, where, length = np.concatenate(parts), np.concatenate(strata), np.concatenate(lengths)
        step = -(-len(out) // MOST_BLOCKS)  # thinned evenly, whatever the labels: still exact
        return out[::step], where[::step], length[::step]


@dataclass(frozen=True)
class Raced:
    """One candidate against the reference: its name, the blocks compared, the median time
    per call of each, the rule's test on the per-block pairs."""

    name: str
    blocks: int
    reference_median: float
    median: float
    test: rule.Test

    def estimate_json(self) -> dict[str, Any]:
        """Its figures without the test (the pooled ranking's: no test of its own)."""
        t = self.test
        return {"name": self.name, "blocks": self.blocks, "reference_median_s":
                self.reference_median, "median_s": self.median, "speedup": t.speedup,
                "interval": list(t.interval)}  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        t = self.test
        return {**self.estimate_json(), "p_value": t.p, "limit": t.limit, "passed": t.passed,
                "won": t.won}  # fmt: skip


def decide_race(
    race: Race, risk: float, min_gain: float, warmup: int = WARMUP_BLOCKS
) -> list[Raced]:
    """Each candidate against the reference on the blocks after ``warmup``, at ``risk``
    split over the candidates; fastest estimate first. The test is the claim of ``min_gain``
    faster a call, which implies the promise (see the module docstring)."""
    return decide_races([race], risk / (race.k - 1), min_gain, warmup)


def pairs_of(races: Sequence[Race], warmup: int = WARMUP_BLOCKS
             ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    """Per candidate (by name), its calls' times and the reference's in the same blocks, each
    block's stratum (a run's communicator and message size; another run's are strata of
    their own) and its units' calls, pooled over ``races`` (successive runs, each its own
    field of candidates). Within one run the pairs' test is exact; pooled over runs whose
    fields were chosen on earlier runs it is not (``halving`` tests each run alone and ranks
    on the pool)."""
    pooled: dict[str, tuple[list[np.ndarray], ...]] = {}
    for r, race in enumerate(races):
        blocks, strata, calls = race.stratified(warmup)
        for j in range(1, race.k):
            ref, mine, where, length = pooled.setdefault(race.names[j], ([], [], [], []))
            kept = ~np.isnan(blocks[:, j])  # a refused candidate's calls are not evidence
            ref.append(blocks[kept, 0])
            mine.append(blocks[kept, j])
            where.append(strata[kept] + STRATA * r)
            length.append(calls[kept])
    return {n: tuple(np.concatenate(p) for p in parts)  # type: ignore[misc]
            for n, parts in pooled.items()}  # fmt: skip


def decide_races(
    races: Sequence[Race], limit: float, min_gain: float, warmup: int = WARMUP_BLOCKS
) -> list[Raced]:
    """Each candidate of ``races`` against the reference on its pooled blocks (``pairs_of``),
    each test at ``limit`` (its share of the risk: the caller splits the risk over the
    candidates and the looks); fastest estimate first."""
    out = []
    for name, (ref, mine, strata, calls) in pairs_of(races, warmup).items():
        if not len(ref):
            continue
        test = weighed(ref, mine, strata, limit, min_gain, calls)
        out.append(Raced(name, len(ref), float(np.median(ref)), float(np.median(mine)), test))
    return sorted(out, key=lambda r: -r.test.speedup)


def weighed(ref: np.ndarray, mine: np.ndarray, strata: np.ndarray, limit: float,
            min_gain: float, calls: np.ndarray | None = None) -> rule.Test:  # fmt: skip
    """The rule on a race's blocks (a time a call of the reference and of the candidate in
    each, the block's stratum and its units' ``calls``: one each where None), the strata
    weighed by their share of the calls' time. The candidate's calls are counted ``min_gain``
    slower (the null: at most ``min_gain`` faster, which implies the promise's: more than
    ``tolerance`` slower is further inside it); each block's difference of the logs is
    ranked among its stratum's blocks, and the statistic sums, over the blocks the candidate
    wins, its rank over its stratum's blocks times the stratum's share of the raced calls'
    time (a block's time a call times its calls, the reference's and the candidate's
    together: a swap of labels leaves it as it is). Under the sharp null (a block's two
    units alike in law) every block's sign is a fair coin whatever its stratum, so the
    p-value of drawn sign patterns is exact; the shifted null (``min_gain``) is exact where
    the effect is one factor on every call.

    Why the weights: on 4 bed nodes ring made ct_demo's 512 KiB allreduce 1.3x faster and
    its 64 KiB one 0.8x (the 8 B one alike), and whole runs 1.13x faster; every block
    counted alike, the race said 0.95-1.05x and passed nothing. A size's units grow with its
    calls (up to ``RUN_MAX``), so its share is its calls' time, not its blocks'. The
    speedup is :func:`_speedup`'s."""
    calls = np.ones(len(ref)) if calls is None else np.asarray(calls, dtype=float)
    x = rule.differences(ref, mine, -min_gain)
    scores = np.zeros(len(x))
    spent = (ref + mine) * calls
    total = float(spent.sum())
    for s in np.unique(strata):
        at = strata == s
        share = float(spent[at].sum()) / total
        scores[at] = share * rule.ranks(x[at]) / (2 * at.sum())
    # enough patterns that a p-value below the limit can be told (a small --risk split over
    # many candidates and runs), at most a million
    draws = max(rule.DRAWS, min(10**6, int(40 / limit) if limit > 0 else 0))
    p = rule.drawn(scores, float(scores[x > 0].sum()), draws)
    speedup, (low, high) = _speedup(ref, mine, strata, calls, np.random.default_rng(len(x)))
    passed = p <= limit and speedup >= 1 + min_gain
    return rule.Test(len(x), int((x > 0).sum()), p, limit, speedup, (low, high), passed,
                     -min_gain, min_gain)  # fmt: skip


def _speedup(ref: np.ndarray, mine: np.ndarray, strata: np.ndarray, calls: np.ndarray,
             rng: np.random.Generator) -> tuple[float, tuple[float, float]]:  # fmt: skip
    """The raced calls' time under the reference over their time under the candidate, each
    summed over the blocks (a block's time a call times its calls): what the calls cost the
    program, stragglers included (issue 93: not a median of ratios); its ``LEVEL`` interval
    the blocks resampled within their strata (``BOOTSTRAP`` times, an estimate)."""
    a, b = ref * calls, mine * calls
    speedup = float(a.sum() / b.sum())
    sizes = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    drawn = np.concatenate([rng.choice(at, size=(BOOTSTRAP, len(at))) for at in sizes], axis=1)
    speedups = a[drawn].sum(axis=1) / b[drawn].sum(axis=1)
    low, high = np.quantile(speedups, [(1 - rule.LEVEL) / 2, (1 + rule.LEVEL) / 2])
    return speedup, (float(min(low, speedup)), float(max(high, speedup)))


def halved(pooled: Sequence[Raced], field: Sequence[str]) -> list[str]:
    """The candidates the next raced run keeps (successive halving, issue 77): of ``field``,
    those the pooled evidence (``decide_races`` over the runs so far, at no limit) does not
    show slower (their interval's upper end at least 1), the faster half by estimate, two at
    least. A field of one is kept whole: the reference and one candidate need no halving."""
    alive = [c for c in pooled if c.name in field and c.test.interval[1] >= 1.0]
    keep = max(2, -(-len(field) // 2)) if len(field) > 1 else 1
    return [c.name for c in alive[:keep]]


@dataclass(frozen=True)
class Halving:
    """Successive raced runs: each run's race, every candidate's test in the run it passed
    (``passed``), the evidence of all runs pooled (``pooled``, fastest first) and the answer:
    of those that passed, the fastest on the pooled evidence (None: none passed)."""

    races: tuple[Race, ...]
    passed: Mapping[str, Raced]
    pooled: tuple[Raced, ...]
    answer: Raced | None

    @classmethod
    def of(cls, races: Sequence[Race], passed: Mapping[str, Raced],
           pooled: Sequence[Raced]) -> Halving:  # fmt: skip
        """The runs ``races``, what passed in them (each at its own run's limit) and their
        evidence pooled: the answer is what ``pooled`` ranks first among those that passed."""
        order = {c.name: i for i, c in enumerate(pooled)}
        answer = min(passed.values(), key=lambda c: order.get(c.name, len(order)), default=None)
        return cls(tuple(races), dict(passed), tuple(pooled), answer)

    def then(self, later: Halving, min_gain: float) -> Halving:
        """These runs and ``later``'s (a field raced after them), decided as one halving: a
        candidate's first pass stands, the evidence of every run pooled."""
        races = (*self.races, *later.races)
        return Halving.of(races, {**later.passed, **self.passed},
                          decide_races(list(races), 0.0, min_gain))  # fmt: skip


def halving(racer: Callable[[Sequence[str], int, int], Race], names: Sequence[str], runs: int,
            risk: float, min_gain: float, heard: Callable[[Race, Sequence[Raced]], None]
            = lambda race, raced: None, halve: bool = True,
            calls: int | None = None) -> Halving:  # fmt: skip
    """Race ``names`` against the reference in up to ``runs`` runs (``racer(field, r,
    run)`` runs the r-th in units of ``run`` calls, as long as the last run's calls allow:
    :func:`run_length`).
    Each run's test reads that run's blocks only, at ``risk / (len(names) x runs)``: the
    run's orders are drawn apart from all that came before, so each test is exact given the
    past and the union over every candidate and run is at most ``risk``. It stops once a
    candidate that passed is the fastest on the pooled evidence. Else a run whose units were
    too long for its calls (:meth:`Race.coarse`) is raced again with the same field; the
    field is otherwise halved (:func:`halved`; ``halve`` False: it stops) and raced again.
    ``heard``: each run's race and tests; ``calls``: the raced calls an earlier run of the
    program made (the first run's units sized by them, as a later run's are)."""
    limit = risk / (len(names) * runs)
    field, passed = list(names), {}
    races: list[Race] = []
    pooled: list[Raced] = []
    for r in range(runs):
        race = racer(field, r, run_length(races[-1].raced_calls if races else calls,
                                          len(field) + 1))  # fmt: skip
        races.append(race)
        now = decide_races([race], limit, min_gain)
        heard(race, now)
        passed.update({c.name: c for c in now if c.test.passed and c.name not in passed})
        pooled = decide_races(races, 0.0, min_gain)
        if passed and pooled and pooled[0].name in passed:
            break
        if race.coarse():  # shorter units give the same field more blocks
            continue
        if not halve:
            break
        field = halved(pooled, field)
        if not field:
            break
    return Halving.of(races, passed, pooled)
