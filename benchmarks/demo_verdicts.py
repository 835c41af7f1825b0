"""The demo's verdict, again and again: is it the same each time?

    python benchmarks/demo_verdicts.py [--mpi openmpi,mpich] [--times 5] [--fixed 1]
                                       [--nodes N|auto]

Per MPI: ``commtune demo --json`` ``--times`` times in a row (raced repeats, the default),
then ``--fixed`` times with ``--fixed-repeats`` (every trial 3 runs, the design before
racing), each in a fresh storage. Prints one Markdown row per study (verdict, speedup and
its CI, runs spent, noise, drift) and, per MPI and design, how many verdicts agree.
With ``--nodes``, the demo across a test bed of that many nodes (``make demo``: ``auto``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE, last_json


def demo(mpi: str, fixed: bool, storage: Path, nodes: str | None = None) -> dict:
    command = [*COMMTUNE, "demo", "--mpi", mpi, "--json"]
    if nodes:
        command += ["--nodes", nodes]
    command += ["--storage", f"sqlite:///{storage}"]
    if fixed:
        command.append("--fixed-repeats")
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=1800)
    data = last_json(out.stdout)
    data["seconds"] = time.perf_counter() - start
    data["mpi"], data["design"] = mpi, "fixed" if fixed else "raced"
    return data


def result_cells(d: dict) -> str:
    """A tuner's ``--json`` result as table cells: verdict, speedup [CI], accepted
    configuration, runs, noise, drift, wall time (also ``cluster_collectives.py``'s)."""
    verdict = "accepted" if d["accepted"] else "default stays"
    if d.get("risk") is not None:  # --gate risk: the risk of a > 2 % slowdown beside it
        verdict += f" (risk {100 * d['risk']:.1f} %)"
    best = " ".join(f"{k}={v}" for k, v in d["accepted_params"].items()) or "-"
    # what was not measured is absent: no speedup is said of the defaults kept
    figure = "-"
    if d.get("speedup") is not None:
        figure = f"{d['speedup']:.3f}x"
        if d.get("speedup_ci"):
            figure += " [{:.3f}, {:.3f}]".format(*d["speedup_ci"])
    return (
        f"{verdict} | {figure} | {best} | {d['runs']} | "
        f"{100 * d['noise']['cv']:.1f} % | {d['noise']['drift']:.2f}x | {d['seconds']:.0f} s |"
    )


def row(d: dict) -> str:
    return f"| {d['mpi']} | {d['design']} | {result_cells(d)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi,mpich", help="installations, comma-separated")
    parser.add_argument("--times", type=int, default=5, help="demos a design and installation")
    parser.add_argument("--fixed", type=int, default=1, help="of them with --fixed-repeats")
    parser.add_argument("--nodes", help="the demo across a test bed (N or auto; root)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/demo_verdicts.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(
        "| MPI | design | verdict | speedup [interval] | accepted | runs | noise | drift | time |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for mpi in args.mpi.split(","):
            plan = [False] * args.times + [True] * args.fixed
            for i, fixed in enumerate(plan):
                data = demo(mpi, fixed, Path(tmp) / f"{mpi}-{i}.db", args.nodes)
                results.append(data)
                print(row(data), flush=True)
                with args.out.open("a") as f:
                    f.write(json.dumps(data) + "\n")
    for mpi in args.mpi.split(","):
        raced = [d for d in results if d["mpi"] == mpi and d["design"] == "raced"]
        accepted = sum(d["accepted"] for d in raced)
        print(f"{mpi}: {accepted}/{len(raced)} accepted, {len(raced) - accepted} default stays")
    return 0


if __name__ == "__main__":
    sys.exit(main())
