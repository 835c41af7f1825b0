"""The ways a knob can reach a library (``knobs._apply`` applies each)."""

from __future__ import annotations

import enum


class Apply(enum.Enum):
    """How a knob reaches the library (see the module docstring)."""

    ENV = "env"
    LAUNCH = "launch"
    FILE = "file"
    MPIT_INIT = "mpit-init"
    MPIT_RUNTIME = "mpit-runtime"
    INFO = "info"
    HDF5 = "hdf5"
