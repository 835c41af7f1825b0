"""The wheel carries the C sources commtune builds per MPI on first use, so an installed
commtune (no checkout) can build libcommtune, the demo and the benchmarks."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from commtune import native

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_wheel_carries_every_c_source(tmp_path: Path) -> None:
    """A wheel that does not build is a failure (a broken pyproject.toml, a missing file);
    only a missing build tool (pip itself) is a reason to skip, named as such."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True,
                      check=False).returncode != 0:  # fmt: skip
        pytest.skip(f"no build tool: {sys.executable} has no pip")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
         "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"the wheel does not build: {done.stderr.strip()[-2000:]}"
    (wheel,) = tmp_path.glob("commtune-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = ROOT / "native"
    wanted = {
        f"commtune/csrc/{p.relative_to(sources)}"
        for p in sources.rglob("*")
        if p.suffix in (".c", ".h") or p.name == "mpi.protos"
    }
    assert wanted and wanted - names == set()


def test_the_sources_are_found_beside_the_package() -> None:
    """Unset COMMTUNE_NATIVE_DIR: the sources installed with the package (in a checkout, the
    link to native/)."""
    assert native.NATIVE_DIR.parent == Path(native.__file__).resolve().parent
    assert (native.NATIVE_DIR / "interposer" / "mpi.protos").is_file()
