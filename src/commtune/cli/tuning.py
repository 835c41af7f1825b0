"""``commtune tune`` and ``commtune demo``: their arguments, parsed into one
:class:`~commtune.study.Plan`, the tuning service called (``commtune.service``), the result
printed. The service is imported by the handlers only: ``commtune --help`` does not load
the tuner, the storage or the numerical libraries."""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any

from commtune.cli._common import (
    Command,
    add_json,
    add_mpi,
    add_storage,
    default_storage,
    fraction,
    nonnegative_int,
    positive,
    print_json,
)
from commtune.errors import UsageError
from commtune.knobs import PRESETS
from commtune.study import DEFAULTS, GATES, Gate, Plan, default_repeats

if TYPE_CHECKING:
    from commtune.report import UI
    from commtune.service import Outcome, Recorded

OBJECTIVES = ("median", "mean", "p90")  # stats.STATISTICS, without importing numpy for --help
DEMO_TRIALS = 16
DEMO_MAX_RUNS = 30  # the demo's verdict, the duel included, in at most 30 runs
MAX_RUNS = 30  # a study's runs when the user grants none: runs are node-hours
TWIN_RUNS = 14  # with --twin: the simulation searched, the real runs only decide (6 pairs)
DEMO_METRIC = r"regex:time ([0-9.eE+-]+) s"


def _strategy_help() -> str:
    from commtune.strategies import STRATEGIES

    return " | ".join(STRATEGIES) + f" (default {DEFAULTS.strategy})"


def _many(p: argparse.ArgumentParser, flag: str, **kwargs: Any) -> None:
    """An option given any number of times (a list, empty by default)."""
    p.add_argument(flag, action="append", default=[], **kwargs)


def _add_tune_options(p: argparse.ArgumentParser, demo: bool) -> None:
    add_mpi(p)
    _many(
        p,
        "--knob",
        metavar="NAME[=V1,V2|...]",
        help="tune this knob (optionally only these values); repeatable",
    )
    _many(
        p,
        "--preset",
        choices=PRESETS,
        help="tune a group of knobs; repeatable",
    )
    p.add_argument("--strategy", default=DEFAULTS.strategy, help=_strategy_help())
    _many(
        p,
        "--strategy-option",
        metavar="KEY=VALUE",
        help="an option of the strategy, e.g. population=12 for ga; repeatable",
    )
    _add_budget_options(p, demo)
    _add_verdict_options(p)
    _add_study_options(p, demo)


def _add_budget_options(p: argparse.ArgumentParser, demo: bool) -> None:
    """How many trials and runs a study spends, and how it weighs their noise."""
    p.add_argument(
        "--trials",
        type=positive(int),
        help=f"trials in the study, the reference included (default "
        f"{DEMO_TRIALS if demo else DEFAULTS.trials})",
    )
    p.add_argument(
        "--repeats",
        type=positive(int),
        help=f"runs of the reference, the defaults measured first (default {DEFAULTS.repeats}; "
        "2 where --max-runs cannot give every trial 3); under --gate strict also the most "
        "runs of each configuration, raced (a clearly slower one stops after one). Under the "
        "default --gate risk the search runs each configuration once and the verdict's rule "
        "decides how often one is run again",
    )
    p.add_argument(
        "--fixed-repeats",
        action="store_true",
        help="--gate strict: give every configuration all --repeats runs (no racing); "
        "refused under --gate risk, whose search runs each configuration once",
    )
    p.add_argument(
        "--assume-noise",
        action="store_true",
        help="weigh noise even when the defaults' runs all give one value (a program that "
        "prints its time rounded); by default such runs are deterministic (a simulation): "
        "one run a configuration, no controls",
    )
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=DEFAULTS.statistic,
        help="statistic of a configuration's runs the search ranks by: median (default), "
        "mean (what throughput follows) or p90 (penalises a heavy tail); the verdict's "
        "paired test (--gate risk) compares every pair of runs, not a statistic of them",
    )
    p.add_argument(
        "--no-inrun",
        action="store_true",
        help="a collective's algorithm variable the library reads while the program runs is "
        "raced call by call inside the program's runs (see 'commtune race'; in a space of more "
        "knobs first, the rest on whole runs); this searches it on whole runs instead",
    )
    p.add_argument(
        "--inrun-runs",
        type=positive(int),
        default=DEFAULTS.inrun_runs,
        help=f"raced runs at most (default {DEFAULTS.inrun_runs}): after a run that hands "
        "nothing back, the slower half of the candidates is dropped and the rest raced again",
    )
    p.add_argument(
        "--max-runs",
        type=positive(int),
        help="bound on every run of the study (reference, controls and the verdict's runs "
        f"included); default {DEMO_MAX_RUNS if demo else MAX_RUNS}"
        + ("" if demo else f", {TWIN_RUNS} with --twin and no --knob"),
    )


