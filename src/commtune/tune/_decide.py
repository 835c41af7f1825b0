"""The verdict from every run (``--gate risk``, the default): expected gain and bounded risk.

Every configuration the search measured is an arm, and so are the defaults. Each of an
arm's runs is evidence: a search run relative to the control run nearest to it in time, a
duel run relative to the defaults' run made next to it. :mod:`commtune.bayes` turns all of
it into one posterior per configuration, each shrunk toward the study's distribution of
effects, so the one the search picked because its runs looked good is not believed more
than its runs allow (the winner's curse).

The runs left after the search go where the decision is open: each round runs the defaults
and one contender beside each other, in alternating order. Where the runs go is judged on
each arm's own runs (``Arm.hope``: not shrunk toward the others), what is handed back on
the shrunk posterior: a lone configuration 7 % faster among a dozen 15 % slower reads as no
faster after its one search run (it may be a slow one's luck), and the way to know is to
run it again, not to call the decision futile. Until an arm passes the rule the runs go to
one arm, the *champion* (first the arm its own runs call fastest; it keeps the runs until
another arm is expected, both shrunk alike, to be faster by more than ``tolerance``), so
that one arm gathers the evidence one arm with all the runs would have, instead of
near-equal arms sharing it.
Once an arm passes, the rest of the runs improve on it (top-two Thompson sampling among the
contenders) while a challenger is likely (``CLEAR``) to beat it by more than ``tolerance``.
The duel stops as soon as the answer is clear either way, or when the runs are spent; the
decision is then made among all arms on all their evidence.

The rule (:func:`commtune.bayes.acceptable`), at the user's ``risk``:

* the expected speedup clears ``1 + min_gain`` (``--min-gain``: the gain below which a
  change is not worth proposing; the posterior mean is already shrunk for the winner's
  curse), so a configuration no faster than the defaults is not handed back with a claim of
  gain it does not have;
* below a risk of one half: more than ``tolerance`` slower than the defaults with
  probability below ``risk`` (over the arms the duel measured: ``risk / looks``), and
  faster more likely than not. The risk bounds what costs the user, a slower
  configuration; one no faster costs nothing in speed, and ``min_gain`` guards its claim
  (the probability of being faster at ``1 - risk``, the rule before, kept the defaults on
  most tables whose gain is a few per cent at no lower a tail: docs/benchmarks.md). At one
  half, the expected-value decision (the highest expected speedup above ``1 + min_gain``);
* at least ``MIN_RUNS`` runs at a risk of 0 and fewer as the risk grows (one at one half),
  except for an arm whose every run beats every run of the defaults by ``DOMINANT``: a 2x
  answer is never lost to bookkeeping.

A configuration whose runs fall into two clusters, the slower one more than ``tolerance``
slower than the defaults, has at least the share of its runs in that cluster as its risk: a
production run lands in either. A configuration equal to the defaults (every knob at its
library default) is not an arm; a run that fails is never evidence (its arm is out). What
is handed back is the configuration these figures are of.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from commtune import bayes, stats
from commtune.knobs import Value
from commtune.progress import Progress
from commtune.study import (
    Acceptance,
    Plan,
    Source,
    StudyView,
    TrialRecord,
    config_key,
    set_acceptance,
)
from commtune.trial import Executor, repeats_exactly
from commtune.tune._confirm import compare_others, confirm, knobs_of, without_defaults

if TYPE_CHECKING:
    import optuna

TOP_TWO = 0.5  # top-two Thompson sampling: the share of rounds given to the first draw's best
CLEAR = 0.1  # a challenger this likely to beat the leader by the tolerance keeps it open
FUTILE = 0.05  # no contender this likely to be worth setting: the defaults are kept
CONTENDERS = 6  # the arms a duel draws from: the best by expected speedup
PAIR_EVERY = 2  # duel rounds per run of the defaults beside them
UNBOUNDED_ROUNDS = 15  # the duel's rounds when the study has no bound on runs
NEAREST = 3  # the runs of the defaults a run's level is the median of
MIN_RUNS = 4  # the runs an arm needs at a risk of 0 (fewer as the risk grows)
DOMINANT = 2.0  # every run this many times faster than every run of the defaults: no floor


def deterministic(plan: Plan, executor: Executor, reference: TrialRecord) -> bool:
    """Whether the study is run and decided as a deterministic one (a simulation): the plan
    allows it (not ``--assume-noise``) and its runs repeat exactly
    (:func:`commtune.trial.repeats_exactly`)."""
    return plan.exact and repeats_exactly(executor, reference.values())


def min_runs(risk: float) -> int:
    """The runs an arm needs before it is handed back at ``risk``: ``MIN_RUNS`` at 0, one at
    one half (the expected-value decision), in between in proportion."""
    share = min(1.0, risk / bayes.EXPECTED_VALUE)
    return max(1, math.ceil(MIN_RUNS * (1 - share)))


class Levels:
    """The defaults' level at each moment of the study: the median of the ``NEAREST`` runs
    of the defaults nearest in time (the reference's, the controls', the duel's). One run
    of the defaults is as noisy as any run (on these machines some defaults' runs are 2.5x
    their median); three near each other follow a machine's phase and not one run's luck.

    When the defaults' runs fall into two clusters, the larger is their usual mode. Where
    the other is the slower, it is the machine's second mode (:class:`commtune.bayes.SlowMode`,
    which any configuration's runs may land in), and no level is above the usual one's
    median: a configuration is not called faster for beating the defaults' slow runs.
    Where the other is the faster (the defaults' usual runs are the slow ones, a quarter of
    them twice as fast), the level is not capped at it, and it is no mode of the likelihood:
    a configuration twice as fast in four runs of five is twice as fast on the median,
    whatever the defaults' luck; capped, it read as no faster (issue 47, seventh part: a 2x
    table kept the defaults in 18 of 20 studies). Its runs are the Student-t's tail."""

    def __init__(self, stream: Sequence[tuple[int, float]]) -> None:
        self.stream = sorted(stream)
        self._split()

    def _split(self) -> None:
        """The defaults' clusters: the usual (larger) one and the second mode."""
        split = stats.clusters(self.values())
        self.fast: float | None = None  # the cap of the level: the usual mode's median
        self.slow: bayes.SlowMode | None = None  # the second mode, where it is the slower
        self.usual: tuple[float, float] = (0.0, math.inf)  # the usual mode's runs' range
        if len(split) == 2:
            (n_fast, fast), (n_slow, slow) = split
            ordered = sorted(self.values())
            n = n_fast + n_slow
            if n_fast >= n_slow:
                self.fast = fast
                self.slow = bayes.SlowMode(n_slow / n, math.log(slow / fast))
                self.usual = (0.0, ordered[n_fast - 1])
            else:
                self.usual = (ordered[n_fast], math.inf)

    def add(self, seq: int, value: float) -> None:
        bisect.insort(self.stream, (seq, value))
        self._split()

    def at(self, seq: int) -> float | None:
        if not self.stream:
            return None
        level = float(np.median([v for _, v in self.near(seq)]))
        return level if self.fast is None else min(level, self.fast)

    def near(self, seq: int) -> list[tuple[int, float]]:
        """The ``NEAREST`` runs of the defaults nearest to ``seq``."""
        return sorted(self.stream, key=lambda run: abs(run[0] - seq))[:NEAREST]

    def values(self) -> list[float]:
        return [v for _, v in self.stream]

    def quiet(self) -> list[float]:
        """The runs of the usual mode, in time order (all of them in one cluster)."""
        low, high = self.usual
        return [v for _, v in self.stream if low <= v <= high]


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
    # its own runs' word, not shrunk toward the other arms: where the duel's runs go
    hope: bayes.Posterior | None = None

    def logs(self, levels: Levels) -> list[float]:
        """Every run as the log of its ratio to the defaults' level at its moment."""
        out = []
        for seq, value in [*self.search, *self.rounds.values()]:
            level = levels.at(seq)
            if level is not None and level > 0 and value > 0:
                out.append(math.log(value / level))
        return out

    def shared(self, levels: Levels) -> int:
        """The runs of the defaults its runs' levels come from: the error of their mean is
        common to every run of the arm."""
        return len({s for seq, _ in [*self.search, *self.rounds.values()]
                    for s, _ in levels.near(seq)})  # fmt: skip

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
    faster: float = float("nan")  # the probability of being faster than the defaults
    median: float = float("nan")  # the posterior median of the speedup


