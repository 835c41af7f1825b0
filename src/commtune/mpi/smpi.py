"""SimGrid's SMPI: an MPI program, rebuilt with ``smpicc``, run by ``smpirun`` on a simulated
cluster (all ranks in one process). A configuration reaches it as ``--cfg=NAME:VALUE``
arguments of ``smpirun`` (its variables are SimGrid's configuration, not the environment);
it has no MPI_T, so the installed values are read by asking it: each collective's
algorithms are those it lists when given one it has not (its own error message), and the
selectors are the names every collective lists. The run's value is SMPI's simulated time
(``smpi/display-timing``), its wall time the simulation's cost. Platform files and
``smpirun`` lines: ``_simgrid.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from commtune.mpi._selection import Builtin, RulesError, Segment, Selection
from commtune.mpi._simgrid import Cluster
from commtune.mpi._vendor import Lack, MPIVendor, Profiled, Variable, Vendor

if TYPE_CHECKING:
    from commtune.mpi._install import Installation

# The collectives SMPI lets a user choose the algorithm of (``smpi/<name>``).
COLLECTIVES = ("allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "barrier",
               "bcast", "gather", "reduce", "reduce_scatter", "scatter")  # fmt: skip
SELECTOR = "smpi/coll-selector"
# The barrier before every call a sample times (its exit skew is part of the time measured,
# so every simulation gets the same one): a dissemination barrier
SAMPLING_BARRIER = "--cfg=smpi/barrier:ompi_bruck"
# A collective's value that sets nothing: the selector's choice stands.
FOLLOW_SELECTOR = "selector"
# Selector names every collective lists beside its algorithms; "automatic" times every
# algorithm at every call (a benchmark, not a setting) and is left out.
SELECTORS = ("default", "ompi", "mpich", "mvapich2", "impi")
NOT_SETTINGS = ("automatic",)
# Computation left out of the simulation: a run's value is its communication's, the same at
# every run (deterministic), and a compute loop that waits on MPI_Wtime would wait forever.
NO_COMPUTE = "--cfg=smpi/simulate-computation:no"
# Options commtune adds to every run: the simulated time printed at the end.
TIMING_ARGS = ("--cfg=smpi/display-timing:yes", "--log=smpi_utils.thres:info")
# SimGrid's words when ranks wait forever: it ends the simulation there, lists every rank
# (the first line may leave a run's tail at 1,024 ranks, the last stays), and exits 0
DEADLOCK = ("Deadlock detected", "Stalling SMPI instance")
SIMULATED_TIME = re.compile(r"Simulated time: ([0-9.eE+-]+) seconds")
# smpirun options that write the Paje trace a profile is read from, with the sizes each call
# passes (put after smpirun, before the program)
TRACE_SIZES = "--cfg=tracing/smpi/display-sizes:yes"
# The cluster commtune's own programs run on (probes, demo): one core a node, a fat tree.
LOCAL_NODES = 1024

_PROBE_SOURCE = (
    "#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); }\n"
)
_LISTED = re.compile(r"Collective '(\w+)' has no algorithm '[^']*'! Valid algorithms: ([^.]*)\.")


class SMPI(MPIVendor):
    vendor = Vendor.SMPI
    title = "SimGrid SMPI"
    env_prefix = "smpi/"  # its configuration's names; given as --cfg=, never in the environment
    env_prefixes = ("smpi/", "SMPI_")
    launcher_names = ("smpirun",)
    compiler_names = ("smpicc",)
    export_formats = ("cfg",)
    # its configuration is smpirun arguments, not variables (no "env"); no I/O stack to hint
    base_formats = ("json",)
    settings_file = ("cfg", "smpi.cfg")
    launcher_word = "smpirun"
    p2p_knobs = (("smpi/async-small-thresh", "smpi/send-is-detached-thresh"),)
    selection_file_name = "smpi-collectives.cfg"
    forced_overrides_file = True
    default_algorithm_named = False
    keeps_unlisted_choices = False  # it lists exactly what it has
    training_ranks = (16,)
    hdf5_package = ""
    simulated = True
    run_value = "simulated"
    run_value_note = "the value of a run is its simulated time, its wall time the simulation's cost"
    exact_runs = None  # exact when computation is left out (NO_COMPUTE), else not
    profiled_by = Profiled.TRACE
    profile_source = "SimGrid's trace"
    lacks = frozenset(Lack)
    probes_values = False  # every name is read from the installation; no MPI_T to probe with

    def mpit_name(self, env_name: str) -> str | None:
        return None  # SMPI has no MPI_T

    def _mpit_name(self, env_name: str) -> str:
        return env_name

    def env_name(self, variable: str) -> str:
        return variable

    def algorithm_knob(self, op: str) -> str:
        return f"smpi/{op}"

    def selection_env(self, path: str) -> dict[str, str]:
        raise RulesError("SMPI reads no collective selection file: its algorithms are knobs")

    def write_selection(
        self,
        segs: Mapping[str, Sequence[Segment]],
        algorithms: Mapping[str, Mapping[str, int]],
        ranks: int,
        header: str,
        builtin: Builtin | None,
    ) -> Selection:
        raise RulesError("SMPI reads no collective selection file: its algorithms are knobs")

    def recognise(self, launcher: str, version_text: str) -> tuple[str, str] | None:
        match = re.search(r"SimGrid version (\S+)", version_text)
        return (match.group(1), "smpi") if match else None

    def is_compiler(self, show_text: str) -> bool:
        return "smpi" in show_text and "simgrid" in show_text

    def device_label(self, device: str) -> str:
        return "simulated cluster"

    # -- the launcher: --cfg= arguments --------------------------------------------------------
    def configured_by_args(self, name: str) -> bool:
        return name.startswith(self.env_prefix)

    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        # every rank is a thread of the one process: the environment reaches them all; its
        # configuration is an argument
        return [f"--cfg={name}:{value}" for name, value in variables.items()
                if self.configured_by_args(name) and value != FOLLOW_SELECTOR]  # fmt: skip

    def line_args(self, command: Sequence[str], variables: Mapping[str, str]) -> list[str]:
        # a platform calibrated from a machine is its links with the configuration beside it
        # (factors, overheads, thresholds, the host's speed): without it the links alone,
        # SMPI's InfiniBand factors and a compute speed unrelated to the machine
        args = list(command)
        if "-platform" not in args[:-1]:
            return []
        given = {_cfg_name(a) for a in args if a.startswith("--cfg=")} | set(variables)
        out = [a for a in calibrated_args(args[args.index("-platform") + 1])
               if _cfg_name(a) not in given]  # fmt: skip
        # SimGrid refuses an asynchronous-small threshold above the detached one (an
        # assertion, smpi_config.cpp): a detached threshold tuned below the file's lowers it
        detached = variables.get(DETACHED) or next(
            (a.split(":", 1)[1] for a in args if _cfg_name(a) == DETACHED and ":" in a), None
        )
        if detached is not None and detached.isdigit():
            out = [f"--cfg={ASYNC_SMALL}:{min(int(a.split(':', 1)[1]), int(detached))}"
                   if _cfg_name(a) == ASYNC_SMALL and a.split(":", 1)[1].isdigit() else a
                   for a in out]  # fmt: skip
        return out

    def run_failure(self, stderr: str) -> str | None:
        if any(word in stderr for word in DEADLOCK):
            at = simulated_time(stderr)
            when = f" at {at:.6g} s simulated" if at is not None else ""
            return f"SMPI detected a deadlock{when}: the simulation stopped there (exit 0)"
        return None

    def run_args(self) -> list[str]:
        return list(TIMING_ARGS)

    def trace_args(self, path: str) -> list[str]:
        return ["-trace", "-trace-file", str(path), TRACE_SIZES]

    def local_options(self) -> list[str]:
        platform, hosts = local_cluster()
        return ["-platform", platform, "-hostfile", hosts, *TIMING_ARGS]

    # -- discovery ----------------------------------------------------------------------------
    def tool_variables(self, installation: Installation) -> dict[str, Variable] | None:
        return discover_smpi(installation)

    # -- standing for a real library ---------------------------------------------------------
    def decides_as(self, library: MPIVendor) -> dict[str, str] | None:
        if library.smpi_selector is None or library.simulated:
            return None
        return {SELECTOR: library.smpi_selector}

    def values_as(self, library: MPIVendor, knob: str, values: Sequence[str]) -> tuple[str, ...]:
        ports = library.smpi_ports.get(knob.removeprefix(self.env_prefix), {})
        if knob == SELECTOR or not ports:
            return ()
        return (FOLLOW_SELECTOR, *(v for v in values if v in ports))

    def settings_as(self, library: MPIVendor, config: Mapping[str, str]) -> dict[str, str]:
        out = {}
        for knob, value in config.items():
            op = knob.removeprefix(self.env_prefix)
            if value == FOLLOW_SELECTOR or knob == SELECTOR:
                continue
            out[library.algorithm_knob(op)] = library.smpi_ports[op][value]
        return out

    def baseline(self, command: Sequence[str]) -> dict[str, str]:
        args = list(command)
        pinned = (
            calibrated_args(args[args.index("-platform") + 1]) if "-platform" in args[:-1] else []
        )
        pinned += [a for a in args if a.startswith("--cfg=")]  # the line's own, after the file's
        return dict(a.removeprefix("--cfg=").split(":", 1) for a in pinned if ":" in a)

    def models_of(self, library: MPIVendor) -> frozenset[str]:
        return frozenset(library.algorithm_knob(op) for op in library.smpi_ports)

    def knob_as(self, library: MPIVendor, knob: str) -> str | None:
        op = knob.removeprefix(self.env_prefix)
        return library.algorithm_knob(op) if op in library.smpi_ports else None

    def unmodeled(self, library: MPIVendor, knob: str, values: Sequence[str]) -> tuple[str, ...]:
        op = next((op for op in library.smpi_ports if library.algorithm_knob(op) == knob), None)
        if op is None:
            return ()
        ported = set(library.smpi_ports[op].values())
        return tuple(v for v in values if v not in ported)

    # -- export -------------------------------------------------------------------------------
    def render(self, fmt: str, env: Mapping[str, str], header: str) -> str:
        if fmt != "cfg":
            return super().render(fmt, env, header)
        args = self.rank_args(env)
        lines = [f"# {header}: SimGrid configuration; smpirun $(grep -v '^#' smpi.cfg) ..."]
        return "\n".join(lines + args) + "\n"


def simulated_command(installation: Installation, platform: str, hostfile: str, ranks: int,
                      program: Sequence[str]) -> list[str]:  # fmt: skip
    """One of commtune's own programs at ``ranks`` simulated ranks on the user's cluster,
    computation left out, with the configuration calibrated for it where ``commtune
    cluster --calibration`` wrote one beside the platform."""
    return [installation.launcher, "-np", str(ranks), "-platform", platform,
            "-hostfile", hostfile, *calibrated_args(platform), NO_COMPUTE,
            *program]  # fmt: skip


def _cfg_name(arg: str) -> str:
    """The configuration name of a ``--cfg=NAME:VALUE`` argument."""
    return arg.removeprefix("--cfg=").split(":", 1)[0]


DETACHED = "smpi/send-is-detached-thresh"
ASYNC_SMALL = "smpi/async-small-thresh"  # SimGrid: at most the detached threshold


def calibrated_args(platform: str) -> list[str]:
    """The ``--cfg=`` lines of the configuration file beside ``platform`` (none: [])."""
    from commtune.mpi._simgrid import CONFIGURATION_FILE

    path = os.path.join(os.path.dirname(os.path.abspath(platform)), CONFIGURATION_FILE)
    try:
        with open(path) as f:
            return [line.strip() for line in f if line.startswith("--cfg=")]
    except OSError:
        return []


def local_cluster() -> tuple[str, str]:
    """The platform and hostfile of commtune's own SMPI runs (written once per user)."""
    from commtune.mpi._simgrid import write_cluster

    directory = os.path.join(tempfile.gettempdir(), f"commtune-smpi-{os.getuid()}")
    platform, hosts = (os.path.join(directory, n) for n in ("platform.xml", "hosts"))
    if not (os.path.exists(platform) and os.path.exists(hosts)):
        write_cluster(Cluster(LOCAL_NODES), directory)
    return platform, hosts


