"""An in-run study's answer by message size against the defaults and the best single
algorithm, on whole runs (issue 95, item 3).

    python benchmarks/by_size.py [--mpi mpich,openmpi] [--iterations 20000] [--rounds 10]
                                 [--seeds 2] [--json FILE]

Per installation (2 ranks on this machine), ``benchmarks/csrc/two_sizes.c`` (per iteration
20 allreduces of 64 B and one of 64 KiB), for each seed:

1. ``commtune tune --knob <allreduce's algorithm>=<its own>,<every algorithm the race
   takes>``: raced in-run, the answer (a selection file where the choices differ by size,
   else one algorithm, else the defaults) checked on whole runs, the program's wall time;
2. ``--rounds`` rounds, each in an order drawn anew, of three whole runs: the defaults, the
   best single algorithm by the race's pooled estimate (set at launch, with what makes the
   variable govern: its static setting as export writes it) and the study's selection file
   exactly as ``export --format selection`` writes it (where the study wrote one); the
   program's own time (``two_sizes: time``) and the wall time, the paired ratios' medians
   and bootstrap 90 % intervals (estimates).

The figure: whole runs with the file beside the defaults and beside the best single
algorithm, where the sizes' winners differ (a seed whose race did not choose by size is
reported as such, never as a win).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import optuna

from commtune.knobs import apply, load_catalog
from commtune.launch import launcher_for
from commtune.mpi import installation_of
from commtune.service import BySize, file_of, race_candidates
from commtune.store import Store
from commtune.study import InRunFinding, acceptance_of
from commtune.trial import Objective, run_process

HERE = Path(__file__).resolve().parent
METRIC = r"regex:two_sizes: time ([0-9.]+) s"


def _ratio_interval(ratios: list[float], seed: int = 95) -> list[float] | None:
    """The median ratio's bootstrap 90 % interval (an estimate)."""
    if len(ratios) < 3:
        return None
    rng = random.Random(seed)
    boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    return [boots[100], boots[1899]]


def study(spec: str, command: list[str], storage: str, name: str, seed: int) -> dict:
    inst = installation_of(spec)
    knob, everyone, _ = race_candidates(inst, "allreduce", [])
    values = ",".join(everyone)
    line = [sys.executable, "-m", "commtune", "tune", "--mpi", spec, "--knob",
            f"{knob}={values}", "--study", name, "--storage", storage, "--seed", str(seed),
            "--json", "--", *command]  # fmt: skip
    done = subprocess.run(line, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-800:])
    acc = acceptance_of(optuna.load_study(study_name=name, storage=Store(storage).optuna))
    assert acc is not None
    found = acc.finding_of(InRunFinding)
    raced = sorted(found.raced, key=lambda c: -c["speedup"]) if found else []
    return {"knob": knob, "reference": everyone[0], "accepted": acc.accepted,
            "reason": acc.reason, "speedup": acc.speedup, "ci": acc.ci,
            "runs": len(acc.default_values) + len(acc.best_values)
            + (found.raced_runs if found else 0),
            "by_size": list(found.by_size) if found else [],
            "file": found.selection.get("name") if found and found.selection else None,
            "ranges": found.selection.get("ranges") if found and found.selection else None,
            "single": raced[0]["name"] if raced else None,
            "single_call_speedup": raced[0]["speedup"] if raced else None,
            "_acc": acc}  # fmt: skip


def rounds(spec: str, command: list[str], arms: dict[str, dict[str, str]], count: int,
           seed: int) -> dict:  # fmt: skip
    """``count`` rounds of one whole run of each arm (its variables), in orders drawn anew:
    each arm's program time and wall time, and the paired ratios to the defaults'."""
    inst = installation_of(spec)
    rng = random.Random(seed)
    objective = Objective.parse(METRIC)
    got: dict[str, list[tuple[float, float] | None]] = {a: [] for a in arms}
    for _ in range(count):
        order = list(arms)
        rng.shuffle(order)
        for arm in order:
            plan = launcher_for(inst).plan(command, arms[arm])
            done = run_process(plan.argv, plan.env, 600)
            value = objective.extract(done.wall, done.stdout) if done.returncode == 0 else None
            got[arm].append((value, done.wall) if value is not None else None)
    out: dict[str, dict] = {}
    for arm, values in got.items():
        kept = [v for v in values if v is not None]
        out[arm] = {"runs": len(kept), "failed": len(values) - len(kept),
                    "median_time": statistics.median(v[0] for v in kept) if kept else None,
                    "median_wall": statistics.median(v[1] for v in kept) if kept
                    else None}  # fmt: skip
    for a, b in (("defaults", "file"), ("single", "file"), ("defaults", "single")):
        if a not in got or b not in got:
            continue
        for which, i in (("time", 0), ("wall", 1)):
            ratios = [x[i] / y[i] for x, y in zip(got[a], got[b], strict=True) if x and y]
            out[f"{a}/{b}_{which}"] = {
                "median": statistics.median(ratios) if ratios else None,
                "interval": _ratio_interval(ratios), "spread": [min(ratios), max(ratios)]
                if ratios else None}  # fmt: skip
    return out


def one(spec: str, args: argparse.Namespace, work: Path) -> list[dict]:
    inst = installation_of(spec)
    program = work / f"two_sizes-{spec.replace('@', '')}"
    subprocess.run([inst.mpicc, "-O2", "-o", str(program), str(HERE / "csrc" / "two_sizes.c")],
                   check=True)  # fmt: skip
    command = launcher_for(inst).command(2, [str(program), str(args.iterations)])
    rows = []
    for seed in range(args.seeds):
        storage = f"sqlite:///{work / f'{spec}-{seed}.db'}"
        s = study(spec, command, storage, f"bysize-{seed}", seed)
        acc = s.pop("_acc")
        arms: dict[str, dict[str, str]] = {"defaults": {}}
        if s["single"] is not None and s["single"] != s["reference"]:
            catalog = load_catalog(inst.impl.vendor.value)  # as export writes it
            arms["single"] = apply([catalog[s["knob"]]], {s["knob"]: s["single"]},
                                   inst.impl).env  # fmt: skip
        file = file_of(acc) if acc.accepted else None
        if s["file"] is not None and file is None:  # written, not handed back: measured too
            study_ = optuna.load_study(study_name=f"bysize-{seed}", storage=Store(storage).optuna)
            found = acceptance_of(study_).finding_of(InRunFinding)  # type: ignore[union-attr]
            file = BySize.from_json(found.selection)
        if file is not None:
            arms["file"] = file.env()
        measured = rounds(spec, command, arms, args.rounds, 1000 + seed)
        row = {"mpi": spec, "version": inst.version, "seed": seed, **s, "whole": measured}
        print(json.dumps({k: v for k, v in row.items() if k != "by_size"}), file=sys.stderr)
        rows.append(row)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="mpich,openmpi")
    p.add_argument("--iterations", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [r for spec in args.mpi.split(",") for r in one(spec, args, Path(tmp))]
    text = json.dumps(rows, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
