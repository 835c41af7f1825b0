"""Knowledge across studies: what earlier studies of a storage found is listed per platform
and library, and a new study on the same platform and library tries it first, the most
similar program's answer first (recorded measurements: no MPI needed)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import optuna
import pytest

from commtune.knowledge import Known, similar
from commtune.knowledge._base import distance
from commtune.store import Store
from commtune.study import Role, TrialRecord

from .conftest import last_json, run_cli
from .test_replay import ALGOS, surface, tune_args


def _entry(name: str, features: dict[str, float] | None, accepted: bool = True,
           platform: str | None = "p", library: str = "mpich") -> Known:  # fmt: skip
    return Known(name, name, library, platform, accepted, 1.2, None, {"k": name}, 10, features)


def test_answers_come_most_similar_program_first_on_the_same_platform_and_library() -> None:
    here = {"mean_size": 1000.0, "collective_share": 0.5, "ranks": 4.0}
    entries = [
        _entry("far", {"mean_size": 1e6, "collective_share": 0.01, "ranks": 64.0}),
        _entry("near", {"mean_size": 1200.0, "collective_share": 0.45, "ranks": 4.0}),
        _entry("unprofiled", None),
        _entry("other-platform", here, platform="q"),
        _entry("other-library", here, library="openmpi"),
    ]
    ranked = similar(entries, here, "p", "mpich")
    assert [k.study for k, _ in ranked] == ["near", "far", "unprofiled"]
    assert ranked[0][1] < 0.1 < ranked[1][1] < ranked[2][1] == 1.0
    assert distance(here, here) == 0.0 and distance(here, {"other": 1.0}) == 1.0
    assert [k.study for k, _ in similar(entries, None, "p", "mpich", limit=2)] == ["far", "near"]


@pytest.mark.parametrize("strategy", ["auto", "tpe"])
def test_a_new_study_starts_from_an_earlier_study_s_answer(
    tmp_path: Path, storage: str, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    """Whatever the strategy: ``auto`` proposes the hint itself; TPE (the default) is one
    of Optuna's samplers, which know nothing of hints, and the tuner measures it first
    (before, a TPE study never tried what earlier studies found)."""
    trials = []
    for algo, progress in itertools.product(ALGOS, [False, True]):
        value = surface(algo, progress)
        values = [None] if value is None else [value * f for f in (1.0, 1.02, 0.98)]
        params = {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": algo, "MPIR_CVAR_ASYNC_PROGRESS": progress}
        trials.append({"params": params, "values": values})
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"default": [1.0, 1.01, 0.99], "trials": trials}))
    first = tune_args(path, storage, "grid", 13)
    first[first.index("s")] = "first"
    code, out, err = run_cli(first, capsys)
    assert code == 0 and last_json(out)["accepted"], err
    answer = last_json(out)["accepted_params"]
    assert answer == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"}

    code, out, err = run_cli(tune_args(path, storage, strategy, 4), capsys)
    assert code == 0, err
    assert "known start from study first" in err
    study = optuna.load_study(study_name="s", storage=Store(storage).optuna)
    searched = [TrialRecord.of(t) for t in study.get_trials()]
    searched = [t for t in searched if t.role is Role.SEARCH]
    assert searched[0].arm == ("hint" if strategy == "auto" else None)
    assert searched[0].config["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "recursive_doubling"

    code, out, _ = run_cli(["knowledge", "--storage", storage, "--json"], capsys)
    assert code == 0
    (group,) = last_json(out)["knowledge"]
    assert group["library"] == "mpich" and group["platform"] is None
    by_study = {k["study"]: k for k in group["studies"]}
    assert set(by_study) == {"first", "s"}
    assert by_study["first"]["accepted"] and by_study["first"]["answer"] == answer

    # --no-knowledge: a fresh study starts from the strategy's own design
    code, _, err = run_cli([*tune_args(path, storage, "auto", 4)[:-1], "--study", "cold",
                            "--no-knowledge", "--json"], capsys)  # fmt: skip
    assert code == 0 and "known start" not in err
