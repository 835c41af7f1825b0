"""--gate risk: the verdict (tune/_decide.py, commtune.rule), its contracts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np
import optuna
import pytest

from commtune import rule
from commtune.errors import UsageError
from commtune.knobs import Dimension, Knob, KnobType, Space, Value
from commtune.progress import Silent
from commtune.study import Acceptance, Plan, StudyView
from commtune.trial import Executor, RunRecord
from commtune.tune import Context, Target, open_study, run_reference, search, verdict

KNOB = "algo"
CHOICES = ("a", "b", "c", "d", "e", "f")


class Machine(Executor):
    """Runs nothing: ``cost(choice, n)`` (n: that choice's run so far) times 1 + ``noise``
    x a seeded normal draw; None: the run fails."""

    def __init__(self, cost: Callable[[str, int], float | None], noise: float, seed: int):
        self.cost = cost
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        self.seen: dict[str, int] = {}
        self.calls = 0

    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        self.calls += 1
        choice = str((config or {}).get(KNOB, "defaults"))
        n = self.seen[choice] = self.seen.get(choice, 0) + 1
        value = self.cost(choice, n)
        if value is None:
            return RunRecord(None, 0.0, 1, "exit status 1")
        value *= max(0.2, 1 + self.noise * float(self.rng.standard_normal()))
        # a second objective: memory, twice the defaults' for every other configuration
        memory = 100.0 if choice == "defaults" else 200.0
        return RunRecord(value, value, 0, secondary={"memory": memory})


def study_of(
    cost: Callable[[str, int], float | None],
    seed: int,
    noise: float = 0.05,
    space: Space | None = None,
    **kw: object,
) -> tuple[Acceptance | None, optuna.Study, Machine]:
    knob = Knob(KNOB, "synthetic", KnobType.CATEGORICAL, "a", KNOB, "ALGO", (), choices=CHOICES)
    space = space or Space("synthetic", (Dimension(knob),))
    settings: dict[str, object] = {"strategy": "grid", "trials": 20, "repeats": 2,
                                   "seed": seed, "max_runs": 30, **kw}  # fmt: skip
    plan = Plan(**settings)  # type: ignore[arg-type]
    target = Target.of("v", ["x"], space, plan)
    study = open_study(optuna.storages.InMemoryStorage(), target)
    machine = Machine(cost, noise, seed)
    ctx = Context.solo(study, target, machine, Silent(), 60.0)
    run_reference(ctx)
    search(ctx)
    return verdict(study, machine, 60.0, Silent(), plan), study, machine


def test_a_clear_winner_is_accepted_with_its_figures_in_words() -> None:
    costs = {"a": 1.0, "b": 1.1, "c": 0.6, "d": 1.3, "e": 1.05, "f": 0.98}
    acc, study, machine = study_of(lambda c, n: costs.get(c, 1.0), seed=3)
    assert acc is not None and acc.accepted, acc
    assert acc.params == {KNOB: "c"}
    assert acc.speedup is not None and 1.4 < acc.speedup < 1.9
    low, high = acc.ci  # type: ignore[misc]
    assert low < acc.speedup < high
    # handed back on fresh runs only, below the share of the risk its look may spend
    assert acc.p_value is not None and acc.p_value <= acc.finding.share <= 0.05
    assert acc.finding.evidence_runs == len(acc.best_values) >= 1
    said = acc.finding.said
    assert said.startswith(f"{acc.speedup:.3g}x (90 % interval")
    assert "counted 2% faster, it wins" in said and "this look may spend" in said
    # every run of the study is within the bound: the search's, its controls', the duel's
    assert StudyView(study).runs_spent(acc) == machine.calls <= 30
    # the further objective, compared in the same rounds as the time: twice the memory
    memory = acc.finding.objectives["memory"]
    assert (memory["default"], memory["candidate"]) == (100.0, 200.0)
    assert memory["improvement"] == pytest.approx(0.5) and not memory["better"]
    # --json's figures are those of the configuration it hands back
    from commtune.tune import summarize

    out = summarize(study, acc).to_json()
    assert out["best_params"] == out["accepted_params"] == acc.params
    assert out["speedup"] == out["expected"] == acc.speedup
    assert out["interval"] == list(acc.ci) and out["p_value"] == acc.p_value


@pytest.mark.parametrize("noise", [0.03, 0.1, 0.2])
def test_configurations_slower_than_the_defaults_are_handed_back_at_most_at_the_stated_risk(
    noise: float,
) -> None:
    """What ``--risk`` bounds: every configuration 4 % slower than the defaults (beyond the
    2 % tolerance); of 60 seeded studies at 3, 10 and 20 % noise, no more hand one back than
    the stated 5 % allows by chance (the binomial's 99.5 % quantile: 8; 3 seen at most).
    Spending the whole risk at every pair instead hands back more."""
    from scipy.stats import binom

    accepted = 0
    for seed in range(60):
        acc, _, _ = study_of(lambda c, n: 1.0 if c == "defaults" else 1.04, seed=seed,
                             noise=noise)  # fmt: skip
        accepted += bool(acc is not None and acc.accepted)
    assert accepted <= binom.ppf(0.995, 60, 0.05)


def test_a_configuration_equal_to_the_defaults_by_value_is_not_an_arm() -> None:
    """MPICH's allreduce algorithm at ``auto``, its default: measured in the search (and
    lucky there), it is the defaults under another name, never a candidate."""
    from commtune.knobs import space_from_json

    global KNOB  # noqa: PLW0603 - the machine reads the knob's name
    saved, KNOB = KNOB, "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"
    try:
        space = space_from_json("mpich", [{"knob": KNOB, "values": None}])
        acc, _, _ = study_of(lambda c, n: 0.5 if c == "auto" else 1.2 if c != "defaults"
                             else 1.0, seed=1, space=space)  # fmt: skip
    finally:
        KNOB = saved
    assert acc is None or all(c["params"].get(KNOB) != "auto" for c in acc.candidates)
    assert acc is None or not acc.accepted


def test_a_bimodal_configuration_is_refused_with_its_clusters() -> None:
    """'c' runs at 0.6 or at 1.6 of the defaults' time, turn about: half of a user's runs
    would be 60 % slower."""
    costs = {"defaults": 1.0, "a": 1.0, "b": 1.2, "d": 1.3, "e": 1.25, "f": 1.2}

    def cost(c: str, n: int) -> float:
        return (0.6 if n % 2 else 1.6) if c == "c" else costs[c]

    acc, _, _ = study_of(cost, seed=2, noise=0.02)
    assert acc is not None and not acc.accepted
    if acc.params == {KNOB: "c"}:  # tested: half its runs lose every pair
        assert acc.p_value is not None and acc.p_value > acc.finding.share


def test_a_run_that_fails_is_never_evidence() -> None:
    """'c' is fast once, then fails whenever it is run again: it is out of the decision,
    and its failure is said."""
    costs = {"defaults": 1.0, "a": 1.0, "b": 1.2, "d": 1.3, "e": 1.25, "f": 1.2}

    def cost(c: str, n: int) -> float | None:
        if c == "c":
            return 0.5 if n == 1 else None
        return costs[c]

    acc, study, _ = study_of(cost, seed=4)
    assert acc is None or not acc.accepted or acc.params != {KNOB: "c"}  # never handed back
    listed = [c for c in (acc.candidates if acc else []) if c["params"] == {KNOB: "c"}]
    if listed:  # failed in the duel: out, with its reason
        assert listed[0]["failure"].startswith("failed when run again")
    else:  # failed in the search: its trial failed, and it was never an arm
        (trial,) = [t for t in StudyView(study).known().values() if t.config == {KNOB: "c"}]
        assert trial.failed


def test_the_strict_gate_is_still_there() -> None:
    costs = {"a": 1.0, "b": 1.1, "c": 0.6, "d": 1.3, "e": 1.05, "f": 0.98}
    acc, _, _ = study_of(lambda c, n: costs.get(c, 1.0), seed=3, gate="strict", confirm=5)
    assert acc is not None and acc.gate is None
    assert acc.p_value is not None  # the signed-rank test's


def test_the_stale_check_judges_a_risk_verdict_by_the_same_rule() -> None:
    """``recheck`` with the risk gate's rule: a configuration 0.6x the defaults' time is
    still faster, with the expected speedup and its interval; one 10 % slower than the
    defaults is no longer worth setting, decided before the last round (the coins seeded:
    the outcome is the rule's, not the order's luck)."""
    from commtune.tune import NO_LONGER_FASTER, STILL_FASTER, recheck

    fast = Machine(lambda c, n: 0.6 if c == "c" else 1.0, 0.03, seed=5)
    verdict_, cmp, rounds, runs, decided = recheck(
        fast, {KNOB: "c"}, 60.0, Silent(), rule=(0.05, 0.02, 0.01), seed=1
    )
    assert (verdict_, decided) == (STILL_FASTER, True)
    assert cmp is not None and cmp.interval[0] < cmp.speedup < cmp.interval[1]
    assert cmp.speedup == pytest.approx(1 / 0.6, rel=0.05)
    assert runs == 2 * rounds == fast.calls
    slower = Machine(lambda c, n: 1.1 if c == "c" else 1.0, 0.03, seed=6)
    verdict_, cmp, rounds, _, decided = recheck(
        slower, {KNOB: "c"}, 60.0, Silent(), rule=(0.05, 0.02, 0.01), seed=1
    )
    assert (verdict_, decided) == (NO_LONGER_FASTER, True)
    assert rounds < 10


def _wide(choices: int) -> Space:
    """One knob of ``choices`` values, the first its default."""
    names = tuple(f"v{i}" for i in range(choices))
    knob = Knob(KNOB, "synthetic", KnobType.CATEGORICAL, names[0], KNOB, "ALGO", (),
                choices=names)  # fmt: skip
    return Space("synthetic", (Dimension(knob),))


def _bimodal_defaults(c: str, n: int) -> float:
    """The issue's bandwidth table: the defaults' runs in two clusters (1.20-1.28 s and
    1.36-1.55 s, turn about), a dozen configurations 2.2-2.7x faster in every run, close
    to each other (what makes a duel spread its runs among them)."""
    if c in ("defaults", "v0"):
        return 1.24 if n % 2 else 1.45
    return 0.5 + 0.05 * (int(c[1:]) % 4) / 3


def test_a_dozen_arms_all_twice_as_fast_in_every_run_are_accepted() -> None:
    """Issue 47 (1): a 2x answer is never lost to bookkeeping: whatever the duel did with
    its runs, one of the arms, every run of which beats every run of the defaults by 2x,
    is handed back, in every seed, at 16 and 20 runs (TPE's search). Before (the run floor
    for every arm, top-two sampling spreading the duel) 14 of these 40 studies kept the
    defaults ("2 run(s): fewer than 4")."""
    for seed, max_runs in [(s, m) for s in range(20) for m in (16, 20)]:
        acc, _, _ = study_of(_bimodal_defaults, seed=seed, noise=0.05, space=_wide(13),
                             strategy="tpe", max_runs=max_runs)  # fmt: skip
        assert acc is not None and acc.accepted, (seed, acc and acc.reason)
        assert acc.speedup is not None and acc.speedup > 1.8


def test_a_lone_fast_arm_among_slow_ones_gets_the_duels_runs() -> None:
    """One configuration 7 % faster than the defaults among four 15-20 % slower: its one
    search run, shrunk toward the slow majority, reads as no faster (the winner's curse
    guarded against), but its own run says it may be; the duel runs it again until its own
    runs outweigh the pull, and it is accepted. Before, the shrunk posteriors called every
    arm futile and the duel never ran: 4 of 20 studies accepted it (now 16)."""
    costs = {"b": 1.15, "c": 0.93, "d": 1.2, "e": 1.15, "f": 1.18}
    answers = []
    for seed in range(20):
        acc, _, _ = study_of(lambda c, n: costs.get(c, 1.0), seed=seed, noise=0.04)
        assert acc is not None
        answers.append(acc.params.get(KNOB) if acc.accepted else None)
    # never one more than 2 % slower (the defaults' own value under another name, "a", is
    # not: the promise allows it, and its claim of gain is the estimate's)
    assert set(answers) <= {"c", "a", None}
    assert answers.count("c") >= 14, answers


@pytest.mark.parametrize("risk", [0.01, 0.05, 0.2, 0.5])
def test_the_users_risk_reaches_the_decision(risk: float) -> None:
    """The same pairs pass at one risk and not at another: seven pairs of runs, the
    configuration (counted 2 % faster) winning six, losing the pair of the second smallest
    difference: 3 of the 128 sign patterns do as well, a chance of 2.3 % for one 2 % slower.
    It passes where its one look may spend more than that (the whole risk: in 7 pairs no
    second configuration could pass)."""
    defaults = [1.0, 1.06, 0.97, 1.03, 0.99, 1.02, 1.0]
    config = [0.93, 0.95, 0.9, 1.06, 1.003, 0.94, 0.91]
    limit = rule.limit_at(rule.looks(risk, 1, 7, 7), 7)
    t = rule.test(defaults, config, limit=limit, tolerance=0.02, min_gain=0.01)
    assert t.won == 6 and t.p == pytest.approx(3 / 128)
    assert t.passed is (limit >= t.p) is (risk >= 0.05)


def test_no_gain_below_the_minimum_worthwhile_one_is_proposed() -> None:
    """--min-gain: configurations that do nothing (3 % noise, 20 seeded studies) are never
    handed back with a claim of gain when the user says a gain below 5 % is not worth a
    change; an arm truly 10 % faster still is."""
    for seed in range(20):
        acc, _, _ = study_of(lambda c, n: 1.0, seed=seed, noise=0.03, min_gain=0.05)
        assert acc is None or not acc.accepted, (seed, acc.speedup)
        assert acc is None or acc.reason  # and says why
    costs = {"defaults": 1.0, "a": 1.0, "b": 1.0, "c": 1 / 1.1, "d": 1.0, "e": 1.0, "f": 1.0}
    acc, _, _ = study_of(lambda c, n: costs[c], seed=1, noise=0.03, min_gain=0.05)
    assert acc is not None and acc.accepted and acc.params == {KNOB: "c"}


def test_no_gain_is_claimed_from_the_defaults_fast_mode() -> None:
    """Where every configuration runs as the defaults do on a machine of two modes (a third
    of all runs twice as fast), none is credited with the fast mode's 2x: at most the
    stated 5 % of 20 studies hand anything back, and none claims more than 1.15x."""
    null = [study_of(lambda c, n: 1.0 if n % 3 == 2 else 2.0, seed=seed, noise=0.03)[0]
            for seed in range(20)]  # fmt: skip
    claims = [a.speedup for a in null if a is not None and a.accepted]
    assert len(claims) <= 1 and all(s is not None and s < 1.15 for s in claims), claims


def test_shares_are_written_one_way_for_every_flag() -> None:
    """--risk, --tolerance and --min-gain read a fraction or a percentage with its sign
    alike (--min-gain was in percent: 5 meant 5 %)."""
    from commtune.cli import build_parser
    from commtune.cli.tuning import plan_of

    args = build_parser().parse_args(
        ["tune", "--risk", "10%", "--tolerance", "0.03", "--min-gain", "5%"]
    )
    plan = plan_of(args)
    assert (plan.risk, plan.tolerance, plan.min_gain) == pytest.approx((0.1, 0.03, 0.05))


def test_a_study_that_keeps_the_defaults_says_why_and_what_more_runs_would_do() -> None:
    """One configuration 7 % faster among slower ones and one as fast as the defaults, 6 %
    noise, 18 runs: whatever the seed, a study either hands back one of those two (nothing
    slower than the defaults: the promise; which of the two is luck) or keeps the defaults
    saying why in one reason, and, where a configuration was tested to the end of its runs,
    how many more runs like these would decide (a number in --json's ``more_runs``; 30
    seeds, so that some study ends that way)."""
    costs = {"defaults": 1.0, "a": 1.0, "b": 1.15, "c": 0.93, "d": 1.2, "e": 1.15, "f": 1.15}
    told = 0
    for seed in range(30):
        acc, _, machine = study_of(lambda c, n: costs[c], seed=seed, noise=0.06, max_runs=18)
        assert acc is not None and machine.calls <= 18
        if acc.accepted:
            assert costs[str(acc.params[KNOB])] <= costs["defaults"], acc.params
            continue
        assert acc.reason and "\n" not in acc.reason
        more = acc.finding.more_runs
        if "ended without passing" in acc.reason and more is not None:
            assert f"about {more} more runs" in acc.reason and more > 0
            told += 1
    assert told >= 1


def test_no_study_stops_with_runs_unspent_while_its_verdict_is_open() -> None:
    """Issue 75 (3): a configuration 8 % faster at 6 % noise, 20 seeded studies of 30 runs:
    every study that keeps the defaults has spent its runs, or none of its tested
    configurations' pairs could still pass at a look the runs left reach (a pair lost by
    chance does not drop it: before, three pairs that showed it no faster did), or no
    configuration the search measured beat the defaults (no verdict at all)."""
    costs = {"defaults": 1.0, "a": 1.0, "b": 1.1, "c": 0.92, "d": 1.15, "e": 1.2, "f": 1.1}
    open_ends = []
    for seed in range(20):
        acc, _, machine = study_of(lambda c, n: costs[c], seed=seed, noise=0.06)
        assert acc is not None
        if acc.accepted or machine.calls == 30 or "beat the median" in acc.reason:
            continue
        pairs_left = (30 - machine.calls) // 2
        for tested in [c for c in acc.candidates if c["tested"]]:
            mine = len(tested["values"])  # a look its pairs could still reach, and pass at
            schedule = [(n, share) for n, share in tested["looks"] if mine < n <= mine + pairs_left]
            if rule.could_pass(schedule, tested["defaults"], tested["values"], 0.02):
                open_ends.append((seed, acc.reason))
    assert not open_ends, open_ends


def test_a_search_that_found_nothing_faster_goes_on_into_the_verdicts_runs() -> None:
    """Issue 75 (3): 12 configurations 20 % slower than the defaults and one 25 % faster,
    30 runs: where the search's share of them (``Plan.explore``) ends before it measured the
    fast one, nothing beats the defaults and the verdict would test nothing, its runs
    unspent. The search goes on into them, and every seed finds the fast one and hands it
    back (with the search stopped at its share: 4 of these 10 kept the defaults in 10 runs)."""

    def cost(c: str, n: int) -> float:
        return 1.0 if c == "defaults" else 0.8 if c == "v12" else 1.2

    for seed in range(10):
        acc, _, _ = study_of(cost, seed=seed, noise=0.03, space=_wide(13), max_runs=30)
        assert acc is not None and acc.accepted, (seed, acc and acc.reason)
        assert acc.params == {KNOB: "v12"}


def test_a_study_that_asks_no_verdict_keeps_no_runs_for_one() -> None:
    """``--confirm 0``: no verdict runs, so none are kept for it, in the check of
    ``--max-runs`` before anything runs, in the search's limit and in what the verdict needs."""
    from commtune.service._check import check

    bare = Plan(strategy="grid", max_runs=3, repeats=2, confirm=0)
    assert check(bare).max_runs == 3
    assert bare.deciding_runs() == 0 and bare.search_limit() == 3
    with pytest.raises(UsageError, match="--max-runs 3 leaves no run to decide"):
        check(replace(bare, confirm=3))


