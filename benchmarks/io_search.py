"""Parallel I/O search: exhaustive, GA (H5Tuner) and the trained model (Behzad et al.) on the
I/O kernel, side by side.

    python benchmarks/io_search.py [--mpi openmpi,mpich] [--sizes 1M,4M] [--train 128K,256K]
                                   [--rounds 10] [--out benchmarks/out/io_search.json]

Per MPI (2 ranks, the MPI-IO kernel ``ct_io`` writing to ``--io-dir``) and per target size:

* ``exhaustive``: ``commtune tune --strategy grid --fixed-repeats`` over the whole space
  (3 runs of every configuration, no confirmation): its best is the exhaustive best;
* ``ga``: ``--strategy ga --trials 40`` (the reference counts as one);
* ``model``: ``--strategy model`` with ``top_k=20``, ``top_m=10``: 1 + 20 + 10 trials at the
  target, after training at the ``--train`` sizes; the first size trains, the next ones
  reuse its training (``--train-from``), as the paper's one training serves several sizes;
* then ``--rounds`` interleaved rounds of the default and the three answers (order rotated
  each round): speedups are paired medians over the rounds with a bootstrap CI
  (``stats.compare_paired``), the share is the paper's ratio speedup / exhaustive-best
  speedup, and the runs are each study's (controls and training included).

The metric is the kernel's write time (open to close, flush included).
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

from commtune import native, stats
from commtune.knobs import load_catalog
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.profile import Profiling
from commtune.trial import LocalExecutor, Objective

METRIC = r'regex:"write_s":([0-9.]+)'
# Spaces of at least 50 configurations of the knobs each MPI-IO implementation reads.
SPACES = {
    # ROMIO (MPICH's MPI-IO): 3 x 3 x 3 x 2 = 54
    "mpich": [
        "cb_buffer_size=1M,4M,16M",
        "romio_cb_write",
        "romio_ds_write",
        "romio_no_indep_rw",
    ],
    # Open MPI: OMPIO or ROMIO, OMPIO's collective algorithm and aggregation buffer, and a
    # ROMIO hint (read by romio321 only): 2 x 5 x 3 x 2 = 60
    "openmpi": [
        "io",
        "fcoll",
        "io_ompio_bytes_per_agg=1M,4M,32M",
        "romio_cb_write=automatic,disable",
    ],
}


def cli(args: list[str]) -> tuple[dict, float]:
    t0 = time.perf_counter()
    done = subprocess.run([*COMMTUNE, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"commtune {' '.join(args[:3])} failed: {done.stderr[-3000:]}")
    return last_json(done.stdout), time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpi", default="openmpi,mpich")
    parser.add_argument("--sizes", default="1M,4M", help="particles per rank at the targets")
    parser.add_argument("--train", default="128K,256K", help="particles per rank in training")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--io-dir", default="/var/tmp/commtune-io-bench")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/out/io_search.json")
    args = parser.parse_args()
    io_dir = Path(args.io_dir)
    io_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for mpi in args.mpi.split(","):
        installation = find_installation(Vendor(mpi))
        launcher = launcher_for(installation)
        program, _ = native.build_io(installation)
        template = launcher.command(2, [str(program), "-n", "{size}", "-d", str(io_dir)])
        knob_args = [a for k in SPACES[mpi] for a in ("--knob", k)]
        catalog = load_catalog(mpi)
        knobs = [catalog[k.split("=")[0]] for k in SPACES[mpi]]
        trained_runs = 0
        with tempfile.TemporaryDirectory() as tmp:
            storage = f"sqlite:///{tmp}/io.db"
            common = ["--mpi", mpi, *knob_args, "--metric", METRIC, "--confirm", "0"]
            common += ["--seed", str(args.seed), "--storage", storage, "--json"]
            for i, size in enumerate(args.sizes.split(",")):
                command = [a.replace("{size}", size) for a in template]
                label = f"{mpi} {size}"
                exhaustive, t_exh = cli(["tune", *common, "--strategy", "grid", "--trials",
                                         "100000", "--fixed-repeats", "--study", f"grid-{size}",
                                         "--", *command])  # fmt: skip
                print(f"{label}: exhaustive {exhaustive['trials']} trials, "
                      f"{exhaustive['runs']} runs, {t_exh:.0f} s", file=sys.stderr)  # fmt: skip
                ga, t_ga = cli(["tune", *common, "--strategy", "ga", "--trials", "40",
                                "--study", f"ga-{size}", "--", *command])  # fmt: skip
                print(f"{label}: ga {ga['runs']} runs, {t_ga:.0f} s", file=sys.stderr)
                model_args = ["--strategy", "model", "--trials", "31", "--study", f"model-{size}"]
                for option in ("top_k=20", "top_m=10"):
                    model_args += ["--strategy-option", option]
                model_args += ["--scale", f"size={size}"]
                if i == 0:
                    model_args += ["--train", f"size={args.train}"]
                else:
                    model_args += ["--train-from", f"model-{args.sizes.split(',')[0]}"]
                model, t_model = cli(["tune", *common, *model_args, "--", *template])
                training = 0
                if i == 0:
                    shown, _ = cli(["show", f"model-{size}", "--storage", storage, "--json"])
                    training = sum(
                        len(t["runs"]) for t in shown["trials"] if t["role"] == "training"
                    )
                    trained_runs = training
                print(f"{label}: model {model['runs']} runs ({training} training), "
                      f"{t_model:.0f} s", file=sys.stderr)  # fmt: skip
                answers = {
                    "exhaustive": exhaustive["best_params"],
                    "ga": ga["best_params"],
                    "model": model["best_params"],
                }
                executor = LocalExecutor(
                    launcher,
                    command,
                    knobs,
                    Objective.parse(METRIC),
                    profiling=Profiling(native.build_interposer(installation), 0.1, None),
                )
                times: dict[str, list[float]] = {"default": [], **{k: [] for k in answers}}
                names = list(times)
                for r in range(args.rounds):
                    order = names[r % len(names) :] + names[: r % len(names)]
                    row = {}
                    for name in order:
                        config = answers.get(name)
                        run = executor.run(config or None, 120)
                        row[name] = run.value
                    if all(v is not None for v in row.values()):
                        for name, v in row.items():
                            times[name].append(v)  # type: ignore[arg-type]
                comparisons = {
                    name: stats.compare_paired(times["default"], times[name]) for name in answers
                }
                best = comparisons["exhaustive"].speedup
                row_out = {
                    "mpi": mpi,
                    "size": size,
                    "space": exhaustive["trials"] - 1,
                    "default_s": stats.median(times["default"]),
                    "rounds": len(times["default"]),
                    "spread_default": stats.spread(times["default"]),
                    "answers": answers,
                    "speedup": {k: c.speedup for k, c in comparisons.items()},
                    "ci": {k: [c.ci_low, c.ci_high] for k, c in comparisons.items()},
                    "share": {k: c.speedup / best for k, c in comparisons.items()},
                    "runs": {
                        "exhaustive": exhaustive["runs"],
                        "ga": ga["runs"],
                        "model": model["runs"],
                        "model_training": training if i == 0 else trained_runs,
                        "model_training_reused": i > 0,
                    },
                    "seconds": {"exhaustive": t_exh, "ga": t_ga, "model": t_model},
                }
                results.append(row_out)
                print(json.dumps(row_out), file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    return 0


def table(results: list[dict]) -> str:
    lines = [
        "| MPI | size | space | default | method | speedup [95% CI] | share of best | runs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for method in ("exhaustive", "ga", "model"):
            runs = str(r["runs"][method])
            if method == "model":
                extra = "reused" if r["runs"]["model_training_reused"] else "incl."
                runs += f" ({extra} {r['runs']['model_training']} training)"
            lo, hi = r["ci"][method]
            lines.append(
                f"| {r['mpi']} | {r['size']} | {r['space']} | {r['default_s']:.3f} s | {method} "
                f"| {r['speedup'][method]:.2f}x [{lo:.2f}, {hi:.2f}] "
                f"| {100 * r['share'][method]:.0f} % | {runs} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
