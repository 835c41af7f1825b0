"""``commtune rails bench``: the split planner on real heterogeneous links.

Each rail is a veth pair between this namespace and a peer namespace, shaped on the sending
side with ``tc tbf`` to its own rate. A sampler measures every rail's transfer time over
message sizes (TCP, one framed message and a one-byte acknowledgement); the planner splits
one message from those curves; the striping transfer sends the chunks over all rails at once.
Reported: predicted and measured time for the plan, an even split and the best single rail.
Needs root (namespaces and qdiscs); everything is removed afterwards, also on errors.
"""

from __future__ import annotations

import os
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from commtune.errors import UsageError
from commtune.progress import Progress
from commtune.rails._plan import Link, finish_time, split
from commtune.sample import Curve

PORT = 47000
SAMPLE_SIZES = (16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20)


@dataclass(frozen=True)
class Rail:
    index: int
    rate_mbit: float
    local: str  # interface in our namespace
    address: str  # the peer's address on this rail


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UsageError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@contextmanager
def rails(rates: Sequence[float]) -> Iterator[tuple[str, list[Rail]]]:
    """Namespace + one shaped veth pair per rate; torn down on exit."""
    if os.geteuid() != 0:
        raise UsageError("rails bench needs root (network namespaces and tc)")
    tag = f"ct{os.getpid() % 100000}"
    ns = f"{tag}-peer"
    made: list[str] = []
    try:
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        out = []
        for i, rate in enumerate(rates):
            local, remote = f"{tag}a{i}", f"{tag}b{i}"
            _ip("link", "add", local, "type", "veth", "peer", "name", remote)
            made.append(local)
            _ip("link", "set", remote, "netns", ns)
            _ip("addr", "add", f"10.77.{i}.1/24", "dev", local)
            _ip("-n", ns, "addr", "add", f"10.77.{i}.2/24", "dev", remote)
            _ip("link", "set", local, "up")
            _ip("-n", ns, "link", "set", remote, "up")
            subprocess.run(
                ["tc", "qdisc", "add", "dev", local, "root", "tbf", "rate", f"{rate}mbit",
                 "burst", "128kb", "latency", "500ms"],
                check=True, capture_output=True,
            )  # fmt: skip
            out.append(Rail(i, rate, local, f"10.77.{i}.2"))
        yield ns, out
    finally:
        for local in made:
            subprocess.run(["ip", "link", "del", local], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


@contextmanager
def peer(ns: str, addresses: Sequence[str]) -> Iterator[None]:
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, "-m", "commtune.rails._peer",
         *[f"{a}:{PORT}" for a in addresses]],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise UsageError("the rails peer did not start")
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Sender:
    """One persistent TCP connection per rail."""

    def __init__(self, rails_: Sequence[Rail]) -> None:
        self.socks = []
        for rail in rails_:
            s = socket.create_connection((rail.address, PORT), timeout=30)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.socks.append(s)
        self.payload = memoryview(bytes(64 << 20))

    def close(self) -> None:
        for s in self.socks:
            s.close()

    def _send(self, i: int, size: int) -> None:
        s = self.socks[i]
        s.sendall(struct.pack("!Q", size))
        sent = 0
        while sent < size:
            n = min(size - sent, len(self.payload))
            s.sendall(self.payload[:n])
            sent += n
        if s.recv(1) != b"k":
            raise UsageError(f"rail {i}: the peer closed the connection")

    def one(self, i: int, size: int) -> float:
        t0 = time.perf_counter()
        self._send(i, size)
        return time.perf_counter() - t0

    def striped(self, chunks: Sequence[int]) -> float:
        """Send every non-empty chunk on its rail at once; time until the last one lands."""
        start = threading.Barrier(sum(1 for c in chunks if c > 0) + 1)
        errors: list[BaseException] = []

        def go(i: int, size: int) -> None:
            start.wait()
            try:
                self._send(i, size)
            except BaseException as exc:  # reported by the caller
                errors.append(exc)

        threads = [threading.Thread(target=go, args=(i, c)) for i, c in enumerate(chunks) if c]
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        if errors:
            raise UsageError(f"striped transfer failed: {errors[0]}")
        return time.perf_counter() - t0


@dataclass
class Strategy:
    name: str
    chunks: list[int]
    predicted: float
    measured: list[float]

    def to_json(self) -> dict[str, object]:
        median = statistics.median(self.measured)
        return {
            "name": self.name,
            "chunks": self.chunks,
            "predicted_s": self.predicted,
            "measured_s": median,
            "measured_min_s": min(self.measured),
            "measured_max_s": max(self.measured),
            "measured_over_predicted": median / self.predicted if self.predicted else None,
        }


def bench(
    rates: Sequence[float], size: int, repeats: int, ui: Progress
) -> tuple[dict[str, Curve], list[Strategy]]:
    with rails(rates) as (ns, rails_), peer(ns, [r.address for r in rails_]):
        sender = Sender(rails_)
        try:
            with ui.progress("sampling rails", total=len(rails_) * len(SAMPLE_SIZES)) as bar:
                curves: dict[str, Curve] = {}
                for rail in rails_:
                    times = []
                    for s in SAMPLE_SIZES:
                        bar.status(f"rail {rail.index} ({rail.rate_mbit:g} Mbit/s), {s} B")
                        sender.one(rail.index, s)  # warm the connection's window
                        times.append(statistics.median(
                            sender.one(rail.index, s) * 1e9 for _ in range(3)
                        ))  # fmt: skip
                        bar.advance()
                    curves[f"rail{rail.index}"] = Curve(f"rail{rail.index}", SAMPLE_SIZES,
                                                        tuple(times))  # fmt: skip
            links = [Link.sampled(name, c) for name, c in curves.items()]
            plan = split(size, links)
            even = [size // len(links)] * len(links)
            even[0] += size - sum(even)
            single_times = [link.time(size) for link in links]
            best = single_times.index(min(single_times))
            single = [size if i == best else 0 for i in range(len(links))]
            strategies = [
                Strategy("plan", plan, finish_time(plan, links), []),
                Strategy("even", even, finish_time(even, links), []),
                Strategy(f"best single (rail {best})", single, finish_time(single, links), []),
            ]
            with ui.progress("striped transfers", total=repeats * len(strategies)) as bar:
                for _ in range(repeats):  # interleaved, so drift hits all alike
                    for st in strategies:
                        bar.status(st.name)
                        st.measured.append(sender.striped(st.chunks))
                        bar.advance()
        finally:
            sender.close()
    return curves, strategies


def summarize(
    strategies: Sequence[Strategy], rates: Sequence[float], size: int
) -> tuple[list[dict[str, object]], dict[str, float]]:
    """Each split's record with its share of the aggregate bandwidth, and how many times
    faster the plan (the first) was than each other split."""
    aggregate = sum(rates) * 1e6 / 8  # bytes per second
    rows = []
    for st in strategies:
        row = st.to_json()
        row["aggregate_share"] = size / aggregate / statistics.median(st.measured)
        rows.append(row)
    plan = statistics.median(strategies[0].measured)
    gains = {st.name: statistics.median(st.measured) / plan for st in strategies[1:]}
    return rows, gains
