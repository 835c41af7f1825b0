"""libcommtune's settings: every ``COMMTUNE_*`` variable the interposer reads, in this one
table. ``native/interposer/generate.py`` writes the C side from it (``ct_settings.h``: the
fields of ``ct_config``, how each is read, the table ``COMMTUNE_DEBUG=1`` prints) and the
tuner takes the names and defaults from here when it sets a run up. Standard library only:
the generator loads this file before anything is installed.
"""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    """How the C side reads a setting: a flag (``0``/``no``/``false`` are off), a text, a
    number of seconds (>= 0), a count (> 0)."""

    FLAG = "flag"
    TEXT = "text"
    SECONDS = "seconds"
    COUNT = "count"


class Setting(enum.Enum):
    """One setting of libcommtune: ``COMMTUNE_<member>``, read at ``MPI_Init``."""

    # member = (kind, default as its text, meaning)
    DISABLE = (Kind.FLAG, "0", "1: pass every call through, write no profile")
    DEBUG = (Kind.FLAG, "0", "1: print these settings at MPI_Init (rank 0)")
    PROFILE = (Kind.TEXT, "", "where rank 0 writes the JSON profile "
               "(unset: commtune-profile-<pid>.json)")  # fmt: skip
    CVARS = (Kind.TEXT, "", "name=value;... control variables to read back after MPI_Init")
    CVAR_WRITE = (Kind.TEXT, "", "name=value;... control variables to write through MPI_T")
    IO_HINTS = (Kind.TEXT, "", "key=value;... MPI-IO hints merged into every MPI_File_open")
    HDF5_PROPS = (Kind.TEXT, "", "key=value;... HDF5 properties set at H5Fcreate/H5Fopen/H5Dwrite")
    PVARS = (Kind.FLAG, "1", "0: open no MPI_T performance variable session")
    PVAR_INTERVAL = (Kind.SECONDS, "0.1", "seconds between PVAR samples (0: init and finalize "
                     "only) and between evaluations of periodic rules")  # fmt: skip
    POLICY = (Kind.TEXT, "", "a.json:b.json rule files whose periodic rules run in the program")
    POLICY_EVERY = (Kind.COUNT, "256", "collective calls between two looks at the rules' clock")

    def __init__(self, kind: Kind, default: str, help: str) -> None:
        self.kind = kind
        self.default = default  # as the variable's text; "" unset
        self.help = help

    @property
    def env(self) -> str:
        """The environment variable: ``COMMTUNE_`` and the member's name."""
        return f"COMMTUNE_{self.name}"

    @property
    def field(self) -> str:
        """Its field in the C struct ``ct_config``."""
        return self.name.lower()


PVAR_INTERVAL = float(Setting.PVAR_INTERVAL.default)  # seconds, when the tuner names none
