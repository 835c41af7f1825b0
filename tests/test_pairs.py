"""The one pair runner (commtune.tune._pairs) and the verdict's typed record: each pair's
order by the study's coins, a failed run counted once and never evidence, a lone test's
stops, and every gate's finding through the storage's JSON and back."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from commtune import rule
from commtune.knobs import Value
from commtune.study import (
    Acceptance,
    ExactFinding,
    Gate,
    InRunFinding,
    Notes,
    RiskFinding,
    Source,
    StrictFinding,
)
from commtune.tune import Entrant, Rounds, Slower, Stop, lone

FAST = {"k": "fast"}


@dataclass(frozen=True)
class Ran:
    value: float | None
    failure: str | None = None
    secondary: Mapping[str, float | None] = field(default_factory=dict)


@dataclass
class Machine:
    """Runs answered by a rule: ``time(config, n)`` (None: the run fails), every run logged
    as (its configuration or None for the defaults, its value)."""

    time: object
    log: list[tuple[Mapping[str, Value] | None, float | None]] = field(default_factory=list)

    def __call__(self, config: Mapping[str, Value] | None) -> Ran:
        value = self.time(config, len(self.log))  # type: ignore[operator]
        self.log.append((config, value))
        return Ran(value, None if value is not None else "exit status 1")


def test_a_round_of_one_configuration_is_ordered_by_the_studys_coins() -> None:
    """One configuration: each round's order is the next coin of ``rule.coins(seed)``, its
    run and the defaults' kept beside the round."""
    machine = Machine(lambda c, n: 0.5 if c else 1.0)
    rounds, entrant = Rounds(machine, seed=11), Entrant(dict(FAST))
    for _ in range(12):
        rounds.round([entrant])
    first = [machine.log[2 * i][0] is not None for i in range(12)]
    assert first == list(itertools.islice(rule.coins(11), 12))
    assert entrant.pairs() == ([1.0] * 12, [0.5] * 12) and rounds.done == 12


def test_a_failed_run_is_counted_once_and_is_no_evidence() -> None:
    """The defaults' run failing puts every configuration of its round out, with the same
    record, and ends the round; a configuration's failing puts it alone out. A round after
    it runs nothing of an entrant that is out."""
    a, b = Entrant({"k": "a"}), Entrant({"k": "b"})
    machine = Machine(lambda c, n: None if c is None and n >= 3 else 1.0)
    rounds = Rounds(machine, seed=3)
    rounds.round([a, b])  # 3 runs: every one a value
    rounds.round([a, b])  # the defaults' run (the 4th or later) fails
    assert a.failed is not None and a.failed is b.failed and a.failed.of_defaults
    assert a.failed.round == 1 and "failed" in a.failure
    made = len(machine.log)
    assert made < 6 or machine.log[-1][0] is None  # nothing run after the defaults failed
    rounds.round([a, b])
    assert len(machine.log) == made  # both out: nothing run
    c = Entrant({"k": "c"})
    lone_machine = Machine(lambda cfg, n: None if cfg else 1.0)
    Rounds(lone_machine, seed=1).round([c])
    assert c.failed is not None and not c.failed.of_defaults and c.failed.round == 0
    assert c.pairs() == ([], []) and "could not run here (round 1" in c.failed.comparison()


def test_a_lone_test_stops_where_its_caller_says() -> None:
    """A clear winner passes at the early look; one that can no longer pass stops as
    hopeless; check's no-faster stop ends a slower one at its third pair; a run that fails
    ends it with the pairs before it; without a stop, the pairs run out."""
    looks = rule.looks(0.05, 0, 15, share=rule.CONFIRM_EARLY)
    clear = lone(Machine(lambda c, n: 0.5 if c else 1.0), FAST, looks, tolerance=0.02,
                 min_gain=0.01, seed=1)  # fmt: skip
    assert clear.stop is Stop.PASSED and clear.pairs == looks[0][0] and clear.passed
    assert clear.test is not None and clear.test.limit == looks[0][1]
    slow = lone(Machine(lambda c, n: 2.0 if c else 1.0), FAST, looks, tolerance=0.02,
                min_gain=0.01, seed=1)  # fmt: skip
    assert slow.stop is Stop.HOPELESS and slow.pairs < 15 and not slow.passed
    assert slow.test is not None and slow.test.limit == 0.0  # its figures, not a look
    checked = lone(Machine(lambda c, n: 1.2 if c else 1.0), FAST, rule.looks(0.05, 0, 10),
                   tolerance=0.02, min_gain=0.01, seed=1, pairs=10, hopeless=False,
                   slower=Slower(3, 1.02))  # fmt: skip
    assert checked.stop is Stop.NO_FASTER and checked.pairs == 3
    broken = lone(Machine(lambda c, n: None if n >= 5 else 1.0), FAST, looks, tolerance=0.02,
                  min_gain=0.01, seed=1, hopeless=False)  # fmt: skip
    assert broken.stop is Stop.FAILED and broken.failed is not None and broken.pairs == 2
    even = lone(Machine(lambda c, n: 1.0), FAST, [(4, 0.05)], tolerance=0.02, min_gain=0.01,
                seed=1, hopeless=False)  # fmt: skip
    assert even.stop is Stop.ENDED and even.pairs == 4


