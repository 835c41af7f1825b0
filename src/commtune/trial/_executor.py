"""Executors run one configuration once and return a :class:`RunRecord`.

``LocalExecutor`` launches the user's command through the vendor's launcher; ``ReplayExecutor``
answers from a file of recorded trials, so strategies can be tested without MPI.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import json
import os
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from commtune import stats
from commtune.errors import UsageError
from commtune.knobs import Applied, Knob, Value, apply
from commtune.launch import Launcher
from commtune.mpi import Profiled
from commtune.profile import Profile, ProfileError, Profiling, from_paje, not_applied
from commtune.study import read_table
from commtune.trial._objective import Objective
from commtune.trial._process import ProcessResult, run_process

Runner = Callable[[list[str], dict[str, str], float], ProcessResult]


@dataclass(frozen=True)
class RunRecord:
    """One run of one configuration. ``value`` is None when the run failed (see ``failure``)."""

    value: float | None
    wall: float
    returncode: int | None
    failure: str | None = None
    stderr_tail: str = ""
    not_applied: dict[str, str] = field(default_factory=dict)  # knob -> why it did not take
    profile: Profile | None = field(default=None, compare=False)
    # the study's other objectives (``--metric`` given more than once): metric -> value
    secondary: dict[str, float | None] = field(default_factory=dict)
    job: dict[str, str] | None = None  # the Slurm job (id, nodes) the run was or was part of

    def to_json(self) -> dict[str, Any]:
        """The record without its profile (profiles are stored apart, they are large)."""
        data = asdict(self)
        del data["profile"]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        names = {f.name for f in fields(cls)} - {"profile"}
        return cls(**{k: v for k, v in data.items() if k in names})


def _failure(returncode: int | None, timed_out: bool, timeout: float) -> str | None:
    if timed_out:
        return f"timeout after {timeout:.1f} s"
    if returncode is None or returncode == 0:
        return None
    if returncode < 0:
        return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class Executor(abc.ABC):
    """Runs a configuration once. ``config=None`` runs the library's defaults (nothing set).
    ``deterministic``: whether a configuration's runs give one value (a simulation), where
    the executor knows; None: judged from the runs of the defaults (``repeats_exactly``)."""

    deterministic: bool | None = None

    @abc.abstractmethod
    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        """Run once; never raises for a failing run (the record says why it failed)."""

    def at(self, command: Sequence[str]) -> Executor:
        """The same executor running ``command`` instead (the command at a training scale)."""
        raise UsageError(f"{type(self).__name__} runs one command only: no training scales")

    def with_variables(self, env: Mapping[str, str]) -> Executor:
        """The same executor setting ``env`` for the ranks of every run besides (the
        variables that load a selection file, which no knob holds)."""
        raise UsageError(f"{type(self).__name__} runs no variables beyond its knobs")


def repeats_exactly(executor: Executor, values: Sequence[float]) -> bool:
    """Whether a study's runs give one value: the executor's word where it knows (a
    replayed table), else whether the defaults' ``values`` all gave one (``stats.exact``)
    written with at least ``stats.EXACT_DIGITS`` significant digits (fewer can repeat by
    rounding: a noisy program's rounded time is not a simulation)."""
    known = executor.deterministic
    if known is not None:
        return known
    return stats.exact(values) and min(map(stats.digits, values)) >= stats.EXACT_DIGITS


class LocalExecutor(Executor):
    """Runs the user's command on this machine with a configuration applied."""

    def __init__(
        self,
        launcher: Launcher,
        command: Sequence[str],
        knobs: Sequence[Knob],
        objective: Objective,
        base_env: Mapping[str, str] | None = None,
        profiling: Profiling | None = None,
        enumerators: Mapping[str, Sequence[str]] | None = None,
        variables: Mapping[str, str] | None = None,
        secondary: Sequence[Objective] = (),
        runner: Runner = run_process,
    ) -> None:
        """``profiling``: preload libcommtune into every run, read its profile back and check
        that the knobs took; ``enumerators``: each algorithm knob's names in the library's own
        order (what MPI_T reads back for them), from discovery; ``variables``: set for the
        ranks of every run (``COMMTUNE_POLICY``); ``secondary``: more objectives, measured
        in every run beside the first (``RunRecord.secondary``); ``runner``: how a launch
        line runs (``run_process`` here, ``SlurmJobs`` as a job of its own)."""
        for o in (objective, *secondary):
            if o.needs_profile and profiling is None:
                raise UsageError(f"--metric {o.spec} needs the interposer (libcommtune)")
        self.launcher = launcher
        self.command = list(command)
        self.knobs = list(knobs)
        self.objective = objective
        self.base_env = base_env
        self.profiling = profiling
        self.enumerators = enumerators
        self.variables = dict(variables or {})
        self.secondary = list(secondary)
        self.runner = runner
        # a real machine's runs never repeat exactly; a simulator's are judged from its runs
        self.deterministic = launcher.installation.impl.exact_runs

    def at(self, command: Sequence[str]) -> LocalExecutor:
        other = copy.copy(self)
        other.command = list(command)
        return other

    def with_variables(self, env: Mapping[str, str]) -> LocalExecutor:
        other = copy.copy(self)
        other.variables = {**self.variables, **env}
        return other

    def applied(self, config: Mapping[str, Value] | None) -> Applied:
        """What the appliers of the knobs make of ``config`` (None: nothing set)."""
        return apply(self.knobs, config, self.launcher.installation.impl, self.enumerators)

    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        applied = self.applied(config)
        if self.profiling is None:
            if applied.cvar_writes:
                raise UsageError(
                    "knobs written through MPI_T need the interposer: "
                    + ", ".join(sorted(applied.cvar_writes))
                )
            if applied.settings():
                raise UsageError(
                    "MPI-IO hints and HDF5 properties are set by the interposer: "
                    + ", ".join(sorted(c.knob for c in applied.settings().values()))
                )
            return self._run(config, timeout, applied, {}, None)
        with self.profiling.target() as path:
            checks = applied.check_values() if config else {}
            extra = self.profiling.variables(path, checks, applied.cvar_writes)
            return self._run(config, timeout, applied, extra, path)

    def _run(
        self,
        config: Mapping[str, Value] | None,
        timeout: float,
        applied: Applied,
        extra: Mapping[str, str],
        profile_path: Path | None,
    ) -> RunRecord:
        remove = [k.env for k in self.knobs]
        variables = self.launcher.reconciled(
            {**self.variables, **applied.env, **extra}, remove=remove, base_env=self.base_env
        )
        plan = self.launcher.plan(
            self.command,
            variables,
            remove=remove,
            preload=str(self.profiling.library) if self.profiling else None,
            base_env=self.base_env,
            options=applied.launch,
        )
        result = self.runner(plan.argv, plan.env, timeout)
        profile = Profiling.read(profile_path) if profile_path is not None else None
        failure = _failure(result.returncode, result.timed_out, timeout)
        if failure is None:
            failure = self.launcher.installation.impl.run_failure(result.stderr_tail)
        value = None
        if failure is None:
            value = self.objective.extract(result.wall, result.stdout, profile, result.stderr_tail)
            if value is None and self.objective.needs_profile and profile is None:
                failure = "no profile written (did every rank call MPI_Finalize?)"
            elif value is None:
                failure = f"metric {self.objective.spec!r} not found in the output"
        checks = applied.checks if config else {}
        hints = applied.settings() if config else {}
        bindings = applied.bindings if config else {}
        missing = not_applied(profile, checks, hints, bindings) if profile is not None else {}
        others = {
            o.spec: o.extract(result.wall, result.stdout, profile, result.stderr_tail)
            if failure is None
            else None
            for o in self.secondary
        }
        return RunRecord(
            value,
            result.wall,
            result.returncode,
            failure,
            result.stderr_tail,
            missing,
            profile,
            others,
            result.job,
        )


class ReplayExecutor(Executor):
    """Answers from recorded measurements instead of running anything.

    The file is JSON: ``{"default": [values...], "trials": [{"params": {...}, "values": [...]},
    ...]}``; a value of null is a failed run. Repeated runs of one configuration cycle through
    its recorded values, or, given a ``seed``, are dealt its recorded values in a random order,
    each once before any again (a balanced table's runs as a study would meet them: nine
    recorded runs are nine runs of the machine, and a study that runs a configuration
    three times meets three of them, not one fast run three times). ``phases`` (with a seed): the
    machine's state is held over time, as on the machine that recorded the table: a
    balanced table ran every configuration once per round, so value i of every
    configuration was measured in round i, in the same stretch of the machine's life; a
    run answers with its configuration's value of the current round, which holds for
    5-30 runs (drawn, as ``race.SurfaceExecutor``'s phases) before another is drawn; a
    configuration run again within one stretch takes the next round's value. Runs next
    to each other in time then share the machine's state, as a study's interleaved pairs
    do, instead of each run drawing a state of its own. A configuration that was not
    recorded is an error. ``defaults``:
    each knob's library default, which a configuration leaving a knob out runs with (a
    configuration reduced to the knobs that matter is looked up as the recorded one with
    the others at their defaults); the defaults' runs, with or without their knobs set, draw
    from both of their recordings (``RecordedTable.defaults_runs``), as their truth does.
    """

    def __init__(
        self,
        path: str | Path,
        defaults: Mapping[str, Value] | None = None,
        seed: int | None = None,
        phases: bool = False,
    ) -> None:
        self.defaults = dict(defaults or {})
        self.rng = random.Random(seed) if seed is not None else None
        self.phases = random.Random(-1 - seed) if phases and seed is not None else None
        self.round = 0
        self.left = 0  # runs left in the current round's stretch
        self.in_round: dict[str, int] = {}  # runs of each configuration in this stretch
        recorded = read_table(path)
        self.table = {self.key(params): values for params, values in recorded.trials}
        # the defaults run as the library's defaults or with every knob set to its default
        # are one configuration: one set of runs, drawn from both recordings of it
        self.default: list[float | None] = recorded.default
        self.width: dict[str, int] = {}  # recordings of a configuration per round
        if self.defaults:
            itself = self.key(self.defaults)
            self.default, self.width[itself] = recorded.defaults_runs(self.defaults)
            self.table[itself] = self.default
        # a table with a spread anywhere is a noisy machine's, even where a few draws of
        # its defaults happen to repeat one recorded value
        self.deterministic = all(
            len(measured) < 2 or stats.exact(measured)
            for values in (self.default, *self.table.values())
            for measured in [[v for v in values if v is not None]]
        )
        self.counts: dict[str, int] = {}
        self.decks: dict[str, list[int]] = {}  # each configuration's indices still to deal
        self.calls = 0

    @staticmethod
    def key(config: Mapping[str, Value] | None) -> str:
        return json.dumps(dict(config or {}), sort_keys=True)

    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        self.calls += 1
        key = self.key(self.defaults if config is None and self.defaults else config)
        values = self.default if config is None else self.table.get(key)
        if values is None and config is not None:
            key = self.key({**self.defaults, **config})
            values = self.table.get(key)
        if values is None:
            raise UsageError(f"replay: configuration {key} was not recorded")
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        value = values[self.index(key, n, len(values))]
        if value is None:
            return RunRecord(None, 0.0, 1, "exit status 1 (recorded)")
        return RunRecord(float(value), float(value), 0)

    def index(self, key: str, n: int, size: int) -> int:
        """Which recorded value the ``n``-th run of the configuration ``key`` answers with."""
        if self.phases is not None:
            if self.left == 0:
                self.round = self.phases.randrange(size)
                self.left = self.phases.randint(5, 30)
                self.in_round = {}
            self.left -= 1
            k = self.in_round.get(key, 0)
            self.in_round[key] = k + 1
            width = self.width.get(key, 1)
            return (self.round + k) % (size // width) * width + n % width
        if self.rng is None:
            return n % size
        deck = self.decks.get(key)
        if not deck:
            deck = self.decks[key] = list(range(size))
            self.rng.shuffle(deck)
        return deck.pop()


class Primed(Executor):
    """Runs as ``inner``, but answers the first run of the library's defaults with ``first``,
    a run of them already made (the profiled run that chose the space becomes the first
    run of the reference instead of a run more)."""

    def __init__(self, inner: Executor, first: RunRecord) -> None:
        self.inner = inner
        self.first: RunRecord | None = first
        self.deterministic = inner.deterministic

    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        if config is None and self.first is not None:
            first, self.first = self.first, None
            return first
        return self.inner.run(config, timeout)

    def at(self, command: Sequence[str]) -> Executor:
        return self.inner.at(command)


class Traced(Executor):
    """Runs a program with the launcher's own trace written (a simulator's: ``trace_args``)
    and gives the run the profile read from it (:func:`commtune.profile.from_paje`): the
    guide's view of a program no preloaded library reaches. Built by :func:`profiled`."""

    def __init__(self, inner: LocalExecutor) -> None:
        self.inner = inner
        self.deterministic = inner.deterministic

    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        impl = self.inner.launcher.installation.impl
        with tempfile.TemporaryDirectory(prefix="commtune-trace-") as tmp:
            path = os.path.join(tmp, "trace.paje")
            command = self.inner.command
            argv = [command[0], *impl.trace_args(path), *command[1:]]
            run = self.inner.at(argv).run(config, timeout)
            if run.value is None:
                return run
            try:
                return dataclasses.replace(run, profile=from_paje(path, impl.vendor.value,
                                                                  impl.title))  # fmt: skip
            except ProfileError:
                return run


def profiled(executor: LocalExecutor) -> Executor:
    """``executor`` with each run profiled as its installation is (``profiled_by``): through
    the launcher's trace where nothing preloaded reaches the program, else through the
    libcommtune ``executor`` was given (itself)."""
    impl = executor.launcher.installation.impl
    return Traced(executor) if impl.profiled_by is Profiled.TRACE else executor
