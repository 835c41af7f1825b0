"""Which MPI is installed, and which one a launch command uses.

Open MPI and MPICH are often installed side by side (Debian: ``mpirun.openmpi``,
``mpiexec.mpich``, ``mpicc.openmpi``, ``mpicc.mpich``; ``mpirun``/``mpicc`` point to one of
them). Each tool is asked who it is (``--version``/``-show``) instead of trusting its name.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from commtune.errors import UsageError
from commtune.mpi._tools import output
from commtune.mpi._vendor import MPIVendor, Vendor

LAUNCHER_NAMES = frozenset(
    name for v in Vendor for name in (*v.impl.launcher_names, *v.impl.launcher_aliases)
)


@dataclass(frozen=True)
class Installation:
    """One MPI installation: its launcher, its compiler wrapper and what it is."""

    vendor: Vendor
    version: str
    device: str
    launcher: str
    mpicc: str

    @property
    def impl(self) -> MPIVendor:
        return self.vendor.impl

    def describe(self) -> str:
        return f"{self.vendor.title} {self.version} ({self.impl.device_label(self.device)})"

    def command(self, ranks: int, program: Sequence[str]) -> list[str]:
        """A local launch line for one of commtune's own programs."""
        return [self.launcher, *self.impl.local_options(), "-n", str(ranks), *program]


@cache
def launcher_vendor(path: str) -> tuple[Vendor, str, str] | None:
    """(vendor, version, device) of the launcher at ``path``, or None if it is no MPI launcher."""
    text = output([path, "--version"])
    for vendor in Vendor:
        found = vendor.impl.recognise(path, text)
        if found is not None:
            return vendor, found[0], found[1]
    return None


def _compiler_vendor(path: str) -> Vendor | None:
    text = output([path, "-show"]) + output([path, "--showme:version"])
    return next((v for v in Vendor if v.impl.is_compiler(text)), None)


@cache
def find_installation(vendor: Vendor) -> Installation:
    """The installation of ``vendor`` on this machine; UsageError if it is not installed."""
    names = vendor.impl.launcher_names
    for name in names:
        path = shutil.which(name)
        if not path:
            continue
        found = launcher_vendor(path)
        if found is None or found[0] is not vendor:
            continue
        for cc_name in vendor.impl.compiler_names:
            cc = shutil.which(cc_name)
            if cc and _compiler_vendor(cc) is vendor:
                return Installation(vendor, found[1], found[2], path, cc)
        raise UsageError(f"no MPI found: {vendor.title} has a launcher ({path}) but no mpicc")
    raise UsageError(
        f"no MPI found: {vendor.title} is not installed (looked for {', '.join(names)})"
    )


def default_installation() -> Installation:
    """The installation that plain ``mpirun`` runs, else any one installed."""
    path = shutil.which("mpirun") or shutil.which("mpiexec")
    found = launcher_vendor(path) if path else None
    order = [found[0]] if found else []
    order += [v for v in Vendor if v not in order]
    for vendor in order:
        try:
            return find_installation(vendor)
        except UsageError:
            continue
    raise UsageError("no MPI found: neither Open MPI nor MPICH is installed (no mpirun/mpiexec)")


def installation_of(name: str | Vendor | None) -> Installation:
    """The installation of the vendor named ``name`` (``--mpi``), or the default one."""
    if name is None:
        return default_installation()
    return find_installation(name if isinstance(name, Vendor) else Vendor(name))


def is_launcher(argv0: str) -> bool:
    """Whether ``argv0`` names an MPI launcher (not a wrapper script or ``srun``)."""
    return os.path.basename(argv0) in LAUNCHER_NAMES


def resolve_command(command: list[str], mpi: Vendor | None) -> Installation:
    """The installation that runs ``command``; checks it against ``--mpi`` if given."""
    if not command:
        raise UsageError("no command to run: put it after '--', e.g. -- mpirun -np 4 ./app")
    exe = shutil.which(command[0])
    if exe is None:
        raise UsageError(f"command not found: {command[0]}")
    if not is_launcher(command[0]):
        # A wrapper script or another launcher (srun): trust --mpi or the default MPI.
        return find_installation(mpi) if mpi else default_installation()
    found = launcher_vendor(exe)
    if found is None:
        raise UsageError(f"{command[0]} is not an MPI launcher that commtune knows")
    vendor = found[0]
    if mpi is not None and mpi is not vendor:
        raise UsageError(
            f"--mpi {mpi.value} does not match the launcher: {command[0]} is {vendor.title}"
        )
    base = find_installation(vendor)
    return Installation(vendor, found[1], found[2], exe, base.mpicc)
