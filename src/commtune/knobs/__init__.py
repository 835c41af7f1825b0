"""Knobs: the catalog of tunable parameters, discovery on the installed MPI, spaces."""

from commtune.knobs._catalog import LIBRARIES, PRESETS, load_catalog
from commtune.knobs._knob import Dimension, Knob, KnobType, Space, Value, environment

__all__ = [
    "LIBRARIES",
    "PRESETS",
    "Dimension",
    "Knob",
    "KnobType",
    "Space",
    "Value",
    "environment",
    "load_catalog",
]
