"""``commtune train`` and ``commtune predict``: the prediction model of this platform, and a
configuration predicted from one profiled run of the user's command."""

from __future__ import annotations

import argparse
import time
from typing import Any

from commtune.cli._common import (
    Command,
    add_json,
    add_mpi,
    add_storage,
    need_command,
    positive,
    print_json,
)
from commtune.errors import UsageError
from commtune.knobs import enumerators as knob_enumerators
from commtune.mpi import Vendor, installation_of


def _add_train(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    add_storage(p)
    defaults = ", ".join(f"{','.join(map(str, v.impl.training_ranks))} {v.title}" for v in Vendor)
    p.add_argument(
        "--np", help=f"rank counts of the training runs (comma list; default {defaults})"
    )
    p.add_argument("--quick", action="store_true", help="a small but real model (a few minutes)")
    p.add_argument(
        "--budget", type=positive(int), help="training runs in all (default 312, --quick 90)"
    )
    p.add_argument(
        "--configs",
        type=positive(int),
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
    p.add_argument("--platform", help="a simulated cluster's platform file (commtune cluster)")
    p.add_argument("--hostfile", help="a simulated cluster's hostfile (commtune cluster)")
    add_json(p)


def _add_predict(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    add_storage(p)
    p.add_argument("--verify", action="store_true", help="time default vs predicted, interleaved")
    p.add_argument(
        "--pairs", type=positive(int), default=5, help="pairs of runs for --verify (default 5)"
    )
    p.add_argument("--force", action="store_true", help="use a model of another platform")
    p.add_argument(
        "--timeout", type=positive(float), default=3600.0, help="seconds per run (default 3600)"
    )
    p.add_argument("--study", help="name of the study stored (default predict-MPI-PROGRAM)")
    p.add_argument(
        "--metric",
        default="wall",
        help="what --verify compares: 'wall' (default), 'regex:PATTERN' (first group of the "
        "last match in the program's output, e.g. NPB's 'Time in seconds') or "
        "'profile:FIELD', as for tune",
    )
    add_json(p)


def cmd_train(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.knobs import build_space, installed_knobs
    from commtune.launch import launcher_for
    from commtune.platform import Fingerprint, on_testbed
    from commtune.predict import collect, design_points, fit_and_store
    from commtune.report import UI, train_tables
    from commtune.service import open_store, probe, profiling
    from commtune.store import normalize_url
    from commtune.strategies import design_configs

    inst = installation_of(args.mpi)
    default_np = ",".join(map(str, inst.impl.training_ranks))
    try:
        ranks = [int(r) for r in (args.np or default_np).split(",") if r.strip()]
    except ValueError:
        raise UsageError(f"--np {args.np!r}: expected rank counts such as 2,4") from None
    if not ranks or min(ranks) < 2:
        raise UsageError("--np: the training benchmark needs at least 2 ranks")
    # checked before anything is written; the model is stored under its cluster
    runs = inst.runs_on(args.platform, args.hostfile, "training on", max(ranks))
    cluster = runs.model_key
    configs_per_point = args.configs or (8 if args.quick else 12)
    budget = args.budget or (90 if args.quick else 312)
    n_points = budget // (configs_per_point + 1)
    if n_points < 4:
        raise UsageError(
            f"--budget {budget}: fewer than 4 input points of {configs_per_point + 1} runs each"
        )
    # inside a test bed's node the training runs span nodes: the network's default space
    space = build_space(installed_knobs(inst), inst.vendor.value, args.knob,
                        across_nodes=on_testbed())  # fmt: skip
    url = normalize_url(args.storage)
    ui = UI(json_mode=args.json)
    store, platform = open_store(url, inst, cluster)
    space = probe(space, launcher_for(inst), store, platform, ui)
    fingerprint = Fingerprint.of(inst, nodes=cluster)
    points = design_points(n_points, ranks, args.seed, simulated=runs.deterministic)
    configs = design_configs(space, configs_per_point, args.seed)
    ui.info(
        f"{inst.describe()}{'; ' + cluster if cluster else ''}; {len(points)} input points x "
        f"{len(configs) + 1} configurations of {', '.join(space.names)}"
    )
    start = time.perf_counter()
    made = collect(store, platform, inst, space, points, configs, ui,
                   None if runs.traced else profiling(inst), simulated=runs.files)  # fmt: skip
    minutes = (time.perf_counter() - start) / 60
    report = fit_and_store(store, platform, fingerprint, space, minutes, args.seed)
    for table in train_tables(report):
        ui.print(table)
    ui.info(
        f"model: {report.winner} on {', '.join(report.selected)}; {made} runs made now, "
        f"{report.runs} in the training set; {minutes:.1f} min"
    )
    if args.json:
        print_json({**report.to_json(), "minutes": minutes})
    return 0


def cmd_predict(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.launch import launcher_for
    from commtune.mpi import Lack, resolve_command
    from commtune.platform import Fingerprint
    from commtune.predict import Predictor, features_of, model_store
    from commtune.report import UI, prediction_table
    from commtune.service import default_study_name, profiling
    from commtune.study import (
        Acceptance,
        Notes,
        Source,
        StudySpec,
        save_result_study,
    )
    from commtune.trial import LocalExecutor, Objective, profiled

    command = need_command(command)
    inst = resolve_command(command, args.mpi)
    runs = inst.runs(command)
    cluster = runs.model_key
    metric = inst.impl.run_value if args.metric == "wall" else args.metric
    objective = Objective.parse(metric)
    ui = UI(json_mode=args.json)
    store = model_store(args.storage, inst)
    predictor = Predictor.load(store, inst, args.force, ui, nodes=cluster)
    knobs = [d.knob for d in predictor.space.dimensions]
    executor = LocalExecutor(
        launcher_for(inst),
        command,
        knobs,
        objective,
        profiling=None if Lack.PRELOAD in inst.impl.lacks else profiling(inst),
        enumerators=knob_enumerators(inst),
    )
    ui.info(f"{inst.describe()}{'; ' + cluster if cluster else ''}; one profiled run with the "
            "library's defaults")  # fmt: skip
    run = profiled(executor).run(None, args.timeout)
    if run.failure is not None or run.profile is None:
        raise UsageError(f"the profiled run failed ({run.failure or 'no profile written'})")
    features = features_of(run.profile)
    config = predictor.predict(features)
    ui.print(prediction_table(predictor.space, features, config))
    name = (
        args.study or f"predict-{default_study_name(command, inst.vendor.value, predictor.space)}"
    )
    out: dict[str, Any] = {
        "study": name,
        "model": predictor.data["model"]["kind"],
        "features": features,
        "params": config,
        "metric": metric,
    }
    # a proposal until a run against the defaults has measured it (--verify here, or
    # `commtune check`, which `commtune run --study` makes first)
    verdict = Acceptance(
        Source.PREDICT,
        dict(config),
        False,
        "predicted from one profiled run: a proposal, not measured against the defaults",
        notes=Notes(proposal=True, features=features),
    )
    if args.verify:
        verdict, out["verify"] = _verify(executor, config, args, runs.deterministic, verdict, ui)
    spec = StudySpec(list(command), inst.vendor.value, predictor.space.to_json(), metric, 1)
    save_result_study(
        store.optuna, name, spec, verdict, platform=Fingerprint.of(inst, nodes=cluster).key
    )
    if verdict.accepted or not args.verify:
        then = "applies it" if verdict.accepted else "checks it against the defaults first"
        ui.info(f"stored as study {name}: `commtune run --study {name} -- ...` {then}")
    else:
        ui.info(f"stored as study {name}: the defaults stay")
    if args.json:
        print_json(out)
    return 0


def _verify(executor: Any, config: dict[str, Any], args: argparse.Namespace, exact: bool,
            verdict: Any, ui: Any) -> tuple[Any, dict[str, Any]]:  # fmt: skip
    """``predict --verify``: the prediction beside the defaults in pairs whose order a coin
    draws, judged by the tuner's rule (``exact``: a simulation leaving computation out, one
    pair of deterministic runs is the measurement): the verdict the runs give, and their
    figures for ``--json``."""
    from dataclasses import replace

    from commtune.study import DEFAULTS, ExactFinding, Gate, RiskFinding
    from commtune.tune import executor_runner, lone

    # a simulation leaving computation out is deterministic: one pair is the measurement
    pairs = 1 if exact else args.pairs
    with ui.progress("verify: default and predicted, interleaved", 2 * pairs) as bar:
        done = lone(executor_runner(executor, args.timeout), config, [(pairs, DEFAULTS.risk)],
                    tolerance=DEFAULTS.tolerance, min_gain=DEFAULTS.min_gain, seed=None,
                    bar=bar, hopeless=False)  # fmt: skip
    if done.failed is not None:
        raise UsageError(f"a verification run failed: {done.failed.comparison()}")
    default_times, predicted_times = list(done.defaults), list(done.config)
    found: ExactFinding | RiskFinding
    if exact:  # one pair of deterministic runs: the speedup is theirs, faster when
        # it clears the minimum gain
        s = default_times[0] / predicted_times[0]
        faster, speedup, ci = s >= 1 + DEFAULTS.min_gain, s, (s, s)
        gate, found = Gate.EXACT, ExactFinding(min_gain=DEFAULTS.min_gain)
        reason = (
            f"predicted; verified: {s:.4g}x in deterministic runs"
            if faster
            else f"predicted; {s:.4g}x in deterministic runs, below the minimum "
            f"gain of {DEFAULTS.min_gain:.0%}: the default stays"
        )
    else:  # the tuner's rule (--gate risk) on the interleaved pairs, one look at the end
        assert done.test is not None
        faster, speedup, ci = done.passed, done.test.speedup, done.test.interval
        gate = Gate.RISK
        found = RiskFinding(risk_limit=DEFAULTS.risk, tolerance=DEFAULTS.tolerance,
                            min_gain=DEFAULTS.min_gain)  # fmt: skip
        reason = (
            "predicted; verified: expected faster at the risk allowed"
            if faster
            else "predicted; not shown faster at the risk allowed: the default stays"
        )
    verdict = replace(verdict, accepted=faster, reason=reason, speedup=speedup, ci=ci,
                      default_values=default_times, best_values=predicted_times, gate=gate,
                      finding=found, notes=replace(verdict.notes, proposal=False))  # fmt: skip
    ui.info(f"expected {speedup:.3f}x (90 % interval {ci[0]:.3f}-{ci[1]:.3f}); {reason}")
    return verdict, {"speedup": speedup, "ci": list(ci), "faster": faster,
            "default": default_times, "predicted": predicted_times}  # fmt: skip


COMMANDS = [
    Command("train", "train the prediction model on the training benchmark", _add_train, cmd_train),
    Command(
        "predict",
        "predict a configuration from one profiled run",
        _add_predict,
        cmd_predict,
        takes_command=True,
    ),
]
