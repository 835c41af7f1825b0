"""A simulated platform calibrated from the machine it stands for (``commtune calibrate``):
the piecewise factors and overheads SMPI reads (:class:`Piece`), the calibration as a record
(:class:`Calibration`: a node's link, the link within a node, a core's speed, the factors per
size segment, the protocol thresholds) written as the platform's and the simulator's
configuration, and read back (:func:`read_calibration`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

from commtune.errors import UsageError
from commtune.mpi._simgrid import Cluster

CALIBRATION_FILE = "calibration.json"
CALIBRATION_FORMAT = "commtune-calibration"
# What calibrating needs beside the user's MPI: the simulator, to check what it wrote
SIMULATOR_NEEDED = "SimGrid's smpicc and smpirun (Debian: libsimgrid-dev)"


def speed_args(speed: str) -> list[str]:
    """``smpirun`` arguments under which a compute burst timed on this machine lasts as long
    in simulated time on a host of ``speed`` (SimGrid's benchmarking of this machine)."""
    return [f"--cfg=smpi/host-speed:{speed}"]


@dataclass(frozen=True)
class Piece:
    """One size segment of a piecewise model as SimGrid reads it: for messages larger than
    ``above`` bytes (up to the next piece's), ``offset + per_byte * size`` (``smpi/os``,
    ``or``, ``ois``: seconds) or ``offset`` alone (``smpi/bw-factor``, ``lat-factor``)."""

    above: int
    offset: float
    per_byte: float = 0.0


@dataclass(frozen=True)
class Calibration:
    """What ``commtune calibrate`` measured on two nodes, as SMPI's platform and
    configuration: a node's link (a route between two nodes crosses two links, each of
    half the measured latency), the link within a node, a core's compute speed, the
    piecewise factors and overheads per size segment, and the two protocol thresholds."""

    link_bandwidth: float  # bytes/s
    link_latency: float  # seconds, one link
    loopback_bandwidth: float | None  # within a node (None: not measured)
    loopback_latency: float | None
    speed: float  # flop/s of a core of the measured node
    host_speed: float  # flop/s of the machine that simulates (smpi/host-speed)
    bw_factor: tuple[Piece, ...]
    lat_factor: tuple[Piece, ...]
    send_overhead: tuple[Piece, ...]  # smpi/os
    isend_overhead: tuple[Piece, ...]  # smpi/ois
    recv_overhead: tuple[Piece, ...]  # smpi/or
    async_small: int  # smpi/async-small-thresh
    detached: int  # smpi/send-is-detached-thresh (eager below, rendezvous from it)

    def configuration(self) -> dict[str, str]:
        """SMPI's configuration (name -> value) of this calibration."""

        def factors(pieces: Sequence[Piece]) -> str:
            return ";".join(f"{p.above}:{p.offset:.6g}" for p in pieces)

        def overheads(pieces: Sequence[Piece]) -> str:
            return ";".join(f"{p.above}:{p.offset:.6g}:{p.per_byte:.6g}" for p in pieces)

        return {
            "smpi/bw-factor": factors(self.bw_factor),
            "smpi/lat-factor": factors(self.lat_factor),
            "smpi/os": overheads(self.send_overhead),
            "smpi/ois": overheads(self.isend_overhead),
            "smpi/or": overheads(self.recv_overhead),
            "smpi/async-small-thresh": str(self.async_small),
            "smpi/send-is-detached-thresh": str(self.detached),
            "smpi/host-speed": f"{self.host_speed:.6g}f",
        }

    def cfg_args(self) -> list[str]:
        """The configuration as ``smpirun`` arguments."""
        return [f"--cfg={name}:{value}" for name, value in self.configuration().items()]

    def cfg_text(self, header: str) -> str:
        """The configuration file written beside the platform (one ``--cfg=`` a line)."""
        lines = [f"# {header}", "# smpirun $(grep -v '^#' smpi.cfg) -platform ... ./app"]
        return "\n".join([*lines, *self.cfg_args()]) + "\n"

    def cluster(self, nodes: int, cores: int = 1, topology: str = "fat-tree",
                taper: int = 1) -> Cluster:  # fmt: skip
        """A cluster of ``nodes`` nodes like the measured one, links as measured."""
        loop_bw = self.loopback_bandwidth
        loop_lat = self.loopback_latency
        return Cluster(nodes, cores, topology, _bandwidth(self.link_bandwidth),
                       _latency(self.link_latency), f"{max(1.0, self.speed / 1e6):.0f}Mf",
                       taper, None, None if loop_bw is None else _bandwidth(loop_bw),
                       None if loop_lat is None else _latency(loop_lat))  # fmt: skip

    def to_json(self) -> dict[str, object]:
        def pieces(ps: Sequence[Piece]) -> list[list[float]]:
            return [[p.above, p.offset, p.per_byte] for p in ps]

        return {
            "link_bandwidth": self.link_bandwidth, "link_latency": self.link_latency,
            "loopback_bandwidth": self.loopback_bandwidth,
            "loopback_latency": self.loopback_latency,
            "speed": self.speed, "host_speed": self.host_speed,
            "bw_factor": pieces(self.bw_factor), "lat_factor": pieces(self.lat_factor),
            "os": pieces(self.send_overhead), "ois": pieces(self.isend_overhead),
            "or": pieces(self.recv_overhead),
            "async_small": self.async_small, "detached": self.detached,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Calibration:
        def pieces(key: str) -> tuple[Piece, ...]:
            rows = data[key]
            assert isinstance(rows, list)
            return tuple(Piece(int(r[0]), float(r[1]), float(r[2])) for r in rows)

        def number(key: str) -> float:
            value = data[key]
            assert isinstance(value, int | float)
            return float(value)

        def optional(key: str) -> float | None:
            return None if data.get(key) is None else number(key)

        return cls(number("link_bandwidth"), number("link_latency"),
                   optional("loopback_bandwidth"), optional("loopback_latency"),
                   number("speed"), number("host_speed"), pieces("bw_factor"),
                   pieces("lat_factor"), pieces("os"), pieces("ois"), pieces("or"),
                   int(number("async_small")), int(number("detached")))  # fmt: skip


def _bandwidth(value: float) -> str:
    return f"{max(1.0, value):.0f}Bps"


def _latency(value: float) -> str:
    return f"{max(1.0, value * 1e9):.0f}ns"


def read_calibration(directory: str) -> Calibration:
    """The calibration ``commtune calibrate`` wrote into ``directory``; UsageError naming
    what is wrong with it."""

    path = os.path.join(directory, CALIBRATION_FILE)
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as exc:
        raise UsageError(f"calibration {path}: {exc.strerror or exc} "
                         "(commtune calibrate --out DIR writes it)") from None  # fmt: skip
    except ValueError as exc:
        raise UsageError(f"calibration {path} does not parse: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
        raise UsageError(f"calibration {path}: not a file commtune calibrate wrote")
    try:
        return Calibration.from_json(data["calibration"])
    except (KeyError, TypeError, ValueError, AssertionError, IndexError):
        raise UsageError(f"calibration {path}: incomplete (write it again)") from None
