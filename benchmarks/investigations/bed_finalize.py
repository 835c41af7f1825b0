"""How often a tiny MPI program (init, allreduce, finalize) hangs across the test bed's nodes,
with the bed's network environment as it is and with one UCX variable changed, the two arms
interleaved run by run on one bed. A run that has not ended in ``--timeout`` seconds is a
hang: the ranks' stacks are printed (gdb, where present), the run is killed.

    python benchmarks/investigations/bed_finalize.py [--mpi mpich] [--nodes 2] [--runs 120]
        [--arm UCX_TCP_PUT_ENABLE=y] [--arm UCX_TCP_PUT_ENABLE=n] [--json]

Needs root (the test bed). Issue 41's CI: Debian's MPICH 4.0 (UCX 1.13) hung in
MPI_Finalize in about 2 % of two-node runs, one rank closing its UCX endpoints while its
peer waited in PMI's barrier; fewer with UCX's TCP put lane off.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from commtune.mpi import installation_of
from commtune.testbed import Cluster, available

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank;
    double mine, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mine = rank;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d sum %g\n", rank, sum);
    MPI_Finalize();
    return 0;
}
"""


def _stacks(program: str) -> str:
    pids = subprocess.run(["pgrep", "-f", f"^{program}"], capture_output=True, text=True,
                          check=False).stdout.split()  # fmt: skip
    if not shutil.which("gdb"):
        return f"ranks {pids} (no gdb for their stacks)"
    out = []
    for pid in pids:
        bt = subprocess.run(["gdb", "-p", pid, "-batch", "-ex", "bt"], capture_output=True,
                            text=True, check=False).stdout  # fmt: skip
        frames = [line for line in bt.splitlines() if line.startswith("#")]
        out.append(f"rank pid {pid}:\n  " + "\n  ".join(frames[:12]))
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="mpich")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--runs", type=int, default=120, help="runs of each arm")
    p.add_argument("--timeout", type=float, default=15.0)
    p.add_argument("--arm", action="append", help="VAR=VALUE over the bed's environment")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    ok, why = available()
    if not ok:
        print(f"bed_finalize.py: {why}", file=sys.stderr)
        return 2
    arms = args.arm or ["UCX_TCP_PUT_ENABLE=y", "UCX_TCP_PUT_ENABLE=n"]
    inst = installation_of(args.mpi)
    hangs = dict.fromkeys(arms, 0)
    with tempfile.TemporaryDirectory() as tmp, Cluster(args.nodes, 1) as bed:
        program = str(Path(tmp) / "fin")
        (Path(tmp) / "fin.c").write_text(PROGRAM)
        subprocess.run([inst.mpicc, "-o", program, f"{program}.c"], check=True,
                       env=inst.tool_env())  # fmt: skip
        base = {**inst.tool_env(), **bed.site_env(inst)}
        launch = bed.command(bed.hostnames[0], inst.command(args.nodes, [program]))
        for i in range(args.runs):
            for arm in arms:
                name, value = arm.split("=", 1)
                quiet = subprocess.DEVNULL
                proc = subprocess.Popen(launch, env={**base, name: value}, stdout=quiet,
                                        stderr=quiet)  # fmt: skip
                try:
                    proc.wait(timeout=args.timeout)
                except subprocess.TimeoutExpired:
                    hangs[arm] += 1
                    print(f"run {i}, {arm}: hung\n{_stacks(program)}", file=sys.stderr)
                    subprocess.run(["pkill", "-9", "-f", f"^{program}"], check=False)
                    proc.kill()
                    proc.wait()
    result = {"mpi": inst.describe(), "nodes": args.nodes, "runs": args.runs, "hangs": hangs}
    if args.json:
        print(json.dumps(result))
    else:
        for arm, n in hangs.items():
            print(f"{inst.describe()}, {args.nodes} nodes, {arm}: {n} of {args.runs} runs hung")
    return 0


if __name__ == "__main__":
    sys.exit(main())
