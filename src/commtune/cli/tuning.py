"""``commtune tune`` and ``commtune demo``: a study of the user's command (or the bundled
demo app) from the command line to the result table."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from commtune.cli._common import (
    Command,
    add_json,
    add_mpi,
    add_storage,
    default_storage,
    default_study_name,
    need_command,
    nonnegative_int,
    open_store,
    positive,
    print_json,
    probe,
    profiling,
)
from commtune.errors import UsageError
from commtune.knobs import PRESETS
from commtune.knobs import enumerators as knob_enumerators
from commtune.mpi import Vendor, installation_of
from commtune.study import DEFAULTS, Plan, default_repeats
from commtune.tune import Observer

if TYPE_CHECKING:
    from pathlib import Path

    import optuna

    from commtune.knobs import Knob, KnobStatus, Space, Value
    from commtune.mpi import Installation
    from commtune.predict import Predictor
    from commtune.profile import Choice, Profile
    from commtune.report import UI
    from commtune.store import Store
    from commtune.study import Scale, TrialRecord
    from commtune.trial import Executor, Objective, RunRecord
    from commtune.tune import TuneResult, TuneSettings

OBJECTIVES = ("median", "mean", "p90")  # stats.STATISTICS, without importing numpy for --help
DEMO_ITERATIONS = 1000
DEMO_TRIALS = 16
DEMO_MAX_RUNS = 40  # the demo's verdict, confirmation included, in at most 40 runs
DEMO_METRIC = r"regex:time ([0-9.eE+-]+) s"


def _strategy_help() -> str:
    from commtune.strategies import STRATEGIES

    return " | ".join(STRATEGIES) + " (default tpe)"


def _add_tune_options(p: argparse.ArgumentParser, demo: bool) -> None:
    add_mpi(p)
    p.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME[=V1,V2|...]",
        help="tune this knob (optionally only these values); repeatable",
    )
    p.add_argument(
        "--preset",
        action="append",
        default=[],
        choices=PRESETS,
        help="tune a group of knobs; repeatable",
    )
    p.add_argument("--strategy", default=DEFAULTS.strategy, help=_strategy_help())
    p.add_argument(
        "--strategy-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the strategy, e.g. population=12 for ga; repeatable",
    )
    p.add_argument(
        "--trials",
        type=positive(int),
        default=DEMO_TRIALS if demo else DEFAULTS.trials,
        help="trials in the study, the reference included",
    )
    p.add_argument(
        "--repeats",
        type=positive(int),
        help=f"most runs per configuration (default {DEFAULTS.repeats}; 2 where --max-runs "
        "cannot give every trial 3): raced, a configuration clearly slower than the best so "
        "far stops after one",
    )
    p.add_argument(
        "--fixed-repeats",
        action="store_true",
        help="give every configuration all --repeats runs (no racing)",
    )
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=DEFAULTS.statistic,
        help="statistic of a configuration's runs: median (default), mean (what throughput "
        "follows) or p90 (penalises a heavy tail)",
    )
    p.add_argument(
        "--max-runs",
        type=positive(int),
        default=DEMO_MAX_RUNS if demo else None,
        help="bound on every run of the study (controls and confirmation included)"
        + (f"; default {DEMO_MAX_RUNS}" if demo else ""),
    )
    p.add_argument(
        "--timeout",
        type=positive(float),
        help="seconds per run (default: 5x the reference's median, at least 5)",
    )
    p.add_argument(
        "--reference-timeout",
        type=positive(float),
        default=DEFAULTS.reference_timeout,
        help=f"seconds per run of the reference (default {DEFAULTS.reference_timeout:g})",
    )
    p.add_argument(
        "--confirm",
        type=nonnegative_int,
        default=DEFAULTS.confirm,
        help="first rounds of the confirmation: the best configurations and the default "
        "once each per round, more rounds while undecided, up to 3x (0: skip)",
    )
    p.add_argument(
        "--top",
        type=positive(int),
        default=DEFAULTS.top,
        help=f"configurations the confirmation runs against the default (default {DEFAULTS.top})",
    )
    p.add_argument(
        "--metric",
        action="append",
        default=None,
        help="'wall' (default), 'regex:PATTERN' (first group of the last match) or "
        "'profile:FIELD' (a field of the interposer's profile, e.g. profile:mpi_time); "
        "given again, more objectives (e.g. --metric wall --metric profile:memory_peak): "
        "the first is searched and confirmed, the others are measured in every run, "
        "compared in the confirmation and shown with the Pareto front",
    )
    p.set_defaults(default_metric=DEMO_METRIC if demo else "wall")
    p.add_argument(
        "--no-interposer",
        action="store_true",
        help="do not preload libcommtune (no profiles, no check that knobs took)",
    )
    p.add_argument(
        "--no-knowledge",
        action="store_true",
        help="do not start from what earlier studies in the storage found on this platform",
    )
    p.add_argument("--seed", type=int, help="seed of the strategy (same seed, same trials)")
    p.add_argument("--study", help="study name (same name: resume)")
    add_json(p)
    add_storage(p)


def _add_tune(p: argparse.ArgumentParser) -> None:
    _add_tune_options(p, demo=False)
    p.add_argument(
        "--scale",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the command is a template: {NAME} in it becomes VALUE, the scale tuned at "
        "(e.g. --scale size=1M -- mpirun -np 2 ./kernel -n {size}); repeatable",
    )
    p.add_argument(
        "--train",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="--strategy model: train at these values of a --scale first (every combination "
        "of them), then predict the target; repeatable",
    )
    p.add_argument(
        "--train-from",
        metavar="STUDY",
        help="--strategy model: use the training runs of STUDY (same storage, same template)",
    )
    p.add_argument(
        "--sbatch",
        metavar="ARGS",
        help="run every run as its own Slurm job, submitted with sbatch ARGS "
        "(e.g. --sbatch '-N 2 -p compute --exclusive'; '' for Slurm's defaults): for tuning "
        "from a login node; the command is the job's launch line (srun or mpirun)",
    )
    p.add_argument(
        "--record",
        metavar="FILE",
        help="do not search: run every configuration of the space and the defaults "
        "--repeats times, in rounds shuffled anew, and write them as a replay table",
    )
    p.add_argument(
        "--replay",
        metavar="FILE",
        help="run nothing: answer every run from a table --record wrote (needs --mpi), "
        "to try strategies and settings for free",
    )


def _add_demo(p: argparse.ArgumentParser) -> None:
    _add_tune_options(p, demo=True)
    p.add_argument("--np", type=positive(int), help="ranks (default 2; --nodes: one a node)")
    p.add_argument(
        "--nodes",
        type=_nodes,
        metavar="N|auto",
        help="tune across a cluster on this machine (root: network namespaces as nodes, "
        "one rank on each, over TCP) of N nodes (2-8); auto: one node per core (2-4) when "
        "the machine allows it, else the one-node demo",
    )


def _nodes(text: str) -> int | str:
    if text == "auto":
        return text
    if not text.isdigit() or not 2 <= int(text) <= 8:
        raise argparse.ArgumentTypeError(f"{text!r}: 2-8 nodes or auto")
    return int(text)


@dataclass(frozen=True)
class TuneOptions:
    """``tune``/``demo`` arguments, checked once (strategy and its options, metric, storage):
    how the study is searched (``plan``) and what the command line adds around it."""

    mpi: str | None
    knobs: tuple[str, ...]
    presets: tuple[str, ...]
    plan: Plan
    metric: str
    objective: Objective
    secondary: tuple[Objective, ...]
    interposer: bool
    study: str | None
    json: bool
    storage: str
    replay: str | None = None
    record: str | None = None
    scales: tuple[str, ...] = ()
    trains: tuple[str, ...] = ()
    train_from: str | None = None
    sbatch: tuple[str, ...] | None = None  # each run its own Slurm job, with these options
    through: tuple[str, ...] = ()  # every launch line runs under this prefix (a bed's node)
    across_nodes: bool = False  # one rank per node: the default space is the network's
    no_knowledge: bool = False  # earlier studies' answers are not tried first

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TuneOptions:
        from commtune.store import normalize_url
        from commtune.strategies import get_strategy
        from commtune.trial import Objective

        options = _strategy_options(args.strategy_option)
        get_strategy(args.strategy, options)  # UsageError for a bad name or option
        metrics = list(args.metric or [args.default_metric])
        twice = next((m for i, m in enumerate(metrics) if m in metrics[:i]), None)
        if twice is not None:
            raise UsageError(f"--metric {twice} is given twice")
        objective = Objective.parse(metrics[0])
        secondary = tuple(Objective.parse(m) for m in metrics[1:])
        replay = getattr(args, "replay", None)
        record = getattr(args, "record", None)
        if record and replay:
            raise UsageError("--record and --replay: one or the other")
        if record:
            _writable(record)
        if any(o.needs_profile for o in secondary) and (args.no_interposer or replay):
            raise UsageError("a profile: --metric needs the interposer (libcommtune)")
        if objective.needs_profile and (args.no_interposer or replay):
            raise UsageError(f"--metric {metrics[0]} needs the interposer (libcommtune)")
        repeats = args.repeats or default_repeats(args.max_runs, args.trials)
        confirming = args.confirm * 2  # one candidate and the default
        least = repeats + confirming + 1
        if args.max_runs is not None and args.max_runs < least:
            raise UsageError(
                f"--max-runs {args.max_runs} leaves no run to search: the reference takes "
                f"{repeats}, the confirmation's first rounds {confirming}; at least {least}"
            )
        if args.strategy == "predict" and args.no_interposer:
            raise UsageError("--strategy predict needs the interposer (the reference's profile)")
        trains, train_from = tuple(getattr(args, "train", ())), getattr(args, "train_from", None)
        if (trains or train_from) and args.strategy != "model":
            raise UsageError("--train and --train-from are for --strategy model (its training)")
        sbatch = getattr(args, "sbatch", None)
        if sbatch is not None:
            try:
                sbatch = tuple(shlex.split(sbatch))
            except ValueError as exc:
                raise UsageError(f"--sbatch {args.sbatch!r}: {exc}") from None
            if any(a.startswith(("--wait", "--parsable", "--output", "--error")) for a in sbatch):
                raise UsageError(
                    "--sbatch: commtune sets --wait, --parsable, --output and --error itself"
                )
        return cls(
            mpi=args.mpi,
            knobs=tuple(args.knob),
            presets=tuple(args.preset),
            plan=Plan(
                strategy=args.strategy,
                strategy_options=options,
                trials=args.trials,
                repeats=repeats,
                statistic=args.objective,
                timeout=args.timeout,
                reference_timeout=args.reference_timeout,
                confirm=args.confirm,
                top=args.top,
                max_runs=args.max_runs,
                seed=args.seed,
                racing=not args.fixed_repeats,
            ),
            metric=metrics[0],
            secondary=secondary,
            objective=objective,
            interposer=not args.no_interposer,
            no_knowledge=args.no_knowledge,
            study=args.study,
            json=args.json,
            storage=normalize_url(args.storage),
            replay=replay,
            record=record,
            scales=tuple(getattr(args, "scale", ())),
            trains=trains,
            train_from=train_from,
            sbatch=sbatch,
        )

    def settings(
        self,
        name: str,
        command: Sequence[str],
        library: str,
        space: Space,
        platform: str | None = None,
        scale: Scale | None = None,
        hints: Sequence[Mapping[str, Value]] = (),
        installation: Mapping[str, Any] | None = None,
    ) -> TuneSettings:
        """The study to tune: its name, its record (what defines it) and how it is searched."""
        from commtune.study import StudySpec
        from commtune.tune import TuneSettings

        spec = StudySpec(
            list(command),
            library,
            space.to_json(),
            self.metric,
            self.plan.repeats,
            self.plan.statistic,
            scale.to_json() if scale is not None else None,
            [o.spec for o in self.secondary],
        )
        return TuneSettings(name, spec, space, self.plan, tuple(hints), platform, installation)


def _strategy_options(given: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--strategy-option {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def cmd_tune(args: argparse.Namespace, command: list[str] | None) -> int:
    return _tune(TuneOptions.from_args(args), command)


def cmd_demo(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune import native
    from commtune.launch import launcher_for

    opts = TuneOptions.from_args(args)
    inst = installation_of(opts.mpi)
    program = native.build(inst, "demo/ct_demo.c")
    usual = inst == installation_of(inst.vendor.value)  # the family's usual installation
    study = opts.study or f"demo-{inst.vendor.value}" + ("" if usual else f"-{inst.version}")
    opts = replace(opts, study=study, mpi=inst.prefix)
    nodes = _demo_nodes(args.nodes, opts.json)
    if nodes:
        if args.np is not None and args.np != nodes:
            raise UsageError(f"--np {args.np} with --nodes {nodes}: the demo runs one rank a node")
        return _demo_across_nodes(opts, inst, program, nodes, args.study is None)
    demo = launcher_for(inst).command(args.np or 2, [str(program), str(DEMO_ITERATIONS)])
    return _tune(opts, demo)


DEMO_BED = "ctbdemo"  # a fixed name: the study's launch line is the same at every resume


def _demo_nodes(nodes: int | str | None, quiet: bool) -> int:
    """The nodes of the demo's test bed; 0: the one-node demo (``auto`` says why)."""
    import os

    from commtune.testbed import available

    if nodes is None:
        return 0
    ok, why = available()
    if nodes != "auto":
        if not ok:
            raise UsageError(f"--nodes: {why}")
        return int(nodes)
    if not ok:
        if not quiet:
            print(f"commtune demo: the one-node demo ({why})", file=sys.stderr)
        return 0
    return max(2, min(4, os.cpu_count() or 2))


