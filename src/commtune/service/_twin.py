"""``tune --twin LINE``: the program's simulated twin searched first, tuned as the real library
on its simulated cluster within ``--sim-budget`` seconds of wall time; its ranking, in the
real library's settings, is what the real runs' verdict tests (or, where the user asked for
knobs the simulator does not model, the simulation's best is pinned and the real machine
searches those). :func:`twin` returns the real study's plan, the ranking and the
:class:`~commtune.study.TwinReport` the terminal and the report show."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from commtune.knobs import (
    KnobStatus,
    Value,
    build_space,
    discover,
    enumerators,
    load_catalog,
)
from commtune.launch import launcher_for
from commtune.mpi import Installation, launch_files, resolve_command
from commtune.progress import Progress
from commtune.service._as import NothingFaithful
from commtune.service._blind import blind_spots, racing_allowed
from commtune.service._common import load_study
from commtune.service._inrun import switched
from commtune.service._scaling import scaling
from commtune.service._simulation import sim_runs, timed_run
from commtune.study import DEFAULTS, Plan, Ranked, StudyView, TwinReport
from commtune.trial import Objective
from commtune.tune import CONTENDERS

SEARCH_SHARE = 2 / 3  # a twin's share of --sim-budget for its search (the scaling: the rest)


@dataclass(frozen=True)
class Twinned:
    """What the twin hands the real study: its ``plan``, the configurations its verdict
    tests in order (``ranked``; None: the real machine searches, the simulation's best
    pinned) and the ``report``."""

    plan: Plan
    ranked: tuple[Mapping[str, Value], ...] | None
    report: TwinReport


@dataclass(frozen=True)
class TwinStart:
    """The simulated study about to be searched (its ``plan`` and smpirun ``line``), with what
    is known before it: the simulator, the library's decision as it ports it (``base``), the
    timed first run's wall time, when the twin started and its report so far."""

    plan: Plan
    line: tuple[str, ...]
    sim: Installation
    base: Mapping[str, str]
    wall: float
    start: float
    report: TwinReport


def twin_start(plan: Plan, inst: Installation, command: Sequence[str],
               ui: Progress) -> TwinStart:  # fmt: skip
    """The simulated study of ``plan.twin``, tuned as ``inst``'s library, before its search:
    the program timed once on the simulator, the search's runs from what ``--sim-budget``
    leaves. The service runs its search (``Tuning.search``), then :func:`twin_found` (or,
    where it models nothing, :func:`twin_nothing`)."""
    line = list(plan.twin or ())
    sim = _simulator(line, inst, command)
    base = sim.impl.decides_as(inst.impl) or {}
    # the program's own timer reads simulated time under the simulator: the defaults'
    # simulated and real values in one unit (a wall time or a profile field has none)
    own = Objective.parse(plan.metric)
    start = time.perf_counter()  # --sim-budget bounds all of it: timed run, search, scaling
    first_run = replace(plan, reference_timeout=min(plan.reference_timeout, plan.sim_budget))
    timed = timed_run(launcher_for(sim), line, sim, base, first_run, "--twin: the simulated "
                      f"program did not run (one run may take --sim-budget, {plan.sim_budget:g} "
                      "s, at most)", also=(own,) if own.pattern is not None else ())  # fmt: skip
    assert timed is not None
    wall, first = timed
    runs = sim_runs(wall, max(0.0, plan.sim_budget - wall) * SEARCH_SHARE)
    program = os.path.basename(launch_files(line).program or "program")
    digest = hashlib.sha256(json.dumps([line, list(command)]).encode()).hexdigest()[:6]
    name = f"{plan.study}-twin" if plan.study else f"{program}-twin-{digest}"
    ui.info(f"the simulated twin: {wall:.1f} s of wall time a run here; its search gets {runs} "
            f"runs (--sim-budget {plan.sim_budget:g} s, the scaling what is left), tuned as "
            f"{inst.impl.title}")  # fmt: skip
    report = TwinReport(study=name, metric=plan.metric, wall_per_run=wall,
                        reference=f"{inst.impl.title}'s own decision as {sim.impl.title} ports it",
                        defaults_simulated=first.secondary.get(own.spec))  # fmt: skip
    return TwinStart(simulated_study(plan, inst.vendor.value, name, runs), tuple(line), sim,
                     base, wall, start, report)  # fmt: skip


def twin_nothing(start: TwinStart, plan: Plan, inst: Installation, command: Sequence[str],
                 exc: NothingFaithful, ui: Progress) -> Twinned:  # fmt: skip
    """The twin's search found nothing it models (``exc``): see :func:`_nothing`."""
    return _nothing(plan, inst, command, start.sim, start.report, exc, ui)


