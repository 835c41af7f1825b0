"""Replay tables at cluster scale, from SimGrid's SMPI: real programs built with smpicc, every
configuration of a space run once on a simulated cluster (the simulation is deterministic:
one run is the value; the defaults run twice to show it), written as ``tune --record``
writes them into ``benchmarks/data/table-smpi-*.json`` for the race
(``benchmarks/strategies.py --tables``).

    python benchmarks/smpi_tables.py --cases comd-256-fat,minife-256-taper \\
        --source comd=DIR --source minife=DIR

The space: the decision logic (``smpi/coll-selector``: SMPI's own, Open MPI's, MPICH's,
MVAPICH2's, Intel MPI's), the allreduce's algorithm (every program here reduces: selector,
recursive doubling, ring, Rabenseifner) and the eager limit (``send-is-detached-thresh`` 64
KiB, the default, or 1 MiB): 40 configurations. Computation is not simulated
(``smpi/simulate-computation:no``): the tables are the communication's. Each table also
records SMPI's Open MPI and MPICH selectors alone: the libraries' own decision logic.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from apps import APPS, comd_weak
from instrument import COMMTUNE

from commtune import native
from commtune.mpi import Cluster, Vendor, find_installation, simulated_command, write_cluster

DATA = Path(__file__).resolve().parent / "data"
CLUSTERS = {"fat": Cluster(256, 4), "taper": Cluster(256, 4, taper=4)}
SPACE = ["--knob", "smpi/coll-selector",
         "--knob", "smpi/allreduce=selector,rdb,lr,rab_rdb",
         "--knob", "smpi/send-is-detached-thresh=65536,1048576"]  # fmt: skip
# (program's metric, its arguments at 256 and 1,024 ranks); None: the simulated time
PROGRAMS = {
    "demo": (None, {256: ["10"], 1024: ["10"]}),
    # CoMD prints its times to 0.1 ms (4 % of a step at 256 ranks): SMPI's simulated time
    "comd": (None, {r: comd_weak(r) for r in (256, 512, 1024)}),
    "minife": (None, {256: ["-nx", "32", "-ny", "32", "-nz", "32"],
                      1024: ["-nx", "48", "-ny", "48", "-nz", "48"]}),
    "amg": (APPS["amg"].metric, {256: ["-problem", "1", "-n", "4", "4", "4", "-P", "8", "8", "4"],
                                 1024: ["-problem", "1", "-n", "4", "4", "4", "-P", "16", "8",
                                        "8"]}),
    "snap": (APPS["snap"].metric, {256: (16, 16), 1024: (32, 32)}),  # npey x npez
    # LULESH takes a cube of ranks only: 216 and 1,000, the cubes nearest 256 and 1,024; 5
    # steps at 1,000 ranks: a run of 2 steps took 28 s of wall time under SMPI's selector and
    # 50 s under its Open MPI one, whose runs of 20 steps went past 11 minutes (measured)
    "lulesh": (None, {216: ["-s", "8", "-i", "50"], 1000: ["-s", "8", "-i", "5"]}),
}  # fmt: skip


# settings a program's command carries in every run, defaults included: SMPI's default
# allgather(v) (every rank posts to every other) took past 600 s of wall time a miniFE run at
# 256 ranks; with ring allgathers 11 s (simulated times of both not compared: the first never
# ended). The selector knob then decides every other collective.
FIXED = {"minife": ["--cfg=smpi/allgather:ring", "--cfg=smpi/allgatherv:ring"]}


def snap_input(work: Path, ranks: int) -> list[str]:
    """SNAP's input for ``ranks`` ranks (npey x npez), 32 cells in y and z, 4 groups, 5
    outer iterations: its sweeps' pipelines across the ranks, at a cost that runs here."""
    from apps import SNAP_INPUT

    npey, npez = PROGRAMS["snap"][1][ranks]
    text = SNAP_INPUT.format(ranks=npey).replace("npez=1", f"npez={npez}")
    for old, new in (("ny=24", "ny=32"), ("nz=24", "nz=32"), ("ng=16", "ng=4"),
                     ("oitm=30", "oitm=5")):  # fmt: skip
        text = text.replace(old, new)
    path = work / f"snap-{ranks}.inp"
    path.write_text(text)
    return [str(path), "/dev/stdout"]


