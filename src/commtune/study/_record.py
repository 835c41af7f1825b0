"""The study record: what commtune writes into Optuna's studies and trials, and reads back.

Optuna stores studies and trials; commtune's facts about them are user attributes, and this
module is the only one that knows their names and shapes. Trial attributes (all JSON):

``role``       :class:`Role`: the reference (library defaults), a search trial, a
               duplicate answered from an earlier trial (``duplicate_of``), the controls
               (the defaults again, in a stream across batches: ``tune/_schedule.py``), a
               training trial at another scale, or a trial asked when the budget was spent
               (unused)
``config``     the configuration run: knob -> value as the library reads it ({} = nothing)
``runs``       every run of the trial (``RunRecord.to_json()`` with its ``block``, its place
               ``seq`` in the study's runs and, once placed, its value ``relative`` to the
               nearest control run), written as each one ends; the trial's value is the
               study's statistic (``--objective``: median, mean or p90) of the relative values
``fail_reason`` why the trial failed (``interrupted``: the tuner stopped during it)
``not_applied`` knob -> why libcommtune saw it did not take
``features``   the profile's features of the first run; ``relative``: its variables
               relative to the reference (AITuning)
``arm``        which of ``auto``'s strategies proposed it
``scale``      a training trial's scale values (name -> value as in the command)
``worker``     the tuner process that ran it, ``HOST:PID:START`` (several work on one study)

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
        return role_of(trial)


class _Attr:
    ROLE = "role"
    CONFIG = "config"
    RUNS = "runs"
    FAIL_REASON = "fail_reason"
    NOT_APPLIED = "not_applied"
    DUPLICATE_OF = "duplicate_of"
    FEATURES = "features"
    RELATIVE = "relative"
    ARM = "arm"
    SCALE = "scale"
    WORKER = "worker"


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
def role_of(trial: FrozenTrial | BaseTrial) -> Role | None:
    value = trial.user_attrs.get(_Attr.ROLE)
    return Role(value) if value in {r.value for r in Role} else None


def ask(study: optuna.Study, **kwargs: Any) -> optuna.Trial:
    """``study.ask(**kwargs)``, the trial stamped at once with this worker's name: until then
    another worker cannot tell it from a trial a dead worker left RUNNING."""
    trial = study.ask(**kwargs)
    trial.set_user_attr(_Attr.WORKER, worker_id())
    return trial


def set_role(trial: BaseTrial, role: Role) -> None:
    """The trial's role (its worker is written by :func:`ask`)."""
    trial.set_user_attr(_Attr.ROLE, role.value)


def worker_of(trial: FrozenTrial) -> str | None:
    """The worker that ran the trial (None: stored before workers were named, schema 6)."""
    value = trial.user_attrs.get(_Attr.WORKER)
    return value if isinstance(value, str) else None


def config_of(trial: FrozenTrial | BaseTrial) -> dict[str, Value]:
    config: dict[str, Value] = trial.user_attrs.get(_Attr.CONFIG, {})
    return config


def set_config(trial: BaseTrial, config: Mapping[str, Value]) -> None:
    trial.set_user_attr(_Attr.CONFIG, dict(config))


def runs_of(trial: FrozenTrial | BaseTrial) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = trial.user_attrs.get(_Attr.RUNS, [])
    return runs


def set_runs(trial: BaseTrial, runs: list[dict[str, Any]]) -> None:
    trial.set_user_attr(_Attr.RUNS, runs)


def run_values(trial: FrozenTrial) -> list[float]:
    """The objective of every successful run of the trial."""
    return [r["value"] for r in runs_of(trial) if r["value"] is not None]


def run_relatives(trial: FrozenTrial) -> list[float]:
    """Every successful run's value relative to the control run of its block."""
    return [r["relative"] for r in runs_of(trial) if r.get("relative") is not None]


def run_walls(trial: FrozenTrial) -> list[float]:
    """The wall time of every successful run of the trial."""
    return [r["wall"] for r in runs_of(trial) if r["value"] is not None]


def fail_reason(trial: FrozenTrial | BaseTrial) -> str | None:
    value = trial.user_attrs.get(_Attr.FAIL_REASON)
    return str(value) if value is not None else None


def set_fail_reason(trial: BaseTrial, reason: str) -> None:
    trial.set_user_attr(_Attr.FAIL_REASON, reason)


def not_applied_of(trial: FrozenTrial | BaseTrial) -> dict[str, str]:
    value: dict[str, str] = trial.user_attrs.get(_Attr.NOT_APPLIED, {})
    return value


def set_not_applied(trial: BaseTrial, missing: Mapping[str, str]) -> None:
    trial.set_user_attr(_Attr.NOT_APPLIED, dict(missing))


def duplicate_of(trial: FrozenTrial) -> int | None:
    value = trial.user_attrs.get(_Attr.DUPLICATE_OF)
    return int(value) if value is not None else None


def set_duplicate_of(trial: BaseTrial, number: int) -> None:
    trial.set_user_attr(_Attr.DUPLICATE_OF, number)


def scale_of(trial: FrozenTrial | BaseTrial) -> dict[str, str] | None:
    value = trial.user_attrs.get(_Attr.SCALE)
    return dict(value) if isinstance(value, Mapping) else None


def set_scale(trial: BaseTrial, values: Mapping[str, str]) -> None:
    trial.set_user_attr(_Attr.SCALE, dict(values))


def features_of_trial(trial: FrozenTrial | BaseTrial) -> dict[str, float] | None:
    value: dict[str, float] | None = trial.user_attrs.get(_Attr.FEATURES)
    return value


def set_features(trial: BaseTrial, features: Mapping[str, float]) -> None:
    trial.set_user_attr(_Attr.FEATURES, dict(features))


def relative_of(trial: FrozenTrial | BaseTrial) -> dict[str, Any] | None:
    value: dict[str, Any] | None = trial.user_attrs.get(_Attr.RELATIVE)
    return value


def set_relative(trial: BaseTrial, relative: Mapping[str, Any]) -> None:
    trial.set_user_attr(_Attr.RELATIVE, dict(relative))


def arm_of(trial: FrozenTrial | BaseTrial) -> str | None:
    value = trial.user_attrs.get(_Attr.ARM)
    return str(value) if value is not None else None


def set_arm(trial: BaseTrial, arm: str) -> None:
    trial.set_user_attr(_Attr.ARM, arm)


def record_arm(study: optuna.Study, trial: FrozenTrial, arm: str) -> None:
    """``set_arm`` for a trial held as frozen (a sampler inside ``sample_relative``)."""
    study._storage.set_trial_user_attr(trial._trial_id, _Attr.ARM, arm)


def record_fail_reason(study: optuna.Study, trial: FrozenTrial, reason: str) -> None:
    """``set_fail_reason`` for a trial held as frozen (one a killed tuner left RUNNING)."""
    study._storage.set_trial_user_attr(trial._trial_id, _Attr.FAIL_REASON, reason)