def _demo_across_nodes(
    opts: TuneOptions, inst: Installation, program: Path, nodes: int, named: bool
) -> int:
    """The demo on a test bed of ``nodes`` nodes, one rank each, the tuner on this machine
    and every launch line run inside the first node."""
    from commtune.testbed import Cluster
    from commtune.util import TESTBED_ENV

    with Cluster(nodes, 1, name=DEMO_BED) as bed:
        # the transport between nodes, every run; the bed named in the platform's fingerprint
        os.environ.update({**bed.network_env(inst), TESTBED_ENV: bed.describe()})
        demo = bed.launch(inst, [str(program), str(DEMO_ITERATIONS)])
        where = (f"{bed.describe()}: {', '.join(bed.hostnames)} (network namespaces on this "
                 "machine), one rank each, over TCP")  # fmt: skip
        if not opts.json:
            print(f"commtune demo: {where}", file=sys.stderr)
        study = f"{opts.study}-{nodes}nodes" if named else opts.study
        through = tuple(bed.command(bed.hostnames[0], []))
        return _tune(replace(opts, study=study, through=through, across_nodes=True), demo)


def _tune(opts: TuneOptions, command: list[str] | None) -> int:
    from commtune.knobs import build_space, discover, installed_knobs
    from commtune.launch import launcher_for
    from commtune.mpi import resolve_command
    from commtune.platform import on_testbed
    from commtune.report import UI
    from commtune.trial import LocalExecutor, Primed, SlurmJobs, run_process

    ui = UI(json_mode=opts.json)
    if opts.replay:
        return _tune_replay(opts, ui)
    from commtune.study import Scale

    command = need_command(command, "to tune")
    scale = Scale.parse(command, opts.scales, opts.trains, opts.train_from)
    if scale is not None:
        command = scale.command()
    inst = resolve_command(command, opts.mpi)
    statuses = installed_knobs(inst)
    space = build_space(statuses, inst.vendor.value, opts.knobs, opts.presets,
                        discover(inst), inst.impl.env_name,
                        opts.across_nodes or on_testbed())  # fmt: skip
    launcher = launcher_for(inst, opts.through)
    predictor = None
    if opts.plan.strategy == "predict":
        from commtune.predict import Predictor, model_store

        predictor = Predictor.load(model_store(opts.storage, inst), inst, False, ui)
    if scale is not None and scale.train_from:
        _check_training_study(opts.storage, scale, space)
    runner = SlurmJobs(opts.sbatch) if opts.sbatch is not None else run_process
    # each run its own job: rank 0's node writes the profile where the tuner reads it
    jobs_dir = str(runner.workdir) if isinstance(runner, SlurmJobs) else None
    guide: list[Choice] = []
    look: RunRecord | None = None  # the profiled run that chose the space
    if not (opts.knobs or opts.presets or opts.record) and opts.interposer and scale is None:
        opts = replace(opts, study=opts.study or default_study_name(command, inst.vendor.value,
                                                                     space))  # fmt: skip
        first = LocalExecutor(launcher, command, [], opts.objective, runner=runner,
                              profiling=profiling(inst, shared=jobs_dir),
                              secondary=opts.secondary)  # fmt: skip
        space, guide, look = _guided_space(opts, ui, inst, statuses, first, space)
    # Everything is valid: from here on, the storage is written.
    store, platform = open_store(opts.storage, inst, _slurm_nodes(opts, command))
    space = probe(space, launcher, store, platform, ui)
    ui.info(f"{inst.describe()}; tuning {space.size()} configurations of {', '.join(space.names)}")
    knobs = [d.knob for d in space.dimensions]
    _report_inherited_env(ui, knobs)
    executor: Executor = LocalExecutor(
        launcher,
        command,
        knobs,
        opts.objective,
        profiling=profiling(inst, shared=jobs_dir) if opts.interposer else None,
        enumerators=knob_enumerators(inst) if opts.interposer else None,
        secondary=opts.secondary,
        runner=runner,
    )
    if look is not None:
        executor = Primed(executor, look)
    if opts.record:
        return _record(opts, ui, executor, space, inst, command)
    name = opts.study or default_study_name(command, inst.vendor.value, space)
    settings = opts.settings(name, command, inst.vendor.value, space, platform, scale,
                             _sampled_hints(store, platform, space), inst.to_json())  # fmt: skip
    knowledge = None if opts.no_knowledge else (platform, inst.vendor.value)
    observer = _StudyObserver(store, ui, name, space, profiles=opts.interposer,
                              predictor=predictor, knowledge=knowledge)  # fmt: skip
    result = _run_study(ui, store, settings, executor, observer)
    extra = {"space_from_profile": [c.to_json() for c in guide]} if guide else {}
    return _print_result(opts, ui, result, space, inst.vendor.value, command, extra)


