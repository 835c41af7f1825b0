"""The ``commtune`` command line. Input is validated here, into typed objects, before anything
is written; a UsageError anywhere becomes one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from commtune import __version__
from commtune.errors import UsageError

if TYPE_CHECKING:
    import optuna

    from commtune.knobs import Knob, Space, Value
    from commtune.knobs._discovery import KnobStatus
    from commtune.launch import Installation
    from commtune.report import UI
    from commtune.store import Store
    from commtune.tune import TuneResult

DEMO_ITERATIONS = 1000
DEMO_METRIC = r"regex:time ([0-9.eE+-]+) s"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _positive(kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return value

    return parse


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


_SIZE_UNITS = {"": 1, "K": 1 << 10, "KI": 1 << 10, "M": 1 << 20, "MI": 1 << 20, "G": 1 << 30}


def _size(text: str) -> int:
    """A message size: bytes, or with a K/M/G suffix (binary: 64K = 65536)."""
    t = text.strip().upper().removesuffix("B")
    digits = t.rstrip("KMGI")
    unit = t[len(digits) :]
    try:
        value = float(digits) * _SIZE_UNITS[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 4096, 64K, 1M)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return int(value)


def _add_storage(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--storage",
        default=os.environ.get("COMMTUNE_STORAGE", "sqlite:///commtune.db"),
        help="database URL or SQLite file (default: ./commtune.db)",
    )


def _add_mpi(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mpi", choices=["openmpi", "mpich"], help="MPI library (default: detected)")


def _add_tune_options(p: argparse.ArgumentParser, demo: bool) -> None:
    _add_mpi(p)
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
        choices=["p2p", "collectives", "progress"],
        help="tune a group of knobs; repeatable",
    )
    p.add_argument(
        "--strategy",
        default="tpe",
        help="random | grid | tpe | cmaes | ga | model | dqn | auto | predict (default tpe)",
    )
    p.add_argument(
        "--strategy-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the strategy, e.g. population=12 for ga; repeatable",
    )
    p.add_argument(
        "--trials",
        type=_positive(int),
        default=16 if demo else 20,
        help="trials in the study, the reference included",
    )
    p.add_argument("--repeats", type=_positive(int), default=3, help="runs per trial")
    p.add_argument(
        "--timeout",
        type=_positive(float),
        help="seconds per run (default: 5x the reference's median, at least 5)",
    )
    p.add_argument(
        "--reference-timeout",
        type=_positive(float),
        default=600.0,
        help="seconds per run of the reference (default 600)",
    )
    p.add_argument(
        "--confirm",
        type=_nonnegative_int,
        default=5,
        help="runs each of best and default in the acceptance step (0: skip)",
    )
    p.add_argument(
        "--metric",
        default=DEMO_METRIC if demo else "wall",
        help="'wall' (default), 'regex:PATTERN' (first group of the last match) or "
        "'profile:FIELD' (a field of the interposer's profile, e.g. profile:mpi_time)",
    )
    p.add_argument(
        "--no-interposer",
        action="store_true",
        help="do not preload libcommtune (no profiles, no check that knobs took)",
    )
    p.add_argument("--seed", type=int, help="seed of the strategy (same seed, same trials)")
    p.add_argument("--study", help="study name (same name: resume)")
    p.add_argument("--json", action="store_true", help="print a JSON result as the last line")
    _add_storage(p)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="commtune", description="Autotuner for MPI run-time parameters.")
    parser.add_argument("--version", action="version", version=f"commtune {__version__}")
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    p = sub.add_parser("tune", help="tune an MPI application: commtune tune [opts] -- mpirun ...")
    _add_tune_options(p, demo=False)
    p.add_argument("--replay", metavar="FILE", help=argparse.SUPPRESS)

    p = sub.add_parser("demo", help="build the bundled demo app and tune it on 2 ranks")
    _add_tune_options(p, demo=True)
    p.add_argument("--np", type=_positive(int), default=2, help="ranks (default 2)")

    p = sub.add_parser("knobs", help="list the knobs of an MPI library")
    _add_mpi(p)
    p.add_argument("--preset", choices=["p2p", "collectives", "progress"])
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("export", help="write a study's configuration in a library's format")
    p.add_argument("study")
    p.add_argument("--format", choices=["env", "mca", "json"], default="env")
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument(
        "--best",
        action="store_true",
        help="export the best measured configuration even if it was not accepted",
    )
    _add_storage(p)

    p = sub.add_parser("run", help="run a command with a study's accepted configuration")
    p.add_argument("--study", required=True)
    _add_storage(p)

    p = sub.add_parser("studies", help="list the studies in a storage")
    p.add_argument("--json", action="store_true")
    _add_storage(p)

    p = sub.add_parser("show", help="show one study and its trials")
    p.add_argument("study")
    p.add_argument("--json", action="store_true")
    _add_storage(p)

    p = sub.add_parser("lib", help="print the path of libcommtune (built if needed) for LD_PRELOAD")
    _add_mpi(p)
    p.add_argument("--header", action="store_true", help="print the path of commtune.h instead")

    p = sub.add_parser("profile", help="run once with libcommtune: commtune profile -- mpirun ...")
    _add_mpi(p)
    p.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="apply this knob value and check that it took; repeatable",
    )
    p.add_argument(
        "--pvar-interval",
        type=_positive(float),
        default=0.1,
        help="seconds between samples of performance variables (default 0.1)",
    )
    p.add_argument(
        "--timeout", type=_positive(float), default=3600.0, help="seconds (default 3600)"
    )
    p.add_argument("-o", "--output", help="also write the profile JSON to this file")
    p.add_argument("--json", action="store_true", help="print the profile JSON")

    p = sub.add_parser("sample", help="sample the platform: thresholds, collective rules, plots")
    _add_mpi(p)
    _add_storage(p)
    p.add_argument("--np", type=_positive(int), default=2, help="ranks (default 2)")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (< 60 s)")
    p.add_argument("--refresh", action="store_true", help="sample again even if stored")
    p.add_argument(
        "--ops",
        default=",".join(("pingpong", "allreduce", "bcast", "reduce", "allgather", "alltoall")),
        help="operations to sample (comma list; default all six)",
    )
    p.add_argument(
        "-o", "--output-dir", default="commtune-platform", help="where files and plots go"
    )
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument(
        "--verify",
        action="store_true",
        help="time the selection file against the forced choices (alternating launches)",
    )
    p.add_argument(
        "--predict",
        type=_size,
        metavar="SIZE",
        help="predict the time of every sampled operation at SIZE bytes (e.g. 48K)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON result as the last line")

    p = sub.add_parser("train", help="train the prediction model on the training benchmark")
    _add_mpi(p)
    _add_storage(p)
    p.add_argument(
        "--np", help="rank counts of the training runs (comma list; default 2,4 Open MPI, 2 MPICH)"
    )
    p.add_argument("--quick", action="store_true", help="a small but real model (a few minutes)")
    p.add_argument(
        "--budget",
        type=_positive(int),
        help="training runs in all (default 312, --quick 90)",
    )
    p.add_argument(
        "--configs",
        type=_positive(int),
        help="configurations measured at each input point (default 12, --quick 8)",
    )
    p.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME[=V1,V2|...]",
        help="train for this knob (default: the MPI's default space); repeatable",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the designs")
    p.add_argument("--json", action="store_true", help="print a JSON result as the last line")

    p = sub.add_parser("predict", help="predict a configuration from one profiled run")
    _add_mpi(p)
    _add_storage(p)
    p.add_argument("--verify", action="store_true", help="time default vs predicted, interleaved")
    p.add_argument(
        "--pairs", type=_positive(int), default=5, help="pairs of runs for --verify (default 5)"
    )
    p.add_argument("--force", action="store_true", help="use a model of another platform")
    p.add_argument(
        "--timeout", type=_positive(float), default=3600.0, help="seconds per run (default 3600)"
    )
    p.add_argument("--study", help="name of the study stored (default predict-MPI-PROGRAM)")
    p.add_argument("--json", action="store_true", help="print a JSON result as the last line")

    p = sub.add_parser("rails", help="multi-rail split planner on shaped veth links (root)")
    rails_sub = p.add_subparsers(dest="rails_cmd", required=True, parser_class=_Parser)
    p = rails_sub.add_parser("bench", help="plan vs even split vs best single rail, measured")
    p.add_argument(
        "--rates",
        default="400,200,100",
        help="rail rates in Mbit/s (comma list, default 400,200,100)",
    )
    p.add_argument("--size", type=_size, default=8 << 20, help="message size (default 8M)")
    p.add_argument("--repeats", type=_positive(int), default=5, help="transfers per strategy")
    p.add_argument("--json", action="store_true", help="print a JSON result as the last line")

    p = sub.add_parser("cvars", help="list the MPI_T control (or performance) variables")
    _add_mpi(p)
    p.add_argument("--pvars", action="store_true", help="performance variables instead")
    p.add_argument("--filter", metavar="REGEX", help="only names matching REGEX")
    p.add_argument("--json", action="store_true")
    return parser


def _split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, None


# -- tune / demo ------------------------------------------------------------------------------
def _vendor(name: str | None) -> Any:
    from commtune.launch import Vendor

    return Vendor(name) if name else None


def _default_study_name(command: Sequence[str], library: str, space: Space) -> str:
    program = next((os.path.basename(a) for a in reversed(command) if os.path.sep in a), None)
    program = program or os.path.basename(command[0])
    digest = hashlib.sha256(json.dumps([list(command), space.to_json()]).encode()).hexdigest()
    return f"{program}-{library}-{digest[:6]}"


def _report_inherited_env(ui: UI, knobs: Sequence[Knob]) -> None:
    from commtune.tune import inherited_mpi_env

    inherited = inherited_mpi_env()
    if not inherited:
        return
    tuned = {k.env for k in knobs}
    for name, value in inherited.items():
        how = "overridden (under tuning)" if name in tuned else "kept in the baseline"
        ui.info(f"environment: {name}={value} {how}")


def cmd_tune(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.knobs._discovery import installed_knobs
    from commtune.knobs._select import build_space
    from commtune.launch import launcher_for, resolve_command
    from commtune.report import UI
    from commtune.store import normalize_url
    from commtune.strategies import get_strategy
    from commtune.trial import LocalExecutor, Objective

    args.strategy_options = _strategy_options(args.strategy_option)
    get_strategy(args.strategy, args.strategy_options)
    objective = Objective.parse(args.metric)
    if objective.needs_profile and (args.no_interposer or args.replay):
        raise UsageError(f"--metric {args.metric} needs the interposer (libcommtune)")
    url = normalize_url(args.storage)
    ui = UI(json_mode=args.json)
    if args.replay:
        return _tune_replay(args, ui, objective, url)
    if command is None:
        raise UsageError("missing '--' before the command to tune, e.g. -- mpirun -np 4 ./app")
    installation = resolve_command(command, _vendor(args.mpi))
    statuses = installed_knobs(installation)
    space = build_space(statuses, installation.vendor.value, args.knob, args.preset)
    launcher = launcher_for(installation)
    args.predictor = None
    if args.strategy == "predict":
        from commtune.predict import Predictor, model_store

        if args.no_interposer:
            raise UsageError("--strategy predict needs the interposer (the reference's profile)")
        args.predictor = Predictor.load(model_store(url, installation), installation, False, ui)
    # Everything is valid: from here on, the storage is written.
    store, platform = _open_store(url, installation)
    space = _probe(space, launcher, store, platform, ui)
    ui.info(
        f"{installation.describe()}; tuning {space.size()} configurations of "
        f"{', '.join(space.names)}"
    )
    knobs = [d.knob for d in space.dimensions]
    _report_inherited_env(ui, knobs)
    profiling, intents = (None, None) if args.no_interposer else _profiling(installation, knobs)
    executor = LocalExecutor(
        launcher, command, knobs, objective, profiling=profiling, intents=intents
    )
    result = _run_study(
        args,
        ui,
        store,
        space,
        command,
        installation.vendor.value,
        executor,
        platform,
        _run_observer(store, ui) if profiling else None,
    )
    return _print_result(args, ui, result, space)


def _profiling(installation: Installation, knobs: Sequence[Knob], interval: float = 0.1) -> Any:
    """libcommtune for the installation, and the MPI_T check of each configuration."""
    from commtune import native
    from commtune.knobs._discovery import discover
    from commtune.profile import Profiling, intended_cvars

    # Multi-node runs: COMMTUNE_PROFILE_DIR must be a directory rank 0's node can write.
    directory = os.environ.get("COMMTUNE_PROFILE_DIR") or None
    profiling = Profiling(native.build_interposer(installation), interval, directory)
    enumerators = {n: v.enumerators for n, v in discover(installation).items()}

    def intents(config: Any) -> Any:
        return intended_cvars(knobs, config, installation.vendor, enumerators)

    return profiling, intents


def _run_observer(store: Store, ui: UI) -> Any:
    """Stores every run's profile and, for a trial's first run, its variables relative to the
    reference trial (AITuning); warns once per knob that the library did not take."""
    from commtune.profile import Profile, ProfileError, relative_to
    from commtune.tune import REFERENCE, ROLE

    warned: set[str] = set()
    reference: list[Profile | None] = []  # looked up once: [] not yet, [None] there is none

    def reference_profile(study: Any) -> Profile | None:
        if not reference:
            trials = [
                t for t in study.get_trials(deepcopy=False) if t.user_attrs.get(ROLE) == REFERENCE
            ]
            stored = store.profiles(study.study_name, trials[0].number) if trials else []
            try:
                reference.append(Profile.from_json(stored[0][2]) if stored else None)
            except ProfileError:
                reference.append(None)
        return reference[0]

    def on_run(trial: Any, index: int, run: Any) -> None:
        if run.profile is not None:
            store.save_profile(trial.study.study_name, trial.number, index, run.profile.data)
            if index == 0 and trial.user_attrs.get(ROLE) != REFERENCE:
                ref = reference_profile(trial.study)
                if ref is not None:
                    trial.set_user_attr("relative", relative_to(run.profile, ref))
        for knob, reason in run.not_applied.items():
            if knob not in warned:
                warned.add(knob)
                ui.warn(f"{knob} not applied (trial {trial.number}): {reason}")

    return on_run


def _tune_replay(args: argparse.Namespace, ui: UI, objective: Any, url: str) -> int:
    """Tuning against recorded measurements (``--replay FILE``): strategies without MPI."""
    from commtune.knobs import load_catalog
    from commtune.knobs._discovery import KnobStatus
    from commtune.knobs._select import build_space
    from commtune.store import Store
    from commtune.trial import ReplayExecutor

    if not args.mpi:
        raise UsageError("--replay needs --mpi to name the library of the recorded knobs")
    executor = ReplayExecutor(args.replay)
    statuses = {n: KnobStatus(k, True) for n, k in load_catalog(args.mpi).items()}
    space = build_space(statuses, args.mpi, args.knob, args.preset)
    store = Store(url)
    result = _run_study(args, ui, store, space, ["replay", args.replay], args.mpi, executor, None)
    return _print_result(args, ui, result, space)


def _strategy_options(given: list[str]) -> dict[str, str]:
    out = {}
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--strategy-option {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _sampled_hints(store: Store, platform: str, space: Space) -> list[dict[str, Value]]:
    """The knob values of this platform's newest sample (any ranks per node: the tuned
    command's are not known), on the knobs under tuning, as a strategy hint."""
    from dataclasses import replace

    from commtune.sample import PlatformProfile

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


