"""commtune as an HPC user installs and runs it: the wheel and the sdist built from this
checkout, the wheel installed into a fresh virtual environment in a temporary folder by an
ordinary user (no root, no checkout on any path, an empty cache), and from there a short
study on Debian's Open MPI and MPICH, ``check`` (a failing one too), ``report``, ``export``,
``profile`` and ``sample --quick``. Cleaning after killed runs leaves other users' files."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from commtune.mpi import Vendor, find_installation

from .conftest import FAST_KNOB, HAVE, PROGRAMS, SPEED_METRIC

ROOT = Path(__file__).resolve().parent.parent
USER = "ctuser"  # the ordinary user the checks run as
pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.alongside,  # mostly pip and the build: run beside the tests of no MPI job
    pytest.mark.skipif(os.geteuid() != 0, reason="creating an ordinary user needs root"),
]


def _c_sources() -> set[str]:
    native = ROOT / "native"
    return {str(p.relative_to(native)) for p in native.rglob("*")
            if p.suffix in (".c", ".h") or p.name == "mpi.protos"}  # fmt: skip


@pytest.fixture(scope="module")
def installed() -> Iterator[tuple[Path, Path]]:
    """(the installed ``commtune`` script, the user's working folder)."""
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], check=True)
    folder = Path(tempfile.mkdtemp(prefix="commtune-user-"))
    folder.chmod(0o755)
    dist = folder / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"python -m build failed: {done.stderr.strip().splitlines()[-1:]}")
    (wheel,) = dist.glob("commtune-*.whl")
    (sdist,) = dist.glob("commtune-*.tar.gz")
    sources = _c_sources()
    in_wheel = {n.split("commtune/csrc/", 1)[1] for n in zipfile.ZipFile(wheel).namelist()
                if "commtune/csrc/" in n}  # fmt: skip
    with tarfile.open(sdist) as tar:
        in_sdist = {n.split("commtune/csrc/", 1)[1] for n in tar.getnames()
                    if "commtune/csrc/" in n}  # fmt: skip
    assert sources <= in_wheel and sources <= in_sdist, sources - (in_wheel & in_sdist)
    home = folder / "user"
    home.mkdir()
    shutil.chown(home, USER)
    venv = home / "venv"
    _as_user(home, ["python3", "-m", "venv", str(venv)], check=True)  # Debian's Python
    _as_user(home, [str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True,
             timeout=600)  # fmt: skip
    yield venv / "bin" / "commtune", home
    subprocess.run(["pkill", "-u", USER], check=False)
    shutil.rmtree(folder, ignore_errors=True)


def _as_user(
    cwd: Path, argv: list[str], check: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``argv`` as the ordinary user, in ``cwd`` (its home or a folder in it), with a plain
    login's environment: no checkout, no virtual environment on the ``PATH``, its own
    empty cache."""
    home = next(p for p in (cwd, *cwd.parents) if p.name == "user")
    env = ["env", "-i", f"HOME={home}", "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
           "COLUMNS=200"]  # fmt: skip
    done = subprocess.run(["runuser", "-u", USER, "--", *env, *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(argv)}: {done.stderr.strip()[-1500:]}")
    return done


@pytest.mark.parametrize("vendor", [Vendor.OPENMPI, Vendor.MPICH], ids=["openmpi", "mpich"])
def test_an_ordinary_user_tunes_checks_and_exports_from_the_installed_wheel(
    installed: tuple[Path, Path], vendor: Vendor
) -> None:
    if not HAVE[vendor]:
        pytest.skip(f"{vendor.title} is not installed")
    commtune, home = installed
    inst = find_installation(vendor)
    work = home / vendor.value
    _as_user(home, ["mkdir", "-p", str(work)], check=True)
    shutil.copy(PROGRAMS / "knob_speed.c", work / "speed.c")  # readable by the user
    _as_user(work, [inst.mpicc, "-o", "speed", "speed.c"], check=True)
    launch = [inst.launcher, "-n", "2", "./speed"]
    storage = f"sqlite:///{work / 's.db'}"
    study = ["--storage", storage]
    done = _as_user(work, [str(commtune), "tune", "--knob", FAST_KNOB[vendor], "--strategy", "grid",
                           "--trials", "2", "--repeats", "1", "--gate", "strict", "--confirm",
                           "3", "--metric", SPEED_METRIC, "--study", "s", *study,
                           "--json", "--", *launch])  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    assert json.loads(done.stdout.splitlines()[-1])["accepted"], done.stdout[-1500:]
    # nothing of the checkout: the C sources came from the wheel into the user's cache
    cache = home / ".cache" / "commtune"
    assert str(ROOT) not in done.stdout + done.stderr
    done = _as_user(work, [str(commtune), "check", "s", "--force", "--json", *study, "--",
                           *launch])  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    assert json.loads(done.stdout.splitlines()[-1])["verdict"] == "still faster"
    failing = [inst.launcher, "-n", "2", "false"]
    done = _as_user(work, [str(commtune), "check", "s", "--force", *study, "--", *failing])
    assert done.returncode == 3 and "could not run here" in done.stderr, done.stderr[-800:]
    done = _as_user(work, [str(commtune), "export", "s", "--format", "env", *study])
    assert done.returncode == 0 and FAST_KNOB[vendor].split("=")[0] in done.stdout, done.stderr
    done = _as_user(work, [str(commtune), "report", "s", "-o", "s.html", *study])
    assert done.returncode == 0 and (work / "s.html").stat().st_size > 10_000, done.stderr
    done = _as_user(work, [str(commtune), "profile", "--json", "-o", "p.json", "--", *launch])
    assert done.returncode == 0, done.stderr[-1500:]
    assert json.loads((work / "p.json").read_text())["ranks"] == 2
    assert (cache / "native").is_dir()  # libcommtune built per user, per MPI
    if vendor is Vendor.OPENMPI:  # its C from the wheel (test_sample.py samples both)
        sample = [str(commtune), "sample", "--quick", "--no-plots", "--mpi", vendor.value,
                  "-o", "platform", *study, "--json"]  # fmt: skip
        done = _as_user(work, sample, timeout=600)
        assert done.returncode == 0, done.stderr[-1500:]
    # what the user's runs left in /dev/shm, if anything, is the user's own
    owner = pwd.getpwnam(USER).pw_uid
    assert all(p.stat().st_uid == owner for p in Path("/dev/shm").glob("*")
               if time.time() - p.stat().st_mtime < 600 and "commtune" in p.name)  # fmt: skip


def test_cleaning_leaves_other_users_segments() -> None:
    """``clean_shm`` removes a stale segment of this user's and leaves another user's (as
    root, which could remove both)."""
    from commtune.trial import clean_shm

    mine, theirs = Path("/dev/shm/vader_segment.ctmine.1"), Path("/dev/shm/vader_segment.ctother.1")
    for path in (mine, theirs):
        path.write_bytes(b"x")
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    os.chown(theirs, pwd.getpwnam("nobody").pw_uid, -1)
    try:
        removed = clean_shm(until=time.time() - 60)
        assert str(mine) in removed and str(theirs) not in removed
        assert theirs.exists() and not mine.exists()
    finally:
        mine.unlink(missing_ok=True)
        theirs.unlink(missing_ok=True)


def test_the_demo_as_an_ordinary_user_tunes_on_one_node_and_says_why(
    installed: tuple[Path, Path],
) -> None:
    commtune, home = installed
    storage = f"sqlite:///{home / 'demo.db'}"
    done = _as_user(home, [str(commtune), "demo", "--nodes", "auto", "--mpi", "mpich",
                           "--max-runs", "16", "--storage", storage])  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    assert "commtune demo: the one-node demo (the test bed needs root" in done.stderr
    # its next steps name the installed commtune, which is not on this user's PATH
    assert f"  {commtune} report demo-mpich" in done.stdout
    done = _as_user(home, [str(commtune), "bed", "up"])
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "needs root" in done.stderr
