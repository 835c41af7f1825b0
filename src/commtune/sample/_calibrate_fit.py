"""The calibration's fit (``sample._calibrate``, steps 2-4): what ``ct_calibrate`` printed
(:class:`Measurement`), the eager limit and the receive's boundary, the one-way time split
into the two overheads and the network's part, that part cut into segments (a least-squares
search for breakpoints, the number by BIC) and fitted per segment within what the link can do
(:func:`train_cap`), and the factors corrected by what the simulation got wrong
(:func:`refine`, :func:`refine_loopback`)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from commtune.mpi import Calibration, Piece

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
    isend, recv = between.medians("isend"), between.medians("recv")
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
    os_points, or_points, net = _overheads(between, inside, detached)
    low, high = _split(net, detached)
    lines = fit_segments(low) + fit_segments(high)
    route = max(lines[0].a, 1e-8)  # two links between two nodes
    last = lines[-1]
    bandwidth = 1.0 / last.b if last.b > 0 else max(s / t for s, t in net.items())
    ois_points = {s: _least(inside, "isend", s, isend[s]) for s in sizes if s in isend}
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
        calibration = _loopback(calibration, inside["pingpong"], os_points, or_points)
    return calibration, lines, caps


def _least(inside: Mapping[str, Mapping[int, float]], op: str, s: int, value: float) -> float:
    """``value`` measured between nodes, or the one within a node where smaller."""
    return min(value, inside.get(op, {}).get(s, value))


Curve = dict[int, float]  # a time per message size


def _overheads(between: Measurement, inside: Mapping[str, Mapping[int, float]],
               detached: int) -> tuple[Curve, Curve, Curve]:  # fmt: skip
    """The sender's and the receiver's overheads below the eager limit ``detached`` (capped
    at ``CPU_SHARE`` of the one-way time, between nodes and within one) and the network's
    part of the one-way time, per size."""
    pp = between.medians("pingpong")
    send, recv = between.medians("send"), between.medians("recv")
    os_points: Curve = {}
    or_points: Curve = {}
    net: Curve = {}
    for s in sorted(pp):
        o_s = _least(inside, "send", s, send.get(s, 0.0))
        o_r = _least(inside, "recv", s, recv.get(s, 0.0))
        if s < detached:
            total = o_s + o_r
            if total > CPU_SHARE * pp[s] > 0:
                o_s, o_r = (o * CPU_SHARE * pp[s] / total for o in (o_s, o_r))
            if inside and s in inside["pingpong"]:  # and so within a node
                total, alone = o_s + o_r, inside["pingpong"][s]
                if total > CPU_SHARE * alone > 0:
                    o_s, o_r = (o * CPU_SHARE * alone / total for o in (o_s, o_r))
            os_points[s], or_points[s] = o_s, o_r
            net[s] = pp[s] - o_s - o_r
        else:
            net[s] = pp[s]
    return os_points, or_points, net


def _loopback(calibration: Calibration, one_way: Mapping[int, float],
              os_points: Mapping[int, float],
              or_points: Mapping[int, float]) -> Calibration:  # fmt: skip
    """The link within a node from two ranks' one-way times there: its latency from the
    small sizes less their overheads, its bandwidth from the large ones."""
    small = [t - os_points.get(s, 0.0) - or_points.get(s, 0.0)
             for s, t in one_way.items() if s <= min(one_way) * 16]  # fmt: skip
    large = sorted(one_way)[-max(3, len(one_way) // 10) :]
    a = statistics.median(small) if small else min(one_way.values())
    b = statistics.median(one_way[s] / s for s in large)
    return replace(
        calibration,
        loopback_latency=max(a / _factor(calibration.lat_factor, min(one_way)), 1e-9),
        loopback_bandwidth=1.0 / max(b * _factor(calibration.bw_factor, max(one_way)), 1e-15),
    )


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
