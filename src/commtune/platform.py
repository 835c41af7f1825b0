"""The platform fingerprint: what a measurement, a sample or a model is valid for.

CPU model, core count, MPI vendor, version and device (and, for sampling, ranks per node;
under Slurm, the type of the nodes the runs get: ``slurm_node_type``).
Two machines with the same fingerprint are expected to behave alike; a changed fingerprint
invalidates platform samples and prediction models.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass
from typing import Any

from commtune.mpi import Installation
from commtune.util import TESTBED_ENV


def on_testbed() -> bool:
    """Whether this process runs inside a test bed's node (``testbed.Cluster.site_env``):
    its ranks are on several nodes."""
    return bool(os.environ.get(TESTBED_ENV))


@dataclass(frozen=True)
class Fingerprint:
    cpu_model: str
    cores: int
    mpi_vendor: str
    mpi_version: str
    mpi_device: str
    ranks_per_node: int | None = None
    nodes: str | None = None  # the Slurm nodes' type where the runs are Slurm's, or a test bed

    @classmethod
    def of(
        cls,
        installation: Installation,
        ranks_per_node: int | None = None,
        nodes: str | None = None,
    ) -> Fingerprint:
        return cls(
            cpu_model=cpu_model(),
            cores=os.cpu_count() or 1,
            mpi_vendor=installation.vendor.value,
            mpi_version=installation.version,
            mpi_device=installation.device,
            ranks_per_node=ranks_per_node,
            # a test bed's nodes (testbed.Cluster.site_env) are another platform
            nodes=nodes or os.environ.get(TESTBED_ENV) or None,
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if data["nodes"] is None:  # not under Slurm: the key of before stays
            del data["nodes"]
        return data

    @property
    def key(self) -> str:
        """Stable short hash of every field."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_NODE_FIELDS = ("Arch", "CPUTot", "Sockets", "CoresPerSocket", "ThreadsPerCore", "RealMemory",
                "AvailableFeatures", "Gres")  # fmt: skip


def slurm_node_type(partition: str | None = None) -> str | None:
    """The type of the Slurm nodes the runs get: the first node of this job's allocation
    (``SLURM_JOB_NODELIST``), or of ``partition`` (each run its own job; None: the default
    partition), as Slurm describes it (architecture, CPUs, memory, features, GRES). None
    where Slurm's tools are missing or say nothing."""
    if shutil.which("scontrol") is None:
        return None
    node = None
    nodelist = os.environ.get("SLURM_JOB_NODELIST") if partition is None else None
    if nodelist:
        node = _first_line(["scontrol", "show", "hostnames", nodelist])
    elif shutil.which("sinfo"):
        where = ["-p", partition] if partition else []
        node = _first_line(["sinfo", "-h", "-N", "-o", "%N", *where])
    if not node:
        return None
    line = _first_line(["scontrol", "show", "node", "-o", node]) or ""
    fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
    described = [f"{k}={fields[k]}" for k in _NODE_FIELDS if fields.get(k) not in (None, "(null)")]
    return " ".join(described) or None


def _first_line(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines() if done.returncode == 0 else []
    return lines[0].strip() if lines else None
