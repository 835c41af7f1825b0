"""The study as typed records: one frozen :class:`TrialRecord` per trial, read once from its
attributes (``study._record`` knows their names), and one :class:`StudyView` of a study with
the questions the tuner, the report and the command line ask of it, each defined here once.

The words, as every module uses them:

- the **reference** is the first finished trial of the library's defaults;
- a trial **ran** if it is the reference or a search trial and finished or failed, whether or
  not the tuner was stopped during it (the study's count of trials, and the verdict's);
- a trial is **measured** if it ran and was not interrupted: a failure of the configuration
  itself counts (it is not run again), an interruption does not (it is);
- the **known** configurations are the measured search trials', each answered by its first;
- the **incumbent** is the best value so far, the library's defaults (1) included;
- the **verdict** is the stored acceptance, if it was reached on every trial that ran.

Writes go through :class:`TrialWriter` (a trial being run) and :func:`mark` (a trial held as
frozen, e.g. one a dead worker left running).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from commtune.knobs import Value
from commtune.study._acceptance import Acceptance, acceptance_of
from commtune.study._record import (
    INTERRUPTED,
    Attr,
    Role,
    StudySpec,
    config_key,
    platform_of,
    spec_of,
)

if TYPE_CHECKING:
    import optuna
    from optuna.trial import BaseTrial, FrozenTrial, TrialState


class FailureKind(enum.Enum):
    """Why a trial failed, as a kind a program can branch on; the message says the rest."""

    INTERRUPTED = "interrupted"  # the tuner stopped during it: it runs again
    TIMEOUT = "timeout"  # killed at the run timeout
    SIGNAL = "signal"  # the program died of a signal
    EXIT = "exit"  # the program exited with a non-zero status
    NO_PROFILE = "no-profile"  # libcommtune wrote no profile (a rank did not finalize)
    NO_METRIC = "no-metric"  # the output did not hold the metric
    RERUN = "rerun"  # it failed when the confirmation ran it again
    OTHER = "other"


_KINDS = (
    (re.compile(r"^interrupted$"), FailureKind.INTERRUPTED),
    (re.compile(r"^timeout after "), FailureKind.TIMEOUT),
    (re.compile(r"^killed by signal "), FailureKind.SIGNAL),
    (re.compile(r"^exit status "), FailureKind.EXIT),
    (re.compile(r"^no profile written"), FailureKind.NO_PROFILE),
    (re.compile(r"^metric .* not found"), FailureKind.NO_METRIC),
    (re.compile(r"^failed when run again"), FailureKind.RERUN),
)


@dataclass(frozen=True)
class Failure:
    """A failure as stored: its kind and the message the user reads."""

    kind: FailureKind
    message: str

    @classmethod
    def parse(cls, message: str) -> Failure:
        for pattern, kind in _KINDS:
            if pattern.search(message):
                return cls(kind, message)
        return cls(FailureKind.OTHER, message)

    @property
    def interrupted(self) -> bool:
        return self.kind is FailureKind.INTERRUPTED

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class StoredRun:
    """One run of a trial as stored (``RunRecord.to_json`` and where it was placed)."""

    value: float | None  # the objective; None: the run failed
    wall: float
    relative: float | None  # to the control level at its place; None: not placed
    block: str | None
    seq: int | None  # its place among the study's runs
    failure: str | None = None
    returncode: int | None = None
    secondary: Mapping[str, float | None] = field(default_factory=dict)
    job: Mapping[str, str] | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StoredRun:
        value, relative = data.get("value"), data.get("relative")
        seq = data.get("seq")
        return cls(
            float(value) if value is not None else None,
            float(data.get("wall") or 0.0),
            float(relative) if relative is not None else None,
            data.get("block"),
            int(seq) if seq is not None else None,
            data.get("failure"),
            data.get("returncode"),
            dict(data.get("secondary") or {}),
            dict(data["job"]) if data.get("job") else None,
        )

    @property
    def ok(self) -> bool:
        return self.value is not None


@dataclass(frozen=True)
class TrialRecord:
    """Everything commtune stored of one trial, read once (see ``study._record`` for the
    attributes). ``trial`` is Optuna's frozen trial, for what Optuna itself reads of it
    (parameters and their distributions)."""

    number: int
    state: TrialState
    value: float | None
    role: Role | None  # None: not a commtune trial
    config: Mapping[str, Value]
    runs: tuple[StoredRun, ...]
    failure: Failure | None
    worker: str | None
    duplicate_of: int | None
    not_applied: Mapping[str, str]
    features: Mapping[str, float] | None
    relative: Mapping[str, Any] | None  # the profile's variables relative to the reference
    arm: str | None
    scale: Mapping[str, str] | None
    started: datetime | None
    trial: FrozenTrial = field(repr=False, compare=False)

    @classmethod
    def of(cls, trial: FrozenTrial) -> TrialRecord:
        failure = Attr.FAIL_REASON.read(trial)
        return cls(
            trial.number,
            trial.state,
            trial.value,
            Role.of(trial),
            Attr.CONFIG.read(trial),
            tuple(StoredRun.from_json(r) for r in Attr.RUNS.read(trial)),
            Failure.parse(failure) if failure is not None else None,
            Attr.WORKER.read(trial),
            Attr.DUPLICATE_OF.read(trial),
            Attr.NOT_APPLIED.read(trial),
            Attr.FEATURES.read(trial),
            Attr.RELATIVE.read(trial),
            Attr.ARM.read(trial),
            Attr.SCALE.read(trial),
            trial.datetime_start,
            trial,
        )

    # -- state --------------------------------------------------------------------------------
    @property
    def complete(self) -> bool:
        return self.state.name == "COMPLETE"

    @property
    def failed(self) -> bool:
        return self.state.name == "FAIL"

    @property
    def finished(self) -> bool:
        """Complete or failed (not running, not pruned)."""
        return self.complete or self.failed

    @property
    def running(self) -> bool:
        return self.state.name == "RUNNING"

    @property
    def interrupted(self) -> bool:
        return self.failure is not None and self.failure.interrupted

    @property
    def is_search(self) -> bool:
        """A configuration the strategy proposed and this study ran (not a duplicate)."""
        return self.role is Role.SEARCH

    @property
    def is_training(self) -> bool:
        return self.role is Role.TRAINING

    @property
    def is_reference(self) -> bool:
        return self.role is Role.REFERENCE

    @property
    def is_defaults(self) -> bool:
        """The library's defaults: the reference or a control."""
        return self.role in (Role.REFERENCE, Role.CONTROL)

    @property
    def ran(self) -> bool:
        """The reference or a search trial that finished or failed (see the module)."""
        return self.role in (Role.REFERENCE, Role.SEARCH) and self.finished

    @property
    def measured(self) -> bool:
        """Ran, and not interrupted (see the module)."""
        return self.ran and not self.interrupted

    @property
    def key(self) -> str:
        """The configuration's key (:func:`config_key`)."""
        return config_key(self.config)

    # -- runs -----------------------------------------------------------------------------------
    def values(self) -> list[float]:
        """The objective of every successful run."""
        return [r.value for r in self.runs if r.value is not None]

    def relatives(self) -> list[float]:
        """Every successful run's value relative to the control level at its place."""
        return [r.relative for r in self.runs if r.relative is not None]

    def walls(self) -> list[float]:
        """The wall time of every successful run."""
        return [r.wall for r in self.runs if r.value is not None]

    def objectives(self) -> dict[str, float]:
        """The median of each further objective over the runs (``--metric`` again)."""
        from commtune import stats  # numpy: imported where used, not by `commtune --help`

        values: dict[str, list[float]] = {}
        for run in self.runs:
            for metric, v in run.secondary.items():
                if v is not None:
                    values.setdefault(metric, []).append(float(v))
        return {m: stats.median(v) for m, v in values.items()}

    def jobs(self) -> list[str]:
        """The Slurm jobs its runs were part of."""
        return sorted({str(r.job["job"]) for r in self.runs if r.job and "job" in r.job})


