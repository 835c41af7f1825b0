"""Intel MPI (2021.x, its own hydra over libfabric): ``I_MPI_*`` variables, MPI_T through
``ct_probe`` (most are ``MPIR_CVAR_*`` with the ``I_MPI_*`` name as an alias in their
description), ``-genv NAME VALUE``, the ``I_MPI_ADJUST_<COLL>`` algorithm presets and the JSON
tuning file (``I_MPI_TUNING``) for per-size selections.

What this library does its own way, as found on Intel MPI 2021.18 from the package index:

- the installation needs its own environment for every tool and run: ``I_MPI_ROOT`` (its
  ``mpicc -show`` names ``I_MPI_SUBSTITUTE_INSTALLDIR`` without it), its ``bin/`` on ``PATH``
  (``MPI_Init`` fails in ``MPIDU_bc_table_create`` without it), its ``lib/`` on the library
  path (``impi_info`` exits 127 without it) and libfabric's providers (``FI_PROVIDER_PATH``);
- MPI_T reads back the integers set from the environment and "" for every text variable
  (``I_MPI_ADJUST_*``, ``I_MPI_FABRICS``, ``I_MPI_PIN_DOMAIN``): those are not checked;
- an algorithm is a preset number (``I_MPI_ADJUST_ALLREDUCE=8``); ``-1`` is the library's
  own selection (its tuning file for the platform); MPI_T gives a range, not names.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from commtune.mpi._selection import Builtin, RulesError, Segment, Selection, in_library_terms
from commtune.mpi._vendor import MPIVendor, Variable, Vendor

TUNING_ENV = "I_MPI_TUNING"  # a JSON tuning file, read beside the library's own
DEFAULT_PRESET = "-1"  # the library decides

# The collective's name in a tuning file, and the key of its preset there.
_COLL = {
    "allreduce": "Allreduce",
    "bcast": "Bcast",
    "reduce": "Reduce",
    "allgather": "Allgather",
    "alltoall": "Alltoall",
    "barrier": "Barrier",
    "gather": "Gather",
    "scatter": "Scatter",
    "reduce_scatter": "Reduce_scatter",
    "reduce_scatter_block": "Reduce_scatter_block",
    "alltoallv": "Alltoallv",
    "allgatherv": "Allgatherv",
    "gatherv": "Gatherv",
    "scatterv": "Scatterv",
    "scan": "Scan",
    "exscan": "Exscan",
}
# Collectives whose msg_size in a tuning file is the size commtune samples (ct_sample's SIZE,
# checked against the library's own choices by ``sample --verify``); any other is written as
# one preset for every size.
_SIZED = frozenset({"allreduce", "bcast", "reduce", "allgather", "alltoall"})
_ALIAS = re.compile(r"@Alias:#\s+([A-Z][A-Z0-9_]*)")


class IntelMPI(MPIVendor):
    vendor = Vendor.INTEL
    title = "Intel MPI"
    env_prefix = "I_MPI_"
    env_prefixes = ("I_MPI_", "MPIR_CVAR_", "HYDRA_")
    families = ("romio", "libfabric")
    # Debian builds parallel HDF5 for its own two MPIs only: with Intel MPI the HDF5 kernel
    # is not built (it says so) unless a site installs this package.
    hdf5_package = "hdf5-impi"
    launcher_names = ("mpirun", "mpiexec.hydra", "mpiexec")
    compiler_names = ("mpicc", "mpigcc")
    launcher_word = "mpirun"
    export_formats = ("impi-tuning",)  # the presets as a JSON tuning file (I_MPI_TUNING)
    p2p_knobs = (("I_MPI_SHM_CMA", "I_MPI_SHM_EAGER_THRESHOLD"),)
    # between nodes (libfabric's tcp provider) no variable of its sets the eager limit; the
    # IOV density of the MPICH it derives from is not among its variables
    aggregation_knob = "FI_TCP_STAGING_SBUF_SIZE"  # libfabric tcp's send coalescing buffer
    selection_file_name = "tuning.json"
    forced_overrides_file = True  # I_MPI_ADJUST_* wins over any tuning file
    default_algorithm_named = False  # "-1" has no name in a tuning file
    keeps_unlisted_choices = True  # MPI_T gives a range of presets: probe the documented ones
    training_ranks = (2,)  # it spins while it waits, like MPICH
    reads_back_text = False
    algorithms_at_run_time = False  # its presets are text variables, read at MPI_Init
    # its libfabric's binary (bin/fi_info is a script that looks elsewhere)
    fabric_info = ("libfabric/fi_info", "fi_info")

    def _mpit_name(self, env_name: str) -> str:
        return env_name

    def environment(self, prefix: str) -> dict[str, str]:
        lib = os.path.join(prefix, "lib")
        libraries = os.pathsep.join(
            p for p in (lib, os.path.join(lib, "release"), os.environ.get("LD_LIBRARY_PATH")) if p
        )
        return {
            "I_MPI_ROOT": prefix,
            "PATH": os.pathsep.join(
                p for p in (os.path.join(prefix, "bin"), os.environ.get("PATH")) if p
            ),
            "LD_LIBRARY_PATH": libraries,
            "FI_PROVIDER_PATH": lib,
        }

    def algorithm_knob(self, op: str) -> str:
        return f"I_MPI_ADJUST_{op.upper()}"

    def selection_env(self, path: str) -> dict[str, str]:
        return {TUNING_ENV: path}

    def write_selection(
        self,
        segs: Mapping[str, Sequence[Segment]],
        algorithms: Mapping[str, Mapping[str, int]],
        ranks: int,
        header: str,
        builtin: Builtin | None,
    ) -> Selection:
        tree: dict[str, Any] = {}
        fitted, warnings = in_library_terms(segs, _SIZED, "commtune does not sample the size "
                                            "Intel MPI compares for it")  # fmt: skip
        for op, ranges in fitted.items():
            sizes: dict[str, Any] = {}
            for seg in ranges:
                preset = algorithms[op][seg.method]
                bound = -1 if seg.high is None else max(0, int(seg.high) - 1)
                sizes[f"msg_size={bound}"] = {f"{op.upper()}={preset}": {}}
            if "msg_size=-1" not in sizes:  # sizes above the last range: the library's own
                raise RulesError(f"{op}: the last range must be open (no upper size)")
            # every rank on one node (a platform sample runs on one), one communicator id
            per_size = {f"comm_size={ranks}": {"comm_id=-1": sizes}}
            tree[f"coll={_COLL[op]}"] = {f"ppn={ranks}": per_size}
        text = json.dumps(tree, indent=1) + "\n"
        validate_tuning(text)
        return Selection(text, tuple(warnings))

    def render(self, fmt: str, env: Mapping[str, str], header: str) -> str:
        """``impi-tuning``: the ``I_MPI_ADJUST_<COLL>`` presets of ``env`` as the JSON tuning
        file ``I_MPI_TUNING`` loads, for every rank count and size (-1: any); JSON holds no
        comment, so the header and the other variables are left to ``--format env``."""
        if fmt != "impi-tuning":
            return super().render(fmt, env, header)
        tree: dict[str, Any] = {}
        for op, coll in _COLL.items():
            preset = env.get(self.algorithm_knob(op))
            if preset is None or preset == DEFAULT_PRESET:
                continue
            leaf: dict[str, Any] = {"msg_size=-1": {f"{op.upper()}={preset}": {}}}
            tree[f"coll={coll}"] = {"ppn=-1": {"comm_size=-1": {"comm_id=-1": leaf}}}
        text = json.dumps(tree, indent=1) + "\n"
        if tree:  # an empty file ({}) is valid JSON and changes nothing
            validate_tuning(text)
        return text

    def recognise(self, launcher: str, version_text: str) -> tuple[str, str] | None:
        match = re.search(r"Intel\(R\) MPI Library for \S+ OS, Version (\S+)", version_text)
        return (match.group(1), "ch4:ofi") if match else None

    def is_compiler(self, show_text: str) -> bool:
        return "Intel(R) MPI Library" in show_text

    def remote_args(self, hosts: Sequence[str], agent: str) -> list[str]:
        # its hydra calls the launcher a bootstrap; one rank per node unless told
        return ["-hosts", ",".join(hosts), "-bootstrap", "ssh", "-bootstrap-exec", agent,
                "-ppn", "1"]  # fmt: skip

    def hosts_env(self, hostfile: str, agent: str) -> dict[str, str]:
        return {"I_MPI_HYDRA_HOST_FILE": hostfile, "I_MPI_HYDRA_BOOTSTRAP": "ssh",
                "I_MPI_HYDRA_BOOTSTRAP_EXEC": agent, "I_MPI_PERHOST": "1"}  # fmt: skip

    def network_env(self, devices: Sequence[str]) -> dict[str, str]:
        # libfabric's TCP provider on the bed's first interface between nodes. Ranks spin
        # once and yield: four spinning ranks on this 2-core machine's four nodes took 10.6 s
        # for what took 0.24 s yielding (each node sees cores to itself; the machine has not)
        return {"FI_PROVIDER": "tcp", "FI_TCP_IFACE": devices[0], "I_MPI_SPIN_COUNT": "1",
                "I_MPI_THREAD_YIELD": "2"}  # fmt: skip

    def aliases(self, variable: Variable) -> tuple[str, ...]:
        return tuple(a for a in _ALIAS.findall(variable.description) if a != variable.name)

    def algorithm_names(
        self, name: str, description: str, known: tuple[str, ...]
    ) -> tuple[str, ...]:
        # "range: 0-32": the documented presets (the catalog's) within it, in number order,
        # so that a preset's position is its number; the rest are undocumented (GPU, offload)
        if not name.startswith("I_MPI_ADJUST_"):
            return ()
        match = re.search(r"range:\s*(\d+)-(\d+)", description)
        if match is None or not known:
            return ()
        top = int(match.group(2))
        presets = sorted(int(k) for k in known if k.lstrip("-").isdigit() and 0 < int(k) <= top)
        # contiguous from 1, so that the n-th name is preset n (the sampler numbers by position)
        contiguous = [p for i, p in enumerate(presets, 1) if p == i]
        return (DEFAULT_PRESET, *(str(p) for p in contiguous))


def validate_tuning(text: str) -> None:
    """The text is a tuning tree as Intel MPI reads it: ``coll=`` / ``ppn=`` / ``comm_size=``
    / ``comm_id=`` / ``msg_size=`` (ascending, ending with -1) / ``OP=preset``."""
    try:
        tree = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RulesError(f"not JSON: {exc}") from None
    levels = ("coll", "ppn", "comm_size", "comm_id", "msg_size")

    def walk(node: Any, depth: int, path: str) -> None:
        if not isinstance(node, dict) or not node:
            raise RulesError(f"{path}: expected an object with entries")
        if depth == len(levels):
            for key, leaf in node.items():
                if not re.fullmatch(r"[A-Z_]+=\d+", key) or leaf != {}:
                    raise RulesError(f"{path}: {key!r} is not a preset (OP=N)")
            return
        bounds = []
        for key, child in node.items():
            name, _, value = key.partition("=")
            if name != levels[depth] or not value:
                raise RulesError(f"{path}: {key!r} where {levels[depth]}=... was expected")
            if depth > 0 and not re.fullmatch(r"-?\d+", value):
                raise RulesError(f"{path}: {key!r} is not a number")
            if depth == 4:
                bounds.append(int(value))
            walk(child, depth + 1, f"{path}/{key}")
        if depth == 4:
            finite = bounds[:-1]
            if bounds[-1] != -1 or finite != sorted(finite) or -1 in finite:
                raise RulesError(f"{path}: message sizes must ascend and end with -1")

    walk(tree, 0, "")
