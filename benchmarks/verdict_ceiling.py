"""The verdict's ceiling on the race's tables: the risk gate's rule told what no study knows.

Where the race (``strategies.py --tables``) finds the tuner behind TPE, is the gain lost in
what each study estimates (the distribution of effects its arms are shrunk toward, the
defaults' level every run is divided by) or in the rule at the stated risk? This runs the
same race (same tables, seeds, runs; TPE and random at the runs the tuner spent) with the
rule told the truth:

* ``--know prior``: each arm's prior is the table's own distribution of effects (the log of
  every configuration's true time over the defaults'), not the study's fit to its arms;
* ``--know level``: every run is divided by the defaults' true level, the rest of the rule
  as it is (the blur of the level's error, ``Arm.shared``, and the per-look correction);
* ``--know level,unblurred``: that, without the blur and the correction (there is no error
  of the level to account for; what they cost where there is none);
* several at once: ``--know prior,level``.

No study knows either. The figures bound what estimating them better could buy; they are
an instrument, not a design (docs/benchmarks.md, issue 47, eleventh part).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from strategies import OPTIONS, summary, table_path, table_race, tables, tables_table

from commtune import bayes
from commtune.race import Surface
from commtune.race import _run as race_run
from commtune.study import DEFAULTS
from commtune.tune import _decide

KNOW = ("prior", "level", "unblurred")


def table_prior(surface: Surface) -> np.ndarray:
    """The table's distribution of effects over ``bayes.GRID``: every configuration's log
    true time over the defaults' (a crashing one left out), smoothed with the study's kernel
    (``bayes.SMOOTHING``) but not mixed with its broad prior (``bayes._smoothed``): the
    truth rules out the effects no configuration has."""
    counts = np.zeros(len(bayes.GRID))
    for config in surface.configs():
        value = surface.value(config)
        if math.isfinite(value) and value > 0:
            y = math.log(value / surface.default_value)
            at = round((y - bayes.GRID[0]) / bayes.STEP)
            counts[min(max(at, 0), len(bayes.GRID) - 1)] += 1
    smooth = np.convolve(counts / counts.sum(), bayes.SMOOTHING, mode="same")
    return np.asarray(smooth / smooth.sum())


@contextmanager
def knowing(know: Collection[str]) -> Iterator[None]:
    """The rule told the truth (``know``: of ``KNOW``) in every study this process and the
    workers it forks run; as it was on leaving."""
    current: dict[str, Surface] = {}
    priors: dict[str, np.ndarray] = {}
    saved = (race_run.race_one, _decide._fit, _decide.Levels.at, _decide.Arm.shared,
             _decide._looks)  # fmt: skip
    race_one, fit = saved[0], saved[1]

    def told(strategy: str, surface: Surface, *args: Any, **kwargs: Any) -> Any:
        current["table"] = surface
        return race_one(strategy, surface, *args, **kwargs)

    def fit_told(arms: Sequence[_decide.Arm], levels: _decide.Levels, scale: float) -> None:
        """The study's fit, then each arm's own runs (``Arm.hope``: their likelihood, blurred
        as the study's, under ``bayes.OWN_PRIOR``) under the table's prior instead."""
        fit(arms, levels, scale)
        surface = current["table"]
        if surface.name not in priors:
            priors[surface.name] = table_prior(surface)
        for arm in arms:
            if arm.hope is not None:
                post = arm.hope.weights / bayes.OWN_PRIOR * priors[surface.name]
                arm.posterior = bayes.Posterior(post / post.sum(), arm.hope.runs)

    def true_level(levels: _decide.Levels, seq: int) -> float | None:
        return current["table"].default_value if levels.stream else None

    race_run.race_one = told
    if "prior" in know:
        _decide._fit = fit_told
    if "level" in know:
        _decide.Levels.at = true_level
    if "unblurred" in know:
        _decide.Arm.shared = lambda arm, levels: 0
        _decide._looks = lambda arms: 1
    try:
        yield
    finally:
        (race_run.race_one, _decide._fit, _decide.Levels.at, _decide.Arm.shared,
         _decide._looks) = saved  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--know", type=lambda t: t.split(","), default=["prior"],
                        help="what the rule is told, comma-separated: prior (the table's "
                        "distribution of effects as every arm's prior), level (the "
                        "defaults' true level), unblurred (with level: no blur of its "
                        "error, no per-look correction)")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--risk", type=float, default=DEFAULTS.risk, help="the tuner's --risk")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    parser.add_argument("tables", nargs="*", help="stems in benchmarks/data (default: all)")
    args = parser.parse_args()
    if not args.know or set(args.know) - set(KNOW):
        parser.error(f"--know: some of {', '.join(KNOW)}, not {','.join(args.know)}")
    if "unblurred" in args.know and "level" not in args.know:
        parser.error("--know unblurred: only with level (no error of the level to blur)")
    names = args.tables or tables()
    for name in names:
        if not table_path(name).is_file():
            parser.error(f"no table {name} ({table_path(name)})")
    if args.seeds < 1 or not 0 < args.risk <= 0.5:
        parser.error("--seeds must be at least 1 and --risk in (0, 0.5]")
    OPTIONS.risk = args.risk
    multiprocessing.set_start_method("fork")  # the workers run the studies told the truth
    start = time.perf_counter()
    with knowing(args.know):
        rows = table_race(names, args.seeds, args.jobs)
    if args.json:
        print(json.dumps({"know": sorted(args.know), "risk": args.risk, "tables": rows,
                          "summary": summary(rows),
                          "seconds": round(time.perf_counter() - start)}))  # fmt: skip
    else:
        print(f"the rule told the truth ({', '.join(args.know)}), --risk {args.risk:g}:\n")
        print(tables_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
