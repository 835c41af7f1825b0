"""The real programs' build scripts (``benchmarks/apps``) where this machine's CI can run
them: IMB-MPI1 from Intel MPI's package, built (found) and run once with its metric read;
a build that cannot be made says why in one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from commtune.mpi import MPISpec, find_installations

from .conftest import needs_intel

BUILD = Path(__file__).resolve().parent.parent / "benchmarks" / "app_build.py"


def _build(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BUILD), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip


@needs_intel
@pytest.mark.slow
def test_imb_alltoallv_runs_under_the_metric_it_is_tuned_by(tmp_path: Path) -> None:
    done = _build("imb-alltoallv", "--mpi", "intel", "--run", "--work", str(tmp_path),
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    (line,) = done.stdout.splitlines()
    assert line.startswith("commtune tune --mpi ") and "IMB-MPI1 Alltoallv" in line
    value = re.search(r"metric ([0-9.eE+-]+)", done.stderr)
    assert value is not None and float(value.group(1)) > 0, done.stderr


def test_a_program_that_cannot_be_built_says_why(tmp_path: Path) -> None:
    done = _build("snap", "--mpi", "openmpi", cwd=tmp_path)  # no source
    assert done.returncode == 2
    assert done.stderr.strip() == "build.py: snap needs --source (a snapshot of lanl/SNAP)"
    five = [i for i in find_installations() if MPISpec.parse("openmpi@5").matches(i)]
    if not five:
        pytest.skip("no openmpi@5 installation ('make mpis')")
    (tmp_path / "SNAP" / "src").mkdir(parents=True)
    done = _build("snap", "--mpi", "openmpi@5", "--source", str(tmp_path / "SNAP"),
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "has no fortran compiler wrapper (mpif90 or mpifort beside" in done.stderr