def _guided_space(
    opts: TuneOptions,
    ui: UI,
    inst: Installation,
    statuses: Mapping[str, KnobStatus],
    look: Executor,
    default: Space,
) -> tuple[Space, list[Choice], RunRecord | None]:
    """No knob named: the space one profiled run of the defaults (by ``look``) calls for
    (``profile.guided``), each knob with its reason, and that run (the reference's first);
    a study resumed keeps its own space."""
    import optuna

    from commtune.knobs import Dimension, Space, space_from_json
    from commtune.platform import on_testbed
    from commtune.profile import guided, one_sided
    from commtune.report import guided_table
    from commtune.store import Store
    from commtune.study import spec_of

    assert opts.study is not None
    store = Store(opts.storage, create=False) if _exists(opts.storage) else None
    if store is not None:
        try:
            study = optuna.load_study(study_name=opts.study, storage=store.optuna)
            knobs = {name: s.knob for name, s in statuses.items()}
            return space_from_json(inst.vendor.value, spec_of(study).space, knobs), [], None
        except KeyError:
            pass  # a new study
    ui.info("no knob named: the reference's first run (profiled) chooses the space")
    run = look.run(None, opts.plan.reference_timeout)
    if run.profile is None or run.value is None:
        ui.warn(f"the profiled run failed ({run.failure or 'no profile'}): the default space")
        return default, [], None
    available = [s.knob for s in statuses.values() if s.available]
    choices = guided(run.profile, available, opts.across_nodes or on_testbed())
    rma = one_sided(run.profile)
    if rma >= 0.05:
        ui.info(f"one-sided calls are {rma:.0%} of MPI time; no knob of them in the catalog yet")
    if not choices:
        ui.info("the profile calls for no knob in particular: the default space")
        return default, [], run
    ui.print(guided_table(choices, "the space, from the program's profile"))
    dims = tuple(Dimension(statuses[c.knob].knob) for c in choices)
    return Space(inst.vendor.value, dims), choices, run


