"""Which MPI installations there are, which one a launch command uses, and ``--mpi``.

Several installations live side by side: Debian's (``mpirun.openmpi``, ``mpiexec.mpich``,
``mpicc.openmpi``, ``mpicc.mpich``; ``mpirun``/``mpicc`` point to one of them), others on
``PATH`` (a module loaded on a cluster puts its ``bin/`` there), prefixes named by
``COMMTUNE_MPI_PATH`` and each family's own variables (``MPI_HOME``, ``MPI_ROOT``,
``I_MPI_ROOT``). Each tool is asked who it is (``--version``/``-show``) instead of trusting
its name; an installation is its launcher and the compiler wrapper beside it.

``--mpi`` names a family (``openmpi``), a family and version (``openmpi@5``, ``mpich@4.0``)
or a prefix (a directory with ``bin/``); see :class:`MPISpec`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from commtune.errors import UsageError
from commtune.mpi._runs import Runs
from commtune.mpi._tools import output
from commtune.mpi._vendor import MPIVendor, Vendor
from commtune.settings import MPI_PATH

if TYPE_CHECKING:
    from commtune.mpi._simgrid import Launch

LAUNCHER_NAMES = frozenset(
    name for v in Vendor for name in (*v.impl.launcher_names, *v.impl.launcher_aliases)
)
# Variables in which clusters and vendors name an MPI installation's prefix.
PREFIX_VARIABLES = ("MPI_HOME", "MPI_ROOT", "I_MPI_ROOT")
# where installations are looked for, in order (what a user is told when none is found)
SEARCHED = ("COMMTUNE_MPI_PATH", *PREFIX_VARIABLES, "PATH")


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

    @property
    def prefix(self) -> str:
        """The directory the installation's ``bin/`` is in (where its launcher is)."""
        return _prefix_of(self.launcher)

    def environment(self) -> dict[str, str]:
        """Variables its tools, compiler wrapper and runs need (:meth:`MPIVendor.environment`)."""
        return self.impl.environment(self.prefix)

    def tool_env(self) -> dict[str, str]:
        """This process's environment with the installation's own (for running its tools)."""
        return {**os.environ, **self.environment()}

    @property
    def name(self) -> str:
        """``family@version``, as ``--mpi`` takes it."""
        return f"{self.vendor.value}@{self.version}"

    def describe(self) -> str:
        return f"{self.vendor.title} {self.version} ({self.impl.device_label(self.device)})"

    def cluster_files(self, platform: str | None, hostfile: str | None,
                      doing: str) -> tuple[str, str] | None:  # fmt: skip
        """``--platform`` and ``--hostfile``: the simulated cluster a command works on, both
        needed on a simulator and refused on a real MPI (one line each); None on a real MPI."""
        if not self.impl.simulated:
            if platform or hostfile:
                simulators = " or ".join(f"--mpi {v}" for v in Vendor.simulators())
                raise UsageError("--platform and --hostfile describe a simulated cluster; "
                                 f"{self.describe()} runs on this machine "
                                 f"({simulators})")  # fmt: skip
            return None
        if not platform or not hostfile:
            raise UsageError(f"{doing} a simulated cluster needs --platform FILE and --hostfile "
                             "FILE (commtune cluster --nodes N --out DIR writes both)")  # fmt: skip
        return platform, hostfile

    def stands_for(self, line: Sequence[str], real: Installation,
                   command: Sequence[str]) -> dict[str, str]:  # fmt: skip
        """``line`` (this simulator's launch, ``--twin``'s) checked as a stand-in for the real
        installation ``real`` that runs ``command``: the variables under which it decides as
        ``real`` does; UsageError naming what does not fit."""
        if self.cluster(line) is None:
            raise UsageError(f"--twin {line[0]}: not a simulator's launch line; give the "
                             "simulator's line of the program built with its compiler "
                             "wrapper")  # fmt: skip
        port = self.impl.decides_as(real.impl)
        if port is not None:
            return port
        if real.impl.simulated:
            raise UsageError("--twin: the line after '--' is the real launch (mpirun, mpiexec, "
                             "srun); the simulated one goes in --twin")  # fmt: skip
        raise UsageError(f"--twin: {self.impl.title} has no port of {real.impl.title}'s "
                         "decision to tune against")  # fmt: skip

    def cluster(self, command: Sequence[str]) -> Launch | None:
        """The simulated cluster ``command`` runs on (its platform, hostfile, ranks and
        program, checked: ``launch_files``); None on a real machine. The one place outside
        the vendors that asks whether an installation is a simulator."""
        if not self.impl.simulated:
            return None
        from commtune.mpi._simgrid import launch_files

        return launch_files(command)

    def runs(self, command: Sequence[str]) -> Runs:
        """What the runs of ``command`` can do (:class:`Runs`): on the simulated cluster its
        line names (checked: ``launch_files``), else on this machine."""
        launch = self.cluster(command)
        return Runs(launch, value_note=self.impl.run_value_note if launch else "")

    def runs_on(self, platform: str | None, hostfile: str | None, doing: str,
                ranks: int) -> Runs:  # fmt: skip
        """The runs a command given ``--platform`` and ``--hostfile`` makes (checked as
        :meth:`cluster_files` checks them), at up to ``ranks`` ranks."""
        files = self.cluster_files(platform, hostfile, doing)
        if files is None:
            return Runs()
        from commtune.mpi._simgrid import launch_files, launch_line

        return Runs(launch_files(launch_line(*files, ranks)), files, self.impl.run_value_note)

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.vendor.value,
            "version": self.version,
            "device": self.device,
            "launcher": self.launcher,
            "mpicc": self.mpicc,
            "prefix": self.prefix,
            "name": self.name,
        }

    def command(self, ranks: int, program: Sequence[str]) -> list[str]:
        """A local launch line for one of commtune's own programs."""
        return [self.launcher, *self.impl.local_options(), "-n", str(ranks), *program]


