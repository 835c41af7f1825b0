"""The strategies of the papers on synthetic surfaces, through the real tuning loop, and the
pieces that have a known right answer: Behzad's model basis, AITuning's ensemble rule,
the portfolio's hints and the race's scoring."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import optuna
import pytest

from commtune.errors import UsageError
from commtune.harness import SYNTHETIC, StrategyRun, Summary, Surface, run_strategy
from commtune.harness._surfaces import bool_knob, cat_knob, int_knob, log2_knob
from commtune.knobs import Dimension, Space
from commtune.progress import Silent
from commtune.strategies import STRATEGIES, get_strategy
from commtune.strategies._dqn import Agent, ensemble
from commtune.strategies._history import History
from commtune.strategies._model import fit_model
from commtune.study import Plan, Role, StudyView, TrialRecord
from commtune.tune import Context, Target, open_study, run_reference, search

OURS = ["ga", "model", "dqn", "auto"]


def study_on(
    surface: Surface, strategy: str, budget: int, seed: int = 3, hints: list | None = None
) -> optuna.Study:
    plan = Plan(strategy=strategy, trials=budget, repeats=1, confirm=0, seed=seed)
    target = Target.of("t", ["t"], surface.space, plan)
    study = open_study(optuna.storages.InMemoryStorage(), target)
    executor = surface.executor(0.1, seed)
    ctx = Context.solo(study, target, executor, Silent(), 60.0, tuple(hints or ()))
    run_reference(ctx)
    search(ctx)
    return study


def searched(study: optuna.Study) -> list[TrialRecord]:
    return StudyView(study).by_role(Role.SEARCH)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_respects_domains_steps_and_budget(strategy: str) -> None:
    surface = SYNTHETIC["mixed"]()  # log2 knobs, an integer knob with step 100, crashes
    study = study_on(surface, strategy, 24)
    trials = searched(study)
    assert len(trials) == 23  # the budget, the reference included
    for t in trials:
        config = dict(t.config)
        assert surface.space.validate(config) == config
        assert int(config["polls"]) % 100 == 0
        assert int(config["eager_limit"]) & (int(config["eager_limit"]) - 1) == 0
        if config["single_copy"] == "knem" and config["async_progress"]:
            assert t.state.name == "FAIL"
    keys = [t.key for t in trials]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("strategy", OURS)
def test_same_seed_same_race_and_another_seed_differs(strategy: str) -> None:
    surface = SYNTHETIC["coupled"]()
    a = run_strategy(strategy, surface, 0.1, 5, 16)
    b = run_strategy(strategy, surface, 0.1, 5, 16)
    c = run_strategy(strategy, surface, 0.1, 6, 16)
    assert a.regret == b.regret and len(a.regret) == 16
    assert a.regret != c.regret


def test_model_recovers_a_known_basis_and_extrapolates_in_ranks() -> None:
    rng = np.random.default_rng(0)
    c = rng.choice([1, 2, 4, 8, 16, 32, 64], 40).astype(float)  # stripe count
    s = rng.integers(1, 10, 40).astype(float)  # stripe size
    ranks = rng.choice([2, 4, 8], 40).astype(float)  # not tuned: the scale of the run
    y = 3 + 2 * ranks / c + 0.5 * c * s / ranks + 0.1 * c
    model = fit_model(np.column_stack([c, s, ranks]), y, max_terms=7)
    assert {t.powers for t in model.terms} == {(0, 0, 0), (-1, 0, 1), (1, 1, -1), (1, 0, 0)}
    assert model.error < 1e-20
    coef = {t.powers: b for t, b in zip(model.terms, model.coef, strict=True)}
    assert coef[(-1, 0, 1)] == pytest.approx(2) and coef[(1, 0, 0)] == pytest.approx(0.1)
    # Fitted on 2-8 ranks, it predicts 64 ranks.
    x = np.array([[4.0, 3.0, 64.0]])
    assert model.predict(x)[0] == pytest.approx(3 + 2 * 64 / 4 + 0.5 * 4 * 3 / 64 + 0.4)


def test_model_indicator_terms_for_a_categorical_knob() -> None:
    x = np.arange(1, 13, dtype=float)[:, None]
    ind = (np.arange(12) % 2 == 0).astype(float)[:, None]
    y = 2 + 3 / x[:, 0] + 4 * ind[:, 0] * x[:, 0]
    model = fit_model(x, y, max_terms=5, ind=ind)
    assert {(t.powers, t.indicator) for t in model.terms} == {((0,), -1), ((-1,), -1), ((1,), 0)}


def space_of(*knobs: object) -> Space:
    return Space("synthetic", tuple(Dimension(k) for k in knobs))  # type: ignore[arg-type]


def test_dqn_ensemble_takes_medians_of_the_good_runs_and_drops_penalised_ones() -> None:
    space = space_of(
        int_knob("a", 0, 10, 0), log2_knob("b", 1, 1 << 10, 1), cat_knob("c", ("x", "y", "z"), "x")
    )
    history = History.of_space(space)
    history.reference = 1.0
    runs = [
        ((2, 3, 1), 0.80),  # best
        ((4, 5, 2), 0.82),
        ((9, 4, 1), 0.83),
        ((3, 9, 0), 0.90),  # more than 5 % slower than the best: not in the ensemble
        ((8, 8, 2), 1.20),  # penalised (slower than the reference)
    ]
    # a: median(2, 4, 9) = 4; b: median(3, 5, 4) = 4; c: mode(y, z, y) = y
    assert ensemble(history, runs) == (4, 4, 1)
    # Two runs: the median of 2 and 4 is 3; a categorical tie goes to the best run's value.
    assert ensemble(history, runs[:2]) == (3, 4, 1)
    # Every run penalised: the rule falls back to all runs.
    history.reference = 0.5
    assert ensemble(history, runs[3:]) == (3, 9, 0)


def test_dqn_pre_trained_on_other_programs_starts_warm(tmp_path: Path) -> None:
    """A Q-network pre-trained on whole tables of two programs whose time falls with knob a
    (and b does nothing): its greedy first step from the defaults on a third such program is
    a up; cold, the first step is whatever the untrained network says. The prior is used
    only on its own space, and a malformed one is refused."""
    from commtune.strategies import pretrain_dqn
    from commtune.strategies._dqn import Prior

    space = space_of(int_knob("a", 0, 8, 0), bool_knob("b", False))
    configs = [{"a": a, "b": b} for a in range(9) for b in (False, True)]
    programs = [({}, 1.0, [(c, 1.0 - slope * int(c["a"])) for c in configs])
                for slope in (0.05, 0.08)]  # fmt: skip
    data = pretrain_dqn(space, programs, seed=3)
    path = tmp_path / "prior.json"
    path.write_text(json.dumps(data))
    prior = Prior.load(str(path))
    assert prior.transitions > 100 and prior.names == ["a", "b"] and prior.features == []
    history = History.of_space(space)
    history.reference = 1.0
    history.points, history.values, history.features = [(0, 0)], [1.0], [None]
    history.order = [((0, 0), 1.0)]
    agent = Agent(history, prior.strides, prior.features)
    dqn = get_strategy("dqn", {"warm": str(path)})
    net = dqn.train(agent, np.random.default_rng(0), prior)  # type: ignore[attr-defined]
    scores = net(agent.state((0, 0))[None, :])[0]
    up = [a for a in range(agent.n_actions) if agent.apply((0, 0), a) in ((1, 0), (4, 0))]
    assert int(np.argmax(scores)) in up  # one or four steps up a
    cold = get_strategy("dqn").train(agent, np.random.default_rng(0))  # type: ignore[attr-defined]
    assert int(np.argmax(cold(agent.state((0, 0))[None, :])[0])) not in up
    other = space_of(int_knob("a", 0, 5, 0), bool_knob("b", False))  # another space: cold
    assert dqn.prior(History.of_space(other), prior.strides) is None  # type: ignore[attr-defined]
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(UsageError, match="not a pre-trained Q-network"):
        Prior.load(str(tmp_path / "bad.json"))


def test_dqn_state_and_transitions() -> None:
    space = space_of(int_knob("a", 0, 4, 0), bool_knob("b", False))
    history = History.of_space(space)
    history.reference = 2.0
    history.reference_features = {"p2p": 10.0}
    history.points = [(0, 0), (1, 0), (1, 1)]
    history.values = [2.0, 1.0, 1.5]
    history.features = [{"p2p": 10.0}, {"p2p": 4.0}, {"p2p": 4.0}]
    history.order = [((0, 0), 2.0), ((1, 0), 1.0), ((1, 1), 1.5), ((2, 1), None)]
    agent = Agent(history, (1,))
    state = agent.state((1, 0))
    assert state[:2] == pytest.approx([0.25, 0.0])
    assert state[2] == pytest.approx(math.log(0.5))
    assert state[3] == pytest.approx(math.log(5 / 11))
    data = agent.transitions()
    assert [(a, r, done) for _, a, r, _, done in data] == [
        (1, 0.5, False),  # a up: 2.0 -> 1.0, reward (2 - 1) / 2
        (2, -0.25, False),  # b flipped (down and up are the same for a boolean): 1.0 -> 1.5
        (1, -1.0, True),  # a up from (1, 1): failed
    ]


def test_auto_measures_the_hint_first_and_records_its_arms() -> None:
    surface = SYNTHETIC["coupled"]()
    hint = {"eager": 1 << 15, "chunks": 11, "polls": 400}
    study = study_on(surface, "auto", 14, hints=[hint])
    trials = searched(study)
    assert trials[0].config == hint and trials[0].arm == "hint"
    arms = {t.arm for t in trials[1:]}
    assert "design" in arms and arms - {"design"} <= {"cmaes", "ga"}


@pytest.mark.parametrize("strategy", ["tpe", "random", "cmaes"])
def test_optunas_samplers_measure_the_hints_first(strategy: str) -> None:
    """Optuna's samplers know nothing of hints: the tuner measures them first, a hint that
    names only some knobs completed with the others' defaults, one outside the space left
    out."""
    surface = SYNTHETIC["coupled"]()
    hints = [{"eager": 1 << 15, "chunks": 11, "polls": 400}, {"chunks": 7},
             {"chunks": 99}]  # fmt: skip
    trials = searched(study_on(surface, strategy, 8, hints=hints))
    defaults = surface.space.defaults()
    assert [t.config for t in trials[:2]] == [hints[0], {**defaults, "chunks": 7}]
    assert all(t.config["chunks"] != 99 for t in trials)


def test_many_hints_are_all_measured_and_no_control_takes_one() -> None:
    """More hints than the batches before the first control run: each batch is handed
    as many as it asks for, so the control runs' trials (asked between batches) never
    take one (Optuna hands an enqueued trial to whichever ask comes next)."""
    surface = SYNTHETIC["coupled"]()
    hints = [{"chunks": k} for k in (1, 2, 3, 5, 6, 7, 8, 9, 10)]
    study = study_on(surface, "tpe", 14, hints=hints)
    trials = searched(study)
    assert [t.config["chunks"] for t in trials[:9]] == [h["chunks"] for h in hints]
    controls = StudyView(study).by_role(Role.CONTROL)
    assert controls and all(not t.config for t in controls)
    assert all(not study.trials[t.number].params for t in controls)


def test_strategy_options_are_checked() -> None:
    assert get_strategy("ga", {"population": "12"}).options["population"] == 12
    with pytest.raises(UsageError, match="unknown option 'popsize'"):
        get_strategy("ga", {"popsize": "12"})
    with pytest.raises(UsageError, match="is not a int"):
        get_strategy("ga", {"population": "many"})
    with pytest.raises(UsageError, match="must be one of tournament, roulette"):
        get_strategy("ga", {"selection": "rank"})
    with pytest.raises(UsageError, match="unknown option"):
        get_strategy("tpe", {"population": "3"})
    with pytest.raises(UsageError, match="arms must be among"):
        get_strategy("auto", {"arms": "tpe,annealing"})


def test_roulette_ga_runs() -> None:
    run = run_strategy("ga", SYNTHETIC["parabolas"](), 0.0, 1, 20, {"selection": "roulette"})
    assert len(run.regret) == 20 and run.regret[-1] < run.regret[0]


def test_race_scores_the_recommendation_noise_free() -> None:
    space = space_of(int_knob("a", 0, 3, 0), int_knob("b", 0, 2, 0))
    surface = Surface("tiny", space, lambda c: 1.0 + abs(int(c["a"]) - 2) + 0.01 * int(c["b"]), "")
    assert surface.optimum == 1.0 and surface.default_value == 3.0
    run = run_strategy("grid", surface, 0.0, 0, 13)  # every configuration, the reference first
    assert len(run.regret) == 13 and run.regret[0] == 2.0 and run.regret[-1] == 0.0
    assert run.reached == 1 + next(i for i, r in enumerate(run.regret[1:], 1) if r <= 0.02)
    summary = Summary(
        [
            StrategyRun("random", "s", 0.3, 0, [0.1] * 5, None, 0.0),
            StrategyRun("ga", "s", 0.3, 0, [0.1, 0.1, 0.0, 0.0, 0.0], 3, 0.0),
            StrategyRun("dqn", "s", 0.3, 0, [0.1] * 5, None, 0.0),
            StrategyRun("model", "s", 0.3, 0, [0.1] * 5, None, 0.0),
        ],
        budget=5,
    )
    assert summary.per_strategy() == {"random": 5.0, "ga": 3.0, "dqn": 5.0, "model": 5.0}
    assert summary.losses_to_random() == {}
    summary.runs[0] = StrategyRun("random", "s", 0.3, 0, [0.0] * 5, 1, 0.0)
    assert summary.losses_to_random() == {"ga": ["s"], "dqn": ["s"], "model": ["s"]}


def test_race_json_summary_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "benchmarks/strategies.py",
            "--json",
            "--seeds",
            "2",
            "--budget",
            "8",
            "--strategies",
            "random,auto",
            "--surfaces",
            "categorical,replay-openmpi",
            "--png",
            str(tmp_path / "race.png"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(data["summary"]) == {"random", "auto"}
    assert all(1 <= v <= 8 for v in data["summary"].values())
    assert len(data["cells"]) == 2 * 4  # 3 noise levels of categorical + the replayed space
    # the drift cases: each strategy by both designs, with the runs each spent
    assert set(data["drift"]) == set(data["drift_fixed"]) == {"random", "auto"}
    assert all(0 < v <= 1 for v in [*data["drift"].values(), *data["drift_fixed"].values()])
    assert all(v == 3 * 8 for v in data["runs_fixed"].values())  # 3 runs a trial, nothing else
    assert all(data["runs"][s] < data["runs_fixed"][s] for s in data["runs"])  # raced
    # per strategy, drift (none, 2.5x, 1.3x) and design: shares after the search and after
    # the confirmation
    assert len(data["designs"]) == 2 * 3 * 3  # fixed, raced and --gate risk
    for cell in data["designs"]:
        assert 0 < cell["share_worst"] <= cell["share"] <= 1
        assert 0 < cell["confirmed_worst"] <= cell["confirmed"] <= 1


def test_drift_comes_in_phases_of_5_to_30_runs() -> None:
    surface = SYNTHETIC["parabolas"]()
    executor = surface.executor(0.0, 3, drift=2.5)
    base = surface.value(surface.space.defaults())
    factors = []
    for _ in range(400):
        record = executor.run(None, 1.0)
        assert record.value is not None
        factors.append(round(record.value / base, 9))
    assert set(factors) == {1.0, 2.5}
    lengths = [len(list(g)) for _, g in itertools.groupby(factors)]
    assert all(5 <= n <= 30 for n in lengths[1:-1]) and len(lengths) >= 400 // 30
    # without drift the same seed gives the same per-run noise as before drift existed
    plain, drifting = surface.executor(0.1, 4), surface.executor(0.1, 4, drift=1.0)
    assert [plain.run(None, 1).value for _ in range(5)] == [
        drifting.run(None, 1).value for _ in range(5)
    ]


def test_confirm_power_accepts_a_clear_best_and_not_a_tie(tmp_path: Path) -> None:
    """benchmarks/confirm_power.py: the confirmation's ceiling per table, by the tuner's test."""
    recorded = json.loads(Path("benchmarks/data/table-openmpi-ct_demo.json").read_text())
    rng = np.random.default_rng(3)
    default = list(1.0 + 0.01 * rng.random(5))
    chosen = recorded["trials"][7]["params"]

    from commtune.knobs import space_from_json

    itself = dict(space_from_json(recorded["library"], recorded["space"]).defaults())

    def table(name: str, best: list[float]) -> None:
        # the configuration with every knob at its default runs as the defaults do (its runs
        # and theirs are one configuration's: the race pools them)
        trials = [{"params": t["params"], "values": list(default) if t["params"] == itself
                   else [2.0] * 5} for t in recorded["trials"]]  # fmt: skip
        trials[7]["values"] = best
        (tmp_path / f"table-{name}.json").write_text(
            json.dumps({**recorded, "default": default, "trials": trials})
        )

    table("clear", [0.8 * v for v in default])  # every run of the best beats every default
    table("tie", list(default))  # the best is the defaults again
    out = subprocess.run(
        [sys.executable, "benchmarks/confirm_power.py", "--data", str(tmp_path), "--json",
         "--pairs", "5,10", "--draws", "20", "--jobs", "1"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    rows = {r["table"]: r for r in json.loads(out.stdout.strip().splitlines()[-1])["tables"]}
    assert rows["clear"]["best"] == chosen
    assert rows["tie"]["best"] in (chosen, itself)  # both run as the defaults do
    assert rows["clear"]["beats"] == 1.0 and rows["clear"]["speedup"] == pytest.approx(1.25)
    assert rows["clear"]["accepted"] == {"5": 1.0, "10": 1.0}
    # a tie is accepted no more often than the gate's error rate allows (5 %, 20 draws)
    assert rows["tie"]["accepted"]["5"] <= 0.1 and rows["tie"]["accepted"]["10"] <= 0.1


def _race_module() -> Any:
    """benchmarks/strategies.py, imported by path (it is a script, not a module)."""
    return _script("strategies")


def _script(name: str) -> Any:
    """``benchmarks/<name>.py``, imported by path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_script", f"benchmarks/{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_a_table_where_nothing_beats_the_defaults_is_apart_and_ties_are_not_wins() -> None:
    """Issue 47: on a table whose best is no faster than the defaults every design 'keeps
    the defaults' and would score a gain of 1.0: such a table has no gain figure (null), is
    reported apart by its tail and runs, and is never counted as a win. Issue 75: so is a
    table whose best beats the defaults on its own runs only, not held out (its gain is its
    runs' luck); the earlier yardstick's line still counts it."""
    race = _race_module()

    def run(changed: bool, share: float) -> Any:
        return SimpleNamespace(changed=changed, estimate=1.0 / share if changed else None,
                               runs=10, confirm_runs=0, share=share)  # fmt: skip

    def cell(best: float, shares: list[float]) -> dict:
        return race.cell([run(s != 1.0 / best, s) for s in shares], lambda r: r.share, best)

    null = {"table": "table-app-null", "optimum_speedup": 0.98, "held_out": 0.97}
    null.update({k: cell(0.98, [1 / 0.98] * 4) for k in race.KEYS})
    gain = {"table": "table-app-gain", "optimum_speedup": 1.2, "held_out": 1.15}
    gain.update({k: cell(1.2, [1.0] * 4) for k in race.KEYS})  # all at the best
    luck = {"table": "table-app-luck", "optimum_speedup": 1.04, "held_out": 1.002}
    luck.update({k: cell(1.04, [1 / 1.04] * 4) for k in race.KEYS})  # the defaults kept
    assert null["ours"]["gain"] is None and gain["ours"]["gain"] == pytest.approx(1.0)
    figures = race.summary([null, gain, luck])
    assert figures["all"]["tables"] == 1 and figures["all"]["wins"] == 1
    assert figures["no gain"]["tables"] == ["table-app-null", "table-app-luck"]
    assert figures["own"]["all"]["tables"] == 2  # the earlier yardstick: its own runs
    assert figures["own"]["all"]["gain"]["ours"] == pytest.approx(0.5)
    text = race.tables_table([null, gain, luck])
    assert "no gain to capture (2" in text and "on 1 of 1 tables with a gain" in text
    assert "on its own runs (2)" in text


def test_risk_calibration_counts_what_the_verdict_hands_back() -> None:
    """benchmarks/risk_calibration.py: studies of the tuner's defaults on a machine where
    every configuration is slower, and on one where all are equal; what it counts is what
    the verdict handed back."""
    out = subprocess.run(
        [sys.executable, "benchmarks/risk_calibration.py", "--seeds", "3", "--noises", "0,0.03",
         "--choices", "4", "--slower", "0.5,0", "--json", "--jobs", "1"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    rows = {(r["slower"], r["noise"]): r for r in json.loads(out.stdout)["cases"]}
    assert set(rows) == {(0.5, 0.0), (0.5, 0.03), (0.0, 0.0), (0.0, 0.03)}
    assert all(r["studies"] == 3 and r["choices"] == 4 for r in rows.values())
    # 50 % slower in every run: never handed back; 3 studies cannot tell 0 from 5 % apart
    for noise in (0.0, 0.03):
        slow = rows[(0.5, noise)]
        assert slow["handed_back"] == 0 and slow["claims_median"] is None
        assert slow["interval"][0] == 0.0 and slow["interval"][1] > 0.05
        assert slow["held"] is None
    # deterministic and all equal: nothing clears the worthwhile gain, nothing is claimed
    assert rows[(0.0, 0.0)]["handed_back"] == 0
    assert rows[(0.0, 0.0)]["held"] is None and rows[(0.0, 0.03)]["held"] is None


def test_risk_calibration_tells_a_rate_above_the_risk_from_one_below() -> None:
    script = _script("risk_calibration")
    case = script.Case(noise=0.1, choices=6, slower=0.04, risk=0.05)
    over = script.summarise(case, [(True, 1.05)] * 30 + [(False, None)] * 70)
    assert over["share"] == 0.3 and over["held"] is False
    assert over["claims_median"] == over["claims_max"] == 1.05
    under = script.summarise(case, [(False, None)] * 400)
    assert under["held"] is True and under["interval"][1] < 0.05
    assert script.summarise(case, [(True, 1.02)] + [(False, None)] * 19)["held"] is None
    # the study keeps what the knob is: its default's value is the defaults, not an arm
    stored = script.flat(4, 0.04).space.to_json()
    assert stored[0]["definition"]["default"] == "v0"


def test_a_synthetic_surface_study_knows_its_knobs_defaults() -> None:
    """The synthetic knobs are in no catalog: a study stores what each is, so the verdict
    knows the defaults' values (not an arm, not handed back as a change)."""
    from commtune.tune._confirm import knobs_of

    for name, make in SYNTHETIC.items():
        space = make().space
        target = Target.of("race", ["race", name], space, Plan())
        study = open_study(optuna.storages.InMemoryStorage(), target)
        knobs = knobs_of(StudyView(study))
        assert knobs is not None, name
        assert {k: knob.default for k, knob in knobs.items()} == space.defaults(), name


def test_table_truths_judges_a_races_estimates_only_where_the_truth_is_known(
    tmp_path: Path,
) -> None:
    """benchmarks/table_truths.py --race (issue 47, twelfth part): an estimate is within 3 %
    of the truth or not only on a table that knows its truths to 3 % (a deterministic one
    exactly); on one whose truths are 30 % uncertain it cannot be judged, whatever it is."""

    def row(table: str, bias: float | None, handed: int) -> dict:
        return {"table": f"benchmarks/data/{table}.json",
                "ours": {"bias": bias, "handed": handed}}  # fmt: skip

    race = tmp_path / "race.json"
    race.write_text(json.dumps({"tables": [
        row("table-smpi-minife-256-fat", 1.02, 20),  # deterministic: within
        row("table-app-comd-openmpi5", 1.05, 4),  # truths known to 1 %: outside
        row("table-openmpi-ct_phases", 1.0, 12),  # truths known to 30 %: cannot judge
        row("table-app-snap-mpich", None, 0),  # nothing handed back: no estimate to judge
    ]}))  # fmt: skip
    command = [sys.executable, "benchmarks/table_truths.py", "--race", str(race), "--rounds", "100"]
    out = subprocess.run([*command, "--json"], capture_output=True, text=True, check=True,
                         timeout=300)  # fmt: skip
    judged = {Path(r["table"]).stem: r for r in json.loads(out.stdout)["judged"]}
    assert set(judged) == {"table-smpi-minife-256-fat", "table-app-comd-openmpi5",
                           "table-openmpi-ct_phases"}  # fmt: skip
    assert judged["table-smpi-minife-256-fat"]["truth_error"] == 0.0
    assert judged["table-smpi-minife-256-fat"]["within"] is True
    assert judged["table-app-comd-openmpi5"]["truth_error"] < 0.03
    assert judged["table-app-comd-openmpi5"]["within"] is False
    assert judged["table-openmpi-ct_phases"]["truth_error"] > 0.1
    assert judged["table-openmpi-ct_phases"]["within"] is None
    text = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    assert (
        "within 3 % of the truth on 1 of 2 tables" in text and "outside: app-comd-openmpi5" in text
    )
    assert "1 table cannot judge it" in text and "(openmpi-ct_phases)" in text
    # not a race: one line, exit 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tables": [{"table": "x"}]}))
    refused = subprocess.run([*command[:2], "--race", str(bad)], capture_output=True,
                             text=True, check=False, timeout=60)  # fmt: skip
    assert refused.returncode == 2 and refused.stdout == ""
    assert len(refused.stderr.strip().splitlines()) == 1 and "not a race's JSON" in refused.stderr
    bad.write_text(json.dumps({"tables": [row("table-of-no-program", 1.0, 1)]}))
    refused = subprocess.run([*command[:2], "--race", str(bad)], capture_output=True,
                             text=True, check=False, timeout=60)  # fmt: skip
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "no table" in refused.stderr


def test_the_race_out_of_sample_counts_every_table_in_the_class_fixed_for_it() -> None:
    """benchmarks/out_of_sample.py (issue 96): a table's class is fixed in the yardstick
    file by what it records, "no gain" where its best is not 1 % faster held out; a class's
    figure is its median table's gain with a bootstrap interval over its tables, the no-gain
    class by its tail and kept share alone (no gain figure); and one seeded study scores
    what it hands back on the rounds it was not dealt."""
    oos = _script("out_of_sample")
    assert oos.program_class("table-smpi-comd-256-fat") == "simulated"
    assert oos.program_class("table-app-hpcg-openmpi5") == "real"
    assert oos.program_class("table-bed2-mpich-comd") == "real"  # a real program on the bed
    assert oos.program_class("table-ucx-openmpi-2n-ct_demo") == "project"
    fixed = json.loads(oos.YARDSTICK.read_text())["tables"]
    assert all(v["class"] in oos.CLASSES for v in fixed.values())
    assert all((v["class"] == "no gain") == (v["held_out"] <= 1.01) for v in fixed.values())

    def cell(gain: float | None, tail: int) -> dict:
        return {"gain": gain, "tail": tail, "kept": 1, "seeds": 10, "runs": 20.0, "best": 1.1}

    rows = {f"t{i}": {c: cell(g, i % 2) for c in oos.COLUMNS}
            for i, g in enumerate([0.1, 0.5, 0.9, None])}  # fmt: skip
    klass = {"t0": "real", "t1": "real", "t2": "real", "t3": "no gain"}
    figures = oos.classes(rows, klass)
    assert figures["real"]["tuner"]["gain"] == pytest.approx(0.5)
    low, high = figures["real"]["tuner"]["interval"]
    assert 0.1 <= low <= 0.5 <= high <= 0.9
    assert figures["real"]["tuner"]["tail"] == 1 and figures["real"]["tuner"]["studies"] == 30
    assert "gain" not in figures["no gain"]["tuner"] and figures["no gain"]["tuner"]["tail"] == 1
    done = oos.study(("table-openmpi-ct_demo", 3, "tuner", 30))
    surf = oos.surface("table-openmpi-ct_demo", 3)
    assert done["best"] == pytest.approx(1 + surf.default_regret) and done["runs"] <= 30
    assert surf.replay is not None and surf.replay.name.endswith("-3-dealt.json")
