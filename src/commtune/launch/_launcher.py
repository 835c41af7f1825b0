"""Launchers: how a configuration reaches the ranks of one MPI vendor.

A configuration becomes environment variables (and, in later layers, generated files and the
interposer's ``LD_PRELOAD``). Locally both MPIs hand the launcher's environment to the ranks;
across nodes Open MPI forwards only ``OMPI_MCA_*`` variables, so every other one is named with
``-x NAME``, and MPICH's hydra gets ``-genv NAME VALUE``. ``LD_PRELOAD`` is given to the ranks
only, never set in the launcher's own environment. Slurm's ``srun`` (a tuner inside an
allocation) passes its whole environment to the tasks; the preload goes in its ``--export``.

Contract: :meth:`Launcher.plan` is pure (no I/O); the same inputs give the same plan.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from commtune.errors import UsageError
from commtune.mpi import Installation, is_launcher


@dataclass(frozen=True)
class LaunchPlan:
    """What to execute: the argument vector and the complete environment of the launcher."""

    argv: list[str]
    env: dict[str, str]


class Launcher(abc.ABC):
    """Base class: turns (user command, variables) into a :class:`LaunchPlan` for one vendor."""

    def __init__(self, installation: Installation, through: Sequence[str] = ()) -> None:
        self.installation = installation
        # a prefix that runs the launch line elsewhere (a test-bed node: ``nsenter ... --``);
        # the line itself is planned as if it ran here
        self.through = tuple(through)

    def command(self, ranks: int, program: Sequence[str]) -> list[str]:
        """A launch line for one of commtune's own programs on this machine."""
        return self.installation.command(ranks, program)

    @abc.abstractmethod
    def forwarded(self, name: str) -> bool:
        """Whether the launcher forwards ``name`` from its environment to remote ranks."""

    @abc.abstractmethod
    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        """Launcher options that set ``variables`` in every rank."""

    def reconciled(
        self,
        variables: Mapping[str, str],
        *,
        remove: Sequence[str] = (),
        base_env: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """``variables`` with what the vendor adds so that they take effect beside what the
        environment already sets (Open MPI: a forced algorithm beside a loaded rules file
        that lists the collective gets a copy of the file without it, written under the
        cache directory, which the ranks of every node must read). Not pure: see
        :meth:`MPIVendor.reconcile`."""
        from commtune.native import cache_dir

        env = _environment(variables, remove, base_env)
        extra = self.installation.impl.reconcile(env, cache_dir() / "rules")
        return {**variables, **extra}

    def plan(
        self,
        command: Sequence[str],
        variables: Mapping[str, str],
        *,
        remove: Sequence[str] = (),
        preload: str | None = None,
        base_env: Mapping[str, str] | None = None,
        options: Mapping[str, str] | None = None,
    ) -> LaunchPlan:
        """Plan a run of ``command`` with ``variables`` set for the ranks.

        ``remove`` names variables dropped from the inherited environment (the knobs under
        tuning that the user had exported: the configuration overrides them); ``options``
        are launcher options (``bind-to`` -> ``core``), put right after the launcher.
        """
        env = _environment(variables, remove, base_env)
        # the installation's own variables (Intel MPI's I_MPI_ROOT, ...) over the inherited
        # ones: the installation was chosen; the configuration's win over both
        env = {**env, **self.installation.environment(), **variables}
        impl = self.installation.impl
        env = {k: v for k, v in env.items() if not impl.configured_by_args(k)}
        argv = list(command)
        launched = bool(argv) and is_launcher(argv[0])
        srun = bool(argv) and os.path.basename(argv[0]) == "srun"
        to_ranks = {k: v for k, v in variables.items() if not self.forwarded(k)}
        if preload:
            if env.get("LD_PRELOAD"):  # keep the user's own preloads, after ours
                preload = f"{preload}:{env['LD_PRELOAD']}"
            if launched:
                to_ranks["LD_PRELOAD"] = preload
            elif srun:  # Slurm's launcher passes its environment on; the preload is the tasks'
                if any(a == "--export" or a.startswith("--export=") for a in argv[1:]):
                    raise UsageError(
                        "commtune passes the configuration through srun's environment: "
                        "leave --export out of the srun command"
                    )
                argv.insert(1, f"--export=ALL,LD_PRELOAD={preload}")
            else:  # a wrapper script: only the environment reaches the ranks
                env["LD_PRELOAD"] = preload
        if launched and to_ranks:
            argv[1:1] = self.rank_args(to_ranks)
        if launched:
            argv[1:1] = [*impl.run_args(), *impl.line_args(command, variables)]
        if options:
            if not launched:
                raise UsageError(
                    f"{', '.join(sorted(options))}: an option of the MPI launcher, which the "
                    f"command must start with (it starts with {argv[0] if argv else 'nothing'})"
                )
            argv[1:1] = self.installation.impl.launch_args(options)
        return LaunchPlan([*self.through, *argv], env)


def _environment(
    variables: Mapping[str, str], remove: Sequence[str], base_env: Mapping[str, str] | None
) -> dict[str, str]:
    """The inherited environment (or ``base_env``) without ``remove``, with ``variables``."""
    env = dict(os.environ if base_env is None else base_env)
    for name in remove:
        env.pop(name, None)
    env.update(variables)
    return env


class LocalLauncher(Launcher):
    """The installation's own launcher (``mpirun``/``mpiexec``) on this machine; how
    variables reach the ranks is the vendor's (``-x`` for Open MPI, ``-genv`` for MPICH)."""

    def forwarded(self, name: str) -> bool:
        return self.installation.impl.forwarded(name)

    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        return self.installation.impl.rank_args(variables)


def launcher_for(installation: Installation, through: Sequence[str] = ()) -> Launcher:
    """The launcher of ``installation``; ``through``: a prefix every launch line runs under
    (``nsenter`` into a test-bed node)."""
    return LocalLauncher(installation, through)
