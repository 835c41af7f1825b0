"""Strategies against recorded measurements (the replay launcher): no MPI needed.

The shared case every strategy passes: the budget is respected, proposals stay in the domain,
the same seed gives the same trials in a fresh process, failed trials are recorded and the
study goes on, and a resumed study keeps its trials and repeats no configuration.
"""

from __future__ import annotations

import itertools
import json
import shlex
import sys
from pathlib import Path

import optuna
import pytest

from commtune.errors import UsageError
from commtune.store import Store
from commtune.strategies import STRATEGIES
from commtune.study import Role, TrialRecord, config_key

from .conftest import commtune_subprocess, last_json, run_cli

ALGOS = ["auto", "nb", "smp", "recursive_doubling", "reduce_scatter_allgather", "ring"]
KNOBS = ["--knob", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "--knob", "MPIR_CVAR_ASYNC_PROGRESS"]


def surface(algo: str, progress: bool) -> float | None:
    if algo == "ring":
        return None  # this configuration crashes
    base = {
        "auto": 1.0,
        "nb": 0.9,
        "smp": 1.4,
        "recursive_doubling": 0.7,
        "reduce_scatter_allgather": 0.8,
    }[algo]
    return base * (1.3 if progress else 1.0)


@pytest.fixture
def replay_file(tmp_path: Path) -> Path:
    trials = []
    for algo, progress in itertools.product(ALGOS, [False, True]):
        value = surface(algo, progress)
        values = [None] if value is None else [value * f for f in (1.0, 1.02, 0.98)]
        trials.append(
            {
                "params": {
                    "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": algo,
                    "MPIR_CVAR_ASYNC_PROGRESS": progress,
                },
                "values": values,
            }
        )
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"default": [1.0, 1.01, 0.99], "trials": trials}))
    return path


def tune_args(replay: Path, storage: str, strategy: str, trials: int, seed: int = 7) -> list[str]:
    """The strict gate's design (these tests hold its confirmation and reduction; the risk
    gate's contracts are in test_verdict.py)."""
    return [
        "tune",
        "--gate",
        "strict",
        "--max-runs",
        "1000",  # the strict design as it was: bounded by its trials
        "--mpi",
        "mpich",
        "--replay",
        str(replay),
        *KNOBS,
        "--strategy",
        strategy,
        "--trials",
        str(trials),
        "--seed",
        str(seed),
        "--storage",
        storage,
        "--study",
        "s",
        "--confirm",
        "3",
        "--json",
    ]


def trials_of(storage: str) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name="s", storage=Store(storage).optuna).get_trials()


