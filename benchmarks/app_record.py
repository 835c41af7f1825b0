"""Balanced replay tables of real programs (issue 42, point 2), in the space each one's
profile chooses: the program built with the installation (``apps.py``), one profiled run of
its defaults (``commtune profile``), the knobs the guide calls for in that profile (the
highest share first, as ``commtune tune`` with no knob chooses them), each cut to a few
values (a categorical knob's first ``--values``, a size knob's default and x1/4, x4 around
it), and then ``commtune tune --record`` of every configuration ``--repeats`` times in
shuffled rounds. The table's description says the program, its repository and commit, the
input and command, and why each knob is there.

    python benchmarks/app_record.py --sources DIR --apps comd,hpcg --mpis openmpi,mpich
        [--out benchmarks/data] [--repeats 9] [--most 24] [--bed NODES]

``--bed 4`` records inside the first node of a 4-node test bed (root), with 4 ranks,
one a node, in the space the guide chooses across nodes. A table goes to
``OUT/table-app-NAME-MPI[-4n].json``; one that exists is kept (delete it to record again).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from apps import APPS, App, BuildError, on_bed
from instrument import COMMTUNE

from commtune.knobs import Knob, Value, installed_knobs
from commtune.mpi import Installation, installation_of
from commtune.profile import Profile, guided
from commtune.testbed import Cluster

ROOT = Path(__file__).resolve().parents[2]


def values_of(knob: Knob, most: int) -> list[Value]:
    """A few values of a knob: a categorical one's first ``most`` (its default first), a
    size's default and the domain's values nearest a quarter and four times it."""
    default, domain = knob.default, knob.domain()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in domain) and default in domain:
        positive = [v for v in domain if v > 0]
        picks = [default]
        if default > 0 and positive:
            for target in (default / 4, default * 4):
                near = min(positive, key=lambda v: abs(math.log2(v) - math.log2(target)))
                if near not in picks:
                    picks.append(near)
        return sorted(picks, key=lambda v: (v <= 0, v))
    ordered = [default, *(v for v in domain if v != default)] if default in domain else domain
    return ordered[:most]


def space_for(inst: Installation, profile: Profile, across: bool, most: int,
              budget: int) -> tuple[list[tuple[Knob, list[Value]]], list[str]]:  # fmt: skip
    """The guided knobs with their values, as many as keep the grid within ``budget``
    configurations; and each kept knob's reason."""
    statuses = {n: s for n, s in installed_knobs(inst).items() if s.available}
    chosen: list[tuple[Knob, list[Value]]] = []
    reasons, size = [], 1
    for choice in guided(profile, [s.knob for s in statuses.values()], across):
        knob = statuses[choice.knob].knob
        values = values_of(knob, most)
        if len(values) < 2 or size * len(values) > budget:
            continue
        chosen.append((knob, values))
        reasons.append(f"{knob.name} ({choice.reason})")
        size *= len(values)
    return chosen, reasons


def _cli(argv: list[str], env: dict[str, str], cwd: Path,
         runner: list[str]) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run([*runner, *COMMTUNE, *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip


def record_one(app: App, source: Path, inst: Installation, out: Path, repeats: int, most: int,
               budget: int, bed: Cluster | None) -> str:  # fmt: skip
    binary = app.build(source, inst)
    with tempfile.TemporaryDirectory(prefix=f"rec-{app.name}-") as tmp:
        work = Path(tmp)
        runner, site, ranks = on_bed(bed, inst)
        env = {**os.environ, **inst.tool_env(), "OMP_NUM_THREADS": "1", **site}
        command = app.command(inst, binary, work, ranks=ranks)
        prof = work / "profile.json"
        done = _cli(["profile", "--mpi", inst.prefix, "-o", str(prof), "--storage",
                     f"sqlite:///{work / 'p.db'}", "--", *command], env, work, runner)  # fmt: skip
        if done.returncode != 0:
            return f"profile failed: {done.stderr.strip().splitlines()[-1:]}"
        space, reasons = space_for(inst, Profile.load(prof), bed is not None, most, budget)
        if not space:
            return "the profile calls for no knob"
        knobs = [f"--knob={k.name}=" + "|".join(k.format(v) for v in vs) for k, vs in space]
        t0 = time.perf_counter()
        done = _cli(["tune", "--mpi", inst.prefix, "--metric", app.metric, "--record", str(out),
                     "--repeats", str(repeats), *knobs, "--storage",
                     f"sqlite:///{work / 's.db'}", "--", *command], env, work, runner)  # fmt: skip
        if done.returncode != 0:
            return f"record failed: {done.stderr.strip().splitlines()[-1:]}"
        data = json.loads(out.read_text())
        where = f"{len(bed.hostnames)} test-bed nodes, one rank each" if bed else "one node"
        data["description"] = (
            f"program: {app.name} ({app.repo} {app.commit}), built by benchmarks/app_build.py "
            f"{app.name}; {where}; input and command: {shlex.join(command)}; space: the "
            f"profile's guided knobs ({'; '.join(reasons)})"
        )
        out.write_text(json.dumps(data, indent=1) + "\n")
        names = ", ".join(k.name for k, _ in space)
        return (f"{len(data['trials'])} configurations, {len(data['order'])} runs in "
                f"{time.perf_counter() - t0:.0f} s: {names}")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", type=Path, required=True)
    p.add_argument("--apps", default=",".join(APPS))
    p.add_argument("--mpis", default="openmpi,openmpi@5,mpich,intel")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "data")
    p.add_argument("--repeats", type=int, default=9)  # 3 left truths known to 3-24 %
    p.add_argument("--most", type=int, default=4, help="values of a categorical knob")
    p.add_argument("--budget", type=int, default=18, help="most configurations a table")
    p.add_argument("--bed", type=int, help="record on a test bed of this many nodes")
    args = p.parse_args()
    with Cluster(args.bed, 1) if args.bed else contextlib.nullcontext() as bed:
        for name in args.apps.split(","):
            app = APPS[name]
            for spec in args.mpis.split(","):
                inst = installation_of(spec)
                tag = inst.vendor.value + ("5" if inst.version.startswith("5") else "")
                out = args.out / f"table-app-{name}-{tag}{f'-{args.bed}n' if bed else ''}.json"
                if out.exists():
                    print(f"{out.name}: kept", file=sys.stderr)
                    continue
                try:
                    said = record_one(app, args.sources / app.repo.replace("/", "+"), inst,
                                      out, args.repeats, args.most, args.budget, bed)  # fmt: skip
                except BuildError as exc:
                    said = f"not built: {exc}"
                print(f"{out.name}: {said}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
