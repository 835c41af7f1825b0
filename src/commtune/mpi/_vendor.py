"""The MPI vendor protocol: everything that differs between MPI libraries, one module each.

``mpi/openmpi.py``, ``mpi/mpich.py`` and ``mpi/intel.py`` implement :class:`MPIVendor`; no
other module of commtune branches on the vendor, it asks ``installation.vendor.impl`` (as
mpi4py keeps each vendor's quirks in one header). What a vendor says:

- how its variables are named in the environment and in MPI_T (``env_prefix``,
  :meth:`mpit_name`, :meth:`mpit_value`);
- how its launcher is recognised and how a variable reaches remote ranks (:meth:`recognise`,
  :meth:`forwarded`, :meth:`rank_args`, :meth:`local_options`);
- how its installed variables are listed (:meth:`tool_variables`: a tool of its own, or None
  for MPI_T through ``ct_probe``; :meth:`aliases`: other names MPI_T gives in descriptions;
  ``reads_back_text``: whether MPI_T reads back text set in the environment);
- the environment its installation needs (:meth:`environment`);
- which environment variables are its own and which shared-memory files it leaves
  (``env_prefixes``, ``shm_patterns``);
- its algorithm knobs, point-to-point knobs and collective selection file (name, the
  variables that load it, how it is written from sampled ranges and checked:
  :meth:`write_selection`, :meth:`builtin_selection`);
- how its MPI_T descriptions list algorithm names (:meth:`algorithm_names`);
- the configuration formats of its own beyond env and JSON (:meth:`render`);
- what a run of its program is (a simulator differs from a real library here, and the layers
  above ask these, never the library's name): what a run's value is (``run_value``), whether
  runs repeat exactly (``exact_runs``), how a run is profiled (``profiled_by``,
  :meth:`trace_args`, ``profile_source``), and what it cannot do (``lacks``).

Add a library: a module implementing this class, a :class:`Vendor` member, a line in
``mpi/_registry.py`` and its catalog ``knobs/data/<name>.json``. Nothing outside ``mpi/``
names a vendor (``tests/test_layers.py``); ``tests/test_contracts.py`` runs the vendor
contract on every registered vendor and on a stub that shows the recipe is complete.

Implementations are stateless singletons; every method is pure except those that run the
vendor's tools (:meth:`recognise`, :meth:`tool_variables`).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pathlib import Path

    from commtune.mpi._install import Installation
    from commtune.mpi._layer import Layer
    from commtune.mpi._selection import Builtin, Segment, Selection


class Profiled(enum.Enum):
    """How a run of the library's program is profiled (MPI time per call and size)."""

    PRELOAD = "preload"  # libcommtune, preloaded into every rank (LD_PRELOAD)
    TRACE = "trace"  # the launcher's own trace of the run (:meth:`MPIVendor.trace_args`)


class Lack(enum.Enum):
    """Something an installation cannot do that the layers above would otherwise ask of it;
    the value says what follows."""

    MPI_T = "no MPI tool interface: its variables are read by asking it; a policy recommends"
    PRELOAD = "all ranks in one process: no preloaded library reaches its program"
    NODES = "its ranks run on no real node: nothing to spread over a test bed or an allocation"
    SELECTION_FILE = "no collective selection file: its algorithms are knobs"


class Vendor(enum.Enum):
    """Which MPI library; ``impl`` is its :class:`MPIVendor`."""

    OPENMPI = "openmpi"
    MPICH = "mpich"
    INTEL = "intel"
    SMPI = "smpi"

    @property
    def impl(self) -> MPIVendor:
        from commtune.mpi import _registry

        return _registry.IMPLEMENTATIONS[self]

    @property
    def title(self) -> str:
        return self.impl.title

    @classmethod
    def real(cls) -> list[str]:
        """The names of the real libraries (``--as``'s choices)."""
        return [v.value for v in cls if not v.impl.simulated]

    @classmethod
    def simulators(cls) -> list[str]:
        """The names of the simulated clusters' libraries (``--mpi smpi``)."""
        return [v.value for v in cls if v.impl.simulated]


