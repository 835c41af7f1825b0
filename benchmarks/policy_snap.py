"""SNAP under the policy engine (the MVAPICH2 + TAU seed's case, issue 42 point 4): a run-time
switch against every static setting, on a shaped test bed.

    python benchmarks/policy_snap.py --sources /tmp/src [--mpi openmpi] [--bed 4]
        [--rate 1000] [--rounds 6] [--out benchmarks/out/policy_snap.json]

SNAP (lanl/SNAP, the commit in apps.py) runs with libcommtune preloaded in every arm, so that
it costs the same everywhere, one rank a node on ``--bed`` nodes whose links are shaped to
``--rate`` Mbit/s (tc tbf). Arms, in ``--rounds`` rotated rounds:

- ``default``: the library's own choices;
- ``static A``: every allreduce algorithm the library lists, forced for the whole run (the
  only collective SNAP calls repeatedly: 8 B convergence checks and 128 B group arrays);
- ``eager X``: the TCP eager limit below SNAP's 4-8 KiB sweep messages and far above them
  (the seed's lever: a higher eager threshold; read-only at run time in Open MPI, so static);
- ``switch``: a periodic rule that sets the latency-bound algorithm while the last interval's
  allreduces were small and the bandwidth-bound one otherwise; safe points at every collective
  (``COMMTUNE_POLICY_EVERY=1``: SNAP makes ~50 in a run), on SNAP's Cartesian communicator.

Reported per arm: the median of SNAP's own "Total Execution time", its paired speedup over
the defaults with a bootstrap 95 % CI, the median memory high-water mark of a rank, and the
switch's actions (how often it switched, whether the library took each write).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

from apps import APPS, on_bed
from policy import mpit

from commtune import native, stats
from commtune.knobs import installed_knobs
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.testbed import Cluster
from commtune.trial import run_process

ALGORITHM = {"openmpi": "coll_tuned_allreduce_algorithm",
             "mpich": "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"}  # fmt: skip
# (latency-bound, bandwidth-bound) allreduce algorithms the switch chooses between
SWITCH = {"openmpi": ("recursive_doubling", "ring"),
          "mpich": ("recursive_doubling", "reduce_scatter_allgather")}  # fmt: skip
EAGER = {"openmpi": ("OMPI_MCA_btl_tcp_eager_limit", ["4096", "1048576"]),
         "mpich": ("UCX_RNDV_THRESH", ["4096", "1048576"])}  # fmt: skip
METRIC = re.compile(r"Total Execution time\s+([0-9.E+-]+)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=Path, required=True)
    parser.add_argument("--mpi", default="openmpi", choices=sorted(ALGORITHM))
    parser.add_argument("--bed", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1000.0, help="Mbit/s of every link")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/policy_snap.json"))
    args = parser.parse_args()
    inst = find_installation(Vendor(args.mpi))
    app = APPS["snap"]
    binary = app.build(args.sources / "lanl+SNAP", inst)
    lib = str(native.build_interposer(inst))
    launcher = launcher_for(inst)
    knob = installed_knobs(inst)[ALGORITHM[args.mpi]].knob
    skip = {"ignore", "auto", "nb", "ring"} if args.mpi == "mpich" else {"ignore"}
    algorithms = [a for a in knob.domain() if a not in skip]
    bed = Cluster(args.bed, 1, [args.rate]) if args.bed > 1 else None
    with bed if bed else contextlib.nullcontext(), tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runner, site, ranks = on_bed(bed, inst)
        command = app.command(inst, binary, work, ranks=ranks)
        small, large = SWITCH[args.mpi]
        cvar = ALGORITHM[args.mpi]
        rule = {"rules": [{"name": "snap-switch", "when": "periodic", "operation": {
            "condition": {"stmt": "if", "leftoperand": "ct:MPI_Allreduce.mean_bytes",
                          "operator": ">", "rightoperand": 64},
            "result": {"leftoperand": cvar, "operator": "=",
                       "rightoperand": mpit(inst, knob, large)},
            "else": {"leftoperand": cvar, "operator": "=",
                     "rightoperand": mpit(inst, knob, small)}}}]}  # fmt: skip
        (work / "switch.json").write_text(json.dumps(rule))
        forced = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"} if args.mpi == "openmpi" else {}
        arms: dict[str, dict[str, str]] = {"default": {}}
        for a in algorithms:
            arms[f"static {a}"] = {**forced, knob.env: str(a)}
        variable, values = EAGER[args.mpi]
        for v in values:
            arms[f"eager {v}"] = {variable: v}
        arms["switch"] = {**forced, "COMMTUNE_POLICY": str(work / "switch.json"),
                          "COMMTUNE_POLICY_EVERY": "1",
                          "COMMTUNE_PVAR_INTERVAL": "0.05"}  # fmt: skip
        base = {**os.environ, **site, "OMP_NUM_THREADS": "1"}
        times: dict[str, list[float]] = {k: [] for k in arms}
        memory: dict[str, list[float]] = {k: [] for k in arms}
        actions: list[list[dict[str, object]]] = []
        names = list(arms)
        for r in range(args.rounds):
            row: dict[str, tuple[float, float, dict[str, object]]] = {}
            for name in names[r % len(names) :] + names[: r % len(names)]:
                profile = work / f"profile-{r}-{len(row)}.json"
                variables = {**arms[name], "COMMTUNE_PROFILE": str(profile)}
                plan = launcher.plan(command, variables, preload=lib, base_env=base)
                result = run_process([*runner, *plan.argv], plan.env, 300, cwd=str(work))
                found = METRIC.findall(result.stdout)
                if result.returncode != 0 or not found or not profile.exists():
                    print(f"round {r}: {name} failed: {result.stderr_tail[-300:]}", file=sys.stderr)
                    break
                data = json.loads(profile.read_text())
                row[name] = (float(found[-1]), float(data["memory_peak"]["max"]),
                             data.get("policy", {}))  # fmt: skip
            if len(row) != len(names):  # a round with a failure is dropped whole
                continue
            for name, (t, m, policy) in row.items():
                times[name].append(t)
                memory[name].append(m)
                if name == "switch":
                    actions.append(policy.get("actions", []))
            print(f"round {r}: " + ", ".join(f"{k} {v[0]:.3f}" for k, v in row.items()),
                  file=sys.stderr)  # fmt: skip
    result = {"mpi": args.mpi, "version": inst.version, "nodes": args.bed, "rate": args.rate,
              "rounds": len(times["default"]), "arms": {}}  # fmt: skip
    for name in names:
        if not times[name]:
            continue
        c = stats.compare_paired(times["default"], times[name])
        result["arms"][name] = {
            "median": stats.median(times[name]),
            "spread": (max(times[name]) - min(times[name])) / stats.median(times[name]),
            "speedup": [c.speedup, c.ci_low, c.ci_high],
            "memory_mib": stats.median(memory[name]) / 2**20,
        }
    result["switch_actions"] = [len(a) for a in actions]
    result["switch_status"] = sorted({str(x.get("status")) for a in actions for x in a})
    result["switch_example"] = actions[0][:6] if actions else []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"SNAP, {args.mpi} {inst.version}, {args.bed} nodes at {args.rate:g} Mbit/s, "
          f"{result['rounds']} rounds")  # fmt: skip
    print("| arm | median s | spread | speedup vs defaults [95 % CI] | memory MiB |")
    print("|---|---|---|---|---|")
    for name, a in result["arms"].items():
        s, lo, hi = a["speedup"]
        print(f"| {name} | {a['median']:.3f} | {a['spread']:.0%} | {s:.3f}x [{lo:.3f}, {hi:.3f}]"
              f" | {a['memory_mib']:.1f} |")  # fmt: skip
    print(f"switch: actions per run {result['switch_actions']}, status {result['switch_status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
