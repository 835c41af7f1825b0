"""Recorded sweeps (``tune --record``): balanced, interleaved, written whole or not at all,
and answered from by ``tune --replay`` and the strategy race."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path

import pytest

from commtune import native
from commtune.harness import replayed
from commtune.harness._surfaces import cat_knob, int_knob
from commtune.knobs import Dimension, Space, Value
from commtune.mpi import installation_of
from commtune.progress import Silent
from commtune.trial import Executor, ReplayExecutor, RunRecord
from commtune.tune import record

from .conftest import last_json, needs_mpich, run_cli

METRIC = r"regex:time ([0-9.eE+-]+) s"


class Calls(Executor):
    """Answers by a table and remembers every configuration it was asked to run."""

    def __init__(self, failing: str | None = None) -> None:
        self.calls: list[dict[str, Value] | None] = []
        self.failing = failing

    def run(self, config: Mapping[str, Value] | None, timeout: float) -> RunRecord:
        self.calls.append(dict(config) if config is not None else None)
        if config is not None and config["algo"] == self.failing:
            return RunRecord(None, 0.1, 1, "exit status 1")
        value = 1.0 if config is None else 0.5 + 0.1 * int(config["n"])
        return RunRecord(value, value, 0)


def _space() -> Space:
    knobs = (int_knob("n", 0, 2, 0), cat_knob("algo", ("a", "b"), "a"))
    return Space("synthetic", tuple(Dimension(k) for k in knobs))


def test_every_round_runs_every_configuration_once_in_a_new_order() -> None:
    executor = Calls()
    done = record(executor, _space(), 4, Silent(), seed=3)
    # the first run is the defaults' (it sets the timeout); then 4 rounds of the 6
    # configurations and the defaults (the first round's defaults run was that first run)
    assert executor.calls[0] is None
    assert len(executor.calls) == 1 + 6 + 3 * 7
    rounds = [executor.calls[1:7], *(executor.calls[7 + 7 * i : 14 + 7 * i] for i in range(3))]
    keys = [[ReplayExecutor.key(c) if c else "" for c in r] for r in rounds]
    assert all(sorted(k) == sorted(set(k)) for k in keys)  # once each per round
    assert sorted(keys[1]) == sorted(keys[2]) == sorted(keys[3]) and "" in keys[1]
    assert len({tuple(k) for k in keys[1:]}) > 1  # shuffled anew
    assert all(len(v) == 4 for v in done.values.values()) and len(done.default) == 4
    table = done.to_json()  # the order run is kept: the time of every value
    trials = [None, *(t["params"] for t in table["trials"])]
    assert [trials[i + 1] for i in table["order"]] == executor.calls
    again = Calls()
    record(again, _space(), 4, Silent(), seed=3)
    assert again.calls == executor.calls  # the same seed, the same order


def test_a_failing_configuration_is_recorded_once_and_not_run_again() -> None:
    executor = Calls(failing="b")
    done = record(executor, _space(), 3, Silent(), seed=1)
    failing = [key for key, values in done.values.items() if values == [None]]
    assert len(failing) == 3 and sorted(failing) == sorted(done.failed())
    assert sum(c is not None and c["algo"] == "b" for c in executor.calls) == 3
    assert all(len(v) == 3 for k, v in done.values.items() if k not in failing)


@pytest.mark.openmpi
def test_record_then_replay_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real sweep of a real program, then a study answered from it: the truth of every
    configuration is the median of its recorded runs, and each replayed run one of them."""
    inst = installation_of("openmpi")
    demo = str(native.build(inst, "demo/ct_demo.c"))
    table = tmp_path / "table.json"
    knob = "btl_vader_eager_limit=4096,16384,65536"
    code, out, err = run_cli(["tune", "--mpi", "openmpi", "--record", str(table), "--repeats",
                              "3", "--knob", knob, "--metric", METRIC, "--json", "--",
                              *inst.command(2, [demo, "200"])], capsys)  # fmt: skip
    assert code == 0, err
    assert last_json(out) == {"file": str(table), "runs": 12, "failed": 0,
                                     "configurations": 3}  # fmt: skip
    data = json.loads(table.read_text())
    assert data["balanced"] and data["repeats"] == 3 and len(data["default"]) == 3
    assert sorted(t["params"]["btl_vader_eager_limit"] for t in data["trials"]) == [
        4096, 16384, 65536,
    ]  # fmt: skip
    assert all(len(t["values"]) == 3 and None not in t["values"] for t in data["trials"])
    assert data["features"]["comm_size"] == 2.0  # the defaults' profile, for knowledge
    surface = replayed(table)
    assert surface.drawn

    def runs_of(t: dict) -> list[float]:
        """A configuration's runs; the library's default (4 KiB) is the defaults, and its
        runs and theirs are one configuration's: pooled."""
        default = t["params"]["btl_vader_eager_limit"] == 4096
        return [*t["values"], *data["default"]] if default else t["values"]

    for t in data["trials"]:
        assert surface.value(t["params"]) == pytest.approx(statistics.median(runs_of(t)))
    assert surface.value({"btl_vader_eager_limit": 4096}) == surface.default_value
    assert data["order"][0] == -1 and len(data["order"]) == 12  # the first run: defaults
    by_mean = replayed(table, "mean")  # the truth node-hours follow
    for t in data["trials"]:
        assert by_mean.value(t["params"]) == pytest.approx(statistics.fmean(runs_of(t)))
    code, out, err = run_cli(["tune", "--mpi", "openmpi", "--replay", str(table), "--knob",
                              knob, "--storage", f"sqlite:///{tmp_path}/r.db", "--trials",
                              "4", "--confirm", "0", "--json"], capsys)  # fmt: skip
    assert code == 0, err
    assert last_json(out)["runs"] >= 4