def twin_found(start: TwinStart, plan: Plan, inst: Installation, command: Sequence[str],
               statuses: Mapping[str, KnobStatus], ui: Progress) -> Twinned:  # fmt: skip
    """After the twin's search: the real study's plan, the configurations it found faster
    than the library's own decision, best first, in the real library's settings, for the
    verdict to test in that order."""
    sim, line = start.sim, list(start.line)
    view = StudyView(load_study(plan.storage, start.report.study)[1])
    ranking = _ranking(view, sim, inst, statuses, plan.min_gain)
    rows = scaling(line, sim, start.base, ranking[0].sim if ranking else None, start.wall,
                   plan.reference_timeout,
                   plan.sim_budget - (time.perf_counter() - start.start), ui)  # fmt: skip
    report = replace(start.report, runs=len(view.ran()), ranking=ranking, scaling=rows)
    found = _real(plan, inst, statuses, view, sim, report)
    if found.ranked is None or not racing_allowed(found.plan, inst):
        return found
    if (field := in_run_field(found, inst)) is not None:
        ui.info(
            f"{field.plan.knobs[0].split('=')[0]}: the simulation's picks and what it does "
            "not model raced in-run on this machine, the answer checked on whole runs"
        )
        return field
    # what the simulation could not model, raced on this machine (issue 78)
    real, report, ranked = blind_spots(found.plan, inst, command, found.report, found.ranked, ui)
    return Twinned(real, ranked, report)


def in_run_field(found: Twinned, inst: Installation) -> Twinned | None:
    """Where the simulation's best sets one collective's algorithm variable alone, one the
    library switches while the program runs (or, where it ranked nothing, where one such
    collective has algorithms it does not model): the real study races that collective
    in-run (``tune`` on a space of it: 1-3 raced runs choose, the answer's whole runs
    beside the defaults decide at --risk), its field the simulation's picks of
    it, in its order, then its algorithms the simulation does not model
    (``TwinReport.in_run``); the other knobs keep the library's decision (the simulation
    ranked them below). Else None: blind spots raced, then whole runs."""
    catalog = load_catalog(inst.vendor.value)

    def racable(knob: str) -> bool:
        return knob in catalog and switched(catalog[knob], inst) is not None

    ranked = found.ranked or ()
    knobs = list(ranked[0]) if ranked else [k for k in found.report.not_modeled if racable(k)]
    if len(knobs) != 1 or not racable(knobs[0]):
        return None
    (knob,) = knobs
    picks = [str(r[knob]) for r in ranked if set(r) == {knob}]
    field = tuple(dict.fromkeys([*picks, *found.report.not_modeled.get(knob, ())]))
    return Twinned(replace(found.plan, knobs=(f"{knob}={','.join(field)}",)), (),
                   replace(found.report, in_run=field))  # fmt: skip


def _nothing(plan: Plan, inst: Installation, command: Sequence[str], sim: Installation,
             report: TwinReport, exc: NothingFaithful, ui: Progress) -> Twinned:  # fmt: skip
    """The simulation ranks nothing: the algorithms of the collectives it was asked to tune
    that it does not model are raced on the machine (issue 78); the verdict tests what
    passed, else the real runs measure the defaults."""
    nothing = str(exc).split(": ", 1)[1]
    knobs = [k for n in exc.knobs if (k := sim.impl.knob_as(inst.impl, n))]
    report = replace(report, nothing=nothing, not_modeled=not_modeled(inst, sim, knobs))
    if not report.not_modeled or not racing_allowed(plan, inst):
        ui.warn(f"the simulated twin ranks nothing: {nothing}; the real runs measure the "
                "defaults")  # fmt: skip
        return Twinned(replace(plan, knobs=()), (), report)
    ui.warn(f"the simulated twin ranks nothing: {nothing}; what it does not model is raced on "
            "this machine")  # fmt: skip
    bare = replace(plan, knobs=tuple(report.not_modeled))
    if (field := in_run_field(Twinned(bare, (), report), inst)) is not None:
        return field
    real, report, ranked = blind_spots(bare, inst, command, report, (), ui)
    return Twinned(real if ranked else replace(real, knobs=()), ranked, report)


def simulated_study(plan: Plan, library: str, name: str, runs: int) -> Plan:
    """The twin's simulated study: tuned as ``library`` in ``runs`` runs. Its reference runs
    twice: two equal values make it a deterministic study, every other run a
    configuration's (tune._loop.exact_plan), none a control's or a verdict's pair."""
    return replace(plan, twin=None, as_library=library, study=name, max_runs=runs,
                   trials=runs, knobs=(), presets=(), record=None, replay=None, scales=(),
                   trains=(), train_from=None, sbatch=None, metrics=DEFAULTS.metrics,
                   repeats=2, by_wall_time=False, exact=True)  # fmt: skip


