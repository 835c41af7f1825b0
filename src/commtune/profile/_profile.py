"""A profile written by libcommtune at MPI_Finalize (rank 0), as a typed view of its JSON.

Statistics over ranks are objects ``{"sum", "min", "max", "mean", "median", "std"}``; a field
path that ends at one (``mpi_time``, ``operations.MPI_Allreduce.time``) means its ``mean`` unless
the path names the statistic (``mpi_time.max``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commtune.errors import UsageError

FORMAT = "commtune-profile"
STATISTICS = ("sum", "min", "max", "mean", "median", "std")
FEATURES = ("p2p_time_share", "p2p_bytes", "coll_time_share", "coll_bytes", "comm_size")


class ProfileError(UsageError):
    """A profile that is missing, malformed, or lacks a requested field."""


@dataclass(frozen=True)
class CvarCheck:
    """One control variable read back after MPI_Init.

    ``status``: ``applied`` (reads back the intended value), ``differs``, ``unknown`` (the
    library has no such MPI_T variable) or ``unreadable``. ``write``: None when only checked,
    else when the MPI_T write happened or why the library refused it.
    """

    name: str
    intended: str
    actual: str | None
    status: str
    write: str | None

    @property
    def applied(self) -> bool:
        return self.status == "applied"

    @property
    def reason(self) -> str:
        if self.status == "differs":
            return f"reads back {self.actual!r}, not {self.intended!r}"
        if self.status == "unknown":
            return "the library has no such MPI_T variable"
        return self.status


@dataclass(frozen=True)
class HintCheck:
    """One MPI-IO hint read back with ``MPI_File_get_info`` after the first ``MPI_File_open``
    (``kind`` "mpi-io"), or one HDF5 property read back from the first file's access list or
    the first write's actual I/O mode (``kind`` "hdf5").

    ``status``: ``applied``, ``differs``, ``ignored`` (the library did not report it back),
    ``unverified`` (the library reports back every key it is given, a probe key included,
    so nothing is proven: Open MPI), ``unsupported`` (this HDF5 has no such call: a serial
    build) or ``unchecked`` (no file was opened, or nothing was written).
    """

    name: str
    intended: str
    actual: str | None
    status: str
    kind: str = "mpi-io"

    @property
    def applied(self) -> bool:
        return self.status == "applied"

    @property
    def reason(self) -> str:
        return {
            "differs": f"the library uses {self.actual!r}, not {self.intended!r}",
            "ignored": "the library ignores it (MPI_File_get_info does not report it)",
            "unverified": "cannot be verified: the library reports back every hint it is given",
            "unsupported": "this HDF5 has no such property (a serial build?)",
            "unchecked": "not checked: the program opened no file with MPI-IO"
            if self.kind == "mpi-io"
            else "not checked: the program created, opened or wrote no HDF5 file",
        }.get(self.status, self.status)


@dataclass(frozen=True)
class Profile:
    data: Mapping[str, Any]

    @classmethod
    def from_json(cls, data: Any) -> Profile:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ProfileError('not a commtune profile (no "format": "commtune-profile")')
        for key in ("ranks", "features", "operations", "cvars"):
            if key not in data:
                raise ProfileError(f"malformed commtune profile: no {key!r}")
        return cls(data)

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        try:
            data = json.loads(Path(path).read_text())
        except OSError as exc:
            raise ProfileError(f"cannot read profile {path}: {exc.strerror}") from None
        except ValueError as exc:
            raise ProfileError(f"malformed profile {path}: {exc}") from None
        return cls.from_json(data)

    @property
    def ranks(self) -> int:
        return int(self.data["ranks"])

    @property
    def features(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.data["features"].items()}

    @property
    def operations(self) -> Mapping[str, Any]:
        ops: Mapping[str, Any] = self.data["operations"]
        return ops

    @property
    def cpusets(self) -> list[frozenset[int]]:
        """Each rank's CPU set (its binding), in rank order; empty where the profile has
        none (written before commtune recorded them)."""
        return [parse_cpus(text) for text in self.data.get("cpusets", [])]

    @property
    def cvars(self) -> list[CvarCheck]:
        return [CvarCheck(**c) for c in self.data["cvars"]]

    @property
    def hints(self) -> list[HintCheck]:
        return [HintCheck(**h) for h in self.data.get("hints", [])]

    @property
    def pvars(self) -> list[dict[str, Any]]:
        return list(self.data.get("pvars", []))

    @property
    def user(self) -> list[dict[str, Any]]:
        return list(self.data.get("user", []))

    def field(self, path: str) -> float:
        """The number at a dotted path; a statistics object gives its mean."""
        node: Any = self.data
        for part in path.split("."):
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            else:
                raise ProfileError(f"the profile has no field {path!r}")
        if isinstance(node, Mapping) and "mean" in node:
            node = node["mean"]
        if isinstance(node, bool) or not isinstance(node, int | float):
            raise ProfileError(f"profile field {path!r} is not a number")
        return float(node)

    def top_operations(self, limit: int = 10) -> list[tuple[str, Mapping[str, Any]]]:
        """Operations by total time over ranks, longest first."""
        ranked = sorted(self.operations.items(), key=lambda kv: -kv[1]["time"]["sum"])
        return ranked[:limit]


def _ratio(value: float, reference: float) -> float | None:
    return value / reference if reference else None


def relative_to(profile: Profile, reference: Profile) -> dict[str, float]:
    """AITuning's "relative" variables: this run's numbers over the reference run's (the study's
    library-defaults trial), for times, operations present in both, PVARs and user variables.
    A ratio whose reference is zero is left out."""
    pairs: dict[str, tuple[float, float]] = {}
    for key in ("wall_time", "mpi_time", "comm_time"):
        if key in profile.data and key in reference.data:
            pairs[key] = (profile.field(key), reference.field(key))
    ref_ops = reference.operations
    for name, op in profile.operations.items():
        if name in ref_ops:
            pairs[f"operations.{name}.time"] = (op["time"]["mean"], ref_ops[name]["time"]["mean"])
    for kind, rows, ref_rows in (
        ("pvars", profile.pvars, reference.pvars),
        ("user", profile.user, reference.user),
    ):
        ref_by_name = {r["name"]: r for r in ref_rows}
        for row in rows:
            ref = ref_by_name.get(row["name"])
            if ref is not None:
                pairs[f"{kind}.{row['name']}"] = (row["mean"], ref["mean"])
    out = {}
    for key, (value, ref_value) in pairs.items():
        ratio = _ratio(value, ref_value)
        if ratio is not None:
            out[key] = ratio
    return out


def parse_cpus(text: str) -> frozenset[int]:
    """A CPU list as Linux writes it (``0-3,8``) as a set; empty for ""."""
    out: set[int] = set()
    for part in text.split(","):
        if not part.strip():
            continue
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return frozenset(out)
