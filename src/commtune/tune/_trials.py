"""What a study's trials say: which ran, the reference, the best, the runs spent, the noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from commtune import stats
from commtune.study import Acceptance, Role, role_of, run_relatives, run_values, runs_of

if TYPE_CHECKING:
    import optuna


def measured(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """Trials that ran (reference and search), finished or failed; duplicates excluded."""
    from optuna.trial import TrialState

    return [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state in (TrialState.COMPLETE, TrialState.FAIL)
        and role_of(t) in (Role.REFERENCE, Role.SEARCH)
    ]


def reference_trial(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    from optuna.trial import TrialState

    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if role_of(t) is Role.REFERENCE:
            return t
    return None


def value_of(trial: optuna.trial.FrozenTrial) -> float:
    """The objective of a finished trial (the statistic of its relative runs)."""
    assert trial.value is not None, f"trial {trial.number} has no value"
    return float(trial.value)


def best_trials(study: optuna.Study, limit: int = 5) -> list[optuna.trial.FrozenTrial]:
    from optuna.trial import TrialState

    done = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if role_of(t) is Role.SEARCH
    ]
    return sorted(done, key=value_of)[:limit]


def incumbent_value(study: optuna.Study) -> float:
    """The best value measured so far, the library's defaults (1) included."""
    best = best_trials(study, 1)
    return min(1.0, value_of(best[0])) if best else 1.0


def runs_spent(study: optuna.Study, acceptance: Acceptance | None = None) -> int:
    """Every run the study made: its trials' (controls included) and the confirmation's."""
    runs = sum(len(runs_of(t)) for t in study.get_trials(deepcopy=False))
    return runs + (acceptance.runs() if acceptance is not None else 0)


@dataclass(frozen=True)
class Noise:
    """What the machine did, from the runs of the library's defaults: ``cv`` the noise
    (median coefficient of variation of a configuration's drift-corrected runs), ``drift``
    the slowest control level over the fastest."""

    cv: float
    drift: float

    def to_json(self) -> dict[str, float]:
        return {"cv": self.cv, "drift": self.drift}


def noise_of(study: optuna.Study) -> Noise:
    """The noise and the drift of the study's machine, from its runs (see :class:`Noise`)."""
    from optuna.trial import TrialState

    levels: list[float] = []  # the reference's median, each control run
    spreads: list[float] = []
    for t in study.get_trials(deepcopy=False):
        role = role_of(t)
        if role is Role.REFERENCE and run_values(t):
            levels.append(stats.median(run_values(t)))
        elif role is Role.CONTROL:
            levels += run_values(t)
        if role in (Role.REFERENCE, Role.SEARCH) and t.state is TrialState.COMPLETE:
            relatives = run_relatives(t)
            if len(relatives) >= 2:
                spreads.append(stats.cv(relatives))
    drift = max(levels) / min(levels) if len(levels) >= 2 and min(levels) > 0 else 1.0
    return Noise(stats.median(spreads) if spreads else 0.0, drift)


def objectives_of(trial: optuna.trial.FrozenTrial) -> dict[str, float]:
    """The median of each further objective over the trial's runs (``--metric`` again)."""
    values: dict[str, list[float]] = {}
    for run in runs_of(trial):
        for metric, v in (run.get("secondary") or {}).items():
            if v is not None:
                values.setdefault(metric, []).append(float(v))
    return {m: stats.median(v) for m, v in values.items()}


def pareto_front(study: optuna.Study, metrics: list[str]) -> list[dict[str, object]]:
    """The finished trials (the defaults and the search's) that no other beats on the study's
    value and every further objective at once (lower is better on each), by value."""
    from optuna.trial import TrialState

    points = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if role_of(t) not in (Role.REFERENCE, Role.SEARCH) or t.value is None:
            continue
        others = objectives_of(t)
        if all(m in others for m in metrics):
            points.append((t, (float(t.value), *(others[m] for m in metrics)), others))

    def dominated(a: tuple[float, ...]) -> bool:
        return any(all(x <= y for x, y in zip(b, a, strict=True)) and b != a for _, b, _ in points)

    front = [(t, v, o) for t, v, o in points if not dominated(v)]
    front.sort(key=lambda p: p[1])
    return [
        {"number": t.number, "role": role_of(t).value, "value": v[0], "objectives": o}  # type: ignore[union-attr]
        for t, v, o in front
    ]
