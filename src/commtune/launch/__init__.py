"""Launch layer: which MPI runs a command, and how a configuration reaches its ranks."""

from commtune.launch._install import (
    LAUNCHER_NAMES,
    Installation,
    Vendor,
    default_installation,
    find_installation,
    resolve_command,
)
from commtune.launch._launcher import Launcher, LaunchPlan, launcher_for

__all__ = [
    "LAUNCHER_NAMES",
    "Installation",
    "LaunchPlan",
    "Launcher",
    "Vendor",
    "default_installation",
    "find_installation",
    "launcher_for",
    "resolve_command",
]
