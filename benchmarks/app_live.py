"""Live studies of real programs as a user runs them (issue 42, point 5): ``commtune tune``
with no knob named (the profile chooses the space), ``--json``, on each program x
installation; a table of the space chosen (and whether it holds the algorithm of the
collective the program spends most in), the verdict, the expected gain with its interval,
and the runs.

    python benchmarks/app_live.py --sources DIR [--apps comd,amg] [--mpis openmpi,mpich]
        [--max-runs 30] [--out docs/benchmarks/issue42-live.md] [--bed 4]

``--bed N`` (root) runs each study inside the first node of an N-node test bed with the bed's
site environment, N ranks one a node, as a user of a cluster would.

DIR holds a snapshot of each program's repository, named as ``fetch`` names it
(``ECP-copa+CoMD``, ``LLNL+AMG``, ...).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from apps import APPS, App, BuildError, on_bed
from instrument import COMMTUNE, last_json

from commtune.mpi import Installation, installation_of
from commtune.testbed import Cluster


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", type=Path, required=True)
    p.add_argument("--apps", default=",".join(APPS))
    p.add_argument("--mpis", default="openmpi,mpich,openmpi@5,mpich@5,intel")
    p.add_argument("--max-runs", type=int, default=30)
    p.add_argument("--out", type=Path)
    p.add_argument("--bed", type=int, help="inside a test bed of this many nodes (root)")
    p.add_argument(
        "--strategies",
        default="tpe",
        help="one study per strategy, e.g. tpe,dqn,auto (AITuning's case: dqn)",
    )
    args = p.parse_args()
    with Cluster(args.bed, 1) if args.bed else contextlib.nullcontext() as bed:
        rows = _studies(args, bed)
    text = _table(rows)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


def _studies(args: argparse.Namespace, bed: Cluster | None) -> list[dict]:
    rows = []
    for name in args.apps.split(","):
        app = APPS[name]
        source = args.sources / app.repo.replace("/", "+")
        for spec in args.mpis.split(","):
            inst = installation_of(spec)
            row = {"app": name, "mpi": inst.name}
            try:
                binary = app.build(source, inst)
            except BuildError as exc:
                rows.append({**row, "error": str(exc)})
                print(f"{name} {spec}: not built: {exc}", file=sys.stderr)
                continue
            runner, site, ranks = on_bed(bed, inst)
            env = {**os.environ, **site}
            for strategy in args.strategies.split(","):
                rows.append(_study(args, app, inst, binary, runner, env, ranks, strategy, row))
    return rows


def _study(args: argparse.Namespace, app: App, inst: Installation, binary: Path,
           runner: list[str], env: dict[str, str], ranks: int | None, strategy: str,
           row: dict) -> dict:  # fmt: skip
    row = {**row, "strategy": strategy}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        command = app.command(inst, binary, work, ranks=ranks)
        argv = [*runner, *COMMTUNE, "tune", "--mpi", inst.prefix,
                "--metric", app.metric, "--max-runs", str(args.max_runs),
                "--strategy", strategy,
                "--storage", f"sqlite:///{work / 's.db'}", "--json", "--",
                *command]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True,
                              check=False, env=env)  # fmt: skip
        seconds = time.perf_counter() - t0
    if done.returncode != 0:
        print(f"{app.name} {inst.name}: failed: {done.stderr[-400:]}", file=sys.stderr)
        return {**row, "error": done.stderr.strip().splitlines()[-1:]}
    data = last_json(done.stdout)
    space = [c["knob"] for c in data.get("space_from_profile", [])]
    out = {**row, "space": space,
           "reasons": [c["reason"] for c in data.get("space_from_profile", [])],
           "accepted": data.get("accepted"), "speedup": data.get("speedup"),
           "interval": data.get("speedup_ci"), "risk": data.get("risk"),
           "runs": data.get("runs"), "seconds": round(seconds),
           "said": data.get("said"), "reason": data.get("reason")}  # fmt: skip
    print(json.dumps(out), file=sys.stderr)
    return out


def _table(rows: list[dict]) -> str:
    lines = [
        "| program | MPI | strategy | space the profile chose (first: highest share) | verdict | "
        "expected speedup (90 % interval) | runs | time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(
                f"| {r['app']} | {r['mpi']} | {r.get('strategy', '')} | not run: "
                f"{r['error']} | | | | |"
            )
            continue
        lo, hi = r["interval"] or (None, None)
        gain = f"{r['speedup']:.3f}x ({lo:.3f}-{hi:.3f})" if r["speedup"] and lo else "-"
        verdict = "accepted" if r["accepted"] else "defaults kept"
        lines.append(
            f"| {r['app']} | {r['mpi']} | {r['strategy']} | {', '.join(r['space']) or '-'} | "
            f"{verdict} | {gain} | {r['runs']} | {r['seconds']} s |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