def _open_store(url: str, installation: Installation) -> tuple[Store, str]:
    from commtune.platform import Fingerprint
    from commtune.store import Store

    store = Store(url)
    return store, store.save_platform(Fingerprint.of(installation))


def _probe(space: Space, launcher: Any, store: Store, platform: str, ui: UI) -> Space:
    from commtune.knobs._probe import probe_space

    with ui.progress("checking knob values", 0) as bar:
        space, bad = probe_space(space, launcher, store, platform, progress=bar.status)
    for name, values in bad.items():
        ui.warn(f"{name}: {', '.join(map(str, values))} abort(s) the library here; left out")
    return space


def _run_study(
    args: argparse.Namespace,
    ui: UI,
    store: Store,
    space: Space,
    command: list[str],
    library: str,
    executor: Any,
    platform: str | None,
    on_run: Any = None,
) -> TuneResult:
    from commtune.tune import StudySpec, TuneSettings, tune

    spec = StudySpec(list(command), library, space.to_json(), args.metric, args.repeats)
    name = args.study or _default_study_name(command, library, space)
    settings = TuneSettings(
        study=name,
        spec=spec,
        space=space,
        strategy=args.strategy,
        strategy_options=getattr(args, "strategy_options", {}),
        hints=_sampled_hints(store, platform, space) if platform else [],
        trials=args.trials,
        timeout=args.timeout,
        reference_timeout=args.reference_timeout,
        confirm=args.confirm,
        seed=args.seed,
        platform=platform,
        on_run=on_run,
    )
    if getattr(args, "predictor", None) is not None:
        settings.hints_from_reference = _prediction_hints(store, args.predictor, space, name, ui)
    ui.info(f"study [bold]{name}[/bold] in {store.url} (re-run to resume)")
    return tune(settings, store.optuna, executor, ui)


