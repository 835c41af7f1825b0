"""A run that cannot run is not evidence: ``commtune check`` (and ``run --study``'s check)
whose runs fail (a program that exits non-zero, a program that does not exist) says so in
one line with the reason, exits 3 and stores nothing, on Debian's Open MPI and MPICH; with
``--json`` the answer still ends with its JSON line, refusals included."""

from __future__ import annotations

import subprocess
from pathlib import Path

import optuna
import pytest

from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.store import Store
from commtune.study import checks_of

from .conftest import FAST_KNOB, PROGRAMS, SPEED_METRIC, VENDORS, last_json, run_cli

pytestmark = pytest.mark.mpi


@pytest.fixture(params=VENDORS)
def accepted(request: pytest.FixtureRequest, tmp_path: Path, storage: str, capsys):  # type: ignore[no-untyped-def]
    """(storage, launcher, a study of this MPI with an accepted configuration)."""
    vendor: Vendor = request.param
    inst = find_installation(vendor)
    program = tmp_path / "speed"
    subprocess.run([inst.mpicc, "-o", str(program), str(PROGRAMS / "knob_speed.c")], check=True,
                   env=inst.tool_env())  # fmt: skip
    launcher = launcher_for(inst)
    args = ["tune", "--knob", FAST_KNOB[vendor], "--strategy", "grid", "--trials", "2",
            "--repeats", "1", "--gate", "strict", "--confirm", "3",
            "--metric", SPEED_METRIC, "--storage", storage, "--study", "s",
            "--json", "--", *launcher.command(2, [str(program)])]  # fmt: skip
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    assert last_json(out)["accepted"], out[-2000:]
    return storage, launcher


@pytest.mark.parametrize(
    ("program", "reason"),
    # MPICH's mpiexec is at times killed by SIGPIPE itself when the program exits at once (its
    # proxy's socket closed under it, seen under make test's load): the launcher's own death,
    # named as such, is the reason then
    [("false", ("exit", "killed by signal")), ("/nonexistent/ct-program", ("",))],
    ids=["exits-non-zero", "missing-program"],
)
def test_a_check_whose_runs_fail_concludes_nothing_and_stores_nothing(
    accepted, program: str, reason: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    storage, launcher = accepted
    command = launcher.command(2, [program])
    code, out, err = run_cli(["check", "s", "--force", "--json", "--storage", storage, "--",
                              *command], capsys)  # fmt: skip
    assert code == 3, err
    lines = [line for line in err.splitlines() if line.startswith("commtune: error:")]
    assert len(lines) == 1 and "could not run here (round 1 of the comparison)" in lines[0], err
    assert any(r in lines[0] for r in reason), lines[0]
    assert "no longer faster" not in err + out and "undecided" not in err + out
    answer = last_json(out)
    assert answer["status"] == 3 and "could not run" in answer["error"]
    study = optuna.load_study(study_name="s", storage=Store(storage).optuna)
    assert checks_of(study) == []  # nothing stored


def test_a_refused_check_ends_with_its_json_line(
    storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["check", "nosuch", "--json", "--storage", storage, "--",
                              "mpirun", "-n", "2", "true"], capsys)  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "no storage" in err, err
    assert last_json(out) == {"error": err.strip().removeprefix("commtune: error: "),
                              "status": 2}  # fmt: skip