def judge(arm: Arm, levels: Levels, plan: Plan, looks: int = 1) -> Judgement:
    """The rule (see the module docstring) applied to ``arm``'s posterior and runs."""
    post = arm.posterior
    assert post is not None
    expected, interval = post.expected(), post.interval()
    risk = post.risk(plan.tolerance)
    faster = post.gain(0.0)  # the probability of being faster at all
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
    floor = 1 if _dominant(arm, levels) else min_runs(plan.risk)
    if runs < floor:
        reasons.insert(0, f"{runs} run(s): fewer than {floor}")
    worthwhile = 1.0 + plan.min_gain
    by_expectation = plan.risk >= bayes.EXPECTED_VALUE
    limit = plan.risk / looks  # each arm looked at was a chance to pass by luck
    if expected <= worthwhile:
        reasons.insert(0, f"expected {expected:.3g}x: not faster" if expected <= 1.0 else
                       f"expected {expected:.3g}x: below the worthwhile "
                       f"{100 * plan.min_gain:g} % gain")  # fmt: skip
    elif not by_expectation and risk >= limit:
        over = f" ({100 * plan.risk:g} % over {looks} arms measured)" if looks > 1 else ""
        reasons.insert(0, f"risk of being more than {plan.tolerance:.0%} slower "
                          f"{100 * risk:.1f} % is not below {100 * limit:.3g} %{over}")  # fmt: skip
    elif not by_expectation and faster <= 0.5:
        reasons.insert(0, f"faster than the defaults with probability {100 * faster:.1f} % "
                          "only: not more likely than not")  # fmt: skip
    accepted = (
        bayes.acceptable(post, plan.risk, plan.tolerance, risk, plan.min_gain, limit)
        and runs >= floor
    )
    return Judgement(expected, interval, risk, split, accepted, "; ".join(reasons),
                     faster, post.median())  # fmt: skip