def parse_listed(text: str) -> dict[str, tuple[str, ...]]:
    """collective -> the algorithms SMPI listed in ``text`` (its refusal of a bad name)."""
    return {
        m.group(1): tuple(a.strip() for a in m.group(2).split(",")) for m in _LISTED.finditer(text)
    }


def discover_smpi(installation: Installation) -> dict[str, Variable]:
    """The installation's collective variables, each with the algorithms it lists, and the
    selector with the names every collective lists; thresholds at their documented
    defaults (SimGrid prints no list of them)."""
    listed: dict[str, tuple[str, ...]] = {}
    with tempfile.TemporaryDirectory(prefix="commtune-smpi-") as tmp:
        source = os.path.join(tmp, "probe.c")
        program = os.path.join(tmp, "probe")
        with open(source, "w") as f:
            f.write(_PROBE_SOURCE)
        subprocess.run([installation.mpicc, "-o", program, source], capture_output=True,
                       check=False, timeout=120)  # fmt: skip
        platform, hosts = local_cluster()
        for op in COLLECTIVES:
            argv = [installation.launcher, "-np", "1", "-platform", platform, "-hostfile", hosts,
                    f"--cfg=smpi/{op}:commtune-no-such-algorithm",
                    "--log=root.thres:critical", program]  # fmt: skip
            done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120,
                                  stdin=subprocess.DEVNULL, cwd=tmp)  # fmt: skip
            listed.update(parse_listed(done.stdout + done.stderr))
    out: dict[str, Variable] = {}
    for op, names in listed.items():
        algorithms = tuple(n for n in names if n not in NOT_SETTINGS)
        out[f"smpi/{op}"] = Variable(f"smpi/{op}", FOLLOW_SELECTOR, (FOLLOW_SELECTOR, *algorithms),
                                     f"Algorithm of MPI_{op.title()} (SMPI)", "string")  # fmt: skip
    if listed:
        common = [s for s in SELECTORS if all(s in names for names in listed.values())]
        out[SELECTOR] = Variable(SELECTOR, "default", tuple(common),
                                 "The decision logic choosing every collective's algorithm",
                                 "string")  # fmt: skip
    out["smpi/send-is-detached-thresh"] = Variable(
        "smpi/send-is-detached-thresh", "65536", (), "Messages below it are sent detached "
        "(eager)", "int")  # fmt: skip
    out["smpi/async-small-thresh"] = Variable(
        "smpi/async-small-thresh", "0", (), "Messages below it are sent asynchronously, "
        "without waiting for the receiver", "int")  # fmt: skip
    return out


def simulated_time(stderr: str) -> float | None:
    """SMPI's simulated time of a run, from its log (the last one printed)."""
    found = SIMULATED_TIME.findall(stderr)
    try:
        return float(found[-1]) if found else None
    except ValueError:
        return None