def _prediction_hints(store: Store, predictor: Any, space: Space, study: str, ui: UI) -> Any:
    """For ``--strategy predict``: the model's configuration for the reference run's profile,
    on the knobs under tuning, as the first proposal."""
    from commtune.predict import features_of
    from commtune.profile import Profile

    def hints(reference: Any) -> list[dict[str, Value]]:
        stored = store.profiles(study, reference.number)
        if not stored:
            ui.warn("the reference run has no profile; the search starts without a prediction")
            return []
        config = predictor.predict(features_of(Profile.from_json(stored[0][2])))
        hint = {k: v for k, v in config.items() if k in space.names and v in space[k].candidates()}
        ui.info("predicted start: " + ", ".join(f"{k}={v}" for k, v in hint.items()))
        return [hint] if hint else []

    return hints


def _print_result(args: argparse.Namespace, ui: UI, result: TuneResult, space: Space) -> int:
    from commtune.report._tables import acceptance_lines, result_table

    ui.print(result_table(result, space.defaults()))
    for line in acceptance_lines(result):
        ui.info(line)
    for knob, reason in result.not_applied.items():
        ui.warn(f"knob {knob} was not applied in some trials: {reason}")
    if args.json:
        print(json.dumps(result.to_json(), separators=(",", ":")))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from commtune import native
    from commtune.launch import launcher_for

    installation = _installation(args.mpi)
    program = native.build(installation, "demo/ct_demo.c")
    command = launcher_for(installation).command(args.np, [str(program), str(DEMO_ITERATIONS)])
    if args.study is None:
        args.study = f"demo-{installation.vendor.value}"
    args.mpi = installation.vendor.value
    args.replay = None
    return cmd_tune(args, command)


