"""The verdict from every run (``--gate risk``, the default): expected gain and bounded risk.

Every configuration the search measured is an arm, and so are the defaults. Each of an
arm's runs is evidence: a search run relative to the control run nearest to it in time, a
duel run relative to the defaults' run made next to it. :mod:`commtune.bayes` turns all of
it into one posterior per configuration, each shrunk toward the study's distribution of
effects, so the one the search picked because its runs looked good is not believed more
than its runs allow (the winner's curse).

The runs left after the search go where the decision is open (top-two Thompson sampling
with the defaults as the control arm): each round runs the defaults and one contender
beside each other, in alternating order; the contender is the arm a draw from the
posteriors calls best, or, half the time, the one a second draw calls best instead (so the
runner-up is measured too). The duel stops as soon as the answer is clear either way:

* accept: the leader's expected speedup is above 1, its risk (the probability of being more
  than ``tolerance`` slower than the defaults) is below ``risk``, and no other contender is
  likely (``CLEAR``) to be faster than it by more than ``tolerance``;
* keep the defaults: no contender is likely (``risk``) to be more than ``tolerance`` faster;
* or the runs are spent, and the rule decides on what there is.

A configuration whose runs fall into two clusters, the slower one more than ``tolerance``
slower than the defaults, has at least the share of its runs in that cluster as its risk: a
production run lands in either. A configuration equal to the defaults (every knob at its
library default) is not an arm; a run that fails is never evidence (its arm is out). What
is handed back is the configuration these figures are of.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from commtune import bayes, stats
from commtune.knobs import Value
from commtune.progress import Progress
from commtune.study import Acceptance, Plan, Source, StudyView, config_key, set_acceptance
from commtune.trial import Executor
from commtune.tune._confirm import compare_others, confirm, knobs_of, without_defaults

if TYPE_CHECKING:
    import optuna

TOP_TWO = 0.5  # top-two Thompson sampling: the share of rounds given to the first draw's best
CLEAR = 0.1  # a challenger this likely to beat the leader by the tolerance keeps it open
CONTENDERS = 6  # the arms a duel draws from: the best by expected speedup
UNBOUNDED_ROUNDS = 15  # the duel's rounds when the study has no bound on runs
NEAREST = 3  # the runs of the defaults a run's level is the median of
MIN_RUNS = 4  # no configuration is handed back on fewer runs, however good they look


class Levels:
    """The defaults' level at each moment of the study: the median of the ``NEAREST`` runs
    of the defaults nearest in time (the reference's, the controls', the duel's). One run
    of the defaults is as noisy as any run (on these machines some defaults' runs are 2.5x
    their median); three near each other follow a machine's phase and not one run's luck.
    When the defaults' runs fall into two clusters, no level is above the faster cluster's
    median: a configuration is not called faster for beating the defaults' slow runs (the
    defaults' runs may be bimodal of their own, and a user's run may land in the fast
    cluster)."""

    def __init__(self, stream: Sequence[tuple[int, float]]) -> None:
        self.stream = sorted(stream)
        self._split()

    def _split(self) -> None:
        """The defaults' clusters: the fast one's median caps the level, and the slow one
        is the machine's second mode (:class:`commtune.bayes.SlowMode`)."""
        split = stats.clusters(self.values())
        self.fast: float | None = None
        self.slow: bayes.SlowMode | None = None
        if len(split) == 2:
            (n_fast, fast), (n_slow, slow) = split
            self.fast = fast
            self.slow = bayes.SlowMode(n_slow / (n_fast + n_slow), math.log(slow / fast))

    def add(self, seq: int, value: float) -> None:
        bisect.insort(self.stream, (seq, value))
        self._split()

    def at(self, seq: int) -> float | None:
        if not self.stream:
            return None
        near = sorted(self.stream, key=lambda run: abs(run[0] - seq))[:NEAREST]
        level = float(np.median([v for _, v in near]))
        return level if self.fast is None else min(level, self.fast)

    def values(self) -> list[float]:
        return [v for _, v in self.stream]


