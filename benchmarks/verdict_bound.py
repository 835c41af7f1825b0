"""The verdict's ceiling at a run budget: the rule handed each table's best configuration.

    python benchmarks/verdict_bound.py [--runs 14] [--risk 0.05] [--seeds 200]

For each recorded table with a gain (``benchmarks/data/table-*.json`` whose best beats the
defaults by 1 % on its own runs and held out, ``race.held_out``, as the race counts them), the rule
(:mod:`commtune.rule`) is given what no study has: the table's truly best configuration,
to test first. ``--runs`` runs are left for it (the verdict's half of 30, even), in pairs
beside the defaults, each pair's order drawn by a coin, every run dealt from the table's
recorded runs of that configuration (as the race deals them). The share of ``--seeds`` such
verdicts that pass is the most gain the rule can capture on that table at that budget: a
study that finds the best and spends every run left on it. The median over the tables is the
bound the race's gain captured is judged against.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from rich.console import Console
from rich.table import Table
from strategies import gains

from commtune import rule
from commtune.harness import held_out, replayed
from commtune.study import DEFAULTS

DATA = Path(__file__).with_name("data")


def passes(path: Path, runs: int, risk: float, seeds: int) -> tuple[float, float]:
    """(the table's best speedup, the share of seeded verdicts that pass its best)."""
    surface = replayed(path)
    best = min(surface.configs(), key=surface.value)
    speedup = surface.default_value / surface.value(best)
    schedule = rule.looks(risk, 1, runs // 2, runs // 2)
    passed = 0
    for seed in range(seeds):
        executor = surface.executor(0.0, seed)
        coins = rule.coins(seed)
        defaults: list[float] = []
        mine: list[float] = []
        for _ in range(runs // 2):
            if next(coins):  # the configuration first
                c = executor.run(best, 60.0).value
                d = executor.run(None, 60.0).value
            else:
                d = executor.run(None, 60.0).value
                c = executor.run(best, 60.0).value
            if d is None or c is None:
                break
            defaults.append(d)
            mine.append(c)
            limit = rule.limit_at(schedule, len(mine))
            if limit and rule.test(defaults, mine, limit=limit, tolerance=DEFAULTS.tolerance,
                                   min_gain=DEFAULTS.min_gain).passed:  # fmt: skip
                passed += 1
                break
    return speedup, passed / seeds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=14, help="runs left for the verdict")
    parser.add_argument("--risk", type=float, default=DEFAULTS.risk)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    args = parser.parse_args()
    if args.runs < 2 or args.seeds < 1 or not 0 < args.risk < 1:
        parser.error("--runs >= 2, --seeds >= 1, 0 < --risk < 1")
    rows = []
    for path in sorted(DATA.glob("table-*.json")):
        speedup, share = passes(path, args.runs, args.risk, args.seeds)
        held = held_out(path)
        if gains({"optimum_speedup": speedup, "held_out": held}):  # as the race counts them
            rows.append({"table": path.stem.removeprefix("table-"), "best": speedup,
                         "held_out": held, "passes": share})  # fmt: skip
    groups = {
        "every table with a gain": rows,
        "project's programs": [r for r in rows if not r["table"].startswith(("app-", "smpi-"))],
        "real programs": [r for r in rows if r["table"].startswith("app-")],
        "simulated": [r for r in rows if r["table"].startswith("smpi-")],
    }
    medians = {k: statistics.median(r["passes"] for r in v) for k, v in groups.items() if v}
    if args.json:
        print(json.dumps({"runs": args.runs, "risk": args.risk,
                          "seeds": args.seeds, "tables": rows, "medians": medians}))  # fmt: skip
        return 0
    title = (f"the rule handed the best configuration: {args.runs} runs left, "
             f"--risk {args.risk:g}")  # fmt: skip
    table = Table(title=title)
    for col in ("table", "best", "held out", "verdicts that pass it"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["table"], f"{r['best']:.2f}x", f"{r['held_out']:.3f}x",
                      f"{100 * r['passes']:.0f} %")  # fmt: skip
    for k, v in medians.items():
        table.add_row(f"[b]median, {k}[/b]", "", "", f"[b]{100 * v:.0f} %[/b]")
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
