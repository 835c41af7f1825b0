"""The tuning service: one :class:`~commtune.study.Plan` and the user's command in, a finished
study (or a recorded table) out, with no argparse in between: the command line, a script
and a test call it alike.

:func:`check` refuses a plan that cannot work before anything runs or is written.
:class:`Tuning` then resolves the MPI installation, builds libcommtune, chooses the space
(named knobs and presets, or the reference's first run profiled: ``profile.guided``),
probes its values, opens the storage with the platform recorded, builds the executor and
the observer with its hint sources, and runs ``tune.tune`` (or ``tune.record``, or a
replay of a recorded table). What it tells the user goes to the ``Progress`` it is given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import optuna

from commtune import stats
from commtune.errors import UsageError
from commtune.knobs import (
    Dimension,
    Knob,
    KnobStatus,
    Space,
    build_space,
    catalog_statuses,
    discover,
    enumerators,
    installed_knobs,
    space_from_json,
)
from commtune.launch import Launcher, launcher_for
from commtune.mpi import (
    Installation,
    Lack,
    MPISpec,
    MPIVendor,
    Vendor,
    launch_files,
    resolve_command,
)
from commtune.platform import on_testbed, slurm_node_type
from commtune.predict import Predictor, features_of, model_store
from commtune.profile import Choice, guided, one_sided
from commtune.report import UI, guided_table
from commtune.service._common import default_study_name, load_study, open_store, probe, profiling
from commtune.service._hints import HintSource, Knowledge, Prediction, Sampled
from commtune.service._observer import StudyObserver
from commtune.store import Store, backend, normalize_url, shown_url
from commtune.strategies import get_strategy
from commtune.study import DEFAULTS, Plan, Scale, StudyView, spec_of
from commtune.trial import (
    Executor,
    LocalExecutor,
    Objective,
    Primed,
    ReplayExecutor,
    RunRecord,
    SlurmJobs,
    profiled,
    run_process,
)
from commtune.tune import (
    CONTENDERS,
    Target,
    TuneResult,
    Workers,
    inherited_mpi_env,
    record,
    tune,
)
from commtune.util import write_atomic


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


def check(plan: Plan) -> Plan:
    """``plan`` as the service runs it (its storage URL normalised), or a UsageError naming
    what cannot work, before anything runs or is written."""
    get_strategy(plan.strategy, dict(plan.strategy_options))  # a bad name or option
    twice = next((m for i, m in enumerate(plan.metrics) if m in plan.metrics[:i]), None)
    if twice is not None:
        raise UsageError(f"--metric {twice} is given twice")
    objectives = [Objective.parse(m) for m in plan.metrics]
    if plan.record and plan.replay:
        raise UsageError("--record and --replay: one or the other")
    if plan.record:
        _writable(plan.record)
    without = not plan.interposer or plan.replay
    if any(o.needs_profile for o in objectives[1:]) and without:
        raise UsageError("a profile: --metric needs the interposer (libcommtune)")
    if objectives[0].needs_profile and without:
        raise UsageError(f"--metric {plan.metric} needs the interposer (libcommtune)")
    if plan.twin is not None:
        clash = next((f for f, on in (("--as", plan.as_library), ("--gate strict", plan.gate
                      == "strict"), ("--record", plan.record), ("--replay", plan.replay))
                      if on), None)  # fmt: skip
        if clash:
            raise UsageError(f"--twin and {clash}: the twin's simulated study chooses the space "
                             "and the library, and --gate risk's rule decides")  # fmt: skip
    if plan.gate == "risk":  # the verdict's first pass (commtune.rule), a search run unless twinned
        from commtune import rule

        deciding = 2 * rule.fewest(plan.risk)
        alone = plan.twin is not None and not (plan.knobs or plan.presets)
        searching = 0 if alone else 1  # a twin alone: the real runs only decide
        what = f"a first pass of the verdict at --risk {plan.risk:g} {deciding}"
    else:
        deciding, searching = plan.confirm * 2, 1  # one candidate and the default
        what = f"the confirmation's first rounds {deciding}"
    least = plan.repeats + deciding + searching
    if plan.max_runs is not None and plan.max_runs < least:
        raise UsageError(
            f"--max-runs {plan.max_runs} leaves no run to decide: the reference takes "
            f"{plan.repeats}, {what}; at least {least}"
        )
    real = [v.value for v in Vendor if not v.impl.simulated]
    if plan.as_library is not None and plan.as_library not in real:
        raise UsageError(f"--as {plan.as_library}: one of {', '.join(real)}")
    if plan.strategy == "predict" and not plan.interposer:
        raise UsageError("--strategy predict needs the interposer (the reference's profile)")
    if (plan.trains or plan.train_from) and plan.strategy != "model":
        raise UsageError("--train and --train-from are for --strategy model (its training)")
    if plan.sbatch is not None and any(
        a.startswith(("--wait", "--parsable", "--output", "--error")) for a in plan.sbatch
    ):
        raise UsageError("--sbatch: commtune sets --wait, --parsable, --output and --error itself")
    return replace(plan, storage=normalize_url(plan.storage))


def _writable(path: str) -> None:
    """A file can be written there (checked before hours of runs, not after)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"--record {path}: no directory {directory}")
    if not os.access(directory, os.W_OK):
        raise UsageError(f"--record {path}: {directory} is not writable")


