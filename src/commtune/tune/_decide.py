"""The verdict (``--gate risk``, the default): the search ranks, fresh runs decide, one rule.

Every configuration the search measured is an arm, ranked by its search runs (the fastest
first). The search's runs of an arm do not decide: it was chosen *because* they looked
good, and they would flatter it. What decides is :mod:`commtune.rule`, on runs made after
the choice: each round runs the arm and the defaults beside each other, which goes first
drawn by a coin, and at the rule's looks its paired test asks whether a configuration 2 %
(``tolerance``) slower than the defaults would do as well. Only the pairs decide: the
defaults' runs of the search were made earlier, on a machine that may since have warmed up
or drifted.

The search's one run of an arm is a poor guide to which of its best is faster, so the
verdict first duels its best two (``DUEL``): ``DUEL_ROUNDS`` rounds, each running the defaults and
both arms in an order drawn at random (``rule.shuffled``), each arm's pairs its run and the
defaults' run of the round; then the arm of higher estimate goes on alone, in pairs, and the
other is dropped. Each may spend half the risk, at looks set before its first run, so the
one left behind only loses its chance to pass, and the halves add up to the risk. Where the
runs left could not pass either at half the risk, the search has one arm to test, or its
runs of the defaults spread ``DUEL_SPREAD`` (1.5x) or more (runs in modes 2x apart, where half
the risk is too little), the arms are tested one at a time, as follows.

An arm is dropped, and the next taken, when no look to come could pass it (its runs left,
all won, would not be enough) or when its looks end; a pair lost by chance does not drop
it while the runs could still decide it. Once one passes, the runs left test the next arms
while one could still pass, and the arm handed back is the passing one of highest estimate.
Failing to pass costs nothing of the risk; each look costs its share (:func:`rule.looks`),
so whatever is handed back is more than ``tolerance`` slower with probability at most
``risk``. A study that ends with no arm passing keeps the defaults and says how many more
runs would decide. None is tested when no arm's search run beat the defaults' median (a
check that only ever keeps runs from being spent).

On a machine with two modes, a pair split by them (one run in each) scores nothing in the
rule's test (``rule.split``, ``modes=True``): it cannot decide, and the test stays exact.

A configuration equal to the defaults (every knob at its library default) is not an arm; a
run that fails is never evidence (its arm is out). A deterministic study (a simulation whose
runs repeat exactly) is decided on its values (:func:`_exact`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from commtune import rule, stats
from commtune.knobs import Value
from commtune.progress import Progress
from commtune.study import (
    Acceptance,
    ExactFinding,
    Gate,
    Plan,
    RiskFinding,
    Source,
    StudyView,
    TrialRecord,
    config_key,
    set_acceptance,
)
from commtune.trial import Executor, repeats_exactly
from commtune.tune._confirm import compare_others, confirm, knobs_of, without_defaults
from commtune.tune._pairs import Entrant, Rounds, executor_runner

if TYPE_CHECKING:
    import optuna

CONTENDERS = 6  # the arms the verdict may test, best first by the search's ranking
DUEL = 2  # the search's best this many duel beside the defaults before one goes on
DUEL_ROUNDS = 3  # the rounds of the duel, all of them beside the defaults
DUEL_SPREAD = 1.5  # the search's runs of the defaults spread less than this for them to duel


def deterministic(plan: Plan, executor: Executor, reference: TrialRecord) -> bool:
    """Whether the study is run and decided as a deterministic one (a simulation): the plan
    allows it (not ``--assume-noise``) and its runs repeat exactly
    (:func:`commtune.trial.repeats_exactly`)."""
    return plan.exact and repeats_exactly(executor, reference.values())


@dataclass
class Arm(Entrant):
    """A configuration and every run of it: the search's (its place in the study's runs, its
    value) and the verdict's, by round (:class:`commtune.tune._pairs.Entrant`)."""

    trial: int | None = None  # None: not measured by this study's search (a simulation ranked it)
    search: list[tuple[int, float]] = field(default_factory=list)
    tested: int = 0  # the k-th arm the verdict tested (0: not tested)
    schedule: list[tuple[int, float]] = field(default_factory=list)  # its looks (rule.looks)
    last: rule.Test | None = None  # the rule at its last look
    dropped: str = ""  # why the verdict stopped testing it
    label: str = ""  # how it is named: "trial 7", "the simulation's #1"

    def searched(self) -> float:
        """What the search's runs of it say: their median."""
        return stats.median([v for _, v in self.search]) if self.search else float("inf")

    def name(self) -> str:
        return self.label or f"trial {self.trial}"

    @property
    def passed(self) -> bool:
        return self.last is not None and self.last.passed


