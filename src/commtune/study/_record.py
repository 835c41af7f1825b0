"""The study record: what commtune writes into Optuna's studies and trials, and reads back.

Optuna stores studies and trials; commtune's facts about them are user attributes, and this
module is the only one that knows their names and shapes. Trial attributes are the table
:class:`Attr` (each with its key, its JSON type and what it means); a trial is read once into
``TrialRecord`` and written through ``TrialWriter`` (``study._view``).

Study attributes: ``commtune`` (:class:`StudySpec`), ``platform`` (fingerprint key),
``installation`` (the MPI installation it ran: ``Installation.to_json()``), ``acceptance``
(``study._acceptance``) and ``checks`` (the stale checks of the accepted configuration on
other installations or platforms: ``tune._stale.StaleCheck.to_json()``, oldest first).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from commtune.errors import UsageError
from commtune.knobs import Value
from commtune.study._plan import Plan
from commtune.study._scale import Scale
from commtune.util import worker_id

if TYPE_CHECKING:
    import optuna
    from optuna.trial import BaseTrial, FrozenTrial

SPEC = "commtune"
PLATFORM = "platform"
INSTALLATION = "installation"
CHECKS = "checks"
INTERRUPTED = "interrupted"


class Role(enum.Enum):
    REFERENCE = "reference"
    SEARCH = "search"
    DUPLICATE = "duplicate"
    CONTROL = "control"  # the library's defaults run again beside a batch (its blocks)
    TRAINING = "training"  # a run at a training scale (``scale``), for the model only
    # Asked when the study's trials were all claimed (by other workers): never run, nothing
    # measured, and no earlier trial it repeats.
    UNUSED = "unused"

    @classmethod
    def of(cls, trial: FrozenTrial | BaseTrial) -> Role | None:
        """The role stored on a trial, frozen or being run (None: not a commtune trial)."""
        value = Attr.ROLE.read(trial)
        return cls(value) if value in {r.value for r in cls} else None


class Attr(enum.Enum):
    """One attribute commtune stores on a trial: its key in Optuna's user attributes, the JSON
    type it is read as (anything else reads as absent), and whether an absent one reads as
    empty (``{}``/``[]``) rather than None."""

    # Role: reference (library defaults), search, duplicate (answered from ``duplicate_of``),
    # control (the defaults again beside a batch), training (another scale), unused
    ROLE = ("role", str, False)
    # the configuration run: knob -> value as the library reads it ({}: nothing set)
    CONFIG = ("config", dict, True)
    # every run (RunRecord.to_json() with its ``block``, its place ``seq`` in the study's runs
    # and its value ``relative`` to the nearest control run), written as each one ends
    RUNS = ("runs", list, True)
    FAIL_REASON = ("fail_reason", str, False)  # why it failed (``interrupted``: the tuner stopped)
    NOT_APPLIED = ("not_applied", dict, True)  # knob -> why libcommtune saw it did not take
    DUPLICATE_OF = ("duplicate_of", int, False)  # the earlier trial of the same configuration
    FEATURES = ("features", dict, False)  # the profile's features of the first run
    RELATIVE = ("relative", dict, False)  # its variables relative to the reference (AITuning)
    ARM = ("arm", str, False)  # which of ``auto``'s strategies proposed it
    SCALE = ("scale", dict, False)  # a training trial's scale values (name -> value)
    WORKER = ("worker", str, False)  # the tuner process that ran it, ``HOST:PID:START``

    def __init__(self, key: str, kind: type, empty: bool) -> None:
        self.key = key
        self.kind = kind
        self.empty = empty

    def read(self, trial: FrozenTrial | BaseTrial) -> Any:
        """The stored value (a copy of a dict or list), None or empty if absent."""
        value = trial.user_attrs.get(self.key)
        if isinstance(value, self.kind) and not isinstance(value, bool):
            return self.kind(value)
        return self.kind() if self.empty else None

    def write(self, trial: BaseTrial, value: Any) -> None:
        trial.set_user_attr(self.key, _json(value))

    def write_frozen(self, study: optuna.Study, trial: FrozenTrial, value: Any) -> None:
        """:meth:`write` for a trial held as frozen (a sampler inside ``sample_relative``, a
        trial a killed tuner left RUNNING)."""
        study._storage.set_trial_user_attr(trial._trial_id, self.key, _json(value))


def _json(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    return dict(value) if isinstance(value, Mapping) else value


def config_key(config: Mapping[str, Value] | None) -> str:
    """One text per configuration, equal for equal configurations whatever their order;
    nothing set (None or {}, the library's defaults) is the empty text."""
    return json.dumps(dict(config), sort_keys=True) if config else ""


@dataclass(frozen=True)
class StudySpec:
    """What defines a study, as stored; a resumed study must be given the same. Built from
    the study's :class:`~commtune.study.Plan` by :meth:`of` (its ``repeats``, ``statistic``
    and further metrics are the plan's); the scale is typed here and turned into JSON only
    by :meth:`to_json` / :meth:`from_json`."""

    command: list[str]
    library: str
    space: list[dict[str, Any]]
    metric: str
    repeats: int  # runs per configuration: the cap when repeats are raced
    statistic: str = "median"  # of a configuration's runs (--objective); see stats.statistic
    scale: Scale | None = None  # the command's template, target and training scales
    objectives: list[str] = field(default_factory=list)  # further --metric: measured, shown

    @classmethod
    def of(
        cls,
        command: Sequence[str],
        library: str,
        space: list[dict[str, Any]],
        plan: Plan,
        scale: Scale | None = None,
    ) -> StudySpec:
        """The record of a study searched by ``plan`` (``space``: ``Space.to_json()``)."""
        return cls(list(command), library, space, plan.metric, plan.repeats, plan.statistic,
                   scale, list(plan.objectives))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["scale"] = self.scale.to_json() if self.scale is not None else None
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StudySpec:
        try:
            return cls(
                list(data["command"]),
                str(data["library"]),
                list(data["space"]),
                str(data["metric"]),
                int(data["repeats"]),
                str(data.get("statistic", "median")),  # before --objective: the median
                Scale.from_json(data["scale"]) if data.get("scale") else None,
                [str(m) for m in data.get("objectives", [])],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"the study's record is damaged ({exc})") from None

    def knob_names(self) -> list[str]:
        return [str(d["knob"]) for d in self.space]

    def trains(self) -> bool:
        """The study trains at smaller scales first (``--train``)."""
        return self.scale is not None and bool(self.scale.train)


# -- study attributes ---------------------------------------------------------------------------
def spec_of(study: optuna.Study) -> StudySpec:
    """The study's spec; UsageError for a study commtune did not make."""
    data = study.user_attrs.get(SPEC)
    if data is None:
        raise UsageError(f"study {study.study_name!r} was not made by commtune")
    return StudySpec.from_json(data)


def raw_spec(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The spec as stored (for listings that must not fail on one foreign study)."""
    data = attrs.get(SPEC)
    return dict(data) if isinstance(data, Mapping) else {}


def set_spec(study: optuna.Study, spec: StudySpec, platform: str | None = None) -> None:
    study.set_user_attr(SPEC, spec.to_json())
    if platform:
        study.set_user_attr(PLATFORM, platform)


def platform_of(study: optuna.Study) -> str | None:
    value = study.user_attrs.get(PLATFORM)
    return str(value) if value is not None else None


def set_installation(study: optuna.Study, installation: Mapping[str, Any]) -> None:
    study.set_user_attr(INSTALLATION, dict(installation))


def installation_of(study: optuna.Study) -> dict[str, Any] | None:
    """The installation the study ran (None: a study from before it was recorded)."""
    value = study.user_attrs.get(INSTALLATION)
    return dict(value) if isinstance(value, dict) else None


def add_check(study: optuna.Study, check: Mapping[str, Any]) -> None:
    study.set_user_attr(CHECKS, [*checks_of(study), dict(check)])


def checks_of(study: optuna.Study) -> list[dict[str, Any]]:
    value = study.user_attrs.get(CHECKS)
    return [dict(c) for c in value] if isinstance(value, list) else []


# -- trial attributes ---------------------------------------------------------------------------
def ask(study: optuna.Study, **kwargs: Any) -> optuna.Trial:
    """``study.ask(**kwargs)``, the trial stamped at once with this worker's name: until then
    another worker cannot tell it from a trial a dead worker left RUNNING."""
    trial = study.ask(**kwargs)
    Attr.WORKER.write(trial, worker_id())
    return trial
