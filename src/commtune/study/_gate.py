"""The gate: how a verdict decided, one enum whoever reads it."""

from __future__ import annotations

import enum


class Gate(enum.StrEnum):
    """How a verdict decided. A study's plan chooses ``RISK`` (the default) or ``STRICT``;
    the verdict says ``EXACT`` where deterministic runs decided on their values and
    ``INRUN`` where an in-run race chose and whole runs decided."""

    RISK = "risk"  # commtune.rule's paired test on fresh runs beside the defaults (tune._decide)
    STRICT = "strict"  # the top-k signed-rank confirmation (tune._confirm)
    EXACT = "exact"  # deterministic runs: the speedup is theirs (a simulation)
    INRUN = "inrun"  # an in-run race chose, whole runs beside the defaults decided


PLANNED = (Gate.RISK, Gate.STRICT)  # the gates a plan may ask for (--gate)
