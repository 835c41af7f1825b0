"""The objective of a run: its wall time, a number the application prints, a profile field, or
a simulated cluster's simulated time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from commtune.errors import UsageError
from commtune.mpi import simulated_time

if TYPE_CHECKING:
    from commtune.profile import Profile


SIMULATED = "simulated"


@dataclass(frozen=True)
class Objective:
    """``wall`` (seconds of the whole launch) or ``regex:PATTERN``: the first group of the last
    match of PATTERN in stdout, as a float (e.g. ``regex:time ([0-9.]+) s``), or
    ``profile:FIELD``: a field of libcommtune's profile (``profile:mpi_time``,
    ``profile:operations.MPI_Allreduce.time.max``; a statistics object means its mean).
    Lower is better."""

    spec: str
    pattern: re.Pattern[str] | None = None
    field: str | None = None

    @property
    def needs_profile(self) -> bool:
        return self.field is not None

    @classmethod
    def parse(cls, spec: str) -> Objective:
        if spec in ("wall", SIMULATED):
            return cls(spec)
        if spec.startswith("regex:"):
            try:
                pattern = re.compile(spec.removeprefix("regex:"))
            except re.error as exc:
                raise UsageError(f"--metric: bad regular expression: {exc}") from None
            if pattern.groups < 1:
                raise UsageError(
                    "--metric: the regular expression needs a group, e.g. 'time (\\S+)'"
                )
            return cls(spec, pattern)
        if spec.startswith("profile:"):
            path = spec.removeprefix("profile:")
            if not re.fullmatch(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*", path):
                raise UsageError(
                    f"--metric: {spec!r}: expected profile:FIELD, e.g. profile:mpi_time"
                )
            return cls(spec, field=path)
        raise UsageError(
            f"--metric: {spec!r} is none of 'wall', '{SIMULATED}', 'regex:PATTERN', 'profile:FIELD'"
        )

    def extract(
        self, wall: float, stdout: str, profile: Profile | None = None, stderr: str = ""
    ) -> float | None:
        """The objective value of one run, or None if the output does not contain it."""
        if self.spec == SIMULATED:
            return simulated_time(stderr)
        if self.field is not None:
            if profile is None:
                return None
            from commtune.profile import ProfileError

            try:
                return profile.field(self.field)
            except ProfileError:
                return None
        if self.pattern is None:
            return wall
        matches = list(self.pattern.finditer(stdout))
        if not matches:
            return None
        try:
            return float(matches[-1].group(1))
        except (TypeError, ValueError):
            return None