@dataclass
class Arm:
    """A configuration and every run of it: (its place in the study's runs, its value)."""

    trial: int
    config: dict[str, Value]
    search: list[tuple[int, float]]
    rounds: dict[int, tuple[int, float]] = field(default_factory=dict)  # duel round -> run
    others: dict[int, dict[str, float | None]] = field(default_factory=dict)  # its objectives
    failure: str = ""
    posterior: bayes.Posterior | None = None

    def logs(self, levels: Levels) -> list[float]:
        """Every run as the log of its ratio to the defaults' level at its moment."""
        out = []
        for seq, value in [*self.search, *self.rounds.values()]:
            level = levels.at(seq)
            if level is not None and level > 0 and value > 0:
                out.append(math.log(value / level))
        return out

    def relatives(self, levels: Levels) -> list[float]:
        return [math.exp(y) for y in self.logs(levels)]


@dataclass(frozen=True)
class Judgement:
    """An arm against the rule."""

    expected: float
    interval: tuple[float, float]
    risk: float
    clusters: list[tuple[int, float]]
    accepted: bool
    reason: str


def judge(arm: Arm, levels: Levels, plan: Plan, looks: int = 1) -> Judgement:
    """The rule (see the module docstring) applied to ``arm``'s posterior and runs;
    ``looks``: the arms the duel measured, any of which the rule could have accepted."""
    post = arm.posterior
    assert post is not None
    expected, interval = post.expected(), post.interval()
    risk = post.risk(plan.tolerance)
    relatives = arm.relatives(levels)
    split = stats.clusters(relatives)
    reasons = []
    if len(split) == 2 and split[1][1] > 1 + plan.tolerance:
        (_, low), (n_slow, high) = split
        risk = max(risk, (n_slow + 1) / (len(relatives) + 2))
        reasons.append(
            f"its runs fall into two clusters ({split[0][0]} at {low:.3g}x the defaults' time, "
            f"{n_slow} at {high:.3g}x)"
        )
    runs = len(relatives)
    if runs < MIN_RUNS:
        reasons.insert(0, f"{runs} run(s): fewer than {MIN_RUNS}")
    if expected <= 1.0:
        reasons.insert(0, f"expected {expected:.3g}x: not faster")
    elif risk >= plan.risk:
        reasons.insert(0, f"risk of being more than {plan.tolerance:.0%} slower "
                          f"{100 * risk:.1f} % is not below {100 * plan.risk:g} %")  # fmt: skip
    faster = post.gain(0.0)  # the probability of being faster at all
    sure = 1 - plan.risk / looks
    if expected > 1.0 and faster < sure:
        reasons.insert(0, f"faster than the defaults with probability {100 * faster:.1f} % "
                          f"only (below {100 * sure:.3g} %)")  # fmt: skip
    accepted = bayes.acceptable(post, plan.risk, plan.tolerance, risk, sure) and runs >= MIN_RUNS
    return Judgement(expected, interval, risk, split, accepted, "; ".join(reasons))


def say(j: Judgement, tolerance: float) -> str:
    """The verdict's figures in words."""
    low, high = j.interval
    return (
        f"expected {j.expected:.3g}x ({round(100 * bayes.LEVEL)} % interval {low:.3g}-"
        f"{high:.3g}); risk of being more than {tolerance:.0%} slower: {100 * j.risk:.1f} %"
    )


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
            arms.append(Arm(r.number, dict(r.config), runs))
    return arms


def _stream(view: StudyView) -> list[tuple[int, float]]:
    """The runs of the defaults so far: the reference's and the controls'."""
    return [
        (run.seq, run.value)
        for r in view.records
        if r.is_defaults
        for run in r.runs
        if run.value is not None and run.seq is not None
    ]


def _scale(arms: Sequence[Arm], levels: Levels) -> float:
    """The noise of one run's log ratio (:func:`commtune.bayes.noise_scale`)."""
    return bayes.noise_scale({i: a.logs(levels) for i, a in enumerate(arms)}, levels.values())


