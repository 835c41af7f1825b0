"""OMPIO, Open MPI's own MPI-IO (the ``io`` framework's default since 2.x): which MPI-IO
component serves (``io``: ompio or ROMIO), its collective algorithm (``fcoll``), aggregators
and the file-system back end (``fbtl``). MCA variables of Open MPI, under its own prefix."""

from __future__ import annotations

from commtune.families._family import Family, data

FAMILY = Family(name="ompio", title="OMPIO (Open MPI's MPI-IO)", catalog=data("ompio"),
                env_prefix=None)  # fmt: skip