VERDICTS = [
    Acceptance(
        Source.SEARCH,
        {"k": 2},
        True,
        "",
        speedup=1.2,
        ci=(1.1, 1.3),
        p_value=0.01,
        trial=4,
        measured_trials=9,
        default_values=[1.0, 1.1],
        best_values=[0.8, 0.9],
        gate=Gate.RISK,
        finding=RiskFinding(
            risk_limit=0.05,
            tolerance=0.02,
            min_gain=0.01,
            candidates=[{"trial": 4, "values": [0.8, 0.9]}],
            statistic="median",
            arms=3,
            tested=1,
            twin=False,
            p=0.01,
            share=0.04,
            said="passed",
            label="trial 4",
            rounds=[0, 1],
        ),
        notes=Notes(
            reference="the library's own decision",
            dropped={"x": "default"},
            reduced_from={"k": 2, "x": 1},
        ),
    ),
    Acceptance(
        Source.SEARCH,
        {"k": 3},
        True,
        speedup=2.0,
        ci=(2.0, 2.0),
        gate=Gate.EXACT,
        finding=ExactFinding(min_gain=0.01, arms=2, said="deterministic"),
    ),
    Acceptance(
        Source.SEARCH,
        {"k": 1},
        False,
        "not faster",
        gate=None,
        finding=StrictFinding(
            candidates=[{"trial": 2, "values": [1.0]}],
            statistic="median",
            rounds=[0],
            mean_speedup=1.0,
        ),
    ),
    Acceptance(
        Source.SEARCH,
        {"coll": "ring"},
        False,
        "not shown faster",
        gate=Gate.INRUN,
        finding=InRunFinding(
            op="allreduce",
            knob="coll",
            reference_name="ignore",
            limit=0.01,
            min_gain=0.01,
            tolerance=0.02,
            risk=0.05,
            raced_runs=2,
            dropped={"ring": "in the call"},
            calls=[100, 120],
            fields=[["ring"], ["ring"]],
        ),
    ),
    Acceptance(
        Source.PREDICT,
        {"k": 5},
        False,
        "a proposal",
        notes=Notes(proposal=True, features={"comm_size": 2.0}),
    ),
]


@pytest.mark.parametrize("verdict", VERDICTS, ids=lambda v: str(v.gate or v.source.value))
def test_every_verdict_is_the_same_record_read_back_from_its_json(verdict: Acceptance) -> None:
    """Stored (as JSON, the storage's form) and read back, a verdict says what it said: its
    gate, the finding of its own gate (an in-run verdict's dropped candidates its own, not
    the notes'), the notes."""
    stored = json.loads(json.dumps(verdict.to_json()))
    back = Acceptance.from_json(stored)
    assert json.loads(json.dumps(back.to_json())) == stored
    assert (back.gate, back.notes, type(back.finding)) == (
        verdict.gate,
        verdict.notes,
        type(verdict.finding),
    )
    assert back.candidates == verdict.candidates and back.runs() == verdict.runs()
    if isinstance(verdict.finding, InRunFinding):
        found = back.finding
        assert isinstance(found, InRunFinding) and found.dropped == {"ring": "in the call"}
        assert (found.op, found.raced_runs, list(found.calls)) == ("allreduce", 2, [100, 120])
        assert back.notes.dropped is None  # the candidates a crash put out are the finding's
    with pytest.raises(dataclasses.FrozenInstanceError):
        back.accepted = True  # type: ignore[misc]
