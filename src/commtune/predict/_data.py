"""Training data: the benchmark's inputs, the features of a run, and how configurations are
encoded for the models.

A *point* is one setting of the training benchmark's inputs (Wang et al.: share of
point-to-point and of collective operations, their message sizes, the communicator size, plus
a compute share). Its *features* are what the interposer measures on a run of it with the
library's defaults, the same features it measures on a user's application, so a model trained
on points applies to applications.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from commtune.knobs import Space, Value
from commtune.profile import Profile

FEATURES = (
    "p2p_time_share",  # of communication time
    "coll_time_share",
    "comm_time_share",  # of the run's time
    "log2_p2p_message",  # mean bytes per point-to-point send
    "log2_coll_message",  # mean bytes per collective call
    "comm_size",
    "alltoall_share",  # of collective calls: all-to-alls (NPB IS, Wang et al.'s main program)
)
_COLLECTIVES = ("reduce", "bcast", "gather", "scatter", "alltoall", "barrier", "scan")


def features_of(profile: Profile) -> dict[str, float]:
    """The model's features of one profiled run."""
    f = profile.features
    sends = coll_calls = alltoall_calls = 0.0
    for name, op in profile.operations.items():
        lowered = name.lower()
        if "send" in lowered:
            sends += float(op["calls"]["mean"])
        elif any(c in lowered for c in _COLLECTIVES):
            coll_calls += float(op["calls"]["mean"])
            if "alltoall" in lowered:
                alltoall_calls += float(op["calls"]["mean"])
    p2p_message = f.get("p2p_bytes", 0.0) / sends if sends else 0.0
    coll_message = f.get("coll_bytes", 0.0) / coll_calls if coll_calls else 0.0
    return {
        "p2p_time_share": f.get("p2p_time_share", 0.0),
        "coll_time_share": f.get("coll_time_share", 0.0),
        "comm_time_share": f.get("comm_time_share", 0.0),
        "log2_p2p_message": math.log2(1 + p2p_message),
        "log2_coll_message": math.log2(1 + coll_message),
        "comm_size": float(f.get("comm_size", profile.ranks)),
        "alltoall_share": alltoall_calls / coll_calls if coll_calls else 0.0,
    }


def feature_vector(features: Mapping[str, float]) -> np.ndarray:
    # training runs stored before a feature existed had none of what it measures (the
    # benchmark had no all-to-all): 0
    return np.array([float(features.get(k, 0.0)) for k in FEATURES])


@dataclass(frozen=True)
class Point:
    """Inputs of ``native/bench/ct_train.c`` for one training run."""

    p2p: float
    coll: float
    p2p_bytes: int
    coll_bytes: int
    compute: float
    ranks: int
    alltoall: float = 0.0  # share of the collective slots that are all-to-alls

    def args(self) -> list[str]:
        return [
            "-p", f"{self.p2p:.3f}", "-c", f"{self.coll:.3f}",
            "-s", str(self.p2p_bytes), "-S", str(self.coll_bytes), "-x", f"{self.compute:.3f}",
            "-a", f"{self.alltoall:.3f}",
        ]  # fmt: skip

    @property
    def key(self) -> str:
        fields = asdict(self)
        if not self.alltoall:  # the key of a point from before the all-to-all input
            del fields["alltoall"]
        return json.dumps(fields, sort_keys=True)


def design_points(n: int, ranks: Sequence[int], seed: int, simulated: bool = False) -> list[Point]:
    """A Latin hypercube over the inputs (not a grid), ranks taken in turn; half the points
    have all-to-alls among their collectives (their share uniform), half none. ``simulated``
    (a simulation that leaves computation out): no compute share, and no all-to-all (one
    training run with all-to-alls of 1 MiB at 256 simulated ranks ran past 300 s of wall
    time, the same without them 10-27 s: measured)."""
    from scipy.stats import qmc

    u = qmc.LatinHypercube(d=6, seed=seed).random(n)
    out = []
    for i, (a, b, c, d, e, f) in enumerate(u):
        p2p = 0.05 + 0.9 * a
        coll = (1 - p2p) * (0.2 + 0.8 * b)
        out.append(
            Point(
                round(p2p, 3),
                round(coll, 3),
                int(2 ** round(3 + 19 * c)),  # 8 B .. 4 MiB
                int(2 ** round(3 + 17 * d)),  # 8 B .. 1 MiB
                0.0 if simulated else round(0.5 * e, 3),
                int(ranks[i % len(ranks)]),
                0.0 if simulated else round(max(0.0, 2 * f - 1), 3),  # half: none
            )
        )
    return out


class Encoding:
    """Configurations of the selected knobs as model outputs in [0, 1]: an integer or log2 knob
    is its index scaled to [0, 1]; a categorical or boolean knob one output per value."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.columns: list[tuple[str, Value | None]] = []  # (knob, value) or (knob, None)
        for d in space.dimensions:
            if d.ordinal:
                self.columns.append((d.knob.name, None))
            else:
                self.columns.extend((d.knob.name, v) for v in d.candidates())

    def encode(self, config: Mapping[str, Value]) -> np.ndarray:
        out = []
        for name, value in self.columns:
            cands = self.space[name].candidates()
            if value is None:
                v = config[name]
                i = cands.index(v) if v in cands else _nearest(cands, v)
                out.append(i / max(len(cands) - 1, 1))
            else:
                out.append(1.0 if config[name] == value else 0.0)
        return np.array(out)

    def decode(self, y: np.ndarray) -> dict[str, Value]:
        config: dict[str, Value] = {}
        best: dict[str, tuple[float, Value]] = {}
        for (name, value), v in zip(self.columns, y, strict=True):
            cands = self.space[name].candidates()
            if value is None:
                i = round(float(np.clip(v, 0, 1)) * (len(cands) - 1))
                config[name] = cands[i]
            elif name not in best or v > best[name][0]:
                best[name] = (float(v), value)
        for name, (_, value) in best.items():
            config[name] = value
        return {d.knob.name: config[d.knob.name] for d in self.space.dimensions}


def _nearest(cands: list[Value], value: Value) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return int(np.argmin([abs(math.log2(max(int(c), 1)) - math.log2(max(value, 1)))
                              for c in cands]))  # fmt: skip
    return 0


def training_rows(runs: Mapping[tuple[str, str], Any]) -> dict[str, dict[str, Any]]:
    """Per point: its features (from the defaults' run), the defaults' time, and the time
    relative to it of every configuration measured there."""
    out: dict[str, dict[str, Any]] = {}
    for (point, config), data in runs.items():
        row = out.setdefault(point, {"features": None, "default": None, "configs": {}})
        if config == "":
            row["features"] = data.get("features")
            row["default"] = data.get("value")
        else:
            row["configs"][config] = data.get("value")
    complete = {}
    for point, row in out.items():
        if row["features"] is None or not row["default"]:
            continue
        rel = {c: v / row["default"] for c, v in row["configs"].items() if v}
        if rel:
            complete[point] = {**row, "relative": rel}
    return complete
