"""The space follows the layer the run uses (issue 95), on the test bed (root).

    python benchmarks/stack.py [--nodes 2] [--mpi openmpi,openmpi@5,mpich] [--json FILE]

For each installation, on a bed of ``--nodes`` nodes (one rank a node), ``ct_demo`` launched
plainly and as an InfiniBand cluster launches it (Open MPI: ``--mca pml ucx`` with
``pml_ucx_tls any`` and ``pml_ucx_devices any``, UCX over TCP here; MPICH is ch4:ucx
already), and for each line: the layer the library says the run selects, the knobs a study
with no knob named and no profile (``--no-interposer``: the catalog's default space across
nodes) searches, how many of them the run does not read (BTL knobs under pml ucx, UCX's
under ob1, tuned's where another component serves the call), and what ``--knob
btl_tcp_eager_limit`` gets. The count of unread knobs searched is the figure (before issue
95: 5 of 6 under pml ucx, issue 95's report); the study itself is not run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from instrument import last_json

from commtune import native
from commtune.mpi import installation_of
from commtune.testbed import Cluster as Bed


def one(bed: Bed, spec: str) -> list[dict[str, object]]:
    inst = installation_of(spec)
    demo = str(native.build(inst, "demo/ct_demo.c"))
    env = {**inst.tool_env(), **bed.network_env(inst)}
    lines = {"plain": [demo, "100"]}
    over_ucx = inst.impl.ucx_args(inst.device)
    if over_ucx:  # a library whose UCX is chosen at launch (Open MPI's pml ucx)
        lines["pml ucx"] = [*over_ucx, demo, "100"]
    rows = []
    for how, program in lines.items():
        line = bed.launch(inst, program)
        probe = [sys.executable, "-c", _PROBE, spec, json.dumps(line)]
        done = bed.run(bed.hostnames[0], probe, timeout=300, env=env)
        if done.returncode != 0:
            rows.append({"mpi": spec, "line": how, "error": done.stderr.strip()[-300:]})
            continue
        row = last_json(done.stdout)
        row.update(mpi=spec, line=how, btl_knob_exit=None, btl_knob_said=None)
        rows.append(row)
        if how == "plain":
            continue  # ob1 reads it: a study would start
        refused = bed.run(bed.hostnames[0], [sys.executable, "-m", "commtune", "tune", "--knob",
                                             "btl_tcp_eager_limit", "--storage",
                                             "sqlite:////tmp/commtune-stack-bench.db", "--",
                                             *line], timeout=300, env=env)  # fmt: skip
        said = refused.stderr.strip().splitlines()
        row.update(btl_knob_exit=refused.returncode, btl_knob_said=said[-1] if said else None)
    return rows


# run on the bed's first node: the layer and the default space across nodes, as JSON
_PROBE = """
import json, sys
from commtune.knobs import build_space, installed_knobs, with_layer
from commtune.service import read_layer
from commtune.mpi import installation_of
inst = installation_of(sys.argv[1]); line = json.loads(sys.argv[2])
layer = read_layer(inst, line)
before = build_space(installed_knobs(inst), inst.vendor.value, across_nodes=True)
after = build_space(with_layer(installed_knobs(inst), layer, inst), inst.vendor.value,
                    across_nodes=True)
unread = lambda names: [n for n in names if layer and inst.impl.unread(layer, n)]
print(json.dumps({"layer": layer.describe() if layer else None,
                  "before": before.names, "unread_before": unread(before.names),
                  "after": after.names, "unread_after": unread(after.names)}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--mpi", default="openmpi,openmpi@5,mpich")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    rows: list[dict[str, object]] = []
    with Bed(args.nodes, 1) as bed:
        for spec in args.mpi.split(","):
            rows += one(bed, spec)
    for r in rows:
        if "error" in r:
            print(f"{r['mpi']:10} {r['line']:8} error: {r['error']}")
            continue
        print(f"{r['mpi']:10} {r['line']:8} {r['layer']}")
        print(
            f"{'':20} default space before: {len(r['before'])} knobs, "  # type: ignore[arg-type]
            f"{len(r['unread_before'])} unread {r['unread_before']}"
        )  # type: ignore[arg-type]
        print(
            f"{'':20} default space now:    {len(r['after'])} knobs, "  # type: ignore[arg-type]
            f"{len(r['unread_after'])} unread; {r['after']}"
        )  # type: ignore[arg-type]
        print(
            f"{'':20} --knob btl_tcp_eager_limit: exit {r['btl_knob_exit']}; "
            f"{r['btl_knob_said'] or 'not tried (ob1 reads it)'}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
