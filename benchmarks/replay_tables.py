"""Record the replay tables: balanced, interleaved sweeps of the bundled programs.

    python benchmarks/replay_tables.py [--mpi openmpi,mpich,openmpi@5,intel]
                                       [--programs ct_demo,ct_solver,ct_phases] [--repeats 9]
                                       [--nodes N [--ucx]]

For each installation and program, ``commtune tune --record`` over the installation's space
below (the same space for every program of one installation, so that what one program's
study found can be tried on another's): every configuration and the library's defaults
``--repeats`` times, in rounds shuffled anew, 2 ranks on this machine (``--nodes N``: one
rank on each of N nodes of the test bed, over TCP, Open MPI's space for the network;
with ``--ucx`` as an InfiniBand cluster launches it, over UCX, Open MPI with ``--mca pml
ucx``, MPICH ch4:ucx, the UCX layer's space). Writes
``benchmarks/data/table-[ucx-]MPI[-Nn]-PROGRAM.json``; ``benchmarks/strategies.py
--tables`` races every strategy and design over them. Prints the seconds each took.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from instrument import COMMTUNE

from commtune import native
from commtune.mpi import installation_of

DATA = Path(__file__).with_name("data")
METRIC = r"regex:time ([0-9.eE+-]+) s"
PROGRAMS = {  # program -> (source, arguments): each 0.15-0.3 s on 2 ranks here
    "ct_demo": ("demo/ct_demo.c", ["1000"]),
    "ct_solver": ("demo/ct_solver.c", ["20000"]),
    "ct_phases": ("demo/ct_phases.c", ["20", "2000", "150"]),
}
SPACES = {  # installation -> knobs (42-60 configurations)
    "openmpi": [
        "btl_vader_eager_limit=4096,16384,65536",
        "btl_vader_single_copy_mechanism=cma,none",
        "coll_tuned_allreduce_algorithm",
    ],
    "openmpi@5": [
        "btl_sm_eager_limit=4096,16384,65536",
        "smsc=cma|^cma,xpmem,knem",
        "coll_tuned_allreduce_algorithm",
    ],
    "mpich": [
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
        "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=16384,65536,262144",
        "UCX_RNDV_THRESH=8192,65536,524288,4194304",
    ],
    "intel": [
        "I_MPI_ADJUST_ALLREDUCE",
        "I_MPI_SHM_EAGER_THRESHOLD=4096,65536,262144",
    ],
}
NETWORK = [  # Open MPI across the test bed's nodes
    "btl_tcp_eager_limit=16384,65536,262144",
    "btl_tcp_links=1,2",
    "coll_tuned_allreduce_algorithm",
]
UCX = {  # across the bed's nodes over UCX (issue 95): knobs the run reads there
    "openmpi": [
        "UCX_RNDV_THRESH=8192,65536,524288",
        "UCX_TCP_TX_SEG_SIZE=8192,32768",
        "coll_tuned_allreduce_algorithm",
    ],
    "mpich": [
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
        "UCX_RNDV_THRESH=8192,65536,524288",
        "UCX_TCP_TX_SEG_SIZE=8192,32768",
    ],
}


def record(mpi: str, program: str, repeats: int, nodes: int, out: Path,
           ucx: bool = False) -> float:  # fmt: skip
    inst = installation_of(mpi)
    source, args = PROGRAMS[program]
    binary = str(native.build(inst, source))
    knobs = UCX[mpi] if ucx else NETWORK if nodes else SPACES[mpi]
    over_ucx = inst.impl.ucx_args(inst.device) if ucx else []
    if over_ucx is None:
        raise SystemExit(f"{mpi} does not run over UCX here")
    argv = [*COMMTUNE, "tune", "--mpi", mpi, "--record", str(out),
            "--repeats", str(repeats), "--metric", METRIC, "--seed", "1"]  # fmt: skip
    argv += [a for k in knobs for a in ("--knob", k)]
    start = time.perf_counter()
    if nodes:
        from commtune.testbed import Cluster

        with Cluster(nodes, 1) as bed:
            argv += ["--", *bed.launch(inst, [*over_ucx, binary, *args])]
            env = {**inst.tool_env(), **bed.network_env(inst)}
            done = bed.run(bed.hostnames[0], argv, timeout=4 * 3600, env=env)
            if done.returncode != 0:
                raise SystemExit(done.stderr.strip().splitlines()[-1])
    else:
        argv += ["--", *inst.command(2, [binary, *args])]
        subprocess.run(argv, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi,mpich,openmpi@5")
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--nodes", type=int, default=0, help="across N bed nodes (Open MPI)")
    parser.add_argument("--ucx", action="store_true", help="over UCX (with --nodes)")
    parser.add_argument("--out", type=Path, default=DATA, help="where the tables go")
    args = parser.parse_args()
    if args.ucx and not args.nodes:
        parser.error("--ucx records across the bed's nodes: give --nodes")
    for mpi in args.mpi.split(","):
        for program in args.programs.split(","):
            tag = ("ucx-" if args.ucx else "") + mpi.replace("@", "")
            tag += f"-{args.nodes}n" if args.nodes else ""
            out = args.out / f"table-{tag}-{program}.json"
            seconds = record(mpi, program, args.repeats, args.nodes, out, args.ucx)
            print(f"{out.name}: {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
