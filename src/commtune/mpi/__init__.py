"""MPI libraries: which one is installed and runs a command, and what each does its own way.

``Vendor`` names a library; ``Vendor.impl`` (or ``Installation.impl``) is its
:class:`MPIVendor`, the one place that knows how that library names, forwards, lists and
loads its variables (``openmpi.py``, ``mpich.py``). Add a library: a module implementing
:class:`MPIVendor`, a member of :class:`Vendor`, a line in ``_registry.py``.
"""

from commtune.mpi._install import (
    LAUNCHER_NAMES,
    Installation,
    default_installation,
    find_installation,
    installation_of,
    is_launcher,
    launcher_vendor,
    resolve_command,
)
from commtune.mpi._ompi_rules import COLL_IDS, RulesError, format_rules, parse_rules
from commtune.mpi._vendor import MPIVendor, Variable, Vendor

VENDOR_NAMES = tuple(v.value for v in Vendor)

__all__ = [
    "COLL_IDS",
    "LAUNCHER_NAMES",
    "VENDOR_NAMES",
    "Installation",
    "MPIVendor",
    "RulesError",
    "Variable",
    "Vendor",
    "default_installation",
    "find_installation",
    "format_rules",
    "installation_of",
    "is_launcher",
    "launcher_vendor",
    "parse_rules",
    "resolve_command",
]
