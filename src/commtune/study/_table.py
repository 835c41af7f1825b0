"""A replay table (``tune --record``'s file): one reader for everyone who reads one (the
replay executor, the race's surfaces, the dqn's warm start), with one kind of error: one
line naming the file and the field."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commtune.errors import UsageError
from commtune.study._record import config_key
from commtune.util import read_json


@dataclass(frozen=True)
class RecordedTable:
    """Every configuration of a space run ``repeats`` times: ``default`` the defaults' runs,
    ``trials`` each configuration's parameters and runs (a failed run is None)."""

    path: Path
    default: list[float | None]
    trials: list[tuple[dict[str, Any], list[float | None]]]
    library: str | None = None
    space: list[Any] = field(default_factory=list)
    features: dict[str, Any] = field(default_factory=dict)
    balanced: bool = False
    description: str = ""

    def defaults_runs(self, defaults: Mapping[str, Any]) -> tuple[list[float | None], int]:
        """The runs of the library's defaults, ``defaults`` (every knob at its default): the
        reference's runs and those of the trial that set every knob to its default, which is
        the same configuration (two sets of runs of one configuration, replayed apart,
        would make the recording's drift between them a gain). Returned with how many
        recordings of it each round holds (2 where both exist and are balanced, the list
        interleaved round by round; else 1, the lists one after the other)."""
        key = config_key(defaults)
        same = [values for params, values in self.trials if config_key(params) == key]
        if not same:
            return list(self.default), 1
        runs = same[0]
        if len(runs) != len(self.default):
            return [*self.default, *runs], 1
        return [v for pair in zip(self.default, runs, strict=True) for v in pair], 2


def _runs(path: Path, where: str, values: Any) -> list[float | None]:
    if not isinstance(values, list) or not all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values
    ):
        raise UsageError(f"replay table {path}: {where} is not a list of run values")
    return [None if v is None else float(v) for v in values]


def read_table(path: str | Path, *, needs_space: bool = False) -> RecordedTable:
    """The table in ``path``; ``needs_space``: its ``library`` and ``space`` are required
    (a race surface is made of them). A file that cannot be read, is not JSON or lacks a
    field is one UsageError naming both."""
    path = Path(path)
    data = read_json(path, f"replay table {path}")
    if not isinstance(data, Mapping):
        raise UsageError(f"replay table {path}: not a recorded table (a JSON object)")
    for name in ("default", "trials", *(("library", "space") if needs_space else ())):
        if name not in data:
            raise UsageError(f"replay table {path}: no field {name!r}")
    if not isinstance(data["trials"], list):
        raise UsageError(f"replay table {path}: field 'trials' is not a list")
    trials = []
    for i, entry in enumerate(data["trials"]):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("params"), Mapping):
            raise UsageError(f"replay table {path}: trials[{i}] has no field 'params'")
        if "values" not in entry:
            raise UsageError(f"replay table {path}: trials[{i}] has no field 'values'")
        trials.append((dict(entry["params"]), _runs(path, f"trials[{i}].values", entry["values"])))
    if needs_space and not isinstance(data["space"], list):
        raise UsageError(f"replay table {path}: field 'space' is not a list")
    return RecordedTable(
        path,
        _runs(path, "field 'default'", data["default"]),
        trials,
        str(data["library"]) if data.get("library") is not None else None,
        list(data.get("space") or []),
        dict(data.get("features") or {}),
        bool(data.get("balanced")),
        str(data.get("description") or path.stem),
    )
