"""Training at small scale for the model (Behzad et al.): the command as a template, the
training runs at every training scale with their own controls, the search at the target,
one training serving a second target size, resuming without training again."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from commtune import native
from commtune.knobs import build_space, installed_knobs
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.strategies._history import History
from commtune.study import Scale, StudyView

from .conftest import needs_mpich, run_cli

KNOBS = ["--knob", "romio_cb_write", "--knob", "cb_buffer_size=4M,16M"]  # 6 configurations
MODEL = ["--strategy", "model", "--strategy-option", "initial=4"]
MODEL += ["--strategy-option", "top_k=2", "--strategy-option", "top_m=1"]
# the particles per rank as the metric: each run shows the size it ran at
PARTICLES = ["--metric", 'regex:"particles":([0-9]+)']


def _show(storage: str, study: str, capsys: pytest.CaptureFixture[str]) -> dict:
    code, out, _ = run_cli(["show", study, "--storage", storage, "--json"], capsys)
    assert code == 0
    return json.loads(out)


@needs_mpich
def test_training_runs_at_each_scale_then_the_search_at_the_target(
    storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    installation = find_installation(Vendor.MPICH)
    program, _ = native.build_io(installation)
    folder = tmp_path / "io"
    folder.mkdir()
    template = launcher_for(installation).command(
        2, [str(program), "-n", "{size}", "-d", str(folder)]
    )
    args = ["tune", "--mpi", "mpich", *KNOBS, *MODEL, *PARTICLES, "--trials", "4"]
    args += ["--repeats", "1", "--confirm", "0", "--seed", "3", "--storage", storage, "--json"]
    args += ["--max-runs", "100"]  # the trials bound this study, not the runs
    args += ["--timeout", "120"]  # a loaded machine does not fail a run (5x the reference's)
    more = [a if a != "4" else "5" for a in args]  # the same study, one trial more
    train = ["--scale", "size=16K", "--train", "size=4K,8K", "--study", "t"]
    code, _, err = run_cli([*args, *train, "--", *template], capsys)
    assert code == 0, err
    shown = _show(storage, "t", capsys)
    assert shown["spec"]["command"][-3] == "16K"  # the target, put into the template
    assert shown["spec"]["scale"]["template"] == template
    training = [t for t in shown["trials"] if t["role"] == "training"]
    # 4 design configurations at each training scale, and the defaults there (controls)
    configs = [t for t in training if t["params"]]
    assert len(configs) == 2 * 4 and all(t["relative"] for t in configs)
    # each ran once; again only at a scale where a control run failed (a run with no control
    # beside it cannot be placed: tune/_schedule.py)
    stored = StudyView(optuna.load_study(study_name="t", storage=storage)).training()
    failed = {str(r.scale) for r in stored if not r.config and not all(x.ok for x in r.runs)}
    again = {str(r.scale) for r in stored if r.config and len(r.runs) > 1}
    assert again <= failed and all(len(r.runs) <= 2 for r in stored if r.config)
    assert {t["runs"][0] for t in configs} == {4096, 8192}  # ran at their scale
    defaults = [t for t in training if not t["params"]]
    assert len(defaults) == 2 and all(len(t["runs"]) >= 2 for t in defaults)
    assert {t["runs"][0] for t in defaults} == {4096, 8192}
    assert all(r == 1.0 for t in training for r in t["relative"])  # same size, same value
    search = [t for t in shown["trials"] if t["role"] in ("reference", "search")]
    assert len(search) == 4 and {r for t in search for r in t["runs"]} == {16384}
    assert shown["runs"] == sum(len(t["runs"]) for t in shown["trials"])  # training counted
    # resumed with more trials: no training run again
    code, _, err = run_cli([*more, *train, "--", *template], capsys)
    assert code == 0, err
    again = _show(storage, "t", capsys)
    assert [t for t in again["trials"] if t["role"] == "training"] == training
    assert len([t for t in again["trials"] if t["role"] in ("reference", "search")]) == 5
    # another target size trained from the first study: no training of its own, the
    # model sees the first study's training runs
    reuse = ["--scale", "size=32K", "--train-from", "t", "--study", "u"]
    code, _, err = run_cli([*args, *reuse, "--", *template], capsys)
    assert code == 0, err
    other = _show(storage, "u", capsys)
    assert not [t for t in other["trials"] if t["role"] == "training"]
    assert {r for t in other["trials"] for r in t["runs"]} == {32768}
    study = optuna.load_study(study_name="u", storage=storage)
    inst = find_installation(Vendor.MPICH)
    space = build_space(installed_knobs(inst), "mpich", KNOBS[1::2], ())
    history = History.of_study(space, study)
    assert len(history.training) == 2 * 4 + 2 and history.target_scale == {"size": 32768.0}
    # a study trained from must have the same template
    other_template = [*template[:-1], str(tmp_path)]
    code, _, err = run_cli([*args, *reuse, "--study", "v", "--", *other_template], capsys)
    assert code == 2 and "trained with another command template" in err


def test_scale_templates_and_training_combinations() -> None:
    scale = Scale.parse(
        ["mpirun", "-np", "{ranks}", "k", "-n", "{size}", "${HOME}"],
        ["ranks=4", "size=1M"],
        ["ranks=1,2", "size=64K"],
    )
    assert scale is not None
    assert scale.command() == ["mpirun", "-np", "4", "k", "-n", "1M", "${HOME}"]
    assert scale.training_scales() == [
        {"ranks": "1", "size": "64K"},
        {"ranks": "2", "size": "64K"},
    ]
    assert Scale.from_json(scale.to_json()) == scale
    assert Scale.parse(["echo", "{x}"], [], []) is None  # no --scale: braces are left alone
