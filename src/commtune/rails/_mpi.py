"""NewMadeleine's multi-rail split inside a real MPI library, across the test bed's nodes.

Each rail is sampled alone (the library given that one interface) with a ping-pong between
two nodes over message sizes; the planner (:func:`split`) splits a large message so that
every rail ends together, and the split is handed to the library as its own weights
(:meth:`MPIVendor.rail_weights`: Open MPI's per-interface TCP bandwidths). A transfer's
bytes per interface are counted from the sending node's kernel (``/proc/net/dev`` inside its
namespace), so whether the library split as told is checked, not assumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from commtune.errors import UsageError
from commtune.mpi import Installation
from commtune.rails._plan import Link, split
from commtune.sample import Curve, parse_output
from commtune.testbed import Cluster


@dataclass(frozen=True)
class Transfer:
    """One launch of the ping-pong: its one-way time for ``size`` bytes (the median over
    its blocks) and the bytes the first node sent through each interface."""

    size: int
    seconds: float
    sent: dict[str, int]

    @property
    def bandwidth(self) -> float:
        """Bytes per second, one way."""
        return self.size / self.seconds

    def shares(self) -> dict[str, float]:
        total = sum(self.sent.values()) or 1
        return {dev: n / total for dev, n in self.sent.items()}


def _sent_bytes(bed: Cluster, node: str) -> dict[str, int]:
    text = bed.run(node, ["cat", "/proc/net/dev"], timeout=30).stdout
    out = {}
    for line in text.splitlines()[2:]:
        name, _, fields = line.partition(":")
        out[name.strip()] = int(fields.split()[8])  # transmitted bytes
    return {dev: out.get(dev, 0) for dev in bed.devices}


def pingpong(
    bed: Cluster,
    installation: Installation,
    program: Path,
    sizes: Sequence[int],
    env: Mapping[str, str],
    timeout: float = 300,
) -> list[Transfer]:
    """``ct_sample pingpong`` between the bed's first two nodes with ``env`` on top of the
    installation's and the bed's network environment; one :class:`Transfer` per size (the
    bytes counted are the whole launch's)."""
    first = bed.hostnames[0]
    full = {**installation.tool_env(), **bed.network_env(installation), **env}
    before = _sent_bytes(bed, first)
    argv = bed.launch(installation, [str(program), "-q", "-s", ",".join(map(str, sizes)),
                                     "pingpong"], nodes=2)  # fmt: skip
    done = bed.run(first, argv, timeout=timeout, env=full)
    after = _sent_bytes(bed, first)
    rows, _ = parse_output(done.stdout)
    times = {int(r["size"]): r["median_ns"] * 1e-9 for r in rows}
    if done.returncode != 0 or set(times) != set(sizes):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"ping-pong across the test bed failed ({done.returncode}): {tail}")
    sent = {dev: after[dev] - before[dev] for dev in bed.devices}
    return [Transfer(s, times[s], sent) for s in sizes]


def rail_curves(
    bed: Cluster, installation: Installation, program: Path, sizes: Sequence[int]
) -> dict[str, Curve]:
    """Every rail's ping-pong curve (ns, one way), each sampled with the library given only
    that rail's interface."""
    curves = {}
    for dev in bed.devices:
        env = installation.impl.network_env([dev])
        rows = pingpong(bed, installation, program, sizes, env)
        curves[dev] = Curve(dev, tuple(sizes), tuple(t.seconds * 1e9 for t in rows))
    return curves


def planned_shares(curves: Mapping[str, Curve], size: int) -> dict[str, float]:
    """The fraction of a ``size``-byte message each rail gets so that all end together."""
    links = [Link.sampled(dev, curve) for dev, curve in curves.items()]
    chunks = split(size, links)
    return {link.name: chunk / size for link, chunk in zip(links, chunks, strict=True)}


def even_shares(devices: Sequence[str]) -> dict[str, float]:
    return {dev: 1 / len(devices) for dev in devices}
