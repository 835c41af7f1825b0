"""``commtune tune`` on a space of one collective's algorithms: the candidates raced call by
call inside the program's own runs (issue 77, item 3), not run after run.

Each raced run (:func:`commtune.service.race`) gives every candidate thousands of calls beside
the library's own decision, in randomized complete blocks; each run's test
(:func:`commtune.tune.decide_races`, that run's blocks only, so that a run's design is drawn
apart from everything decided before it and the test is exact whatever came before) spends
``risk / (candidates x runs)``: the union over every candidate and run is at most ``risk``.
After a run with no candidate both passed and the fastest, the field is halved on the
evidence of every run so far (:func:`commtune.tune.halved`) and raced again, up to
``--inrun-runs``.

The race only chooses what is tested (issue 93, item 5): the answer is the library's static
setting (what ``export`` writes: MCA parameter, CVAR environment, with what the race needed to
govern the call), run on whole runs beside the defaults in pairs, each pair's order by a coin,
and judged by the verdict's rule (:mod:`commtune.rule`) at looks fixed before its first pair
(``rule.looks``: an early one, then the last the runs left allow): it stops as soon as it
passes, or as soon as no look to come could pass it. What is handed back is what that paired
test passed at ``--risk``: the chance that the *program* is more than ``tolerance`` slower than
the defaults is at most ``risk``, as for every verdict. The race's own tests (at ``risk``
split over its candidates and runs) decide which candidate, if any, is tested; its per-call
speedup is said beside the program's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import optuna

from commtune.errors import UsageError
from commtune.knobs import Dimension, Knob, Space, space_from_json
from commtune.mpi import Installation
from commtune.report import UI, by_size_table
from commtune.service._inrun_file import BySize, by_size_file
from commtune.service._inrun_verdict import (
    Crashed,
    InRun,
    limit_of,
    result_of,
    verdict_of,
    whole_runs_check,
)
from commtune.service._race import (
    OPS,
    SEGMENTS,
    RacedRun,
    RaceFailed,
    race,
    sized_field,
)
from commtune.service._space import chosen_elsewhere
from commtune.store import Store
from commtune.study import (
    InRunFinding,
    Plan,
    acceptance_of,
    save_result_study,
    set_acceptance,
    spec_of,
)
from commtune.tune import (
    WARMUP_BLOCKS,
    Halving,
    Race,
    Raced,
    SizeChoice,
    TuneResult,
    by_size,
    halving,
    open_study,
)

if TYPE_CHECKING:
    from commtune.service._steps import Ready

FIRST = "inrun_first"  # a mixed space's race, stored with its study (:class:`Narrowed`)
RACE_KEY = "inrun-first"  # the claim of the worker that races a new mixed study's collective


def switched(knob: Knob, inst: Installation) -> str | None:
    """The collective whose algorithm ``knob`` is, where the library switches it while the
    program runs (read through MPI_T); else None."""
    op = knob.collective
    if inst.impl.race_mode is None or op not in OPS or inst.impl.algorithm_knob(op) != knob.name:
        return None
    return op


def racable(space: Space, inst: Installation) -> InRun | None:
    """The in-run race of ``space`` where every knob of it can be switched while the program
    runs: one collective's algorithm variable of a library that reads it through MPI_T, the
    reference its own decision; else None (whole runs)."""
    if len(space.dimensions) != 1:
        return None
    d = space.dimensions[0]
    if (op := switched(d.knob, inst)) is None:
        return None
    reference = d.reference.default
    if d.baseline is not None and d.baseline != reference:
        return None  # a calibration's value is the reference: not the library's decision
    names = tuple(str(v) for v in d.candidates() if v != reference)
    return InRun(op, d.knob.name, str(reference), names) if names else None


def plan_races(plan: Plan) -> bool:
    """The plan lets its real runs race in-run: ``--inrun``, a preload, a verdict and the one
    metric (``--no-interposer``, ``--confirm 0``, a Pareto front of further ``--metric`` and
    Slurm jobs stay on whole runs)."""
    return (plan.inrun and plan.interposer and plan.confirm > 0 and not plan.objectives
            and plan.sbatch is None)  # fmt: skip


def inrun_of(ready: Ready, twinned: bool, ui: UI) -> InRun | None:
    """The in-run race of the study about to run, where its plan allows it (not a
    simulation, a template, ``--as``, a twin or Slurm jobs) and its space is one the library
    switches while the program runs; a space with a collective's algorithm searched on whole
    runs says why."""
    if not _plain(ready, twinned):
        return None
    space, inst = ready.space, ready.setup.inst
    how = racable(space, inst)
    collectives = any(d.knob.collective for d in space.dimensions)
    if how is None and collectives and not _racable_dims(space, inst):  # else :func:`narrowed`
        ui.info(f"whole runs: {_why_not(space, inst)}")
    return how


@dataclass(frozen=True)
class Narrowed:
    """A mixed space's collective raced in-run before its whole-run search: the race, its
    answer (None: none passed, the library's decision kept) and the real runs it took;
    ``why``: why nothing was chosen (too few calls, a run failed), None where it raced."""

    how: InRun
    answer: Raced | None
    runs: int
    raced: tuple[Raced, ...]
    why: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"op": self.how.op, "knob": self.how.knob, "reference_name": self.how.reference,
                "answer": self.answer.name if self.answer else None, "raced_runs": self.runs,
                "raced": [c.estimate_json() for c in self.raced],
                "not_raced": self.why}  # fmt: skip

    def said(self) -> str:
        kept = self.answer.name if self.answer else self.how.reference
        why = (f"{self.answer.name} passed ({self.answer.test.speedup:.3f}x the calls' time)"
               if self.answer else "none shown faster")  # fmt: skip
        return (f"{self.how.op}: {why} in {self.runs} raced run(s); the whole-run search keeps "
                f"{self.how.knob}={kept}, the verdict tests against the defaults")  # fmt: skip


@dataclass(frozen=True)
class Narrowing:
    """Every collective of a mixed space raced before its whole-run search (``races``, as
    :meth:`Narrowed.to_json`) and the real runs they took in all: stored with the study as
    soon as it exists, so that a resumed study or a worker joining it counts them."""

    races: tuple[dict[str, Any], ...]
    runs: int

    def to_json(self) -> dict[str, Any]:
        return {"raced_runs": self.runs, "races": list(self.races)}

    def stored(self, store: Store, name: str) -> dict[str, Any]:
        """Stored with study ``name`` (and its verdict, where one was reached); its JSON."""
        study = optuna.load_study(study_name=name, storage=store.optuna)
        data = self.to_json()
        study.set_user_attr(FIRST, data)
        acc = acceptance_of(study)
        if acc is not None:
            set_acceptance(study, replace(acc, notes=replace(acc.notes, inrun_first=data)))
        return data


@dataclass(frozen=True)
class InRunDecided:
    """The in-run route's outcome: the study decided by its race and the answer's whole
    runs, as ``tune`` reports every study."""

    result: TuneResult


@dataclass(frozen=True)
class ToSearch:
    """The route to the whole-run search: the study to search (``ready``: its space after any
    collective raced first, its runs less theirs) and the races made first (None: none)."""

    ready: Ready
    first: Narrowing | None = None


def narrowed(ready: Ready, twinned: bool, ui: UI) -> ToSearch:
    """A mixed space (issue 77): where a new study's space holds, beside other knobs,
    collectives' algorithm variables the library switches while the program runs, each such
    collective is raced in-run in turn (:func:`commtune.tune.halving`, up to
    ``--inrun-runs`` each) and the whole-run search keeps its answer, or the library's
    decision where none passed. The raced runs come out of ``--max-runs``, never out of the
    reference's, one search run and the verdict's first pass (:func:`_spare`). The race only
    chooses: what is handed back is the whole-run verdict's, against the defaults. A study
    resumed, or joined by another worker, keeps its stored space and counts its raced runs."""
    s, space = ready.setup, ready.space
    if not (_plain(ready, twinned) and len(space.dimensions) > 1):
        return ToSearch(ready)
    found = _racable_dims(space, s.inst)
    if not found:
        return ToSearch(ready)
    stored = _stored(ready)
    if stored is not None:  # resumed: its space, its raced runs spent
        space_of, done = stored
        return ToSearch(_with(ready, space_of, done.runs if done else 0)
                        if space_of.names == space.names else ready, done)  # fmt: skip
    knobs = {d.knob.name: d.knob for d in space.dimensions}
    theirs = chosen_elsewhere(ready.store, ready.target.study, space.library, knobs, RACE_KEY,
                              "race", ui)  # fmt: skip
    if theirs is not None:  # another worker raced it: its space and the runs it took
        joined = _stored(ready)
        spent = joined[1].runs if joined and joined[1] else 0
        return ToSearch(_with(ready, theirs, spent) if theirs.names == space.names else ready)
    dims, races, spent, spare = list(space.dimensions), [], 0, _spare(s.plan)
    for k, (d, how) in enumerate(found):
        runs = s.plan.inrun_runs if spare is None else min(s.plan.inrun_runs, spare - spent)
        if runs < 1:
            ui.info(f"{how.op}: not raced in-run, --max-runs {s.plan.max_runs} leaves no run "
                    "beside the reference's, one search run and the verdict's first pass; "
                    "its algorithms are searched on whole runs")  # fmt: skip
            continue
        one = _narrow(ready, how, _seed(s.plan) + 1000 * k, runs, ui)
        races.append(one.to_json())
        spent += one.runs
        if one.why is None:
            keep = d.knob.parse(one.answer.name) if one.answer else d.reference.default
            dims[dims.index(d)] = replace(d, values=(keep,))
    if not races:
        return ToSearch(ready)
    return _spent(ready, Space(space.library, tuple(dims)), races, spent)


def _spent(ready: Ready, space: Space, races: Sequence[dict[str, Any]],
           spent: int) -> ToSearch:  # fmt: skip
    """``ready`` searching ``space`` on whole runs after ``races`` took ``spent`` real runs,
    and the record of them, stored with the study now (a joining worker counts them)."""
    done = Narrowing(tuple(races), spent)
    narrow = _with(ready, space, spent)
    open_study(narrow.store.optuna, narrow.target)
    done.stored(narrow.store, narrow.target.study)
    return ToSearch(narrow, done)


def _narrow(ready: Ready, how: InRun, seed: int, runs: int, ui: UI) -> Narrowed:
    """One collective of a mixed space raced in up to ``runs`` runs, said."""
    ui.info(f"{how.op}: {len(how.names)} algorithm(s) raced in-run against {how.reference} "
            f"first (up to {runs} run(s)); then the other knobs on whole runs")  # fmt: skip
    took: list[RacedRun] = []  # the runs made, counted where the race fails
    crashed = Crashed()
    try:
        raced, how = _raced(ready, how, seed, ui, took, crashed, runs)
    except UsageError as exc:  # a raced run failed: nothing chosen, its knob on whole runs
        ui.warn(f"{how.op}: not raced ({exc}); searched on whole runs with the other knobs")
        made = len(took) + crashed.failed + (0 if isinstance(exc, RaceFailed) else 1)
        return Narrowed(how, None, made, (), f"a raced run failed: {exc}")  # it too
    if not raced.pooled:  # too few calls for one block past the warm-up
        calls = took[0].race.raced_calls
        ui.warn(f"{how.op}: {calls} calls in a run, too few to race; searched on whole runs "
                "with the other knobs")  # fmt: skip
        return Narrowed(how, None, len(took), (), f"{calls} calls in a run, too few to race")
    done = Narrowed(how, raced.answer, len(took) + crashed.failed, raced.pooled)
    ui.info(done.said())
    return done


def _spare(plan: Plan) -> int | None:
    """The runs a mixed space's races may take: ``--max-runs`` less the reference's, one
    search run and the verdict's first pass (``Plan.deciding_runs``); None: no bound."""
    if plan.max_runs is None:
        return None
    return plan.max_runs - plan.repeats - plan.deciding_runs() - 1


def _racable_dims(space: Space, inst: Installation) -> list[tuple[Dimension, InRun]]:
    """The dimensions of ``space`` the library switches while the program runs, each with
    its race (:func:`racable` of it alone)."""
    return [(d, how) for d in space.dimensions
            if (how := racable(Space(space.library, (d,)), inst)) is not None]  # fmt: skip


def _seed(plan: Plan) -> int:
    return plan.seed if plan.seed is not None else random.SystemRandom().randrange(2**31)


def _plain(ready: Ready, twinned: bool) -> bool:
    """The study's real runs may race in-run: not a simulation, a template, ``--as``, a
    twin or Slurm jobs, and the plan allows it (:func:`plan_races`)."""
    s = ready.setup
    return (s.runs.in_run and s.scale is None and s.library is None and not twinned
            and plan_races(s.plan))  # fmt: skip


def _stored(ready: Ready) -> tuple[Space, Narrowing | None] | None:
    """The space stored by a study of this name (a resumed study) and its races
    (:meth:`Narrowing.stored`; None: it raced nothing); None: no such study."""
    try:
        study = optuna.load_study(study_name=ready.target.study, storage=ready.store.optuna)
    except KeyError:
        return None
    knobs = {d.knob.name: d.knob for d in ready.space.dimensions}
    data = study.user_attrs.get(FIRST)
    done = (Narrowing(tuple(data.get("races", ())), int(data["raced_runs"]))
            if isinstance(data, dict) else None)  # fmt: skip
    return space_from_json(ready.space.library, spec_of(study).space, knobs), done


def _with(ready: Ready, space: Space, spent: int) -> Ready:
    """``ready`` searching ``space``, ``spent`` real runs out of its budget."""
    s = ready.setup
    plan = s.plan if s.plan.max_runs is None else replace(s.plan, max_runs=max(
        1, s.plan.max_runs - spent))  # fmt: skip
    t = ready.target
    target = replace(t, spec=replace(t.spec, space=space.to_json()), space=space, plan=plan)
    return replace(ready, setup=replace(s, plan=plan), space=space, target=target)


def _halving(ready: Ready, how: InRun, seed: int, ui: UI, most: int | None = None,
             runs: list[RacedRun] | None = None, risk: float | None = None,
             failed: int = 0) -> tuple[Halving, list[RacedRun]]:  # fmt: skip
    """``how`` raced (:func:`commtune.tune.halving`) in up to ``most`` runs (default
    ``--inrun-runs``) at ``risk`` (default ``--risk``), each run said (numbered with the
    ``failed`` raced runs made before); the runs it took (appended to ``runs`` as they end,
    so that a caller whose race failed still counts them)."""
    plan = ready.setup.plan
    runs = [] if runs is None else runs

    def racer(field: Sequence[str], r: int, run: int) -> Race:
        runs.append(race(ready.setup.inst, ready.setup.command, how.op, field, seed + len(runs),
                         plan.timeout or plan.reference_timeout, through=plan.through,
                         run=run))  # fmt: skip
        return runs[-1].race

    def heard(done: Race, now: Sequence[Raced]) -> None:
        _said(ui, len(runs) + failed, runs[-1], now)

    most = plan.inrun_runs if most is None else most
    risk = plan.risk if risk is None else risk
    # a run after others: its units sized by the calls the program made before
    calls = runs[-1].race.raced_calls if runs else None
    return halving(racer, how.names, most, risk, plan.min_gain, heard, calls=calls), runs


def _sized(ready: Ready, how: InRun, raced: Halving, runs: list[RacedRun], seed: int,
           ui: UI, crashed: Crashed) -> Halving:  # fmt: skip
    """Where algorithms that cut a message into segments passed (raced at the launch's
    segment size: one segment) and ``--inrun-runs`` leaves a run, one more run races them
    again and at a few segment sizes (:func:`sized_field`), its tests within the share of
    ``--risk`` the runs not made leave; the answer is the fastest that passed in any run,
    on the evidence of every run (as :func:`commtune.tune.halving` chooses); where that run
    fails, the answer of the runs before it (the failed run counted in ``crashed``)."""
    plan = ready.setup.plan
    field = sized_field(ready.setup.inst, how.op, raced)
    left = plan.inrun_runs - len(runs) - crashed.failed
    if not field or left < 1:
        return raced
    risk = plan.risk * left / plan.inrun_runs
    ui.info(f"{how.op}: {', '.join(n for n in field if '@' not in n)} raced again at segment "
            f"sizes {', '.join(SEGMENTS)} in one run, its tests within the {risk:.3g} of "
            f"--risk the {left} run(s) not made leave")  # fmt: skip
    try:
        sized = _halving(ready, replace(how, names=tuple(field)), seed, ui, 1, runs, risk,
                         crashed.failed)[0]  # fmt: skip
    except RaceFailed as exc:  # the first race's answer stands; the run counted
        crashed.count(exc)
        ui.warn(f"{how.op}: the run racing segment sizes failed ({exc}); the answer of the "
                "runs before it stands")  # fmt: skip
        return raced
    return raced.then(sized, plan.min_gain)


def _why_not(space: Space, inst: Installation) -> str:
    """Why ``space`` is searched on whole runs (said when in-run racing is on)."""
    if inst.impl.race_mode is None:
        return f"{inst.impl.title} reads its algorithms from the environment only"
    return (f"in-run racing takes a space of one collective's algorithm variable; this one "
            f"has {', '.join(space.names)}")  # fmt: skip


def race_study(ready: Ready, how: InRun, ui: UI) -> InRunDecided | ToSearch:
    """The study of ``how`` raced in-run (:func:`commtune.tune.halving`), its answer checked
    on whole runs and stored as the study's verdict (``export`` and ``run --study`` take it).
    A raced run that fails in a candidate is raced again without it (:func:`_raced`). Where
    the program's first run made too few calls to race, or a raced run failed with nothing
    to drop (a crash, a hang: :class:`RaceFailed`), the study searches its space on whole
    runs: the ``ready`` to search with, less the raced runs, and their record."""
    plan = ready.setup.plan
    seed, timeout = _seed(plan), plan.timeout or plan.reference_timeout
    limit = limit_of(plan, how)
    ui.info(f"{how.op}: {len(how.names)} algorithm(s) raced in-run against "
            f"{how.reference} (the library's own decision), up to {plan.inrun_runs} "
            f"run(s), each test at {limit:.3g} of --risk {plan.risk:g} (--no-inrun: whole "
            "runs)")  # fmt: skip
    runs: list[RacedRun] = []
    crashed = Crashed()
    try:
        raced, how = _raced(ready, how, seed, ui, runs, crashed)
    except RaceFailed as exc:
        return _whole(ready, how, len(runs) + crashed.failed, ui, str(exc))
    if raced.pooled:
        raced = _sized(ready, how, raced, runs, seed, ui, crashed)
    if not raced.pooled:  # not one block past the warm-up: nothing to race on
        first = runs[-1].race
        return _whole(ready, how, len(runs) + crashed.failed, ui, f"{first.raced_calls} calls "
                      f"in a run, too few to race {len(how.names) + 1} candidates in units of "
                      f"{first.run} ({WARMUP_BLOCKS} blocks of warm-up at each message size, "
                      "then whole blocks)")  # fmt: skip
    spent = len(runs) + crashed.failed
    sizes = by_size([r.race for r in runs], limit_of(plan, how), plan.min_gain)
    if len(sizes) > 1:
        ui.print(by_size_table([c.to_json() for c in sizes], how.op, how.reference))
    file = _by_size_file(ready, how, sizes, ui)
    check = (whole_runs_check(plan, ready.setup.inst, ready.executor, how, raced.answer, seed,
                              timeout, ui, spent, file)
             if raced.answer or file else None)  # fmt: skip
    acc = verdict_of(ready.setup.plan, ready.setup.inst, how, runs, raced, check, crashed, file,
                     sizes)  # fmt: skip
    found = acc.finding if isinstance(acc.finding, InRunFinding) else None
    if found is not None and found.share_said:
        ui.info(found.share_said)
    target = ready.target
    save_result_study(ready.store.optuna, target.study, target.spec, acc, platform=target.platform)
    return InRunDecided(result_of(target.study, ready.setup.inst, how, runs, raced.pooled, acc,
                                  check, crashed.failed))  # fmt: skip


def _by_size_file(ready: Ready, how: InRun, sizes: Sequence[SizeChoice], ui: UI) -> BySize | None:
    """The selection file answering by size where the race's choices differ by size (said),
    else None (a choice by size the library's file cannot say: warned)."""
    inst = ready.setup.inst
    header = (f"commtune study {ready.target.study}: {how.op} by message size, from in-run "
              f"races on {inst.describe()}")  # fmt: skip
    file, why = by_size_file(inst, how.op, how.knob, how.reference, sizes, header)
    if why is not None:
        ui.warn(f"{why}; the one algorithm that won over all sizes is tested instead")
    if file is not None:
        ui.info(f"the race chose by size ({file.says()}): its selection file is the answer")
    return file


def _raced(ready: Ready, how: InRun, seed: int, ui: UI, runs: list[RacedRun], crashed: Crashed,
           most: int | None = None) -> tuple[Halving, InRun]:  # fmt: skip
    """``how`` raced (:func:`_halving`) in up to ``most`` runs (default ``--inrun-runs``). A
    raced run that fails in a candidate (:attr:`RaceFailed.suspects`: under way when it
    ended, or the last raced before) is counted in ``crashed``, the candidate dropped and the
    rest raced again in the runs left, at the share of ``--risk`` they leave (each test at
    the same share as before: only the last race's tests choose). Raises the failure where
    it names no candidate, nothing would be left to race, or no run is left. The race and
    the field it raced."""
    most = ready.setup.plan.inrun_runs if most is None else most
    while True:
        left = most - len(runs) - crashed.failed
        try:
            halved = _halving(ready, how, seed + 1000 * crashed.failed, ui, left, runs,
                              ready.setup.plan.risk * left / most, crashed.failed)[0]  # fmt: skip
            return halved, how
        except RaceFailed as exc:
            crashed.count(exc)
            keep = tuple(n for n in how.names if n not in exc.suspects)
            left = most - len(runs) - crashed.failed  # after this one
            if not exc.suspects or not keep or left < 1:
                raise
            ui.warn(f"{how.op}: {exc}; {', '.join(exc.suspects)} "
                    f"{exc.where}: dropped, {', '.join(keep)} raced again in the "
                    f"{left} run(s) left")  # fmt: skip
            how = replace(how, names=keep)


def _whole(ready: Ready, how: InRun, runs: int, ui: UI, why: str) -> ToSearch:
    """Why ``how`` was not raced, said; the study's space to be searched on whole runs, less
    the ``runs`` raced runs made (:func:`_spent`)."""
    ui.warn(f"{how.op}: {why}; the space is searched on whole runs, each candidate alone")
    return _spent(ready, ready.space, [Narrowed(how, None, runs, (), why).to_json()], runs)


def _said(ui: UI, r: int, run: RacedRun, now: Sequence[Raced]) -> None:
    ui.info(f"raced run {r}: {run.race.raced_calls} calls in {len(run.race.time)} units of "
            f"{run.race.units_said()}, blocks of {run.race.k} (seed {run.race.seed}), "
            f"{run.wall:.2f} s")  # fmt: skip
    if cost := run.race.overhead_said():
        ui.info(f"  {cost}")
    for said in run.race.refusals():
        ui.warn(f"  {said}")
    for c in now:
        t = c.test
        ui.info(f"  {c.name}: {t.speedup:.3f}x the calls' time ({t.interval[0]:.3f}-"
                f"{t.interval[1]:.3f}) in {c.blocks} blocks; p = {t.p:.3g} at {t.limit:.3g}: "
                f"{'passed' if t.passed else 'not shown faster'}")  # fmt: skip