def _prefix_of(path: str) -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(path)))


def _asked(path: str, probes: tuple[tuple[str, ...], ...]) -> Iterator[tuple[Vendor, str]]:
    """(vendor, what ``path`` printed for ``probes``) for each vendor, asked with the
    environment its installation would need there, those that need one first: Intel MPI's
    ``mpirun`` without ``I_MPI_ROOT`` runs whichever ``mpiexec.hydra`` is on ``PATH``
    (Debian's MPICH) and answers as that one. The plain answer is asked once."""
    prefix = _prefix_of(path)
    plain: str | None = None
    for vendor in sorted(Vendor, key=lambda v: not v.impl.environment(prefix)):
        env = vendor.impl.environment(prefix)
        if env:
            yield vendor, "".join(output([path, *p], env=env) for p in probes)
            continue
        if plain is None:
            plain = "".join(output([path, *p]) for p in probes)
        yield vendor, plain


@cache
def launcher_vendor(path: str) -> tuple[Vendor, str, str] | None:
    """(vendor, version, device) of the launcher at ``path``, or None if it is no MPI launcher."""
    for vendor, text in _asked(path, (("--version",),)):
        found = vendor.impl.recognise(path, text)
        if found is not None:
            return vendor, found[0], found[1]
    return None


@cache
def _compiler_vendor(path: str) -> Vendor | None:
    # -v: Intel MPI's wrapper names itself there only ("mpigcc for the Intel(R) MPI Library")
    probes = (("-show",), ("--showme:version",), ("-v",))
    return next((v for v, text in _asked(path, probes) if v.impl.is_compiler(text)), None)


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
    # not on PATH under its names: a prefix named by COMMTUNE_MPI_PATH or I_MPI_ROOT
    found_elsewhere = [i for i in find_installations() if i.vendor is vendor]
    if found_elsewhere:
        return found_elsewhere[0]
    raise UsageError(
        f"no MPI found: {vendor.title} is not installed (looked for {', '.join(names)})"
    )


def _search_dirs() -> Iterator[str]:
    """Where installations are looked for, in order: the prefixes the user names
    (``COMMTUNE_MPI_PATH``), the family variables' prefixes, then ``PATH``."""
    for prefix in (MPI_PATH.get() or "").split(os.pathsep):
        if prefix:
            yield os.path.join(prefix, "bin")
    for name in PREFIX_VARIABLES:
        value = os.environ.get(name)
        if value:
            yield os.path.join(value, "bin")
    yield from (d for d in os.environ.get("PATH", "").split(os.pathsep) if d)


def _in_directory(directory: str) -> Iterator[Installation]:
    """The installations whose launcher is in ``directory`` (with a compiler beside it): one
    per family, under the first of its launcher names found there."""
    for vendor in Vendor:
        for name in vendor.impl.launcher_names:
            path = os.path.join(directory, name)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                continue
            found = launcher_vendor(path)
            if found is None or found[0] is not vendor:
                continue
            cc = _compiler_beside(vendor, directory)
            if cc is not None:
                yield Installation(vendor, found[1], found[2], path, cc)
                break


def _compiler_beside(vendor: Vendor, directory: str) -> str | None:
    for name in vendor.impl.compiler_names:
        cc = os.path.join(directory, name)
        if os.path.isfile(cc) and os.access(cc, os.X_OK) and _compiler_vendor(cc) is vendor:
            return cc
    return None


@cache
def find_simulators() -> tuple[Installation, ...]:
    """The simulators installed on this machine (each ``Vendor.simulators()`` found)."""
    found = []
    for name in Vendor.simulators():
        try:
            found.append(find_installation(Vendor(name)))
        except UsageError:
            continue
    return tuple(found)


