"""The strategy race: every strategy on every surface, many seeds, through the real tuner.

One race run is one study in Optuna's in-memory storage, driven by :func:`commtune.tune.search`
exactly as ``commtune tune`` drives it (reference first, batches, duplicates answered from
earlier trials, failed trials recorded), with one run per trial. After every measured trial
the configuration the strategy would recommend (its best observed trial, the reference
included) is scored by its noise-free value: ``regret = f(best) / f(optimum) - 1``. A run has
*reached* at the first trial whose recommendation is within 2 % of the optimum; a run that
never reaches counts as the budget.
"""

from __future__ import annotations

import json
import logging
import math
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from commtune.progress import Silent
from commtune.race._surfaces import Surface
from commtune.study import Role, StudySpec, config_of, role_of, runs_of
from commtune.tune import TuneSettings, open_study, run_reference, search

REACHED = 0.02


@dataclass(frozen=True)
class RaceRun:
    strategy: str
    surface: str
    noise: float
    seed: int
    regret: list[float]  # after each measured trial (the reference is trial 1)
    reached: int | None  # trials until within 2 % of the optimum; None: never
    seconds: float
    drift: float = 1.0  # the phase factor of the executor (1: no drift)
    controls: bool = True  # blocked comparisons (False: the design before them)
    runs: int = 0  # every run the study made, controls included

    def trials_to_reach(self, budget: int) -> int:
        return budget if self.reached is None else self.reached

    def regret_after(self, n: int) -> float:
        return self.regret[min(n, len(self.regret)) - 1]

    def share_after(self, n: int) -> float:
        """The recommendation's share of the best possible speedup after ``n`` trials."""
        return 1.0 / (1.0 + self.regret_after(n))

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "surface": self.surface,
            "noise": self.noise,
            "seed": self.seed,
            "regret": [round(r, 6) for r in self.regret],
            "reached": self.reached,
            "seconds": round(self.seconds, 3),
            "drift": self.drift,
            "controls": self.controls,
            "runs": self.runs,
        }


def race_one(
    strategy: str,
    surface: Surface,
    noise: float,
    seed: int,
    budget: int,
    options: dict[str, str] | None = None,
    *,
    drift: float = 1.0,
    controls: bool = True,
) -> RaceRun:
    """One study of ``budget`` trials (reference included); see the module docstring."""
    import optuna

    optuna.logging.set_verbosity(logging.WARNING)
    start = time.perf_counter()
    spec = StudySpec(["race", surface.name], surface.space.library, surface.space.to_json(),
                     "wall", 1)  # fmt: skip
    settings = TuneSettings(
        study="race",
        spec=spec,
        space=surface.space,
        strategy=strategy,
        strategy_options=dict(options or {}),
        trials=budget,
        confirm=0,
        seed=seed,
        controls=controls,
    )
    storage = optuna.storages.InMemoryStorage()
    executor = surface.executor(noise, seed * 7919 + 17, drift)
    ui = Silent()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = open_study(storage, settings)
        run_reference(study, settings, executor, ui)
        search(study, settings, executor, 60.0, ui)
    regret = curve(study, surface)
    reached = next((i + 1 for i, r in enumerate(regret) if r <= REACHED), None)
    runs = sum(len(runs_of(t)) for t in study.get_trials(deepcopy=False))
    return RaceRun(
        strategy,
        surface.name,
        noise,
        seed,
        regret,
        reached,
        time.perf_counter() - start,
        drift,
        controls,
        runs,
    )


def curve(study: Any, surface: Surface) -> list[float]:
    """Regret of the recommended configuration after each measured trial."""
    best_value = math.inf
    best_regret = math.inf
    out = []
    for t in study.get_trials(deepcopy=False):
        role = role_of(t)
        if role not in (Role.REFERENCE, Role.SEARCH):
            continue
        if t.state.name == "COMPLETE" and t.value is not None and t.value < best_value:
            best_value = t.value
            if role is Role.SEARCH:
                best_regret = surface.regret(config_of(t))
            else:  # the library's defaults, nothing set
                best_regret = surface.default_value / surface.optimum - 1.0
        if t.state.name in ("COMPLETE", "FAIL"):
            out.append(best_regret)
    return out


@dataclass
class Summary:
    """Medians over seeds per (strategy, surface, noise)."""

    runs: list[RaceRun]
    budget: int

    def cells(self) -> dict[tuple[str, str, float], list[RaceRun]]:
        out: dict[tuple[str, str, float], list[RaceRun]] = {}
        for r in self.runs:
            out.setdefault((r.strategy, r.surface, r.noise), []).append(r)
        return out

    def median_trials(self, runs: Iterable[RaceRun]) -> float:
        return float(np.median([r.trials_to_reach(self.budget) for r in runs]))

    def strategies(self) -> list[str]:
        return list(dict.fromkeys(r.strategy for r in self.runs))

    def cases(self) -> list[tuple[str, float]]:
        return list(dict.fromkeys((r.surface, r.noise) for r in self.runs))

    def per_strategy(self) -> dict[str, float]:
        """Mean over the cases (surface, noise) of the median trials to 2 %."""
        cells = self.cells()
        return {
            s: float(np.mean([self.median_trials(cells[(s, *c)]) for c in self.cases()]))
            for s in self.strategies()
        }

    def losses_to_random(self, noise: float = 0.3) -> dict[str, list[str]]:
        """Surfaces at ``noise`` where a strategy needs more trials than random (median)."""
        cells = self.cells()
        out: dict[str, list[str]] = {}
        for s in self.strategies():
            lost = [
                surface
                for surface, n in self.cases()
                if n == noise
                and (s, surface, n) in cells
                and ("random", surface, n) in cells
                and self.median_trials(cells[(s, surface, n)])
                > self.median_trials(cells[("random", surface, n)])
            ]
            if lost:
                out[s] = lost
        return out

    def to_json(self) -> dict[str, Any]:
        cells = self.cells()
        table = []
        for (strategy, surface, noise), runs in cells.items():
            row = {
                "strategy": strategy,
                "surface": surface,
                "noise": noise,
                "median_trials": self.median_trials(runs),
                "reached": sum(r.reached is not None for r in runs),
                "seeds": len(runs),
            }
            for n in (10, 20, 50):
                if n <= self.budget:
                    row[f"regret{n}"] = float(np.median([r.regret_after(n) for r in runs]))
            table.append(row)
        return {"budget": self.budget, "summary": self.per_strategy(), "cells": table}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))