# -- knobs ------------------------------------------------------------------------------------
def cmd_knobs(args: argparse.Namespace) -> int:
    from commtune.knobs._discovery import installed_knobs
    from commtune.report import UI
    from commtune.report._tables import knobs_table

    installation = _installation(args.mpi)
    statuses: list[KnobStatus] = list(installed_knobs(installation).values())
    if args.preset:
        statuses = [s for s in statuses if args.preset in s.knob.presets]
    ui = UI(json_mode=args.json)
    ui.print(knobs_table(statuses, f"knobs of {installation.describe()}"))
    if args.json:
        out = [
            {
                "name": s.knob.name,
                "type": s.knob.type.value,
                "domain": s.knob.domain(),
                "default": s.knob.default,
                "step": s.knob.step,
                "env": s.knob.env,
                "presets": list(s.knob.presets),
                "available": s.available,
                "reason": s.reason,
                "description": s.knob.description,
            }
            for s in statuses
        ]
        print(json.dumps({"mpi": installation.vendor.value, "knobs": out}, separators=(",", ":")))
    return 0


# -- interposer: lib, profile, cvars ------------------------------------------------------------
def _installation(mpi: str | None) -> Installation:
    from commtune.launch import default_installation, find_installation

    vendor = _vendor(mpi)
    return find_installation(vendor) if vendor else default_installation()


