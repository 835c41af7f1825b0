"""``commtune demo`` as a service: the bundled demo app built with the installation's
``mpicc`` and tuned on this node (2 ranks) or across a test bed of network namespaces, one
rank a node, with the tuner on this machine and every launch line run inside the first
node."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from commtune import native
from commtune.errors import UsageError
from commtune.launch import launcher_for
from commtune.mpi import Installation, installation_of
from commtune.report import UI
from commtune.service._tuning import Outcome, Recorded, Tuning
from commtune.study import Plan
from commtune.testbed import Cluster, available
from commtune.util import TESTBED_ENV

ITERATIONS = 1000
PROGRAMS = ("demo/ct_demo.c", "demo/ct_solver.c", "demo/ct_phases.c")  # demo --build
BED = "ctbdemo"  # a fixed name: the study's launch line is the same at every resume


def demo(plan: Plan, ui: UI, ranks: int | None, nodes: int | str | None,
         ucx: bool = False) -> Outcome | Recorded:  # fmt: skip
    """Tune the demo app as ``plan`` (checked: ``check``) says; ``nodes``: a bed of that
    many nodes, ``auto`` (one a core, 2-4, where the machine allows a bed) or None (this
    node, ``ranks``); ``ucx``: launched over UCX as an InfiniBand cluster launches it
    (``MPIVendor.ucx_args``)."""
    inst = installation_of(plan.mpi)
    options: list[str] = []
    if ucx:
        given = inst.impl.ucx_args(inst.device)
        if given is None:
            raise UsageError(f"--ucx: {inst.describe()} does not run over UCX")
        options = given
    program = [*options, str(native.build(inst, "demo/ct_demo.c"))]
    usual = inst == installation_of(inst.vendor.value)  # the family's usual installation
    named = plan.study is not None
    study = plan.study or (f"demo-{inst.vendor.value}" + ("" if usual else f"-{inst.version}")
                           + ("-ucx" if options else ""))  # fmt: skip
    plan = replace(plan, study=study, mpi=inst.prefix)
    count = _nodes(nodes, ui.json_mode)
    if count:
        if ranks is not None and ranks != count:
            raise UsageError(f"--np {ranks} with --nodes {count}: the demo runs one rank a node")
        return _across_nodes(plan, ui, inst, program, count, not named)
    command = launcher_for(inst).command(ranks or 2, [*program, str(ITERATIONS)])
    return Tuning(plan, ui).run(command)


def _nodes(nodes: int | str | None, quiet: bool) -> int:
    """The nodes of the demo's test bed; 0: the one-node demo (``auto`` says why)."""
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


def _across_nodes(
    plan: Plan, ui: UI, inst: Installation, program: list[str], nodes: int, auto_named: bool
) -> Outcome | Recorded:
    """The demo on a test bed of ``nodes`` nodes, one rank each."""
    with Cluster(nodes, 1, name=BED) as bed:
        # the transport between nodes, every run; the bed named in the platform's fingerprint
        os.environ.update({**bed.network_env(inst), TESTBED_ENV: bed.describe()})
        command = bed.launch(inst, [*program, str(ITERATIONS)])
        where = (f"{bed.describe()}: {', '.join(bed.hostnames)} (network namespaces on this "
                 "machine), one rank each, over TCP")  # fmt: skip
        if not ui.json_mode:
            print(f"commtune demo: {where}", file=sys.stderr)
        study = f"{plan.study}-{nodes}nodes" if auto_named else plan.study
        through = tuple(bed.command(bed.hostnames[0], []))
        plan = replace(plan, study=study, through=through, across_nodes=True)
        done = Tuning(plan, ui).run(command)
    # the bed goes with the demo: what to type next brings one of the same name up again
    return replace(done, bed=(BED, nodes)) if isinstance(done, Outcome) else done


def build_programs(plan: Plan, directory: str, ui: UI) -> list[Path]:
    """``demo --build DIR``: the bundled programs the guides run, built with the MPI
    installation's ``mpicc`` (``ct_demo``, ``ct_solver``, ``ct_phases``, the I/O kernel
    ``ct_io``) and, where a simulator is installed, with its compiler wrapper
    (``NAME.<its name>``), copied into ``directory``."""
    import shutil

    from commtune.mpi import find_simulators

    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--build {directory}: not a directory")
    out.mkdir(parents=True, exist_ok=True)
    inst = installation_of(plan.mpi)
    built = [native.build(inst, p) for p in PROGRAMS] + [native.build_io(inst)[0]]
    made = [Path(shutil.copy2(b, out / b.name)) for b in built]
    for sim in find_simulators():
        tag = sim.vendor.value
        made += [Path(shutil.copy2(native.build(sim, p), out / f"{Path(p).stem}.{tag}"))
                 for p in PROGRAMS]  # fmt: skip
    for path in made:
        ui.info(f"built {path}")
    return made
