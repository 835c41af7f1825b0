"""The strategy harness: every strategy on every surface, many seeds, through the real tuner.

One harness run is one study in Optuna's in-memory storage, driven by :func:`commtune.tune.search`
exactly as ``commtune tune`` drives it (reference first, batches, duplicates answered from
earlier trials, failed trials recorded), with one run per trial unless told ``repeats``. Two
designs: ``raced`` (controls next to the trial runs, repeats raced up to the cap) and
``fixed`` (the design before them: every configuration ``repeats`` times, every run
relative to the reference, measured once at the start). After every measured trial
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from commtune.harness._surfaces import Surface
from commtune.knobs import Value
from commtune.progress import Silent
from commtune.study import DEFAULTS, Acceptance, Gate, Plan, StudyView, default_repeats
from commtune.tune import Context, Target, open_study, run_reference, search, settled
from commtune.tune import verdict as decide_study

REACHED = 0.02
NEAR = 1.02  # knowledge.NEAR: a best measured within 2 % of the defaults is still an answer


@dataclass(frozen=True)
class StrategyRun:
    strategy: str
    surface: str
    noise: float
    seed: int
    regret: list[float]  # after each measured trial (the reference is trial 1)
    reached: int | None  # trials until within 2 % of the optimum; None: never
    seconds: float
    drift: float = 1.0  # the phase factor of the executor (1: no drift)
    design: str = "raced"  # or "fixed" (see the module docstring)
    runs: int = 0  # the runs of the reference and the search, controls included
    repeats: int = 1
    found: tuple[float, ...] = ()  # regret of the best configuration measured so far
    confirmed: float | None = None  # regret of the configuration the confirmation hands back
    confirm_runs: int = 0
    answer: dict[str, Any] | None = None  # the accepted configuration (None: the defaults)
    # what the knowledge base keeps of the study (``knowledge.Known.answer``): the accepted
    # configuration, else the best measured one if within 2 % of the defaults
    known: dict[str, Any] | None = None
    # the speedup the study states for what it hands back (the verdict's estimate; without
    # a confirmation the best measured value's), and whether it hands back anything but
    # the defaults
    estimate: float | None = None
    changed: bool = False

    def confirmed_share(self) -> float:
        """The share of the best speedup the confirmed verdict holds (the default's when
        nothing was accepted)."""
        assert self.confirmed is not None, "raced without a confirmation"
        return 1.0 / (1.0 + self.confirmed)

    def measured_share_after(self, n: int) -> float:
        """How much of the best measured configuration's speedup the recommendation holds
        after ``n`` trials: 1 when the measurements picked the truly best of those tried."""
        found = self.found[min(n, len(self.found)) - 1]
        return (1.0 + found) / (1.0 + self.regret_after(n))

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
            "found": [round(r, 6) for r in self.found],
            "reached": self.reached,
            "seconds": round(self.seconds, 3),
            "drift": self.drift,
            "design": self.design,
            "runs": self.runs,
            "repeats": self.repeats,
            "confirmed": self.confirmed,
            "confirm_runs": self.confirm_runs,
            "answer": self.answer,
            "known": self.known,
            "estimate": self.estimate,
            "changed": self.changed,
        }


def run_strategy(
    strategy: str,
    surface: Surface,
    noise: float,
    seed: int,
    budget: int,
    options: dict[str, str] | None = None,
    *,
    drift: float = 1.0,
    design: str = "raced",
    repeats: int = 1,
    confirm_rounds: int = 0,
    max_runs: int | None = None,
    hints: Sequence[Mapping[str, Value]] = (),
    gate: str = "strict",
    risk: float = DEFAULTS.risk,
    min_gain: float = DEFAULTS.min_gain,
    explore: float = DEFAULTS.explore,
    ranked: Sequence[Mapping[str, Value]] = (),
    shape: str = "",
) -> StrategyRun:
    """One study of ``budget`` trials (reference included); see the module docstring.
    ``confirm_rounds``: then the confirmation, of the best 3 (raced) or the best alone
    (fixed, as before top-k). ``max_runs``: the study's bound on runs, confirmation
    included (``tune --max-runs``); ``hints``: configurations tried first (what earlier
    studies found, as ``commtune.knowledge`` hands them to a study); ``ranked``: what a
    simulated twin ranked, best first (``tune --twin``): no search, the verdict tests them
    in that order; ``shape``: a set drift of the synthetic machine (``harness.DRIFTS``)."""
    import optuna

    optuna.logging.set_verbosity(logging.WARNING)
    start = time.perf_counter()
    plan = Plan(
        strategy=strategy,
        strategy_options=dict(options or {}),
        trials=budget,
        repeats=repeats,
        confirm=confirm_rounds,  # the search leaves the confirmation its runs
        seed=seed,
        controls=design == "raced",
        racing=design == "raced",
        max_runs=max_runs,
        top=3 if design == "raced" else 1,  # fixed: the best alone, as before top-k
        gate=Gate(gate),
        risk=risk,
        min_gain=min_gain,
        explore=explore,
    )
    study, verdict = _studied(plan, surface, noise, drift, shape, hints, ranked)
    return _scored(study, verdict, surface, plan, noise, drift, design,
                   time.perf_counter() - start)  # fmt: skip


def _studied(plan: Plan, surface: Surface, noise: float, drift: float, shape: str,
             hints: Sequence[Mapping[str, Value]], ranked: Sequence[Mapping[str, Value]],
             ) -> tuple[Any, Acceptance | None]:  # fmt: skip
    """The study of ``plan`` on ``surface``'s synthetic machine, in Optuna's in-memory
    storage, and its verdict (None: ``plan.confirm`` 0 asks for none)."""
    import optuna

    assert plan.seed is not None
    target = Target.of("harness", ["harness", surface.name], surface.space, plan)
    storage = optuna.storages.InMemoryStorage()
    executor = surface.executor(noise, plan.seed * 7919 + 17, drift, shape)
    ui = Silent()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = open_study(storage, target)
        ctx = Context.solo(study, target, executor, ui, 60.0, tuple(hints))
        ctx = replace(ctx, ranked=tuple(ranked) or None)  # a twin's ranking: no search
        ctx = settled(ctx, run_reference(ctx))
        search(ctx)
        verdict = None
        if plan.confirm:
            verdict = decide_study(study, executor, 60.0, ui, ctx.plan, ctx.ranked)
    return study, verdict


def _scored(study: Any, verdict: Acceptance | None, surface: Surface, plan: Plan,
            noise: float, drift: float, design: str, seconds: float) -> StrategyRun:  # fmt: skip
    """A study's score: its regret curve, the runs it spent, and what it handed back (the
    verdict's configuration; without a verdict, the best measured at its measured value)."""
    confirm_rounds = plan.confirm
    confirmed = None
    accepted = None
    if confirm_rounds:  # the verdict's configuration; the default's when nothing is accepted
        accepted = dict(verdict.params) if verdict is not None and verdict.accepted else None
        whole = {**surface.space.defaults(), **accepted} if accepted else None  # reduced
        confirmed = surface.regret(whole) if whole else surface.default_regret
    view = StudyView(study)
    best = view.best(1)
    known = accepted
    if known is None and best and best[0].value is not None and best[0].value < NEAR:
        known = dict(best[0].config)  # values are relative to the reference: 1 = the defaults
    regret, found = curve(study, surface)
    reached = next((i + 1 for i, r in enumerate(regret) if r <= REACHED), None)
    runs = StudyView(study).runs_spent()
    if confirm_rounds:
        changed = accepted is not None
        estimate = verdict.speedup if changed and verdict is not None else 1.0
    else:  # the best measured configuration is handed back, at its measured value
        top = best[0] if best else None
        changed = top is not None and top.value is not None and top.value < 1.0
        estimate = 1.0 / top.value if changed and top is not None and top.value else 1.0
    assert plan.seed is not None
    return StrategyRun(
        plan.strategy,
        surface.name,
        noise,
        plan.seed,
        regret,
        reached,
        seconds,
        drift,
        design,
        runs,
        plan.repeats,
        tuple(found),
        confirmed,
        verdict.runs() if verdict is not None else 0,
        accepted,
        known,
        estimate,
        changed,
    )