def _exists(url: str) -> bool:
    """The storage is there already (a SQLite file that exists, or a server's)."""
    from commtune.store import journal_path, sqlite_path

    path = sqlite_path(url) or journal_path(url)
    return path is None or os.path.exists(path)


def _writable(path: str) -> None:
    """A file can be written there (checked before hours of runs, not after)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"--record {path}: no directory {directory}")
    if not os.access(directory, os.W_OK):
        raise UsageError(f"--record {path}: {directory} is not writable")


def _record(
    opts: TuneOptions,
    ui: UI,
    executor: Executor,
    space: Space,
    inst: Installation,
    command: Sequence[str],
) -> int:
    """``tune --record FILE``: the balanced sweep (``tune.record``), written atomically."""
    from commtune.predict import features_of
    from commtune.tune import record
    from commtune.util import write_atomic

    assert opts.record is not None
    plan = opts.plan
    done = record(executor, space, plan.repeats, ui, seed=plan.seed, timeout=plan.timeout,
                  reference_timeout=plan.reference_timeout)  # fmt: skip
    data = done.to_json(
        description=shlex.join(command),
        installation=inst.to_json(),
        metric=opts.metric,
        recorded=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        features=features_of(done.profile) if done.profile is not None else None,
    )
    write_atomic(opts.record, json.dumps(data, indent=1) + "\n")
    failed = done.failed()
    ui.info(f"{len(done.values)} configurations x {plan.repeats} runs and the defaults "
            f"({len(done.order)} runs, {len(failed)} failed) -> {opts.record}")  # fmt: skip
    if opts.json:
        print_json({"file": opts.record, "runs": len(done.order), "failed": len(failed),
                    "configurations": len(done.values)})  # fmt: skip
    return 0


def _slurm_nodes(opts: TuneOptions, command: Sequence[str]) -> str | None:
    """The Slurm nodes' type, for the fingerprint, where the runs are Slurm's: each its own
    job (the partition of ``--sbatch``), or steps of the allocation the tuner runs in."""
    import os

    from commtune.platform import slurm_node_type

    if opts.sbatch is not None:
        sbatch = argparse.ArgumentParser(add_help=False)
        sbatch.add_argument("-p", "--partition")
        return slurm_node_type(sbatch.parse_known_args(list(opts.sbatch))[0].partition)
    if os.environ.get("SLURM_JOB_ID") or os.path.basename(command[0]) == "srun":
        return slurm_node_type()
    return None


def _report_inherited_env(ui: UI, knobs: Sequence[Knob]) -> None:
    from commtune.tune import inherited_mpi_env

    inherited = inherited_mpi_env()
    tuned = {k.env for k in knobs}
    for name, value in inherited.items():
        how = "overridden (under tuning)" if name in tuned else "kept in the baseline"
        ui.info(f"environment: {name}={value} {how}")


class _StudyObserver(Observer):
    """What ``tune`` does beside the tuner: stores every run's profile and, for a trial's
    first run, its variables relative to the reference trial (AITuning); warns once per knob
    that the library did not take; with ``predictor`` (``--strategy predict``), proposes
    the model's configuration for the reference run's profile first."""

    def __init__(
        self,
        store: Store,
        ui: UI,
        study: str,
        space: Space,
        *,
        profiles: bool,
        predictor: Predictor | None = None,
        knowledge: tuple[str | None, str] | None = None,
    ) -> None:
        """``knowledge``: (platform key, library) whose earlier studies' answers are tried
        first, the most similar program's first (``commtune.knowledge``)."""
        self.store = store
        self.study = study
        self.ui = ui
        self.profiles = profiles
        self.space = space
        self.predictor = predictor
        self.knowledge = knowledge
        self.warned: set[str] = set()
        self.reference: list[Profile | None] = []  # looked up once: [None] there is none

    def _reference_profile(self, study: optuna.Study) -> Profile | None:
        from commtune.profile import Profile, ProfileError
        from commtune.study import Role, StudyView

        if not self.reference:
            trials = StudyView(study).by_role(Role.REFERENCE)
            stored = self.store.profiles(study.study_name, trials[0].number) if trials else []
            try:
                self.reference.append(Profile.from_json(stored[0][2]) if stored else None)
            except ProfileError:
                self.reference.append(None)
        return self.reference[0]

    def run_done(self, trial: Any, index: int, run: RunRecord) -> None:
        from commtune.profile import relative_to
        from commtune.study import Role, TrialWriter

        if self.profiles and run.profile is not None:
            self.store.save_profile(trial.study.study_name, trial.number, index, run.profile.data)
            if index == 0 and Role.of(trial) is not Role.REFERENCE:
                ref = self._reference_profile(trial.study)
                if ref is not None:
                    TrialWriter(trial).relative(relative_to(run.profile, ref))
        for knob, reason in run.not_applied.items():
            if knob not in self.warned:
                self.warned.add(knob)
                self.ui.warn(f"{knob} not applied (trial {trial.number}): {reason}")

    def hints(self, reference: TrialRecord) -> list[dict[str, Value]]:
        from commtune.predict import features_of
        from commtune.profile import Profile, ProfileError

        if self.predictor is None and self.knowledge is None:
            return []
        stored = self.store.profiles(self.study, reference.number)
        try:
            features = features_of(Profile.from_json(stored[0][2])) if stored else None
        except ProfileError:  # a profile this commtune cannot read: as if there were none
            features = None
        out = self._known_hints(features)
        if self.predictor is None:
            return out
        if features is None:
            self.ui.warn("the reference run has no profile; the search starts without a prediction")
            return out
        hint = self._in_space(self.predictor.predict(features))
        if not hint:
            self.ui.info("the prediction names none of the knobs under tuning")
            return out
        self.ui.info("predicted start: " + ", ".join(f"{k}={v}" for k, v in hint.items()))
        return [hint, *out]

    def _in_space(self, config: Mapping[str, Value]) -> dict[str, Value]:
        space = self.space
        return {k: v for k, v in config.items() if k in space.names and v in space[k].candidates()}

    def _known_hints(self, features: Mapping[str, float] | None) -> list[dict[str, Value]]:
        """The answers of earlier studies on this platform and library, the most similar
        program first, as far as they set knobs under tuning."""
        from commtune.knowledge import known, similar

        if self.knowledge is None:
            return []
        platform, library = self.knowledge
        out: list[dict[str, Value]] = []
        for entry, far in similar(known(self.store, skip=self.study), features, platform, library):
            hint = self._in_space(entry.answer)
            if hint and hint not in out:
                out.append(hint)
                self.ui.info(f"known start from study {entry.study} ({entry.program}, "
                             f"distance {far:.2f}): "
                             + ", ".join(f"{k}={v}" for k, v in hint.items()))  # fmt: skip
        return out