def _dominant(arm: Arm, levels: Levels) -> bool:
    """Whether every run of ``arm`` beats every run of the defaults by ``DOMINANT``: a
    difference no noise of the study makes, whatever the runs' count."""
    mine = [v for _, v in [*arm.search, *arm.rounds.values()]]
    theirs = levels.values()
    return bool(mine and theirs) and max(mine) * DOMINANT <= min(theirs)


def say(j: Judgement, tolerance: float) -> str:
    """The verdict's figures in words. The mean and the probability of being faster point
    the same way for most posteriors; where they do not (a few fast runs lift the mean of a
    configuration that is most likely no faster, or the reverse), the median is said too,
    and which figure the rule used."""
    low, high = j.interval
    text = (
        f"expected {j.expected:.3g}x ({round(100 * bayes.LEVEL)} % interval {low:.3g}-"
        f"{high:.3g}); risk of being more than {tolerance:.0%} slower: {100 * j.risk:.1f} %"
    )
    if math.isnan(j.faster):
        return text
    text += f"; faster than the defaults with probability {100 * j.faster:.1f} %"
    if (j.expected > 1.0) != (j.faster > 0.5):
        text += (
            f" (median {j.median:.3g}x: the mean is "
            f"{'lifted by a few fast' if j.expected > 1.0 else 'lowered by a few slow'} runs; "
            "the rule asks for both)"
        )
    return text


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
    """The noise of one run's log ratio (:func:`commtune.bayes.noise_scale`). Where the
    defaults' runs fall into two clusters, the ratios of successive controls are taken in
    the usual one: a jump between the machine's modes is the mode's (``levels.slow``),
    not one run's noise, and counted as noise it widened every posterior until a
    configuration's three runs 9 % faster read as no faster."""
    return bayes.noise_scale({i: a.logs(levels) for i, a in enumerate(arms)}, levels.quiet())


def _fit(arms: Sequence[Arm], levels: Levels, scale: float) -> None:
    logs: dict[Hashable, Sequence[float]] = {i: a.logs(levels) for i, a in enumerate(arms)}
    shared: dict[Hashable, int] = {i: a.shared(levels) for i, a in enumerate(arms)}
    posts = bayes.fit(logs, scale, levels.slow, shared)
    own = bayes.fit(logs, scale, levels.slow, shared, pooled=False)
    for i, a in enumerate(arms):
        a.posterior, a.hope = posts.get(i), own.get(i)


def _expected(arm: Arm) -> float:
    """The arm's expected speedup on the shrunk posterior: what ranks the arm that would be
    handed back (0 before it has one)."""
    return arm.posterior.expected() if arm.posterior is not None else 0.0


def _open(contenders: Sequence[Arm], passing: Sequence[Arm], plan: Plan) -> bool:
    """Whether the decision is still open: ``contenders`` best first by what their own runs
    say (``Arm.hope``), ``passing`` those of them the rule accepts now."""
    if not contenders:
        return False
    margin = max(plan.tolerance, plan.min_gain)
    if all(a.hope.gain(margin) < FUTILE for a in contenders):  # type: ignore[union-attr]
        return False  # nothing its own runs call likely to be worth setting
    if not passing:
        return True
    best = max(passing, key=_expected)
    return any(
        a.posterior.above(best.posterior, plan.tolerance) >= CLEAR  # type: ignore[union-attr,arg-type]
        for a in contenders
        if a is not best
    )


def _looks(arms: Sequence[Arm]) -> int:
    """The arms the duel measured: each was a chance to accept a slower one by luck (the
    rule asks for a risk below ``risk / looks``; measured against no correction in
    docs/benchmarks.md, issue 47, sixth part: at a risk of 5 % the tail fell from 7 to 2 of
    920 studies at the same gain captured)."""
    return max(1, sum(1 for a in arms if a.rounds))