def test_the_search_best_two_are_raced_beside_the_defaults_then_the_one_ahead_alone() -> None:
    """Issue 75: the verdict races the search's best two in rounds with the defaults (each
    round's three runs in an order drawn at random), then the one ahead goes on alone. Each
    may spend half the risk, at looks set before its first run; the one behind is dropped
    after the race's rounds, saying why; the defaults' runs of the shared rounds are one run
    each, counted once."""
    costs = {"a": 1.0, "b": 1.1, "c": 0.6, "d": 1.3, "e": 1.05, "f": 0.9}
    for seed in range(3):
        acc, study, machine = study_of(lambda c, n: costs.get(c, 1.0), seed=seed, noise=0.03)
        assert acc is not None and acc.accepted and acc.params == {KNOB: "c"}, seed
        raced = [c for c in acc.candidates if c["tested"]]
        assert len(raced) == 2, seed
        for c in raced:  # half the risk each, at looks fixed before its first run
            assert sum(share for _, share in c["looks"]) == pytest.approx(0.05 / 2)
        behind = next(c for c in raced if c["params"] != {KNOB: "c"})
        assert behind["dropped"].startswith("duelled beside") and len(behind["values"]) == 3
        ahead = next(c for c in raced if c["params"] == {KNOB: "c"})
        assert ahead["rounds"][:3] == behind["rounds"] == [0, 1, 2]
        assert ahead["defaults"][:3] == behind["defaults"]  # the same runs of the defaults
        assert StudyView(study).runs_spent(acc) == machine.calls <= 30