def _simulator(line: Sequence[str], inst: Installation, command: Sequence[str]) -> Installation:
    """The simulator of ``--twin``'s line, checked against the real installation that runs
    ``command`` (``Installation.stands_for``)."""
    sim = resolve_command(list(line), None)
    sim.stands_for(line, inst, command)
    return sim


def _ranking(
    view: StudyView,
    sim: Installation,
    inst: Installation,
    statuses: Mapping[str, KnobStatus],
    min_gain: float,
) -> tuple[Ranked, ...]:
    """What the simulated study measured faster than the library's own decision by
    ``min_gain`` at least, fastest first, once each in the real library's settings, among
    the knobs this installation has."""
    ref = view.reference()
    base = ref.value if ref is not None else None
    catalog = load_catalog(inst.vendor.value)
    available = {n for n, st in statuses.items() if st.available}
    ranking: list[Ranked] = []
    seen: set[str] = set()
    measured = [r for r in view.known().values() if r.value is not None and r.config]
    for r in sorted(measured, key=lambda r: r.value or 0.0):
        settings = sim.impl.settings_as(inst.impl, {k: str(v) for k, v in r.config.items()})
        if not settings or base is None or r.value is None:
            continue
        speedup = base / r.value
        key = json.dumps(settings, sort_keys=True)
        if speedup < 1 + min_gain or key in seen:
            continue
        if any(k not in catalog or k not in available for k in settings):
            continue  # a knob this installation does not have
        seen.add(key)
        ranking.append(Ranked(settings, {k: catalog[k].parse(v) for k, v in settings.items()},
                              speedup, {k: str(v) for k, v in r.config.items()}))  # fmt: skip
    return tuple(ranking)


def not_modeled(inst: Installation, sim: Installation,
                knobs: Sequence[str]) -> dict[str, tuple[str, ...]]:  # fmt: skip
    """Of ``knobs``, each collective's algorithm variable with the algorithms the library
    has that the simulator ports no faithful copy of (``MPIVendor.unmodeled``): what the
    twin's simulation could not rank (issue 78)."""
    listed = enumerators(inst)
    out = {}
    for k in knobs:
        names = [n for n in (listed.get(k) or ())[1:]  # [0]: the library's decision
                 if n not in inst.impl.unsampled_algorithms]  # fmt: skip
        if blind := sim.impl.unmodeled(inst.impl, k, names):
            out[k] = blind
    return out


def _real(plan: Plan, inst: Installation, statuses: Mapping[str, KnobStatus], view: StudyView,
          sim: Installation, report: TwinReport) -> Twinned:  # fmt: skip
    """The real study's plan: the ranking tested where the simulation models every knob
    asked for; else the simulation's best pinned and the other knobs searched here."""
    catalog = load_catalog(inst.vendor.value)
    available = {n for n, st in statuses.items() if st.available}
    # the real library's knobs of every operation the simulated search was to tune (its
    # space: a budget of the reference's runs alone measured no configuration of it)
    knobs = {sim.impl.knob_as(inst.impl, str(d["knob"])) for d in view.spec().space}
    knobs |= {k for r in report.ranking for k in r.settings}
    usable = tuple(sorted(k for k in knobs if k and k in catalog and k in available))
    ranked = tuple(r.config for r in report.ranking[:CONTENDERS])
    modeled = sim.impl.models_of(inst.impl)
    asked = (build_space(dict(statuses), inst.vendor.value, plan.knobs, plan.presets,
                         discover(inst)).dimensions
             if plan.knobs or plan.presets else ())  # fmt: skip
    machine = [d for d in asked if d.knob.name not in modeled]
    report = replace(report, on_this_machine=tuple(d.knob.name for d in machine),
                     left_to_simulation=tuple(d.knob.name for d in asked
                                              if d.knob.name in modeled),
                     not_modeled=not_modeled(inst, sim, usable))  # fmt: skip
    if not machine:
        return Twinned(replace(plan, knobs=usable), ranked, report)
    # searched on the real machine as any study, the simulation's best pinned
    pinned = dict(report.ranking[0].settings) if report.ranking else {}
    specs = tuple(f"{k}={v}" for k, v in pinned.items()) + tuple(
        d.knob.name
        if d.values is None
        else f"{d.knob.name}={','.join(d.knob.format(v) for v in d.values)}"
        for d in machine
    )
    return Twinned(replace(plan, twin=None, knobs=specs, presets=()), None,
                   replace(report, from_simulation=pinned))  # fmt: skip
