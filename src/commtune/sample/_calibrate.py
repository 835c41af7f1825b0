"""Calibrate a simulated cluster from the machine it stands for.

SimGrid's authors calibrate a platform from measurements of the real machine
(platform-calibration; Cornebize, Legrand, Heinrich 2019): a ping-pong and the time the
sender spends in ``MPI_Send`` and ``MPI_Isend`` and the receiver in ``MPI_Recv`` of a message
already sent, over message sizes drawn at random; the protocol breakpoints found in the
curves; a linear fit per size segment. :func:`calibrate` does the same with the user's MPI:

1. ``ct_calibrate`` (``native/bench``) on two nodes through the user's launch line (``srun -N
   2 -n 2``, ``mpirun -np 2 --host a,b``, a test bed's plain ``mpirun -np 2``), and on one node
   (two ranks that share it), each rank's compute rate beside; a launch line of more ranks
   (``srun -N 8 -n 8``) measures ranks 0 and 1 while every other pair does the same: the
   machine under the load of all its nodes talking at once, as in a collective;
2. the eager limit where ``MPI_Isend`` stops handing the whole message over (the time it
   keeps the sender drops: :func:`eager_limit`), and the size below which a receive finds
   the message already there;
3. the one-way time split into the sender's and the receiver's overheads and the network's
   part (below the eager limit the two overheads together, ``os + or``, capped at
   ``CPU_SHARE`` of the one-way time; ``ois``, the ``MPI_Isend`` overhead, is not capped),
   the network's part cut into segments by a least-squares search for breakpoints
   (dynamic programming, the number of segments by BIC) and fitted per segment: latency and
   bandwidth factors against the link's latency and its bandwidth at the largest sizes,
   within what the link can do (issue 78): a latency factor at least 1 (no message arrives
   sooner than the smallest do) and a bandwidth factor at most the rate of a train of 4 of
   the segment's messages sent back to back (:func:`train_cap`). A ping-pong of one message
   at a time passes a shaper's token bucket at its burst rate (on the bed, 20x the link's),
   which a collective's messages at once do not: fitted to ping-pongs alone, 2-68 KiB had
   a bandwidth factor of 20 and the collectives ran 2-4x too fast;
4. the simulator run on the calibrated platform with the same sizes, and each segment's
   factors corrected by what it got wrong (three rounds at most). This agreement is on the
   sizes and medians the fit used: in sample, a measure of the fit;
5. the check out of sample (:func:`held_out`): a fresh launch of ``ct_calibrate`` between
   the two nodes on sizes the fit never saw (drawn from another seed, none of the fit's),
   simulated on the calibrated platform and on the same links with SimGrid's own factors;
   both agreements are reported. It is still a ping-pong;
6. how the platform orders the collectives (:mod:`commtune.sample._ordering`): on the
   launch line's ranks, each collective's algorithms that SMPI ports faithfully, on the
   machine and simulated on the calibrated platform and on SimGrid's own factors; the
   command refuses (:func:`check_order`) a platform that puts the faster of two first less
   often than SimGrid's own factors on the same real runs.

Nothing is written before every step has passed; a launch on one node where two were
asked, a launch that fails, a platform the simulation cannot bring within 2x of the
measurement, or one that orders the collectives worse is one line (UsageError).
"""

from __future__ import annotations

import math
import os
import random
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from commtune import native
from commtune.errors import UsageError
from commtune.launch import launcher_for
from commtune.mpi import (
    CALIBRATION_FORMAT,
    NO_COMPUTE,
    SIMULATOR_NEEDED,
    Calibration,
    Installation,
    Piece,
    Vendor,
    find_installation,
    launch_line,
    speed_args,
    write_cluster,
)
from commtune.progress import Progress
from commtune.sample._ordering import Ordering, check_ordering
from commtune.trial import run_process, stderr_summary

PROGRAM = "bench/ct_calibrate.c"
OPS = ("pingpong", "send", "isend", "recv", "train")
# The sender's and receiver's overheads together are at most this share of the one-way time
# of a message (the rest is the network's): TCP progresses only inside MPI calls, so a receive
# of a message "already sent" also reads it off the socket, more than the whole one-way time
CPU_SHARE = 0.5
# SMPI's own eager limit (smpi/send-is-detached-thresh), kept where the curves show none
DEFAULT_EAGER = 65536
MAX_SEGMENTS = 6
MIN_POINTS = 4
MIN_SPAN = 2.0  # a segment's largest size over its smallest, at least
ROUNDS = 3  # corrections of the factors by the simulation
CONTRADICTED = 2.0  # a median simulated/measured ratio beyond this (or its inverse) fails
GOOD = (0.8, 1.25)  # a size whose simulated time is within this of the measured one agrees
MAX_BW_FACTOR = 1e3  # where no train was measured (a simulated launch, an old output)