def test_where_the_defaults_runs_fall_into_modes_the_best_is_tested_alone() -> None:
    """Where the search's runs of the defaults spread 1.5x or more (a machine whose runs
    fall into modes 2x apart), half the risk is too little: the verdict does not race the
    best two, it tests the best alone with four fifths or all of the risk."""
    costs = {"a": 1.0, "b": 1.1, "c": 0.6, "d": 1.3, "e": 1.05, "f": 0.9}

    def cost(c: str, n: int) -> float:
        return (2.0 if n % 2 else 1.0) if c == "defaults" else costs[c]

    for seed in range(3):
        acc, study, _ = study_of(cost, seed=seed, noise=0.03)
        defaults = [v for r in StudyView(study).records if r.is_defaults for v in r.values()]
        assert max(defaults) / min(defaults) >= 1.5
        assert acc is not None
        tested = [c for c in acc.candidates if c["tested"]]
        assert tested and not any((c["dropped"] or "").startswith("duelled") for c in tested)
        first = min(tested, key=lambda c: c["tested"])
        assert sum(share for _, share in first["looks"]) >= 0.8 * 0.05 - 1e-12


def _two_modes(costs: dict[str, float], modes: np.random.Generator) -> Callable[[str, int], float]:
    """Every run's cost times 1 or 2, by a coin of the machine's own."""
    return lambda c, n: (2.0 if modes.random() < 0.5 else 1.0) * costs.get(c, 1.0)