def _fit(arms: Sequence[Arm], levels: Levels, scale: float) -> None:
    posts = bayes.fit({i: a.logs(levels) for i, a in enumerate(arms)}, scale, levels.slow)
    for i, a in enumerate(arms):
        a.posterior = posts.get(i)


def _open(contenders: Sequence[Arm], levels: Levels, plan: Plan) -> bool:
    """Whether the decision is still open: ``contenders`` best first by expected speedup."""
    if not contenders:
        return False
    leader = contenders[0]
    assert leader.posterior is not None
    if all(a.posterior.gain(plan.tolerance) < plan.risk for a in contenders):  # type: ignore[union-attr]
        return False  # nothing is likely to be worth setting
    accepted = judge(leader, levels, plan, _looks(contenders)).accepted
    return (
        not accepted
        or any(
            a.posterior.above(leader.posterior, plan.tolerance) >= CLEAR  # type: ignore[union-attr]
            for a in contenders[1:]
        )
    )


def _looks(arms: Sequence[Arm]) -> int:
    """The arms the duel measured: each was a chance to accept one by luck."""
    return max(1, sum(1 for a in arms if a.rounds))


def _pick(contenders: Sequence[Arm], levels: Levels, rng: np.random.Generator) -> Arm:
    """The leader while it has fewer than ``MIN_RUNS`` runs (nothing is handed back on
    fewer); then top-two Thompson sampling: the arm a posterior draw calls best, or, in
    ``1 - TOP_TWO`` of the rounds, the one a further draw calls best instead."""
    leader = contenders[0]
    if len(leader.logs(levels)) < MIN_RUNS:
        return leader

    def best() -> Arm:
        return max(contenders, key=lambda a: a.posterior.draw(rng))  # type: ignore[union-attr]

    first = best()
    if len(contenders) == 1 or rng.random() < TOP_TWO:
        return first
    for _ in range(20):
        other = best()
        if other is not first:
            return other
    return first


def verdict(
    study: optuna.Study, executor: Executor, timeout: float, ui: Progress, plan: Plan
) -> Acceptance | None:
    """The study's verdict by ``plan.gate``: this module's (``risk``) or the strict
    confirmation's (``tune._confirm``); stored. None where ``--confirm 0`` asks for none."""
    if plan.gate != "risk":
        return confirm(study, executor, timeout, ui, plan)
    if plan.confirm <= 0:
        return None
    return decide(study, executor, timeout, ui, plan)