def cmd_lib(args: argparse.Namespace) -> int:
    from commtune import native

    if args.header:
        print(native.interposer_dir() / "commtune.h")
        return 0
    print(native.build_interposer(_installation(args.mpi)))
    return 0


def _profile_config(
    installation: Installation, specs: list[str]
) -> tuple[list[Knob], dict[str, Any]]:
    """``--knob NAME=VALUE`` of ``commtune profile``: one value each, validated."""
    from commtune.knobs._discovery import installed_knobs
    from commtune.knobs._select import build_space

    if not specs:
        return [], {}
    for spec in specs:
        if "=" not in spec:
            raise UsageError(f"--knob {spec}: commtune profile needs NAME=VALUE")
    space = build_space(installed_knobs(installation), installation.vendor.value, specs, [])
    config = {}
    for dim in space.dimensions:
        values = dim.candidates()
        if len(values) != 1:
            raise UsageError(f"--knob {dim.knob.name}: commtune profile takes one value")
        config[dim.knob.name] = values[0]
    return [d.knob for d in space.dimensions], config


def cmd_profile(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.launch import launcher_for, resolve_command
    from commtune.report import UI
    from commtune.report import _profile_tables as tables
    from commtune.trial import LocalExecutor, Objective

    if not command:
        raise UsageError("missing '--' before the command to profile, e.g. -- mpirun -np 4 ./app")
    installation = resolve_command(command, _vendor(args.mpi))
    knobs, config = _profile_config(installation, args.knob)
    profiling, intents = _profiling(installation, knobs, args.pvar_interval)
    executor = LocalExecutor(
        launcher_for(installation),
        command,
        knobs,
        Objective.parse("wall"),
        profiling=profiling,
        intents=intents,
    )
    ui = UI(json_mode=args.json)
    ui.info(f"{installation.describe()}; profiling with {profiling.library}")
    run = executor.run(config or None, args.timeout)
    if run.failure is not None:
        said = [line for line in run.stderr_tail.splitlines() if any(c.isalnum() for c in line)]
        raise UsageError(f"the command failed ({run.failure}) {said[-1] if said else ''}".rstrip())
    if run.profile is None:
        raise UsageError(
            "no profile written: did every rank call MPI_Finalize, and is the program "
            "dynamically linked against this MPI?"
        )
    profile = run.profile
    if args.output:
        from commtune.report._export import write_atomic

        write_atomic(args.output, json.dumps(profile.data, indent=1) + "\n")
    ui.print(tables.summary_table(profile))
    ui.print(tables.operations_table(profile))
    ui.print(tables.features_table(profile))
    if profile.pvars:
        ui.print(tables.variables_table("performance variables (MPI_T)", profile.pvars))
    if profile.user:
        ui.print(tables.variables_table("user-defined variables", profile.user))
    if profile.cvars:
        ui.print(tables.cvars_table(profile))
    for knob, reason in run.not_applied.items():
        ui.warn(f"{knob} not applied: {reason}")
    if args.json:
        print(json.dumps(profile.data, separators=(",", ":")))
    return 0


def cmd_cvars(args: argparse.Namespace) -> int:
    import re

    from commtune.knobs._discovery import list_mpit
    from commtune.report import UI
    from commtune.report._profile_tables import mpit_table

    pattern = None
    if args.filter:
        try:
            pattern = re.compile(args.filter)
        except re.error as exc:
            raise UsageError(f"--filter: bad regular expression: {exc}") from None
    installation = _installation(args.mpi)
    rows = list_mpit(installation, performance=args.pvars)
    if pattern is not None:
        rows = [r for r in rows if pattern.search(str(r["name"]))]
    ui = UI(json_mode=args.json)
    ui.print(mpit_table(rows, args.pvars))
    ui.info(f"{len(rows)} variables of {installation.describe()}")
    if args.json:
        kind = "pvars" if args.pvars else "cvars"
        print(json.dumps({"mpi": installation.vendor.value, kind: rows}, separators=(",", ":")))
    return 0


# -- platform sampling ------------------------------------------------------------------------
# -- prediction ----------------------------------------------------------------------------
def cmd_train(args: argparse.Namespace) -> int:
    import time

    from commtune.knobs._discovery import installed_knobs
    from commtune.knobs._select import build_space
    from commtune.launch import Vendor, launcher_for
    from commtune.platform import Fingerprint
    from commtune.predict import collect, config_design, design_points, fit_and_store
    from commtune.report import UI
    from commtune.report._predict_tables import train_tables
    from commtune.store import normalize_url

    installation = _installation(args.mpi)
    default_np = "2,4" if installation.vendor is Vendor.OPENMPI else "2"
    try:
        ranks = [int(r) for r in (args.np or default_np).split(",") if r.strip()]
    except ValueError:
        raise UsageError(f"--np {args.np!r}: expected rank counts such as 2,4") from None
    if not ranks or min(ranks) < 2:
        raise UsageError("--np: the training benchmark needs at least 2 ranks")
    configs_per_point = args.configs or (8 if args.quick else 12)
    budget = args.budget or (90 if args.quick else 312)
    n_points = budget // (configs_per_point + 1)
    if n_points < 4:
        raise UsageError(
            f"--budget {budget}: fewer than 4 input points of {configs_per_point + 1} runs each"
        )
    space = build_space(installed_knobs(installation), installation.vendor.value, args.knob)
    url = normalize_url(args.storage)
    ui = UI(json_mode=args.json)
    store, platform = _open_store(url, installation)
    space = _probe(space, launcher_for(installation), store, platform, ui)
    fingerprint = Fingerprint.of(installation)
    points = design_points(n_points, ranks, args.seed)
    configs = config_design(space, configs_per_point, args.seed)
    ui.info(
        f"{installation.describe()}; {len(points)} input points x {len(configs) + 1} "
        f"configurations of {', '.join(space.names)}"
    )
    start = time.perf_counter()
    profiling, _ = _profiling(installation, [])
    made = collect(store, platform, installation, space, points, configs, ui, profiling)
    minutes = (time.perf_counter() - start) / 60
    report = fit_and_store(store, platform, fingerprint, space, minutes, args.seed)
    for table in train_tables(report):
        ui.print(table)
    ui.info(
        f"model: {report.winner} on {', '.join(report.selected)}; {made} runs made now, "
        f"{report.runs} in the training set; {minutes:.1f} min"
    )
    if args.json:
        print(json.dumps({**report.to_json(), "minutes": minutes}, separators=(",", ":")))
    return 0


def cmd_predict(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune import stats
    from commtune.launch import launcher_for, resolve_command
    from commtune.platform import Fingerprint
    from commtune.predict import Predictor, features_of, model_store
    from commtune.report import UI
    from commtune.report._predict_tables import prediction_table
    from commtune.trial import LocalExecutor, Objective
    from commtune.tune import StudySpec, save_accepted_study

    if not command:
        raise UsageError("missing '--' before the command, e.g. -- mpirun -np 4 ./app")
    installation = resolve_command(command, _vendor(args.mpi))
    ui = UI(json_mode=args.json)
    store = model_store(args.storage, installation)
    predictor = Predictor.load(store, installation, args.force, ui)
    knobs = [d.knob for d in predictor.space.dimensions]
    profiling, intents = _profiling(installation, knobs)
    launcher = launcher_for(installation)
    executor = LocalExecutor(
        launcher, command, knobs, Objective.parse("wall"), profiling=profiling, intents=intents
    )
    ui.info(f"{installation.describe()}; one profiled run with the library's defaults")
    run = executor.run(None, args.timeout)
    if run.failure is not None or run.profile is None:
        raise UsageError(f"the profiled run failed ({run.failure or 'no profile written'})")
    features = features_of(run.profile)
    config = predictor.predict(features)
    ui.print(prediction_table(predictor.space, features, config))
    name = (
        args.study
        or f"predict-{_default_study_name(command, installation.vendor.value, predictor.space)}"
    )
    out: dict[str, Any] = {
        "study": name,
        "model": predictor.data["model"]["kind"],
        "features": features,
        "params": config,
    }
    speedup = None
    accepted = True
    reason = "predicted from one profiled run (not verified)"
    if args.verify:
        default_times: list[float] = []
        predicted_times: list[float] = []
        with ui.progress("verify: default and predicted, interleaved", 2 * args.pairs) as bar:
            for _ in range(args.pairs):
                for config_or_none, times in ((None, default_times), (config, predicted_times)):
                    r = executor.run(config_or_none, args.timeout)
                    if r.failure is not None or r.value is None:
                        raise UsageError(f"a verification run failed ({r.failure})")
                    times.append(r.value)
                    bar.advance()
        comparison = stats.compare(default_times, predicted_times)
        speedup = comparison.speedup
        accepted = comparison.faster
        reason = (
            "predicted; verified faster beyond noise"
            if accepted
            else ("predicted; not faster beyond noise: the default stays")
        )
        out["verify"] = {
            "speedup": comparison.speedup,
            "ci": [comparison.ci_low, comparison.ci_high],
            "p_value": comparison.p_value,
            "faster": comparison.faster,
            "default": default_times,
            "predicted": predicted_times,
        }
        ui.info(
            f"speedup {comparison.speedup:.3f}x (95 % CI {comparison.ci_low:.3f}-"
            f"{comparison.ci_high:.3f}); {reason}"
        )
    spec = StudySpec(list(command), installation.vendor.value, predictor.space.to_json(), "wall", 1)
    save_accepted_study(
        store.optuna,
        name,
        spec,
        config,
        reason,
        platform=Fingerprint.of(installation).key,
        speedup=speedup,
        accepted=accepted,
        extra={"features": features},
    )
    ui.info(f"stored as study {name}: `commtune run --study {name} -- ...` applies it")
    if args.json:
        print(json.dumps(out, separators=(",", ":")))
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from pathlib import Path

    from commtune.report import UI
    from commtune.report._sample_tables import checks_table, predict_table, sample_tables
    from commtune.sample import sample_platform, verify
    from commtune.store import Store

    installation = _installation(args.mpi)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    store = Store(args.storage)
    ui = UI(json_mode=args.json)
    result = sample_platform(
        installation,
        store,
        ui,
        ranks=args.np,
        quick=args.quick,
        refresh=args.refresh,
        output_dir=Path(args.output_dir),
        operations=ops,
        plots=not args.no_plots,
    )
    for table in sample_tables(result):
        ui.print(table)
    out = result.to_json()
    if args.predict is not None:
        rows = result.profile.predictions(args.predict)
        ui.print(predict_table(rows, args.predict))
        out["predict"] = rows
    if args.verify:
        checks = verify(installation, result.profile, result.outputs, ui)
        ui.print(checks_table(checks))
        out["verify"] = [c.to_json() for c in checks]
    if args.json:
        print(json.dumps(out, separators=(",", ":")))
    return 0


def cmd_rails(args: argparse.Namespace) -> int:
    from rich.table import Table

    from commtune.rails._bench import bench
    from commtune.report import UI

    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        raise UsageError(f"--rates {args.rates!r}: give Mbit/s numbers, e.g. 400,200") from None
    if not rates or min(rates) <= 0:
        raise UsageError("--rates needs at least one positive rate")
    ui = UI(json_mode=args.json)
    curves, strategies = bench(rates, args.size, args.repeats, ui)
    aggregate = sum(rates) * 1e6 / 8  # bytes per second
    table = Table(title=f"{args.size} B over {len(rates)} rails ({args.rates} Mbit/s)")
    for column in ("split", "chunks", "predicted", "measured (median)", "meas/pred",
                   "share of aggregate bandwidth"):  # fmt: skip
        table.add_column(column)
    rows = []
    for st in strategies:
        row = st.to_json()
        row["aggregate_share"] = args.size / aggregate / row["measured_s"]
        rows.append(row)
        table.add_row(
            st.name,
            ",".join(map(str, st.chunks)),
            f"{st.predicted * 1e3:.1f} ms",
            f"{row['measured_s'] * 1e3:.1f} ms",  # type: ignore[operator]
            f"{row['measured_over_predicted']:.3f}",
            f"{row['aggregate_share']:.1%}",
        )
    ui.print(table)
    plan = rows[0]["measured_s"]
    gains = {r["name"]: r["measured_s"] / plan for r in rows[1:]}  # type: ignore[operator]
    ui.info("plan is " + ", ".join(f"{g:.2f}x faster than {n}" for n, g in gains.items()))
    if args.json:
        out = {
            "rates_mbit": rates,
            "size": args.size,
            "curves": {n: c.to_json() for n, c in curves.items()},
            "strategies": rows,
            "gain_over": gains,
        }
        print(json.dumps(out, separators=(",", ":")))
    return 0


# -- studies, show, export, run ---------------------------------------------------------------
def _load(url: str, name: str) -> tuple[Store, optuna.Study]:
    import optuna

    from commtune.store import Store

    store = Store(url, create=False)
    try:
        study = optuna.load_study(study_name=name, storage=store.optuna)
    except KeyError:
        raise UsageError(f"no study named {name!r} in {store.url}") from None
    if "commtune" not in study.user_attrs:
        raise UsageError(f"study {name!r} was not made by commtune")
    return store, study


def _study_knobs(study: optuna.Study) -> tuple[str, list[Knob]]:
    from commtune.knobs import load_catalog

    spec = study.user_attrs["commtune"]
    catalog = load_catalog(spec["library"])
    return spec["library"], [catalog[d["knob"]] for d in spec["space"] if d["knob"] in catalog]


def _chosen_config(study: optuna.Study, best: bool) -> dict[str, Any] | None:
    """The accepted configuration; with ``best``, the best measured one. None: the default."""
    from commtune.tune import best_trials, config_of

    acc = study.user_attrs.get("acceptance")
    if acc and acc["accepted"]:
        params: dict[str, Any] = acc["params"]
        return params
    if best:
        top = best_trials(study, 1)
        return config_of(top[0]) if top else None
    return None


def _accepted_env(study: optuna.Study) -> dict[str, str]:
    """Variables the accepted configuration needs beyond its knobs (a selection file)."""
    acc = study.user_attrs.get("acceptance") or {}
    return dict(acc.get("env") or {}) if acc.get("accepted") else {}


def cmd_export(args: argparse.Namespace) -> int:
    from commtune.report._export import render, write_atomic

    _, study = _load(args.storage, args.study)
    library, knobs = _study_knobs(study)
    config = _chosen_config(study, args.best)
    if config is None:
        raise UsageError(
            f"study {args.study!r} has no accepted configuration (the default stays); "
            "--best exports the best measured one anyway"
        )
    text = render(args.format, library, knobs, config, args.study, _accepted_env(study))
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_run(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.knobs import environment
    from commtune.launch import launcher_for, resolve_command

    if command is None:
        raise UsageError("missing '--' before the command to run")
    _, study = _load(args.storage, args.study)
    library, knobs = _study_knobs(study)
    installation = resolve_command(command, _vendor(library))
    config = _chosen_config(study, best=False)
    if config is None:
        print(
            f"commtune: study {args.study} accepted no configuration; running with the "
            "library defaults",
            file=sys.stderr,
        )
    extra = _accepted_env(study) if config is not None else {}
    plan = launcher_for(installation).plan(
        command, {**environment(knobs, config or {}), **extra}, remove=[k.env for k in knobs]
    )
    sys.stdout.flush()
    try:
        os.execvpe(plan.argv[0], plan.argv, plan.env)
    except OSError as exc:
        raise UsageError(f"cannot run {plan.argv[0]}: {exc.strerror}") from None


def cmd_studies(args: argparse.Namespace) -> int:
    import optuna
    from rich.table import Table

    from commtune.report import UI
    from commtune.store import Store

    store = Store(args.storage, create=False)
    rows = []
    for summary in optuna.get_all_study_summaries(store.optuna, include_best_trial=False):
        attrs = summary.user_attrs
        spec = attrs.get("commtune", {})
        acc = attrs.get("acceptance") or {}
        rows.append(
            {
                "study": summary.study_name,
                "mpi": spec.get("library"),
                "trials": summary.n_trials,
                "command": " ".join(spec.get("command", [])),
                "speedup": acc.get("speedup"),
                "accepted": bool(acc.get("accepted")),
            }
        )
    ui = UI(json_mode=args.json)
    table = Table(title=f"studies in {store.url}")
    for column in ("study", "mpi", "trials", "speedup", "accepted", "command"):
        table.add_column(column)
    for r in rows:
        speedup = "" if r["speedup"] is None else f"{r['speedup']:.2f}x"
        table.add_row(
            r["study"],
            str(r["mpi"]),
            str(r["trials"]),
            speedup,
            "yes" if r["accepted"] else "no",
            r["command"],
        )
    ui.print(table)
    if args.json:
        print(json.dumps({"studies": rows}, separators=(",", ":")))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from commtune.report import UI
    from commtune.report._tables import trials_table
    from commtune.tune import ROLE, config_of, run_values

    _, study = _load(args.storage, args.study)
    trials = []
    for t in study.get_trials(deepcopy=False):
        note = t.user_attrs.get("fail_reason", "")
        if "duplicate_of" in t.user_attrs:
            note = f"same as trial {t.user_attrs['duplicate_of']}"
        trials.append(
            {
                "number": t.number,
                "role": t.user_attrs.get(ROLE, "?"),
                "state": t.state.name,
                "value": t.value,
                "params": config_of(t),
                "runs": run_values(t),
                "note": note,
            }
        )
    ui = UI(json_mode=args.json)
    ui.print(trials_table(trials, f"study {args.study}"))
    acc = study.user_attrs.get("acceptance")
    if args.json:
        out = {
            "study": args.study,
            "spec": study.user_attrs["commtune"],
            "trials": trials,
            "acceptance": acc,
        }
        print(json.dumps(out, separators=(",", ":")))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, command = _split_command(argv)
    try:
        args = build_parser().parse_args(own)
        if command is not None and args.cmd not in ("tune", "run", "profile", "predict"):
            raise UsageError(f"commtune {args.cmd} takes no command after '--'")
        if args.cmd == "tune":
            return cmd_tune(args, command)
        if args.cmd == "run":
            return cmd_run(args, command)
        if args.cmd == "profile":
            return cmd_profile(args, command)
        if args.cmd == "predict":
            return cmd_predict(args, command)
        handlers = {
            "demo": cmd_demo,
            "knobs": cmd_knobs,
            "export": cmd_export,
            "studies": cmd_studies,
            "show": cmd_show,
            "lib": cmd_lib,
            "cvars": cmd_cvars,
            "sample": cmd_sample,
            "train": cmd_train,
            "rails": cmd_rails,
        }
        return handlers[args.cmd](args)
    except UsageError as exc:
        print(f"commtune: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "commtune: interrupted; finished trials are saved (re-run to resume)", file=sys.stderr
        )
        return 130
