"""``commtune sample`` and ``commtune rails bench``: the platform measured once (NewMadeleine):
thresholds, collective selection files, plots; the multi-rail split planner proven.
``commtune calibrate``: a simulated node and its links measured from the real machine;
``commtune cluster``: a simulated cluster, written from a few words or a calibration."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from commtune.cli._common import (
    Command,
    Parser,
    add_json,
    add_mpi,
    add_storage,
    cluster_files,
    positive,
    print_json,
    size,
)
from commtune.errors import UsageError
from commtune.mpi import installation_of


def _add_sample(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    add_storage(p)
    p.add_argument("--np", default="2",
                   help="ranks (default 2); on a simulated cluster a comma list, e.g. "
                   "64,256,1024")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (< 60 s)")
    p.add_argument("--refresh", action="store_true", help="sample again even if stored")
    p.add_argument(
        "--ops",
        help="operations to sample (comma list of pingpong, vector, burst, allreduce, "
        "bcast, reduce, allgather, alltoall, and when named alltoallv, allgatherv, gather, "
        "scatter, reduce_scatter_block, reduce_scatter, scan, barrier; 'all': every one; "
        "default: the first eight)",
    )
    p.add_argument(
        "-o", "--output-dir", default="commtune-platform", help="where files and plots go"
    )
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    sim = p.add_argument_group("a simulated cluster")
    sim.add_argument("--platform", help="its platform file (commtune cluster writes one)")
    sim.add_argument("--hostfile", help="its hostfile")
    sim.add_argument("--timeout", type=positive(float), default=3600.0,
                     help="a simulation's wall time at most, seconds (default 3600): one past "
                     "it is a failed sample of that algorithm")  # fmt: skip
    sim.add_argument("--for", dest="targets",
                     help="the real libraries whose selection files to write (comma list of "
                     "--mpi specs; default: each installed library the simulator carries "
                     "ports "
                     "of)")  # fmt: skip
    p.add_argument(
        "--verify",
        action="store_true",
        help="time the selection file against the forced choices, and the sampled "
        "thresholds against the library's (interleaved launches)",
    )
    p.add_argument(
        "--predict",
        type=size,
        metavar="SIZE",
        help="predict the time of every sampled operation at SIZE bytes (e.g. 48K)",
    )
    add_json(p)


def _add_rails(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="rails_cmd", required=True, parser_class=Parser)
    bench = sub.add_parser("bench", help="plan vs even split vs best single rail, measured")
    bench.add_argument(
        "--rates",
        default="400,200,100",
        help="rail rates in Mbit/s (comma list, default 400,200,100)",
    )
    bench.add_argument("--size", type=size, default=8 << 20, help="message size (default 8M)")
    bench.add_argument("--repeats", type=positive(int), default=5, help="transfers per strategy")
    add_json(bench)


def cmd_sample(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.report import (
        UI,
        checks_table,
        predict_table,
        sample_plots,
        sample_tables,
        thresholds_table,
    )
    from commtune.sample import sample_platform, verify, verify_thresholds, veto_slower
    from commtune.store import Store

    inst = installation_of(args.mpi)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()] if args.ops else None
    counts = _rank_counts(args.np)
    files = cluster_files(args, inst, "sampling")
    if files is not None:
        return _sample_simulated(args, inst, files, counts, ops)
    if len(counts) > 1:
        raise UsageError(f"--np {args.np}: one rank count on a real MPI")
    store = Store(args.storage)
    ui = UI(json_mode=args.json)
    result = sample_platform(
        inst,
        store,
        ui,
        ranks=counts[0],
        quick=args.quick,
        refresh=args.refresh,
        output_dir=Path(args.output_dir),
        operations=ops,
    )
    if not args.no_plots:  # the curves as PNG files beside the selection file
        result.outputs.files.update(sample_plots(result.profile, Path(args.output_dir)))
    for table in sample_tables(result):
        ui.print(table)
    out: dict[str, Any] = result.to_json()
    if args.predict is not None:
        rows = result.profile.predictions(args.predict)
        ui.print(predict_table(rows, args.predict))
        out["predict"] = rows
    if args.verify:
        checks = verify(inst, result.profile, result.outputs, ui)
        ui.print(checks_table(checks))
        out["verify"] = [c.to_json() for c in checks]
        thresholds = verify_thresholds(inst, result.profile, ui)
        if thresholds:
            ui.print(thresholds_table(thresholds))
        out["verify_thresholds"] = [c.to_json() for c in thresholds]
        vetoed, rewritten = veto_slower(store, inst, result.profile, thresholds,
                                        Path(args.output_dir))  # fmt: skip
        for knob, why in vetoed.items():
            ui.warn(f"{knob}: the sampled value is not handed back: {why}")
        if rewritten is not None:
            result.outputs.files.update(rewritten.files)
            out.update(result.profile.summary(), **rewritten.to_json())
            out["files"] = result.outputs.files
    if args.json:
        print_json(out)
    return 0


def _rank_counts(text: str) -> list[int]:
    try:
        counts = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise UsageError(f"--np {text!r}: expected a number of ranks (or a comma list of them)")
    return sorted(set(counts))


def _sample_simulated(
    args: argparse.Namespace,
    smpi: Any,
    files: tuple[str, str],
    counts: list[int],
    ops: list[str] | None,
) -> int:
    from commtune.mpi import Vendor, find_installation
    from commtune.report import UI, simulated_sample_tables
    from commtune.sample import DEFAULT_SIM_OPS, sample_simulated
    from commtune.store import Store

    if args.verify or args.predict is not None:
        raise UsageError(
            "--verify and --predict time a real MPI; on a simulated cluster, "
            "check the written selection with commtune check on the real machine"
        )
    if args.targets:
        targets = [installation_of(s.strip()) for s in args.targets.split(",") if s.strip()]
    else:  # each library SMPI has ports of, its usual installation (as --mpi NAME picks)
        targets = []
        for vendor in (v for v in Vendor if v.impl.smpi_selector is not None):
            try:
                targets.append(find_installation(vendor))
            except UsageError:
                continue  # not installed here
    ui = UI(json_mode=args.json)
    sample = sample_simulated(smpi, *files, counts, targets, ui,
                              ops=ops or DEFAULT_SIM_OPS, output_dir=Path(args.output_dir),
                              refresh=args.refresh, timeout=args.timeout,
                              store=Store(args.storage))  # fmt: skip
    for table in simulated_sample_tables(sample):
        ui.print(table)
    for warning in sample.warnings:
        ui.warn(warning)
    for library, path in sample.files.items():
        ui.info(f"{library}: {path}")
        ui.command("  " + " ".join(f"{k}={v}" for k, v in sample.env[library].items()))
        if library in sample.studies:
            ui.info(
                "a proposal until measured on the real machine: check it against the "
                "library's defaults there with"
            )
            ui.command(f"  commtune check {sample.studies[library]} --storage {args.storage} "
                       f"-- mpirun -np N ./app")  # fmt: skip
    if args.json:
        print_json(sample.to_json())
    return 0


def cmd_rails(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.rails import bench, summarize
    from commtune.report import UI, rails_table

    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        raise UsageError(f"--rates {args.rates!r}: give Mbit/s numbers, e.g. 400,200") from None
    if not rates or min(rates) <= 0:
        raise UsageError("--rates needs at least one positive rate")
    ui = UI(json_mode=args.json)
    curves, strategies = bench(rates, args.size, args.repeats, ui)
    rows, gains = summarize(strategies, rates, args.size)
    ui.print(rails_table(rows, args.rates, args.size, len(rates)))
    ui.info("plan is " + ", ".join(f"{g:.2f}x faster than {n}" for n, g in gains.items()))
    if args.json:
        print_json(
            {
                "rates_mbit": rates,
                "size": args.size,
                "curves": {n: c.to_json() for n, c in curves.items()},
                "strategies": rows,
                "gain_over": gains,
            }
        )
    return 0


def _add_cluster(p: argparse.ArgumentParser) -> None:
    from commtune.mpi import TOPOLOGIES, Cluster

    d = Cluster(1)
    p.add_argument("--nodes", type=positive(int), required=True, help="nodes of the cluster")
    p.add_argument(
        "--cores", type=positive(int), default=d.cores, help="cores a node (ranks a node)"
    )
    p.add_argument("--topology", choices=TOPOLOGIES, default=d.topology,
                   help="how the nodes are connected (default: %(default)s)")  # fmt: skip
    p.add_argument("--calibration", metavar="DIR",
                   help="a node and its links as commtune calibrate measured them (its --out): "
                   "links, compute speed, and the simulator's configuration beside")  # fmt: skip
    p.add_argument("--bandwidth",
                   help=f"a node's link, e.g. 100Gbps (default: {d.bandwidth})")  # fmt: skip
    p.add_argument("--latency", help=f"a link's latency (default: {d.latency})")
    p.add_argument("--speed", help=f"a core's speed (default: {d.speed})")
    p.add_argument("--taper", type=positive(int), default=d.taper,
                   help="fat tree: the leaf switches' uplinks divided by this (1: full "
                   "bisection)")  # fmt: skip
    p.add_argument("--backbone", help="flat: the switch's bandwidth, shared by every flow "
                   "(default: non-blocking, each flow at its link's rate)")  # fmt: skip
    p.add_argument("--out", required=True, help="directory for platform.xml and hosts")
    add_json(p)


def cmd_cluster(args: argparse.Namespace, command: list[str] | None) -> int:
    import shlex

    from commtune.mpi import (
        BUILD_HINT,
        CONFIGURATION_FILE,
        Cluster,
        launch_line,
        read_calibration,
        write_cluster,
    )
    from commtune.report import UI
    from commtune.util import write_atomic

    calibration = None
    if args.calibration:
        given = [f"--{n}" for n in ("bandwidth", "latency", "speed") if getattr(args, n)]
        if given:
            raise UsageError(f"--calibration sets the links and the speed as measured: leave "
                             f"out {', '.join(given)}")  # fmt: skip
        calibration = read_calibration(args.calibration)
        cluster = calibration.cluster(args.nodes, args.cores, args.topology, args.taper)
    else:
        d = Cluster(1)
        cluster = Cluster(args.nodes, args.cores, args.topology, args.bandwidth or d.bandwidth,
                          args.latency or d.latency, args.speed or d.speed, args.taper,
                          args.backbone)  # fmt: skip
    cluster.check()
    platform, hosts = write_cluster(cluster, args.out)
    ranks = args.nodes * args.cores
    run = launch_line(platform, hosts, ranks)
    cfg = None
    if calibration is not None:
        cfg = str(Path(args.out) / CONFIGURATION_FILE)
        write_atomic(cfg, calibration.cfg_text(f"calibrated by commtune ({args.calibration})"))
        run += calibration.cfg_args()
    ui = UI(json_mode=args.json)
    ui.info(f"{cluster.describe()} -> {platform}, {hosts}" + (f", {cfg}" if cfg else ""))
    ui.info(f"next: {BUILD_HINT}, then")
    ui.command(f"  commtune tune -- {shlex.join(run)} ./app")
    if args.json:
        topology, parameters = cluster.topology_parameters()
        print_json({"platform": platform, "hostfile": hosts, "ranks": ranks,
                    "describe": cluster.describe(), "topology": topology,
                    "topo_parameters": parameters, "configuration": cfg,
                    "launch": run})  # fmt: skip
    return 0


def _add_calibrate(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    p.add_argument("--out", required=True,
                   help="directory for the calibrated platform (platform.xml, hosts), the "
                   "simulator's configuration, calibration.json, its plot")  # fmt: skip
    p.add_argument("--one-node", metavar="LAUNCH",
                   help="launch line of 2 ranks on one node, quoted (default: the library's "
                   "own on this node; 'none': ranks sharing a node not measured)")  # fmt: skip
    p.add_argument("--sizes", type=positive(int), default=150,
                   help="message sizes drawn at random, log-uniform (default 150)")  # fmt: skip
    p.add_argument("--reps", type=positive(int), default=5,
                   help="measurements of each size (default 5; the median is used)")  # fmt: skip
    p.add_argument("--max-size", type=size, default=4 << 20,
                   help="the largest size drawn (default 4M)")  # fmt: skip
    p.add_argument("--seed", type=int, default=1, help="seed of the sizes drawn")
    p.add_argument("--quick", action="store_true",
                   help="60 sizes, 3 measurements each; 3 collectives checked")  # fmt: skip
    p.add_argument("--timeout", type=positive(float), default=600.0,
                   help="one launch's wall time at most, seconds (default 600)")  # fmt: skip
    p.add_argument("--allow-worse-order", action="store_true",
                   help="write the platform even where it puts the faster of two collective "
                   "algorithms first less often than the simulator's own factors (refused "
                   "otherwise)")  # fmt: skip
    add_json(p)


def cmd_calibrate(args: argparse.Namespace, command: list[str] | None) -> int:
    import json
    import shlex

    from commtune.cli._common import need_command
    from commtune.mpi import (
        CALIBRATION_FILE,
        CONFIGURATION_FILE,
        Lack,
        resolve_command,
        write_cluster,
    )
    from commtune.report import UI, calibration_lines, calibration_plot, calibration_table
    from commtune.sample import calibrate, check_order
    from commtune.util import write_atomic

    launch = need_command(command, "that starts 2 ranks on 2 nodes (more: pairs side by side)")
    inst = resolve_command(launch, args.mpi)
    if Lack.NODES in inst.impl.lacks:
        raise UsageError(f"calibrate measures a real machine; {inst.describe()} is a simulator")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    if args.one_node is None:
        one_node: list[str] | None = inst.command(2, [])
    elif args.one_node.strip() == "none":
        one_node = None
    else:
        one_node = shlex.split(args.one_node)
        if not one_node:
            raise UsageError("--one-node: a launch line, quoted, or 'none'")
    count, reps = (60, 3) if args.quick else (args.sizes, args.reps)
    ui = UI(json_mode=args.json)
    ui.info(f"{inst.describe()}: {count} sizes up to {args.max_size} bytes, {reps} "
            f"measurements each, between two nodes ({shlex.join(launch)})"
            + (f" and within one ({shlex.join(one_node)})" if one_node else ""))  # fmt: skip
    result = calibrate(inst, launch, one_node, count, reps, args.max_size, args.seed,
                       args.timeout, ui, args.quick)  # fmt: skip
    if result.ordering is not None and not args.allow_worse_order:
        check_order(result.ordering)
    # everything measured and checked: from here on, files are written
    calibration = result.calibration
    platform, hosts = write_cluster(calibration.cluster(2, 2 if one_node else 1, "flat"), str(out))
    cfg = str(out / CONFIGURATION_FILE)
    write_atomic(cfg, calibration.cfg_text(f"calibrated by commtune on {inst.describe()}"))
    data = result.to_json()
    write_atomic(out / CALIBRATION_FILE, json.dumps(data, indent=1) + "\n")
    plot = out / "calibration.png"
    calibration_plot(result, plot)
    if args.json:
        print_json({**data, "files": {"platform": platform, "hostfile": hosts,
                                      "configuration": cfg, "plot": str(plot)}})  # fmt: skip
        return 0
    for line in calibration_lines(result):
        ui.info(line)
    ui.print(calibration_table(result))
    ui.info(f"wrote {platform}, {hosts}, {cfg}, {out / CALIBRATION_FILE}, {plot}")
    ui.info("next: a cluster of such nodes, and a program simulated on it:")
    ui.command(f"  commtune cluster --calibration {shlex.quote(str(out))} --nodes 1024 "
               "--cores 4 --out cluster")  # fmt: skip
    return 0


COMMANDS = [
    Command(
        "sample",
        "sample the platform: thresholds, collective rules, plots",
        _add_sample,
        cmd_sample,
    ),
    Command("rails", "multi-rail split planner on shaped veth links (root)", _add_rails, cmd_rails),
    Command(
        "calibrate",
        "measure this machine on two nodes and write a simulated cluster that stands for it",
        _add_calibrate,
        cmd_calibrate,
        takes_command=True,
    ),
    Command(
        "cluster",
        "write a simulated cluster (platform file and hostfile) to tune on",
        _add_cluster,
        cmd_cluster,
    ),
]