def _arms(view: StudyView, defaults: dict[str, Value] | None) -> list[Arm]:
    """The search's configurations that differ from the defaults, with their runs."""
    arms = []
    for r in view.known().values():
        if r.failed or r.value is None:
            continue
        if defaults is not None and all(defaults.get(k) == v for k, v in r.config.items()):
            continue  # the defaults under another name: not an arm
        runs = [(run.seq, run.value) for run in r.runs
                if run.value is not None and run.seq is not None]  # fmt: skip
        if runs:
            arms.append(Arm(dict(r.config), trial=r.number, search=runs))
    return arms


def contended(study: optuna.Study) -> bool:
    """Whether the verdict has a configuration to test: one the search measured whose run
    beat the median of the defaults' runs so far (:func:`_order`). Where none has, the
    search may spend the runs the verdict would have (``tune._loop.search``)."""
    view = StudyView(study)
    return bool(_order(_arms(view, _defaults(view)), _stream(view)))


def _defaults(view: StudyView) -> dict[str, Value] | None:
    """Every knob of the study's space at its library default (None: the space unknown)."""
    knobs = knobs_of(view)
    return {k: knob.default for k, knob in knobs.items()} if knobs is not None else None


def _stream(view: StudyView) -> list[float]:
    """The runs of the defaults so far: the reference's and the controls'."""
    return [run.value for r in view.records if r.is_defaults for run in r.runs
            if run.value is not None]  # fmt: skip


def verdict(
    study: optuna.Study,
    executor: Executor,
    timeout: float,
    ui: Progress,
    plan: Plan,
    ranked: Sequence[Mapping[str, Value]] | None = None,
) -> Acceptance | None:
    """The study's verdict by ``plan.gate``: this module's (``risk``) or the strict
    confirmation's (``tune._confirm``); stored. None where ``--confirm 0`` asks for none.
    ``ranked``: what a simulation ranked, best first (``--twin``), tested in that order."""
    if plan.gate is not Gate.RISK:
        return confirm(study, executor, timeout, ui, plan)
    if not plan.decides:
        return None
    return decide(study, executor, timeout, ui, plan, ranked)


