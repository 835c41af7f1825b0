"""Executors run one configuration once and return a :class:`RunRecord`.

``LocalExecutor`` launches the user's command through the vendor's launcher; ``ReplayExecutor``
answers from a file of recorded trials, so strategies can be tested without MPI.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from commtune.errors import UsageError
from commtune.knobs import Knob, Value, environment
from commtune.launch import Launcher
from commtune.trial._objective import Objective
from commtune.trial._process import run_process


@dataclass(frozen=True)
class RunRecord:
    """One run of one configuration. ``value`` is None when the run failed (see ``failure``)."""

    value: float | None
    wall: float
    returncode: int | None
    failure: str | None = None
    stderr_tail: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        return cls(**data)


def _failure(returncode: int | None, timed_out: bool, timeout: float) -> str | None:
    if timed_out:
        return f"timeout after {timeout:.1f} s"
    if returncode is None or returncode == 0:
        return None
    if returncode < 0:
        return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class Executor(abc.ABC):
    """Runs a configuration once. ``config=None`` runs the library's defaults (nothing set)."""

    @abc.abstractmethod
    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        """Run once; never raises for a failing run (the record says why it failed)."""


class LocalExecutor(Executor):
    """Runs the user's command on this machine with a configuration applied."""

    def __init__(
        self,
        launcher: Launcher,
        command: Sequence[str],
        knobs: Sequence[Knob],
        objective: Objective,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self.launcher = launcher
        self.command = list(command)
        self.knobs = list(knobs)
        self.objective = objective
        self.base_env = base_env

    def variables(self, config: Mapping[str, Value] | None) -> dict[str, str]:
        return environment(self.knobs, config or {})

    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        plan = self.launcher.plan(
            self.command,
            self.variables(config),
            remove=[k.env for k in self.knobs],
            base_env=self.base_env,
        )
        result = run_process(plan.argv, plan.env, timeout)
        failure = _failure(result.returncode, result.timed_out, timeout)
        value = None
        if failure is None:
            value = self.objective.extract(result.wall, result.stdout)
            if value is None:
                failure = f"metric {self.objective.spec!r} not found in the output"
        return RunRecord(value, result.wall, result.returncode, failure, result.stderr_tail)


class ReplayExecutor(Executor):
    """Answers from recorded measurements instead of running anything.

    The file is JSON: ``{"default": [values...], "trials": [{"params": {...}, "values": [...]},
    ...]}``; a value of null is a failed run. Repeated runs of one configuration cycle through
    its recorded values. A configuration that was not recorded is an error.
    """

    def __init__(self, path: str | Path) -> None:
        try:
            data = json.loads(Path(path).read_text())
            self.default = list(data["default"])
            self.table = {
                self.key(entry["params"]): list(entry["values"]) for entry in data["trials"]
            }
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"replay file {path}: {exc}") from None
        self.counts: dict[str, int] = {}
        self.calls = 0

    @staticmethod
    def key(config: Mapping[str, Value] | None) -> str:
        return json.dumps(dict(config or {}), sort_keys=True)

    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        self.calls += 1
        key = self.key(config)
        values = self.default if config is None else self.table.get(key)
        if values is None:
            raise UsageError(f"replay: configuration {key} was not recorded")
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        value = values[n % len(values)]
        if value is None:
            return RunRecord(None, 0.0, 1, "exit status 1 (recorded)")
        return RunRecord(float(value), float(value), 0)
