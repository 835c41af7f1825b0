"""``commtune sample`` and ``commtune rails bench``: the platform measured once (NewMadeleine):
thresholds, collective selection files, plots; the multi-rail split planner proven.
``commtune cluster``: a simulated cluster for SMPI, written from a few words."""

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
    p.add_argument("--bandwidth", default=d.bandwidth,
                   help="a node's link bandwidth, e.g. 100Gbps (default: %(default)s)")  # fmt: skip
    p.add_argument("--latency", default=d.latency, help="a link's latency (default: %(default)s)")
    p.add_argument("--speed", default=d.speed, help="a core's speed (default: %(default)s)")
    p.add_argument("--taper", type=positive(int), default=d.taper,
                   help="fat tree: the leaf switches' uplinks divided by this (1: full "
                   "bisection)")  # fmt: skip
    p.add_argument("--backbone", help="flat: the switch's bandwidth (default: a link's)")
    p.add_argument("--out", required=True, help="directory for platform.xml and hosts")
    add_json(p)


def cmd_cluster(args: argparse.Namespace, command: list[str] | None) -> int:
    import shlex

    from commtune.mpi import BUILD_HINT, Cluster, launch_line, write_cluster
    from commtune.report import UI

    cluster = Cluster(args.nodes, args.cores, args.topology, args.bandwidth, args.latency,
                      args.speed, args.taper, args.backbone)  # fmt: skip
    cluster.check()
    platform, hosts = write_cluster(cluster, args.out)
    ranks = args.nodes * args.cores
    run = launch_line(platform, hosts, ranks)
    ui = UI(json_mode=args.json)
    ui.info(f"{cluster.describe()} -> {platform}, {hosts}")
    ui.info(f"next: {BUILD_HINT}, then")
    ui.command(f"  commtune tune -- {shlex.join(run)} ./app")
    if args.json:
        topology, parameters = cluster.topology_parameters()
        print_json({"platform": platform, "hostfile": hosts, "ranks": ranks,
                    "describe": cluster.describe(), "topology": topology,
                    "topo_parameters": parameters})  # fmt: skip
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
        "cluster",
        "write a simulated cluster (platform file and hostfile) to tune on",
        _add_cluster,
        cmd_cluster,
    ),
]
