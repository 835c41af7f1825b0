"""A forced collective algorithm beside a loaded Open MPI rules file: Open MPI 4.1 takes the
file's choice over the forced one, so the run gets a copy of the file without the forced
collectives (the others keep their rules), in ``tune`` and in ``commtune run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commtune.mpi import COLL_IDS, format_rules, parse_rules
from commtune.mpi._ompi_rules import FILE_ENV, USE_ENV, without_forced
from commtune.native import cache_dir

from .conftest import last_json, needs_openmpi, run_cli

ALLREDUCE, BCAST = COLL_IDS["allreduce"], COLL_IDS["bcast"]
RULES = {ALLREDUCE: {2: [(0, 1, 0, 0), (4096, 4, 0, 0)]}, BCAST: {2: [(0, 6, 0, 0)]}}
FORCE = "OMPI_MCA_coll_tuned_allreduce_algorithm"


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "site-rules.conf"
    path.write_text(format_rules(RULES, "a site's sampled rules"))
    return path


def test_the_forced_collective_leaves_the_file_the_others_stay(
    rules_file: Path, tmp_path: Path
) -> None:
    env = {USE_ENV: "1", FILE_ENV: str(rules_file), FORCE: "ring"}
    out = without_forced(env, tmp_path / "cache")
    copy = Path(out[FILE_ENV])
    assert set(out) == {FILE_ENV} and copy.parent == tmp_path / "cache"
    assert parse_rules(copy.read_text()) == {BCAST: RULES[BCAST]}
    assert without_forced(env, tmp_path / "cache") == out  # the same copy, named by content
    both = {**env, "OMPI_MCA_coll_tuned_bcast_algorithm": "6"}
    assert parse_rules(Path(without_forced(both, tmp_path / "c")[FILE_ENV]).read_text()) == {}
    # nothing to reconcile: not forced, forced to "the library decides", rules off, no file,
    # a collective the file does not list, a file Open MPI could not read either
    for other in (
        {FORCE: "0"},
        {FORCE: "ignore"},
        {USE_ENV: "0"},
        {FILE_ENV: ""},
        {FORCE: "0", "OMPI_MCA_coll_tuned_alltoall_algorithm": "2"},
        {FILE_ENV: str(tmp_path / "missing.conf")},
    ):
        assert without_forced({**env, **other}, tmp_path / "none") == {}
    broken = tmp_path / "broken.conf"
    broken.write_text("1\n2\n1\n2\n1\n64 3 0 0\n")  # first size not 0: Open MPI gives up
    assert without_forced({**env, FILE_ENV: str(broken)}, tmp_path / "none") == {}
    assert not (tmp_path / "none").exists()


def _loaded_files(log: Path) -> list[str]:
    return [line.strip() for line in log.read_text().splitlines() if line.strip()]


@needs_openmpi
def test_tune_and_run_give_the_ranks_the_reconciled_file(
    rules_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real mpirun: each rank writes the rules file it was given. The reference (nothing
    forced) keeps the site's file; a trial forcing allreduce gets the copy without it."""
    log = tmp_path / "files.log"
    program = ["sh", "-c", f'echo "${FILE_ENV}" >> {log}']
    monkeypatch.setenv(USE_ENV, "1")
    monkeypatch.setenv(FILE_ENV, str(rules_file))
    storage = f"sqlite:///{tmp_path / 's.db'}"
    code, _, err = run_cli(["tune", "--mpi", "openmpi", "--knob",
                            "coll_tuned_allreduce_algorithm=ring", "--no-interposer",
                            "--strategy", "grid", "--trials", "2", "--repeats", "1",
                            "--confirm", "0", "--study", "f", "--storage", storage, "--json",
                            "--", "mpirun", "--allow-run-as-root", "-np", "2", *program],
                           capsys)  # fmt: skip
    assert code == 0, err
    files = _loaded_files(log)
    copies = [f for f in files if f != str(rules_file)]
    assert str(rules_file) in files and copies  # the reference's and the forced trial's
    assert {Path(c).parent for c in copies} == {cache_dir() / "rules"}
    assert parse_rules(Path(copies[0]).read_text()) == {BCAST: RULES[BCAST]}
    # commtune run with a study's configuration that forces allreduce (exported as JSON here
    # and read back by run, through a study accepted on recorded timings)
    replay = tmp_path / "replay.json"
    replay.write_text(
        json.dumps(
            {
                "default": [1.0, 1.01, 0.99],
                "trials": [
                    {
                        "params": {"coll_tuned_allreduce_algorithm": "ring"},
                        "values": [0.5, 0.51, 0.49],
                    }
                ],
            }
        )
    )
    code, out, err = run_cli(["tune", "--mpi", "openmpi", "--replay", str(replay), "--knob",
                              "coll_tuned_allreduce_algorithm=ring", "--strategy", "grid",
                              "--trials", "2", "--study", "r", "--storage", storage, "--json"],
                             capsys)  # fmt: skip
    assert code == 0 and last_json(out)["accepted"], err
    code, out, _ = run_cli(["export", "r", "--storage", storage, "--format", "mca"], capsys)
    assert code == 0 and "# forced: allreduce; a coll_tuned rules file" in out
    assert "coll_tuned_allreduce_algorithm = ring" in out.splitlines()
    log.unlink()
    done = subprocess.run(
        [sys.executable, "-m", "commtune", "run", "--study", "r", "--storage", storage, "--",
         "mpirun", "--allow-run-as-root", "-np", "1", *program],
        env=os.environ, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (given,) = _loaded_files(log)
    assert given != str(rules_file) and parse_rules(Path(given).read_text()) == {
        BCAST: RULES[BCAST]
    }
