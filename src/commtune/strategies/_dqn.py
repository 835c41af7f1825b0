"""``dqn``: AITuning's deep Q-learning over the knobs (Fanfarillo and Del Vento, sections 3 and 5).

- State: the position of every knob (index scaled to [0, 1]), the run's time relative to the
  reference run (log ratio, as AITuning's "relative" variables) and, when the interposer
  profiled the runs, each communication feature relative to the reference run's.
- Actions: move one knob one step up or down (integer knobs by their domain step, log2 knobs
  by one power of two, categorical knobs to the next or previous value), or no-op. Also, by
  default, four steps at once (``strides=1,4``): with single steps only, a walk from the
  defaults to the far side of a 16-value knob takes 15 runs of a 20-run budget.
- Reward: the relative improvement over the configuration the step started from,
  ``(t_before - t_after) / t_reference``; a failed run is rewarded -1 and ends the episode.
- A Q-network (one hidden tanh layer, numpy, Adam on the Huber loss), experience replay over
  every transition in the study and a target network synchronised every ``sync`` updates.
  The network is trained anew from the transitions before each proposal (deterministic in the
  seed), which is what lets the strategy keep no state between batches.
- Epsilon-greedy: epsilon falls linearly from ``epsilon`` to ``epsilon_min`` over the
  exploration budget. The walk continues from the last run, or from the best run when the last
  one failed or was slower than the reference. The tuner never re-measures a configuration, so
  actions leading to one already measured (the no-op among them) are masked; a transition is
  still learnt from when a duplicate is answered from an earlier trial.
- After ``explore`` runs (default 20), AITuning's ensemble: drop the runs that were penalised
  (slower than the reference), take for every knob the median over the runs within 5 % of the
  best (the mode for a categorical knob) and run that configuration. With budget left, the walk
  goes on with epsilon at its minimum.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from commtune.errors import UsageError
from commtune.knobs import Space, Value
from commtune.stats import majority_median
from commtune.strategies._base import Option
from commtune.strategies._history import History, HistoryStrategy, Point
from commtune.study import read_table
from commtune.util import read_json

PRIOR_FORMAT = "commtune-dqn-prior"
Transition = tuple[np.ndarray, int, float, np.ndarray, bool]  # (s, a, r, s', done)


class QNetwork:
    """Q(s, .) with one hidden tanh layer; trained by Adam on the Huber loss."""

    def __init__(self, n_in: int, n_hidden: int, n_out: int, rng: np.random.Generator) -> None:
        self.params = [
            rng.normal(0, 1 / math.sqrt(n_in), (n_in, n_hidden)),
            np.zeros(n_hidden),
            rng.normal(0, 0.1 / math.sqrt(n_hidden), (n_hidden, n_out)),
            np.zeros(n_out),
        ]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0

    def __call__(self, s: np.ndarray) -> np.ndarray:
        w1, b1, w2, b2 = self.params
        return np.asarray(np.tanh(s @ w1 + b1) @ w2 + b2)

    def copy_from(self, other: QNetwork) -> None:
        self.params = [p.copy() for p in other.params]

    def update(self, s: np.ndarray, a: np.ndarray, target: np.ndarray, lr: float) -> float:
        w1, b1, w2, b2 = self.params
        h = np.tanh(s @ w1 + b1)
        q = h @ w2 + b2
        rows = np.arange(len(a))
        err = q[rows, a] - target
        grad_q = np.zeros_like(q)
        grad_q[rows, a] = np.clip(err, -1.0, 1.0) / len(a)  # Huber, delta 1
        grad_h = (grad_q @ w2.T) * (1 - h**2)
        grads = [s.T @ grad_h, grad_h.sum(0), h.T @ grad_q, grad_q.sum(0)]
        self.t += 1
        for i, g in enumerate(grads):
            self.m[i] = 0.9 * self.m[i] + 0.1 * g
            self.v[i] = 0.999 * self.v[i] + 0.001 * g * g
            m_hat = self.m[i] / (1 - 0.9**self.t)
            v_hat = self.v[i] / (1 - 0.999**self.t)
            self.params[i] = self.params[i] - lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        return float(np.mean(np.minimum(np.abs(err), 1.0) * np.abs(err)))


class Agent:
    """States, actions and transitions of the walk in one study's history."""

    def __init__(
        self,
        history: History,
        strides: tuple[int, ...] = (1,),
        feature_names: list[str] | None = None,
    ) -> None:
        """``feature_names``: the profile features in the state (a prior's, so that its
        network reads the same inputs); default: the reference run's."""
        self.h = history
        self.strides = strides
        self.ref = history.reference or (history.values[0] if history.values else 1.0)
        names = sorted(history.reference_features or {})
        self.feature_names = names if feature_names is None else list(feature_names)
        self.features = dict(zip(history.points, history.features, strict=True))
        self.values = dict(zip(history.points, history.values, strict=True))
        # knob d, stride s, direction: 2 * (d * len(strides) + s) + up; the last is the no-op
        self.n_actions = 2 * len(history.sizes) * len(strides) + 1

    def state(self, point: Point) -> np.ndarray:
        value = self.values[point]
        rel = [float(np.clip(math.log(value / self.ref), -3, 3))] if value > 0 else [0.0]
        feats = self.features.get(point) or {}
        ref_feats = self.h.reference_features or {}
        extra = [
            float(np.clip(math.log((feats.get(k, 0) + 1) / (ref_feats.get(k, 0) + 1)), -3, 3))
            for k in self.feature_names
        ]
        return np.concatenate([self.h.normalised(point), rel, extra])

    def apply(self, point: Point, action: int) -> Point | None:
        """The point the action leads to; None if it leaves the domain."""
        if action == self.n_actions - 1:
            return point
        move, up = divmod(action, 2)
        d, stride = divmod(move, len(self.strides))
        n = self.h.sizes[d]
        j = point[d] + self.strides[stride] * (1 if up else -1)
        if not self.h.ordinal[d]:
            j %= n
        if not 0 <= j < n:
            return None
        return (*point[:d], j, *point[d + 1 :])

    def action(self, p: Point, q: Point) -> int | None:
        """The action that leads from ``p`` to ``q``, if one does."""
        for a in range(self.n_actions):
            if self.apply(p, a) == q:
                return a
        return None

    def transitions(self) -> list[Transition]:
        """(s, a, r, s', done) for every run one action away from an earlier finished run:
        the run just before it if it is, else the best earlier such run."""
        out = []
        earlier: list[Point] = []
        for q, vq in self.h.order:
            ranked = ([earlier[-1]] if earlier else []) + sorted(
                earlier, key=lambda p: self.values[p]
            )
            for p in ranked:
                a = self.action(p, q)
                if a is None:
                    continue
                s = self.state(p)
                if vq is None:
                    out.append((s, a, -1.0, np.zeros_like(s), True))
                else:
                    out.append((s, a, (self.values[p] - vq) / self.ref, self.state(q), False))
                break
            if vq is not None and q in self.values:
                earlier.append(q)
        return out

    def all_transitions(
        self, failed: set[Point]
    ) -> list[tuple[np.ndarray, int, float, np.ndarray, bool]]:
        """Every measured point's every action that leads to a measured (or failed) point:
        the transitions of a whole table, for pre-training."""
        out = []
        for p in self.values:
            s = self.state(p)
            for a in range(self.n_actions - 1):
                q = self.apply(p, a)
                if q is None or q == p:
                    continue
                if q in failed:
                    out.append((s, a, -1.0, np.zeros_like(s), True))
                elif q in self.values:
                    out.append((s, a, (self.values[p] - self.values[q]) / self.ref,
                                self.state(q), False))  # fmt: skip
        return out