@dataclass(frozen=True)
class Line:
    """A linear fit ``a + b * size`` over the sizes from ``first`` (included) on."""

    first: int
    a: float
    b: float

    def at(self, size: float) -> float:
        return self.a + self.b * size


@dataclass
class Measurement:
    """What one launch of ``ct_calibrate`` printed."""

    hosts: tuple[str, str]
    flops: float  # rank 0's compute rate, flop/s
    samples: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    pairs: int = 1  # pairs of ranks measured side by side (the load of the others on 0, 1)

    def medians(self, op: str) -> dict[int, float]:
        return {s: statistics.median(v) for s, v in sorted(self.samples.get(op, {}).items())}

    @staticmethod
    def flops_of(stdout: str) -> float | None:
        """Rank 0's compute rate in ``stdout`` (``ct_calibrate -c``), if printed."""
        for line in stdout.splitlines():
            words = line.split()
            if words[:2] == ["flops", "0"] and len(words) == 3:
                try:
                    return float(words[2])
                except ValueError:
                    return None
        return None

    @classmethod
    def parse(cls, stdout: str) -> Measurement:
        hosts: dict[int, str] = {}
        flops = 0.0
        pairs = 1
        samples: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        for line in stdout.splitlines():
            words = line.split()
            try:
                if words[:1] == ["host"] and len(words) >= 3:
                    hosts[int(words[1])] = " ".join(words[2:])
                elif words[:2] == ["flops", "0"]:
                    flops = float(words[2])
                elif words[:1] == ["pairs"] and len(words) == 2:
                    pairs = max(1, int(words[1]))
                elif words[:1] == ["sample"] and len(words) == 4 and words[1] in OPS:
                    samples[words[1]][int(words[2])].append(float(words[3]))
            except (ValueError, IndexError):
                continue
        if 0 not in hosts or 1 not in hosts or "pingpong" not in samples:
            raise ValueError("no measurement in its output")
        return cls((hosts[0], hosts[1]), flops, {op: dict(v) for op, v in samples.items()},
                   pairs)  # fmt: skip


@dataclass
class Agreement:
    """The simulated over the measured one-way time, per size."""

    ratios: dict[int, float]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios.values())

    def within(self, low: float, high: float) -> float:
        values = list(self.ratios.values())
        return sum(low <= r <= high for r in values) / len(values)

    def to_json(self) -> dict[str, Any]:
        return {"median": self.median, "within_0.8_1.25": self.within(*GOOD),
                "within_0.5_2": self.within(0.5, 2.0),
                "ratios": {str(k): v for k, v in self.ratios.items()}}  # fmt: skip