def _add_verdict_options(p: argparse.ArgumentParser) -> None:
    """How the verdict decides, and the bounds of each run."""
    p.add_argument(
        "--gate",
        choices=GATES,
        default=DEFAULTS.gate,
        help="how the verdict decides: 'risk' (default) runs the search's best beside the "
        "defaults, each pair's order drawn at random, and hands one back only where a "
        "configuration --tolerance slower would do as well in its pairs of runs with a "
        "chance below --risk (docs/architecture.md, 'The "
        "verdict'); 'strict' confirms the --top best in --confirm rounds with a "
        "signed-rank test at 5 %%",
    )
    p.add_argument(
        "--risk",
        type=fraction,
        default=DEFAULTS.risk,
        help=f"--gate risk: the chance, at most, that what the study hands back is more than "
        f"--tolerance slower than the defaults (default {DEFAULTS.risk:g}: 5 %%); a higher "
        "risk hands back more often, on fewer runs",
    )
    p.add_argument(
        "--min-gain",
        type=fraction,
        default=DEFAULTS.min_gain,
        help=f"--gate risk: the smallest gain worth a change: the estimated speedup must clear "
        f"1 + it (default {DEFAULTS.min_gain:g}: 1 %%)",
    )
    p.add_argument(
        "--tolerance",
        type=fraction,
        default=DEFAULTS.tolerance,
        help=f"--gate risk: the slowdown that counts as one (default {DEFAULTS.tolerance:g}: 2 %%)",
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
        help="0: no verdict (the search's best is shown, nothing handed back); under --gate "
        "strict, the first rounds of the confirmation: the best configurations and the "
        "default once each per round, more rounds while undecided, up to 3x",
    )
    p.add_argument(
        "--top",
        type=positive(int),
        help=f"--gate strict: configurations the confirmation runs against the default "
        f"(default {DEFAULTS.top}); refused under --gate risk, which tests the search's best "
        "in turn",
    )


