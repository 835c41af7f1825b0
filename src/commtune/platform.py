"""The platform fingerprint: what a measurement, a sample or a model is valid for.

CPU model, core count, MPI vendor, version and device (and, for sampling, ranks per node).
Two machines with the same fingerprint are expected to behave alike; a changed fingerprint
invalidates platform samples and prediction models.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict, dataclass
from typing import Any

from commtune.mpi import Installation


@dataclass(frozen=True)
class Fingerprint:
    cpu_model: str
    cores: int
    mpi_vendor: str
    mpi_version: str
    mpi_device: str
    ranks_per_node: int | None = None

    @classmethod
    def of(cls, installation: Installation, ranks_per_node: int | None = None) -> Fingerprint:
        return cls(
            cpu_model=cpu_model(),
            cores=os.cpu_count() or 1,
            mpi_vendor=installation.vendor.value,
            mpi_version=installation.version,
            mpi_device=installation.device,
            ranks_per_node=ranks_per_node,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

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