@dataclass
class Prior:
    """A Q-network pre-trained on whole tables of other programs' runs (``pretrain``): its
    parameters, and the space and state layout it reads (the same knobs, candidates,
    strides and features, or it is not used)."""

    names: list[str]
    sizes: list[int]
    features: list[str]
    strides: tuple[int, ...]
    params: list[np.ndarray]
    transitions: int

    def fits(self, history: History, strides: tuple[int, ...]) -> bool:
        return (self.names, self.sizes, self.strides) == (history.names, history.sizes, strides)

    def to_json(self) -> dict[str, Any]:
        return {"format": PRIOR_FORMAT, "names": self.names, "sizes": self.sizes,
                "features": self.features, "strides": list(self.strides),
                "params": [p.tolist() for p in self.params],
                "transitions": self.transitions}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Prior:
        if data.get("format") != PRIOR_FORMAT:
            raise UsageError("not a pre-trained Q-network (no format commtune-dqn-prior)")
        try:
            return cls(list(data["names"]), [int(n) for n in data["sizes"]],
                       list(data["features"]), tuple(int(x) for x in data["strides"]),
                       [np.asarray(p, dtype=float) for p in data["params"]],
                       int(data["transitions"]))  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"malformed pre-trained Q-network: {exc}") from None

    @classmethod
    def load(cls, path: str) -> Prior:
        return cls.from_json(_warm_file(path))


