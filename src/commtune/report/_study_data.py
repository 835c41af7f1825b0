"""What the study report shows, read once from the storage into plain data.

Nothing here draws or formats: :mod:`._plots` draws, :mod:`._html` lays out. A study that has
only failed trials, a single trial or no confirmation gives data that says so (empty lists,
None, a note), never an error.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from commtune.study import Acceptance, StudySpec, StudyView

if TYPE_CHECKING:
    import optuna

    from commtune.sample import PlatformProfile
    from commtune.store import Store

MIN_FOR_IMPORTANCE = 5  # finished search trials before importances mean anything
IMPORTANT = 0.05  # knobs at least this important get a slice plot (the top 4 at most)


@dataclass
class TrialRow:
    number: int
    role: str
    state: str
    value: float | None
    config: dict[str, Any]
    relative: list[float]
    runs: int
    reason: str
    jobs: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.state == "FAIL"


@dataclass
class StudyData:
    name: str
    spec: StudySpec
    platform: dict[str, Any] | None
    knobs: list[tuple[str, list[Any]]]  # knob -> the values searched
    trials: list[TrialRow]
    searched: list[TrialRow]  # the search trials that ran, in order
    default_runs: list[tuple[int, float, str]]  # (run order, raw value, reference|control)
    noise_cv: float
    drift: float
    runs: int
    acceptance: Acceptance | None
    top: list[TrialRow]
    importances: dict[str, float] | None
    importance_note: str
    slices: dict[str, list[tuple[Any, float]]]
    not_applied: dict[str, str]
    exports: dict[str, str]
    sample: PlatformProfile | None = None
    policy_actions: list[dict[str, Any]] = field(default_factory=list)
    search_runs: list[tuple[int, float]] = field(default_factory=list)  # (run order, raw value)

    @property
    def metric(self) -> str:
        return self.spec.metric


def collect(store: Store, study: optuna.Study) -> StudyData:
    """Everything the report shows of ``study`` (see the module docstring)."""
    from commtune.knobs import space_from_json

    view = StudyView(study)
    spec = view.spec()
    space = space_from_json(spec.library, spec.space)
    knobs = [(d.knob.name, d.candidates()) for d in space.dimensions]
    rows: list[TrialRow] = []
    default_runs: list[tuple[int, float, str]] = []
    search_runs: list[tuple[int, float]] = []
    not_applied: dict[str, str] = {}
    seq = 0
    for t in view.records:
        rows.append(
            TrialRow(
                t.number,
                t.role.value if t.role else "?",
                t.state.name,
                t.value,
                dict(t.config),
                t.relatives(),
                len(t.runs),
                str(t.failure or ""),
                t.jobs(),
            )
        )
        for i, run in enumerate(t.runs):
            order = run.seq if run.seq is not None else seq + i
            if t.is_defaults and t.role is not None and run.value is not None:
                default_runs.append((order, run.value, t.role.value))
            elif t.is_search and run.value is not None:
                search_runs.append((order, run.value))
        seq += len(t.runs)
        not_applied.update(t.not_applied)
    ran = {t.number for t in view.ran() if t.is_search}
    searched = [r for r in rows if r.number in ran]
    acceptance = view.acceptance()
    noise = view.noise()
    top_numbers = [t.number for t in view.best(5)]
    by_number = {r.number: r for r in rows}
    importances, note = _importances(view, knobs)
    slices: dict[str, list[tuple[Any, float]]] = {}
    if importances:
        chosen = [k for k, v in importances.items() if v >= IMPORTANT][:4]
        for knob in chosen:
            slices[knob] = [(r.config[knob], r.value) for r in searched
                            if r.value is not None and knob in r.config]  # fmt: skip
    platform_key = view.platform()
    fingerprint = store.platform(platform_key) if platform_key else None
    return StudyData(
        name=study.study_name,
        spec=spec,
        platform=fingerprint.to_json() if fingerprint else None,
        knobs=knobs,
        trials=rows,
        searched=searched,
        default_runs=sorted(default_runs),
        search_runs=sorted(search_runs),
        noise_cv=noise.cv,
        drift=noise.drift,
        runs=view.runs_spent(acceptance),
        acceptance=acceptance,
        top=[by_number[n] for n in top_numbers],
        importances=importances,
        importance_note=note,
        slices=slices,
        not_applied=not_applied,
        exports=_exports(spec, study, acceptance),
        sample=_sample(store, platform_key),
        policy_actions=_policy_actions(store, study.study_name),
    )


def _importances(
    view: StudyView, knobs: list[tuple[str, list[Any]]]
) -> tuple[dict[str, float] | None, str]:
    """PED-ANOVA importances of the searched knobs on the trials' relative values, computed
    on a copy holding the finished search trials only (the study's reference, controls and
    duplicates would count twice or not at all)."""
    import optuna
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    varied = {name for name, values in knobs if len(values) > 1}
    done = [t.trial for t in view.completed()]
    if len(done) < MIN_FOR_IMPORTANCE:
        return None, (
            f"{len(done)} finished search trial(s): importances need at least {MIN_FOR_IMPORTANCE}"
        )
    if not varied:
        return None, "one knob value only: nothing to rank"
    copy = optuna.create_study(direction="minimize")
    for t in done:
        params = {k: v for k, v in t.params.items() if k in varied}
        dists = {k: t.distributions[k] for k in params}
        copy.add_trial(optuna.trial.create_trial(params=params, distributions=dists,
                                                 value=float(t.value)))  # type: ignore[arg-type]  # fmt: skip
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = get_param_importances(copy, evaluator=PedAnovaImportanceEvaluator())
    except (ValueError, RuntimeError) as exc:
        return None, f"importances could not be computed: {exc}"
    return dict(found), f"PED-ANOVA over {len(done)} finished search trials"


def _exports(spec: StudySpec, study: optuna.Study, acceptance: Acceptance | None) -> dict[str, str]:
    """The accepted configuration in each form the library reads (none if the default
    stays)."""
    from commtune import families
    from commtune.knobs import space_from_json
    from commtune.mpi import Vendor
    from commtune.report._export import render

    if acceptance is None or not acceptance.accepted:
        return {}
    knobs = [d.knob for d in space_from_json(spec.library, spec.space).dimensions]
    out = {}
    impl = Vendor(spec.library).impl
    for fmt in families.report_formats(impl):
        text = render(fmt, spec.library, knobs, dict(acceptance.params), study.study_name,
                      dict(acceptance.env))  # fmt: skip
        if any(line and not line.startswith("#") for line in text.splitlines()):
            out[fmt] = text
    return out


def _sample(store: Store, platform: str | None) -> PlatformProfile | None:
    if not platform:
        return None
    data = store.sample(platform)
    if data is None:
        return None
    from commtune.sample import PlatformProfile

    try:
        return PlatformProfile.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None


def _policy_actions(store: Store, study: str) -> list[dict[str, Any]]:
    actions = []
    for trial, run, profile in store.profiles(study):
        for a in (profile.get("policy") or {}).get("actions") or []:
            actions.append({"trial": trial, "run": run, **a})
    return actions