def search_configs(storage: str) -> list[str]:
    return [
        config_key(TrialRecord.of(t).config)
        for t in trials_of(storage)
        if TrialRecord.of(t).role is Role.SEARCH
    ]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_shared_strategy_case(
    strategy: str, replay_file: Path, storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(tune_args(replay_file, storage, strategy, 8), capsys)
    assert code == 0
    result = last_json(out)
    assert result["trials"] == 8  # the budget, reference included
    trials = trials_of(storage)
    searched = [t for t in trials if TrialRecord.of(t).role is Role.SEARCH]
    assert len(searched) == 7
    for t in searched:
        cfg = TrialRecord.of(t).config
        assert cfg["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] in ALGOS
        assert cfg["MPIR_CVAR_ASYNC_PROGRESS"] in (False, True)
        if cfg["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "ring":
            assert t.state.name == "FAIL" and "exit status" in str(TrialRecord.of(t).failure)
    assert result["failed_trials"] == sum(t.state.name == "FAIL" for t in searched)
    assert len(set(search_configs(storage))) == 7  # no configuration measured twice
    assert result["best_value"] == min(t.value for t in searched if t.value is not None)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_same_seed_same_trials_in_a_fresh_process(
    strategy: str, replay_file: Path, tmp_path: Path
) -> None:
    # the two processes side by side (one core each): nothing they share but the seed
    storages = [f"sqlite:///{tmp_path / f'seed{i}.db'}" for i in range(2)]
    procs = [commtune_subprocess(tune_args(replay_file, s, strategy, 6)) for s in storages]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    runs = [search_configs(storage) for storage in storages]
    assert runs[0] == runs[1]


def test_grid_measures_every_configuration_once(
    replay_file: Path, storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(tune_args(replay_file, storage, "grid", 40), capsys)
    assert code == 0
    assert last_json(out)["trials"] == 13  # 12 configurations + the reference
    assert len(set(search_configs(storage))) == 12
    best = last_json(out)["best_params"]  # what is handed back: no knob at its default
    assert best == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"}
    assert last_json(out)["accepted"] is True


@pytest.mark.parametrize("strategy", sorted(set(STRATEGIES) - {"grid"}))
def test_resume_keeps_trials_and_does_not_repeat(
    strategy: str, replay_file: Path, storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(tune_args(replay_file, storage, strategy, 5), capsys)[0] == 0
    before = {t.number: (t.state, t.value, TrialRecord.of(t).config) for t in trials_of(storage)}
    assert run_cli(tune_args(replay_file, storage, strategy, 10), capsys)[0] == 0
    after = {t.number: (t.state, t.value, TrialRecord.of(t).config) for t in trials_of(storage)}
    assert all(after[n] == v for n, v in before.items())
    configs = search_configs(storage)
    assert len(configs) == 9 and len(set(configs)) == 9


def test_export_and_show_of_an_accepted_study(
    replay_file: Path, storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(tune_args(replay_file, storage, "grid", 40), capsys)[0] == 0
    code, out, _ = run_cli(["export", "s", "--storage", storage, "--format", "env"], capsys)
    assert code == 0
    assert "export MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=recursive_doubling" in out
    # the best one measured had asynchronous progress off, the library's default: the
    # smallest answer leaves it out
    assert "ASYNC_PROGRESS" not in out
    target = tmp_path / "out.json"
    code, _, _ = run_cli(
        ["export", "s", "--storage", storage, "--format", "json", "-o", str(target)], capsys
    )
    exported = json.loads(target.read_text())["params"]
    assert code == 0 and exported == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"}
    code, _, err = run_cli(["export", "s", "--storage", storage, "--format", "mca"], capsys)
    assert code == 2 and "Open MPI" in err
    code, out, _ = run_cli(["show", "s", "--storage", storage, "--json"], capsys)
    shown = last_json(out)
    assert code == 0 and len(shown["trials"]) == len(trials_of(storage))
    assert shown["trials"][0]["role"] == "reference"
    code, out, _ = run_cli(["studies", "--storage", storage, "--json"], capsys)
    assert code == 0 and last_json(out)["studies"][0]["accepted"] is True


def _next_steps(err: str) -> list[list[str]]:
    """The commands the tuner prints after ``next:``, as argument lists without ``commtune``."""
    lines = err.splitlines()
    steps = lines[lines.index("next:") + 1 :]
    # every line as printed (a paste into a shell): commands, and '#' comments between them
    assert all(line.startswith(("  commtune", "  #")) for line in steps if line.strip()), steps
    return [shlex.split(line)[1:] for line in steps if line.startswith("  commtune")]


def test_the_next_steps_printed_work_as_printed(
    replay_file: Path,
    storage: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    code, _, err = run_cli(tune_args(replay_file, storage, "grid", 40), capsys)
    assert code == 0
    steps = _next_steps(err)
    assert [step[0] for step in steps] == ["run", "export", "report"]
    # one line each whatever the console's width (the storage's path is longer than 80)
    assert steps[0] == ["run", "--study", "s", "--storage", storage, "--", "mpiexec", "..."]
    for step in steps[1:]:
        assert run_cli(step, capsys)[0] == 0, step
    assert "INTRA_ALGORITHM=recursive_doubling" in (tmp_path / "tuned.env").read_text()
    assert "<html" in (tmp_path / "s.html").read_text()
    code, _, err = run_cli(tune_args(replay_file, "commtune.db", "grid", 40), capsys)
    assert code == 0  # the default storage, named another way: no --storage to repeat
    assert _next_steps(err)[1] == ["export", "s", "--format", "env", "--output", "tuned.env"]


def test_not_faster_beyond_noise_keeps_the_default(
    tmp_path: Path, storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    noisy = [1.0, 0.7, 1.3, 0.9, 1.1]
    trials = [
        {"params": {"MPIR_CVAR_ASYNC_PROGRESS": p}, "values": [0.95, 1.25, 0.8, 1.05, 1.2]}
        for p in (False, True)
    ]
    path = tmp_path / "noise.json"
    path.write_text(json.dumps({"default": noisy, "trials": trials}))
    args = [
        "tune",
        "--mpi",
        "mpich",
        "--replay",
        str(path),
        "--knob",
        "MPIR_CVAR_ASYNC_PROGRESS",
        "--trials",
        "3",
        "--storage",
        storage,
        "--study",
        "n",
        "--json",
    ]
    code, out, err = run_cli(args, capsys)
    assert code == 0 and last_json(out)["accepted"] is False
    assert [step[0] for step in _next_steps(err)] == ["report"]  # nothing to run or export
    code, _, err = run_cli(["export", "n", "--storage", storage], capsys)
    assert code == 2 and "default stays" in err


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


@pytest.mark.parametrize("columns", [80, 200])
def test_show_fits_the_terminal_and_loses_no_setting(
    columns: int,
    replay_file: Path,
    storage: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert run_cli(tune_args(replay_file, storage, "grid", 40), capsys)[0] == 0
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, _ = run_cli(["show", "s", "--storage", storage], capsys)
    lines = out.splitlines()
    assert code == 0 and lines and max(len(line) for line in lines) <= columns
    assert "…" not in out  # folded, never cut
    flat = "".join(line.strip() for line in lines)  # the folded settings joined again
    for t in trials_of(storage):
        for name, value in TrialRecord.of(t).config.items():
            setting = f"{name}={'1' if value is True else '0' if value is False else value}"
            assert setting in flat or setting in out
            if columns == 200:
                assert any(line.rstrip().endswith(setting) or f"{setting} " in line
                           for line in lines), setting  # fmt: skip
    code, out, _ = run_cli(["studies", "--storage", storage], capsys)
    assert code == 0 and max(len(line) for line in out.splitlines()) <= columns
    assert "…" not in out and str(replay_file) in "".join(line.strip() for line in out.splitlines())


def test_the_run_step_repeats_the_tuned_command() -> None:
    """The printed ``commtune run`` line is the tuned command itself, quoted for the shell,
    unless it is a template (``--scale``) or a replay, which get the launcher and ``...``."""
    from types import SimpleNamespace

    from commtune.report import next_steps

    accepted = SimpleNamespace(study="app", acceptance=SimpleNamespace(accepted=True))
    command = ["mpirun", "-np", "4", "./app", "in put.nml"]
    steps = next_steps(accepted, "openmpi", None, command)  # type: ignore[arg-type]
    assert steps[1].startswith("  #")  # the explanation is a comment line of its own
    assert steps[2] == "  commtune run --study app -- mpirun -np 4 ./app 'in put.nml'"
    sized = next_steps(accepted, "mpich", None, ["mpiexec", "-n", "{size}", "./app"])  # type: ignore[arg-type]
    assert sized[2].startswith("  commtune run --study app -- mpiexec ...")
    assert "--format env --output tuned.env" in sized[3]


def test_knobs_that_measured_nothing_are_left_out_of_the_accepted_configuration(
    tmp_path: Path, storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The smallest answer: the algorithm makes allreduce 0.7x, asynchronous progress does
    nothing (0.5 % here, within the noise), yet the best configuration measured has it on.
    The confirmation runs the configuration without it beside the full one, and that is
    what is accepted and exported: the one knob that matters."""
    trials = []
    for algo, progress in itertools.product(ALGOS, [False, True]):
        value = surface(algo, False)
        if value is not None and progress:
            value *= 0.995
        values = [None] if value is None else [value * f for f in (1.0, 1.02, 0.98)]
        params = {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": algo, "MPIR_CVAR_ASYNC_PROGRESS": progress}
        trials.append({"params": params, "values": values})
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"default": [1.0, 1.01, 0.99], "trials": trials}))
    args = tune_args(path, storage, "grid", 13)
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    result = last_json(out)
    assert result["accepted"], result
    assert result["accepted_params"] == {
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"
    }
    from commtune.study import acceptance_of

    verdict = acceptance_of(optuna.load_study(study_name="s", storage=Store(storage).optuna))
    assert verdict is not None and set(verdict.notes.dropped) == {"MPIR_CVAR_ASYNC_PROGRESS"}
    # reduced from one of the two equal configurations (with or without the progress knob
    # set): which one the search ranks first is the noise's, not the contract's
    reduced_from = verdict.notes.reduced_from
    assert reduced_from["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "recursive_doubling"
    assert set(reduced_from) == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "MPIR_CVAR_ASYNC_PROGRESS"}
    assert verdict.speedup is not None and verdict.speedup > 1.3
    code, exported, _ = run_cli(["export", "s", "--storage", storage, "--format", "env"], capsys)
    assert code == 0 and "ASYNC_PROGRESS" not in exported and "ALLREDUCE_INTRA" in exported


def test_dqn_starts_warm_from_other_programs_tables(
    replay_file: Path, storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--strategy-option warm=A,B``: the Q-network pre-trained on two other programs'
    recorded tables of the same space; a file that is not a table or a network is refused
    with one line."""
    data = json.loads(replay_file.read_text())
    others = []
    for i, scale in enumerate((0.9, 1.2)):
        other = dict(data, features={"p2p_time_share": 0.1 * (i + 1)})
        other["trials"] = [dict(t, values=[None if v is None else v * scale for v in t["values"]])
                           for t in data["trials"]]  # fmt: skip
        path = tmp_path / f"other{i}.json"
        path.write_text(json.dumps(other))
        others.append(str(path))
    args = tune_args(replay_file, storage, "dqn", 8)
    code, out, err = run_cli([*args, "--strategy-option", "warm=" + ",".join(others)], capsys)
    assert code == 0, err
    assert last_json(out)["trials"] == 8
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    code, _, err = run_cli([*tune_args(replay_file, f"sqlite:///{tmp_path}/b.db", "dqn", 4),
                            "--strategy-option", f"warm={bad}"], capsys)  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"warm={bad}: neither a pre-trained Q-network nor a recorded table" in err
    assert not (tmp_path / "b.db").exists()  # refused before anything was written


def test_held_phases_answer_runs_close_in_time_from_one_round(tmp_path: Path) -> None:
    """A replay with phases answers neighbouring runs from the same recorded round (the
    machine's state shared), a configuration run again within a stretch from the next
    round, and over seeds from every round."""
    from commtune.trial import ReplayExecutor

    table = tmp_path / "t.json"
    rounds = [1.0, 2.0, 3.0, 4.0, 5.0]
    table.write_text(json.dumps({"default": rounds, "trials": [
        {"params": {"k": 1}, "values": [10 * v for v in rounds]}]}))  # fmt: skip
    firsts = set()
    for seed in range(20):
        replay = ReplayExecutor(table, seed=seed, phases=True)
        first = replay.run(None, 1.0).value
        assert first is not None and 4 <= replay.left <= 29  # a stretch is 5-30 runs
        firsts.add(first)
        assert replay.run({"k": 1}, 1.0).value == 10 * first  # the same round
        assert replay.run(None, 1.0).value == rounds[(rounds.index(first) + 1) % 5]
    assert firsts == set(rounds)
    independent = ReplayExecutor(table, seed=0)
    draws = [(independent.run(None, 1.0).value, independent.run({"k": 1}, 1.0).value)
             for _ in range(50)]  # fmt: skip
    assert any(b != 10 * a for a, b in draws if a is not None and b is not None)


def test_a_seeded_replay_deals_each_recorded_run_once_before_any_again(tmp_path: Path) -> None:
    """Nine recorded runs are nine runs of the machine. Drawn with replacement, a study
    that ran a configuration five times met one fast run three times and read it as three
    consistent fast runs (HPCG: 4 of 5 duel runs from the 3 fast among 9, an estimate 1.26x
    of a configuration no faster). A seeded replay deals a configuration's runs in a random
    order, every one once before any again, and each seed in an order of its own."""
    from commtune.trial import ReplayExecutor

    table = tmp_path / "t.json"
    table.write_text(json.dumps({"default": [1.0, 2.0, 3.0], "trials": [
        {"params": {"k": 1}, "values": [float(v) for v in range(10, 19)]}]}))  # fmt: skip
    orders = set()
    for seed in range(5):
        replay = ReplayExecutor(table, seed=seed)
        dealt = [replay.run({"k": 1}, 1.0).value for _ in range(18)]
        assert sorted(dealt[:9]) == sorted(dealt[9:]) == list(range(10, 19)), seed
        assert sorted(replay.run(None, 1.0).value for _ in range(3)) == [1.0, 2.0, 3.0]
        orders.add(tuple(dealt))
    assert len(orders) == 5


def test_the_defaults_replay_from_both_of_their_recordings(tmp_path: Path) -> None:
    """A table records the defaults twice: the reference's runs and the trial that set
    every knob to its default. The race's truth of the defaults pools both; the replay
    drew the reference only, so where the two recordings differ (one table's by 16 %) a
    study's defaults ran at one level and were judged at another. The defaults now run
    from both recordings, as their truth is taken, with or without their knobs set, with
    held phases as without (a round's two recordings taken in turn)."""
    from commtune.harness import replayed
    from commtune.knobs import space_from_json
    from commtune.trial import ReplayExecutor

    entries = [{"knob": KNOBS[3]}]  # asynchronous progress: off (the default) or on
    defaults = dict(space_from_json("mpich", entries).defaults())
    reference, itself = [1.0, 1.1, 1.2], [2.0, 2.1, 2.2]
    table = tmp_path / "t.json"
    table.write_text(json.dumps({
        "library": "mpich", "space": entries, "default": reference,
        "trials": [{"params": defaults, "values": itself},
                   {"params": {KNOBS[3]: not defaults[KNOBS[3]]}, "values": [3.0, 3.1]}],
    }))  # fmt: skip
    surface = replayed(table)
    assert surface.default_value == pytest.approx(1.6)  # the median of all six runs
    for phases in (False, True):
        replay = ReplayExecutor(table, defaults, seed=3, phases=phases)
        for config in (None, defaults):
            drawn = {replay.run(config, 1.0).value for _ in range(200)}
            assert drawn == {*reference, *itself}, (phases, config)
    assert ReplayExecutor(table).run(None, 1.0).value in reference  # no defaults: as recorded


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({"trials": []}, "no field 'default'"),
        ({"default": [1.0], "trials": [{"values": [1.0]}]}, "trials[0] has no field 'params'"),
        ({"default": [1.0], "trials": [{"params": {}}]}, "trials[0] has no field 'values'"),
        ({"default": "x", "trials": []}, "field 'default' is not a list of run values"),
        ("[", "not JSON"),
    ],
)
def test_one_reader_of_replay_tables_one_error(tmp_path: Path, content: object, said: str) -> None:
    """Issue 48: the replay executor, the race's surfaces and the dqn's warm start read a
    table through one reader (study.read_table); a bad one is the same one-line error from
    each (one raised a bare KeyError), naming the file and the field."""
    from commtune.harness import replayed
    from commtune.strategies._dqn import _table_program
    from commtune.trial import ReplayExecutor

    path = tmp_path / "bad.json"
    if isinstance(content, dict):  # what a race surface needs beyond the runs
        content = {"library": "openmpi", "space": [], **content}
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    readers = [
        lambda: ReplayExecutor(path),
        lambda: replayed(path),
        lambda: _table_program(str(path), None),  # type: ignore[arg-type]
    ]
    for read in readers:
        with pytest.raises(UsageError) as caught:
            read()
        message = str(caught.value)
        assert message.startswith(f"replay table {path}: ") and said in message
        assert "\n" not in message


def test_a_tables_gain_held_out_is_its_noise_where_only_its_own_runs_favour_the_best(
    tmp_path: Path,
) -> None:
    """The race judges "a table with a gain" by its best chosen on half of its rounds and
    measured on the other half (``race.held_out``). On tables of noise alone (every
    configuration the defaults' equal, 5 % log-normal runs, 9 rounds sharing a drift) the
    best of a table's own runs looks about 4 % faster; held out, it is the defaults' equal on
    average over the tables. A configuration truly 10 % faster in every round keeps its
    gain held out."""
    import numpy as np

    from commtune.harness import held_out, replayed
    from commtune.knobs import space_from_json
    from commtune.tune import configurations

    entries = [{"knob": KNOBS[1], "values": None}, {"knob": KNOBS[3]}]
    space = space_from_json("mpich", entries)
    configs = [dict(c) for c in configurations(space)]
    assert len(configs) >= 8
    rng = np.random.default_rng(7)
    drift = np.linspace(1.0, 1.2, 9)  # the rounds drift together: both halves share it

    def table(name: str, faster: int = -1) -> Path:
        def runs(speed: float = 1.0) -> list[float]:
            return list(drift * np.exp(rng.normal(0, 0.05, 9)) / speed)

        path = tmp_path / f"{name}.json"
        trials = [{"params": c, "values": runs(1.1 if i == faster else 1.0)}
                  for i, c in enumerate(configs)]  # fmt: skip
        path.write_text(json.dumps({"library": "mpich", "space": entries, "default": runs(),
                                    "trials": trials}))  # fmt: skip
        return path

    own, held = [], []
    for i in range(20):
        path = table(f"noise{i}")
        surface = replayed(path)
        own.append(surface.default_value / min(surface.value(c) for c in configs))
        held.append(held_out(path))
    assert np.mean(own) > 1.025  # its own runs favour one
    assert abs(np.mean(held) - 1.0) < 0.01  # held out, nothing is faster
    assert 1.05 < held_out(table("gain", faster=3)) < 1.16


def test_a_study_out_of_sample_is_dealt_some_rounds_and_scored_on_the_others(
    tmp_path: Path,
) -> None:
    """The race out of sample (issue 96): per seed a table's rounds are split, the study is
    dealt only the runs of one part and every truth it is scored by (the best, what it
    handed back, the defaults') is the other part's. Each value here names its round, so
    which part answered is plain; a one-run table (the simulated ones) is both."""
    import statistics

    from commtune.harness import out_of_sample, split_rounds
    from commtune.knobs import space_from_json
    from commtune.tune import configurations

    entries = [{"knob": KNOBS[1], "values": None}]
    space = space_from_json("mpich", entries)
    configs = [dict(c) for c in configurations(space)]

    def table(name: str, rounds: int) -> Path:
        path = tmp_path / f"{name}.json"
        trials = [{"params": c, "values": [100.0 * (k + 2) + r for r in range(rounds)]}
                  for k, c in enumerate(configs)]  # fmt: skip
        path.write_text(json.dumps({"library": "mpich", "space": entries, "balanced": True,
                                    "default": [100.0 + r for r in range(rounds)],
                                    "trials": trials}))  # fmt: skip
        return path

    path = table("nine", 9)
    splits = set()
    for seed in range(6):
        dealt, scoring = split_rounds(path, seed)
        assert len(dealt) == 5 and len(scoring) == 4 and not set(dealt) & set(scoring)
        assert sorted(dealt + scoring) == list(range(9))
        splits.add(tuple(dealt))
        surface = out_of_sample(path, seed, tmp_path)
        assert surface.name == "nine"
        assert surface.value(configs[1]) == statistics.median(300.0 + r for r in scoring)
        replay = surface.executor(0.0, seed)
        seen = {int(replay.run(configs[1], 1.0).value) % 100 for _ in range(12)}
        assert seen == set(dealt), seed
    assert len(splits) > 1  # each seed a split of its own
    one = table("one", 1)
    assert split_rounds(one, 3) == ([0], [0])
    assert out_of_sample(one, 3, tmp_path).value(configs[1]) == 300.0
