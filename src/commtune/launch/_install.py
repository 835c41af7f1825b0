"""Which MPI is installed, and which one a launch command uses.

Open MPI and MPICH are often installed side by side (Debian: ``mpirun.openmpi``,
``mpiexec.mpich``, ``mpicc.openmpi``, ``mpicc.mpich``; ``mpirun``/``mpicc`` point to one of
them). Each tool is asked who it is (``--version``/``-show``) instead of trusting its name.
"""

from __future__ import annotations

import enum
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache

from commtune.errors import UsageError


class Vendor(enum.Enum):
    OPENMPI = "openmpi"
    MPICH = "mpich"

    @property
    def title(self) -> str:
        return {"openmpi": "Open MPI", "mpich": "MPICH"}[self.value]


LAUNCHER_NAMES = frozenset(
    {"mpirun", "mpiexec", "orterun", "mpiexec.hydra", "mpirun.openmpi", "mpiexec.openmpi"}
    | {"mpirun.mpich", "mpiexec.mpich"}
)
_LAUNCHERS = {
    Vendor.OPENMPI: ("mpirun.openmpi", "mpirun", "mpiexec.openmpi", "mpiexec"),
    Vendor.MPICH: ("mpiexec.mpich", "mpirun.mpich", "mpiexec.hydra", "mpiexec", "mpirun"),
}
_COMPILERS = {
    Vendor.OPENMPI: ("mpicc.openmpi", "mpicc"),
    Vendor.MPICH: ("mpicc.mpich", "mpicc"),
}


@dataclass(frozen=True)
class Installation:
    """One MPI installation: its launcher, its compiler wrapper and what it is."""

    vendor: Vendor
    version: str
    device: str
    launcher: str
    mpicc: str

    def describe(self) -> str:
        return f"{self.vendor.title} {self.version} ({self.device})"


def _output(argv: list[str], timeout: float = 30) -> str:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr


@cache
def launcher_vendor(path: str) -> tuple[Vendor, str, str] | None:
    """(vendor, version, device) of the launcher at ``path``, or None if it is no MPI launcher."""
    text = _output([path, "--version"])
    match = re.search(r"\((?:Open MPI|OpenRTE)\) (\S+)", text)
    if match:
        return Vendor.OPENMPI, match.group(1), _openmpi_device(path)
    if "HYDRA" in text or "MPICH" in text:
        version = re.search(r"Version:\s+(\S+)", text)
        device = re.search(r"--with-device=([\w:]+)", text)
        return (
            Vendor.MPICH,
            version.group(1) if version else "unknown",
            device.group(1) if device else "ch4",
        )
    return None


def _openmpi_device(launcher: str) -> str:
    """Point-to-point layers of an Open MPI installation, e.g. ``pml:cm,ob1,ucx btl:self,...``."""
    info = os.path.join(os.path.dirname(launcher), "ompi_info")
    if not os.path.exists(info):
        info = shutil.which("ompi_info") or "ompi_info"
    text = _output([info, "--parsable"])
    parts = []
    for framework in ("pml", "btl"):
        names = sorted(set(re.findall(rf"^mca:{framework}:(\w+):version:", text, re.M)))
        names = [n for n in names if n != "base"]
        if names:
            parts.append(f"{framework}:{','.join(names)}")
    return " ".join(parts) or "unknown"


def _compiler_vendor(path: str) -> Vendor | None:
    text = _output([path, "-show"]) + _output([path, "--showme:version"])
    if "Open MPI" in text or "openmpi" in text:
        return Vendor.OPENMPI
    if "mpich" in text.lower():
        return Vendor.MPICH
    return None


@cache
def find_installation(vendor: Vendor) -> Installation:
    """The installation of ``vendor`` on this machine; UsageError if it is not installed."""
    for name in _LAUNCHERS[vendor]:
        path = shutil.which(name)
        if not path:
            continue
        found = launcher_vendor(path)
        if found is None or found[0] is not vendor:
            continue
        for cc_name in _COMPILERS[vendor]:
            cc = shutil.which(cc_name)
            if cc and _compiler_vendor(cc) is vendor:
                return Installation(vendor, found[1], found[2], path, cc)
        raise UsageError(f"no MPI found: {vendor.title} has a launcher ({path}) but no mpicc")
    raise UsageError(
        f"no MPI found: {vendor.title} is not installed "
        f"(looked for {', '.join(_LAUNCHERS[vendor])})"
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


def resolve_command(command: list[str], mpi: Vendor | None) -> Installation:
    """The installation that runs ``command``; checks it against ``--mpi`` if given."""
    if not command:
        raise UsageError("no command to run: put it after '--', e.g. -- mpirun -np 4 ./app")
    exe = shutil.which(command[0])
    if exe is None:
        raise UsageError(f"command not found: {command[0]}")
    if os.path.basename(command[0]) not in LAUNCHER_NAMES:
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
