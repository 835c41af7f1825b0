"""How long one look at the running trials of a study takes: the heartbeats read once per
look (now) against once per trial (before), interleaved, on SQLite.

    python benchmarks/worker_liveness.py [--trials 200] [--rounds 15]

A study holds ``--trials`` RUNNING trials of a worker on another host (so its liveness comes
from the heartbeat table, as on a cluster); ``others_running`` is timed both ways.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import optuna

from commtune.store import Store, StoreClaims
from commtune.study import Attr, Role, TrialWriter, ask
from commtune.tune._workers import Workers, _Look


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory() as scratch:
        store = Store(f"sqlite:///{Path(scratch) / 's.db'}")
        study = optuna.create_study(study_name="b", storage=store.optuna)
        remote = "node17:4242:123456"  # another host: alive by its heartbeat only
        StoreClaims(store, "b").beat(remote)
        for _ in range(args.trials):
            trial = ask(study)
            Attr.WORKER.write(trial, remote)
            TrialWriter(trial).role(Role.SEARCH)
        workers = Workers.on(store, "b")
        running = study.get_trials(deepcopy=False)

        def once_per_look() -> int:
            look = _Look(workers)
            return sum(workers.running_alive(t, look) for t in running)

        def once_per_trial() -> int:  # what others_running did before
            return sum(workers.running_alive(t, _Look(workers)) for t in running)

        times: dict[str, list[float]] = {"per look": [], "per trial": []}
        for r in range(args.rounds):
            order = [("per look", once_per_look), ("per trial", once_per_trial)]
            for name, fn in order if r % 2 == 0 else reversed(order):
                t0 = time.perf_counter()
                assert fn() == args.trials
                times[name].append(time.perf_counter() - t0)
    print(f"{args.trials} running trials of a remote worker, {args.rounds} interleaved rounds")
    for name, values in times.items():
        values.sort()
        print(f"  heartbeats read {name}: median {1000 * statistics.median(values):.2f} ms "
              f"(min {1000 * values[0]:.2f}, max {1000 * values[-1]:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