def _pick(
    contenders: Sequence[Arm],
    passing: Sequence[Arm],
    champion: Arm | None,
    plan: Plan,
    rng: np.random.Generator,
) -> Arm:
    """The arm of the next round. Until one passes the rule: the champion, first the arm
    its own runs call fastest (``contenders[0]``), kept while no contender is expected to
    be faster than it by more than the tolerance (both posteriors shrunk alike: one lucky
    run of another does not take the runs away), else that contender. Then top-two
    Thompson sampling: the arm a posterior draw calls best, or, in ``1 - TOP_TWO`` of the
    rounds, the one a further draw calls best instead."""
    if not passing:
        if champion is None or champion.failure or all(a is not champion for a in contenders):
            return contenders[0]
        leader = max(contenders, key=_expected)
        ahead = _expected(leader) > _expected(champion) * (1 + plan.tolerance)
        return leader if ahead else champion

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
    if deterministic(plan, executor, ref):
        exact = _exact(view, arms, executor, timeout, plan)
        if exact is not None:
            exact = without_defaults(exact, view)
            set_acceptance(study, exact)
            return exact
        ui.warn("the best configuration gave another value when run again: the runs are not "
                "deterministic after all; deciding on their noise")  # fmt: skip
    levels = Levels(_stream(view))
    default: dict[int, float] = {}  # duel round -> the defaults' run
    default_others: dict[int, dict[str, float | None]] = {}  # and its further objectives
    seq = view.runs_spent()
    room = None if plan.max_runs is None else plan.max_runs - seq
    left = 2 * UNBOUNDED_ROUNDS if room is None else max(0, room)
    rng = np.random.default_rng(plan.seed if plan.seed is not None else 0)
    scale = _scale(arms, levels)
    _fit(arms, levels, scale)
    champion: Arm | None = None
    with ui.progress("deciding: the contenders against the defaults", left) as bar:
        i = 0
        while left > 0:
            contenders = sorted(
                (a for a in arms if not a.failure),
                key=lambda a: -a.hope.expected(),  # type: ignore[union-attr]
            )[:CONTENDERS]
            looks = _looks(arms)  # the rule judged once a round, as the verdict judges
            passing = [a for a in contenders if judge(a, levels, plan, looks).accepted]
            if not _open(contenders, passing, plan):
                break
            arm = _pick(contenders, passing, champion, plan, rng)
            # the champion is the arm that would be handed back: a passing arm that falls
            # back below the rule keeps the runs, not the one top-two sampling tried last
            champion = max(passing, key=_expected) if passing else arm
            pair: list[Arm | None] = [arm]
            if i % PAIR_EVERY == 0 and left >= 2:  # the defaults beside it, order alternating
                pair = [None, arm] if (i // PAIR_EVERY) % 2 == 0 else [arm, None]
            left -= len(pair)
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
            i += 1
    objectives = {id(a): compare_others(default_others, a.others) for a in arms}
    acc = _verdict(arms, levels, default, plan, len(view.ran()), scale, objectives)
    acc = without_defaults(acc, view)
    set_acceptance(study, acc)
    return acc


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
    extra: dict[str, Any] = {"gate": "exact", "min_gain": plan.min_gain, "arms": len(arms),
                             "statistic": plan.statistic}  # fmt: skip
    kept = Acceptance(Source.SEARCH, dict(best.config), False, trial=best.trial,
                      measured_trials=len(view.ran()), extra=extra)  # fmt: skip
    if speedup < 1 + plan.min_gain:
        said = (f"no configuration is faster than the defaults by {plan.min_gain:.0%} (the "
                f"fastest: {speedup:.4g}x, deterministic runs)")  # fmt: skip
        return replace(kept, reason=said)
    run = executor.run(best.config, timeout)
    if run.value is None:
        return replace(kept, reason=f"trial {best.trial} failed when run again: {run.failure}")
    if not stats.exact([value, run.value]):
        return None
    extra["said"] = (f"every run of the defaults gave {base:.6g}, trial {best.trial} gave "
                     f"{value:.6g} in both of its runs: {speedup:.4g}x, deterministic")  # fmt: skip
    return replace(kept, accepted=True, speedup=speedup, ci=(speedup, speedup),
                   best_values=[run.value])  # fmt: skip


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
    winner = max(pool, key=_expected)
    extra: dict[str, Any] = {
        "gate": "risk",
        "tolerance": plan.tolerance,
        "risk_limit": plan.risk,
        "min_gain": plan.min_gain,
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
        faster=j.faster,
        median=j.median,
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
