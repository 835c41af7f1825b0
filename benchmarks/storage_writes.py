"""Trial-attribute writes of the blocked tuning loop (each one a commit with SQLite).

    python benchmarks/storage_writes.py

Runs a study with an executor that answers at once (reference + one batch of the two values
of a boolean knob, 3 blocks: 12 runs) and counts Optuna's ``set_trial_user_attr`` calls.
"""

from __future__ import annotations

from collections.abc import Mapping

import optuna

from commtune.knobs import Dimension, Space, load_catalog
from commtune.progress import Silent
from commtune.study import Plan
from commtune.trial import Executor, RunRecord
from commtune.tune import Context, Target, open_study, run_reference, search

KNOB = "MPIR_CVAR_ASYNC_PROGRESS"


class Instant(Executor):
    def __init__(self) -> None:
        self.runs = 0

    def run(self, config: Mapping[str, object] | None, timeout: float) -> RunRecord:
        self.runs += 1
        value = 0.5 if config and config[KNOB] else 1.0
        return RunRecord(value, value, 0)


def main() -> None:
    writes = 0
    original = optuna.storages.InMemoryStorage.set_trial_user_attr

    def counting(self: optuna.storages.InMemoryStorage, *args: object) -> None:
        nonlocal writes
        writes += 1
        original(self, *args)  # type: ignore[arg-type]

    optuna.storages.InMemoryStorage.set_trial_user_attr = counting  # type: ignore[method-assign]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = Space("mpich", (Dimension(load_catalog("mpich")[KNOB]),))
    plan = Plan(strategy="grid", trials=3, confirm=0, seed=1)
    target = Target.of("w", ["x"], space, plan)
    study = open_study(optuna.storages.InMemoryStorage(), target)
    executor = Instant()
    ctx = Context.solo(study, target, executor, Silent(), 60.0)
    run_reference(ctx)
    search(ctx)
    print(f"{executor.runs} runs, {writes} trial-attribute writes")


if __name__ == "__main__":
    main()