def _tune_replay(opts: TuneOptions, ui: UI) -> int:
    """Tuning against recorded measurements (``--replay FILE``): strategies without MPI."""
    from commtune.knobs import build_space, catalog_statuses
    from commtune.mpi import MPISpec
    from commtune.store import Store
    from commtune.trial import ReplayExecutor

    spec = MPISpec.parse(opts.mpi) if opts.mpi else None
    if spec is None or spec.family is None or opts.replay is None:
        raise UsageError("--replay needs --mpi to name the library of the recorded knobs")
    library = spec.family.value
    statuses = catalog_statuses(library, spec.version)
    space = build_space(statuses, library, opts.knobs, opts.presets)
    executor = ReplayExecutor(opts.replay, {d.knob.name: d.knob.default for d in space.dimensions})
    store = Store(opts.storage)
    command = ["replay", opts.replay]
    name = opts.study or default_study_name(command, library, space)
    settings = opts.settings(name, command, library, space)
    observer = _StudyObserver(store, ui, name, space, profiles=False,
                              knowledge=None if opts.no_knowledge else (None, library))  # fmt: skip
    result = _run_study(ui, store, settings, executor, observer)
    return _print_result(opts, ui, result, space, library)


def _sampled_hints(store: Store, platform: str | None, space: Space) -> list[dict[str, Value]]:
    """The knob values of this platform's newest sample (any ranks per node: the tuned
    command's are not known), on the knobs under tuning, as a strategy hint."""
    from commtune.sample import PlatformProfile

    if platform is None:
        return []
    here = store.platform(platform)
    for data in store.samples():
        try:
            profile = PlatformProfile.from_json(data)
            if replace(profile.fingerprint, ranks_per_node=None) != here:
                continue
            hint = {k: v for k, v in profile.config().items() if k in space.names}
            if hint:
                space.validate(hint)
                return [hint]
        except UsageError:
            continue
    return []