def test_record_refuses_what_it_cannot_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing is run and nothing written when the table could not be written or the
    options contradict each other."""
    cases = [
        (["--record", str(tmp_path / "no" / "t.json")], "no directory"),
        (["--record", str(tmp_path / "t.json"), "--replay", str(tmp_path / "t.json")],
         "--record and --replay"),
    ]  # fmt: skip
    for extra, said in cases:
        code, _, err = run_cli(["tune", "--mpi", "openmpi", *extra, "--", "true"], capsys)
        assert code == 2
        assert said in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@needs_mpich
def test_ucx_values_users_set_are_recorded_run_and_replayed_on_mpich(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MPICH over UCX (Debian's ch4:ucx) with what users set UCX to: transport lists and
    ``inf``, each run with UCX taking it (a refused value fails the run), recorded, then a
    study replayed from the table under the MPICH library."""
    inst = installation_of("mpich")
    if "ucx" not in inst.device:
        pytest.skip(f"{inst.describe()} does not run over UCX")
    demo = str(native.build(inst, "demo/ct_demo.c"))
    table = tmp_path / "table.json"
    knobs = ["--knob", "UCX_TLS=posix,self|sysv,self", "--knob", "UCX_RNDV_THRESH=inf,auto"]
    code, out, err = run_cli(["tune", "--mpi", "mpich", "--record", str(table), "--repeats",
                              "1", *knobs, "--metric", METRIC, "--json", "--",
                              *inst.command(2, [demo, "100"])], capsys)  # fmt: skip
    assert code == 0, err
    assert last_json(out)["failed"] == 0, out
    data = json.loads(table.read_text())
    recorded = {(t["params"]["UCX_TLS"], t["params"]["UCX_RNDV_THRESH"]) for t in data["trials"]}
    assert recorded == {(tls, thresh) for tls in ("posix,self", "sysv,self")
                        for thresh in ("inf", "auto")} - {("all", "auto")}  # fmt: skip
    code, out, err = run_cli(["tune", "--mpi", "mpich", "--replay", str(table), *knobs,
                              "--storage", f"sqlite:///{tmp_path}/r.db", "--trials", "4",
                              "--confirm", "0", "--json"], capsys)  # fmt: skip
    assert code == 0, err
    assert last_json(out)["runs"] >= 4


def test_a_record_of_many_repeats_is_not_held_to_a_studys_run_budget() -> None:
    """``tune --record --repeats 20`` runs every configuration 20 times whatever
    ``--max-runs`` says (its default of 30 bounds a study, not a table): refused before,
    with "--max-runs 30 leaves no run to decide"; a study of that many repeats still is."""
    from commtune.errors import UsageError
    from commtune.service._check import _check_runs
    from commtune.study import Plan

    _check_runs(Plan(repeats=20, max_runs=30, record="/tmp/t.json"))
    with pytest.raises(UsageError, match="leaves no run to decide"):
        _check_runs(Plan(repeats=20, max_runs=30))
