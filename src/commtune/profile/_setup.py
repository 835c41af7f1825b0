"""Setting a run up to be profiled: what to preload and which COMMTUNE_* variables to pass."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from commtune.libcommtune import PVAR_INTERVAL, Setting
from commtune.profile._profile import Profile, ProfileError


@dataclass(frozen=True)
class Profiling:
    """``library``: libcommtune built for the run's MPI. ``pvar_interval``: seconds between PVAR
    samples. ``directory``: where profiles are written (must be visible to rank 0's node)."""

    library: Path
    pvar_interval: float = PVAR_INTERVAL
    directory: str | None = None

    def variables(
        self, profile: Path, checks: Mapping[str, str], writes: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        env = {
            Setting.PROFILE.env: str(profile),
            Setting.PVAR_INTERVAL.env: str(self.pvar_interval),
        }
        if checks:
            env[Setting.CVARS.env] = ";".join(f"{k}={v}" for k, v in checks.items())
        if writes:
            env[Setting.CVAR_WRITE.env] = ";".join(f"{k}={v}" for k, v in writes.items())
        return env

    @contextmanager
    def target(self) -> Iterator[Path]:
        """A fresh path for one run's profile, removed afterwards."""
        folder = Path(tempfile.mkdtemp(prefix="commtune-profile-", dir=self.directory))
        try:
            yield folder / "profile.json"
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    @staticmethod
    def read(path: Path) -> Profile | None:
        """The run's profile, or None when it wrote none (no MPI_Finalize, static binary)."""
        if not path.exists():
            return None
        try:
            return Profile.load(path)
        except ProfileError:
            return None