def pretrain(
    tables: Sequence[tuple[History, set[Point]]],
    strides: tuple[int, ...] = (1, 4),
    hidden: int = 24,
    updates: int = 3000,
    gamma: float = 0.5,
    lr: float = 0.01,
    seed: int = 0,
) -> Prior:
    """A Q-network trained on every one-action transition of whole tables (each a history of
    one program over one space, with its failed points), the programs' rewards each relative
    to its own reference, as AITuning pre-trains on its training runs before a new code."""
    rng = np.random.default_rng(seed)
    first = tables[0][0]
    names = sorted(set.intersection(*(set(h.reference_features or {}) for h, _ in tables)))
    data = []
    for history, failed in tables:
        if (history.names, history.sizes) != (first.names, first.sizes):
            raise UsageError("pre-training tables must share one space")
        data += Agent(history, strides, names).all_transitions(failed)
    net = _fit(data, len(first.sizes) + 1 + len(names), hidden,
               2 * len(first.sizes) * len(strides) + 1, rng, updates, gamma, lr)  # fmt: skip
    return Prior(list(first.names), list(first.sizes), names, strides, net.params, len(data))


def program_history(
    space: Space,
    features: Mapping[str, float],
    reference: float,
    measured: Sequence[tuple[Mapping[str, Value], float | None]],
) -> tuple[History, set[Point]]:
    """One program's whole table over ``space`` as a history (configurations outside the
    space are left out) and its failed points."""
    history = History.of_space(space)
    history.reference, history.reference_features = reference, dict(features)
    failed: set[Point] = set()
    for config, value in measured:
        try:
            internal = space.internal(config)
        except (KeyError, TypeError, ValueError):
            continue
        point = history.point_of(internal)
        if point is None:
            continue
        if value is None:
            failed.add(point)
        else:
            history.points.append(point)
            history.values.append(float(value))
            history.features.append(None)
    return history, failed


def _table_program(path: str, space: Space) -> tuple[History, set[Point]]:
    """A table ``tune --record`` wrote (read from ``path``): each configuration's median
    (None where most of its runs failed), relative to the defaults' median."""
    recorded = read_table(path)
    measured = [(params, majority_median(values)) for params, values in recorded.trials]
    default = majority_median(recorded.default)
    if default is None:
        raise UsageError(f"replay table {path}: no run of the defaults in field 'default'")
    return program_history(space, recorded.features, default, measured)


_PRIORS: dict[tuple[Any, ...], Prior | None] = {}


