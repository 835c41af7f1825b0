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
bound the race's gain captured is judged against. Each verdict's pairs are judged twice: by
the ordinary signed rank and by the verdict's rule, where the pairs split by a machine's two
modes score nothing (``rule.split``, issue 96); "two modes": the table's recorded runs of the
defaults fall into two clusters 1.3x apart.
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
from commtune.study import DEFAULTS, read_table

DATA = Path(__file__).with_name("data")


def passes(path: Path, runs: int, risk: float, seeds: int) -> tuple[float, float, float]:
    """(the table's best speedup, the share of seeded verdicts that pass its best by the
    ordinary signed rank, and by the rule with the pairs split by a machine's modes scoring
    nothing, ``rule.split``): both on the same pairs."""
    surface = replayed(path)
    best = min(surface.configs(), key=surface.value)
    speedup = surface.default_value / surface.value(best)
    schedule = rule.looks(risk, 1, runs // 2, runs // 2)
    passed = {False: 0, True: 0}
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
        for modes in passed:
            passed[modes] += any(
                rule.test(defaults[:n], mine[:n], limit=limit, tolerance=DEFAULTS.tolerance,
                          min_gain=DEFAULTS.min_gain, modes=modes).passed
                for n, limit in schedule if n <= len(mine))  # fmt: skip
    return speedup, passed[False] / seeds, passed[True] / seeds


def two_modes(path: Path) -> bool:
    """Whether the table's recorded runs of the defaults fall into two clusters 1.3x apart
    (``rule.modes_apart``): a machine with two modes."""
    surface = replayed(path)
    runs = read_table(path).defaults_runs(surface.space.defaults())[0]
    return rule.modes_apart([v for v in runs if v is not None], 1.3) is not None


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
        speedup, share, split = passes(path, args.runs, args.risk, args.seeds)
        held = held_out(path)
        if gains({"optimum_speedup": speedup, "held_out": held}):  # as the race counts them
            rows.append({"table": path.stem.removeprefix("table-"), "best": speedup,
                         "held_out": held, "passes": share, "passes_modes": split,
                         "two_modes": two_modes(path)})  # fmt: skip
    groups = {
        "every table with a gain": rows,
        "project's programs": [r for r in rows if not r["table"].startswith(("app-", "smpi-"))],
        "real programs": [r for r in rows if r["table"].startswith("app-")],
        "simulated": [r for r in rows if r["table"].startswith("smpi-")],
        "two modes": [r for r in rows if r["two_modes"]],
    }
    medians = {k: {key: statistics.median(r[key] for r in v)
                   for key in ("passes", "passes_modes")}
               for k, v in groups.items() if v}  # fmt: skip
    if args.json:
        print(json.dumps({"runs": args.runs, "risk": args.risk,
                          "seeds": args.seeds, "tables": rows, "medians": medians}))  # fmt: skip
        return 0
    title = (f"the rule handed the best configuration: {args.runs} runs left, "
             f"--risk {args.risk:g}")  # fmt: skip
    table = Table(title=title)
    for col in ("table", "best", "held out", "two modes", "verdicts that pass it: ordinary",
                "split pairs scoring nothing"):  # fmt: skip
        table.add_column(col)
    for r in rows:
        table.add_row(r["table"], f"{r['best']:.2f}x", f"{r['held_out']:.3f}x",
                      "yes" if r["two_modes"] else "", f"{100 * r['passes']:.0f} %",
                      f"{100 * r['passes_modes']:.0f} %")  # fmt: skip
    for k, v in medians.items():
        table.add_row(f"[b]median, {k}[/b]", "", "", "", f"[b]{100 * v['passes']:.0f} %[/b]",
                      f"[b]{100 * v['passes_modes']:.0f} %[/b]")  # fmt: skip
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