def binary(name: str, sources: dict[str, Path]) -> str:
    inst = find_installation(Vendor.SMPI)
    if name == "demo":
        return str(native.build(inst, "demo/ct_demo.c"))
    if name not in sources:
        raise SystemExit(f"smpi_tables.py: {name} needs --source {name}=DIR (a snapshot of "
                         f"{APPS[name].repo})")  # fmt: skip
    return str(APPS[name].build(sources[name], inst))


def case_command(case: str, sources: dict[str, Path], work: Path) -> list[str]:
    """The smpirun line of ``case`` (PROGRAM-RANKS-CLUSTER), its cluster written into
    ``work``."""
    name, ranks_text, where = case.split("-")
    ranks = int(ranks_text)
    platform, hosts = write_cluster(CLUSTERS[where], str(work / where))
    given = snap_input(work, ranks) if name == "snap" else PROGRAMS[name][1][ranks]
    return simulated_command(find_installation(Vendor.SMPI), platform, hosts, ranks,
                             [*FIXED.get(name, []), binary(name, sources), *given])  # fmt: skip


def record(case: str, sources: dict[str, Path], work: Path) -> Path:
    name, ranks_text, where = case.split("-")
    ranks = int(ranks_text)
    metric = PROGRAMS[name][0]
    command = case_command(case, sources, work)
    out = DATA / f"table-smpi-{case}.json"
    argv = [*COMMTUNE, "tune", "--record", str(out), "--repeats", "1",
            *SPACE, "--storage", f"sqlite:///{work / 'record.db'}"]  # fmt: skip
    if metric:
        argv += ["--metric", metric]
    t0 = time.perf_counter()
    subprocess.run([*argv, "--", *command], cwd=work, check=True)
    wall = time.perf_counter() - t0
    data = json.loads(out.read_text())
    repo = APPS[name].repo if name in APPS else "commtune's demo"
    data["description"] = (
        f"program: {name} ({repo}), built with smpicc; simulated: {ranks} ranks on "
        f"{CLUSTERS[where].describe()} (SimGrid SMPI 3.32, computation not simulated); "
        f"command: {' '.join([Path(command[0]).name, *command[7:]])}; space: selector x "
        f"allreduce x eager limit; recorded in {wall:.0f} s of wall time"
    )
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{case}: {len(data['trials'])} configurations in {wall:.0f} s -> {out}", file=sys.stderr)
    return out


def summary() -> str:
    """Per recorded table: the defaults (SMPI's own selector), the Open MPI and MPICH
    selectors alone (the libraries' own decision logic), the best configuration and its
    speedup over each."""
    lines = ["| table | defaults | ompi selector | mpich selector | best configuration | "
             "best vs defaults | vs ompi | vs mpich | failed |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for path in sorted(DATA.glob("table-smpi-*.json")):
        data = json.loads(path.read_text())
        base = data["default"][0]
        done = [t for t in data["trials"] if t["values"] and t["values"][0] is not None]
        alone = {t["params"]["smpi/coll-selector"]: t["values"][0] for t in done
                 if t["params"].get("smpi/allreduce") == "selector"
                 and t["params"].get("smpi/send-is-detached-thresh") == 65536}  # fmt: skip
        best = min(done, key=lambda t: t["values"][0])
        value = best["values"][0]
        shown = ", ".join(f"{k.removeprefix('smpi/')}={v}" for k, v in best["params"].items())
        ompi, mpich = alone.get("ompi"), alone.get("mpich")

        def shown_value(v: float | None) -> str:  # a selector's run that failed: no figure
            return "failed" if v is None else f"{v:.4g}"

        def ratio(v: float | None, best: float = value) -> str:
            return "-" if v is None else f"{v / best:.2f}x"

        lines.append(
            f"| {path.stem.removeprefix('table-smpi-')} | {base:.4g} | {shown_value(ompi)} "
            f"| {shown_value(mpich)} | {shown} | {base / value:.2f}x | {ratio(ompi)} | "
            f"{ratio(mpich)} | {len(data['trials']) - len(done)} |"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", help="PROGRAM-RANKS-CLUSTER,... (fat, taper)")
    p.add_argument("--source", action="append", default=[], help="PROGRAM=DIR")
    p.add_argument("--summary", action="store_true", help="the recorded tables' figures")
    args = p.parse_args()
    if args.summary or not args.cases:
        print(summary())
        return 0
    sources = {k: Path(v) for k, _, v in (s.partition("=") for s in args.source)}
    with tempfile.TemporaryDirectory(prefix="smpi-tables-") as tmp:
        for case in args.cases.split(","):
            record(case, sources, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
