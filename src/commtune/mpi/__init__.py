"""MPI libraries: which one is installed and runs a command, and what each does its own way.

``Vendor`` names a library; ``Vendor.impl`` (or ``Installation.impl``) is its
:class:`MPIVendor`, the one place that knows how that library names, forwards, lists and
loads its variables (``openmpi.py``, ``mpich.py``, ``intel.py``). Add a library: a module
implementing :class:`MPIVendor`, a member of :class:`Vendor`, a line in ``_registry.py``, its
catalog ``knobs/data/<name>.json`` and its built-in recommendations
``policy/data/recommendations-<name>.json`` (the recipe is in ``_vendor.py``).
"""

from commtune.mpi._calibration import (
    CALIBRATION_FILE,
    CALIBRATION_FORMAT,
    SIMULATOR_NEEDED,
    Calibration,
    Piece,
    read_calibration,
    speed_args,
)
from commtune.mpi._install import (
    LAUNCHER_NAMES,
    SEARCHED,
    Installation,
    MPISpec,
    default_installation,
    find_installation,
    find_installations,
    find_simulators,
    installation_of,
    is_launcher,
    launcher_vendor,
    resolve_command,
)
from commtune.mpi._layer import Layer, with_program
from commtune.mpi._ompi_rules import COLL_IDS, format_rules, parse_rules
from commtune.mpi._runs import Runs
from commtune.mpi._selection import Builtin, RulesError, Segment, Selection, linked_library
from commtune.mpi._simgrid import (
    BUILD_HINT,
    CONFIGURATION_FILE,
    TOPOLOGIES,
    Cluster,
    Launch,
    Platform,
    grown,
    launch_files,
    launch_line,
    nodes_words,
    read_platform,
    write_cluster,
)
from commtune.mpi._vendor import Lack, MPIVendor, Profiled, Variable, Vendor
from commtune.mpi.smpi import NO_COMPUTE, simulated_command, simulated_time

VENDOR_NAMES = tuple(v.value for v in Vendor)
# Variables of every library in a user's environment (a study records them, with those of the
# families: ``families.recorded_prefixes``), and the files
# their shared-memory transports leave behind when a run is killed.
ENV_PREFIXES = tuple(dict.fromkeys(p for v in Vendor for p in v.impl.env_prefixes))
SHM_PATTERNS = tuple(dict.fromkeys(p for v in Vendor for p in v.impl.shm_patterns))

__all__ = [
    "BUILD_HINT",
    "CALIBRATION_FILE",
    "CALIBRATION_FORMAT",
    "COLL_IDS",
    "CONFIGURATION_FILE",
    "ENV_PREFIXES",
    "LAUNCHER_NAMES",
    "NO_COMPUTE",
    "SEARCHED",
    "SHM_PATTERNS",
    "SIMULATOR_NEEDED",
    "TOPOLOGIES",
    "VENDOR_NAMES",
    "Builtin",
    "Calibration",
    "Cluster",
    "Installation",
    "Lack",
    "Launch",
    "Layer",
    "MPISpec",
    "MPIVendor",
    "Piece",
    "Platform",
    "Profiled",
    "RulesError",
    "Runs",
    "Segment",
    "Selection",
    "Variable",
    "Vendor",
    "default_installation",
    "find_installation",
    "find_installations",
    "find_simulators",
    "format_rules",
    "grown",
    "installation_of",
    "is_launcher",
    "launch_files",
    "launch_line",
    "launcher_vendor",
    "linked_library",
    "nodes_words",
    "parse_rules",
    "read_calibration",
    "read_platform",
    "resolve_command",
    "simulated_command",
    "simulated_time",
    "speed_args",
    "with_program",
    "write_cluster",
]
