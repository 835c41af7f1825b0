"""The race scored out of sample (issue 96), on tables and classes fixed in advance.

    python benchmarks/out_of_sample.py [--seeds 20] [--jobs N] [--json] [--tables a,b]
    python benchmarks/out_of_sample.py --fix      # class the tables not yet in the file

For every seed, each recorded table's rounds are split (``harness.split_rounds``: 5 of 9
dealt, 4 scoring): the studies are dealt the runs of one part and scored on the other's
(the best, what was handed back, the tail), so that no figure is the evidence a verdict
was given. Per table and seed: the tuner's whole design within 30 runs; TPE and random
given the runs it spent (the best measured handed back, as a user of either would take
it); and TPE and random each as the search of the tuner's own design (the same verdict
within the same 30 runs: "at the tuner's tail").

The tables and their classes are in ``benchmarks/data/yardstick.json``, written by
``--fix`` before any figure and never reclassified: a simulated table (``table-smpi-*``),
a real program's (``table-app-*`` and the bed's CoMD and miniFE), the project's programs
(``ct_*``), and **no gain** where a table's best, chosen on half of its rounds, is not
more than 1 % faster on the other half (``harness.held_out``: a property of the table,
not of any strategy). Every table counts in its class. Per class: the median table's gain
captured ((mean delivered speedup - 1) / (mean best - 1) over the seeds, both on the
scoring rounds) with a bootstrap 95 % interval over tables, the tail (studies handing
back something more than 2 % slower than the defaults), the studies that kept the
defaults and the runs; the no-gain class by its tail and kept share alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from commtune import rule
from commtune.harness import (
    StrategyRun,
    Surface,
    held_out,
    out_of_sample,
    run_strategy,
    run_tuner,
    split_rounds,
)
from commtune.study import DEFAULTS
from commtune.tune import ReferenceFailed

DATA = Path(__file__).with_name("data")
YARDSTICK = DATA / "yardstick.json"
RUNS = 30  # the study's bound, verdict included
TOLERANCE = 1.02  # the tail: more than 2 % slower than the defaults
NO_GAIN = DEFAULTS.min_gain
COLUMNS = {  # column -> what runs it
    "tuner": "the tuner's design, <= 30 runs",
    "tpe": "TPE, the same runs",
    "random": "random, the same runs",
    "tpe+verdict": "TPE + the verdict, <= 30 runs",
    "random+verdict": "random + the verdict, <= 30 runs",
}
CLASSES = ("project", "real", "simulated", "no gain")
REAL = ("comd", "minife", "hpcg", "amg", "snap", "lulesh")
WORK = Path(tempfile.gettempdir()) / "commtune-out-of-sample"


def program_class(stem: str) -> str:
    """A table's class by what it records: SMPI's simulated clusters, a real program (the
    ``benchmarks/apps`` tables and the bed's), or the project's own programs."""
    if stem.startswith("table-smpi-"):
        return "simulated"
    if stem.startswith("table-app-") or stem.rsplit("-", 1)[-1] in REAL:
        return "real"
    return "project"


def fix(path: Path = YARDSTICK) -> list[str]:
    """Class every ``table-*.json`` not yet in the yardstick file (the rule in the module
    docstring), keeping those already classed; the stems added."""
    known = json.loads(path.read_text()) if path.exists() else {
        "rule": "no gain: harness.held_out <= 1 + min_gain (1 %); else by what the table "
                "records (program_class); fixed before any out-of-sample figure",
        "tables": {}}  # fmt: skip
    added = []
    for table in sorted(DATA.glob("table-*.json")):
        if table.stem in known["tables"]:
            continue
        best = held_out(table)
        klass = "no gain" if best <= 1.0 + NO_GAIN else program_class(table.stem)
        known["tables"][table.stem] = {"class": klass, "held_out": round(best, 4),
                                       "fixed": datetime.date.today().isoformat()}  # fmt: skip
        added.append(table.stem)
    path.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    return added


_SURFACES: dict = {}


def surface(stem: str, seed: int) -> Surface:
    key = (stem, seed)
    if key not in _SURFACES:
        work = WORK / str(os.getpid())
        work.mkdir(parents=True, exist_ok=True)
        _SURFACES[key] = out_of_sample(DATA / f"{stem}.json", seed, work)
    return _SURFACES[key]


def total(run: StrategyRun) -> int:
    return run.runs + run.confirm_runs


def study(args: tuple[str, int, str, int]) -> dict:
    """One study of one column on one table and seed: what it delivered, scored on the
    scoring rounds."""
    stem, seed, column, runs = args
    surf = surface(stem, seed)
    best = 1.0 + surf.default_regret
    try:
        run, share = _run(surf, seed, column, runs)
    except ReferenceFailed:  # the defaults' first run dealt a recorded failure: as a user's
        # study, it stops there (one run spent) and nothing is handed back
        return {"table": stem, "seed": seed, "column": column, "best": best,
                "delivered": 1.0, "changed": False, "runs": 1, "stopped": True}  # fmt: skip
    return {"table": stem, "seed": seed, "column": column, "best": best,
            "delivered": best * share, "changed": run.changed, "runs": total(run)}  # fmt: skip


def _run(surf: Surface, seed: int, column: str, runs: int) -> tuple[StrategyRun, float]:
    """One column's study on a table's split and the share of the best it hands back."""
    if column == "tuner":
        run = run_tuner(surf, 0.0, seed, RUNS)
        share = run.confirmed_share()
    elif column.endswith("+verdict"):  # its plain search, then the tuner's verdict on its best
        run = run_strategy(column.removesuffix("+verdict"), surf, 0.0, seed, DEFAULTS.trials,
                           design="fixed", repeats=1, confirm_rounds=DEFAULTS.confirm,
                           max_runs=RUNS, gate="risk")  # fmt: skip
        share = run.confirmed_share()
    else:
        run = run_strategy(column, surf, 0.0, seed, max(2, runs), design="fixed", repeats=1)
        share = run.share_after(len(run.regret))
    return run, share


def race(stems: list[str], seeds: int, jobs: int) -> list[dict]:
    studies = [(s, seed) for s in stems for seed in range(seeds)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        tuner = list(pool.map(study, [(s, seed, "tuner", RUNS) for s, seed in studies]))
        spent = {(r["table"], r["seed"]): r["runs"] for r in tuner}
        rest = [(s, seed, c, spent[s, seed]) for s, seed in studies
                for c in COLUMNS if c != "tuner"]  # fmt: skip
        return tuner + list(pool.map(study, rest))


def cell(done: list[dict]) -> dict:
    """One table's figures in one column over its seeds."""
    best = float(np.mean([d["best"] for d in done]))
    delivered = float(np.mean([d["delivered"] for d in done]))
    return {"gain": (delivered - 1.0) / (best - 1.0) if best > 1.0 else None,
            "best": best, "tail": sum(d["delivered"] * TOLERANCE < 1.0 for d in done),
            "kept": sum(not d["changed"] for d in done), "seeds": len(done),
            "stopped": sum(bool(d.get("stopped")) for d in done),
            "runs": float(np.median([d["runs"] for d in done]))}  # fmt: skip


def interval(values: list[float], draws: int = 2000) -> tuple[float, float]:
    """A bootstrap 95 % interval of the median over tables (tables drawn with replacement)."""
    rng = np.random.default_rng(0)
    medians = np.median(rng.choice(values, size=(draws, len(values))), axis=1)
    return float(np.quantile(medians, 0.025)), float(np.quantile(medians, 0.975))


def classes(rows: dict[str, dict], klass: dict[str, str]) -> dict:
    """Per class and column: the median gain with its interval (not for no gain), the tail,
    the kept share, the studies and the median runs."""
    out: dict = {}
    for k in CLASSES:
        members = [t for t in rows if klass[t] == k]
        if not members:
            continue
        out[k] = {"tables": len(members)}
        for c in COLUMNS:
            cells = [rows[t][c] for t in members]
            studies = sum(x["seeds"] for x in cells)
            f = {"tail": sum(x["tail"] for x in cells), "studies": studies,
                 "kept": sum(x["kept"] for x in cells) / studies,
                 "runs": float(np.median([x["runs"] for x in cells]))}  # fmt: skip
            gains = [x["gain"] for x in cells if x["gain"] is not None]
            if k != "no gain" and gains:
                f["gain"] = float(np.median(gains))
                f["interval"] = interval(gains)
            out[k][c] = f
    return out


def lines(rows: dict[str, dict], klass: dict[str, str], figures: dict) -> list[str]:
    head = " | ".join(COLUMNS.values())
    out = [f"| class (tables) | {head} |", "|---" * (len(COLUMNS) + 1) + "|"]
    for k, f in figures.items():
        cells = []
        for c in COLUMNS:
            x = f[c]
            gain = (f"**{100 * x['gain']:.0f} %** [{100 * x['interval'][0]:.0f}, "
                    f"{100 * x['interval'][1]:.0f}]; " if "gain" in x else "")  # fmt: skip
            cells.append(f"{gain}tail {x['tail']}/{x['studies']}; kept "
                         f"{100 * x['kept']:.0f} %; {x['runs']:g} runs")  # fmt: skip
        out.append(f"| {k} ({f['tables']}) | " + " | ".join(cells) + " |")
    out += ["", "| table | class | rounds dealt / scoring | best (scoring rounds) | " + head
            + " |", "|---" * (len(COLUMNS) + 4) + "|"]  # fmt: skip
    for t, r in sorted(rows.items(), key=lambda kv: (klass[kv[0]], kv[0])):
        cells = [("-" if r[c]["gain"] is None or klass[t] == "no gain"
                  else f"{100 * r[c]['gain']:.0f} %") + f" (tail {r[c]['tail']}, kept "
                 f"{r[c]['kept']})" for c in COLUMNS]  # fmt: skip
        dealt, scoring = split_rounds(DATA / f"{t}.json", 0)
        rounds = f"{len(dealt)} / {len(scoring)}" if dealt != scoring else f"{len(dealt)} (exact)"
        out.append(f"| {t.removeprefix('table-')} | {klass[t]} | {rounds} | "
                   f"{r['tuner']['best']:.3f}x | " + " | ".join(cells) + " |")  # fmt: skip
    return out


def plot(figures: dict, path: Path) -> None:
    """Per class with a gain, each column's median gain captured (with its interval over
    tables) against its tail (the share of studies handing back something more than 2 %
    slower): up and to the left is better."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gained = [k for k in figures if k != "no gain"]
    fig, axes = plt.subplots(1, len(gained), figsize=(3.6 * len(gained), 3.4),
                             layout="constrained", squeeze=False)  # fmt: skip
    for ax, k in zip(axes[0], gained, strict=True):
        for i, c in enumerate(COLUMNS):
            x = figures[k][c]
            tail = 100 * x["tail"] / x["studies"]
            low, high = (100 * v for v in x["interval"])
            gain = 100 * x["gain"]
            ax.errorbar([tail], [gain], yerr=[[gain - low], [high - gain]], fmt="o",
                        color=f"C{i}", capsize=3, label=c)  # fmt: skip
        most = max(100 * figures[k][c]["tail"] / figures[k][c]["studies"] for c in COLUMNS)
        ax.set_xlim(-0.5, max(6.0, most + 1.0))
        ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)  # issue 96's goal
        ax.axvline(100 * DEFAULTS.risk, color="grey", linestyle="--", linewidth=1)  # --risk
        ax.set_title(f"{k} ({figures[k]['tables']} tables)", fontsize=9)
        ax.set_xlabel("tail: studies > 2 % slower (%)")
        ax.set_ylabel("gain captured, median table (%)")
    axes[0][0].legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--tables", help="comma-separated stems (default: the yardstick's)")
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    parser.add_argument("--png", type=Path, default=Path("benchmarks/out/out_of_sample.png"),
                        help="gain against tail per class and column")  # fmt: skip
    parser.add_argument("--ordinary", action="store_true", help="the verdict's ordinary signed "
                        "rank (no pair split by a machine's modes set aside: the rule before "
                        "issue 96)")  # fmt: skip
    parser.add_argument("--fix", action="store_true",
                        help="class the tables not in the yardstick file, then stop")  # fmt: skip
    args = parser.parse_args()
    if args.fix:
        added = fix()
        print(f"{YARDSTICK.name}: {len(added)} classed: {', '.join(added) or 'none'}")
        return 0
    if not YARDSTICK.exists():
        parser.error(f"no {YARDSTICK}: run --fix first, before any figure")
    klass = {t: v["class"] for t, v in json.loads(YARDSTICK.read_text())["tables"].items()}
    stems = args.tables.split(",") if args.tables else sorted(klass)
    for stem in stems:
        if stem not in klass or not (DATA / f"{stem}.json").is_file():
            parser.error(f"table {stem} is not in {YARDSTICK.name} (run --fix) or has no file")
    if args.ordinary:
        rule.MODES = math.inf  # the workers fork from here
    start = time.perf_counter()
    done = race(stems, args.seeds, args.jobs)
    rows = {t: {c: cell([d for d in done if d["table"] == t and d["column"] == c])
                for c in COLUMNS} for t in stems}  # fmt: skip
    figures = classes(rows, klass)
    plot(figures, args.png)
    if args.json:
        print(json.dumps({"classes": figures, "tables": rows, "seeds": args.seeds,
                          "seconds": round(time.perf_counter() - start)}))  # fmt: skip
    else:
        print("\n".join(lines(rows, klass, figures)))
        print(
            f"\n{len(done)} studies, {args.seeds} seeds, {time.perf_counter() - start:.0f} s; "
            f"plot: {args.png}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