def _as_library(plan: Plan, inst: Installation) -> MPIVendor | None:
    """The library a study is tuned as (``--as``), checked against the installation that
    runs the command: only a simulator with a port of that library's decision stands for it."""
    if plan.as_library is None:
        return None
    library = Vendor(plan.as_library).impl
    if inst.impl.decides_as(library) is None:
        raise UsageError(f"--as {plan.as_library}: {inst.describe()} cannot stand for "
                         f"{library.title} (a simulated cluster with a port of its decision "
                         "can)")  # fmt: skip
    return library


def _space_as(space: Space, inst: Installation, library: MPIVendor) -> Space:
    """``space`` as ``library`` has it: each knob restricted to the values that stand
    faithfully for one of its choices, the others left out; UsageError if none is left."""
    dims = []
    for dim in space.dimensions:
        values = inst.impl.values_as(library, dim.knob.name, [str(v) for v in dim.candidates()])
        if len(values) > 1:
            dims.append(replace(dim, values=values))
    if not dims:
        raise NothingFaithful(f"--as {library.vendor.value}: none of {', '.join(space.names)} "
                              f"has an algorithm of {library.title} that {inst.impl.title} "
                              "models faithfully")  # fmt: skip
    return Space(space.library, tuple(dims))


class NothingFaithful(UsageError):
    """A space tuned as a library (``--as``) keeps no knob: none of its knobs has a choice
    of that library the simulator models faithfully. A twin ranks nothing then."""


def _words(variables: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in variables.items())


