"""The tuning service: one :class:`~commtune.study.Plan` and the user's command in, a finished
study (or a recorded table) out, with no argparse in between: the command line, a script
and a test call it alike.

:func:`check` refuses a plan that cannot work before anything runs or is written.
:meth:`Tuning.run` is a short sequence of named steps over frozen values: :meth:`_setup`
resolves the installation and what follows from it (a simulated cluster, ``--as``, a
wall-time budget) into a :class:`Setup`; a twin (``--twin``, :mod:`._twin`) searches its
simulation first; :meth:`_prepare` chooses the space (named knobs and presets, or the
reference's first run profiled: ``profile.guided``), probes its values, opens the storage
with the platform recorded and builds the executor and the observer (a :class:`Ready`);
then ``tune.tune`` (or ``tune.record``) runs it and the study's answer is said and stored.
:meth:`Tuning.search` is the same without the answer's extras: the twin's simulated study.
What it tells the user goes to the ``Progress`` it is given.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import optuna

from commtune.errors import UsageError
from commtune.knobs import (
    Knob,
    Space,
    Value,
    build_space,
    catalog_statuses,
    discover,
    enumerators,
    installed_knobs,
    with_layer,
    with_segments,
)
from commtune.launch import launcher_for
from commtune.mpi import MPISpec, resolve_command
from commtune.platform import on_testbed
from commtune.predict import Predictor, features_of, model_store
from commtune.profile import Choice
from commtune.report import UI
from commtune.service._as import (
    NothingFaithful,
    as_library,
    as_proposal,
    reference_words,
    space_as,
)
from commtune.service._check import check
from commtune.service._common import default_study_name, open_store, probe, profiling, slurm_nodes
from commtune.service._hints import HintSource, Knowledge, Prediction, Sampled
from commtune.service._inrun import InRunDecided, inrun_of, narrowed, race_study
from commtune.service._layer import layer_warnings, read_layer
from commtune.service._observer import StudyObserver
from commtune.service._simulation import budgeted, cost, simulated_plan
from commtune.service._space import check_training_study, guided_space
from commtune.service._steps import Ready, Setup
from commtune.service._twin import Twinned, twin_found, twin_nothing, twin_start
from commtune.store import Store, shown_url
from commtune.study import Plan, Scale, TwinReport, words
from commtune.trial import (
    Executor,
    LocalExecutor,
    Primed,
    ReplayExecutor,
    RunRecord,
    SlurmJobs,
    profiled,
    run_process,
)
from commtune.tune import Target, TuneResult, Workers, inherited_mpi_env, record, tune
from commtune.util import write_atomic

__all__ = ["Outcome", "Recorded", "Tuning", "check"]


@dataclass(frozen=True)
class Outcome:
    """A finished study: its result, the space it searched, the library, the command it
    tuned (None: a replay), what the JSON answer adds (the space the profile chose) and
    the test bed it ran across, if any."""

    result: TuneResult
    space: Space
    library: str
    command: Sequence[str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    bed: tuple[str, int] | None = None  # the test bed it ran on (its name, nodes): gone now


@dataclass(frozen=True)
class Recorded:
    """``--record``: the table written, its runs and configurations."""

    file: str
    runs: int
    failed: int
    configurations: int

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "runs": self.runs, "failed": self.failed,
                "configurations": self.configurations}  # fmt: skip


class Tuning:
    """The tuning service for one plan that :func:`check` returned (it is not checked
    again)."""

    def __init__(self, plan: Plan, ui: UI) -> None:
        self.plan = plan
        self.ui = ui

    # -- the entry points ---------------------------------------------------------------------
    def run(self, command: list[str] | None) -> Outcome | Recorded:
        """Tune ``command`` (or record it, or replay the plan's table)."""
        if self.plan.replay:
            return self.replay()
        setup = self._setup(command)
        report: TwinReport | None = None
        ranked: tuple[Mapping[str, Value], ...] | None = None
        if setup.plan.twin is not None:
            found = self._twin(setup)
            setup, report, ranked = replace(setup, plan=found.plan), found.report, found.ranked
        ready = self._prepare(setup)
        if setup.plan.record:
            return self._record(ready)
        how = inrun_of(ready, report is not None and not report.in_run, self.ui)
        route = (race_study(ready, how, self.ui) if how is not None
                 else narrowed(ready, report is not None, self.ui))  # fmt: skip
        if isinstance(route, InRunDecided):  # (a twin's field too: service._twin.in_run_field)
            raced = route.result
            twin_said = {"twin": self._said(ready, raced, report).to_json()} if report else {}
            acc = raced.acceptance
            said = {"reference": reference_words(setup.inst, None, {}), **twin_said,
                    "inrun": acc.to_json()["extra"] if acc else None}  # fmt: skip
            return Outcome(raced, ready.space, setup.inst.vendor.value, setup.command, said)
        ready, first = route.ready, route.first  # the whole-run search
        result, extra = self._tuned(ready, ranked)
        s = ready.setup
        if first is not None:  # its raced runs are the study's too
            extra["inrun_first"] = first.stored(ready.store, ready.target.study)
            result = replace(result, runs=result.runs + first.runs)
        if s.library is not None:
            extra["as"] = as_proposal(ready.store, ready.target.study, result, s.inst, s.library,
                                      s.base, s.command, s.plan, self.ui)  # fmt: skip
        if report is not None:
            extra["twin"] = self._said(ready, result, report).to_json()
        return Outcome(result, ready.space, s.inst.vendor.value, s.command, extra)

    def _twin(self, setup: Setup) -> Twinned:
        """The simulated twin's study (``--twin``): started, searched here as a study of its
        own (nothing said or handed over), then what it found for the real study."""
        start = twin_start(setup.plan, setup.inst, setup.command, self.ui)
        try:
            Tuning(start.plan, self.ui).search(list(start.line))
        except NothingFaithful as exc:  # the program's profile calls for nothing it models
            return twin_nothing(start, setup.plan, setup.inst, setup.command, exc, self.ui)
        return twin_found(start, setup.plan, setup.inst, setup.command, setup.statuses, self.ui)

    def search(self, command: Sequence[str]) -> TuneResult:
        """The study of ``command`` alone, nothing said or handed over: a twin's search."""
        return self._tuned(self._prepare(self._setup(command)), None)[0]

    def replay(self) -> Outcome:
        """Tuning against recorded measurements (``--replay FILE``): strategies without MPI."""
        plan = self.plan
        spec = MPISpec.parse(plan.mpi) if plan.mpi else None
        if spec is None or spec.family is None or plan.replay is None:
            raise UsageError("--replay needs --mpi to name the library of the recorded knobs")
        library = spec.family.value
        statuses = catalog_statuses(library, spec.version)
        space = build_space(statuses, library, plan.knobs, plan.presets)
        defaults = {d.knob.name: d.knob.default for d in space.dimensions}
        executor = ReplayExecutor(plan.replay, defaults)
        store = Store(plan.storage)
        command = ["replay", plan.replay]
        name = plan.study or default_study_name(command, library, space)
        target = Target.of(name, command, space, plan)
        sources = [Knowledge(store, name, None, library, self.ui)] if plan.knowledge else []
        observer = StudyObserver(store, self.ui, name, space, profiles=False, sources=sources)
        return Outcome(self._study(store, target, executor, observer, None), space, library)

    # -- the steps ----------------------------------------------------------------------------
    def _setup(self, command: Sequence[str] | None) -> Setup:
        """The installation of ``command`` and what follows from it for the plan."""
        if not command:
            raise UsageError("missing '--' before the command to tune, e.g. -- mpirun -np 4 ./app")
        plan = self.plan
        scale = Scale.parse(command, plan.scales, plan.trains, plan.train_from)
        if scale is not None:
            command = scale.command()
        inst = resolve_command(list(command), plan.mpi)
        # the layers the run selects, said by the library (a batch job's: not from here)
        layer = read_layer(inst, command, plan.through) if plan.sbatch is None else None
        statuses = with_layer(installed_knobs(inst), layer, inst)
        setup = Setup(plan, tuple(command), scale, inst, statuses, layer=layer)
        if plan.twin is not None:
            return setup  # the twin's simulated study comes first, then the real one's plan
        library = as_library(plan, inst)
        base = {} if library is None else inst.impl.decides_as(library) or {}
        runs = inst.runs(command)
        if runs.wall_is_cost:  # a simulation: its plan within the simulations' budget
            plan = budgeted(simulated_plan(plan, inst.impl, self.ui), inst, command, base,
                            self.ui)  # fmt: skip
        return replace(setup, plan=plan, runs=runs, library=library, base=base)

    def _prepare(self, setup: Setup) -> Ready:
        """The space chosen and probed, the storage opened, the executor and observer built."""
        plan, inst, ui = setup.plan, setup.inst, self.ui
        space = build_space(dict(setup.statuses), inst.vendor.value, plan.knobs, plan.presets,
                            discover(inst),
                            plan.across_nodes or on_testbed())  # fmt: skip
        predictor = None
        if plan.strategy == "predict":  # before anything is written: a model must exist
            predictor = Predictor.load(model_store(plan.storage, inst), inst, False, ui,
                                       setup.runs.model_key)  # fmt: skip
        if setup.scale is not None and setup.scale.train_from:
            check_training_study(plan.storage, setup.scale, space)
        runner = SlurmJobs(plan.sbatch) if plan.sbatch is not None else run_process
        # each run its own job: rank 0's node writes the profile where the tuner reads it
        jobs_dir = str(runner.workdir) if isinstance(runner, SlurmJobs) else None
        space, guide, look, named = self._space(setup, space, runner, jobs_dir)
        if setup.library is not None:
            space = space_as(space, inst, setup.library)
        space = space.pinned(inst.impl.baseline(setup.command))  # a calibration's values
        # Everything is valid: from here on, the storage is written.
        nodes = setup.runs.nodes or slurm_nodes(plan, setup.command)
        store, platform = open_store(plan.storage, inst, nodes)
        if setup.runs.said:
            ui.info(setup.runs.said)
        if setup.library is not None:
            title = setup.library.title
            ui.info(f"tuned as {title}: the reference is {title}'s own decision as "
                    f"{inst.impl.title} ports it ({words(setup.base)}); every speedup is "
                    "against it")  # fmt: skip
        launcher = launcher_for(inst, plan.through)
        if inst.impl.probes_values:
            space = probe(space, launcher, store, platform, ui)
        if setup.layer is not None:
            ui.info(f"the run selects {setup.layer.describe()}")
            for warning in layer_warnings(inst, setup.layer):
                ui.warn(warning)
            for d in space.dimensions:
                if (note := inst.impl.layer_note(setup.layer, d.knob.name)) is not None:
                    ui.warn(note)
        ui.info(f"{inst.describe()}; tuning {space.size()} configurations of "
                f"{', '.join(space.names)}")  # fmt: skip
        knobs = [d.knob for d in space.dimensions]
        _report_inherited_env(ui, knobs)
        executor: Executor = LocalExecutor(
            launcher, setup.command, with_segments(knobs, inst.impl), setup.objective,
            profiling=profiling(inst, shared=jobs_dir) if plan.interposer else None,
            enumerators=enumerators(inst) if plan.interposer else None,
            secondary=setup.secondary, runner=runner, variables=setup.base,
        )  # fmt: skip
        if look is not None:
            executor = Primed(executor, look)
        name = named or default_study_name(setup.command, inst.vendor.value, space)
        target = Target.of(name, list(setup.command), space, plan, platform, inst.to_json(),
                           setup.scale)  # fmt: skip
        return Ready(setup, space, tuple(guide), store, target, executor,
                     self._observer(setup, store, name, space, platform, predictor))  # fmt: skip

    def _space(
        self, setup: Setup, default: Space, runner: Any, jobs_dir: str | None
    ) -> tuple[Space, list[Choice], RunRecord | None, str | None]:
        """No knob named (and no template or table): the space the reference's first run,
        profiled, calls for, the study named first (by the default space: the name a
        resumed study is found by), else ``default``; and the study's name (None: named
        by the space)."""
        plan, inst = setup.plan, setup.inst
        named = plan.knobs or plan.presets or plan.record or setup.scale is not None
        if named or not (plan.interposer or setup.runs.traced):
            return default, [], None, plan.study
        name = plan.study or default_study_name(setup.command, inst.vendor.value, default)
        launcher = launcher_for(inst, plan.through)
        if plan.interposer:
            look: Executor = LocalExecutor(launcher, setup.command, [], setup.objective,
                                           runner=runner, secondary=setup.secondary,
                                           profiling=profiling(inst, shared=jobs_dir))  # fmt: skip
        else:  # the launcher's own trace
            look = profiled(LocalExecutor(launcher, setup.command, [], setup.objective,
                                          runner=runner, secondary=setup.secondary,
                                          variables=setup.base))  # fmt: skip
        space, guide, run = guided_space(plan, name, inst, setup.statuses, look, default,
                                         self.ui)  # fmt: skip
        return space, guide, run, name

    def _observer(self, setup: Setup, store: Store, name: str, space: Space, platform: str,
                  predictor: Predictor | None) -> StudyObserver:  # fmt: skip
        """What the study hears of its runs, with the sources of its first hints."""
        plan, ui = setup.plan, self.ui
        sources: list[HintSource] = []
        if predictor is not None:
            sources.append(Prediction(predictor, ui))
        if plan.knowledge:
            sources.append(Knowledge(store, name, platform, setup.inst.vendor.value, ui))
        sources.append(Sampled(store, platform))
        return StudyObserver(store, ui, name, space, profiles=plan.interposer, sources=sources)

    def _tuned(self, ready: Ready, ranked: Sequence[Mapping[str, Value]] | None
               ) -> tuple[TuneResult, dict[str, Any]]:  # fmt: skip
        """The study run, and what every answer says beside it: the space's reasons, a
        simulation's cost, and what the speedups are against (stored with the verdict)."""
        s, name = ready.setup, ready.target.study
        result = self._study(ready.store, ready.target, ready.executor, ready.observer, ranked)
        extra: dict[str, Any] = {}
        if ready.guide:
            extra["space_from_profile"] = [c.to_json() for c in ready.guide]
        if s.runs.wall_is_cost:
            extra["simulation"] = cost(ready.store, name, s.runs.nodes, self.ui)
        extra["reference"] = reference_words(s.inst, s.library, s.base)
        if s.layer is not None:
            extra["layer"] = s.layer.to_json()
        _with_the_verdict(ready.store, name, reference=extra["reference"])
        return result, extra

    def _said(self, ready: Ready, result: TuneResult, report: TwinReport) -> TwinReport:
        """The twin's report with what the real runs said, stored with the verdict and told."""
        acc = result.acceptance
        report = report.decided(list(acc.candidates if acc else []))
        if result.default_value:
            report = replace(report, defaults_real=result.default_value)
        why = report.why_nothing()
        if why is not None and result.acceptance is not None:
            result.acceptance = replace(result.acceptance, reason=why)
        _with_the_verdict(ready.store, ready.target.study, reason=why,
                          twin_report=report.to_json())  # fmt: skip
        near = report.fidelity()
        for line in report.lines():
            if line == near and not report.faithful:
                self.ui.warn(line)
            else:
                self.ui.info(line)
        return report

    def _study(self, store: Store, target: Target, executor: Executor, observer: StudyObserver,
               ranked: Sequence[Mapping[str, Value]] | None) -> TuneResult:  # fmt: skip
        self.ui.info(
            f"study [bold]{target.study}[/bold] in {shown_url(store.url)} (re-run to resume; "
            "run the same command elsewhere to add a worker)"
        )
        workers = Workers.on(store, target.study)
        return tune(target, store.optuna, executor, self.ui, workers, observer, ranked)

    def _record(self, ready: Ready) -> Recorded:
        """``tune --record FILE``: the balanced sweep (``tune.record``), written atomically."""
        plan, inst = ready.setup.plan, ready.setup.inst
        assert plan.record is not None
        done = record(ready.executor, ready.space, plan.repeats, self.ui, seed=plan.seed,
                      timeout=plan.timeout, reference_timeout=plan.reference_timeout)  # fmt: skip
        data = done.to_json(
            description=shlex.join(ready.setup.command),
            installation=inst.to_json(),
            metric=plan.metric,
            recorded=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            features=features_of(done.profile) if done.profile is not None else None,
        )
        write_atomic(plan.record, json.dumps(data, indent=1) + "\n")
        failed = done.failed()
        self.ui.info(f"{len(done.values)} configurations x {plan.repeats} runs and the "
                     f"defaults ({len(done.order)} runs, {len(failed)} failed) -> "
                     f"{plan.record}")  # fmt: skip
        return Recorded(plan.record, len(done.order), len(failed), len(done.values))


def _report_inherited_env(ui: UI, knobs: Sequence[Knob]) -> None:
    tuned = {k.env for k in knobs}
    for name, value in inherited_mpi_env().items():
        how = "overridden (under tuning)" if name in tuned else "kept in the baseline"
        ui.info(f"environment: {name}={value} {how}")


def _with_the_verdict(store: Store, name: str, reason: str | None = None, **items: Any) -> None:
    """What the report says beside the study's verdict, stored with it: ``reference``
    (what every speedup is against), ``twin_report`` (the simulation's ranking and scaling,
    a ``TwinReport``); ``reason``: why the verdict is what it is, where the service knows
    better."""
    from commtune.study import acceptance_of, set_acceptance

    study = optuna.load_study(study_name=name, storage=store.optuna)
    acc = acceptance_of(study)
    if acc is None:
        return
    new = replace(acc, reason=reason if reason is not None else acc.reason,
                  notes=replace(acc.notes, **items))  # fmt: skip
    if new != acc:
        set_acceptance(study, new)
