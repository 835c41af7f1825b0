"""Wang et al.'s prediction at scale (issue 50): ``commtune train --mpi smpi`` on the simulated
fat tree of ``benchmarks/smpi_tables.py`` (its training benchmark at 64 and 256 simulated
ranks, the tables' space: decision logic x allreduce algorithm x eager limit), then ``commtune
predict`` from one simulated run of each real program the tables hold, at the tables' scale.
The configuration predicted is looked up in the program's table (every configuration of the
space simulated once: deterministic), so its speedup over the defaults and its share of the
best are the simulation's own, not an estimate.

    python benchmarks/smpi_wang.py --source comd=DIR --source lulesh=DIR ... \\
        [--cases comd-256-fat,...] [--np 64,256] [--budget 312] [--configs 12]

The training runs are stored in ``benchmarks/out/wang-smpi.db`` as they finish (run again to
resume). The figure (the paper: 95 % of the best speedup on NPB IS and LU): per program, the
predicted configuration's speedup over the defaults, the table's best, the share of the best
((predicted - 1) / (best - 1), on tables with a gain), and whether it is slower than the
defaults.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instrument import COMMTUNE, last_json
from smpi_tables import CLUSTERS, DATA, PROGRAMS, SPACE, case_command

from commtune.harness import replayed
from commtune.mpi import write_cluster

OUT = Path(__file__).resolve().parent / "out"
CASES = ("comd-256-fat", "snap-256-fat", "lulesh-216-fat", "minife-256-fat", "comd-512-fat",
         "comd-1024-fat", "lulesh-1000-fat")  # fmt: skip
NO_GAIN = 1.01  # a table whose best is below this has no gain to share


def commtune(*argv: str, cwd: Path) -> dict:
    run = subprocess.run([*COMMTUNE, *argv], cwd=cwd, text=True,
                         stdout=subprocess.PIPE, check=True)  # fmt: skip
    return last_json(run.stdout)


def truth(path: Path, params: dict) -> tuple[float, float | None, float]:
    """The defaults' value, the predicted configuration's (None: it failed there), the best,
    as the race reads the table; the knobs the model left out stay at their defaults."""
    surface = replayed(path)
    value = surface.value({**surface.space.defaults(), **params})
    return surface.default_value, value if math.isfinite(value) else None, surface.optimum


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", action="append", default=[], help="PROGRAM=DIR")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--np", default="64,256", help="the training runs' rank counts")
    p.add_argument("--budget", type=int, default=312)
    p.add_argument("--configs", type=int, default=12)
    p.add_argument("--storage", default=f"sqlite:///{OUT / 'wang-smpi.db'}")
    args = p.parse_args()
    sources = {k: Path(v) for k, _, v in (s.partition("=") for s in args.source)}
    OUT.mkdir(exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="smpi-wang-") as tmp:
        work = Path(tmp)
        platform, hosts = write_cluster(CLUSTERS["fat"], str(work / "fat"))
        t0 = time.perf_counter()
        model = commtune("train", "--mpi", "smpi", "--platform", platform, "--hostfile", hosts,
                         "--np", args.np, "--budget", str(args.budget), "--configs",
                         str(args.configs), *SPACE, "--storage", args.storage, "--json",
                         cwd=work)  # fmt: skip
        trained = time.perf_counter() - t0
        print(f"trained: {model['model']} on {', '.join(model['selected'])}, "
              f"{model['runs']} runs, {trained:.0f} s", file=sys.stderr)  # fmt: skip
        for case in (c.strip() for c in args.cases.split(",") if c.strip()):
            path = DATA / f"table-smpi-{case}.json"
            if not path.exists():
                print(f"{case}: no table ({path.name}); skipped", file=sys.stderr)
                continue
            try:
                command = case_command(case, sources, work)
            except SystemExit as exc:  # the program's source not given
                print(f"{case}: {exc}; skipped", file=sys.stderr)
                continue
            metric = PROGRAMS[case.split("-")[0]][0]  # the table's: the program's own timer
            t0 = time.perf_counter()
            try:
                said = commtune("predict", "--storage", args.storage, "--json",
                                *(["--metric", metric] if metric else []), "--", *command,
                                cwd=work)  # fmt: skip
            except subprocess.CalledProcessError:
                print(f"{case}: the profiled run failed (above); skipped", file=sys.stderr)
                continue
            wall = time.perf_counter() - t0
            default, value, best = truth(path, said["params"])
            rows.append({"case": case, "params": said["params"], "default": default,
                         "predicted": value, "best": best, "wall": wall})  # fmt: skip
    print(
        "| program, ranks | predicted configuration | speedup predicted | best | share of "
        "the best | slower than the defaults | predict's wall time |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        got = r["default"] / r["predicted"] if r["predicted"] else None
        top = r["default"] / r["best"]
        if got is None:
            share = "-"
        elif top < NO_GAIN:
            share = "no gain"
        else:
            share = f"{(got - 1) / (top - 1):.0%}"
        shown = ", ".join(f"{k.removeprefix('smpi/')}={v}" for k, v in r["params"].items())
        slower = "failed" if got is None else "yes" if got < 1 / 1.02 else "no"
        print(
            f"| {r['case']} | {shown} | {f'{got:.3f}x' if got else 'failed'} | {top:.3f}x | "
            f"{share} | {slower} | {r['wall']:.0f} s |"
        )
    (OUT / "wang-smpi.json").write_text(json.dumps({"model": model, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