def run_tuner(
    surface: Surface,
    noise: float,
    seed: int,
    max_runs: int,
    strategy: str = DEFAULTS.strategy,
    *,
    confirm: int = DEFAULTS.confirm,
    gate: str = "risk",
    risk: float = DEFAULTS.risk,
    min_gain: float = DEFAULTS.min_gain,
    explore: float = DEFAULTS.explore,
    hints: Sequence[Mapping[str, Value]] = (),
    drift: float = 1.0,
    ranked: Sequence[Mapping[str, Value]] = (),
    shape: str = "",
) -> StrategyRun:
    """One study as ``commtune tune --max-runs max_runs`` makes it with the tuner's defaults
    (its trials, the repeats those runs allow, controls, racing, its verdict): the design
    every benchmark that races the tuner itself runs, ``strategy`` the search's sampler."""
    return run_strategy(strategy, surface, noise, seed, DEFAULTS.trials, design="raced",
                    repeats=default_repeats(max_runs, DEFAULTS.trials), confirm_rounds=confirm,
                    max_runs=max_runs, hints=hints, drift=drift, gate=gate, risk=risk,
                    min_gain=min_gain, explore=explore, ranked=ranked, shape=shape)  # fmt: skip


def curve(study: Any, surface: Surface) -> tuple[list[float], list[float]]:
    """After each measured trial: the regret of the recommended configuration (the best
    measured value), and that of the truly best configuration measured so far."""
    default_regret = surface.default_regret
    best_value = math.inf
    best_regret = math.inf
    found = default_regret
    out: list[float] = []
    truth: list[float] = []
    for t in StudyView(study).ran():
        if t.complete and t.value is not None:
            if t.is_search:
                found = min(found, surface.regret(dict(t.config)))
            if t.value < best_value:
                best_value = t.value
                best_regret = surface.regret(dict(t.config)) if t.is_search else default_regret
        out.append(best_regret)
        truth.append(found)
    return out, truth


@dataclass
class Summary:
    """Medians over seeds per (strategy, surface, noise)."""

    runs: list[StrategyRun]
    budget: int

    def cells(self) -> dict[tuple[str, str, float], list[StrategyRun]]:
        out: dict[tuple[str, str, float], list[StrategyRun]] = {}
        for r in self.runs:
            out.setdefault((r.strategy, r.surface, r.noise), []).append(r)
        return out

    def median_trials(self, runs: Iterable[StrategyRun]) -> float:
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