class Tuning:
    """The tuning service for one plan that :func:`check` returned (it is not checked
    again)."""

    def __init__(self, plan: Plan, ui: UI) -> None:
        self.plan = plan
        self.ui = ui
        self.inner = False  # a twin's simulated study: its answer is the twin's ranking
        self.objective = Objective.parse(self.plan.metric)
        self.secondary = tuple(Objective.parse(m) for m in self.plan.objectives)

    # -- the entry points ---------------------------------------------------------------------
    def run(self, command: list[str] | None) -> Outcome | Recorded:
        """Tune ``command`` (or record it, or replay the plan's table)."""
        if self.plan.replay:
            return self.replay()
        if not command:
            raise UsageError("missing '--' before the command to tune, e.g. -- mpirun -np 4 ./app")
        plan, ui = self.plan, self.ui
        scale = Scale.parse(command, plan.scales, plan.trains, plan.train_from)
        if scale is not None:
            command = scale.command()
        inst = resolve_command(command, plan.mpi)
        statuses = installed_knobs(inst)
        twin: dict[str, Any] | None = None
        if plan.twin is not None:
            plan, twin = self._twin(plan, inst, command, statuses)
        library = _as_library(plan, inst)
        base = {} if library is None else inst.impl.decides_as(library) or {}
        simulated = launch_files(command) if inst.impl.simulated else None
        if simulated is not None:
            plan = self._simulated(plan, inst.impl)
            if plan.by_wall_time and not plan.record:
                plan = self._budgeted(plan, inst, command, base)
        space = build_space(statuses, inst.vendor.value, plan.knobs, plan.presets,
                            discover(inst), inst.impl.env_name,
                            plan.across_nodes or on_testbed())  # fmt: skip
        launcher = launcher_for(inst, plan.through)
        predictor = None
        if plan.strategy == "predict":
            predictor = Predictor.load(model_store(plan.storage, inst), inst, False, ui,
                                       simulated.cluster if simulated else None)  # fmt: skip
        if scale is not None and scale.train_from:
            _check_training_study(plan.storage, scale, space)
        runner = SlurmJobs(plan.sbatch) if plan.sbatch is not None else run_process
        # each run its own job: rank 0's node writes the profile where the tuner reads it
        jobs_dir = str(runner.workdir) if isinstance(runner, SlurmJobs) else None
        guide: list[Choice] = []
        look: RunRecord | None = None  # the profiled run that chose the space
        if not (plan.knobs or plan.presets or plan.record) and plan.interposer and scale is None:
            name = plan.study or default_study_name(command, inst.vendor.value, space)
            plan = replace(plan, study=name)
            first = LocalExecutor(launcher, command, [], self.objective, runner=runner,
                                  profiling=profiling(inst, shared=jobs_dir),
                                  secondary=self.secondary)  # fmt: skip
            space, guide, look = self._guided_space(plan, inst, statuses, first, space)
        elif not (plan.knobs or plan.presets or plan.record) and simulated and scale is None:
            name = plan.study or default_study_name(command, inst.vendor.value, space)
            plan = replace(plan, study=name)
            traced = profiled(LocalExecutor(launcher, command, [], self.objective,
                                            runner=runner, secondary=self.secondary,
                                            variables=base))  # fmt: skip
            space, guide, look = self._guided_space(plan, inst, statuses, traced, space)
        if library is not None:
            space = _space_as(space, inst, library)
        # Everything is valid: from here on, the storage is written.
        nodes = simulated.describe() if simulated else _slurm_nodes(plan, command)
        store, platform = open_store(plan.storage, inst, nodes)
        if simulated is not None:
            ui.info(f"{simulated.describe()}: {inst.impl.run_value_note}")
        if library is not None:
            ui.info(f"tuned as {library.title}: the reference is {library.title}'s own decision "
                    f"as {inst.impl.title} ports it ({_words(base)}); every speedup is against "
                    "it")  # fmt: skip
        if inst.impl.probes_values:
            space = probe(space, launcher, store, platform, ui)
        ui.info(f"{inst.describe()}; tuning {space.size()} configurations of "
                f"{', '.join(space.names)}")  # fmt: skip
        knobs = [d.knob for d in space.dimensions]
        _report_inherited_env(ui, knobs)
        executor: Executor = LocalExecutor(
            launcher,
            command,
            knobs,
            self.objective,
            profiling=profiling(inst, shared=jobs_dir) if plan.interposer else None,
            enumerators=enumerators(inst) if plan.interposer else None,
            secondary=self.secondary,
            runner=runner,
            variables=base,
        )
        if look is not None:
            executor = Primed(executor, look)
        if plan.record:
            return self._record(executor, space, inst, command)
        name = plan.study or default_study_name(command, inst.vendor.value, space)
        target = Target.of(name, command, space, plan, platform, inst.to_json(), scale)
        sources: list[HintSource] = []
        if predictor is not None:
            sources.append(Prediction(predictor, ui))
        if plan.knowledge:
            sources.append(Knowledge(store, name, platform, inst.vendor.value, ui))
        sources.append(Sampled(store, platform))
        observer = StudyObserver(store, ui, name, space, profiles=plan.interposer,
                                 sources=sources)  # fmt: skip
        result = self._study(store, target, executor, observer)
        extra: dict[str, Any] = (
            {"space_from_profile": [c.to_json() for c in guide]} if guide else {}
        )
        if simulated is not None:
            extra["simulation"] = self._cost(store, name, simulated.describe())
        extra["reference"] = (
            f"{library.title}'s own decision ({_words(base)})"
            if library is not None
            else f"{inst.impl.title}'s defaults"
        )
        _with_the_verdict(store, name, reference=extra["reference"])
        if library is not None and not self.inner:
            extra["as"] = self._as_proposal(store, name, result, inst, library, base, command)
        if twin is not None:
            extra["twin"] = _twin_against(twin, result)
            if extra["twin"].get("defaults_simulated") is not None and result.default_value:
                extra["twin"] |= _fidelity(extra["twin"]["defaults_simulated"],
                                           result.default_value)  # fmt: skip
            _with_the_verdict(store, name, reason=_nothing_ranked(result, extra["twin"]),
                              twin=extra["twin"])  # fmt: skip
            if extra["twin"].get("faithful") is False:
                ui.warn(extra["twin"]["fidelity"])
            for line in _twin_lines(extra["twin"]) + _scaling_lines(extra["twin"]):
                ui.info(line)
        return Outcome(result, space, inst.vendor.value, command, extra)

    def _twin(
        self,
        plan: Plan,
        inst: Installation,
        command: Sequence[str],
        statuses: Mapping[str, KnobStatus],
    ) -> tuple[Plan, dict[str, Any]]:
        """The simulated study of ``plan.twin``, tuned as ``inst``'s library on its
        simulated cluster within ``plan.sim_budget`` seconds of wall time, and the plan of
        the real study: the configurations it found faster than the library's own decision,
        best first, in the real library's settings, for the verdict to test in that order."""
        from commtune.knobs import load_catalog

        twin = list(plan.twin or ())
        if inst.impl.simulated:
            raise UsageError("--twin: the line after '--' is the real launch (mpirun, mpiexec, "
                             "srun); the simulated one goes in --twin")  # fmt: skip
        sim = resolve_command(twin, None)
        if not sim.impl.simulated:
            raise UsageError(f"--twin {twin[0]}: not a simulator's launch line; give the "
                             "simulator's line of the program built with its compiler "
                             "wrapper")  # fmt: skip
        if sim.impl.decides_as(inst.impl) is None:
            raise UsageError(f"--twin: {sim.impl.title} has no port of {inst.impl.title}'s "
                             "decision to tune against")  # fmt: skip
        program = os.path.basename(launch_files(twin).program or "program")  # checked first
        # the program's own timer reads simulated time under the simulator: the defaults'
        # simulated and real values in one unit, how far this simulation stands from the
        # machine (a wall time or a profile field has no simulated counterpart)
        own = Objective.parse(plan.metric)
        start = time.perf_counter()  # --sim-budget bounds all of it: timed run, search, scaling
        timed = _timed_run(launcher_for(sim), twin, sim, sim.impl.decides_as(inst.impl) or {},
                           plan, "--twin: the simulated program did not run",
                           also=(own,) if own.pattern is not None else ())  # fmt: skip
        assert timed is not None
        wall, first = timed
        # the search gets SEARCH_SHARE of the budget the timed run left, the scaling the rest
        runs = sim_runs(wall, max(0.0, plan.sim_budget - wall) * SEARCH_SHARE)
        digest = hashlib.sha256(json.dumps([twin, list(command)]).encode()).hexdigest()[:6]
        name = f"{plan.study}-twin" if plan.study else f"{program}-twin-{digest}"
        self.ui.info(f"the simulated twin: {wall:.1f} s of wall time a run here; its search "
                     f"gets {runs} runs (--sim-budget {plan.sim_budget:g} s, the scaling "
                     f"what is left), tuned as {inst.impl.title}")  # fmt: skip
        sub = Tuning(_simulated_plan(plan, inst.vendor.value, name, runs), self.ui)
        sub.inner = True
        said: dict[str, Any] = {
            "study": name, "runs": 0, "wall_per_run": wall, "ranking": [], "scaling": [],
            "defaults_simulated": first.secondary.get(own.spec), "metric": plan.metric,
            "reference": f"{inst.impl.title}'s own decision as {sim.impl.title} ports it",
            "from_simulation": {}, "on_this_machine": [], "left_to_simulation": []}  # fmt: skip
        try:
            sub.run(twin)
        except NothingFaithful as exc:  # the program's profile calls for nothing it models
            said["nothing"] = str(exc).split(": ", 1)[1]
            self.ui.warn(f"the simulated twin ranks nothing: {said['nothing']}; the real runs "
                         "measure the defaults")  # fmt: skip
            return replace(plan, ranked=(), knobs=()), said
        _, study = load_study(plan.storage, name)
        view = StudyView(study)
        ref = view.reference()
        catalog = load_catalog(inst.vendor.value)
        available = {n for n, st in statuses.items() if st.available}
        ranking: list[dict[str, Any]] = []
        seen: set[str] = set()
        base = ref.value if ref is not None else None
        for r in sorted((r for r in view.known().values() if r.value is not None and r.config),
                        key=lambda r: r.value):  # type: ignore[arg-type,return-value]  # fmt: skip
            settings = sim.impl.settings_as(inst.impl, {k: str(v) for k, v in r.config.items()})
            if not settings or base is None or r.value is None:
                continue
            speedup = base / r.value
            key = json.dumps(settings, sort_keys=True)
            if speedup < 1 + plan.min_gain or key in seen:
                continue
            if any(k not in catalog or k not in available for k in settings):
                continue  # a knob this installation does not have
            seen.add(key)
            config = {k: catalog[k].parse(v) for k, v in settings.items()}
            ranking.append({"settings": settings, "config": config, "simulated": speedup,
                            "sim": {k: str(v) for k, v in r.config.items()}})  # fmt: skip
        said |= {"runs": len(view.ran()), "ranking": ranking}
        said["scaling"] = self._scaling(
            twin,
            sim,
            sim.impl.decides_as(inst.impl) or {},
            ranking[0]["sim"] if ranking else None,
            wall,
            plan,
            plan.sim_budget - (time.perf_counter() - start),
        )
        # the real library's knobs of every operation the simulated search tuned
        ops = {k.removeprefix(sim.impl.env_prefix) for r in view.known().values()
               for k in r.config}  # fmt: skip
        knobs = {inst.impl.algorithm_knob(op) for op in ops if op in inst.impl.smpi_ports}
        knobs |= {k for r in ranking for k in r["settings"]}
        ranked = tuple(r["config"] for r in ranking[:CONTENDERS])
        usable = tuple(sorted(k for k in knobs if k in catalog and k in available))
        # the knobs asked for that the simulation does not model: the real machine's search
        modeled = {inst.impl.algorithm_knob(op) for op in inst.impl.smpi_ports}
        asked = (build_space(dict(statuses), inst.vendor.value, plan.knobs, plan.presets,
                             discover(inst), inst.impl.env_name).dimensions
                 if plan.knobs or plan.presets else ())  # fmt: skip
        machine = [d for d in asked if d.knob.name not in modeled]
        pinned = dict(ranking[0]["settings"]) if ranking and machine else {}
        said |= {
            "from_simulation": pinned if machine else {},
            "on_this_machine": [d.knob.name for d in machine],
            "left_to_simulation": [d.knob.name for d in asked if d.knob.name in modeled],
        }
        if not machine:
            return replace(plan, ranked=ranked, knobs=usable), said
        # searched on the real machine as any study, the simulation's best pinned
        specs = tuple(f"{k}={v}" for k, v in pinned.items()) + tuple(
            d.knob.name
            if d.values is None
            else f"{d.knob.name}={','.join(d.knob.format(v) for v in d.values)}"
            for d in machine
        )
        return replace(plan, twin=None, ranked=(), knobs=specs, presets=()), said

    def _scaling(self, line: Sequence[str], sim: Installation, base: Mapping[str, str],
                 tuned: Mapping[str, str] | None, wall: float, plan: Plan,
                 budget: float) -> list[dict[str, Any]]:  # fmt: skip
        """The program's simulated time at each of :data:`SCALES` times the twin's ranks,
        on its cluster grown as much (``mpi.grown``): with the library's own decision, and
        with the simulation's best (``tuned``; None: it found nothing faster). A size whose
        runs would take more than the ``budget`` seconds left of ``--sim-budget`` is not run,
        and says so."""
        import tempfile

        from commtune.mpi import grown, launch_files

        rows: list[dict[str, Any]] = []
        left, each = budget, wall
        objective = Objective.parse(sim.impl.run_value)
        with tempfile.TemporaryDirectory(prefix="commtune-grown-") as tmp, \
                self.ui.progress("the program at larger scales (simulated)",
                                 len(SCALES)) as bar:  # fmt: skip
            for factor in SCALES:
                cost = each * factor * (1 if tuned is None else 2)
                row: dict[str, Any] = {"factor": factor, "ranks": None, "defaults": None,
                                       "tuned": None, "failure": None}  # fmt: skip
                try:
                    command = grown(line, factor, os.path.join(tmp, str(factor)))
                except UsageError as exc:
                    row["failure"] = str(exc)
                    rows.append(row)
                    break
                row["ranks"] = launch_files(command).ranks  # -np or -n
                if cost > left:
                    row["failure"] = (f"not run: about {cost:.0f} s of wall time here, "
                                      f"over the {max(0.0, left):.0f} s left of "
                                      "--sim-budget")  # fmt: skip
                    rows.append(row)
                    break
                start = time.perf_counter()
                for key, settings in (("defaults", {}), ("tuned", tuned)):
                    if settings is None:
                        continue
                    run = LocalExecutor(launcher_for(sim), command, [], objective,
                                        variables={**base, **settings}).run(
                                            None, plan.reference_timeout)  # fmt: skip
                    row[key] = run.value
                    if run.value is None:
                        row["failure"] = run.failure
                spent = time.perf_counter() - start
                left -= spent
                each = spent / max(1, factor * (1 if tuned is None else 2))
                rows.append(row)
                bar.advance()
        return rows

    def _as_proposal(self, store: Store, name: str, result: TuneResult, inst: Installation,
                     library: MPIVendor, base: Mapping[str, str],
                     command: Sequence[str]) -> dict[str, Any]:  # fmt: skip
        """The answer of a study tuned as ``library``, in that library's own settings: a
        study of its own holding them as a proposal (no run of the real library has measured
        them), which ``commtune check`` measures on the real machine and ``export`` writes
        in the library's formats."""
        from commtune.knobs import apply, load_catalog
        from commtune.study import (
            PROPOSAL,
            Acceptance,
            Source,
            StudySpec,
            acceptance_of,
            save_result_study,
            set_acceptance,
        )

        acc = result.acceptance
        out: dict[str, Any] = {"library": library.vendor.value, "reference": _words(base)}
        if acc is not None and acc.accepted:
            # the simulated study's own answer runs under the decision it was tuned against
            study = optuna.load_study(study_name=name, storage=store.optuna)
            stored = acceptance_of(study)
            if stored is not None and stored.accepted:
                stored.env = {**base, **stored.env}
                set_acceptance(study, stored)
        if acc is None or not acc.accepted:
            self.ui.info(f"as {library.title}: its own decision stays (nothing to hand over)")
            return {**out, "study": None, "settings": {}}
        settings = inst.impl.settings_as(library, {k: str(v) for k, v in acc.params.items()})
        catalog = load_catalog(library.vendor.value)
        knobs = [catalog[k] for k in settings]
        env = apply(knobs, settings, library).env
        proposal = f"{name}-as-{library.vendor.value}"
        spec = StudySpec(["commtune", "tune", "--as", library.vendor.value],
                         library.vendor.value, [], "wall", 0)  # fmt: skip
        verdict = Acceptance(
            Source.SAMPLE, dict(settings), False,
            f"tuned as {library.title} on a simulated cluster (study {name}: {acc.speedup:.3g}x "
            f"against its own decision, simulated), not measured on a real machine",
            env=env, extra={PROPOSAL: True, "simulated_study": name},
        )  # fmt: skip
        save_result_study(store.optuna, proposal, spec, verdict)
        fmt, file = library.settings_file
        storage = "" if self.plan.storage == DEFAULTS.storage else f" --storage {self.plan.storage}"
        launch = launch_files(command)
        ranks = f" -np {launch.ranks}" if launch.ranks else ""
        rest = list(command)[list(command).index(launch.program) :] if launch.program else []
        program = shlex.join(rest) if rest else "./app"
        self.ui.info(f"as {library.title}: {', '.join(f'{k}={v}' for k, v in settings.items())} "
                     f"(study {proposal}, a proposal: no real run has measured it); next, "
                     f"with the program built by {library.title}'s compiler wrapper:")  # fmt: skip
        self.ui.command(f"  commtune export {proposal}{storage} --proposal --format {fmt} "
                        f"--output {file}")  # fmt: skip
        self.ui.command(f"  commtune check {proposal}{storage} -- {library.launcher_word}"
                        f"{ranks} {program}")  # fmt: skip
        return {**out, "study": proposal, "settings": settings, "env": env}

    def _cost(self, store: Store, name: str, cluster: str) -> dict[str, Any]:
        """What the study of a simulated cluster cost: the wall time of its simulations
        (its values are simulated time), said and returned for ``--json``."""
        view = StudyView(optuna.load_study(study_name=name, storage=store.optuna))
        walls = [w for r in view.records for w in r.walls()]
        total = sum(walls)
        middle = stats.median(walls) if walls else 0.0
        self.ui.info(f"{cluster}: {len(walls)} simulations took {total:.0f} s of wall time "
                     f"(median {middle:.1f} s each); the values are simulated seconds")  # fmt: skip
        return {"cluster": cluster, "runs": len(walls), "wall_s": total, "wall_median_s": middle}

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
        return Outcome(self._study(store, target, executor, observer), space, library)

    # -- the steps ----------------------------------------------------------------------------
    def _simulated(self, plan: Plan, impl: MPIVendor) -> Plan:
        """The plan of a study of a simulated cluster: where no preloaded library reaches
        its program, none is used, and its value is the installation's (the simulated
        time) unless the user named another, the wall time beside it."""
        if plan.interposer and Lack.PRELOAD in impl.lacks:
            self.ui.info(f"{impl.title}: {Lack.PRELOAD.value}; running without the "
                         "interposer")  # fmt: skip
        metrics = plan.metrics
        if metrics == DEFAULTS.metrics and impl.run_value not in metrics:
            metrics = (impl.run_value, *metrics)
        plan = replace(plan, interposer=False, metrics=metrics)
        self.plan = plan
        self.objective = Objective.parse(plan.metric)
        self.secondary = tuple(Objective.parse(m) for m in plan.objectives)
        return plan

    def _budgeted(self, plan: Plan, inst: Installation, command: Sequence[str],
                  base: Mapping[str, str]) -> Plan:  # fmt: skip
        """The plan of a simulated study whose user bounded neither runs nor trials: as many
        runs as ``plan.sim_budget`` seconds of this machine's wall time buy (one run of the
        reference timed here), at most :data:`MOST_SIM_RUNS`: a space that fits is tried
        whole."""
        timed = _timed_run(launcher_for(inst, plan.through), command, inst, base, plan)
        if timed is None:
            return plan  # the reference's own runs say why
        wall = timed[0]
        runs = sim_runs(wall, plan.sim_budget)
        self.ui.info(f"a simulated run takes {wall:.1f} s of wall time here: the study gets "
                     f"{runs} runs (--sim-budget {plan.sim_budget:g} s, at most "
                     f"{MOST_SIM_RUNS})")  # fmt: skip
        return replace(plan, max_runs=runs, trials=runs, by_wall_time=False)

    def _study(
        self, store: Store, target: Target, executor: Executor, observer: StudyObserver
    ) -> TuneResult:
        self.ui.info(
            f"study [bold]{target.study}[/bold] in {shown_url(store.url)} (re-run to resume; "
            "run the same command elsewhere to add a worker)"
        )
        workers = Workers.on(store, target.study)
        return tune(target, store.optuna, executor, self.ui, workers, observer)

    def _guided_space(
        self,
        plan: Plan,
        inst: Installation,
        statuses: Mapping[str, KnobStatus],
        look: Executor,
        default: Space,
    ) -> tuple[Space, list[Choice], RunRecord | None]:
        """No knob named: the space one profiled run of the defaults (by ``look``) calls for
        (``profile.guided``), each knob with its reason, and that run (the reference's
        first); a study resumed keeps its own space."""
        assert plan.study is not None
        ui = self.ui
        store = Store(plan.storage, create=False) if backend(plan.storage).exists() else None
        if store is not None:
            try:
                study = optuna.load_study(study_name=plan.study, storage=store.optuna)
                knobs = {name: s.knob for name, s in statuses.items()}
                return space_from_json(inst.vendor.value, spec_of(study).space, knobs), [], None
            except KeyError:
                pass  # a new study
        ui.info("no knob named: the reference's first run (profiled) chooses the space")
        run = look.run(None, plan.reference_timeout)
        if run.profile is None or run.value is None:
            ui.warn(f"the profiled run failed ({run.failure or 'no profile'}): the default space")
            return default, [], None
        available = [s.knob for s in statuses.values() if s.available]
        choices = guided(run.profile, available, plan.across_nodes or on_testbed())
        rma = one_sided(run.profile)
        if rma >= 0.05 and not any("rma" in statuses[c.knob].knob.presets for c in choices):
            ui.info(f"one-sided calls are {rma:.0%} of MPI time; {inst.vendor.title}'s catalog "
                    "has no knob of them")  # fmt: skip
        if not choices:
            ui.info("the profile calls for no knob in particular: the default space")
            return default, [], run
        ui.print(guided_table(choices, "the space, from the program's profile"))
        dims = tuple(Dimension(statuses[c.knob].knob) for c in choices)
        return Space(inst.vendor.value, dims), choices, run

    def _record(
        self, executor: Executor, space: Space, inst: Installation, command: Sequence[str]
    ) -> Recorded:
        """``tune --record FILE``: the balanced sweep (``tune.record``), written atomically."""
        plan = self.plan
        assert plan.record is not None
        done = record(executor, space, plan.repeats, self.ui, seed=plan.seed,
                      timeout=plan.timeout, reference_timeout=plan.reference_timeout)  # fmt: skip
        data = done.to_json(
            description=shlex.join(command),
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


def _slurm_nodes(plan: Plan, command: Sequence[str]) -> str | None:
    """The Slurm nodes' type, for the fingerprint, where the runs are Slurm's: each its own
    job (the partition of ``--sbatch``), or steps of the allocation the tuner runs in."""
    if plan.sbatch is not None:
        sbatch = argparse.ArgumentParser(add_help=False)
        sbatch.add_argument("-p", "--partition")
        return slurm_node_type(sbatch.parse_known_args(list(plan.sbatch))[0].partition)
    if os.environ.get("SLURM_JOB_ID") or os.path.basename(command[0]) == "srun":
        return slurm_node_type()
    return None


def _report_inherited_env(ui: UI, knobs: Sequence[Knob]) -> None:
    tuned = {k.env for k in knobs}
    for name, value in inherited_mpi_env().items():
        how = "overridden (under tuning)" if name in tuned else "kept in the baseline"
        ui.info(f"environment: {name}={value} {how}")


def _check_training_study(url: str, scale: Scale, space: Space) -> None:
    """``--train-from STUDY``: it exists in the storage (nothing is created to find out),
    was trained with the same template and scale names, and on these knobs."""
    assert scale.train_from is not None
    try:
        _, other = load_study(url, scale.train_from)
    except UsageError as exc:
        raise UsageError(f"--train-from: {exc}") from None
    spec = spec_of(other)
    theirs = spec.scale
    if theirs is None or not theirs.train:
        raise UsageError(f"--train-from {scale.train_from}: that study has no training runs")
    if theirs.template != scale.template or theirs.target.keys() != scale.target.keys():
        raise UsageError(
            f"--train-from {scale.train_from}: trained with another command template "
            f"({' '.join(theirs.template)})"
        )
    if spec.knob_names() != space.names:
        raise UsageError(f"--train-from {scale.train_from}: trained on other knobs")


SCALES = (1, 4, 16)  # a twin's scaling table: these times the real launch's ranks
MOST_SIM_RUNS = 500  # a simulated search: at most this many runs, whatever its wall-time budget
SEARCH_SHARE = 2 / 3  # a twin's share of --sim-budget for its search (the scaling: the rest)


def _simulated_plan(plan: Plan, library: str, name: str, runs: int) -> Plan:
    """The twin's simulated study: tuned as ``library`` in ``runs`` runs. Its reference runs
    twice: two equal values make it a deterministic study, every other run a
    configuration's (tune._loop.exact_plan), none a control's or a verdict's pair."""
    return replace(plan, twin=None, ranked=(), as_library=library, study=name, max_runs=runs,
                   trials=runs, knobs=(), presets=(), record=None, replay=None, scales=(),
                   trains=(), train_from=None, sbatch=None, metrics=DEFAULTS.metrics,
                   repeats=2, by_wall_time=False, exact=True)  # fmt: skip


def sim_runs(wall: float, budget: float) -> int:
    """The runs of a simulated search that ``budget`` seconds buy at ``wall`` seconds a
    run: at least 3, at most :data:`MOST_SIM_RUNS`."""
    return max(3, min(MOST_SIM_RUNS, int(budget / max(wall, 1e-3))))


def _timed_run(launcher: Launcher, command: Sequence[str], inst: Installation,
               variables: Mapping[str, str], plan: Plan, refuse: str | None = None,
               also: Sequence[Objective] = ()) -> tuple[float, RunRecord] | None:  # fmt: skip
    """The wall time of one run of ``command`` with ``variables`` and the run (``also``: more
    objectives it measures); None where it failed (UsageError starting with ``refuse``, if
    given)."""
    probe = LocalExecutor(launcher, command, [], Objective.parse(inst.impl.run_value),
                          variables=variables, secondary=also)  # fmt: skip
    start = time.perf_counter()
    run = probe.run(None, plan.reference_timeout)
    if run.value is None:
        if refuse is not None:
            raise UsageError(f"{refuse}: {run.failure}")
        return None
    return time.perf_counter() - start, run


def _twin_against(twin: Mapping[str, Any], result: TuneResult) -> dict[str, Any]:
    """The twin's ranking beside what the real runs said of each configuration tested."""
    acc = result.acceptance
    tested = {json.dumps(c["params"], sort_keys=True, default=str): c
              for c in ((acc.extra.get("candidates") or []) if acc else [])}  # fmt: skip
    rows = []
    for i, r in enumerate(twin["ranking"], 1):
        real = tested.get(json.dumps(r["config"], sort_keys=True, default=str))
        rows.append({"rank": i, "settings": r["settings"], "simulated": r["simulated"],
                     "real": real["speedup"] if real else None,
                     "passed": bool(real and real["faster"]),
                     "dropped": real.get("dropped") if real else None})  # fmt: skip
    return {k: v for k, v in twin.items() if k != "ranking"} | {"ranking": rows}


def _twin_lines(twin: Mapping[str, Any]) -> list[str]:
    """The two rankings side by side, as the terminal says them (a simulation far from the
    machine is a warning of its own)."""
    return [*([twin["fidelity"]] if twin.get("faithful") else []), *_ranking_lines(twin)]


FAITHFUL = (0.8, 1.25)  # simulated over real of the defaults: a simulation near the machine


def _fidelity(sim: float, real: float) -> dict[str, Any]:
    """How far the simulation stands from this machine on the program's defaults, by its own
    timer (``sim`` simulated, ``real`` the real runs' median): ``defaults_real``, the line
    that says it (``fidelity``) and whether the two are within :data:`FAITHFUL` of each
    other (``faithful``)."""
    ratio = sim / real
    faithful = FAITHFUL[0] <= ratio <= FAITHFUL[1]
    line = (f"the defaults by the program's own timer: simulated {sim:.4g}, real {real:.4g} "
            f"({ratio:.2f}x)")  # fmt: skip
    if not faithful:
        line += (
            ": the simulation stands far from this machine on this program, its ranking "
            "a guess here (calibrate the platform on this machine: commtune calibrate)"
        )
    return {"defaults_real": real, "fidelity": line, "faithful": faithful}


def _ranking_lines(twin: Mapping[str, Any]) -> list[str]:
    """The simulation's ranking beside what the real runs said of it."""
    if twin.get("nothing"):
        return [f"the simulation ranked nothing ({twin['nothing']}): the real runs measured "
                "the defaults only"]  # fmt: skip
    if not twin["ranking"]:
        only = ("searched its knobs alone" if twin.get("on_this_machine") else
                "measured the defaults only")  # fmt: skip
        return [f"the simulation ({twin['runs']} runs, study {twin['study']}) found nothing "
                f"faster than {twin['reference']}: the real runs {only}",
                *_origin_lines(twin)]  # fmt: skip
    lines = [f"the simulation's ranking (study {twin['study']}, {twin['runs']} runs, against "
             f"{twin['reference']}) and what the real runs said:"]  # fmt: skip
    lines += _origin_lines(twin)
    for r in twin["ranking"]:
        settings = ", ".join(f"{k}={v}" for k, v in r["settings"].items())
        real = ("not run" if r["real"] is None else
                f"real {r['real']:.3g}x" + (", passed" if r["passed"] else
                                            f", {r['dropped'] or 'not passed'}"))  # fmt: skip
        lines.append(f"  #{r['rank']} {settings}: simulated {r['simulated']:.3g}x, {real}")
    return lines


def _scaling_lines(twin: Mapping[str, Any]) -> list[str]:
    """The program's simulated time at larger scales, as the terminal says it."""
    rows = twin.get("scaling") or []
    if not rows:
        return []
    tuned = bool(twin.get("ranking"))  # a #1 was run beside (its runs may have failed)
    lines = ["the program as it grows (simulated time, the library's own decision"
             + (" -> the simulation's #1):" if tuned else "; the simulation found nothing "
                "faster):")]  # fmt: skip
    for r in rows:
        size = f"  {r['ranks']} ranks (x{r['factor']})" if r["ranks"] else f"  x{r['factor']}"
        if r["defaults"] is None:
            lines.append(f"{size}: {r['failure']}")
            continue
        said = f"{size}: {r['defaults']:.4g} s"
        if r["tuned"] is not None:
            said += f" -> {r['tuned']:.4g} s ({r['defaults'] / r['tuned']:.3g}x)"
        elif tuned:
            said += f" -> failed: {r['failure']}"
        lines.append(said)
    return lines


def _origin_lines(twin: Mapping[str, Any]) -> list[str]:
    """Which knobs came from the simulation and which the real machine searched."""
    lines = []
    if twin.get("from_simulation"):
        lines.append("  from the simulation (its #1, pinned in every real run but the "
                     f"defaults'): {_words(twin['from_simulation'])}")  # fmt: skip
    if twin.get("on_this_machine"):
        lines.append("  searched on this machine (the simulation does not model them): "
                     f"{', '.join(twin['on_this_machine'])}")  # fmt: skip
    if twin.get("left_to_simulation"):
        lines.append("  asked for and modeled, so the simulation's: "
                     f"{', '.join(twin['left_to_simulation'])}")  # fmt: skip
    return lines


def _nothing_ranked(result: TuneResult, twin: Mapping[str, Any]) -> str | None:
    """Where the twin had nothing it models to search, the verdict's reason (not "found no
    configuration faster"), set on ``result``; else None."""
    if not twin.get("nothing") or result.acceptance is None:
        return None
    why = (
        f"the simulation ranked nothing ({twin['nothing']}): the real runs measured the "
        "defaults only"
    )
    result.acceptance = replace(result.acceptance, reason=why)
    return why


def _with_the_verdict(store: Store, name: str, reason: str | None = None, **items: Any) -> None:
    """What the report says beside the study's verdict, stored with it: ``reference``
    (what every speedup is against), ``twin`` (the simulation's ranking and scaling);
    ``reason``: why the verdict is what it is, where the service knows better."""
    from commtune.study import acceptance_of, set_acceptance

    study = optuna.load_study(study_name=name, storage=store.optuna)
    acc = acceptance_of(study)
    if acc is None:
        return
    new = replace(acc, reason=reason if reason is not None else acc.reason,
                  extra={**acc.extra, **items})  # fmt: skip
    if new != acc:
        set_acceptance(study, new)
