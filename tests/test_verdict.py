"""--gate risk: the verdict from every run (tune/_decide.py, commtune.bayes), its contracts."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import optuna
import pytest

from commtune import bayes
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
    assert acc.extra["risk"] < 0.05
    assert acc.extra["evidence_runs"] >= 4  # never handed back on fewer
    said = acc.extra["said"]
    assert said.startswith(f"expected {acc.speedup:.3g}x (90 % interval")
    assert "risk of being more than 2% slower" in said
    # every run of the study is within the bound: the search's, its controls', the duel's
    assert StudyView(study).runs_spent(acc) == machine.calls <= 30
    # the further objective, compared in the same rounds as the time: twice the memory
    memory = acc.extra["objectives"]["memory"]
    assert (memory["default"], memory["candidate"]) == (100.0, 200.0)
    assert memory["improvement"] == pytest.approx(0.5) and not memory["better"]
    # --json's figures are those of the configuration it hands back
    from commtune.tune import summarize

    out = summarize(study, acc).to_json()
    assert out["best_params"] == out["accepted_params"] == acc.params
    assert out["speedup"] == out["expected"] == acc.speedup
    assert out["interval"] == list(acc.ci) and out["risk"] == acc.extra["risk"]


def test_configurations_slower_than_the_defaults_are_handed_back_at_most_at_the_stated_risk() -> (
    None
):
    """What ``--risk`` bounds is what costs the user: every configuration 4 % slower than
    the defaults (beyond the 2 % tolerance), 10 % noise; 40 seeded studies, at most 4 hand
    one back (these seeds: 2). Not the stated risk's proof: over 400 seeds 38 do (9.5 % at a
    stated 5 %), the rule's known defect at a noise this far above the effect; at 5 % noise
    10 of 200 (``benchmarks/risk_calibration.py``, the tuner's own design: 19 of 200 at
    10 %, 8 at 5 %, 0 at 3 %; docs/benchmarks.md, issue 47, ninth part). The bound catches
    what makes it worse: without the tail condition 9 of these 40, without the per-look
    correction 6 (tenth part; the 7 first written here was 204ab10's)."""
    accepted = 0
    for seed in range(40):
        acc, _, _ = study_of(lambda c, n: 1.0 if c == "defaults" else 1.04, seed=seed,
                             noise=0.1)  # fmt: skip
        accepted += bool(acc is not None and acc.accepted)
    assert accepted <= 4


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
    assert acc is None or all(c["params"].get(KNOB) != "auto" for c in acc.extra["candidates"])
    assert acc is None or not acc.accepted


def test_a_bimodal_configuration_is_refused_with_its_clusters() -> None:
    """'c' runs at 0.6 or at 1.6 of the defaults' time, turn about: half of a user's runs
    would be 60 % slower."""
    costs = {"defaults": 1.0, "a": 1.0, "b": 1.2, "d": 1.3, "e": 1.25, "f": 1.2}

    def cost(c: str, n: int) -> float:
        return (0.6 if n % 2 else 1.6) if c == "c" else costs[c]

    acc, _, _ = study_of(cost, seed=2, noise=0.02)
    assert acc is not None and not acc.accepted
    if acc.params == {KNOB: "c"}:  # judged on its clusters
        assert "two clusters" in acc.reason
        assert len(acc.extra["clusters"]) == 2


def test_a_run_that_fails_is_never_evidence() -> None:
    """'c' is fast once, then fails whenever it is run again: it is out of the decision,
    and its failure is said."""
    costs = {"defaults": 1.0, "a": 1.0, "b": 1.2, "d": 1.3, "e": 1.25, "f": 1.2}

    def cost(c: str, n: int) -> float | None:
        if c == "c":
            return 0.5 if n == 1 else None
        return costs[c]

    acc, study, _ = study_of(cost, seed=4)
    assert acc is None or not acc.accepted
    listed = [c for c in (acc.extra["candidates"] if acc else []) if c["params"] == {KNOB: "c"}]
    if listed:  # failed in the duel: out, with its reason
        assert listed[0]["failure"].startswith("failed when run again")
    else:  # failed in the search: its trial failed, and it was never an arm
        (trial,) = [t for t in StudyView(study).known().values() if t.config == {KNOB: "c"}]
        assert trial.failed


def test_the_strict_gate_is_still_there() -> None:
    costs = {"a": 1.0, "b": 1.1, "c": 0.6, "d": 1.3, "e": 1.05, "f": 0.98}
    acc, _, _ = study_of(lambda c, n: costs.get(c, 1.0), seed=3, gate="strict", confirm=5)
    assert acc is not None and "gate" not in acc.extra
    assert acc.p_value is not None  # the signed-rank test's


def test_the_posterior_of_a_lucky_run_is_pulled_back_toward_the_study() -> None:
    """The winner's curse: 30 configurations that do nothing, measured once each; the one
    that looked best is believed less than its run says."""
    rng = np.random.default_rng(0)
    groups = {i: [float(rng.normal(0, 0.1))] for i in range(30)}
    posts = bayes.fit(groups, 0.1)
    lucky = min(groups, key=lambda i: groups[i][0])
    looked = math.exp(-groups[lucky][0])
    assert looked > 1.15
    assert 1.0 <= posts[lucky].expected() < 1 + (looked - 1) / 2
    # ten consistent runs at 1.3x stand on their own
    groups[99] = [math.log(1 / 1.3)] * 10
    assert bayes.fit(groups, 0.1)[99].expected() == pytest.approx(1.3, rel=0.03)


def test_a_lone_pair_posterior_says_risk_and_interval() -> None:
    post = bayes.pair_posterior([1.0] * 8, [0.8] * 8, scale=0.05)
    assert post.expected() == pytest.approx(1.25, rel=0.03)
    assert post.risk(0.02) < 0.01
    low, high = post.interval()
    assert low < 1.25 < high
    slow = bayes.pair_posterior([1.0] * 8, [1.2] * 8, scale=0.05)
    assert slow.risk(0.02) > 0.95
    assert post.above(slow, 0.02) > 0.99 and slow.above(post) < 0.01


def test_the_stale_check_judges_a_risk_verdict_by_the_same_rule() -> None:
    """``recheck`` with the risk gate's rule: a configuration 0.6x the defaults' time is
    still faster, with the expected speedup and its interval; one that runs as the defaults
    do is no longer worth setting, decided before the last round."""
    from commtune.tune import NO_LONGER_FASTER, STILL_FASTER, recheck

    fast = Machine(lambda c, n: 0.6 if c == "c" else 1.0, 0.03, seed=5)
    verdict_, cmp, rounds, runs, decided = recheck(
        fast, {KNOB: "c"}, 60.0, Silent(), rule=(0.05, 0.02, 0.01)
    )
    assert (verdict_, decided) == (STILL_FASTER, True)
    assert cmp is not None and cmp.ci_low < cmp.speedup < cmp.ci_high
    assert cmp.speedup == pytest.approx(1 / 0.6, rel=0.05)
    assert runs == 2 * rounds == fast.calls
    same = Machine(lambda c, n: 1.0, 0.03, seed=6)
    verdict_, cmp, rounds, _, decided = recheck(
        same, {KNOB: "c"}, 60.0, Silent(), rule=(0.05, 0.02, 0.01)
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


def test_one_dominant_run_needs_no_fourth() -> None:
    """The run floor gives way to dominance: an arm with one run 2x faster than every run
    of the defaults is not refused for its count; one only 1.5x faster is."""
    from commtune.tune._decide import Arm, Levels, judge

    levels = Levels([(0, 1.0), (1, 1.05), (3, 0.98), (5, 1.02)])
    plan = Plan(risk=0.05)
    for value, floored in ((0.45, False), (0.66, True)):
        arm = Arm(1, {KNOB: "b"}, [(2, value)])
        arm.posterior = bayes.fit({0: arm.logs(levels), 1: [0.0], 2: [0.01]}, 0.05)[0]
        said = judge(arm, levels, plan).reason
        assert ("fewer than" in said) is floored, said


def test_the_duel_gathers_its_runs_on_one_arm() -> None:
    """Issue 47 (1), the live case: four near-equal arms 3 % faster than the defaults; the
    duel gives its runs to one of them until it passes or the runs end, instead of
    splitting them 2/2/4/2 (the champion keeps the runs while no other is expected to be
    faster by more than the tolerance, and the arm that passed keeps them when it falls
    back). In the median of 12 seeded studies one arm has 3/4 of the duel's runs, and a
    3 % arm is handed back in 2/3 of them. Fails with top-two sampling from the first
    round (median share 0.35)."""
    costs = {"defaults": 1.0, "a": 1.0, "b": 0.97, "c": 0.97, "d": 0.97, "e": 0.97, "f": 1.3}
    shares, handed = [], 0
    for seed in range(12):
        acc, _, _ = study_of(lambda c, n: costs[c], seed=seed, noise=0.04)
        assert acc is not None
        dueled = [len(c["rounds"]) for c in acc.extra["candidates"] if c["rounds"]]
        shares.append(max(dueled) / sum(dueled))
        handed += acc.accepted and acc.params[KNOB] in "bcde"
    assert float(np.median(shares)) >= 0.75, shares
    assert handed >= 8, handed


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
    assert set(answers) <= {"c", None}  # never a slower one
    assert answers.count("c") >= 14, answers


@pytest.mark.parametrize("risk", [0.05, 0.2, 0.5])
def test_the_users_risk_reaches_the_decision(risk: float) -> None:
    """Issue 47 (2), on one posterior: what the risk bounds is the chance of being more
    than 2 % slower. An arm expected 1.05x with that chance about 2.5 % passes at 5 % and
    above, not at 1 %; one expected 1.03x, faster with probability about 0.88 only (what
    the rule before refused below a risk of 12 %), passes at 5 %: a configuration no
    faster costs the user nothing in speed. At one half the rule is the expected speedup
    alone, which a posterior expected 1.02x with P(faster) 0.6 passes too."""
    sure = bayes.Posterior(_normal(math.log(1 / 1.05), 0.035), 8)
    assert 0.01 < sure.risk(0.02) < 0.05
    assert bayes.acceptable(sure, risk, 0.02, min_gain=0.01)
    assert not bayes.acceptable(sure, 0.01, 0.02, min_gain=0.01)
    likely = bayes.Posterior(_normal(math.log(1 / 1.03), 0.025), 8)
    assert 0.8 < likely.gain(0.0) < 0.92 and likely.risk(0.02) < 0.03
    assert bayes.acceptable(likely, risk, 0.02, min_gain=0.01)
    coin = bayes.Posterior(_normal(math.log(1 / 1.02), 0.08), 2)
    assert 0.5 < coin.gain(0.0) < 0.7 and coin.expected() > 1.01
    assert bayes.acceptable(coin, risk, 0.02, min_gain=0.01) is (risk >= 0.5)


def _normal(mean: float, sd: float) -> np.ndarray:
    w = np.exp(-0.5 * ((bayes.GRID - mean) / sd) ** 2)
    return w / w.sum()


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


def test_the_figures_a_user_reads_do_not_contradict_each_other() -> None:
    """A mean above 1 lifted by a few fast runs, with a probability of being faster below
    one half: the sentence says the median and which figure the rule used."""
    from commtune.tune._decide import Judgement, say

    j = Judgement(1.013, (0.985, 1.062), 0.04, [], False, "", faster=0.448, median=0.995)
    said = say(j, 0.02)
    assert "probability 44.8 %" in said and "median 0.995x" in said
    plain = say(Judgement(1.2, (1.1, 1.3), 0.0, [], True, "", faster=0.99, median=1.2), 0.02)
    assert "median" not in plain


def test_the_noise_is_read_within_the_machines_mode() -> None:
    """Every third run of the defaults takes 2.2 times as long (a machine of two modes,
    ``Levels.slow``). The ratios of successive controls across the modes are the mode's
    jumps, not one run's noise: the noise scale is read from the controls of the faster
    mode. Before, it was 1.0 (every posterior as wide as a 2.7x spread) where the runs
    spread by 1 %."""
    from commtune.tune._decide import Arm, Levels, _scale

    rng = np.random.default_rng(0)
    stream = [(2 * i, (2.2 if i % 3 == 2 else 1.0) * (1 + 0.01 * rng.standard_normal()))
              for i in range(16)]  # fmt: skip
    arm = Arm(1, {KNOB: "c"}, [(1, 0.9), (3, 0.91)])
    levels = Levels(stream)
    assert levels.slow is not None and _scale([arm], levels) < 0.05


def _usually_slow_defaults(c: str, n: int) -> float:
    """A machine of two modes whose usual one is the slow one for the defaults (every third
    of their runs twice as fast, as on MPICH's ct_solver table), while ``c`` (and ``b``, 6 %
    slower than it) runs twice as fast but every fifth run: 2x faster on the median."""
    if c in ("b", "c"):
        return (2.0 if n % 5 == 0 else 1.0) * (1.06 if c == "b" else 1.0)
    return 1.0 if n % 3 == 2 else 2.0


def test_a_configuration_twice_as_fast_as_the_defaults_usual_runs_is_accepted() -> None:
    """Issue 47: where the defaults' faster cluster is the smaller, it is their luck, not
    their level. Capping the level at it (as where the fast cluster is their usual one)
    read a configuration twice as fast in four runs of five as no faster: 6 of these 20
    studies handed it back. And where every configuration runs as the defaults do, none is
    credited with the fast mode's 2x: 2 of 20 handed back, at 1.02x and 1.08x (the cap:
    none); what is bounded is a slowdown, not a claim of a few per cent."""
    handed = [study_of(_usually_slow_defaults, seed=seed, noise=0.03)[0] for seed in range(20)]
    fast = [a for a in handed if a is not None and a.accepted and a.params[KNOB] in ("b", "c")]
    assert len(fast) >= 16, [a and a.reason for a in handed]
    assert all(a.speedup is not None and a.speedup > 1.6 for a in fast)
    null = [study_of(lambda c, n: 1.0 if n % 3 == 2 else 2.0, seed=seed, noise=0.03)[0]
            for seed in range(20)]  # fmt: skip
    claims = [a.speedup for a in null if a is not None and a.accepted]
    assert len(claims) <= 4 and all(s is not None and s < 1.15 for s in claims), claims