@dataclass(frozen=True)
class Noise:
    """What the machine did, from the runs of the library's defaults: ``cv`` the noise
    (median coefficient of variation of a configuration's drift-corrected runs), ``drift``
    the slowest control level over the fastest."""

    cv: float
    drift: float

    def to_json(self) -> dict[str, float]:
        return {"cv": self.cv, "drift": self.drift}


class StudyView:
    """One look at a study: its trials read once as records, and the questions asked of
    them (see the module docstring for the words). A view does not change: look again
    (a new view) to see what was written since. ``states``: only the trials in these states
    (a worker polling for running or finished trials reads no others)."""

    def __init__(self, study: optuna.Study, states: Sequence[TrialState] | None = None) -> None:
        self.study = study
        self.records: tuple[TrialRecord, ...] = tuple(
            TrialRecord.of(t) for t in study.get_trials(deepcopy=False, states=states)
        )

    # -- the study's own attributes --------------------------------------------------------------
    def spec(self) -> StudySpec:
        return spec_of(self.study)

    def platform(self) -> str | None:
        return platform_of(self.study)

    def acceptance(self) -> Acceptance | None:
        return acceptance_of(self.study)

    def verdict(self) -> Acceptance | None:
        """The stored verdict if it was reached on the trials that ran so far (a study that
        ran more trials since needs a new one), else None."""
        stored = self.acceptance()
        if stored is not None and stored.measured_trials == len(self.ran()):
            return stored
        return None

    # -- trials ---------------------------------------------------------------------------------
    def by_role(self, *roles: Role) -> list[TrialRecord]:
        return [r for r in self.records if r.role in roles]

    def reference(self) -> TrialRecord | None:
        """The first finished trial of the library's defaults."""
        return next((r for r in self.records if r.role is Role.REFERENCE and r.complete), None)

    def ran(self) -> list[TrialRecord]:
        return [r for r in self.records if r.ran]

    def measured(self) -> list[TrialRecord]:
        return [r for r in self.records if r.measured]

    def search_trials(self) -> list[TrialRecord]:
        """The measured search trials, in order."""
        return [r for r in self.records if r.is_search and r.measured]

    def controls(self) -> list[TrialRecord]:
        return self.by_role(Role.CONTROL)

    def training(self) -> list[TrialRecord]:
        return self.by_role(Role.TRAINING)

    def known(self) -> dict[str, TrialRecord]:
        """configuration key -> the first measured search trial of it (a failed one too: a
        configuration that fails is not run again; an interrupted one is)."""
        known: dict[str, TrialRecord] = {}
        for r in self.search_trials():
            known.setdefault(r.key, r)
        return known

    def completed(self) -> list[TrialRecord]:
        """The search trials that completed with a value, in order (what the search found:
        the candidates of the verdict, the trials knob importances are computed on)."""
        return [r for r in self.records if r.is_search and r.complete and r.value is not None]

    def best(self, limit: int = 5) -> list[TrialRecord]:
        """The completed search trials with the lowest values, best first (ties in order)."""
        return sorted(self.completed(), key=_value)[:limit]

    def incumbent(self) -> float:
        """The best value measured so far, the library's defaults (1) included."""
        best = self.best(1)
        return min(1.0, _value(best[0])) if best else 1.0

    def running(self) -> list[TrialRecord]:
        return [r for r in self.records if r.running]

    # -- what it cost and what the machine did ---------------------------------------------------
    def runs_spent(self, acceptance: Acceptance | None = None) -> int:
        """Every run the study made: its trials' (controls included) and the confirmation's."""
        runs = sum(len(r.runs) for r in self.records)
        return runs + (acceptance.runs() if acceptance is not None else 0)

    def noise(self) -> Noise:
        """The noise and the drift of the study's machine, from its runs (:class:`Noise`)."""
        from commtune import stats

        levels: list[float] = []  # the reference's median, each control run
        spreads: list[float] = []
        for r in self.records:
            if r.role is Role.REFERENCE and r.values():
                levels.append(stats.median(r.values()))
            elif r.role is Role.CONTROL:
                levels += r.values()
            if r.role in (Role.REFERENCE, Role.SEARCH) and r.complete:
                relatives = r.relatives()
                if len(relatives) >= 2:
                    spreads.append(stats.cv(relatives))
        drift = max(levels) / min(levels) if len(levels) >= 2 and min(levels) > 0 else 1.0
        return Noise(stats.median(spreads) if spreads else 0.0, drift)

    def pareto(self, metrics: Sequence[str]) -> list[dict[str, object]]:
        """The finished trials (the defaults and the search's) that no other beats on the
        study's value and every further objective at once (lower is better on each), by
        value."""
        points = []
        for r in self.records:
            if r.role not in (Role.REFERENCE, Role.SEARCH) or not r.complete or r.value is None:
                continue
            others = r.objectives()
            if all(m in others for m in metrics):
                points.append((r, (float(r.value), *(others[m] for m in metrics)), others))

        def dominated(a: tuple[float, ...]) -> bool:
            return any(
                all(x <= y for x, y in zip(b, a, strict=True)) and b != a for _, b, _ in points
            )

        front = [(r, v, o) for r, v, o in points if not dominated(v)]
        front.sort(key=lambda p: p[1])
        return [
            {"number": r.number, "role": r.role.value, "value": v[0], "objectives": o}  # type: ignore[union-attr]
            for r, v, o in front
        ]

    def not_applied(self, records: Sequence[TrialRecord] | None = None) -> dict[str, str]:
        """knob -> why it did not take, the first reason given for each."""
        missing: dict[str, str] = {}
        for r in self.records if records is None else records:
            for knob, reason in r.not_applied.items():
                missing.setdefault(knob, reason)
        return missing


