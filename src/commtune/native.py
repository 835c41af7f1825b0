"""Build commtune's C programs (``native/``) with the user's ``mpicc``, once per installation.

Binaries are cached outside the source tree, in ``$COMMTUNE_CACHE`` (default
``$XDG_CACHE_HOME/commtune`` or ``~/.cache/commtune``), under a key made of the source text and
what the compiler wrapper expands to, so Open MPI and MPICH builds live side by side and a
changed source or MPI rebuilds by itself.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from commtune.errors import UsageError
from commtune.launch import Installation

NATIVE_DIR = Path(__file__).resolve().parents[2] / "native"


def cache_dir() -> Path:
    root = os.environ.get("COMMTUNE_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(xdg) / "commtune"


def source_path(relative: str) -> Path:
    path = Path(os.environ.get("COMMTUNE_NATIVE_DIR", NATIVE_DIR)) / relative
    if not path.exists():
        raise UsageError(f"commtune's C source {relative} is missing (looked in {path.parent})")
    return path


@functools.cache
def _wrapper_expansion(mpicc: str) -> str:
    """What the compiler wrapper runs (part of the cache key: another MPI, another build)."""
    return subprocess.run([mpicc, "-show"], capture_output=True, text=True, check=False).stdout


def build(installation: Installation, relative: str, flags: tuple[str, ...] = ("-O2",)) -> Path:
    """Path of the executable built from ``native/<relative>`` with the installation's mpicc."""
    source = source_path(relative)
    wrapper = _wrapper_expansion(installation.mpicc)
    key = hashlib.sha256(
        "\0".join([source.read_text(), installation.mpicc, wrapper, " ".join(flags)]).encode()
    ).hexdigest()[:16]
    out_dir = cache_dir() / "native" / f"{installation.vendor.value}-{key}"
    target = out_dir / source.stem
    if target.exists():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{source.stem}.")
    os.close(fd)
    done = subprocess.run(
        [installation.mpicc, *flags, "-o", tmp, str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        os.unlink(tmp)
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise UsageError(f"cannot build {relative} with {installation.mpicc}: {last}")
    os.replace(tmp, target)
    return target