def find_installations() -> tuple[Installation, ...]:
    """Every MPI installation found (see the module docstring), each once: a family's
    launcher reached through another directory (Debian's alternatives, a symbolic link)
    is the installation of the directory it really is in."""
    seen: set[tuple[Vendor, str]] = set()
    out = []
    for directory in dict.fromkeys(os.path.abspath(d) for d in _search_dirs()):
        if not os.path.isdir(directory):
            continue
        for inst in _in_directory(directory):
            key = (inst.vendor, os.path.dirname(os.path.realpath(inst.launcher)))
            if key not in seen:
                seen.add(key)
                out.append(inst)
    return tuple(out)


@dataclass(frozen=True)
class MPISpec:
    """What ``--mpi`` names: a family, a family at a version (a prefix of its version:
    ``openmpi@5`` is any 5.x), or an installation's prefix."""

    family: Vendor | None = None
    version: str | None = None
    prefix: str | None = None

    @classmethod
    def parse(cls, text: str) -> MPISpec:
        if os.sep in text or text.startswith("."):
            prefix = os.path.abspath(text.rstrip(os.sep) or os.sep)
            if not os.path.isdir(prefix):
                raise UsageError(f"--mpi {text}: no such directory")
            return cls(prefix=prefix)
        family, _, version = text.partition("@")
        names = ", ".join(v.value for v in Vendor)
        try:
            vendor = Vendor(family)
        except ValueError:
            raise UsageError(
                f"--mpi {text}: unknown MPI family {family!r} (one of {names}, FAMILY@VERSION "
                "or a prefix)"
            ) from None
        if "@" in text and not version.replace(".", "").isalnum():
            raise UsageError(f"--mpi {text}: expected a version after '@', e.g. {family}@5")
        return cls(vendor, version or None)

    def matches(self, inst: Installation) -> bool:
        if self.prefix is not None:
            return os.path.realpath(inst.prefix) == os.path.realpath(self.prefix)
        if self.family is not None and inst.vendor is not self.family:
            return False
        if self.version is not None:
            return inst.version == self.version or inst.version.startswith(self.version + ".")
        return True

    def __str__(self) -> str:
        if self.prefix is not None:
            return self.prefix
        assert self.family is not None
        return self.family.value + (f"@{self.version}" if self.version else "")


def _spec(mpi: str | Vendor | MPISpec | None) -> MPISpec | None:
    if mpi is None or isinstance(mpi, MPISpec):
        return mpi
    if isinstance(mpi, Vendor):
        return MPISpec(mpi)
    return MPISpec.parse(mpi)


def _chosen(spec: MPISpec) -> Installation:
    """The installation ``spec`` names: a family alone is its usual installation (the one
    ``find_installation`` finds); a version or a prefix, the first found that matches."""
    if spec.prefix is None and spec.version is None:
        assert spec.family is not None
        return find_installation(spec.family)
    if spec.prefix is not None:
        found = [i for i in _in_directory(os.path.join(spec.prefix, "bin")) if spec.matches(i)]
    else:
        found = [i for i in find_installations() if spec.matches(i)]
    if found:
        return found[0]
    known = ", ".join(i.name for i in find_installations()) or "none"
    raise UsageError(f"--mpi {spec}: no such MPI installation found (found: {known})")


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
    names = ", ".join(v.title for v in Vendor)
    raise UsageError(f"no MPI found: none of {names} is installed (no mpirun/mpiexec)")


def installation_of(mpi: str | Vendor | MPISpec | None) -> Installation:
    """The installation ``--mpi`` names (:class:`MPISpec`), or the default one."""
    spec = _spec(mpi)
    return default_installation() if spec is None else _chosen(spec)


def is_launcher(argv0: str) -> bool:
    """Whether ``argv0`` names an MPI launcher (not a wrapper script or ``srun``)."""
    return os.path.basename(argv0) in LAUNCHER_NAMES


def resolve_command(command: list[str], mpi: str | Vendor | MPISpec | None) -> Installation:
    """The installation that runs ``command``: its launcher decides (checked against
    ``--mpi`` if given); a wrapper script or another launcher (``srun``) runs the one
    ``--mpi`` names, or the default one."""
    if not command:
        raise UsageError("no command to run: put it after '--', e.g. -- mpirun -np 4 ./app")
    spec = _spec(mpi)
    exe = shutil.which(command[0])
    if exe is None:
        raise UsageError(f"command not found: {command[0]}")
    if not is_launcher(command[0]):
        return installation_of(spec)
    found = launcher_vendor(exe)
    if found is None:
        raise UsageError(f"{command[0]} is not an MPI launcher that commtune knows")
    vendor = found[0]
    # the compiler of the launcher's own installation: the one beside it, else the family's
    cc = _compiler_beside(vendor, os.path.dirname(exe)) or find_installation(vendor).mpicc
    inst = Installation(vendor, found[1], found[2], exe, cc)
    if spec is not None and not spec.matches(inst):
        raise UsageError(
            f"--mpi {spec} does not match the launcher: {command[0]} is {inst.describe()}"
            f" in {inst.prefix}"
        )
    return inst