def test_on_a_machine_with_two_modes_the_pairs_they_split_do_not_decide() -> None:
    """A machine whose every run, of anything, falls into one of two modes 2x apart by a
    seeded coin of its own, and a configuration 12 % faster: the verdict's p-value is the
    rule's with the pairs split by the modes scoring nothing (``rule.split``) on the pairs
    it stored, and it says how many there were; where it passes, the ordinary signed rank
    on the same pairs would not have passed at that look in some of the studies."""
    costs = {"a": 1.0, "b": 1.3, "c": 0.88, "d": 1.4, "e": 1.25, "f": 1.35}
    splits, rescued, tested = 0, 0, 0
    for seed in range(12):
        cost = _two_modes(costs, np.random.default_rng(100 + seed))
        acc, _, _ = study_of(cost, seed=seed, noise=0.02, max_runs=40)
        assert acc is not None
        if not acc.best_values:  # the search's runs of it, in the slow mode, beat nothing
            continue
        tested += 1
        d, c = acc.default_values[-len(acc.best_values) :], acc.best_values
        cut = int(rule.split(d, c, 0.02).sum())
        assert acc.p_value == rule.p_value(d, c, 0.02, modes=True)
        assert (f"{cut} pairs split by the machine's two modes" in acc.finding.said) == (cut > 0)
        splits += cut > 0
        if acc.accepted and rule.p_value(d, c, 0.02) > acc.finding.share:
            rescued += 1
    assert tested >= 6 and splits >= 4 and rescued >= 1, (tested, splits, rescued)