def _value(record: TrialRecord) -> float:
    assert record.value is not None, f"trial {record.number} has no value"
    return float(record.value)


class TrialWriter:
    """Writes commtune's attributes of a trial being run (Optuna's live trial)."""

    def __init__(self, trial: BaseTrial) -> None:
        self.trial = trial

    def role(self, role: Role) -> None:
        Attr.ROLE.write(self.trial, role)

    def config(self, config: Mapping[str, Value]) -> None:
        Attr.CONFIG.write(self.trial, config)

    def runs(self, runs: list[dict[str, Any]]) -> None:
        Attr.RUNS.write(self.trial, runs)

    def failure(self, reason: str) -> None:
        Attr.FAIL_REASON.write(self.trial, reason)

    def duplicate_of(self, number: int) -> None:
        Attr.DUPLICATE_OF.write(self.trial, number)

    def not_applied(self, missing: Mapping[str, str]) -> None:
        Attr.NOT_APPLIED.write(self.trial, missing)

    def features(self, features: Mapping[str, float]) -> None:
        Attr.FEATURES.write(self.trial, features)

    def relative(self, relative: Mapping[str, Any]) -> None:
        Attr.RELATIVE.write(self.trial, relative)

    def arm(self, arm: str) -> None:
        Attr.ARM.write(self.trial, arm)

    def scale(self, values: Mapping[str, str]) -> None:
        Attr.SCALE.write(self.trial, values)


def mark(
    study: optuna.Study,
    trial: FrozenTrial,
    *,
    arm: str | None = None,
    failure: str | None = None,
) -> None:
    """Write an attribute of a trial held as frozen: the arm that proposed it (a sampler
    inside ``sample_relative``) or why it failed (one a killed tuner left running)."""
    if arm is not None:
        Attr.ARM.write_frozen(study, trial, arm)
    if failure is not None:
        Attr.FAIL_REASON.write_frozen(study, trial, failure)


__all__ = [
    "INTERRUPTED",
    "Failure",
    "FailureKind",
    "Noise",
    "StoredRun",
    "StudyView",
    "TrialRecord",
    "TrialWriter",
    "mark",
]
