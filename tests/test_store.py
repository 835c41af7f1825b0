"""One storage suite over every kind of storage a user can give: a SQLite file, Optuna's
journal file (commtune's tables in the SQLite file beside it) and a PostgreSQL server. Each
repository of the store writes, reads back, replaces and survives reopening alike on all three
(the claims' contract is in ``tests/test_workers.py``, the migrations in
``tests/test_contracts.py``)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import sqlalchemy as sa

from commtune.errors import UsageError
from commtune.platform import Fingerprint
from commtune.store import BACKENDS, SCHEMA_VERSION, Store, backend
from commtune.study import (
    Acceptance,
    Role,
    Source,
    StudySpec,
    StudyView,
    TrialWriter,
    ask,
    set_acceptance,
    set_spec,
)

from .conftest import STORAGE_KINDS, storage_url

FP = Fingerprint("cpu", 2, "openmpi", "4.1.4", "btl:vader", ranks_per_node=2)


@pytest.fixture(params=STORAGE_KINDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return storage_url(request.param, tmp_path, request)


def test_a_new_storage_has_this_schema_and_reopens(url: str) -> None:
    store = Store(url)
    with store.engine.connect() as conn:
        version = conn.execute(
            sa.text("SELECT value FROM commtune_meta WHERE key = 'schema_version'")
        ).scalar_one()
    assert int(version) == SCHEMA_VERSION
    key = store.save_platform(FP)
    store.optuna.get_all_studies()  # a journal file is made by Optuna's first look
    again = Store(url, create=False)  # tables made already: nothing to make or migrate
    assert again.platform(key) == FP and again.platform("nothing") is None


def test_each_repository_writes_replaces_and_reads_back(url: str) -> None:
    store = Store(url)
    platform = store.save_platform(FP)
    assert store.save_platform(FP) == platform  # the same fingerprint: one row
    store.record_knob_value(platform, "btl", "tcp", False, "refused")
    store.record_knob_value(platform, "btl", "tcp", True, "")  # checked again: replaced
    store.record_knob_value(platform, "btl", 65536, True, "")
    assert store.knob_values(platform, "btl") == {"tcp": (True, ""), 65536: (True, "")}
    for trial, run in ((1, 1), (0, 0), (1, 0)):
        store.save_profile("s", trial, run, {"t": trial, "r": run})
    store.save_profile("s", 1, 0, {"t": 1, "r": 0, "again": True})
    assert [(t, r) for t, r, _ in store.profiles("s")] == [(0, 0), (1, 0), (1, 1)]
    assert store.profiles("s", 1)[0][2] == {"t": 1, "r": 0, "again": True}
    store.save_sample(platform, {"v": 1})
    store.save_sample(platform, {"v": 2})
    assert store.sample(platform) == {"v": 2} and store.samples() == [{"v": 2}]
    store.save_training_run(platform, "p1", "", {"value": 1.0})
    store.save_training_run(platform, "p1", "", {"value": 2.0})
    store.save_training_run(platform, "p1", '{"k": 1}', {"value": 3.0})
    assert store.training_runs(platform) == {
        ("p1", ""): {"value": 2.0}, ("p1", '{"k": 1}'): {"value": 3.0}}  # fmt: skip
    store.save_model(platform, {"w": [1, 2]})
    assert store.models() == {platform: {"w": [1, 2]}}


def test_a_study_and_its_records_survive_reopening(url: str) -> None:
    spec = StudySpec(["true"], "openmpi", [{"knob": "k", "values": [1, 2]}], "wall", 2)
    study = optuna.create_study(study_name="s", storage=Store(url).optuna)
    set_spec(study, spec, "platform-key")
    trial = ask(study)
    write = TrialWriter(trial)
    write.role(Role.SEARCH)
    write.config({"k": 2})
    write.runs([{"value": 1.5, "wall": 1.5, "relative": 0.75, "block": "0.0", "seq": 0}])
    study.tell(trial, 0.75)
    set_acceptance(study, Acceptance(Source.SEARCH, {"k": 2}, True, "faster", measured_trials=1))
    view = StudyView(optuna.load_study(study_name="s", storage=Store(url, create=False).optuna))
    (record,) = view.records
    assert (record.role, dict(record.config), record.value) == (Role.SEARCH, {"k": 2}, 0.75)
    assert record.relatives() == [0.75] and record.worker is not None
    assert view.spec() == spec and view.platform() == "platform-key"
    verdict = view.acceptance()
    assert verdict is not None and verdict.accepted and verdict.params == {"k": 2}


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_file_that_is_not_there_is_not_made_when_reading(kind: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'no.db'}" if kind == "sqlite" else f"journal://{tmp_path / 'j'}"
    with pytest.raises(UsageError, match="no storage at"):
        Store(url, create=False)
    assert list(tmp_path.iterdir()) == []


def test_every_backend_is_run_by_the_contract_suite(tmp_path: Path) -> None:
    """Each kind of the storage contract suite opens one backend class, and every backend
    class is one of those kinds: a new backend without its kind in the suite fails here."""
    urls = {
        "sqlite": str(tmp_path / "s.db"),
        "journal": f"journal://{tmp_path / 's.journal'}",
        "postgres": "postgresql://me@localhost/db",
    }
    assert sorted(urls) == sorted(STORAGE_KINDS)
    assert {type(backend(u)) for u in urls.values()} == set(BACKENDS)
