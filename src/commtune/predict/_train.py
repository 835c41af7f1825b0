"""``commtune train`` and ``commtune predict``: the sweep, knob selection, model choice, and the
prediction for one profiled run of an application.

The sweep runs the training benchmark at every design point with the library's defaults
(profiled: its features) and with each configuration of a design over the knob space (the same
configurations at every point, so the cost model compares like with like). Every measurement
is committed to the storage as it finishes; running ``train`` again measures only what is
missing. The model is stored under the platform fingerprint it was trained on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from commtune.errors import UsageError
from commtune.knobs import Space, Value
from commtune.platform import Fingerprint
from commtune.predict._data import FEATURES, Point, feature_vector, features_of, training_rows
from commtune.predict._models import (
    ANN,
    KNN,
    MODELS,
    Dataset,
    cross_validate,
    pearson,
    selected_knobs,
)
from commtune.progress import Progress
from commtune.store import Store
from commtune.study import config_key

MODEL_FORMAT = 2  # 2: the all-to-all share among the features
METRIC = r"regex:time ([0-9.eE+-]+) s"
# ct_train's timed part in simulation, simulated seconds: an iteration at 64-1,024 ranks takes
# 2-10 ms simulated and about as many seconds of wall time as 0.15 s (its default) would
# take minutes (measured); deterministic, so one iteration is the value
SIMULATED_TARGET = "0.005"


def collect(
    store: Store,
    platform: str,
    installation: Any,
    space: Space,
    points: Sequence[Point],
    configs: Sequence[Mapping[str, Value]],
    ui: Progress,
    profiling: Any,
    timeout: float = 60.0,
    simulated: tuple[str, str] | None = None,
) -> int:
    """Measure what is missing; returns the number of runs made. ``simulated``: the platform
    and hostfile of the simulated cluster the runs go to (SMPI): the defaults' run profiled
    from SimGrid's trace, the timed part short (deterministic: one iteration is the value)."""
    from commtune import native
    from commtune.launch import launcher_for
    from commtune.mpi import simulated_command
    from commtune.trial import Executor, LocalExecutor, Objective, profiled

    program = native.build(installation, "bench/ct_train.c")
    launcher = launcher_for(installation)
    objective = Objective.parse(METRIC)
    knobs = [d.knob for d in space.dimensions]
    done = store.training_runs(platform)
    todo = [(p, c) for p in points for c in [None, *configs] if (p.key, config_key(c)) not in done]
    with ui.progress("training runs", len(todo)) as bar:
        for point, config in todo:
            argv = [str(program), *point.args()]
            executor: Executor
            if simulated is not None:
                command = simulated_command(installation, *simulated, point.ranks,
                                            [*argv, "-T", SIMULATED_TARGET])  # fmt: skip
                executor = LocalExecutor(launcher, command, knobs, objective)
                if config is None:
                    executor = profiled(executor)
            else:
                executor = LocalExecutor(
                    launcher,
                    launcher.command(point.ranks, argv),
                    knobs,
                    objective,
                    profiling=profiling if config is None else None,
                )
            record = executor.run(config, timeout)
            data: dict[str, Any] = {
                "point": json.loads(point.key),
                "config": config,
                "value": record.value,
                "failure": record.failure,
            }
            if record.profile is not None:
                data["features"] = features_of(record.profile)
            store.save_training_run(platform, point.key, config_key(config), data)
            bar.advance(status=f"{point.ranks} ranks: {record.value or record.failure}")
    return len(todo)


def dataset(runs: Mapping[tuple[str, str], Any], space: Space) -> Dataset:
    """Training points x configurations (of ``space``'s knobs; others of a stored config are
    dropped and duplicates averaged); the library's defaults are a configuration too."""
    rows = training_rows(runs)
    if len(rows) < 4:
        raise UsageError(
            f"the training set has {len(rows)} complete points; run `commtune train` to add more"
        )
    names = space.names
    keys: dict[str, dict[str, Value]] = {}
    cells: list[dict[str, list[float]]] = []
    defaults = space.defaults()
    valid_defaults = all(defaults[n] in space[n].candidates() for n in names)
    for row in rows.values():
        cell: dict[str, list[float]] = {}
        for key, rel in row["relative"].items():
            stored = json.loads(key)
            config = {n: stored[n] for n in names}
            k = config_key(config)
            keys.setdefault(k, config)
            cell.setdefault(k, []).append(rel)
        if valid_defaults:
            k = config_key(defaults)
            keys.setdefault(k, dict(defaults))
            cell.setdefault(k, []).append(1.0)
        cells.append(cell)
    order = list(keys)
    relative = np.array([[np.mean(c[k]) if k in c else np.nan for k in order] for c in cells])
    x = np.array([feature_vector(r["features"]) for r in rows.values()])
    return Dataset(x, [keys[k] for k in order], relative)


@dataclass
class TrainReport:
    pearson: list[tuple[str, str, float]]
    selected: list[str]
    cv: dict[str, list[float]] = field(default_factory=dict)
    winner: str = ""
    points: int = 0
    runs: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "pearson": [{"knob": k, "column": c, "r": r} for k, c, r in self.pearson],
            "selected": self.selected,
            "cv": {
                k: {
                    "mean": float(np.mean(v)),
                    "median": float(np.median(v)),
                    "min": float(np.min(v)),
                }
                for k, v in self.cv.items()
            },
            "model": self.winner,
            "points": self.points,
            "runs": self.runs,
        }


def fit_and_store(
    store: Store,
    platform: str,
    fingerprint: Fingerprint,
    space: Space,
    minutes: float,
    seed: int = 0,
) -> TrainReport:
    """Select knobs (Pearson), cross-validate both models, store the winner."""
    runs = store.training_runs(platform)
    full = dataset(runs, space)
    rows = pearson(space, full)
    selected = selected_knobs(rows) or [max(rows, key=lambda r: abs(r[2]))[0]]
    sub = Space(space.library, tuple(d for d in space.dimensions if d.knob.name in selected))
    data = dataset(runs, sub)
    report = TrainReport(rows, selected, points=len(data.x), runs=len(runs))
    for kind in MODELS:
        report.cv[kind] = cross_validate(sub, data, kind)
    report.winner = max(report.cv, key=lambda k: (float(np.mean(report.cv[k])), k == "ann"))
    model = ANN(sub, seed).fit(data) if report.winner == "ann" else KNN(sub).fit(data)
    store.save_model(
        platform,
        {
            "format": MODEL_FORMAT,
            "platform": platform,
            "fingerprint": fingerprint.to_json(),
            "library": space.library,
            "space": sub.to_json(),
            "features": list(FEATURES),
            "model": model.to_json(),
            "report": report.to_json(),
            "minutes": minutes,
            "created": time.time(),
        },
    )
    return report