def _run_study(
    ui: UI, store: Store, settings: TuneSettings, executor: Executor, observer: Observer
) -> TuneResult:
    from commtune.store import shown_url
    from commtune.tune import Workers, tune

    ui.info(
        f"study [bold]{settings.study}[/bold] in {shown_url(store.url)} (re-run to resume; "
        "run the same command elsewhere to add a worker)"
    )
    workers = Workers.on(store, settings.study)
    return tune(settings, store.optuna, executor, ui, workers, observer)


def _check_training_study(url: str, scale: Scale, space: Space) -> None:
    """``--train-from STUDY``: it exists in the storage (nothing is created to find out),
    was trained with the same template and scale names, and on these knobs."""
    from commtune.cli._common import load_study
    from commtune.study import Scale, spec_of

    assert scale.train_from is not None
    try:
        _, other = load_study(url, scale.train_from)
    except UsageError as exc:
        raise UsageError(f"--train-from: {exc}") from None
    spec = spec_of(other)
    theirs = Scale.from_json(spec.scale) if spec.scale else None
    if theirs is None or not theirs.train:
        raise UsageError(f"--train-from {scale.train_from}: that study has no training runs")
    if theirs.template != scale.template or theirs.target.keys() != scale.target.keys():
        raise UsageError(
            f"--train-from {scale.train_from}: trained with another command template "
            f"({' '.join(theirs.template)})"
        )
    if spec.knob_names() != space.names:
        raise UsageError(f"--train-from {scale.train_from}: trained on other knobs")


