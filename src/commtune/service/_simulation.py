"""What a study of a simulated cluster needs beyond a real one's: its plan (no
interposer, the simulated time its value), its runs bought with wall time
(``--sim-budget``), the cost of its simulations, and one timed run."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import optuna

from commtune import stats
from commtune.errors import UsageError
from commtune.launch import Launcher, launcher_for
from commtune.mpi import Installation, Lack, MPIVendor
from commtune.progress import Progress
from commtune.store import Store
from commtune.study import DEFAULTS, Plan, StudyView
from commtune.trial import LocalExecutor, Objective, RunRecord

MOST_SIM_RUNS = 500  # a simulated search: at most this many runs, whatever its wall-time budget


def simulated_plan(plan: Plan, impl: MPIVendor, ui: Progress) -> Plan:
    """The plan of a study of a simulated cluster: where no preloaded library reaches its
    program, none is used, and its value is the installation's (the simulated time) unless
    the user named another, the wall time beside it."""
    if plan.interposer and Lack.PRELOAD in impl.lacks:
        ui.info(f"{impl.title}: {Lack.PRELOAD.value}; running without the interposer")
    metrics = plan.metrics
    if metrics == DEFAULTS.metrics and impl.run_value not in metrics:
        metrics = (impl.run_value, *metrics)
    return replace(plan, interposer=False, metrics=metrics)


def budgeted(plan: Plan, inst: Installation, command: Sequence[str], base: Mapping[str, str],
             ui: Progress) -> Plan:  # fmt: skip
    """The plan of a simulated study whose user bounded neither runs nor trials: as many
    runs as ``plan.sim_budget`` seconds of this machine's wall time buy (one run of the
    reference timed here), at most :data:`MOST_SIM_RUNS`: a space that fits is tried whole."""
    if not plan.by_wall_time or plan.record:
        return plan
    timed = timed_run(launcher_for(inst, plan.through), command, inst, base, plan)
    if timed is None:
        return plan  # the reference's own runs say why
    wall = timed[0]
    runs = sim_runs(wall, plan.sim_budget)
    ui.info(f"a simulated run takes {wall:.1f} s of wall time here: the study gets {runs} runs "
            f"(--sim-budget {plan.sim_budget:g} s, at most {MOST_SIM_RUNS})")  # fmt: skip
    return replace(plan, max_runs=runs, trials=runs, by_wall_time=False)


def cost(store: Store, name: str, cluster: str | None, ui: Progress) -> dict[str, Any]:
    """What the study of a simulated cluster cost: the wall time of its simulations (its
    values are simulated time), said and returned for ``--json``."""
    view = StudyView(optuna.load_study(study_name=name, storage=store.optuna))
    walls = [w for r in view.records for w in r.walls()]
    total = sum(walls)
    middle = stats.median(walls) if walls else 0.0
    ui.info(f"{cluster}: {len(walls)} simulations took {total:.0f} s of wall time (median "
            f"{middle:.1f} s each); the values are simulated seconds")  # fmt: skip
    return {"cluster": cluster, "runs": len(walls), "wall_s": total, "wall_median_s": middle}


def sim_runs(wall: float, budget: float) -> int:
    """The runs of a simulated search that ``budget`` seconds buy at ``wall`` seconds a
    run: at least 3, at most :data:`MOST_SIM_RUNS`."""
    return max(3, min(MOST_SIM_RUNS, int(budget / max(wall, 1e-3))))


def timed_run(launcher: Launcher, command: Sequence[str], inst: Installation,
              variables: Mapping[str, str], plan: Plan, refuse: str | None = None,
              also: Sequence[Objective] = ()) -> tuple[float, RunRecord] | None:  # fmt: skip
    """The wall time of one run of ``command`` with ``variables`` and the run (``also``: more
    objectives it measures); None where it failed (UsageError starting with ``refuse``, if
    given)."""
    probe = LocalExecutor(launcher, command, [], Objective.parse(inst.impl.run_value),
                          variables=variables, secondary=also)  # fmt: skip
    start = time.perf_counter()
    run = probe.run(None, plan.reference_timeout)
    if run.value is None:
        if refuse is not None:
            raise UsageError(f"{refuse}: {run.failure}")
        return None
    return time.perf_counter() - start, run
