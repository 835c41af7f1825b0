"""Synthetic performance surfaces with a known optimum (AITuning section 5.5, extended).

Each surface is a space of synthetic knobs (the same types as real ones: integer with a step,
log2, categorical, boolean) and a noise-free run time ``f(config)``. Its optimum is found by
evaluating every configuration. The executor multiplies ``f`` by ``1 + noise * N(0, 1)``,
like run-to-run spread on a shared machine. Replayed surfaces are real measurements (one run
of the demo app per configuration, ``benchmarks/data/replay-*.json``) answered by the replay
executor; their recorded values are their truth.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from commtune import stats
from commtune.knobs import Dimension, Knob, KnobType, Space, Value
from commtune.stats import majority_median
from commtune.trial import Executor, ReplayExecutor, RunRecord
from commtune.tune import configurations

Config = Mapping[str, Value]


# The synthetic knobs are in no catalog: ad hoc, so a study stores what each is and knows its
# default (the verdict's arms leave the defaults' values out, as with any library's knob)
def int_knob(name: str, low: int, high: int, default: int, step: int = 1) -> Knob:
    return Knob(name, "synthetic", KnobType.INT, default, name, name.upper(), (), low, high, step,
                adhoc=True)  # fmt: skip


def log2_knob(name: str, low: int, high: int, default: int) -> Knob:
    return Knob(name, "synthetic", KnobType.LOG2, default, name, name.upper(), (), low, high,
                adhoc=True)  # fmt: skip


def cat_knob(name: str, choices: tuple[str, ...], default: str) -> Knob:
    return Knob(name, "synthetic", KnobType.CATEGORICAL, default, name, name.upper(), (),
                choices=choices, adhoc=True)  # fmt: skip


def bool_knob(name: str, default: bool) -> Knob:
    return Knob(name, "synthetic", KnobType.BOOL, default, name, name.upper(), adhoc=True)


@dataclass
class Surface:
    name: str
    space: Space
    f: Callable[[Config], float]  # noise-free run time; math.inf: the configuration crashes
    description: str
    table: dict[str, float | None] = field(default_factory=dict)  # replayed: key -> truth
    replay: Path | None = None
    reference: float | None = None  # replayed: the recorded runs of the library's defaults
    drawn: bool = False  # replayed: each run draws a recorded run at random (balanced tables)

    def __post_init__(self) -> None:
        values = [self.value(c) for c in self.configs()]
        finite = [v for v in values if math.isfinite(v)]
        self.optimum = min(finite)
        self.default_value = self.reference or self.value(self.space.defaults())
        self.default_regret = self.default_value / self.optimum - 1.0

    def configs(self) -> list[dict[str, Value]]:
        return configurations(self.space)

    def value(self, config: Config) -> float:
        return float(self.f(config))

    def regret(self, config: Config) -> float:
        """How much slower than the optimum, noise-free (0.02: within 2 %)."""
        return self.value(config) / self.optimum - 1.0

    def executor(self, noise: float, seed: int, drift: float = 1.0, shape: str = "") -> Executor:
        if self.replay is not None:
            # drift on a replayed table: its recorded rounds are the machine's phases
            seed_ = seed if self.drawn else None
            return ReplayExecutor(self.replay, self.space.defaults(), seed_, drift > 1.0)
        return SurfaceExecutor(self, noise, seed, drift, shape)


# A machine that drifts in a set way over a study's runs (the verdict's promise is tested
# under each, benchmarks/risk_calibration.py): every value multiplied by ``shape(run)``, the
# machine getting *faster* over the study, so runs made earlier flatter what runs later.
DRIFT_RUNS = 30  # the study the shapes are drawn over


def _warmup(i: int) -> float:  # the first runs 10 % slower, warm by the sixth
    return 1.0 + 0.10 * max(0.0, 1.0 - i / 6)


def _trend(i: int) -> float:  # 10 % slower at the start, linearly to none at the end
    return 1.0 + 0.10 * max(0.0, 1.0 - i / DRIFT_RUNS)


def _step(i: int) -> float:  # 10 % slower until midway, then at once not
    return 1.10 if i < DRIFT_RUNS // 2 else 1.0


def _wave(i: int) -> float:  # a slow oscillation, 10 % peak to peak, 20 runs a period
    return 1.0 + 0.05 * math.sin(2 * math.pi * i / 20)


DRIFTS: dict[str, Callable[[int], float]] = {
    "warmup": _warmup,
    "trend": _trend,
    "step": _step,
    "wave": _wave,
}


MODES = "modes:"  # a shape "modes:F:A-B": two modes F times apart, stretches of A-B runs


def modes(shape: str) -> tuple[float, tuple[int, int]]:
    """``modes:F:A-B`` -> (F, (A, B + 1)); a ValueError naming the shape where it is not."""
    try:
        factor, spans = shape.removeprefix(MODES).split(":")
        low, high = (int(x) for x in spans.split("-"))
        if float(factor) < 1 or not 1 <= low <= high:
            raise ValueError
    except ValueError:
        raise ValueError(f"drift {shape!r}: {MODES}F:A-B, F >= 1, 1 <= A <= B") from None
    return float(factor), (low, high + 1)


class SurfaceExecutor(Executor):
    """Runs nothing: answers ``f(config)`` times Gaussian noise; a crash fails the run.

    ``drift`` > 1: the machine goes through phases (5-30 runs long, drawn) in which every
    value is multiplied by 1 or by ``drift``, alternately (the 2.5x phases seen on these
    machines), on top of the per-run noise. The phases come from a generator of their own,
    so the per-run noise is the same draw with and without drift. ``shape``: one of
    :data:`DRIFTS`, a set drift over the study's runs (the k-th run's value times
    ``DRIFTS[shape](k)``), or ``modes:F:A-B``, a machine with two modes ``F`` times apart,
    each stretch ``A``-``B`` runs long (drawn), as ``drift`` but for its factor and spans."""

    def __init__(
        self, surface: Surface, noise: float, seed: int, drift: float = 1.0, shape: str = ""
    ) -> None:
        self.span = (5, 31)  # the phases' lengths, drawn in [low, high)
        if shape.startswith(MODES):
            drift, self.span = modes(shape)
            shape = ""
        if shape and shape not in DRIFTS:
            raise ValueError(f"drift {shape!r}: one of {', '.join(DRIFTS)} or {MODES}F:A-B")
        self.surface = surface
        self.noise = noise
        self.drift = drift
        self.shape = DRIFTS.get(shape)
        self.deterministic = noise == 0 and drift == 1.0 and not shape
        self.rng = np.random.default_rng(seed)
        self.phases = np.random.default_rng(seed + 1)
        self.slow = bool(self.phases.integers(2))
        self.left = int(self.phases.integers(*self.span))
        self.calls = 0

    def run(self, config: Config | None, timeout: float) -> RunRecord:
        self.calls += 1
        # a knob left out runs at its default (a configuration reduced to what matters)
        value = self.surface.value({**self.surface.space.defaults(), **(config or {})})
        if not math.isfinite(value):
            return RunRecord(None, 0.0, 1, "exit status 1 (synthetic crash)")
        noisy = value * max(0.05, 1.0 + self.noise * float(self.rng.standard_normal()))
        if self.shape is not None:
            noisy *= self.shape(self.calls - 1)
        if self.drift != 1.0:
            if self.left == 0:
                self.slow = not self.slow
                self.left = int(self.phases.integers(*self.span))
            self.left -= 1
            noisy *= self.drift if self.slow else 1.0
        return RunRecord(noisy, noisy, 0)


def _space(*knobs: Knob) -> Space:
    return Space("synthetic", tuple(Dimension(k) for k in knobs))


# -- the surfaces ---------------------------------------------------------------------------------
def parabolas() -> Surface:
    """Separable parabolas over four integer knobs, one minimum each (AITuning's shape)."""
    knobs = [int_knob(f"x{i}", 0, 15, 0) for i in range(4)]
    centres = (11, 4, 7, 13)
    weights = (0.3, 0.2, 0.12, 0.08)

    def f(c: Config) -> float:
        return 1.0 + sum(
            w * ((int(c[k.name]) - x0) / 15) ** 2
            for k, x0, w in zip(knobs, centres, weights, strict=True)
        )

    return Surface("parabolas", _space(*knobs), f, "4 integer knobs, separable parabolas")


def coupled() -> Surface:
    """The best eager limit depends on the chunk count, the best polling on both."""
    eager = log2_knob("eager", 1 << 10, 1 << 20, 1 << 12)
    chunks = int_knob("chunks", 1, 16, 4)
    polls = int_knob("polls", 0, 1000, 1000, step=50)

    def f(c: Config) -> float:
        e = math.log2(int(c["eager"]))
        n = int(c["chunks"])
        p = int(c["polls"]) / 1000
        best_e = 11 + n / 2  # more chunks, larger messages: a larger eager limit
        best_p = 0.2 + 0.04 * n - 0.02 * (e - 10)
        return (
            1.0
            + 0.02 * (e - best_e) ** 2
            + 0.2 * ((n - 11) / 15) ** 2
            + 0.5 * (p - best_p) ** 2
            + 0.05 * abs(e - best_e) * abs(p - best_p)
        )

    return Surface("coupled", _space(eager, chunks, polls), f, "optimum of one depends on another")


def categorical() -> Surface:
    """An algorithm choice, a transport, a boolean and a segment count that suits each."""
    algos = ("auto", "linear", "tree", "ring", "rdb", "rabenseifner")
    transports = ("tcp", "shm", "ucx")
    algo = cat_knob("algorithm", algos, "auto")
    transport = cat_knob("transport", transports, "tcp")
    pipelined = bool_knob("pipelined", False)
    segments = int_knob("segments", 0, 15, 0)
    base = {
        "auto": 1.25, "linear": 1.9, "tree": 1.35, "ring": 1.15, "rdb": 1.3, "rabenseifner": 1.1,
    }  # fmt: skip
    transport_cost = {"tcp": 1.3, "shm": 1.0, "ucx": 1.05}
    best_segments = {"auto": 4, "linear": 0, "tree": 6, "ring": 12, "rdb": 2, "rabenseifner": 9}

    def f(c: Config) -> float:
        a = str(c["algorithm"])
        t = str(c["transport"])
        value = base[a] * transport_cost[t]
        if a == "ring" and t == "ucx":
            value *= 0.8  # an interaction: ring over UCX is the best pair
        value *= 1.0 + 0.2 * ((int(c["segments"]) - best_segments[a]) / 15) ** 2
        if c["pipelined"]:
            value *= 0.9 if a in ("ring", "rabenseifner") else 1.08
        return value

    space = _space(algo, transport, pipelined, segments)
    return Surface("categorical", space, f, "categorical choices with interactions")


def cliff() -> Surface:
    """A slope that is best just before a 10x cliff (Open MPI's 127 vs 128 ranks) and a
    plateau (no gradient) that ends half-way along another knob."""
    seg = int_knob("segment", 96, 160, 96, step=2)
    band = int_knob("band", 0, 15, 0)
    size = log2_knob("size", 1, 1 << 7, 1)

    def f(c: Config) -> float:
        s = int(c["segment"])
        b = int(c["band"])
        slope = 10.0 if s >= 128 else 1.0 + 0.3 * (126 - s) / 30
        plateau = 1.25 if b < 8 else 1.0
        return slope * plateau * (1.0 + 0.01 * abs(math.log2(int(c["size"])) - 3))

    return Surface("cliff", _space(seg, band, size), f, "a plateau, and a 10x cliff at 128")


def mixed() -> Surface:
    """Six knobs of all types, shaped like an MPI library's: protocol, single copy, progress,
    polling, collective algorithm and segment size, with crashes in one corner."""
    eager = log2_knob("eager_limit", 1 << 10, 1 << 20, 1 << 12)
    copy = cat_knob("single_copy", ("cma", "xpmem", "knem", "none"), "cma")
    progress = bool_knob("async_progress", False)
    polls = int_knob("polls", 0, 1000, 500, step=100)
    algo = cat_knob("allreduce", ("0", "1", "2", "3", "4", "5", "6"), "0")
    segment = log2_knob("segsize", 1 << 12, 1 << 19, 1 << 16)
    algo_cost = {"0": 1.2, "1": 1.6, "2": 1.08, "3": 1.05, "4": 1.3, "5": 1.06, "6": 1.4}
    algo_seg = {"0": 16, "1": 12, "2": 14, "3": 17, "4": 13, "5": 15, "6": 19}

    def f(c: Config) -> float:
        e = math.log2(int(c["eager_limit"]))
        best_e = {"cma": 13, "xpmem": 12, "knem": 14, "none": 17}[str(c["single_copy"])]
        copy_cost = {"cma": 1.0, "xpmem": 0.93, "knem": 1.02, "none": 0.92}[str(c["single_copy"])]
        if c["single_copy"] == "knem" and c["async_progress"]:
            return math.inf  # this pair crashes
        p2p = copy_cost * (1 + 0.004 * (e - best_e) ** 2)
        a = str(c["allreduce"])
        coll = algo_cost[a] * (1 + 0.005 * (math.log2(int(c["segsize"])) - algo_seg[a]) ** 2)
        polling = 1 + 0.15 * (int(c["polls"]) / 1000 - (0.2 if c["async_progress"] else 0.6)) ** 2
        overlap = 0.93 if c["async_progress"] else 1.0
        return 0.5 * p2p + 0.5 * coll * overlap * polling

    space = _space(eager, copy, progress, polls, algo, segment)
    return Surface("mixed", space, f, "6 knobs of all types, interactions, crashes")


def replayed(path: Path, truth: str = "median") -> Surface:
    """A real space measured per configuration; the replay executor answers from it. A
    configuration's truth is the ``truth`` statistic (``stats.STATISTICS``: the median, or
    the mean, what a user's node-hours follow) of its recorded runs (a table of one run
    each: that run), infinite where most of its runs failed; a replayed study's runs of a
    configuration are dealt its recorded runs in a random order, each once before any again
    (``tune --record`` tables), or cycle through them (older tables). A configuration with
    every knob at its library default *is* the defaults: its runs and the defaults' are
    pooled into one truth for both (two truths of one configuration would call its noise a
    gain)."""
    from commtune.knobs import space_from_json
    from commtune.study import read_table

    recorded = read_table(path, needs_space=True)
    space = space_from_json(str(recorded.library), recorded.space)
    summary = stats.statistic(truth)

    def of(values: list[float | None]) -> float | None:
        measured = [float(v) for v in values if v is not None]
        return summary(measured) if majority_median(values) is not None else None

    itself = ReplayExecutor.key(dict(space.defaults()))
    default = of(recorded.defaults_runs(space.defaults())[0])
    table = {
        ReplayExecutor.key(params): default if ReplayExecutor.key(params) == itself else of(values)
        for params, values in recorded.trials
    }

    def f(c: Config) -> float:
        value = table[ReplayExecutor.key(c)]
        return math.inf if value is None else float(value)

    name = path.stem
    return Surface(name, space, f, recorded.description, table, path, default,
                   recorded.balanced)  # fmt: skip


SYNTHETIC: dict[str, Callable[[], Surface]] = {
    "parabolas": parabolas,
    "coupled": coupled,
    "categorical": categorical,
    "cliff": cliff,
    "mixed": mixed,
}


HELD_OUT_SPLITS = 400  # random halves of a table's rounds (seeded: a table's figure is fixed)
HELD_OUT_ROUNDS = 4  # rounds a table needs for a half to choose on and a half to judge on


def held_out(path: Path, truth: str = "median", splits: int = HELD_OUT_SPLITS) -> float:
    """A recorded table's best speedup *on runs it was not chosen on*: over ``splits`` random
    halves of its rounds (its i-th run of every configuration is round i), the configuration
    best on one half (by ``truth``, among those differing from the defaults), its speedup on
    the other half (the defaults' ``truth`` there over its own); the median over the splits.

    A table's best is the most favourable of its configurations' few runs: on 9 runs at 4 %
    noise, medians 1.5-4 % apart are what its noise alone gives among 16 configurations. The
    harness judges "a table with a gain" by this figure, which the best's own luck does not
    raise. A table of fewer than ``HELD_OUT_ROUNDS`` runs a configuration (the simulated
    ones: one deterministic run each) has no half to judge on: its best speedup is given."""
    from commtune.knobs import space_from_json
    from commtune.study import config_key, read_table

    recorded = read_table(path, needs_space=True)
    space = space_from_json(str(recorded.library), recorded.space)
    defaults_key = config_key(space.defaults())
    pooled, per_round = recorded.defaults_runs(space.defaults())  # the defaults, both recordings
    rows = [runs for params, runs in recorded.trials if config_key(params) != defaults_key]
    if not rows:  # nothing but the defaults: nothing faster
        return 1.0
    rounds = min(len(recorded.default), *(len(r) for r in rows))
    if per_round == 1:  # the two recordings not in rounds: the reference's alone
        pooled = list(recorded.default)
    table = np.array([[math.nan if v is None else v for v in r[:rounds]] for r in rows])
    mine = np.array([math.nan if v is None else v for v in pooled]).reshape(-1, per_round)

    def truths(runs: np.ndarray) -> np.ndarray:
        """Each row's truth (inf where most of its runs failed, as the replay takes it)."""
        ran = (~np.isnan(runs)).sum(axis=1)
        return np.where(2 * ran > runs.shape[1], stats.rows(truth, runs, failed=True), np.inf)

    def of(half: np.ndarray) -> tuple[float, np.ndarray]:
        """The defaults' truth and each configuration's on these rounds."""
        return float(truths(mine[half].reshape(1, -1))[0]), truths(table[:, half])

    if rounds < HELD_OUT_ROUNDS:
        base, every = of(np.arange(rounds))
        return float(base / every.min()) if len(every) else 1.0
    rng = np.random.default_rng(0)
    found = []
    for _ in range(splits):
        order = rng.permutation(rounds)
        choose, judge = order[: rounds // 2 + 1], order[rounds // 2 + 1 :]
        best = int(np.argmin(of(choose)[1]))
        base, there = of(judge)
        found.append(base / there[best])
    return float(np.median(found))


def split_rounds(path: Path, seed: int) -> tuple[list[int], list[int]]:
    """A table's rounds (value i of every configuration is round i) split for one seed into
    those a study is dealt and those that score it: ``rounds // 2 + 1`` dealt, the rest
    scoring (``held_out``'s halves), drawn from ``seed`` and the table's name. A table of
    fewer than ``HELD_OUT_ROUNDS`` runs a configuration (the simulated ones: one
    deterministic run) has nothing to hold out: every round is both."""
    from commtune.study import read_table

    recorded = read_table(path)
    rounds = min(len(recorded.default), *(len(v) for _, v in recorded.trials))
    if rounds < HELD_OUT_ROUNDS:
        return list(range(rounds)), list(range(rounds))
    order = np.random.default_rng([seed, zlib.crc32(path.stem.encode())]).permutation(rounds)
    cut = rounds // 2 + 1
    return sorted(int(i) for i in order[:cut]), sorted(int(i) for i in order[cut:])


def out_of_sample(path: Path, seed: int, work: Path, truth: str = "median") -> Surface:
    """A recorded table as a study meets it and as it is scored, apart (``split_rounds``):
    the replay executor deals the study only the dealt rounds' runs, and every truth the
    race scores by (the best, what was handed back, the tail) is the ``truth`` statistic of
    the scoring rounds alone. The two sub-tables are written under ``work``."""
    import json

    dealt, scoring = split_rounds(path, seed)
    data = json.loads(path.read_text())

    def only(rounds: list[int], name: str) -> Path:
        def cut(values: list) -> list:
            return [values[i] for i in rounds]

        out = dict(data, default=cut(data["default"]),
                   trials=[dict(t, values=cut(t["values"])) for t in data["trials"]])  # fmt: skip
        sub = work / f"{path.stem}-{seed}-{name}.json"
        sub.write_text(json.dumps(out))
        return sub

    scored = replayed(only(scoring, "scoring"), truth)
    return replace(scored, name=path.stem, replay=only(dealt, "dealt"))
