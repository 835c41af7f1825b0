"""The study as typed records: each query of :class:`StudyView` defined once, checked here once
on a study written through Optuna's own storage (every role and state a tuner leaves)."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from commtune.study import (
    INTERRUPTED,
    Acceptance,
    Failure,
    FailureKind,
    Role,
    Source,
    StudyView,
    TrialRecord,
    TrialWriter,
    ask,
    mark,
    set_acceptance,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _run(value: float | None, relative: float | None, seq: int, **extra: Any) -> dict[str, Any]:
    failure = None if value is not None else "exit status 1"
    return {"value": value, "wall": 0.5, "returncode": 0 if value else 1, "failure": failure,
            "relative": relative, "block": f"0.{seq}", "seq": seq, **extra}  # fmt: skip


def _trial(
    study: optuna.Study,
    role: Role,
    config: dict[str, Any],
    runs: list[dict[str, Any]],
    value: float | None = None,
    failure: str | None = None,
    state: str = "COMPLETE",
) -> optuna.Trial:
    trial = ask(study)
    write = TrialWriter(trial)
    write.role(role)
    write.config(config)
    write.runs(runs)
    if failure is not None:
        write.failure(failure)
    if state == "COMPLETE":
        study.tell(trial, value)
    elif state != "RUNNING":
        study.tell(trial, state=getattr(optuna.trial.TrialState, state))
    return trial


@pytest.fixture
def study() -> optuna.Study:
    """Trials as a tuner leaves them: 0 a reference interrupted, 1 the reference, 2-3
    controls, 4 a search trial, 5 one that failed, 6 one interrupted, 7 a duplicate of 4, 8
    the best search trial, 9 one still running, 10 a training trial."""
    s = optuna.create_study(direction="minimize")
    _trial(s, Role.REFERENCE, {}, [_run(2.0, None, 0)], failure=INTERRUPTED, state="FAIL")
    _trial(s, Role.REFERENCE, {}, [_run(2.0, 1.0, 1), _run(2.2, 1.1, 2), _run(1.8, 0.9, 3)], 1.0)
    _trial(s, Role.CONTROL, {}, [_run(4.0, None, 6)], 1.0)
    _trial(s, Role.CONTROL, {}, [_run(2.0, None, 9)], 1.0)
    _trial(s, Role.SEARCH, {"k": 1}, [_run(1.6, 0.8, 4, secondary={"mem": 5.0}),
                                      _run(1.6, 0.8, 5, secondary={"mem": 7.0})], 0.8)  # fmt: skip
    _trial(s, Role.SEARCH, {"k": 2}, [_run(None, None, 7)], failure="exit status 1", state="FAIL")
    _trial(s, Role.SEARCH, {"k": 3}, [], failure=INTERRUPTED, state="FAIL")
    _trial(s, Role.DUPLICATE, {"k": 1}, [], 0.8)
    _trial(s, Role.SEARCH, {"k": 4}, [_run(1.0, 0.5, 8, secondary={"mem": 9.0})], 0.5)
    running = _trial(s, Role.SEARCH, {"k": 5}, [], state="RUNNING")
    _trial(s, Role.TRAINING, {"k": 1}, [_run(3.0, None, 10)], 1.2)
    mark(s, s.get_trials(deepcopy=False)[running.number], arm="tpe")  # as a sampler does
    return s


def test_a_record_reads_every_attribute_once(study: optuna.Study) -> None:
    view = StudyView(study)
    first = view.records[4]
    assert (first.role, dict(first.config), first.value) == (Role.SEARCH, {"k": 1}, 0.8)
    assert first.values() == [1.6, 1.6] and first.relatives() == [0.8, 0.8]
    assert first.walls() == [0.5, 0.5] and first.objectives() == {"mem": 6.0}
    assert first.runs[0].seq == 4 and first.runs[0].block == "0.4" and first.runs[0].ok
    assert first.key == '{"k": 1}' and first.worker is not None
    assert view.records[9].arm == "tpe" and view.records[7].arm is None
    failed = view.records[5]
    assert failed.failure == Failure(FailureKind.EXIT, "exit status 1")
    assert failed.failed and failed.finished and not failed.interrupted
    assert view.records[6].interrupted and view.records[9].running


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("interrupted", FailureKind.INTERRUPTED),
        ("timeout after 3.0 s", FailureKind.TIMEOUT),
        ("killed by signal 9", FailureKind.SIGNAL),
        ("exit status 2", FailureKind.EXIT),
        ("no profile written (did every rank call MPI_Finalize?)", FailureKind.NO_PROFILE),
        ("metric 'Time' not found in the output", FailureKind.NO_METRIC),
        ("failed when run again: exit status 1", FailureKind.RERUN),
        ("something else", FailureKind.OTHER),
    ],
)
def test_a_failure_has_a_kind_and_keeps_its_message(message: str, kind: FailureKind) -> None:
    failure = Failure.parse(message)
    assert failure.kind is kind and str(failure) == message


def test_each_query_of_the_view(study: optuna.Study) -> None:
    view = StudyView(study)
    numbers = lambda records: [r.number for r in records]  # noqa: E731
    ref = view.reference()
    assert ref is not None and ref.number == 1  # the first *finished* reference
    # ran: reference and search trials that finished or failed, interrupted ones included
    assert numbers(view.ran()) == [0, 1, 4, 5, 6, 8]
    # measured: the same without the interrupted
    assert numbers(view.measured()) == [1, 4, 5, 8]
    assert numbers(view.search_trials()) == [4, 5, 8]
    # known: each configuration answered by its first measured trial, a failure included
    assert {k: r.number for k, r in view.known().items()} == {
        '{"k": 1}': 4, '{"k": 2}': 5, '{"k": 4}': 8}  # fmt: skip
    assert numbers(view.best(5)) == [8, 4] and view.incumbent() == 0.5
    assert numbers(view.controls()) == [2, 3] and numbers(view.training()) == [10]
    assert numbers(view.running()) == [9]
    assert view.runs_spent() == 1 + 3 + 1 + 1 + 2 + 1 + 1 + 1
    noise = view.noise()  # levels: the reference's median 2.0, controls 4.0 and 2.0
    assert noise.drift == pytest.approx(2.0)
    # the median spread of finished configurations of two runs or more: 0.1 (the reference)
    # and 0 (trial 4)
    assert noise.cv == pytest.approx(0.05)
    front = view.pareto(["mem"])
    assert [p["number"] for p in front] == [8, 4] or [p["number"] for p in front] == [8]
    assert front[0]["objectives"] == {"mem": 9.0}


def test_the_incumbent_is_never_worse_than_the_defaults() -> None:
    s = optuna.create_study(direction="minimize")
    assert StudyView(s).incumbent() == 1.0 and StudyView(s).reference() is None
    _trial(s, Role.SEARCH, {"k": 1}, [_run(3.0, 1.5, 0)], 1.5)
    assert StudyView(s).incumbent() == 1.0


def test_the_verdict_holds_only_for_the_trials_it_was_reached_on(study: optuna.Study) -> None:
    view = StudyView(study)
    assert view.verdict() is None
    acc = Acceptance(Source.SEARCH, {"k": 4}, True, "faster", measured_trials=len(view.ran()))
    set_acceptance(study, acc)
    assert StudyView(study).verdict() == acc
    _trial(study, Role.SEARCH, {"k": 6}, [_run(1.0, 0.5, 11)], 0.5)  # one more trial ran
    assert StudyView(study).verdict() is None and StudyView(study).acceptance() == acc


def test_a_record_is_frozen(study: optuna.Study) -> None:
    record = TrialRecord.of(study.get_trials(deepcopy=False)[1])
    with pytest.raises(AttributeError):
        record.value = 2.0  # type: ignore[misc]
