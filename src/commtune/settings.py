"""Every ``COMMTUNE_*`` environment setting the tuner reads, in this one module.

(libcommtune reads its own in ``native/interposer/ct_config.c`` and ``ct_policy.c``; the
tuner sets those for each run.) Each setting is declared once with its default and what it
does; the README lists them all (``tests/test_settings.py`` checks both: that every setting
is documented and that no other module reads a ``COMMTUNE_*`` variable).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from commtune.errors import UsageError


@dataclass(frozen=True)
class Setting:
    name: str
    default: str | None  # None: unset means "derived" (said in ``help``)
    help: str

    def get(self) -> str | None:
        """The value in the environment (empty counts as unset), else the default."""
        return os.environ.get(self.name) or self.default

    def text(self) -> str:
        """:meth:`get` of a setting that has a default."""
        value = self.get()
        assert value is not None, f"{self.name} has no default"
        return value


STORAGE = Setting(
    "COMMTUNE_STORAGE", "sqlite:///commtune.db", "the storage of every command's --storage default"
)
SQLITE_TIMEOUT = Setting(
    "COMMTUNE_SQLITE_TIMEOUT", "60", "seconds a worker waits for another's SQLite lock"
)
PROFILE_DIR = Setting(
    "COMMTUNE_PROFILE_DIR",
    None,
    "where rank 0 writes each run's profile (a directory its node can write, for runs on "
    "other nodes); unset: a temporary directory, or the job directory with --sbatch",
)
CACHE = Setting(
    "COMMTUNE_CACHE",
    None,
    "the build cache (C programs per MPI, discovery); unset: $XDG_CACHE_HOME/commtune or "
    "~/.cache/commtune",
)
NATIVE_DIR = Setting(
    "COMMTUNE_NATIVE_DIR", None, "commtune's C sources; unset: those installed with the package"
)
MPI_PATH = Setting(
    "COMMTUNE_MPI_PATH",
    None,
    "prefixes of MPI installations (each with its bin/), separated by ':', found by "
    "`commtune mpis` and --mpi before those on PATH",
)
SETTINGS = (STORAGE, SQLITE_TIMEOUT, PROFILE_DIR, CACHE, NATIVE_DIR, MPI_PATH)


def sqlite_timeout() -> float:
    """Seconds a worker waits for another's lock on a SQLite file before it gives up."""
    raw = SQLITE_TIMEOUT.text()
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise UsageError(f"{SQLITE_TIMEOUT.name}={raw!r}: expected a number of seconds > 0")
    return seconds