def prior_from(
    paths: Sequence[str], space: Space, strides: tuple[int, ...], hidden: int
) -> Prior | None:
    """The network option ``warm`` names: a pre-trained one (its JSON), or one pre-trained
    here on recorded tables of other programs (``tune --record`` files), once per process;
    None when it was not trained on this space."""
    key = (tuple(paths), json.dumps(space.to_json(), sort_keys=True, default=str), strides, hidden)
    if key not in _PRIORS:
        files = {p: _warm_file(p) for p in paths}
        if len(paths) == 1 and files[paths[0]].get("format") == PRIOR_FORMAT:
            prior: Prior | None = Prior.from_json(files[paths[0]])
        else:
            tables = [_table_program(p, space) for p in files]
            tables = [t for t in tables if t[0].points]
            prior = pretrain(tables, strides, hidden) if tables else None
        if prior is not None and not (
            prior.params[0].shape[1] == hidden and prior.fits(History.of_space(space), strides)
        ):
            prior = None  # trained on another space or layout
        _PRIORS[key] = prior
    return _PRIORS[key]


def _warm_file(path: str) -> dict[str, Any]:
    """The JSON object of a ``warm`` file (UsageError naming it if it cannot be one)."""
    data = read_json(path, f"warm={path}")
    if not isinstance(data, dict):
        raise UsageError(f"warm={path}: neither a pre-trained Q-network nor a recorded table")
    return data


def _check_warm(path: str) -> None:
    """``path`` is a pre-trained network or a recorded table (UsageError naming it if not)."""
    data = _warm_file(path)
    if data.get("format") == PRIOR_FORMAT:
        Prior.from_json(data)
    elif not isinstance(data.get("trials"), list) or not isinstance(data.get("default"), list):
        raise UsageError(f"warm={path}: neither a pre-trained Q-network nor a recorded table")
    else:
        read_table(path)  # a recorded table: every field of it checked now


def _fit(
    data: list[Transition],
    n_in: int,
    hidden: int,
    n_out: int,
    rng: np.random.Generator,
    updates: int,
    gamma: float,
    lr: float,
    start: list[np.ndarray] | None = None,
    sync: int = 25,
) -> QNetwork:
    """Experience replay with a target network over ``data``, from ``start`` if given."""
    net = QNetwork(n_in, hidden, n_out, rng)
    if start is not None:
        net.params = [p.copy() for p in start]
    if not data:
        return net
    target = QNetwork(n_in, hidden, n_out, rng)
    target.copy_from(net)
    s = np.array([t[0] for t in data])
    a = np.array([t[1] for t in data])
    r = np.array([t[2] for t in data])
    s2 = np.array([t[3] for t in data])
    done = np.array([t[4] for t in data])
    scale = max(float(np.abs(r).max()), 1e-9)  # rewards of a few % and of -1 alike
    sync = max(1, sync)
    for step in range(updates):
        idx = rng.integers(len(data), size=min(32, len(data)))
        future = np.where(done[idx], 0.0, target(s2[idx]).max(axis=1))
        net.update(s[idx], a[idx], r[idx] / scale + gamma * future, lr)
        if (step + 1) % sync == 0:
            target.copy_from(net)
    return net


def ensemble(history: History, runs: list[tuple[Point, float]], within: float = 0.05) -> Point:
    """AITuning's rule: drop the penalised runs (slower than the reference), keep the runs
    within ``within`` of the best; per knob the median index (mode for a categorical knob)."""
    ref = history.reference
    kept = [(p, v) for p, v in runs if ref is None or v <= ref] or list(runs)
    best = min(v for _, v in kept)
    good = [p for p, v in sorted(kept, key=lambda pv: pv[1]) if v <= best * (1 + within)]
    out = []
    for d in range(len(history.sizes)):
        column = [p[d] for p in good]
        if history.ordinal[d]:
            out.append(math.floor(float(np.median(column)) + 0.5))
        else:
            counts = Counter(column)
            top = max(counts.values())
            out.append(next(i for i in column if counts[i] == top))  # ties: the best run's
    return tuple(out)


