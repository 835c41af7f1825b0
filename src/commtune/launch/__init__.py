"""Launch layer: how a configuration reaches the ranks of a run (a :class:`LaunchPlan`)."""

from commtune.launch._launcher import Launcher, LaunchPlan, LocalLauncher, launcher_for

__all__ = ["LaunchPlan", "Launcher", "LocalLauncher", "launcher_for"]
