"""Open MPI: MCA variables (``OMPI_MCA_x`` is MPI_T's ``x``), ``ompi_info``, ``-x NAME``,
``coll_tuned`` dynamic rules, ``mca-params.conf``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from commtune.errors import UsageError
from commtune.mpi._layer import (
    UCX_SAYS,
    Layer,
    parse_ompi_selection,
    ucx_loaded,
    ucx_transports,
    ucx_unread,
)
from commtune.mpi._ompi_rules import (
    COLL_IDS,
    FILE_ENV,
    RULES_SIZE_TOTAL,
    RULES_SIZE_ZERO,
    USE_ENV,
    choices_of,
    forced_collectives,
    format_rules,
    parse_rules,
    sampled_rules,
    validate_sampled,
    without_forced,
)
from commtune.mpi._selection import Builtin, Segment, Selection, in_library_terms
from commtune.mpi._tools import output
from commtune.mpi._vendor import MPIVendor, Variable, Vendor

if TYPE_CHECKING:
    from pathlib import Path

    from commtune.mpi._install import Installation

RULES_ENV = FILE_ENV
DYNAMIC_RULES = {USE_ENV: "1"}


class OpenMPI(MPIVendor):
    vendor = Vendor.OPENMPI
    title = "Open MPI"
    env_prefix = "OMPI_MCA_"
    env_prefixes = ("OMPI_MCA_", "OMPI_", "PMIX_MCA_")
    families = ("ompio", "romio", "hdf5", "ucx", "libfabric")
    named_only = ("ucx", "libfabric")  # its point-to-point layer (ob1, ucx, cm): chosen at run time
    shm_patterns = ("vader_segment.*", "sm_segment.*", "ucx_shm_posix_*")
    hdf5_package = "hdf5-openmpi"
    launcher_names = ("mpirun.openmpi", "mpirun", "mpiexec.openmpi", "mpiexec")
    launcher_aliases = ("orterun",)
    compiler_names = ("mpicc.openmpi", "mpicc")
    export_formats = ("mca",)
    settings_file = ("mca", "mca-params.conf")
    launcher_word = "mpirun"
    p2p_knobs = (
        ("btl_vader_single_copy_mechanism", "btl_vader_eager_limit"),  # 4.1
        ("smsc", "btl_sm_eager_limit"),  # 5.0: the sm BTL and the smsc framework
    )
    network_p2p_knobs = ((None, "btl_tcp_eager_limit"),)  # ob1 over TCP: no single copy
    # Forced algorithms are bound at communicator creation and only with dynamic rules on.
    algorithm_env = DYNAMIC_RULES
    selection_file_name = "coll-rules.conf"
    # SMPI 3.32's ompi selector (src/smpi/colls/smpi_openmpi_selector.cpp) indexes an array of
    # SMPI functions with Open MPI's algorithm number: each function below is what SMPI runs
    # for that algorithm. Where two numbers share one function, the one it ports is kept; the
    # two-process algorithms (2 ranks only) are left out.
    smpi_selector = "ompi"
    # coll/tuned copies its algorithm variable when a communicator is made (only with dynamic
    # rules on at launch); MPICH reads it at every call (with no device collectives over it)
    race_mode = "dup"
    race_env: ClassVar[Mapping[str, str]] = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}
    # coll/base's two-process algorithms refuse any other communicator size (an error the
    # default handler makes fatal: a 4-rank allgather raced two_proc killed its run)
    race_rules: ClassVar[Mapping[tuple[str, str], str]] = {
        ("allgather", "two_proc"): "size2",
        ("alltoall", "two_proc"): "size2",
    }
    # SMPI's ports that are Open MPI 4.1's forced algorithm (coll_tuned_<op>_algorithm with
    # its segment size left at 0, trees at their default fan-out), read in both sources
    # (SimGrid 3.32 src/smpi/colls, Open MPI's coll/tuned); the ones SMPI carries under an
    # Open MPI name that are not, with why, are in smpi_unfaithful and never proposed.
    smpi_ports: ClassVar[Mapping[str, Mapping[str, str]]] = {
        "allreduce": {"rdb": "recursive_doubling", "lr": "ring", "rab_rdb": "rabenseifner"},
        "bcast": {"binomial_tree": "binomial", "scatter_rdb_allgather": "scatter_allgather",
                  "scatter_LR_allgather": "scatter_allgather_ring"},
        "reduce": {"ompi_basic_linear": "linear", "ompi_in_order_binary": "in-order_binary"},
        "allgather": {"bruck": "bruck", "rdb": "recursive_doubling", "ring": "ring",
                      "ompi_neighborexchange": "neighbor"},
        "alltoall": {"basic_linear": "linear", "pair": "pairwise", "bruck": "modified_bruck"},
        "gather": {"ompi_basic_linear": "basic_linear", "ompi_binomial": "binomial"},
        "scatter": {"ompi_basic_linear": "basic_linear", "ompi_binomial": "binomial",
                    "ompi_linear_nb": "linear_nb"},
        "barrier": {"ompi_basic_linear": "linear", "ompi_recursivedoubling": "recursive_doubling",
                    "ompi_bruck": "bruck", "ompi_tree": "tree"},
    }  # fmt: skip
    smpi_unfaithful: ClassVar[Mapping[str, Mapping[str, str]]] = {
        "allreduce": {
            "redbcast": "basic_linear: SMPI reduces and broadcasts with whatever its selector "
            "picks, Open MPI with its linear reduce and linear bcast",
            "ompi_ring_segmented": "segmented_ring: SMPI fixes 1 MiB segments, the forced "
            "algorithm's segment size is 0 (one segment)",
        },
        "bcast": {
            "NTSL": "basic_linear: SMPI's is a pipelined chain in 8 KiB pieces, Open MPI's "
            "root sends the whole message to every rank (the 32 KiB broadcast 24x slower "
            "on the bed)",
            "ompi_pipeline": "pipeline: SMPI segments by size (128/64/16 KiB), the forced "
            "algorithm does not",
            "ompi_split_bintree": "split_binary_tree: SMPI segments in 1 or 8 KiB, the forced "
            "algorithm does not",
            "NTSB": "binary_tree: SMPI's pipelines 8 KiB pieces, the forced algorithm sends "
            "the whole message",
            "mvapich2_knomial_intra_node": "knomial: MVAPICH2's intra-node k-nomial, not "
            "Open MPI's radix-4 tree",
        },
        "reduce": {
            "ompi_chain": "chain: SMPI a chain of fan-out size/2 in 64 KiB segments, the "
            "forced one fan-out 4, unsegmented",
            "ompi_pipeline": "pipeline: SMPI segments by size (1-64 KiB), the forced "
            "algorithm does not",
            "ompi_binary": "binary: SMPI segments in 32 KiB, the forced algorithm does not",
            "ompi_binomial": "binomial: SMPI segments in 1 KiB above a size, the forced "
            "algorithm does not",
        },
        "allgather": {
            "NTSLR_NB": "linear: SMPI's is a non-blocking logical ring, Open MPI's a gather "
            "to rank 0 and a broadcast",
        },
        "gather": {
            "ompi_linear_sync": "linear_sync: SMPI fixes a first segment of 1 or 32 KiB, the "
            "forced algorithm's is its segment size (0)",
        },
    }
    forced_overrides_file = False  # 4.1 consults the rules file first
    default_algorithm_named = True  # 0: "the fixed decision"
    keeps_unlisted_choices = False  # ompi_info lists exactly what this build has
    training_ranks = (2, 4)

    def _mpit_name(self, env_name: str) -> str:
        return env_name.removeprefix(self.env_prefix)

    def algorithm_knob(self, op: str) -> str:
        return f"coll_tuned_{op}_algorithm"

    # coll/tuned's forced algorithms that take coll_tuned_<op>_algorithm_segmentsize (read in
    # coll_tuned_decision_dynamic.c / coll_base_*.c, 4.1 and 5.0); 0, the default, is one
    # segment, so a pipeline forced alone does not pipeline
    segmented: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "bcast": ("chain", "pipeline", "split_binary_tree", "binary_tree", "binomial"),
        "reduce": ("chain", "pipeline", "binary", "binomial", "in-order_binary"),
        "allreduce": ("segmented_ring",),
    }

    def segment_knob(self, op: str) -> str | None:
        return f"coll_tuned_{op}_algorithm_segmentsize" if op in self.segmented else None

    def selection_env(self, path: str) -> dict[str, str]:
        return {**DYNAMIC_RULES, RULES_ENV: path}

    def write_selection(
        self,
        segs: Mapping[str, Sequence[Segment]],
        algorithms: Mapping[str, Mapping[str, int]],
        ranks: int,
        header: str,
        builtin: Builtin | None,
    ) -> Selection:
        # coll_tuned looks the rules of RULES_SIZE_ZERO up at size 0: one rule each
        written, warnings = in_library_terms(segs, RULES_SIZE_TOTAL,
                                             "Open MPI's rules give it no size",
                                             RULES_SIZE_ZERO, "Open MPI's rules compare a "
                                             "size commtune does not sample")  # fmt: skip
        text = sampled_rules(choices_of(written, algorithms), ranks, header)
        validate_sampled(text, {op: len(algorithms[op]) for op in written})
        return Selection(text, tuple(warnings))

    def merge_selections(self, texts: Mapping[int, str], builtin: Builtin | None) -> str:
        # one rule list per communicator size: coll_tuned takes the largest not above its own
        rules: dict[int, dict[int, list[tuple[int, int, int, int]]]] = {}
        for text in texts.values():
            for coll, comms in parse_rules(text).items():
                rules.setdefault(coll, {}).update(comms)
        first = next(iter(texts.values()), "").splitlines()
        header = [line[2:] for line in first if line.startswith("# ")][:1]
        header.append(f"communicator sizes: {', '.join(map(str, sorted(texts)))}")
        merged = {c: dict(sorted(v.items())) for c, v in rules.items()}
        return format_rules(merged, "\n".join(header))

    def overlay_selection(self, base: str, mine: str, ops: Sequence[str]) -> str:
        ours = {c: r for c, r in parse_rules(mine).items() if c in {COLL_IDS[op] for op in ops}}
        rules = {**parse_rules(base), **ours}  # a collective's rules whole, from one file
        header = [line[2:] for line in base.splitlines() if line.startswith("# ")][:1]
        header.append(f"with {', '.join(ops)} as a commtune study answered by size")
        text = format_rules(rules, "\n".join(header))
        parse_rules(text)
        return text

    def reconcile(self, env: Mapping[str, str], directory: Path) -> dict[str, str]:
        return without_forced(env, directory)

    def recognise(self, launcher: str, version_text: str) -> tuple[str, str] | None:
        match = re.search(r"\((?:Open MPI|OpenRTE)\) (\S+)", version_text)
        return (match.group(1), _device(launcher)) if match else None

    def is_compiler(self, show_text: str) -> bool:
        return "Open MPI" in show_text or "openmpi" in show_text

    def local_options(self) -> list[str]:
        # Open MPI refuses root without this, and fewer cores than ranks without oversubscribe.
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        return [*root, "--oversubscribe"]

    def forwarded(self, name: str) -> bool:
        return name.startswith(self.env_prefix)

    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        args: list[str] = []
        for name, value in variables.items():
            # "-x NAME" forwards the launcher's value; "-x NAME=VALUE" sets one the launcher
            # itself must not see (LD_PRELOAD).
            args += ["-x", f"{name}={value}" if name == "LD_PRELOAD" else name]
        return args

    def remote_args(self, hosts: Sequence[str], agent: str) -> list[str]:
        # 4.1's orte and 5.0's PRRTE both take the agent under this name; ranks round robin
        # over the nodes (5.0 with --oversubscribe filled the first node otherwise)
        return ["--host", ",".join(hosts), "--map-by", "node", "--mca", "plm_rsh_agent", agent]

    def hosts_env(self, hostfile: str, agent: str) -> dict[str, str]:
        # 4.1's orte reads OMPI_MCA_*, 5.0's PRRTE its own PRTE_MCA_* names
        return {"OMPI_MCA_orte_default_hostfile": hostfile, "OMPI_MCA_plm_rsh_agent": agent,
                "OMPI_MCA_rmaps_base_mapping_policy": "node",
                "PRTE_MCA_prte_default_hostfile": hostfile, "PRTE_MCA_plm_ssh_agent": agent,
                "PRTE_MCA_rmaps_default_mapping_policy": "node"}  # fmt: skip

    def network_env(self, devices: Sequence[str]) -> dict[str, str]:
        # ob1's TCP between nodes (shared memory only between ranks of one hostname), not
        # the UCX layer, which would take the machine's shared memory across namespaces.
        # Ranks yield when idle: the bed's network is the kernel's, whose packet processing
        # (softirq, ksoftirqd) ran only at the scheduler's tick while ob1 spun in user space
        # without a system call: a ping-pong's half round trip took 4 ms instead of 20 us
        return {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,vader,self",
                "OMPI_MCA_btl_tcp_if_include": ",".join(devices),
                "OMPI_MCA_mpi_yield_when_idle": "1"}  # fmt: skip

    def rail_weights(self, shares: Mapping[str, float]) -> dict[str, str] | None:
        # the TCP BTL registers btl_tcp_bandwidth_<interface> for each interface it opens;
        # ob1 stripes a message's bytes over the BTLs in proportion to their bandwidths
        return {f"OMPI_MCA_btl_tcp_bandwidth_{dev}": str(max(1, round(share * 1000)))
                for dev, share in shares.items()}  # fmt: skip

    def launch_args(self, options: Mapping[str, str]) -> list[str]:
        return [a for name, value in options.items() for a in (f"--{name}", value)]

    def tool_variables(self, installation: Installation) -> dict[str, Variable] | None:
        info = _ompi_info(installation.launcher)
        done = subprocess.run(
            [info, "--parsable", "--all"], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise UsageError(f"cannot list Open MPI's variables: {info} failed")
        return parse_ompi_info(done.stdout)

    def layer_env(self, device: str) -> dict[str, str]:
        # each framework's selection said on stderr (coll: every communicator's stack), and
        # under pml ucx the transports UCX chose
        said = {f"{self.env_prefix}{name}_base_verbose": level
                for name, level in (("pml", "10"), ("btl", "10"), ("mtl", "10"),
                                    ("coll", "100"))}  # fmt: skip
        return {**said, **UCX_SAYS}

    def parse_layer(self, stderr: str) -> Layer | None:
        layer = parse_ompi_selection(stderr)
        if layer is not None and layer.p2p == "pml ucx":
            return replace(layer, transports=ucx_transports(stderr), notes=ucx_loaded(stderr))
        return layer

    def ucx_args(self, device: str) -> list[str] | None:
        if "ucx" not in device:
            return None
        # pml ucx, with every transport and device UCX finds (TCP and shared memory where no
        # InfiniBand is: pml ucx declines those by default)
        return ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca",
                "pml_ucx_devices", "any"]  # fmt: skip

    def knob_layer(self, knob: str) -> str | None:
        for prefixes, needs, _ in _P2P_LAYERS:
            if knob.startswith(prefixes):
                return f"pml {needs}"
        match = re.match(r"coll_(tuned|han|adapt|sm|basic|xhc|acoll|hcoll|ucc)_", knob)
        return f"coll {match.group(1)}" if match else None

    def layer_families(self, layer: Layer) -> tuple[str, ...]:
        return {"pml ucx": ("ucx",), "pml cm": ("libfabric",)}.get(layer.p2p, ())

    def unread(self, layer: Layer, knob: str) -> str | None:
        pml = layer.p2p
        for prefixes, needs, what in _P2P_LAYERS:
            if knob.startswith(prefixes) and pml != f"pml {needs}":
                return f"{what}; the run selects {pml}, which does not read it"
        if (why := ucx_unread(layer, knob)) is not None:
            return why
        op, served = _tuned_served(layer, knob)
        # han runs its steps on node and network sub-communicators, whose tuned reads the
        # variable: read, for those steps (coll_han_priority races han itself)
        if served is not None and served[0] not in ("tuned", *_OVER_TUNED):
            name, priority = served
            return (f"{op} on MPI_COMM_WORLD is served by coll {name} (priority {priority}, "
                    "as the run selects), not by tuned")  # fmt: skip
        return None

    def layer_note(self, layer: Layer, knob: str) -> str | None:
        op, served = _tuned_served(layer, knob)
        if served is None or served[0] not in _OVER_TUNED:
            return None
        name, priority = served
        return (f"{op} on MPI_COMM_WORLD is served by coll {name} (priority "
                f"{priority}, as the run selects): {knob} sets the algorithm of {name}'s "
                f"steps on its node and network sub-communicators, not the call's; "
                f"coll_{name}_priority races {name} itself")  # fmt: skip

    def layer_knobs(self, layer: Layer) -> tuple[str, ...]:
        # a component over tuned that serves a call: the component itself is a knob
        served = {s[0] for op in ("allreduce", "bcast", "reduce", "allgather", "barrier")
                  if (s := layer.serves(op)) is not None}  # fmt: skip
        return tuple(f"coll_{name}_priority" for name in _OVER_TUNED if name in served)

    def device_label(self, device: str) -> str:
        # pml "v" is the message-logging protocol layer, not a cut word
        return re.sub(r"(?<=[:,])v(?=[ ,]|$)", "v(protocol)", device)

    def render(self, fmt: str, env: Mapping[str, str], header: str) -> str:
        if fmt != "mca":
            return super().render(fmt, env, header)
        lines = [f"# {header}: Open MPI MCA parameters (mca-params.conf)"]
        forced = forced_collectives(env)
        if forced and not env.get(RULES_ENV):
            lines.append(
                f"# forced: {', '.join(forced)}; a coll_tuned rules file set elsewhere would "
                "win over these (Open MPI 4.1 reads it first): `commtune run` leaves them out "
                "of it"
            )
        lines += [f"{name.removeprefix(self.env_prefix)} = {value}" for name, value in env.items()]
        return "\n".join(lines) + "\n"


# Collective components that run their steps through tuned on sub-communicators.
_OVER_TUNED = ("han",)
# Point-to-point knobs by the PML that reads them: (name prefixes, PML, what they are).
_P2P_LAYERS = (
    (("btl_", "pml_ob1_", "smsc_", "smsc"), "ob1", "a BTL variable (pml ob1's transports)"),
    (("mtl_",), "cm", "an MTL variable (pml cm's transports)"),
    (("UCX_", "pml_ucx_"), "ucx", "a UCX variable"),
)


def _tuned_served(layer: Layer, knob: str) -> tuple[str, tuple[str, int] | None]:
    """The call a ``coll_tuned_<op>_algorithm*`` knob is of, and the component (with its
    priority) serving that call in ``layer``; ("", None) for any other knob."""
    match = re.fullmatch(r"coll_tuned_(\w+?)_algorithm(_\w+)?", knob)
    return (match.group(1), layer.serves(match.group(1))) if match else ("", None)


def _ompi_info(launcher: str) -> str:
    info = os.path.join(os.path.dirname(launcher), "ompi_info")
    if not os.path.exists(info):
        info = shutil.which("ompi_info") or "ompi_info"
    return info


def _device(launcher: str) -> str:
    """Point-to-point layers of an Open MPI installation, e.g. ``pml:cm,ob1,ucx btl:self,...``."""
    text = output([_ompi_info(launcher), "--parsable"])
    parts = []
    for framework in ("pml", "btl"):
        names = sorted(set(re.findall(rf"^mca:{framework}:(\w+):version:", text, re.M)))
        names = [n for n in names if n != "base"]
        if names:
            parts.append(f"{framework}:{','.join(names)}")
    return " ".join(parts) or "unknown"


def parse_ompi_info(text: str) -> dict[str, Variable]:
    """Variables of ``ompi_info --parsable --all`` output, by name."""
    values: dict[str, str] = {}
    enums: dict[str, list[str]] = {}
    helps: dict[str, str] = {}
    kinds: dict[str, str] = {}
    constant: set[str] = set()
    for line in text.splitlines():
        parts = line.split(":", 6)
        if len(parts) < 6 or parts[0] != "mca" or parts[3] != "param":
            continue
        name, field = parts[4], parts[5]
        rest = parts[6] if len(parts) > 6 else ""
        if field == "value":
            values[name] = rest
        elif field == "enumerator" and rest.startswith("value:"):
            enums.setdefault(name, []).append(rest.split(":", 2)[2])
        elif field == "help":
            helps[name] = rest
        elif field == "type":
            kinds[name] = _KINDS.get(rest, "string")
        elif field == "status" and rest == "constant":
            constant.add(name)
    return {
        name: Variable(
            name,
            value,
            tuple(enums.get(name, ())),
            helps.get(name, ""),
            kinds.get(name, ""),
            name not in constant,
        )
        for name, value in values.items()
    }


# ompi_info's types -> the kinds of a Variable
_INTEGERS = ("int", "unsigned_int", "size_t", "long", "unsigned_long", "unsigned_long_long",
             "int32_t", "uint32_t", "int64_t", "uint64_t")  # fmt: skip
_KINDS = {"bool": "bool", "double": "float", **dict.fromkeys(_INTEGERS, "int")}
