"""The stale check: studies tuned on Debian's Open MPI 4.1, checked and run on Open MPI 5.0
(the package index's): still faster, no longer faster (then run with the defaults), refused
for a knob 5.0 does not have, and unchanged (nothing run) on the installation of the study."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from commtune.mpi import MPISpec, find_installations, installation_of
from commtune.store import Store
from commtune.study import checks_of
from commtune.study import installation_of as study_installation

from .conftest import last_json, needs_openmpi, run_cli

pytestmark = [pytest.mark.mpi, needs_openmpi]

# Its speed follows the knobs under test, so each check's answer is known: 4 TCP links are
# twice as fast on both versions, 3 links twice as fast on 4.1 and twice as slow on 5.0 (a
# regression after an upgrade), a vader eager limit (4.1's shared memory) twice as fast.
PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int is(const char *name, const char *value) {
    const char *set = getenv(name);
    return set != NULL && strcmp(set, value) == 0;
}

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double seconds = 0.2;
    if (is("OMPI_MCA_btl_tcp_links", "4") || getenv("OMPI_MCA_btl_vader_eager_limit"))
        seconds = 0.1;
    if (is("OMPI_MCA_btl_tcp_links", "3")) seconds = OMPI_MAJOR_VERSION >= 5 ? 0.4 : 0.1;
    double t0 = MPI_Wtime();
    struct timespec pause = {0, (long)(seconds * 1e9)};
    nanosleep(&pause, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    const char *links = getenv("OMPI_MCA_btl_tcp_links");
    if (rank == 0) printf("links %s time %.6f s\n", links ? links : "-", MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
"""
METRIC = r"regex:time ([0-9.]+) s"


def _command(mpi: str, tmp_path: Path) -> list[str]:
    from commtune.launch import launcher_for

    inst = installation_of(mpi)
    source = tmp_path / "speed.c"
    source.write_text(PROGRAM)
    program = tmp_path / f"speed-{inst.version}"
    subprocess.run([inst.mpicc, "-o", str(program), str(source)], check=True,
                   env=inst.tool_env())  # fmt: skip
    return launcher_for(inst).command(2, [str(program)])


@pytest.fixture
def commands(tmp_path: Path) -> tuple[list[str], list[str]]:
    if not any(MPISpec.parse("openmpi@5").matches(i) for i in find_installations()):
        pytest.skip("no openmpi@5 installation ('make mpis')")
    return _command("openmpi", tmp_path), _command("openmpi@5", tmp_path)


def _tune(storage: str, name: str, knob: str, command: list[str], capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["tune", "--knob", knob, "--strategy", "grid", "--trials", "2", "--repeats", "1",
            "--confirm", "3", "--metric", METRIC, "--storage", storage, "--study", name,
            "--json", "--", *command]  # fmt: skip
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    assert last_json(out)["accepted"], out[-2000:]


def test_a_study_is_checked_on_another_installation_and_run_as_the_check_said(
    commands: tuple[list[str], list[str]],
    storage: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, new = commands
    _tune(storage, "four", "btl_tcp_links=4", old, capsys)
    _tune(storage, "three", "btl_tcp_links=3", old, capsys)
    record = optuna.load_study(study_name="four", storage=Store(storage).optuna)
    assert study_installation(record)["version"].startswith("4.1")  # type: ignore[index]

    # a check whose runs cannot run (here: no such program) is no evidence: run says so,
    # exits 3, runs nothing of the user's and stores nothing
    missing = [*new[:-1], "/nonexistent/speed"]  # the program is the last word
    done = subprocess.run([sys.executable, "-m", "commtune", "run", "--study", "three",
                           "--storage", storage, "--", *missing],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 3, done.stderr[-1500:]
    assert done.stderr.count("commtune: error:") == 1 and "could not run" in done.stderr
    three = optuna.load_study(study_name="three", storage=Store(storage).optuna)
    assert checks_of(three) == []

    # on the study's own installation nothing differs: nothing is run
    code, out, err = run_cli(["check", "four", "--storage", storage, "--json", "--", *old],
                             capsys)  # fmt: skip
    assert code == 0, err
    same = last_json(out)
    assert same["verdict"] == "unchanged" and same["runs"] == 0

    # on 5.0: the library version and installation differ, and the runs say
    code, out, err = run_cli(["check", "four", "--storage", storage, "--json", "--", *new],
                             capsys)  # fmt: skip
    assert code == 0, err
    faster = last_json(out)
    assert faster["verdict"] == "still faster" and faster["use_configuration"]
    assert {d["what"] for d in faster["differences"]} >= {"library version", "installation"}
    assert faster["speedup"] > 1.5 and faster["ci"][0] > 1.0
    assert faster["runs"] == 2 * faster["rounds"] and faster["rounds"] >= 3
    assert f"still faster ({faster['speedup']:.3f}x" in err and f"in {faster['runs']} runs" in err

    code, out, err = run_cli(["check", "three", "--storage", storage, "--json", "--", *new],
                             capsys)  # fmt: skip
    assert code == 0, err
    slower = last_json(out)
    assert slower["verdict"] == "no longer faster" and not slower["use_configuration"]
    assert slower["speedup"] < 0.7 and slower["decided"]
    stored = checks_of(optuna.load_study(study_name="three", storage=Store(storage).optuna))
    assert [c["verdict"] for c in stored] == ["no longer faster"]

    # run follows the stored check on 5.0 (the defaults), the configuration on 4.1
    argv = [sys.executable, "-m", "commtune", "run", "--study", "three", "--storage", storage,
            "--"]  # fmt: skip
    done = subprocess.run([*argv, *new], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "links - time" in done.stdout and "no longer faster" in done.stderr
    done = subprocess.run([*argv, *old], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "links 3 time" in done.stdout, done.stderr[-1500:]


def test_a_configuration_naming_a_knob_the_installation_lacks_is_refused(
    commands: tuple[list[str], list[str]],
    storage: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, new = commands
    _tune(storage, "vader", "btl_vader_eager_limit=8192", old, capsys)
    code, out, err = run_cli(["check", "vader", "--storage", storage, "--", *new], capsys)
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "btl_vader_eager_limit" in line and "Open MPI 5" in line
    record = optuna.load_study(study_name="vader", storage=Store(storage).optuna)
    assert checks_of(record) == []  # nothing run, nothing stored


def test_profile_recommends_what_won_for_a_similar_program_here(
    commands: tuple[list[str], list[str]],
    storage: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``commtune profile`` names, before its built-in rules, the configuration a study of
    a similar program accepted on this platform and library, with its speedup and CI; on
    another installation (another platform) the study is not offered."""
    old, new = commands
    _tune(storage, "four", "btl_tcp_links=4", old, capsys)
    code, out, err = run_cli(["profile", "--storage", storage, "--json", "--", *old], capsys)
    assert code == 0, err
    (entry,) = last_json(out)["known"]
    assert entry["study"] == "four" and entry["answer"] == {"btl_tcp_links": 4}
    assert entry["speedup"] > 1.5 and entry["ci"][0] > 1.0 and entry["distance"] < 0.2
    assert "commtune run --study four" in err
    code, out, err = run_cli(["profile", "--storage", storage, "--json", "--", *new], capsys)
    assert code == 0, err
    assert last_json(out)["known"] == []
    missing = Path(storage.split(":///", 1)[1]).with_name("none.db")
    code, out, err = run_cli(["profile", "--storage", str(missing), "--json", "--", *old], capsys)
    assert code == 0 and last_json(out)["known"] == [] and not missing.exists()
