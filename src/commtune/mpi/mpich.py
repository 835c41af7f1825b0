"""MPICH (4.x, hydra): ``MPIR_CVAR_*`` variables (MPI_T names them the same), MPI_T
discovery through ``ct_probe``, ``-genv NAME VALUE``, the CSEL collective-selection JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from commtune.mpi import _mpich_csel
from commtune.mpi._layer import UCX_SAYS, Layer, ucx_loaded, ucx_transports, ucx_unread
from commtune.mpi._selection import Builtin, RulesError, Segment, Selection, in_library_terms
from commtune.mpi._vendor import MPIVendor, Variable, Vendor

if TYPE_CHECKING:
    from pathlib import Path

SELECTION_ENV = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"


class MPICH(MPIVendor):
    vendor = Vendor.MPICH
    title = "MPICH"
    env_prefix = "MPIR_CVAR_"
    env_prefixes = ("MPIR_CVAR_", "MPICH_", "HYDRA_")
    families = ("romio", "hdf5", "ucx")
    unsampled_algorithms = frozenset({"pairwise_sendrecv_replace"})  # in place only
    shm_patterns = ("mpich_shar_tmp*", "mpich_shm_*", "ucx_shm_posix_*")  # 4.0, 5.0, UCX
    hdf5_package = "hdf5-mpich"
    launcher_names = ("mpiexec.mpich", "mpirun.mpich", "mpiexec.hydra", "mpiexec", "mpirun")
    compiler_names = ("mpicc.mpich", "mpicc")
    launcher_word = "mpiexec"
    p2p_knobs = (("UCX_RNDV_SCHEME", "UCX_RNDV_THRESH"),)  # ch4:ucx: point-to-point in UCX
    network_p2p_knobs = p2p_knobs  # UCX's protocols over TCP alike
    # ch4 packs blocks shorter than this, hands longer ones over as an iovec (the UCX netmod
    # receives by iovec only from UCX 1.16: MPICH 5's own UCX, not Debian's 1.13)
    iov_knob = "MPIR_CVAR_CH4_IOV_DENSITY_MIN"
    selection_file_name = "coll-selection.json"
    # SMPI 3.32's mpich selector (src/smpi/colls/smpi_mpich_selector.cpp): the SMPI function
    # it calls for each of MPICH's choices, by the name MPICH gives that choice.
    smpi_selector = "mpich"
    race_mode = "call"  # MPIR_CVAR_<COLL>_INTRA_ALGORITHM is read at every call
    race_env: ClassVar[Mapping[str, str]] = {"MPIR_CVAR_DEVICE_COLLECTIVES": "none"}
    smpi_ports: ClassVar[Mapping[str, Mapping[str, str]]] = {
        "allreduce": {"rdb": "recursive_doubling", "rab_rdb": "reduce_scatter_allgather"},
        "bcast": {"binomial_tree": "binomial",
                  "scatter_rdb_allgather": "scatter_recursive_doubling_allgather",
                  "scatter_LR_allgather": "scatter_ring_allgather"},
        "reduce": {"binomial": "binomial", "scatter_gather": "reduce_scatter_gather"},
        "allgather": {"rdb": "recursive_doubling", "bruck": "brucks", "ring": "ring"},
        "alltoall": {"bruck": "brucks", "mvapich2_scatter_dest": "scattered", "pair": "pairwise"},
        "gather": {"ompi_binomial": "binomial"},
        "scatter": {"ompi_binomial": "binomial"},
    }  # fmt: skip
    forced_overrides_file = True
    default_algorithm_named = False  # "auto" has no name in a CSEL file
    # "smp" needs a node hierarchy, "ccl" (MPICH 5) an accelerator collective library:
    # forced by its variable MPICH falls back when there is none, named in a selection file
    # it aborts or crashes.
    unsafe_in_selection = ("smp", "ccl")
    selection_extends_builtin = True  # a file without a collective aborts MPICH
    keeps_unlisted_choices = True  # it documents values its version may reject: probe them
    training_ranks = (2,)  # MPICH busy-waits: more ranks than cores is milliseconds a call

    def _mpit_name(self, env_name: str) -> str:
        return env_name

    def mpit_value(self, text: str, enumerators: tuple[str, ...], categorical: bool) -> str:
        # MPICH 4.0 exposes its algorithm variables as plain integers: the value read back is
        # the position of the name in the variable's own list of algorithms.
        if categorical and text in enumerators:
            return str(enumerators.index(text))
        return text

    def algorithm_knob(self, op: str) -> str:
        return f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM"

    def selection_env(self, path: str) -> dict[str, str]:
        return {SELECTION_ENV: path}

    def write_selection(
        self,
        segs: Mapping[str, Sequence[Segment]],
        algorithms: Mapping[str, Mapping[str, int]],
        ranks: int,
        header: str,
        builtin: Builtin | None,
    ) -> Selection:
        if builtin is None:
            raise RulesError("MPICH's selection file needs the library's own tree to extend")
        subtrees: dict[str, dict[str, Any]] = {}
        why = "commtune does not sample the size MPICH's tree compares for it"
        fitted, warnings = in_library_terms(segs, _mpich_csel.SIZE_KEY, why)
        for op, ranges in fitted.items():
            try:
                subtrees[op] = _mpich_csel.intra_subtree(builtin, op, ranges, ranks)
            except RulesError as exc:
                warnings.append(f"{exc}; {op} keeps MPICH's own selection")
        text = json.dumps(_mpich_csel.with_subtrees(builtin, subtrees), indent=1) + "\n"
        _mpich_csel.validate(text, builtin)
        return Selection(text, tuple(warnings))

    def merge_selections(self, texts: Mapping[int, str], builtin: Builtin | None) -> str:
        if builtin is None:
            raise RulesError("MPICH's selection file needs the library's own tree to extend")
        trees = {n: json.loads(t) for n, t in texts.items()}
        text = json.dumps(_mpich_csel.by_comm_size(trees), indent=1) + "\n"
        _mpich_csel.validate(text, builtin)
        return text

    def overlay_selection(self, base: str, mine: str, ops: Sequence[str]) -> str:
        try:
            tree, ours = json.loads(base), json.loads(mine)
        except json.JSONDecodeError as exc:
            raise RulesError(f"not JSON: {exc}") from None
        for op in ops:  # the study's file replaced the intra-communicator subtree only
            key = f"collective={op}"
            sub = ours.get(key, {}).get("comm_type=intra")
            if not isinstance(tree.get(key), dict) or sub is None:
                raise RulesError(f"{op}: a file without the collective (MPICH would abort)")
            tree[key]["comm_type=intra"] = sub
        return json.dumps(tree, indent=1) + "\n"

    def builtin_selection(self, library: Path, variables: Mapping[str, Variable]) -> Builtin | None:
        values = {name: v.value for name, v in variables.items() if v.value is not None}
        return _mpich_csel.builtin(library, values)

    def algorithm_names(
        self, name: str, description: str, known: tuple[str, ...]
    ) -> tuple[str, ...]:
        # MPI_T gives its algorithm variables as plain integers; the names are in the text
        if name in _ENUMERATED:
            return _listed_in_order(description, _ENUMERATED[name])
        if not name.endswith("_ALGORITHM"):
            return ()
        return parse_algorithm_names(description, known)

    def recognise(self, launcher: str, version_text: str) -> tuple[str, str] | None:
        if "HYDRA" not in version_text and "MPICH" not in version_text:
            return None
        version = re.search(r"Version:\s+(\S+)", version_text)
        device = re.search(r"--with-device=([\w:]+)", version_text)
        return (
            version.group(1) if version else "unknown",
            device.group(1) if device else "ch4",
        )

    def is_compiler(self, show_text: str) -> bool:
        return "mpich" in show_text.lower()

    def ucx_args(self, device: str) -> list[str] | None:
        return [] if "ucx" in device else None  # its device is chosen at build time

    def knob_layer(self, knob: str) -> str | None:
        return "ch4:ucx" if knob.startswith("UCX_") else None

    def layer_env(self, device: str) -> dict[str, str]:
        # its device is fixed at build time (ch4:ucx, ch4:ofi); over UCX, UCX says what it chose
        return dict(UCX_SAYS) if "ucx" in device else {}

    def unread(self, layer: Layer, knob: str) -> str | None:
        return ucx_unread(layer, knob)

    def parse_layer(self, stderr: str) -> Layer | None:
        transports = ucx_transports(stderr)
        return Layer("ch4:ucx", transports, notes=ucx_loaded(stderr)) if transports else None

    def network_env(self, devices: Sequence[str]) -> dict[str, str]:
        # UCX would reach the machine's shared memory from every namespace, and its TCP
        # transport hung over another node's loopback (3 ranks on 3 nodes). Debian's MPICH
        # 4.0 (UCX 1.13) hangs now and then in MPI_Finalize across nodes, one rank closing
        # its endpoints while its peer waits in PMI's barrier: 5 of 322 two-node runs with
        # UCX's TCP put lane, 1 of 510 without (benchmarks/bed_finalize.py)
        return {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": ",".join(devices),
                "UCX_TCP_PUT_ENABLE": "n"}  # fmt: skip


_ALGORITHM_ITEM = re.compile(r"([A-Za-z0-9_]+)\s+-\s+(?:Force|Internal|Use)")


# Variables other than the algorithms' that MPI_T gives as plain integers, with the names their
# descriptions list: the race needs the device's collectives off, and the read-back of that
# requirement is the name's position.
_ENUMERATED = {"MPIR_CVAR_DEVICE_COLLECTIVES": ("all", "none", "percoll")}


def _listed_in_order(description: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` where the description lists each one ("none    - Never ...") in that order
    (their positions are what MPI_T reads back), else ()."""
    found = [re.search(rf"{name}\s+-\s", description) for name in names]
    starts = [m.start() for m in found if m is not None]
    return names if len(starts) == len(names) and starts == sorted(starts) else ()


def parse_algorithm_names(description: str, known: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Algorithm names listed in an MPICH ``*_ALGORITHM`` CVAR description.

    MPICH joins the lines of its description without a separator, so each name sticks to the
    last word before it ("...Force Binomial Treenb - Force nonblocking"). A name that is all
    lower case stands alone; in a glued word only a known name at its end is recognised (the
    split is ambiguous otherwise, and a wrong name would abort ``MPI_Init``).
    """
    names = []
    for match in _ALGORITHM_ITEM.finditer(description):
        word = match.group(1)
        start = match.start(1)
        glued = start > 0 and description[start - 1].isalnum()
        if not glued and word.islower() and not word.startswith("algorithm"):
            names.append(word)
            continue
        suffixes = [k for k in known if word.endswith(k)]
        if suffixes:
            names.append(max(suffixes, key=len))
    return tuple(dict.fromkeys(names))