class DQNStrategy(HistoryStrategy):
    name: ClassVar[str] = "dqn"
    batch_size: ClassVar[int] = 1
    OPTIONS: ClassVar[dict[str, Option]] = {
        "explore": Option(int, 20, "exploration runs before the ensemble"),
        "strides": Option(str, "1,4", "steps an action moves a knob (comma-separated)"),
        "epsilon": Option(float, 0.5, "initial probability of a random action"),
        "epsilon_min": Option(float, 0.05, "probability of a random action after exploring"),
        "gamma": Option(float, 0.5, "discount of future rewards"),
        "hidden": Option(int, 24, "hidden units of the Q-network"),
        "updates": Option(int, 150, "replay updates before each proposal"),
        "sync": Option(int, 25, "updates between target-network synchronisations"),
        "lr": Option(float, 0.01, "Adam learning rate"),
        "warm": Option(
            str,
            "",
            "start from a pre-trained Q-network: its JSON, or recorded "
            "tables of other programs on this space (tune --record files, "
            "comma-separated)",
        ),
    }

    def propose(self, history: History, rng: np.random.Generator, seed: int | None) -> Point:
        o = self.options
        explore = int(o["explore"])
        if not history.values:
            return history.default or history.next_of_design(1, seed, rng)
        searched = history.n_measured() - (1 if history.reference is not None else 0)
        seen = history.seen()
        if searched >= explore:
            runs = list(zip(history.points, history.values, strict=True))[: explore + 1]
            candidate = ensemble(history, runs)
            if candidate not in seen:
                return candidate
        strides = tuple(int(x) for x in str(o["strides"]).split(",") if x.strip()) or (1,)
        prior = self.prior(history, strides)
        agent = Agent(history, strides, prior.features if prior else None)
        q = self.train(agent, rng, prior)
        frac = min(1.0, searched / max(explore, 1))
        epsilon = max(o["epsilon_min"], o["epsilon"] * (1 - frac))
        best = history.best()
        assert best is not None
        last = history.order[-1] if history.order else None
        ref = history.reference
        position = best[0]
        if last is not None and last[1] is not None and (ref is None or last[1] <= ref):
            position = last[0]
        for start in (position, best[0]):
            moves = [
                (a, p)
                for a in range(agent.n_actions)
                if (p := agent.apply(start, a)) is not None and p not in seen
            ]
            if not moves:
                continue
            if rng.random() < epsilon:
                return moves[int(rng.integers(len(moves)))][1]
            scores = q(agent.state(start)[None, :])[0]
            return max(moves, key=lambda ap: scores[ap[0]])[1]
        return history.unseen_random(rng, seen)

    def __init__(
        self, options: Mapping[str, str] | None = None, hints: Sequence[Mapping[str, Value]] = ()
    ) -> None:
        super().__init__(options, hints)
        for path in (p for p in str(self.options["warm"]).split(",") if p):
            _check_warm(path)  # before the study starts, not at its first proposal

    def prior(self, history: History, strides: tuple[int, ...]) -> Prior | None:
        """The network of option ``warm`` (``prior_from``), if it fits this space."""
        paths = [p for p in str(self.options["warm"]).split(",") if p]
        if not paths or history.space is None:
            return None
        return prior_from(paths, history.space, strides, int(self.options["hidden"]))

    def train(self, agent: Agent, rng: np.random.Generator, prior: Prior | None = None) -> QNetwork:
        """The network on the study's transitions, started from ``prior`` when given."""
        o = self.options
        n_in = len(agent.h.sizes) + 1 + len(agent.feature_names)
        return _fit(agent.transitions(), n_in, int(o["hidden"]), agent.n_actions, rng,
                    int(o["updates"]), float(o["gamma"]), float(o["lr"]),
                    prior.params if prior else None, int(o["sync"]))  # fmt: skip