@dataclass
class CalibrationResult:
    calibration: Calibration
    between: Measurement
    within: Measurement | None
    agreement: Agreement  # between two nodes, on the sizes the fit used (in sample)
    agreement_within: Agreement | None  # two ranks of one node
    simulated: dict[int, float]  # one-way time simulated between two nodes, per size
    simulated_within: dict[int, float] | None
    launch: list[str]
    one_node: list[str] | None
    installation: str
    # out of sample: a fresh launch on sizes the fit never saw, the calibrated platform and
    # the same links with SimGrid's own factors (None: not measured)
    held_out: Agreement | None = None
    held_out_plain: Agreement | None = None
    # how the platform orders the collectives against the machine (None: not checked)
    ordering: Ordering | None = None
    # each bandwidth factor's bound, by the trains (its piece's threshold, the bound)
    caps: list[tuple[int, float]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def curves(m: Measurement) -> dict[str, dict[str, float]]:
            return {op: {str(s): t for s, t in m.medians(op).items()} for op in m.samples}

        return {
            "format": CALIBRATION_FORMAT, "version": 1,
            "installation": self.installation, "launch": self.launch,
            "one_node": self.one_node, "hosts": list(self.between.hosts),
            "pairs": self.between.pairs,
            "calibration": self.calibration.to_json(),
            "configuration": self.calibration.configuration(),
            "agreement": self.agreement.to_json(),
            "agreement_within": (None if self.agreement_within is None
                                 else self.agreement_within.to_json()),
            "held_out": None if self.held_out is None else self.held_out.to_json(),
            "held_out_plain": (None if self.held_out_plain is None
                               else self.held_out_plain.to_json()),
            "ordering": None if self.ordering is None else self.ordering.to_json(),
            "bw_factor_caps": [list(c) for c in self.caps],
            "measured": curves(self.between),
            "measured_within": None if self.within is None else curves(self.within),
            "simulated": {str(s): t for s, t in self.simulated.items()},
            "simulated_within": (None if self.simulated_within is None else
                                 {str(s): t for s, t in self.simulated_within.items()}),
        }  # fmt: skip


# -- fitting ------------------------------------------------------------------------------------
def _fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """(a, b, residual) of ``y = a + b x`` by least squares on the relative error, ``a`` at
    least 0 (a simulator's latency is never negative: a line that would need one goes
    through the origin instead)."""
    sw = sx = sxx = sy = sxy = syy = 0.0
    for x, y in zip(xs, ys, strict=True):
        w = 1.0 / max(abs(y), 1e-12) ** 2
        sw, sx, sxx = sw + w, sx + w * x, sxx + w * x * x
        sy, sxy, syy = sy + w * y, sxy + w * x * y, syy + w * y * y
    det = sw * sxx - sx * sx
    if det <= 1e-300 * max(1.0, sw * sxx):
        a, b = sy / sw, 0.0
    else:
        b = (sw * sxy - sx * sy) / det
        a = (sy - b * sx) / sw
    if a < 0 and sxx > 0:
        a, b = 0.0, sxy / sxx
    residual = syy - 2 * a * sy - 2 * b * sxy + a * a * sw + 2 * a * b * sx + b * b * sxx
    return a, b, max(residual, 0.0)


def fit_segments(points: Mapping[int, float], max_segments: int = MAX_SEGMENTS,
                 min_points: int = MIN_POINTS) -> list[Line]:  # fmt: skip
    """The piecewise-linear fit of ``points`` (size -> time): breakpoints by dynamic
    programming over the sorted sizes, the number of segments by BIC."""
    xs = sorted(points)
    if not xs:
        return []
    ys = [points[x] for x in xs]
    n = len(xs)
    if n < 2 * min_points:
        a, b, _ = _fit(xs, ys)
        return [Line(xs[0], a, b)]
    # a segment spans a factor of MIN_SPAN in size at least: a shorter one fits noise (a
    # latency factor of 146 over 161-210 KiB on the bed), not a protocol's break
    cost = {
        (i, j): _fit(xs[i:j], ys[i:j])[2]
        for i in range(n)
        for j in range(i + min_points, n + 1)
        if xs[j - 1] >= MIN_SPAN * xs[i] or (i == 0 and j == n)
    }
    # best[k][j]: the least residual of the first j points in k segments, and where the last
    # segment starts
    inf = float("inf")
    best = [[(inf, -1)] * (n + 1) for _ in range(max_segments + 1)]
    best[0][0] = (0.0, -1)
    for k in range(1, max_segments + 1):
        for j in range(min_points, n + 1):
            best[k][j] = min(((best[k - 1][i][0] + cost[(i, j)], i)
                              for i in range(0, j - min_points + 1)
                              if best[k - 1][i][0] < inf and (i, j) in cost),
                             default=(inf, -1))  # fmt: skip

    def bic(k: int) -> float:
        rss = best[k][n][0]
        return n * math.log(rss / n + 1e-12) + 3 * k * math.log(n)

    ks = [k for k in range(1, max_segments + 1) if best[k][n][0] < inf]
    k = min(ks, key=bic)
    starts = []
    j = n
    while k > 0:
        i = best[k][j][1]
        starts.append((i, j))
        j, k = i, k - 1
    lines = []
    for i, j in reversed(starts):
        a, b, _ = _fit(xs[i:j], ys[i:j])
        lines.append(Line(xs[i], a, b))
    return lines


def boundary(sizes: Sequence[int], above: Sequence[bool]) -> int:
    """The threshold T that best separates sizes flagged ``above`` (from T on) from the
    others (fewest misplaced): 0 where all are above, past the largest where none is."""
    order = sorted(zip(sizes, above, strict=True))
    best, where = sum(not flag for _, flag in order), 0  # everything above
    wrong = best
    for i, (size, flag) in enumerate(order):
        wrong += 1 if flag else -1  # size i moves below the threshold
        if wrong < best:
            nxt = order[i + 1][0] if i + 1 < len(order) else size * 2
            best, where = wrong, math.isqrt(size * nxt) + 1 if nxt > size else size + 1
    return where


def eager_limit(isend: Mapping[int, float]) -> int | None:
    """Where the time ``MPI_Isend`` keeps the sender drops (the eager protocol hands the
    whole message over, the rendezvous only its header): the split between two sizes with
    the largest drop of the median over the next factor of 4 sizes against the previous,
    if it halves, then moved to the sizes nearby that the level between the two medians
    separates best; None where no such drop is measured."""
    sizes = sorted(isend)
    best: tuple[float, int, float] | None = None
    for i in range(1, len(sizes)):
        left = [isend[s] for s in sizes[:i] if s * 4 >= sizes[i - 1]]
        right = [isend[s] for s in sizes[i:] if s <= 4 * sizes[i]]
        if len(left) < 2 or len(right) < 2:
            continue
        high, low = statistics.median(left), statistics.median(right)
        if low < 0.5 * high and (best is None or low / high < best[0]):
            best = (low / high, i, math.sqrt(high * low))
    if best is None:
        return None
    _, i, level = best
    near = range(max(1, i - 4), min(len(sizes), i + 5))

    def misplaced(j: int) -> int:
        return sum(isend[s] < level for s in sizes[near[0] - 1 : j]) + sum(
            isend[s] >= level for s in sizes[j : near[-1] + 1]
        )

    j = min(near, key=lambda j: (misplaced(j), j))
    return math.isqrt(sizes[j - 1] * sizes[j]) + 1


def _piece_above(line: Line, previous: int | None) -> int:
    """SimGrid's threshold of a segment starting at size ``line.first``: its pieces apply
    to sizes strictly above the threshold, between the last size of the previous segment."""
    if previous is None:
        return 0
    return max(previous, math.isqrt(previous * line.first))


def _split(points: Mapping[int, float], threshold: int) -> tuple[dict[int, float], ...]:
    low = {s: t for s, t in points.items() if s < threshold}
    return low, {s: t for s, t in points.items() if s >= threshold}


def _segment(lines: Sequence[Line], k: int, sizes: Sequence[int]) -> list[int]:
    """Of ``sizes`` (sorted), those of the segment ``lines[k]``: from its first size to the
    next segment's."""
    end = lines[k + 1].first if k + 1 < len(lines) else None
    return [s for s in sizes if s >= lines[k].first and (end is None or s < end)]


def _piecewise(lines: Sequence[Line], points: Mapping[int, float],
               value: Any) -> tuple[Piece, ...]:  # fmt: skip
    """Pieces over the segments ``lines`` of ``value(line, segment points)``."""
    out = []
    sizes = sorted(points)
    previous: int | None = None
    for k, line in enumerate(lines):
        mine = {s: points[s] for s in _segment(lines, k, sizes)}
        offset, per_byte = value(line, mine)
        out.append(Piece(_piece_above(line, previous), offset, per_byte))
        previous = max(mine) if mine else line.first
    return tuple(out)


def _overhead(points: Mapping[int, float]) -> tuple[float, float]:
    if not points:
        return 0.0, 0.0
    a, b, _ = _fit(list(points), list(points.values()))
    if b < 0 or a < 0:  # a flat overhead: its median
        return max(0.0, statistics.median(points.values())), 0.0
    return a, b


TRAIN = 4  # messages a train (ct_calibrate's TRAIN)


def train_cap(sizes: Sequence[int], train: Mapping[int, float], bandwidth: float,
              fixed: float) -> float:  # fmt: skip
    """The largest bandwidth factor a segment of ``sizes`` may have: the rate of a train of
    its messages sent back to back over the link's sustained ``bandwidth`` (the median over
    the sizes measured; at least 1). An isolated message may pass a shaper at its burst rate
    (the bed's token bucket: 20x the link's), which a collective's messages at once do not.
    A train's time less ``fixed`` (the last message's latency and the answer's: a small
    message's round trip) is what its bytes took."""
    rates = [TRAIN * s / (max(TRAIN * train[s] - fixed, 0.1 * TRAIN * train[s]) * bandwidth)
             for s in sizes if train.get(s, 0) > 0]  # fmt: skip
    return max(1.0, statistics.median(rates)) if rates else MAX_BW_FACTOR


def fit(between: Measurement, within: Measurement | None, host_speed: float) -> tuple[
        Calibration, list[Line], list[float]]:  # fmt: skip
    """The first calibration from the measurements (refined by :func:`refine`), the
    segments of the one-way time between two nodes, and each one's largest bandwidth factor
    (:func:`train_cap`)."""
    pp = between.medians("pingpong")
    send, isend, recv = (between.medians(op) for op in ("send", "isend", "recv"))
    sizes = sorted(pp)
    # eager below the size where MPI_Isend stops handing the whole message over
    found_limit = eager_limit(isend)
    detached = DEFAULT_EAGER if found_limit is None else found_limit
    # a receive finds an eager message there below this size (0: never, SimGrid's default)
    eager = [s for s in sizes if s < detached and s in recv]
    found = boundary(eager, [recv[s] >= pp[s] for s in eager]) if eager else 0
    async_small = min(found, detached) if found > 0 and eager and found > min(eager) else 0
    # the overheads the simulator adds apart below the eager limit, on every route alike:
    # where ranks of one node were measured, the smaller of the two (the rest of the time
    # between nodes is the network's), else the ones between nodes
    inside = {op: within.medians(op) for op in OPS} if within is not None else {}

    def least(op: str, s: int, value: float) -> float:
        return min(value, inside.get(op, {}).get(s, value))

    os_points, or_points, net = {}, {}, {}
    for s in sizes:
        o_s, o_r = least("send", s, send.get(s, 0.0)), least("recv", s, recv.get(s, 0.0))
        if s < detached:
            total = o_s + o_r
            if total > CPU_SHARE * pp[s] > 0:
                o_s, o_r = (o * CPU_SHARE * pp[s] / total for o in (o_s, o_r))
            if within is not None and s in inside["pingpong"]:  # and so within a node
                total, alone = o_s + o_r, inside["pingpong"][s]
                if total > CPU_SHARE * alone > 0:
                    o_s, o_r = (o * CPU_SHARE * alone / total for o in (o_s, o_r))
            os_points[s], or_points[s] = o_s, o_r
            net[s] = pp[s] - o_s - o_r
        else:
            net[s] = pp[s]
    low, high = _split(net, detached)
    lines = fit_segments(low) + fit_segments(high)
    route = max(lines[0].a, 1e-8)  # two links between two nodes
    last = lines[-1]
    bandwidth = 1.0 / last.b if last.b > 0 else max(s / t for s, t in net.items())
    ois_points = {s: least("isend", s, isend[s]) for s in sizes if s in isend}
    train = between.medians("train")
    smallest = sorted(sizes)[: max(3, len(sizes) // 10)]
    round_trip = 2 * statistics.median(pp[s] for s in smallest)
    caps = [train_cap(_segment(lines, k, sizes), train, bandwidth, round_trip)
            for k in range(len(lines))]  # fmt: skip

    def lat(line: Line, mine: Mapping[int, float]) -> tuple[float, float]:
        # no message arrives sooner than the smallest ones do
        return max(line.a, route) / route, 0.0

    def bw(line: Line, mine: Mapping[int, float]) -> tuple[float, float]:
        return 1.0 / (max(line.b, 1e-15) * bandwidth), 0.0

    def overhead(points: Mapping[int, float]) -> Any:
        def value(line: Line, mine: Mapping[int, float]) -> tuple[float, float]:
            return _overhead({s: points[s] for s in mine if s in points})

        return value

    calibration = Calibration(
        link_bandwidth=bandwidth, link_latency=route / 2, loopback_bandwidth=None,
        loopback_latency=None, speed=between.flops or host_speed, host_speed=host_speed,
        bw_factor=tuple(replace(p, offset=min(p.offset, cap)) for p, cap
                        in zip(_piecewise(lines, net, bw), caps, strict=True)),
        lat_factor=_piecewise(lines, net, lat),
        send_overhead=_piecewise(lines, net, overhead(os_points)),
        isend_overhead=_piecewise(lines, net, overhead(ois_points)),
        recv_overhead=_piecewise(lines, net, overhead(or_points)),
        async_small=async_small, detached=detached,
    )  # fmt: skip
    if within is not None:
        one_way = inside["pingpong"]
        small = [t - os_points.get(s, 0.0) - or_points.get(s, 0.0)
                 for s, t in one_way.items() if s <= min(one_way) * 16]  # fmt: skip
        large = sorted(one_way)[-max(3, len(one_way) // 10) :]
        a = statistics.median(small) if small else min(one_way.values())
        b = statistics.median(one_way[s] / s for s in large)
        calibration = replace(
            calibration,
            loopback_latency=max(a / _factor(calibration.lat_factor, min(one_way)), 1e-9),
            loopback_bandwidth=1.0 / max(b * _factor(calibration.bw_factor, max(one_way)), 1e-15),
        )
    return calibration, lines, caps


def _factor(pieces: Sequence[Piece], size: int) -> float:
    """SimGrid's choice of a piece for ``size``: the last whose threshold is below it."""
    value = 1.0
    for p in pieces:
        if size <= p.above:
            break
        value = p.offset
    return value


def refine(calibration: Calibration, lines: Sequence[Line], caps: Sequence[float],
           measured: Mapping[int, float],
           simulated: Mapping[int, float]) -> Calibration:  # fmt: skip
    """The factors corrected per segment by what the simulation got wrong: each segment's
    network part plus the measured less the simulated one-way time, fitted again, within
    the same bounds (a latency factor at least 1, a bandwidth factor at most ``caps``)."""
    route = 2 * calibration.link_latency
    bandwidth = calibration.link_bandwidth
    lat, bw = list(calibration.lat_factor), list(calibration.bw_factor)
    sizes = sorted(s for s in measured if s in simulated)
    for k in range(len(lines)):
        mine = _segment(lines, k, sizes)
        if len(mine) < 2:
            continue
        a, b = lat[k].offset * route, 1.0 / (bw[k].offset * bandwidth)
        target = [a + b * s + measured[s] - simulated[s] for s in mine]
        new_a, new_b, _ = _fit(mine, target)
        lat[k] = replace(lat[k], offset=max(new_a, route) / route)
        bw[k] = replace(bw[k], offset=min(caps[k], 1.0 / (max(new_b, 1e-15) * bandwidth)))
    return replace(calibration, lat_factor=tuple(lat), bw_factor=tuple(bw))


def refine_loopback(calibration: Calibration, measured: Mapping[int, float],
                    simulated: Mapping[int, float]) -> Calibration:  # fmt: skip
    """The link within a node corrected by the small sizes' ratio (its latency) and the
    large sizes' (its bandwidth)."""
    if calibration.loopback_latency is None or calibration.loopback_bandwidth is None:
        return calibration
    sizes = sorted(s for s in measured if s in simulated)
    cut = max(1, len(sizes) // 4)
    small, large = sizes[:cut], sizes[-cut:]
    lat_ratio = statistics.median(measured[s] / simulated[s] for s in small)
    bw_ratio = statistics.median(simulated[s] / measured[s] for s in large)
    return replace(calibration,
                   loopback_latency=max(calibration.loopback_latency * lat_ratio, 1e-9),
                   loopback_bandwidth=calibration.loopback_bandwidth * bw_ratio)  # fmt: skip


# -- running ------------------------------------------------------------------------------------
def draw_sizes(count: int, largest: int, seed: int) -> list[int]:
    """``count`` message sizes drawn log-uniform in [1, ``largest``], in the drawn order."""
    rng = random.Random(seed)
    return [max(1, round(math.exp(rng.random() * math.log(largest)))) for _ in range(count)]


def simulator() -> Installation:
    """The installed simulator (smpicc and smpirun); UsageError naming the package."""
    for vendor in Vendor:
        if vendor.impl.simulated:
            try:
                return find_installation(vendor)
            except UsageError:
                break
    raise UsageError(f"calibrate checks the cluster it writes in the simulator: it needs "
                     f"{SIMULATOR_NEEDED}")  # fmt: skip


def measure(inst: Installation, launch: Sequence[str], args: Sequence[str], timeout: float,
            where: str, env: Mapping[str, str] | None = None) -> Measurement:  # fmt: skip
    """One launch of ``ct_calibrate`` by the launch line ``launch`` (the program appended);
    UsageError where it fails or prints no measurement."""
    program = native.build(inst, PROGRAM)
    plan = launcher_for(inst).plan([*launch, str(program), *args], {}, base_env=env)
    line = " ".join(launch)
    done = run_process(plan.argv, plan.env, timeout).ended_well(f"{where}: '{line}'", timeout)
    try:
        return Measurement.parse(done.stdout)
    except ValueError:
        raise UsageError(f"{where}: '{line}' printed no measurement (does it start at "
                         "least 2 ranks?)") from None  # fmt: skip


def host_speed(smpi: Installation, directory: Path) -> float:
    """This machine's compute rate as SimGrid benchmarks compute bursts: ``ct_calibrate -c``
    simulated on a host of 1 Gflop/s with ``smpi/host-speed`` 1 Gflop/s."""
    from commtune.mpi import Cluster

    platform, hosts = write_cluster(Cluster(1, 1, "flat", speed="1Gf"), str(directory / "speed"))
    program = native.build(smpi, PROGRAM)
    argv = [*launch_line(platform, hosts, 1), *speed_args("1Gf"),
            "--log=root.thres:critical", str(program), "-c"]  # fmt: skip
    done = run_process(argv, dict(os.environ), 120)
    found = Measurement.flops_of(done.stdout) if done.returncode == 0 else None
    if not found:
        raise UsageError(f"the simulator's benchmark of this machine failed: "
                         f"{stderr_summary(done.stderr_tail) or 'no rate printed'}")  # fmt: skip
    return found


def simulate(smpi: Installation, calibration: Calibration, directory: Path, sizes_file: Path,
             same_node: bool, timeout: float, plain: bool = False) -> dict[int, float]:  # fmt: skip
    """The one-way time per size of ``ct_calibrate -p`` simulated on two nodes of the
    calibrated platform (``same_node``: two ranks of one node; ``plain``: its links with
    SimGrid's own factors and thresholds, nothing calibrated beside them)."""
    cluster = calibration.cluster(2, 2 if same_node else 1, "flat")
    platform, _ = write_cluster(cluster, str(directory / "sim"))
    hosts = directory / "sim" / ("hosts-one" if same_node else "hosts-two")
    first = cluster.hostfile().splitlines()[0]
    names = [first, first] if same_node else sorted(set(cluster.hostfile().split()))[:2]
    hosts.write_text("".join(f"{n}\n" for n in names))
    program = native.build(smpi, PROGRAM)
    argv = [*launch_line(platform, str(hosts), 2), NO_COMPUTE,
            *([] if plain else calibration.cfg_args()),
            "--log=root.thres:critical", str(program), "-f", str(sizes_file), "-r", "1",
            "-p"]  # fmt: skip
    done = run_process(argv, dict(os.environ), timeout)
    if done.timed_out:
        raise UsageError(f"the simulator did not finish the calibrated platform's ping-pong in "
                         f"{timeout:.0f} s (--timeout)")  # fmt: skip
    if done.returncode != 0:
        why = stderr_summary(done.stderr_tail) or f"exit status {done.returncode}"
        raise UsageError(f"the simulator refused the calibrated platform: {why}")
    try:
        return Measurement.parse(done.stdout).medians("pingpong")
    except ValueError:  # SMPI exits 0 where its ranks deadlock
        why = stderr_summary(done.stderr_tail) or "no output"
        raise UsageError(f"the simulator printed no measurement on the calibrated platform "
                         f"({why})") from None  # fmt: skip


def _agreement(measured: Mapping[int, float], simulated: Mapping[int, float]) -> Agreement:
    return Agreement({s: simulated[s] / measured[s] for s in sorted(measured)
                      if s in simulated and measured[s] > 0})  # fmt: skip


def calibrate(inst: Installation, launch: Sequence[str], one_node: Sequence[str] | None,
              count: int, reps: int, largest: int, seed: int, timeout: float,
              ui: Progress, quick: bool = False) -> CalibrationResult:  # fmt: skip
    """Measure, fit and check (see the module docstring; ``quick``: the collectives'
    check on three of them); nothing is written here."""
    smpi = simulator()
    with tempfile.TemporaryDirectory(prefix="commtune-calibrate-") as tmp:
        directory = Path(tmp)
        sizes_file = directory / "sizes"
        sizes_file.write_text("".join(f"{s}\n" for s in draw_sizes(count, largest, seed)))
        args = ["-f", str(sizes_file), "-r", str(reps), "-s", str(seed)]
        with ui.progress("calibrate: measure, fit, check in the simulator", 5) as bar:
            between = measure(inst, launch, args, timeout, "between two nodes")
            if between.hosts[0] == between.hosts[1]:
                raise UsageError(f"'{' '.join(launch)}' put both ranks on one node "
                                 f"({between.hosts[0]}): calibrate needs a launch line of 2 "
                                 "ranks on 2 nodes (srun -N 2 -n 2, mpirun -np 2 --host "
                                 "a,b)")  # fmt: skip
            bar.advance()
            within = None
            if one_node is not None:
                within = measure(inst, one_node, args, timeout, "within one node",
                                 env=_one_node_env(inst))  # fmt: skip
                if within.hosts[0] != within.hosts[1]:
                    raise UsageError(f"--one-node '{' '.join(one_node)}' put its ranks on two "
                                     f"nodes ({', '.join(within.hosts)})")  # fmt: skip
            bar.advance()
            speed = host_speed(smpi, directory)
            calibration, lines, caps = fit(between, within, speed)
            measured = between.medians("pingpong")
            simulated = simulate(smpi, calibration, directory, sizes_file, False, timeout)
            for _ in range(ROUNDS):
                if _agreement(measured, simulated).within(*GOOD) == 1.0:
                    break
                candidate = refine(calibration, lines, caps, measured, simulated)
                again = simulate(smpi, candidate, directory, sizes_file, False, timeout)
                if _error(measured, again) >= _error(measured, simulated):
                    break
                calibration, simulated = candidate, again
            bar.advance()
            simulated_within = agreement_within = None
            if within is not None:
                inside = within.medians("pingpong")
                simulated_within = simulate(smpi, calibration, directory, sizes_file, True,
                                            timeout)  # fmt: skip
                for _ in range(ROUNDS):
                    candidate = refine_loopback(calibration, inside, simulated_within)
                    again = simulate(smpi, candidate, directory, sizes_file, True, timeout)
                    if _error(inside, again) >= _error(inside, simulated_within):
                        break
                    calibration, simulated_within = candidate, again
                agreement_within = _agreement(inside, simulated_within)
            bar.advance()
            agreement = _agreement(measured, simulated)
            check_agreement(agreement)
            fitted = [int(x) for x in sizes_file.read_text().split()]
            held, plain = held_out(inst, launch, calibration, fitted, max(8, count // 3), reps,
                                   largest, seed, timeout, smpi, directory)  # fmt: skip
            bar.advance()
        with ui.progress("calibrate: the collectives on the machine and simulated", 0) as bar:
            ordering = check_ordering(inst, smpi, calibration, launch, max(3, 2 * reps - 1),
                                      largest, timeout, directory, bar, quick)  # fmt: skip
    return CalibrationResult(calibration, between, within, agreement, agreement_within,
                             simulated, simulated_within, list(launch),
                             None if one_node is None else list(one_node),
                             inst.describe(), held, plain, ordering,
                             [(p.above, c) for p, c in zip(calibration.bw_factor, caps,
                                                           strict=True)])  # fmt: skip


def check_order(ordering: Ordering) -> None:
    """UsageError where the calibrated platform puts the faster of two algorithms first
    less often than SimGrid's own factors on the same links (``Ordering.worse``)."""
    if ordering.worse():
        mine, theirs = ordering.agree("calibrated"), ordering.agree("plain")
        raise UsageError(f"the calibrated platform orders the collectives worse than the "
                         f"simulator's own factors on the same links: the faster of two "
                         f"algorithms agrees with the machine in {mine} of {ordering.clear} "
                         f"comparisons against {theirs}; nothing written (--allow-worse-order "
                         "writes it)")  # fmt: skip


HELD_OUT_SEED = 7919  # added to --seed: the held-out sizes' draw


def held_out(inst: Installation, launch: Sequence[str], calibration: Calibration,
             fitted: Sequence[int], count: int, reps: int, largest: int, seed: int,
             timeout: float, smpi: Installation, directory: Path
             ) -> tuple[Agreement, Agreement]:  # fmt: skip
    """The calibration out of sample: a fresh launch between the two nodes on ``count``
    sizes none of which the fit used (``fitted``), simulated on the calibrated platform and
    on its links with SimGrid's own factors; (calibrated, plain) agreements."""
    used = set(fitted)
    sizes = [s for s in draw_sizes(4 * count, largest, seed + HELD_OUT_SEED) if s not in used]
    sizes = list(dict.fromkeys(sizes))[:count]
    sizes_file = directory / "held-out"
    sizes_file.write_text("".join(f"{s}\n" for s in sizes))
    args = ["-f", str(sizes_file), "-r", str(reps), "-s", str(seed + HELD_OUT_SEED)]
    fresh = measure(inst, launch, args, timeout, "held out, a fresh launch between two nodes")
    measured = fresh.medians("pingpong")
    calibrated = simulate(smpi, calibration, directory, sizes_file, False, timeout)
    plain = simulate(smpi, calibration, directory, sizes_file, False, timeout, plain=True)
    return _agreement(measured, calibrated), _agreement(measured, plain)


def check_agreement(agreement: Agreement) -> None:
    """UsageError where the simulation on the calibrated platform stays more than
    ``CONTRADICTED`` times off the measurement at the median size."""
    if not 1 / CONTRADICTED <= agreement.median <= CONTRADICTED:
        raise UsageError(f"the measurement contradicts the calibrated platform: the simulated "
                         f"one-way time is {agreement.median:.2f}x the measured one at the "
                         "median size (the machine's runs too noisy? try more --reps)")  # fmt: skip


def _error(measured: Mapping[int, float], simulated: Mapping[int, float]) -> float:
    """The median of |log(simulated / measured)| over the sizes: how far the two are."""
    return statistics.median(abs(math.log(r)) for r in _agreement(measured, simulated)
                             .ratios.values())  # fmt: skip


def _one_node_env(inst: Installation) -> dict[str, str]:
    """The environment without what spreads a plain launch line over an allocation's nodes
    (a test bed's hostfile): the one-node launch stays on this node."""
    spread = inst.impl.hosts_env("", "")
    return {k: v for k, v in dict(os.environ).items() if k not in spread}
