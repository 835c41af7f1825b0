"""The objective of a run: its wall time, or a number the application prints."""

from __future__ import annotations

import re
from dataclasses import dataclass

from commtune.errors import UsageError


@dataclass(frozen=True)
class Objective:
    """``wall`` (seconds of the whole launch) or ``regex:PATTERN``: the first group of the last
    match of PATTERN in stdout, as a float (e.g. ``regex:time ([0-9.]+) s``). Lower is better."""

    spec: str
    pattern: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, spec: str) -> Objective:
        if spec == "wall":
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
        raise UsageError(f"--metric: {spec!r} is neither 'wall' nor 'regex:PATTERN'")

    def extract(self, wall: float, stdout: str) -> float | None:
        """The objective value of one run, or None if the output does not contain it."""
        if self.pattern is None:
            return wall
        matches = list(self.pattern.finditer(stdout))
        if not matches:
            return None
        try:
            return float(matches[-1].group(1))
        except (TypeError, ValueError):
            return None