def decide(
    study: optuna.Study,
    executor: Executor,
    timeout: float,
    ui: Progress,
    plan: Plan,
    ranked: Sequence[Mapping[str, Value]] | None = None,
) -> Acceptance | None:
    """The verdict of the study (see the module docstring), stored; ``ranked``: the
    configurations a simulation ranked, best first, tested in that order (no search ran)."""
    view = StudyView(study)
    ref = view.reference()
    if ref is None or ref.value is None:
        return None
    stored = view.verdict()
    if stored and stored.source is Source.SEARCH:
        return stored
    defaults = _defaults(view)
    twin = ranked is not None
    arms = _ranked(ranked) if ranked is not None else _arms(view, defaults)
    if not arms and not twin:
        return None
    if not twin and deterministic(plan, executor, ref):
        exact = _exact(view, arms, executor, timeout, plan)
        if exact is not None:
            exact = without_defaults(exact, view)
            set_acceptance(study, exact)
            return exact
        ui.warn("the best configuration gave another value when run again: the runs are not "
                "deterministic after all; deciding on their noise")  # fmt: skip
    earlier = _stream(view)
    room = None if plan.max_runs is None else plan.max_runs - view.runs_spent()
    left = 2 * rule.UNBOUNDED if room is None else max(0, room)
    pairs = left // 2  # the verdict's pairs in all: how the risk is shared (rule.total)
    with ui.progress("deciding: the search's best beside the defaults", left) as bar:
        runs = Rounds(executor_runner(executor, timeout), plan.seed, bar, left)
        order = arms[:CONTENDERS] if twin else _order(arms, earlier)
        why = "" if order else _why_none(twin, len(arms), len(earlier))
        if _duels(order, twin, earlier) and _duel(order[:DUEL], plan, runs):
            order = []  # the duelled arms had the whole risk
        for arm in order:
            k = 1 + sum(1 for a in arms if a.tested)
            arm.schedule = rule.looks(plan.risk, k, runs.left // 2, pairs)
            if not arm.schedule:
                if k == 1:
                    need = plan.deciding_runs()
                    why = (f"{runs.left} runs were left for the verdict, fewer than the "
                           f"{need} a first pass needs at --risk {plan.risk:g}: raise "
                           "--max-runs")  # fmt: skip
                break
            arm.tested = k
            while runs.left >= 2 and not arm.failure and not arm.passed:
                runs.round([arm])
                if not arm.failure:
                    _look(arm, plan)
                if arm.dropped:
                    break
    objectives = {id(a): compare_others(runs.default_others, a.others) for a in arms}
    acc = _verdict(arms, plan, len(view.ran()), objectives, why, twin)
    acc = without_defaults(acc, view)
    set_acceptance(study, acc)
    return acc


def _why_none(twin: bool, arms: int, earlier: int) -> str:
    """Why the verdict tests nothing."""
    if twin:
        return "the simulation found no configuration faster than the library's own decision"
    return (f"none of the {arms} configurations the search measured beat the median of the "
            f"defaults' {earlier} runs: no run spent on a verdict")  # fmt: skip


def _duels(order: Sequence[Arm], twin: bool, earlier: Sequence[float]) -> bool:
    """Whether the search's best two duel: the search measured two worth testing, and
    its runs of the defaults (``earlier``), the slowest over the fastest, spread less than
    ``DUEL_SPREAD`` (where runs fall into modes 2x apart, half the risk is too little: the
    best is tested alone, with four fifths or all of it). Decided on the search's runs
    alone, before any of the verdict's."""
    spread = max(earlier) / min(earlier) if earlier and min(earlier) > 0 else 1.0
    return not twin and len(order) >= DUEL and spread < DUEL_SPREAD


def _duel(arms: list[Arm], plan: Plan, runs: Rounds) -> bool:
    """The search's best few duel beside the defaults, then the one ahead goes on alone: each
    round runs the defaults and every arm still in, in an order drawn at random; after
    ``DUEL_ROUNDS`` rounds the arm of highest estimate goes on alone, in pairs, to the pairs its
    looks were set at. Each arm may spend an equal share of the risk at looks fixed before
    its first run, so the one left behind only loses its chance to pass, and the shares add
    up to the risk. False where the runs left could not pass any at its share (nothing run:
    the first is then tested alone)."""
    pairs = DUEL_ROUNDS + (runs.left - (len(arms) + 1) * DUEL_ROUNDS) // 2
    schedule = rule.looks(plan.risk / len(arms), 0, pairs)
    if not schedule:
        return False
    for i, arm in enumerate(arms):
        arm.schedule = list(schedule)
        arm.tested = i + 1
    live = list(arms)
    while live and runs.left >= len(live) + 1:
        runs.round(live)
        for arm in live:
            if not arm.failure:
                _look(arm, plan)
        live = [a for a in live if not (a.failure or a.passed or a.dropped)]
        if runs.done == DUEL_ROUNDS and len(live) > 1:
            ahead = max(live, key=lambda a: a.last.speedup if a.last else 0.0)
            for arm in (a for a in live if a is not ahead):
                arm.dropped = (f"duelled beside {ahead.name()} for {DUEL_ROUNDS} rounds, it was "
                               "behind")  # fmt: skip
            live = [ahead]
    return True


class Named(dict[str, Value]):
    """A configuration handed to the verdict among a simulation's ranking under a name of
    its own (a twin's blind spot raced on the machine), where the others are "the
    simulation's #i"."""

    def __init__(self, config: Mapping[str, Value], label: str) -> None:
        super().__init__(config)
        self.label = label


def _ranked(ranked: Sequence[Mapping[str, Value]]) -> list[Arm]:
    """The configurations a simulation ranked (and any :class:`Named` beside them), best
    first, as arms with no run of this study's search."""
    arms, i = [], 0
    for c in ranked:
        if isinstance(c, Named):
            label = c.label
        else:
            i += 1
            label = f"the simulation's #{i}"
        arms.append(Arm(dict(c), label=label))
    return arms


def _order(arms: Sequence[Arm], earlier: Sequence[float]) -> list[Arm]:
    """The arms the verdict may test, fastest first by their search runs, at most
    ``CONTENDERS``; none if none of them beat the defaults' median."""
    ranked = sorted(arms, key=lambda a: (a.searched(), a.trial))[:CONTENDERS]
    if not ranked or (earlier and ranked[0].searched() >= stats.median(earlier)):
        return []
    return ranked


def _look(arm: Arm, plan: Plan) -> None:
    """The rule after this round (a look where the arm's schedule has one); the arm dropped
    where its looks are over or no look to come could pass it."""
    defaults, mine = arm.pairs()
    n = len(mine)
    arm.last = rule.test(defaults, mine, limit=rule.limit_at(arm.schedule, n),
                         tolerance=plan.tolerance, min_gain=plan.min_gain, modes=True)  # fmt: skip
    if arm.passed:
        return
    if n >= arm.schedule[-1][0]:
        arm.dropped = f"its {n} pairs of runs beside the defaults ended without passing"
    elif not rule.could_pass(arm.schedule, defaults, mine, plan.tolerance, modes=True):
        arm.dropped = f"after {n} pairs of runs beside the defaults, no run left could make it pass"


def _exact(
    view: StudyView, arms: list[Arm], executor: Executor, timeout: float, plan: Plan
) -> Acceptance | None:
    """The verdict of a study whose runs of the defaults gave one value (a deterministic
    simulation): the fastest configuration measured is run once more; if it gives its value
    again, its speedup is that of its runs, with no noise to weigh, and it is handed back if
    it clears ``1 + min_gain``. None if the second run differs (the study is not exact)."""
    ref = view.reference()
    assert ref is not None
    base = stats.median(ref.values())
    best = min(arms, key=lambda a: min(v for _, v in a.search))
    value = min(v for _, v in best.search)
    speedup = base / value
    found = ExactFinding(min_gain=plan.min_gain, arms=len(arms), statistic=plan.statistic)
    kept = Acceptance(Source.SEARCH, dict(best.config), False, trial=best.trial,
                      measured_trials=len(view.ran()), gate=Gate.EXACT, finding=found)  # fmt: skip
    if speedup < 1 + plan.min_gain:
        said = (f"no configuration is faster than the defaults by {plan.min_gain:.0%} (the "
                f"fastest: {speedup:.4g}x, deterministic runs)")  # fmt: skip
        return replace(kept, reason=said)
    run = executor.run(best.config, timeout)
    if run.value is None:
        return replace(kept, reason=f"trial {best.trial} failed when run again: {run.failure}")
    if not stats.exact([value, run.value]):
        return None
    said = (f"every run of the defaults gave {base:.6g}, trial {best.trial} gave "
            f"{value:.6g} in both of its runs: {speedup:.4g}x, deterministic")  # fmt: skip
    return replace(kept, accepted=True, speedup=speedup, ci=(speedup, speedup),
                   best_values=[run.value], finding=replace(found, said=said))  # fmt: skip


def _verdict(
    arms: list[Arm],
    plan: Plan,
    n_measured: int,
    objectives: dict[int, dict[str, Any]],
    why: str = "",
    twin: bool = False,
) -> Acceptance:
    """The arm handed back: the passing one of highest estimate, else the tested one of
    highest estimate (not accepted: the defaults are kept), with its figures."""
    tested = [a for a in arms if a.last is not None and not a.failure]
    passing = [a for a in tested if a.passed]
    pool = passing or tested
    found = RiskFinding(
        tolerance=plan.tolerance,
        risk_limit=plan.risk,
        min_gain=plan.min_gain,
        candidates=[_listed(a, objectives[id(a)]) for a in arms if a.tested],
        statistic=plan.statistic,
        arms=len(arms),
        tested=sum(1 for a in arms if a.tested),
        twin=twin,
    )
    if not pool:
        failures = "; ".join(f"{a.name()} {a.failure}" for a in arms if a.failure)
        reason = failures or why or "every configuration tested failed"
        if not arms:
            return Acceptance(Source.SEARCH, {}, False, reason, measured_trials=n_measured,
                              gate=Gate.RISK, finding=found)  # fmt: skip
        best = min(arms, key=Arm.searched)
        return Acceptance(Source.SEARCH, dict(best.config), False, reason, trial=best.trial,
                          measured_trials=n_measured, gate=Gate.RISK, finding=found)  # fmt: skip
    winner = max(pool, key=lambda a: a.last.speedup)  # type: ignore[union-attr]
    beside = {i: v for a in arms for i, v in a.beside.items()}  # the defaults' run of each round
    t = winner.last
    assert t is not None
    defaults, mine = winner.pairs()
    found = replace(
        found,
        objectives=objectives[id(winner)],
        p=t.p,
        share=t.limit,
        level=rule.LEVEL,
        evidence_runs=t.runs,
        order="random",
        search_runs=len(winner.search),
        said=t.says(),
        label=winner.name(),
        rounds=sorted(beside),  # every round with the defaults
    )
    reason = ""
    if not t.passed:
        more = rule.more_pairs(defaults, mine, limit=winner.schedule[-1][1],
                               tolerance=plan.tolerance, min_gain=plan.min_gain,
                               modes=True)  # fmt: skip
        found = replace(found, more_runs=None if more is None else 2 * more)
        reason = winner.dropped or "the runs ran out"
        reason += (f"; about {2 * more} more runs, if they went as these did, would decide"
                   if more is not None else "; more runs like these would not decide")  # fmt: skip
    return Acceptance(
        Source.SEARCH,
        dict(winner.config),
        t.passed,
        reason,
        speedup=t.speedup,
        ci=t.interval,
        p_value=t.p,
        trial=winner.trial,
        measured_trials=n_measured,
        default_values=[beside[i] for i in sorted(beside)],  # once each: duelled arms share them
        best_values=mine,
        gate=Gate.RISK,
        finding=found,
    )


def _listed(arm: Arm, objectives: dict[str, Any]) -> dict[str, Any]:
    t = arm.last
    return {
        "trial": arm.trial,
        "label": arm.name(),
        "params": arm.config,
        "values": list(arm.rounds.values()),
        "defaults": list(arm.beside.values()),
        "rounds": list(arm.rounds),
        "search_runs": len(arm.search),
        "tested": arm.tested,
        "failure": arm.failure,
        "speedup": t.speedup if t else None,
        "ci": list(t.interval) if t else None,
        "p_value": t.p if t else None,
        "share": t.limit if t else None,
        "faster": bool(t and t.passed),
        "dropped": arm.dropped or None,
        "objectives": objectives,
        "key": config_key(arm.config),
        "evidence_runs": t.runs if t else 0,
        "looks": [[n, share] for n, share in arm.schedule],  # (pairs, share of the risk)
    }
