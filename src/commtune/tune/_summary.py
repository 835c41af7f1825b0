"""The result of a study, as ``tune``, ``show`` and ``--json`` report it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from commtune import stats
from commtune.errors import UsageError
from commtune.knobs import Value
from commtune.study import DEFAULTS, Acceptance, Gate, InRunFinding, Noise, RiskFinding, StudyView

if TYPE_CHECKING:
    import optuna


@dataclass
class Row:
    """One configuration in the result table. ``value``: the statistic of its runs relative
    to the control runs next to them (the library's defaults = 1); ``raw``: the statistic of
    its runs as measured; ``spread`` of the relative values; ``runs`` it was given."""

    number: int
    config: dict[str, Value]
    value: float
    spread: float
    speedup: float
    raw: float = float("nan")
    runs: int = 0


@dataclass
class TuneResult:
    study: str
    trials: int
    failed_trials: int
    default_value: float  # the reference's statistic, as measured
    best: Row | None
    acceptance: Acceptance | None
    table: list[Row] = field(default_factory=list)
    not_applied: dict[str, str] = field(default_factory=dict)
    runs: int = 0  # every run the study made: trials, controls, confirmation
    noise: Noise = field(default_factory=lambda: Noise(0.0, 1.0))
    statistic: str = DEFAULTS.statistic
    pareto: list[dict[str, Any]] = field(default_factory=list)  # with further objectives

    def to_json(self) -> dict[str, Any]:
        acc = self.acceptance
        best_params = self.best.config if self.best else {}
        if acc is not None and acc.speedup is not None:
            # the figures and the configuration they are of go together
            best_params = dict(acc.params)
        accepted = bool(acc and acc.accepted)
        # a speedup is said only of what is handed back; the search's own best, measured
        # but not confirmed, is under its name (``search_speedup``); what nothing measured
        # is null, never 1.0
        # --gate risk's figures (None under the strict gate)
        risky = acc.finding_of(RiskFinding) if acc is not None else None
        raced = acc.finding_of(InRunFinding) if acc is not None else None
        return {
            "study": self.study,
            "trials": self.trials,
            "failed_trials": self.failed_trials,
            "objective": self.statistic,
            "best_params": best_params,
            "best_value": self.best.value if self.best else None,  # relative: defaults = 1
            "best_raw": self.best.raw if self.best else None,
            "default_value": self.default_value,  # the reference's statistic, as measured
            "default_raw": self.default_value,
            "speedup": acc.speedup if accepted and acc is not None else None,
            "speedup_ci": list(acc.ci) if accepted and acc is not None and acc.ci else None,
            "search_speedup": self.best.speedup if self.best else None,
            "accepted": accepted,
            "p_value": acc.p_value if acc else None,
            "reason": acc.reason if acc else "no configuration to confirm",
            "accepted_params": acc.params if acc and acc.accepted else {},
            # the smallest answer: what the best configuration set before its knobs that
            # measured nothing were dropped, and why each was
            "reduced_from": acc.notes.reduced_from if acc else None,
            # an in-run verdict's: the candidates a crash put out
            "dropped": (raced.dropped if raced else acc.notes.dropped) if acc else None,
            "confirmed": [
                {k: c[k] for k in ("trial", "params", "speedup", "ci", "p_value", "faster")}
                | {"failure": c["failure"], "dropped": c.get("dropped"), "label": c.get("label")}
                | {"runs": len(c["values"]), "objectives": c.get("objectives", {})}
                | {"paired": _paired(c, risky)}
                for c in (acc.candidates if acc else [])
            ],
            "objectives": dict(acc.objectives) if acc else {},
            "pareto": self.pareto,
            "not_applied": self.not_applied,
            "runs": self.runs,
            "noise": self.noise.to_json(),
            "gate": (acc.gate or Gate.STRICT).value if acc else None,
            "expected": acc.speedup if risky and acc else None,
            "interval": list(acc.ci) if risky and acc and acc.ci else None,
            "share": risky.share if risky else None,
            "tolerance": risky.tolerance if risky else None,
            "evidence_runs": risky.evidence_runs if risky else None,
            "said": risky.said if risky else None,
            "more_runs": risky.more_runs if risky else None,
        }


def _paired(candidate: Mapping[str, Any], risky: RiskFinding | None) -> int:
    """A confirmed configuration's runs with a run of the defaults beside it in the same
    round: what its further objectives are compared on (every round of the strict gate's
    has one; the risk gate's duel runs the defaults beside every second round)."""
    if risky is None:
        return len(candidate["values"])
    return len(set(candidate["rounds"]) & set(risky.rounds or []))


def summarize(study: optuna.Study, acceptance: Acceptance | None) -> TuneResult:
    view = StudyView(study)
    ref = view.reference()
    if ref is None or ref.value is None:
        raise UsageError(f"study {study.study_name!r} has no reference trial yet")
    spec = view.spec()
    summary = stats.statistic(spec.statistic)
    ran = view.ran()
    rows = [
        Row(
            t.number,
            dict(t.config),
            float(t.value),
            stats.spread(t.relatives()),
            ref.value / t.value,
            summary(t.values()),
            len(t.values()),
        )
        for t in view.best(5)
        if t.value is not None
    ]
    return TuneResult(
        study.study_name,
        len(ran),
        sum(1 for t in ran if t.failed),
        summary(ref.values()),
        rows[0] if rows else None,
        acceptance,
        rows,
        view.not_applied(ran),
        view.runs_spent(acceptance),
        view.noise(),
        spec.statistic,
        view.pareto(spec.objectives) if spec.objectives else [],
    )
