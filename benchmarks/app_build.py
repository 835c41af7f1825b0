"""Build a real program from its public source with an MPI installation, into the cache,
and print the command that tunes it (or, with ``--run``, run it once and print the metric).

    python benchmarks/app_build.py snap --source /path/to/SNAP --mpi openmpi [--run]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

from apps import APPS, BuildError

from commtune.mpi import installation_of
from commtune.trial import Objective


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("app", choices=sorted(APPS))
    p.add_argument("--source", type=Path, help="the program's source folder (not for IMB)")
    p.add_argument("--mpi", default="openmpi")
    p.add_argument("--work", type=Path, default=Path("apps-work"), help="its run folder")
    p.add_argument("--run", action="store_true", help="run it once and print its metric")
    args = p.parse_args()
    app = APPS[args.app]
    inst = installation_of(args.mpi)
    if app.languages and (args.source is None or not args.source.is_dir()):
        print(f"build.py: {app.name} needs --source (a snapshot of {app.repo})", file=sys.stderr)
        return 2
    try:
        t0 = time.perf_counter()
        binary = app.build(args.source or Path("."), inst)
    except BuildError as exc:
        print(f"build.py: {app.name} with {inst.describe()}: {exc}", file=sys.stderr)
        return 1
    built = time.perf_counter() - t0
    work = args.work.resolve() / f"{app.name}-{inst.vendor.value}"
    command = app.command(inst, binary, work)
    print(
        f"# {app.name} ({app.repo} {app.commit[:12]}) with {inst.describe()}: built in "
        f"{built:.1f} s",
        file=sys.stderr,
    )
    line = f"commtune tune --mpi {inst.prefix} --metric {shlex.quote(app.metric)} -- " \
           f"{shlex.join(command)}"  # fmt: skip
    print(line)
    if args.run:
        t0 = time.perf_counter()
        done = subprocess.run(
            command,
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
            env={**inst.tool_env(), "OMP_NUM_THREADS": "1"},
        )
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            print(f"run failed ({done.returncode}): {done.stderr[-800:]}", file=sys.stderr)
            return 1
        value = Objective.parse(app.metric).extract(wall, done.stdout)  # as commtune reads it
        if value is None:
            print(f"no metric in its output: {done.stdout[-800:]}", file=sys.stderr)
            return 1
        print(f"# ran in {wall:.2f} s; metric {value:g}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
