"""Launchers: how a configuration reaches the ranks of one MPI vendor.

A configuration becomes environment variables (and, in later layers, generated files and the
interposer's ``LD_PRELOAD``). Locally both MPIs hand the launcher's environment to the ranks;
across nodes Open MPI forwards only ``OMPI_MCA_*`` variables, so every other one is named with
``-x NAME``, and MPICH's hydra gets ``-genv NAME VALUE``. ``LD_PRELOAD`` is given to the ranks
only, never set in the launcher's own environment.

Contract: :meth:`Launcher.plan` is pure (no I/O); the same inputs give the same plan.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from commtune.launch._install import LAUNCHER_NAMES, Installation, Vendor


@dataclass(frozen=True)
class LaunchPlan:
    """What to execute: the argument vector and the complete environment of the launcher."""

    argv: list[str]
    env: dict[str, str]


class Launcher(abc.ABC):
    """Base class: turns (user command, variables) into a :class:`LaunchPlan` for one vendor."""

    vendor: ClassVar[Vendor]

    def __init__(self, installation: Installation) -> None:
        self.installation = installation

    def command(self, ranks: int, program: Sequence[str]) -> list[str]:
        """A launch line for one of commtune's own programs on this machine."""
        return [self.installation.launcher, *self.local_options(), "-n", str(ranks), *program]

    def local_options(self) -> list[str]:
        """Options a local launch of this vendor needs (none by default)."""
        return []

    @abc.abstractmethod
    def forwarded(self, name: str) -> bool:
        """Whether the launcher forwards ``name`` from its environment to remote ranks."""

    @abc.abstractmethod
    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        """Launcher options that set ``variables`` in every rank."""

    def plan(
        self,
        command: Sequence[str],
        variables: Mapping[str, str],
        *,
        remove: Sequence[str] = (),
        preload: str | None = None,
        base_env: Mapping[str, str] | None = None,
    ) -> LaunchPlan:
        """Plan a run of ``command`` with ``variables`` set for the ranks.

        ``remove`` names variables dropped from the inherited environment (the knobs under
        tuning that the user had exported: the configuration overrides them).
        """
        env = dict(os.environ if base_env is None else base_env)
        for name in remove:
            env.pop(name, None)
        env.update(variables)
        argv = list(command)
        is_launcher = bool(argv) and os.path.basename(argv[0]) in LAUNCHER_NAMES
        to_ranks = {k: v for k, v in variables.items() if not self.forwarded(k)}
        if preload:
            if env.get("LD_PRELOAD"):  # keep the user's own preloads, after ours
                preload = f"{preload}:{env['LD_PRELOAD']}"
            if is_launcher:
                to_ranks["LD_PRELOAD"] = preload
            else:  # a wrapper script: only the environment reaches the ranks
                env["LD_PRELOAD"] = preload
        if is_launcher and to_ranks:
            argv[1:1] = self.rank_args(to_ranks)
        return LaunchPlan(argv, env)


class OpenMPILauncher(Launcher):
    vendor = Vendor.OPENMPI

    def local_options(self) -> list[str]:
        # Open MPI refuses root without this, and fewer cores than ranks without oversubscribe.
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        return [*root, "--oversubscribe"]

    def forwarded(self, name: str) -> bool:
        return name.startswith("OMPI_MCA_")

    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        args: list[str] = []
        for name, value in variables.items():
            # "-x NAME" forwards the launcher's value; "-x NAME=VALUE" sets one the launcher
            # itself must not see (LD_PRELOAD).
            args += ["-x", f"{name}={value}" if name == "LD_PRELOAD" else name]
        return args


class MPICHLauncher(Launcher):
    vendor = Vendor.MPICH

    def forwarded(self, name: str) -> bool:
        return False

    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        args: list[str] = []
        for name, value in variables.items():
            args += ["-genv", name, value]
        return args


_LAUNCHERS: dict[Vendor, type[Launcher]] = {
    Vendor.OPENMPI: OpenMPILauncher,
    Vendor.MPICH: MPICHLauncher,
}


def launcher_for(installation: Installation) -> Launcher:
    return _LAUNCHERS[installation.vendor](installation)