@dataclass(frozen=True)
class Variable:
    """One control variable as the installed library reports it."""

    name: str
    value: str | None
    enumerators: tuple[str, ...] = ()
    description: str = ""
    kind: str = ""  # bool | int | string | float; "" where the library does not say
    settable: bool = True  # False: a constant of the build, or read-only at every time
    # The MPI_T variable that reads it back where that is not the vendor's rule
    # (:meth:`MPIVendor.mpit_name`): Intel MPI's ``I_MPI_SHM_CMA`` is MPI_T's
    # ``MPIR_CVAR_INTEL_SHM_CMA``; "" where MPI_T cannot read it back. None: the rule.
    mpit: str | None = None
    syntax: str = ""  # what the layer says it takes, where it says (UCX's "syntax:" line)

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "enumerators": list(self.enumerators),
                "description": self.description, "kind": self.kind,
                "settable": self.settable, "mpit": self.mpit, "syntax": self.syntax}  # fmt: skip

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> Variable:
        return cls(name, data["value"], tuple(data["enumerators"]), data["description"],
                   data.get("kind", ""), data.get("settable", True),
                   data.get("mpit"), data.get("syntax", ""))  # fmt: skip


class MPIVendor(abc.ABC):
    """What one MPI library does its own way (see the module docstring)."""

    vendor: ClassVar[Vendor]
    title: ClassVar[str]
    env_prefix: ClassVar[str]  # the environment prefix of its MPI_T control variables
    # Every prefix of its own variables (its families' prefixes are theirs): what a study
    # records of the user's environment, since they change what is measured.
    env_prefixes: ClassVar[tuple[str, ...]]
    # Files its shared-memory transport leaves in /dev/shm when a run is killed.
    shm_patterns: ClassVar[tuple[str, ...]] = ()
    launcher_names: ClassVar[tuple[str, ...]]  # looked up in this order
    launcher_aliases: ClassVar[tuple[str, ...]] = ()  # other names of its launcher
    compiler_names: ClassVar[tuple[str, ...]]
    export_formats: ClassVar[tuple[str, ...]] = ()  # formats of its own (render)
    # Of the formats every library may read, those this one reads: a configuration as shell
    # variables, as JSON (its families add theirs: ``families.formats``)
    base_formats: ClassVar[tuple[str, ...]] = ("env", "json")
    # The knob families it reads (``commtune.families``: their catalogs join its own, their
    # tools are read where it runs over their layer, their formats are its too) ...
    families: ClassVar[tuple[str, ...]] = ()
    # ... and those whose knobs a study takes only where named (``--knob``), in no preset nor
    # the default space: a layer the library may or may not run over, chosen at run time
    named_only: ClassVar[tuple[str, ...]] = ()
    # (export format, file name) of the settings file its users keep (what `tune` suggests)
    settings_file: ClassVar[tuple[str, str]] = ("env", "tuned.env")
    launcher_word: ClassVar[str]  # the launcher as its users type it
    # (single-copy mechanism, eager/rendezvous limit), per version: the first pair whose knobs
    # the installation has (Open MPI 5 renamed them).
    p2p_knobs: ClassVar[tuple[tuple[str, str], ...]]
    # The same between nodes (ranks on several nodes: a test bed's): (single-copy mechanism
    # or None, the network transport's eager/rendezvous limit); () where no variable sets it.
    network_p2p_knobs: ClassVar[tuple[tuple[str | None, str], ...]] = ()
    # Smallest bytes per contiguous block of non-contiguous data handed over as a list of
    # blocks (iovec) rather than packed (NewMadeleine's copy-vs-iovec threshold); None: no knob.
    iov_knob: ClassVar[str | None] = None
    # Largest message its network transport aggregates with others sent back to back
    # (NewMadeleine's aggregation; 0: none); None: no knob.
    aggregation_knob: ClassVar[str | None] = None
    algorithm_env: ClassVar[Mapping[str, str]] = {}  # needed to switch algorithms at run time
    # An algorithm variable written through MPI_T inside a run takes effect (the sampler
    # switches algorithms in one launch); else one launch per algorithm (Intel MPI).
    algorithms_at_run_time: ClassVar[bool] = True
    # Algorithms that apply only to calls the sampler does not make (MPICH's
    # pairwise_sendrecv_replace: MPI_IN_PLACE only). Forced, the library silently falls back
    # to its own choice, so their curve would be that choice under their name; written to a
    # selection file, the library runs them anyway and aborts ("Internal error").
    unsampled_algorithms: ClassVar[frozenset[str]] = frozenset()
    selection_file_name: ClassVar[str]  # the collective selection file commtune writes
    # A forced algorithm variable overrides a loaded selection file (MPICH) or not (Open MPI).
    forced_overrides_file: ClassVar[bool]
    # The algorithm enumerator meaning "the library decides" has a name in selection files.
    default_algorithm_named: ClassVar[bool]
    # Keep catalog choices the library documents but does not list (probed before use).
    keeps_unlisted_choices: ClassVar[bool]
    # Algorithms a selection file must never name (they abort there, not when forced).
    unsafe_in_selection: ClassVar[tuple[str, ...]] = ()
    # Its selection file must extend the library's own (read by :meth:`builtin_selection`).
    selection_extends_builtin: ClassVar[bool] = False
    training_ranks: ClassVar[tuple[int, ...]]  # rank counts of `commtune train` by default
    # MPI_T reads back the text variables set from the environment (Intel MPI's read "").
    reads_back_text: ClassVar[bool] = True
    hdf5_package: ClassVar[str]  # pkg-config name of its parallel HDF5 (Debian's)
    # libfabric's ``fi_info`` under the installation's ``bin/``, first found is run
    fabric_info: ClassVar[tuple[str, ...]] = ("fi_info",)
    # SimGrid's SMPI carries ports of this library's collectives: the name of its port of the
    # library's decision logic (``smpi/coll-selector``; None: no ports), and per collective
    # SMPI's algorithm -> the library's name of it (``commtune sample --mpi smpi``).
    smpi_selector: ClassVar[str | None] = None
    smpi_ports: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    # SMPI's algorithms carried under this library's names that are not its algorithm (per
    # collective: SMPI's name -> why, from both sources): never sampled or proposed for it.
    smpi_unfaithful: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    # A simulated cluster (SimGrid's SMPI): its launch line names a platform file
    # (``launch_files``); the questions below say what follows from it.
    simulated: ClassVar[bool] = False
    # What a run's value is by default (an objective: "wall", or "simulated": the simulator's
    # clock, its wall time then the cost), with the words that tell the user which.
    run_value: ClassVar[str] = "wall"
    run_value_note: ClassVar[str] = ""
    # Whether a configuration's runs repeat exactly: False on a real machine (never, whatever
    # a program prints rounded); None: judged from the runs of the defaults (a simulation
    # leaving computation out repeats; one timing its compute bursts does not).
    exact_runs: ClassVar[bool | None] = False
    # How a run is profiled, and what the profile is, in the user's words.
    profiled_by: ClassVar[Profiled] = Profiled.PRELOAD
    profile_source: ClassVar[str] = "libcommtune"
    # What it cannot do (see :class:`Lack`).
    lacks: ClassVar[frozenset[Lack]] = frozenset()
    # Its categorical values are tried once each before a study (``ct_probe``, MPI_T).
    probes_values: ClassVar[bool] = True
    # In-run racing (``commtune race``, native/race/ct_race.c): how a collective's algorithm
    # variable takes a value while the program runs ("call": written before every call;
    # "dup": copied when a communicator is made; None: it cannot), and the launch variables
    # that make it govern the call.
    race_mode: ClassVar[str | None] = None
    race_env: ClassVar[Mapping[str, str]] = {}
    # An algorithm's stated restrictions, per (collective, algorithm): libctrace's words
    # (``size2``: a communicator of 2 ranks; ``pow2``: of a power of two; ``commute``: a
    # commutative operation, "+"-joined). A raced call that does not meet them runs the
    # library's own decision, never evidence.
    race_rules: ClassVar[Mapping[tuple[str, str], str]] = {}

    # -- names ----------------------------------------------------------------------------
    def mpit_name(self, env_name: str) -> str | None:
        """The MPI_T name of the variable set by ``env_name`` (None: outside MPI_T)."""
        if not env_name.startswith(self.env_prefix):
            return None
        return self._mpit_name(env_name)

    @abc.abstractmethod
    def _mpit_name(self, env_name: str) -> str: ...

    def env_name(self, variable: str) -> str:
        """The environment variable that sets the library's control variable ``variable``
        (as discovery names it; a family's variable: ``families.env_name``)."""
        own = variable.startswith((self.env_prefix, *self.env_prefixes))  # MPIR_CVAR_, I_MPI_
        return variable if own else self.env_prefix + variable

    def mpit_value(self, text: str, enumerators: tuple[str, ...], categorical: bool) -> str:
        """What MPI_T reads back for a variable set to ``text`` (its own enumeration)."""
        return text

    @abc.abstractmethod
    def algorithm_knob(self, op: str) -> str:
        """The knob forcing the algorithm of collective ``op`` (e.g. ``allreduce``)."""

    # per collective, its algorithms that cut a message into segments of the size
    # :meth:`segment_knob` sets (in-run racing races them at several sizes)
    segmented: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def segment_knob(self, op: str) -> str | None:
        """The knob setting the segment size of ``op``'s forced algorithm (None: none)."""
        return None

    @abc.abstractmethod
    def selection_env(self, path: str) -> dict[str, str]:
        """Variables that make the library read the collective selection file ``path``."""

    @abc.abstractmethod
    def write_selection(
        self,
        segs: Mapping[str, Sequence[Segment]],
        algorithms: Mapping[str, Mapping[str, int]],
        ranks: int,
        header: str,
        builtin: Builtin | None,
    ) -> Selection:
        """The selection file for ``segs`` (collective -> size ranges of algorithm names;
        ``algorithms``: collective -> name -> the library's number), read back by a parser
        that follows the library's rules; a collective that cannot be expressed is left to
        the library with a warning. RulesError if the text would not load."""

    def merge_selections(self, texts: Mapping[int, str], builtin: Builtin | None) -> str:
        """One selection file from files written each for one communicator size (``texts``:
        ranks -> text), read back as the library would; RulesError if it cannot say that."""
        from commtune.mpi._selection import RulesError

        raise RulesError(f"{self.title} has no selection file by communicator size")

    def overlay_selection(self, base: str, mine: str, ops: Sequence[str]) -> str:
        """``base`` (a site-wide selection file, ``commtune sample``'s) with the collectives
        ``ops`` as ``mine`` (a study's answer by size) decides them; RulesError where
        either does not parse or lacks what the library needs."""
        from commtune.mpi._selection import RulesError

        raise RulesError(f"{self.title}: commtune does not merge its selection files")

    def builtin_selection(self, library: Path, variables: Mapping[str, Variable]) -> Builtin | None:
        """The library's own selection, read from its shared library ``library`` (only when
        ``selection_extends_builtin``); ``variables``: the installation's control variables."""
        return None

    def reconcile(self, env: Mapping[str, str], directory: Path) -> dict[str, str]:
        """Variables to add to a run's environment ``env`` so that all it sets takes effect
        together (Open MPI: a forced algorithm beside a rules file that lists the
        collective); may write files in ``directory``. Nothing by default."""
        return {}

    # -- the launcher -----------------------------------------------------------------------
    @abc.abstractmethod
    def recognise(self, launcher: str, version_text: str) -> tuple[str, str] | None:
        """(version, device) if ``launcher --version`` printed ``version_text`` for this
        vendor, else None."""

    @abc.abstractmethod
    def is_compiler(self, show_text: str) -> bool:
        """Whether ``mpicc -show`` (and ``--showme:version``) printed this vendor's text."""

    def local_options(self) -> list[str]:
        """Options a local launch of this vendor needs."""
        return []

    # The launcher's ways below are hydra's by default (MPICH, Intel MPI); Open MPI has its own.
    def forwarded(self, name: str) -> bool:
        """Whether the launcher forwards ``name`` from its environment to remote ranks
        (hydra: none is, every variable is given with ``-genv``)."""
        return False

    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        """Launcher options that set ``variables`` in every rank."""
        return [a for name, value in variables.items() for a in ("-genv", name, value)]

    def configured_by_args(self, name: str) -> bool:
        """Whether ``name`` is set by a launcher argument only, never in the environment
        (SMPI's configuration); :meth:`rank_args` gives it."""
        return False

    def run_failure(self, stderr: str) -> str | None:
        """Why a run that exited 0 failed all the same, from its standard error (SMPI: a
        deadlock it detected ends the simulation early, exit status 0); None: it did not."""
        return None

    def trace_args(self, path: str) -> list[str]:
        """Launcher options that write the trace a profile is read from to ``path`` (only
        when ``profiled_by`` is :attr:`Profiled.TRACE`)."""
        raise ValueError(f"{self.title} is profiled by a preloaded library, not a trace")

    def run_args(self) -> list[str]:
        """Launcher options every run gets (SMPI: print the simulated time)."""
        return []

    def line_args(self, command: Sequence[str], variables: Mapping[str, str]) -> list[str]:
        """Launcher options a run of ``command`` gets from what the line names (SMPI: the
        calibration written beside its platform), none that the line or ``variables`` set."""
        return []

    def launch_args(self, options: Mapping[str, str]) -> list[str]:
        """Launcher options for ``options`` (name -> value: ``bind-to`` -> ``core``), as its
        launcher spells them (hydra: ``-bind-to core``)."""
        return [a for name, value in options.items() for a in (f"-{name}", value)]

    def remote_args(self, hosts: Sequence[str], agent: str) -> list[str]:
        """Launcher options that start ranks on ``hosts`` through ``agent``, a program that
        behaves like ``ssh HOST COMMAND`` (hydra's way by default)."""
        return ["-hosts", ",".join(hosts), "-launcher", "ssh", "-launcher-exec", agent]

    def hosts_env(self, hostfile: str, agent: str) -> dict[str, str]:
        """Variables that make a plain launch line (``mpiexec -n 4 ./app``) start its ranks on
        the hosts of ``hostfile`` (one name a line) through ``agent``, one rank a host in
        turn, as an allocation's environment does on a cluster (hydra's way by default)."""
        return {"HYDRA_HOST_FILE": hostfile, "HYDRA_LAUNCHER": "ssh",
                "HYDRA_LAUNCHER_EXEC": agent}  # fmt: skip

    def network_env(self, devices: Sequence[str]) -> dict[str, str]:
        """Variables that make the library talk over the network interfaces ``devices``
        between the nodes of a test bed on one machine (namespaces), as between real nodes:
        its transports would otherwise find the one machine's shared memory from every
        node, or another node's loopback. Nothing by default."""
        return {}

    def rail_weights(self, shares: Mapping[str, float]) -> dict[str, str] | None:
        """Variables that make the library split a large message over its network
        interfaces in ``shares`` (interface -> fraction of the bytes), NewMadeleine's
        multi-rail split given as the library's own weights; None: it has no such weights
        (it splits by estimates of its own)."""
        return None

    def environment(self, prefix: str) -> dict[str, str]:
        """Variables the installation at ``prefix`` needs for its tools, its compiler wrapper
        and its runs (Intel MPI: ``I_MPI_ROOT``, its libraries and libfabric's providers);
        nothing by default."""
        return {}

    # -- discovery --------------------------------------------------------------------------
    def aliases(self, variable: Variable) -> tuple[str, ...]:
        """Other environment names of an MPI_T variable (Intel MPI's ``I_MPI_*`` names of its
        ``MPIR_CVAR_*`` variables, given in their descriptions); none by default."""
        return ()

    def tool_variables(self, installation: Installation) -> dict[str, Variable] | None:
        """Every control variable, from a tool of the vendor's own; None: ask MPI_T."""
        return None

    def algorithm_names(
        self, name: str, description: str, known: tuple[str, ...]
    ) -> tuple[str, ...]:
        """The algorithms a variable listed by MPI_T without enumerators takes, where the
        library lists them in its description; ``known``: the catalog's names for it."""
        return ()

    def device_label(self, device: str) -> str:
        """The device as the user reads it (the fingerprint keeps ``device`` as found)."""
        return device

    # -- the layers a run selects (issue 95) -------------------------------------------------
    def layer_env(self, device: str) -> dict[str, str]:
        """Variables that make a run of an installation of ``device`` say which layers it
        selected (:meth:`parse_layer` reads what it says); none: the library cannot say."""
        return {}

    def parse_layer(self, stderr: str) -> Layer | None:
        """The layer a run under :meth:`layer_env` says it selected (``stderr``: what it
        printed, both streams); None: not said."""
        return None

    def ucx_args(self, device: str) -> list[str] | None:
        """Launcher options that run an installation of ``device`` over UCX as an
        InfiniBand cluster does (none needed: []); None where it cannot."""
        return None

    def knob_layer(self, knob: str) -> str | None:
        """The layer that reads ``knob``, in the words :attr:`Layer.p2p` and the components
        use (``pml ob1``, ``coll tuned``); None: the library itself, whatever it selects."""
        return None

    def layer_families(self, layer: Layer) -> tuple[str, ...]:
        """The families of :attr:`named_only` a run that selected ``layer`` runs over (their
        knobs then have their presets and places in the default space)."""
        return ()

    def layer_note(self, layer: Layer, knob: str) -> str | None:
        """What a study of ``knob`` under ``layer`` must say: the component serving its call
        reads it for part of the call only (Open MPI's han over tuned); None: nothing."""
        return None

    def layer_knobs(self, layer: Layer) -> tuple[str, ...]:
        """Knobs a run that selected ``layer`` has in its default space beside the catalog's:
        the component that serves its calls, where the library has a variable for it."""
        return ()

    def unread(self, layer: Layer, knob: str) -> str | None:
        """Why a run that selected ``layer`` does not read ``knob`` (its point-to-point layer
        or the component serving its call is another's); None: it reads it."""
        return None

    # -- a simulator standing for a real library ---------------------------------------------
    def decides_as(self, library: MPIVendor) -> dict[str, str] | None:
        """Variables under which this simulator decides as ``library`` does (its port of the
        library's decision logic: the reference of a study tuned as that library); None: it
        cannot stand for it (a real library, or a library it has no port of)."""
        return None

    def values_as(self, library: MPIVendor, knob: str, values: Sequence[str]) -> tuple[str, ...]:
        """Of ``values`` of this simulator's ``knob``, those that stand faithfully for one of
        ``library``'s own choices, the library's own decision first; (): none does (the knob
        is left out of a study tuned as that library)."""
        return ()

    def settings_as(self, library: MPIVendor, config: Mapping[str, str]) -> dict[str, str]:
        """``config`` (this simulator's knob -> value, chosen among :meth:`values_as`) as
        ``library``'s own knob -> value; what stands for its decision is left out."""
        raise ValueError(f"{self.title} stands for no other library (decides_as is None)")

    def baseline(self, command: Sequence[str]) -> dict[str, str]:
        """The values ``command`` runs its knobs with when the study sets none (knob ->
        text): what the launch line or a configuration beside its platform pins; {}: the
        library's defaults."""
        return {}

    def models_of(self, library: MPIVendor) -> frozenset[str]:
        """The knobs of ``library`` this simulator models (it carries ports of their
        choices); empty: none (a real library models nothing of another)."""
        return frozenset()

    def knob_as(self, library: MPIVendor, knob: str) -> str | None:
        """``library``'s knob that this simulator's ``knob`` stands for; None: none."""
        return None

    def unmodeled(self, library: MPIVendor, knob: str, values: Sequence[str]) -> tuple[str, ...]:
        """Of ``values`` of ``library``'s algorithm variable ``knob``, those this simulator
        has no faithful port of (a twin cannot rank them); (): ``knob`` is not an algorithm
        variable of a collective it models."""
        return ()

    # -- export -----------------------------------------------------------------------------
    def render(self, fmt: str, env: Mapping[str, str], header: str) -> str:
        """``env`` in the vendor's own format ``fmt`` (one of ``export_formats``)."""
        raise ValueError(f"{self.title} has no format {fmt!r}")