def _print_result(
    opts: TuneOptions,
    ui: UI,
    result: TuneResult,
    space: Space,
    vendor: str,
    command: Sequence[str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> int:
    from commtune.report import acceptance_lines, noise_line, result_table

    ui.print(result_table(result, space.defaults()))
    for line in acceptance_lines(result):
        ui.info(line)
    ui.info(noise_line(result))
    acc = result.acceptance
    claimed = acc.speedup if acc is not None and acc.accepted else None
    if claimed and claimed > 1 and result.noise.drift - 1 > claimed - 1:
        ui.warn(
            f"the machine drifted {result.noise.drift:.2f}x during the study, more than the "
            f"{claimed:.2f}x speedup claimed: judge it by the interleaved confirmation only"
        )
    for knob, reason in result.not_applied.items():
        ui.warn(f"knob {knob} was not applied in some trials: {reason}")
    for line in _next_steps(opts, result, vendor, command):
        ui.command(line)
    if opts.json:
        print_json({**result.to_json(), **(extra or {})})
    return 0


def _next_steps(
    opts: TuneOptions, result: TuneResult, vendor: str, command: Sequence[str] | None = None
) -> list[str]:
    """What to type next: run with the accepted settings (the tuned ``command`` itself where
    it is not a template), write them out, see the report."""
    from commtune.store import normalize_url

    given = opts.storage != normalize_url(default_storage())
    storage = f" --storage {shlex.quote(opts.storage)}" if given else ""
    study = shlex.quote(result.study)
    steps = []
    if result.acceptance is not None and result.acceptance.accepted:
        impl = Vendor(vendor).impl
        fmt, name = impl.settings_file
        templated = not command or any("{" in arg for arg in command)
        launch = f"{impl.launcher_word} ..." if templated else shlex.join(command or ())
        steps += [
            f"  commtune run --study {study}{storage} -- {launch}   (runs with these settings)",
            f"  commtune export {study}{storage} --format {fmt} --output {name}",
        ]
    page = re.sub(r"[^\w.-]+", "_", result.study) + ".html"
    steps.append(f"  commtune report {study}{storage} -o {page}")
    return ["next:", *steps]


COMMANDS = [
    Command(
        "tune",
        "tune an MPI application: commtune tune [opts] -- mpirun ...",
        _add_tune,
        cmd_tune,
        takes_command=True,
    ),
    Command(
        "demo",
        "build the bundled demo app and tune it (2 ranks, or --nodes N)",
        _add_demo,
        cmd_demo,
    ),
]
