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
from pathlib import Path

from commtune import settings
from commtune.errors import UsageError
from commtune.mpi import Installation, Lack
from commtune.util import atomic_path

# The C sources: package data of the wheel; in a checkout, a link to native/
NATIVE_DIR = Path(__file__).resolve().parent / "csrc"


def cache_dir() -> Path:
    root = settings.CACHE.get()
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(xdg) / "commtune"


def source_path(relative: str) -> Path:
    path = Path(settings.NATIVE_DIR.get() or NATIVE_DIR) / relative
    if not path.exists():
        raise UsageError(f"commtune's C source {relative} is missing (looked in {path.parent})")
    return path


def _wrapper_expansion(installation: Installation) -> str:
    """What the compiler wrapper runs (part of the cache key: another MPI, another build)."""
    return _expansion(installation.mpicc, tuple(sorted(installation.environment().items())))


@functools.cache
def _expansion(mpicc: str, env: tuple[tuple[str, str], ...]) -> str:
    return subprocess.run(
        [mpicc, "-show"], capture_output=True, text=True, check=False,
        env={**os.environ, **dict(env)} if env else None,
    ).stdout  # fmt: skip


def build(installation: Installation, relative: str, flags: tuple[str, ...] = ("-O2",)) -> Path:
    """Path of the executable built from ``native/<relative>`` with the installation's mpicc."""
    source = source_path(relative)
    return _compile(installation, source.stem, [source], _shared_headers(), flags)


def hdf5_flags(installation: Installation) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(compile flags, link flags) of the installation's parallel HDF5 from pkg-config, or
    None where it is not installed (Debian: libhdf5-openmpi-dev, libhdf5-mpich-dev)."""
    return _pkg_config(installation.impl.hdf5_package)


@functools.cache
def _pkg_config(package: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """Asked once per process: every build of the I/O kernel needs it."""
    try:
        cflags, libs = (
            subprocess.run(
                ["pkg-config", what, package], capture_output=True, text=True, check=False
            )
            for what in ("--cflags", "--libs")
        )
    except FileNotFoundError:
        return None
    if cflags.returncode != 0 or libs.returncode != 0:
        return None
    return tuple(cflags.stdout.split()), tuple(libs.stdout.split())


def build_io(installation: Installation) -> tuple[Path, bool]:
    """The I/O kernel (``native/io/ct_io.c``) and whether it has its HDF5 mode: built against
    the installation's parallel HDF5 where there is one, MPI-IO only elsewhere."""
    source = source_path("io/ct_io.c")
    found = hdf5_flags(installation)
    if found is None:
        return _compile(installation, "ct_io", [source], [], ("-O2",)), False
    cflags, libs = found
    flags = ("-O2", "-DCT_HDF5", *cflags)
    return _compile(installation, "ct_io", [source], [], flags, libs), True


def _shared_headers() -> list[Path]:
    """Headers every program may include (``native/include``): part of each cache key."""
    return sorted((source_path("include/ct_mpit_text.h").parent).glob("*.h"))


INTERPOSER_FLAGS = ("-O2", "-fPIC", "-shared", "-fvisibility=hidden")
INTERPOSER_LIBS = ("-ldl", "-lpthread", "-lm")


def interposer_dir() -> Path:
    return source_path("interposer/mpi.protos").parent


def build_interposer(installation: Installation) -> Path:
    """Path of ``libcommtune.so`` for this installation (LD_PRELOAD it into every rank)."""
    impl = installation.impl
    if Lack.PRELOAD in impl.lacks:
        raise UsageError(f"{impl.title}: {Lack.PRELOAD.value}; its profile is "
                         f"{impl.profile_source} (tune takes it)")  # fmt: skip
    folder = interposer_dir()
    sources = sorted(folder.glob("ct_*.c"))
    headers = sorted(folder.glob("*.h")) + _shared_headers()
    return _compile(
        installation, "libcommtune.so", sources, headers, INTERPOSER_FLAGS, INTERPOSER_LIBS
    )


def build_race(installation: Installation) -> Path:
    """Path of ``libctrace.so`` (``native/race/ct_race.c``): one collective's algorithms raced
    call by call inside one run, preloaded alone into every rank (issue 77)."""
    source = source_path("race/ct_race.c")
    return _compile(installation, "libctrace.so", [source], _shared_headers(),
                    ("-O2", "-fPIC", "-shared"))  # fmt: skip


def _compile(
    installation: Installation,
    name: str,
    sources: list[Path],
    headers: list[Path],
    flags: tuple[str, ...],
    libs: tuple[str, ...] = (),
) -> Path:
    """Compile ``sources`` into ``name`` in the cache; rebuilt when any input text changes."""
    wrapper = _wrapper_expansion(installation)
    texts = [p.read_text() for p in sources + headers]
    key = hashlib.sha256(
        "\0".join([*texts, installation.mpicc, wrapper, " ".join(flags + libs)]).encode()
    ).hexdigest()[:16]
    out_dir = cache_dir() / "native" / f"{installation.vendor.value}-{key}"
    target = out_dir / name
    if target.exists():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(target, mode=0o777) as tmp:  # a program: executable
        done = subprocess.run(
            [installation.mpicc, *flags, "-o", str(tmp), *map(str, sources), *libs],
            capture_output=True,
            text=True,
            check=False,
            env=installation.tool_env(),
        )
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if "error" in line]
            last = (errors or done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise UsageError(f"cannot build {name} with {installation.mpicc}: {last}")
    return target