def decide(
    study: optuna.Study, executor: Executor, timeout: float, ui: Progress, plan: Plan
) -> Acceptance | None:
    """The verdict of the study (see the module docstring), stored."""
    view = StudyView(study)
    ref = view.reference()
    if ref is None or ref.value is None:
        return None
    stored = view.verdict()
    if stored and stored.source is Source.SEARCH:
        return stored
    knobs = knobs_of(view)
    defaults = {k: knob.default for k, knob in knobs.items()} if knobs is not None else None
    arms = _arms(view, defaults)
    if not arms:
        return None
    levels = Levels(_stream(view))
    default: dict[int, float] = {}  # duel round -> the defaults' run
    default_others: dict[int, dict[str, float | None]] = {}  # and its further objectives
    seq = view.runs_spent()
    room = None if plan.max_runs is None else plan.max_runs - seq
    rounds = UNBOUNDED_ROUNDS if room is None else max(0, room // 2)
    rng = np.random.default_rng(plan.seed if plan.seed is not None else 0)
    scale = _scale(arms, levels)
    _fit(arms, levels, scale)
    with ui.progress("deciding: the contenders against the defaults", 2 * rounds) as bar:
        for i in range(rounds):
            contenders = sorted(
                (a for a in arms if not a.failure),
                key=lambda a: -a.posterior.expected(),  # type: ignore[union-attr]
            )[:CONTENDERS]
            if not _open(contenders, levels, plan):
                break
            arm = _pick(contenders, levels, rng)
            pair: list[Arm | None] = [None, arm] if i % 2 == 0 else [arm, None]
            for which in pair:
                run = executor.run(None if which is None else which.config, timeout)
                seq += 1
                bar.advance()
                if run.value is None:  # a failed run is no evidence; its arm is out
                    if which is not None:
                        which.failure = f"failed when run again: {run.failure}"
                    continue
                if which is None:
                    default[i] = run.value
                    default_others[i] = dict(run.secondary)
                    levels.add(seq, run.value)
                else:
                    which.rounds[i] = (seq, run.value)
                    which.others[i] = dict(run.secondary)
            scale = _scale(arms, levels)
            _fit(arms, levels, scale)
    objectives = {id(a): compare_others(default_others, a.others) for a in arms}
    acc = _verdict(arms, levels, default, plan, len(view.ran()), scale, objectives)
    acc = without_defaults(acc, view)
    set_acceptance(study, acc)
    return acc


def _verdict(
    arms: list[Arm],
    levels: Levels,
    default: dict[int, float],
    plan: Plan,
    n_measured: int,
    scale: float,
    objectives: dict[int, dict[str, Any]],
) -> Acceptance:
    """The arm handed back: the one of highest expected speedup among those the rule
    accepts, else the leader (not accepted: the defaults are kept), with its figures."""
    ok = [a for a in arms if not a.failure and a.posterior is not None]
    judged = {id(a): judge(a, levels, plan, _looks(arms)) for a in ok}
    passing = [a for a in ok if judged[id(a)].accepted]
    pool = passing or ok or arms
    winner = max(pool, key=lambda a: a.posterior.expected() if a.posterior else 0.0)
    extra: dict[str, Any] = {
        "gate": "risk",
        "tolerance": plan.tolerance,
        "risk_limit": plan.risk,
        "noise_scale": scale,
        "candidates": [
            _listed(a, judged.get(id(a)), levels, objectives[id(a)])
            for a in arms
            if a.rounds or a.failure or a is winner
        ],
        "statistic": plan.statistic,
        "rounds": list(default),
        "arms": len(arms),
    }
    j = judged.get(id(winner))
    if j is None:  # every arm failed when run again
        failures = "; ".join(f"trial {a.trial} {a.failure}" for a in arms if a.failure)
        return Acceptance(Source.SEARCH, dict(winner.config), False, failures,
                          trial=winner.trial, measured_trials=n_measured,
                          default_values=list(default.values()), extra=extra)  # fmt: skip
    assert winner.posterior is not None
    extra.update(
        objectives=objectives[id(winner)],
        risk=j.risk,
        level=bayes.LEVEL,
        evidence_runs=len(winner.logs(levels)),
        search_runs=len(winner.search),
        posterior=winner.posterior.curve(),
        said=say(j, plan.tolerance),
        clusters=[{"runs": n, "median": m} for n, m in j.clusters] if len(j.clusters) == 2 else [],
    )
    both = [i for i in winner.rounds if i in default]
    if both:  # the duel's own rounds: throughput
        extra["mean_speedup"] = sum(default[i] for i in both) / sum(
            winner.rounds[i][1] for i in both
        )
    return Acceptance(
        Source.SEARCH,
        dict(winner.config),
        j.accepted,
        "" if j.accepted else j.reason,
        speedup=j.expected,
        ci=j.interval,
        trial=winner.trial,
        measured_trials=n_measured,
        default_values=list(default.values()),
        best_values=[v for _, v in winner.rounds.values()],
        extra=extra,
    )


def _listed(
    arm: Arm, j: Judgement | None, levels: Levels, objectives: dict[str, Any]
) -> dict[str, Any]:
    return {
        "trial": arm.trial,
        "params": arm.config,
        "values": [v for _, v in arm.rounds.values()],
        "rounds": list(arm.rounds),
        "search_runs": len(arm.search),
        "failure": arm.failure,
        "speedup": j.expected if j else None,
        "ci": list(j.interval) if j else None,
        "p_value": None,
        "risk": j.risk if j else None,
        "faster": bool(j and j.accepted),
        "objectives": objectives,
        "dropped": None,
        "key": config_key(arm.config),
        "evidence_runs": len(arm.logs(levels)),
    }