def _add_study_options(p: argparse.ArgumentParser, demo: bool) -> None:
    """What is measured, what the study starts from, its name and storage."""
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
    p.set_defaults(
        default_metric=DEMO_METRIC if demo else "wall",
        default_trials=DEMO_TRIALS if demo else DEFAULTS.trials,
    )
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
    _many(
        p,
        "--scale",
        metavar="NAME=VALUE",
        help="the command is a template: {NAME} in it becomes VALUE, the scale tuned at "
        "(e.g. --scale size=1M -- mpirun -np 2 ./kernel -n {size}); repeatable",
    )
    _many(
        p,
        "--train",
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
        "--as",
        dest="as_library",
        metavar="LIBRARY",
        help="on a simulated cluster: tune as this real library (its own decision the "
        "reference, its algorithms the simulator models faithfully the space, the answer "
        "in its own settings, a proposal for commtune check on the real machine)",
    )
    p.add_argument(
        "--twin",
        metavar="LINE",
        help="the same program built with the simulator's compiler wrapper and its launch "
        "line, quoted, with -platform and -hostfile (commtune calibrate writes both): its "
        "simulated study, tuned as the library of the real line, ranks the configurations; "
        "the real runs (--max-runs, default 10 here) only decide, the simulation's best "
        "first; knobs of --knob/--preset it does not model are searched on the real "
        "machine, its best pinned (docs/guide/simulate.md)",
    )
    p.add_argument(
        "--sim-budget",
        type=positive(float),
        default=DEFAULTS.sim_budget,
        metavar="SECONDS",
        help=f"this machine's wall time for a simulated search: --twin's, or a study of a "
        f"simulated cluster given neither --max-runs nor --trials (default "
        f"{DEFAULTS.sim_budget:g} s); every configuration where that covers the space",
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
    p.add_argument(
        "--ucx",
        action="store_true",
        help="launch over UCX as an InfiniBand cluster does: the library's own options (pml "
        "ucx where its point-to-point layer is chosen at launch, here with UCX on TCP and "
        "shared memory; none where its device is UCX already)",
    )
    p.add_argument(
        "--build",
        metavar="DIR",
        help="tune nothing: build the programs the guides run with --mpi's compiler wrapper "
        "into DIR (and, where a simulator is installed, with its wrapper: NAME.SIMULATOR)",
    )


def _nodes(text: str) -> int | str:
    if text == "auto":
        return text
    if not text.isdigit() or not 2 <= int(text) <= 8:
        raise argparse.ArgumentTypeError(f"{text!r}: 2-8 nodes or auto")
    return int(text)


def plan_of(args: argparse.Namespace) -> Plan:
    """The study's settings from ``tune``/``demo``'s arguments (their syntax checked here,
    the plan as a whole by ``service.check``)."""
    sbatch = getattr(args, "sbatch", None)
    if sbatch is not None:
        try:
            sbatch = tuple(shlex.split(sbatch))
        except ValueError as exc:
            raise UsageError(f"--sbatch {args.sbatch!r}: {exc}") from None
    strict_only = {"--top": args.top is not None, "--fixed-repeats": args.fixed_repeats}
    for flag in (f for f, given in strict_only.items() if given and args.gate == Gate.RISK):
        raise UsageError(f"{flag} is --gate strict's: the default verdict (--gate risk) runs "
                         "each configuration once in the search and tests the search's best "
                         "in turn; drop it, or add --gate strict")  # fmt: skip
    twin = _twin_line(getattr(args, "twin", None))
    alone = twin and not (args.knob or args.preset)  # the real runs only decide
    max_runs = args.max_runs if args.max_runs is not None else TWIN_RUNS if alone else MAX_RUNS
    trials = args.trials if args.trials is not None else args.default_trials
    return Plan(
        strategy=args.strategy,
        strategy_options=_strategy_options(args.strategy_option),
        trials=trials,
        repeats=args.repeats or default_repeats(max_runs, trials),
        statistic=args.objective,
        timeout=args.timeout,
        reference_timeout=args.reference_timeout,
        confirm=args.confirm,
        top=DEFAULTS.top if args.top is None else args.top,
        max_runs=max_runs,
        gate=Gate(args.gate),
        risk=args.risk,
        min_gain=args.min_gain,
        tolerance=args.tolerance,
        seed=args.seed,
        racing=not args.fixed_repeats,
        exact=not args.assume_noise,
        inrun=not args.no_inrun,
        inrun_runs=args.inrun_runs,
        mpi=args.mpi,
        knobs=tuple(args.knob),
        presets=tuple(args.preset),
        metrics=tuple(args.metric or [args.default_metric]),
        interposer=not args.no_interposer,
        knowledge=not args.no_knowledge,
        study=args.study,
        storage=args.storage,
        replay=getattr(args, "replay", None),
        record=getattr(args, "record", None),
        scales=tuple(getattr(args, "scale", ())),
        trains=tuple(getattr(args, "train", ())),
        train_from=getattr(args, "train_from", None),
        sbatch=sbatch,
        as_library=getattr(args, "as_library", None),
        twin=twin,
        sim_budget=getattr(args, "sim_budget", DEFAULTS.sim_budget),
        by_wall_time=args.max_runs is None and args.trials is None,
    )


def _twin_line(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    try:
        line = tuple(shlex.split(text))
    except ValueError as exc:
        raise UsageError(f"--twin {text!r}: {exc}") from None
    if not line:
        raise UsageError("--twin: an empty line; give the simulator's launch line of its build")
    return line


def _strategy_options(given: list[str]) -> dict[str, str]:
    out = {}
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--strategy-option {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def cmd_tune(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.report import UI
    from commtune.service import Tuning, check

    ui = UI(json_mode=args.json)
    return _print(ui, Tuning(check(plan_of(args)), ui).run(command), args)


def cmd_demo(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.report import UI
    from commtune.service import check, demo

    ui = UI(json_mode=args.json)
    if args.build:
        from commtune.service import build_programs

        made = build_programs(plan_of(args), args.build, ui)
        if args.json:
            print_json({"built": [str(p) for p in made]})
        return 0
    return _print(ui, demo(check(plan_of(args)), ui, args.np, args.nodes, args.ucx), args)


def _print(ui: UI, done: Outcome | Recorded, args: argparse.Namespace) -> int:
    """The result table, the verdict, the warnings and what to type next (or the table
    recorded)."""
    from commtune.report import acceptance_lines, next_steps, noise_line, result_table
    from commtune.service import Recorded
    from commtune.store import normalize_url

    if isinstance(done, Recorded):
        if args.json:
            print_json(done.to_json())
        return 0
    result = done.result
    ui.print(result_table(result, done.space.defaults()))
    for line in acceptance_lines(result):
        ui.info(line)
    if done.extra.get("reference"):
        ui.info(f"every speedup above is against {done.extra['reference']}")
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
    given = normalize_url(args.storage)
    storage = given if given != normalize_url(default_storage()) else None
    for line in next_steps(result, done.library, storage, done.command, done.bed):
        ui.command(line)
    if args.json:
        print_json({**result.to_json(), **done.extra})
    return 0


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
