"""MPICH (4.x, hydra): ``MPIR_CVAR_*`` variables (MPI_T names them the same), MPI_T
discovery through ``ct_probe``, ``-genv NAME VALUE``, the CSEL collective-selection JSON."""

from __future__ import annotations

import re
from collections.abc import Mapping

from commtune.mpi._vendor import MPIVendor, Vendor

SELECTION_ENV = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"


class MPICH(MPIVendor):
    vendor = Vendor.MPICH
    title = "MPICH"
    env_prefix = "MPIR_CVAR_"
    hdf5_package = "hdf5-mpich"
    launcher_names = ("mpiexec.mpich", "mpirun.mpich", "mpiexec.hydra", "mpiexec", "mpirun")
    compiler_names = ("mpicc.mpich", "mpicc")
    launcher_word = "mpiexec"
    p2p_knobs = ("UCX_RNDV_SCHEME", "UCX_RNDV_THRESH")  # ch4:ucx moves point-to-point in UCX
    selection_file_name = "coll-selection.json"
    forced_overrides_file = True
    default_algorithm_named = False  # "auto" has no name in a CSEL file
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

    def forwarded(self, name: str) -> bool:
        return False

    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        args: list[str] = []
        for name, value in variables.items():
            args += ["-genv", name, value]
        return args
