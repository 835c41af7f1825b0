"""The verdict of a study, in one format whoever made it.

``tune`` confirms its best trial against the defaults (source ``search``); ``sample`` stores the
sampled configuration (``sample``) and ``predict`` the predicted one (``predict``), each as a
study made without a search. ``run`` and ``export`` take the accepted configuration of any of
them. Stored as the study attribute ``acceptance`` (JSON, ``FORMAT``); studies written before
the format existed are upgraded by the storage migration (``upgrade``), and read either way.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from commtune.errors import UsageError
from commtune.knobs import Value
from commtune.study._findings import (
    Finding,
    Notes,
    RiskFinding,
    StrictFinding,
    finding_from,
)
from commtune.study._gate import Gate
from commtune.study._record import StudySpec, set_spec

if TYPE_CHECKING:
    import optuna

F = TypeVar("F")

ACCEPTANCE = "acceptance"
FORMAT = 2


class Source(enum.Enum):
    """Who reached the verdict."""

    SEARCH = "search"  # commtune tune: a search, then the confirmation runs
    SAMPLE = "sample"  # commtune sample: the platform's sampled configuration
    PREDICT = "predict"  # commtune predict: one profiled run and the model


@dataclass(frozen=True)
class Acceptance:
    """``params`` is accepted (``accepted``) or not, for ``reason``, by ``gate`` (None: a
    configuration no verdict decided, or the strict confirmation's, which stored none). A
    search's verdict names the ``trial`` confirmed and the trials measured when it was
    reached (a resumed study with more trials confirms again), with the confirmation runs;
    ``env`` holds variables beyond the knobs (those that load a selection file). What the
    gate found is ``finding`` (a record of its own per gate, ``study._findings``), what the
    steps around it say ``notes``. Frozen: a later step makes a new one (``replace``)."""

    source: Source
    params: dict[str, Value]
    accepted: bool
    reason: str = ""
    speedup: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    trial: int | None = None
    measured_trials: int | None = None
    default_values: list[float] = field(default_factory=list)
    best_values: list[float] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    gate: Gate | None = None
    finding: Finding | None = None
    notes: Notes = field(default_factory=Notes)

    @property
    def proposal(self) -> bool:
        """A configuration proposed (a prediction) that no run has measured against the
        defaults: not accepted; ``commtune check`` or ``run --study`` measures it first."""
        return not self.accepted and bool(self.notes.proposal)

    def finding_of(self, kind: type[F]) -> F | None:
        """The finding, where it is a ``kind`` (the gate's own record); else None."""
        return self.finding if isinstance(self.finding, kind) else None

    @property
    def candidates(self) -> Sequence[Mapping[str, Any]]:
        """Every configuration the verdict tested, as its gate lists them (none: ())."""
        found = self.finding
        return found.candidates if isinstance(found, RiskFinding | StrictFinding) else ()

    @property
    def objectives(self) -> Mapping[str, Any]:
        """The further metrics of the configuration handed back, beside the defaults'."""
        found = self.finding
        return (found.objectives or {}) if isinstance(found, RiskFinding | StrictFinding) else {}

    def runs(self) -> int:
        """The confirmation's runs: the default's and every candidate's."""
        if self.candidates:
            return len(self.default_values) + sum(
                len(c.get("values") or []) for c in self.candidates
            )
        return len(self.default_values) + len(self.best_values)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "source": self.source.value,
            "params": dict(self.params),
            "accepted": self.accepted,
            "reason": self.reason,
            "speedup": self.speedup,
            "ci": list(self.ci) if self.ci is not None else None,
            "p_value": self.p_value,
            "trial": self.trial,
            "measured_trials": self.measured_trials,
            "default_values": list(self.default_values),
            "best_values": list(self.best_values),
            "env": dict(self.env),
            # the gate, its finding and the notes, stored flat inside ``extra`` (format 2, as
            # before the records); the strict confirmation stored no gate
            "extra": {
                **({"gate": self.gate.value} if self.gate else {}),
                **(self.finding.to_json() if self.finding else {}),
                **self.notes.to_json(),
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Acceptance:
        data = upgrade(data)
        try:
            ci = data.get("ci")
            extra = dict(data.get("extra") or {})
            gate = Gate(extra["gate"]) if extra.get("gate") is not None else None
            return cls(
                source=Source(data["source"]),
                params=dict(data["params"]),
                accepted=bool(data["accepted"]),
                reason=str(data.get("reason") or ""),
                speedup=data.get("speedup"),
                ci=(float(ci[0]), float(ci[1])) if ci else None,
                p_value=data.get("p_value"),
                trial=data.get("trial"),
                measured_trials=data.get("measured_trials"),
                default_values=list(data.get("default_values") or []),
                best_values=list(data.get("best_values") or []),
                env=dict(data.get("env") or {}),
                gate=gate,
                finding=finding_from(gate, extra),
                notes=Notes.from_json(extra, gate),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"the study's verdict is damaged ({exc!r})") from None


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """An acceptance attribute in the current format. Format 1 had two shapes: tune's
    (``trial``, ``measured_trials``, the confirmation runs) and the one of studies made
    without a search (``env`` and, for a prediction, ``features``)."""
    data = dict(data)
    if data.get("format") == FORMAT:
        return data
    if "trial" in data:
        source = Source.SEARCH
        extra: dict[str, Any] = {}
    else:
        source = Source.PREDICT if "features" in data else Source.SAMPLE
        known = {"accepted", "params", "env", "speedup", "reason"}
        extra = {k: v for k, v in data.items() if k not in known}
    upgraded = {k: v for k, v in data.items() if k not in extra}
    upgraded.update(format=FORMAT, source=source.value, extra=extra)
    return upgraded


def acceptance_of(study: optuna.Study) -> Acceptance | None:
    data = study.user_attrs.get(ACCEPTANCE)
    return Acceptance.from_json(data) if data else None


def raw_acceptance(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict as stored, upgraded (listings read it without failing on a damaged one)."""
    data = attrs.get(ACCEPTANCE)
    return upgrade(data) if isinstance(data, Mapping) else {}


def set_acceptance(study: optuna.Study, acceptance: Acceptance) -> None:
    study.set_user_attr(ACCEPTANCE, acceptance.to_json())


def save_result_study(
    storage: optuna.storages.BaseStorage,
    name: str,
    spec: StudySpec,
    acceptance: Acceptance,
    *,
    platform: str | None = None,
) -> None:
    """A study that holds one configuration as its verdict, made without a search (a
    platform sample, a prediction), so ``commtune run --study`` and ``export`` take it.
    A study of that name is replaced: the result is made again."""
    import optuna

    with contextlib.suppress(KeyError):
        optuna.delete_study(study_name=name, storage=storage)
    study = optuna.create_study(study_name=name, storage=storage, direction="minimize")
    set_spec(study, spec, platform)
    set_acceptance(study, acceptance)
