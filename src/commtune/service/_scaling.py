"""A twin's scaling table: the program's simulated time at :data:`SCALES` times its ranks, on
its cluster grown as much (``mpi.grown``), with the library's own decision and with the
simulation's best, within what is left of ``--sim-budget``."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence

from commtune.errors import UsageError
from commtune.launch import launcher_for
from commtune.mpi import Installation, grown, launch_files
from commtune.progress import Progress
from commtune.study import ScalingRow
from commtune.trial import LocalExecutor, Objective

SCALES = (1, 4, 16)  # a twin's scaling table: these times the real launch's ranks


def scaling(line: Sequence[str], sim: Installation, base: Mapping[str, str],
            tuned: Mapping[str, str] | None, wall: float, timeout: float, budget: float,
            ui: Progress) -> tuple[ScalingRow, ...]:  # fmt: skip
    """The rows of the table for the simulated launch ``line`` (``wall`` seconds a run here),
    each run under ``base`` (the library's decision as the simulator ports it) and, where
    the simulation found something faster, under ``tuned`` too. A size whose runs would take
    more than the ``budget`` seconds left is not run, and says so; so does a line that cannot
    grow."""
    rows: list[ScalingRow] = []
    left, each = budget, wall
    objective = Objective.parse(sim.impl.run_value)
    runs = 1 if tuned is None else 2
    said = "the program at larger scales (simulated)"
    with tempfile.TemporaryDirectory(prefix="commtune-grown-") as tmp, \
            ui.progress(said, len(SCALES)) as bar:  # fmt: skip
        for factor in SCALES:
            try:
                command = grown(line, factor, os.path.join(tmp, str(factor)))
            except UsageError as exc:
                rows.append(ScalingRow(factor, failure=str(exc)))
                break
            ranks = launch_files(command).ranks  # -np or -n
            cost = each * factor * runs
            if cost > left:
                rows.append(ScalingRow(factor, ranks, failure=(
                    f"not run: about {cost:.0f} s of wall time here, over the "
                    f"{max(0.0, left):.0f} s left of --sim-budget")))  # fmt: skip
                break
            start = time.perf_counter()
            values: dict[str, float | None] = {"defaults": None, "tuned": None}
            failure = None
            for key, settings in (("defaults", {}), ("tuned", tuned)):
                if settings is None:
                    continue
                run = LocalExecutor(launcher_for(sim), command, [], objective,
                                    variables={**base, **settings}).run(None, timeout)  # fmt: skip
                values[key] = run.value
                failure = run.failure if run.value is None else failure
            spent = time.perf_counter() - start
            left -= spent
            each = spent / max(1, factor * runs)
            rows.append(ScalingRow(factor, ranks, values["defaults"], values["tuned"], failure))
            bar.advance()
    return tuple(rows)
