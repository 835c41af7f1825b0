"""The platform profile: every sampled curve of one platform, and what follows from them.

Stored whole (JSON) in the study storage under the platform fingerprint's key; the
thresholds, choices and configuration are recomputed from the curves, so a profile written
by an older commtune still gives today's decisions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from commtune.errors import UsageError
from commtune.knobs import Knob, KnobType, Value, load_catalog
from commtune.mpi import Vendor
from commtune.platform import Fingerprint
from commtune.sample._curves import (
    TIE,
    Crossing,
    Curve,
    Segment,
    crossings,
    geometric_mean_ratio,
    method_at,
    segments,
)
from commtune.sample._families import (
    AGGREGATION,
    ALGORITHM,
    BURST,
    EAGER,
    IOV,
    PACK,
    PACK_OR_IOV,
    PROTOCOL,
    RENDEZVOUS,
    SEPARATE,
    SINGLE_COPY,
    VECTOR,
)

FORMAT = "commtune-platform"
VERSION = 1


@dataclass
class FamilyCurves:
    """The sampled curves of one family (see :mod:`._families`)."""

    op: str
    name: str
    knob: str
    default: str
    env: dict[str, str]  # the environment the curves were measured under
    curves: dict[str, Curve]
    failed: dict[str, str] = field(default_factory=dict)  # method -> why it could not run
    values: dict[str, int] = field(default_factory=dict)  # algorithm -> the library's number

    @property
    def key(self) -> str:
        return f"{self.op}/{self.name}"

    def candidates(self, vendor: str) -> list[Curve]:
        """Curves a choice may pick. Where the library's default algorithm has no name in a
        selection file (MPICH's ``auto``), an algorithm family chooses among the named
        algorithms only, less those a file must not name. The protocol curves
        are compared above the smallest eager limit only: below it both runs send eagerly
        and differ by fragment size, not protocol."""
        impl = Vendor(vendor).impl
        if self.name == ALGORITHM and not impl.default_algorithm_named:
            unsafe = (self.default, *impl.unsafe_in_selection)
            return [c for m, c in self.curves.items() if m not in unsafe]
        if self.name == PROTOCOL:
            low = min(v for v in load_catalog(vendor)[self.knob].domain() if isinstance(v, int))
            return [c.restricted(low) for c in self.curves.values()]
        return list(self.curves.values())

    def segments(self, vendor: str) -> list[Segment]:
        curves = self.candidates(vendor)
        prefer = self.default if self.default in self.curves else None
        return segments(curves, prefer) if curves else []

    def crossings(self) -> list[Crossing]:
        names = sorted(self.curves)
        out: list[Crossing] = []
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                out += crossings(self.curves[a], self.curves[b])
        return sorted(out, key=lambda c: c.size)

    def differs(self, run: int = 2) -> bool:
        """Whether one of its methods beats another beyond noise (``TIE`` or the measured
        spread of either, whichever is larger) at ``run`` adjacent sizes or more: one size
        alone may be noise (seen: 1.07-1.12x at single sizes between methods that do the
        same thing)."""
        streak, last = 0, None
        for size in sorted({s for c in self.curves.values() for s in c.sizes}):
            times = {m: t for m, c in self.curves.items() if (t := c.at(size)) is not None}
            fast = min(times, key=times.__getitem__) if len(times) > 1 else None
            if fast is not None:
                slow = max(times, key=times.__getitem__)
                noise = max(TIE, self.curves[fast].spread(size), self.curves[slow].spread(size))
                if times[slow] <= times[fast] * (1 + noise):
                    fast = None
            streak = streak + 1 if fast is not None and fast == last else int(fast is not None)
            last = fast
            if streak >= run:
                return True
        return False

    def best_overall(self) -> str | None:
        """For a knob that takes one value for every size (the single-copy mechanism): the
        method with the smallest geometric-mean slowdown against the per-size best; the
        default when it is within noise of that."""
        if not self.curves:
            return None
        best: dict[int, float] = {}
        for c in self.curves.values():
            for s, t in zip(c.sizes, c.times, strict=True):
                best[s] = min(best.get(s, math.inf), t)
        ratios = {m: geometric_mean_ratio(c, best) for m, c in self.curves.items()}
        winner = min(ratios, key=lambda m: ratios[m])
        if self.default in ratios and ratios[self.default] <= ratios[winner] * (1 + TIE):
            return self.default
        return winner

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "family": self.name,
            "knob": self.knob,
            "default": self.default,
            "env": self.env,
            "curves": {m: c.to_json() for m, c in self.curves.items()},
            "failed": self.failed,
            "values": self.values,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FamilyCurves:
        return cls(
            data["op"],
            data["family"],
            data["knob"],
            data["default"],
            dict(data["env"]),
            {m: Curve.from_json(m, c) for m, c in data["curves"].items()},
            dict(data.get("failed", {})),
            {m: int(v) for m, v in data.get("values", {}).items()},
        )


def nearest_value(knob: Knob, size: float, at_least: bool = False) -> Value:
    """The knob's domain value closest to ``size`` (in log space for power-of-two knobs);
    ``at_least``: the smallest not below it (the largest value when all are)."""
    domain = [v for v in knob.domain() if isinstance(v, int) and not isinstance(v, bool)]
    if at_least:
        return min((v for v in domain if v >= size), default=max(domain))
    if knob.type is KnobType.LOG2:
        return min(domain, key=lambda v: abs(math.log(v) - math.log(max(size, 1))))
    return min(domain, key=lambda v: abs(v - size))


@dataclass
class PlatformProfile:
    fingerprint: Fingerprint
    ranks: int
    quick: bool
    families: list[FamilyCurves]
    wall_seconds: float = 0.0
    created: float = field(default_factory=time.time)
    # knob -> why its sampled value is not handed back: timed against the library's own
    # value (``sample verify``), it was slower where the two differ
    vetoed: dict[str, str] = field(default_factory=dict)

    @property
    def vendor(self) -> str:
        return self.fingerprint.mpi_vendor

    def family(self, op: str, name: str) -> FamilyCurves | None:
        return next((f for f in self.families if f.op == op and f.name == name), None)

    # -- decisions ----------------------------------------------------------------------------
    def config(self) -> dict[str, Value]:
        """Knob values that follow from the samples: the single-copy mechanism, the eager
        limit at the eager/rendezvous threshold, the IOV density at the pack/iovec one and
        the largest message aggregated (nearest values of the knobs' domains)."""
        catalog = load_catalog(self.vendor)
        out: dict[str, Value] = {}
        copy = self.family("pingpong", SINGLE_COPY)
        if copy is not None and (chosen := copy.best_overall()) is not None:
            out[copy.knob] = catalog[copy.knob].to_internal(chosen)
        threshold = self.eager_threshold()
        protocol = self.family("pingpong", PROTOCOL)
        if protocol is not None and threshold is not None:
            out[protocol.knob] = nearest_value(catalog[protocol.knob], threshold)
        vector = self.family(VECTOR, PACK_OR_IOV)
        if vector is not None and (block := self.iov_threshold()) is not None:
            # blocks of at least the value are handed over: the first one past the crossing
            out[vector.knob] = nearest_value(catalog[vector.knob], block, at_least=True)
        burst = self.family(BURST, AGGREGATION)
        if burst is not None and (largest := self.aggregation_limit()) is not None:
            out[burst.knob] = nearest_value(catalog[burst.knob], largest)
        return {k: v for k, v in out.items() if k not in self.vetoed}

    def aggregation_limit(self) -> float | None:
        """Message size from which small messages sent back to back are faster sent each
        alone than aggregated (where the last range of ``separate`` starts): the largest a
        transport should aggregate. None when not sampled, when aggregating wins at the
        largest size sampled, or when the two never differ beyond noise (the library's value
        stays)."""
        fam = self.family(BURST, AGGREGATION)
        if fam is None or len(fam.curves) < 2 or not fam.differs():
            return None
        segs = fam.segments(self.vendor)
        return segs[-1].low if segs[-1].method == SEPARATE else None

    def iov_threshold(self) -> float | None:
        """Block length from which non-contiguous data is faster handed over as a list of
        blocks (iovec) than packed (NewMadeleine's copy threshold): where the last range of
        ``iov`` starts; above the largest block sampled when packing wins at the longest. None
        when not sampled, or when the two never differ beyond noise: then nothing says the
        library's own threshold is wrong, and it stays."""
        fam = self.family(VECTOR, PACK_OR_IOV)
        if fam is None or set(fam.curves) != {PACK, IOV} or not fam.differs():
            return None
        segs = fam.segments(self.vendor)
        if segs[-1].method != IOV:
            return 2.0 * max(fam.curves[PACK].sizes)
        return segs[-1].low

    def eager_threshold(self) -> float | None:
        """Size from which rendezvous beats eager: the end of the eager range (the sampled
        range's ends when one protocol wins everywhere)."""
        protocol = self.family("pingpong", PROTOCOL)
        if protocol is None or len(protocol.curves) < 2:
            return None
        segs = protocol.segments(self.vendor)
        for seg in segs:
            if seg.method == RENDEZVOUS:
                return seg.low
        if all(s.method == EAGER for s in segs):
            return float(max(protocol.curves[EAGER].sizes))
        return None

    def algorithm_segments(self) -> dict[str, list[Segment]]:
        """Collective -> its chosen algorithm per size range."""
        return {f.op: f.segments(self.vendor) for f in self.families if f.name == ALGORITHM}

    def predictions(self, size: float) -> list[dict[str, Any]]:
        """Per family at ``size``: the chosen method, its predicted time, every method's."""
        rows = []
        for fam in self.families:
            segs = fam.segments(self.vendor)
            if not segs:
                continue
            chosen = method_at(segs, size)
            rows.append(
                {
                    "op": fam.op,
                    "family": fam.name,
                    "chosen": chosen,
                    "time_ns": fam.curves[chosen].predict(size),
                    "methods": {m: c.predict(size) for m, c in sorted(fam.curves.items())},
                }
            )
        return rows

    # -- storage ------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "fingerprint": self.fingerprint.to_json(),
            "ranks": self.ranks,
            "quick": self.quick,
            "wall_seconds": self.wall_seconds,
            "created": self.created,
            "families": [f.to_json() for f in self.families],
            "vetoed": self.vetoed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlatformProfile:
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise UsageError("stored platform profile has an unknown format; sample with --refresh")
        return cls(
            Fingerprint(**data["fingerprint"]),
            int(data["ranks"]),
            bool(data["quick"]),
            [FamilyCurves.from_json(f) for f in data["families"]],
            float(data.get("wall_seconds", 0.0)),
            float(data.get("created", 0.0)),
            {str(k): str(v) for k, v in data.get("vetoed", {}).items()},
        )

    def summary(self) -> dict[str, Any]:
        """What ``--json`` reports: thresholds, the chosen method per size, the configuration."""
        fams = []
        for f in self.families:
            segs = f.segments(self.vendor)
            fams.append(
                {
                    "op": f.op,
                    "family": f.name,
                    "knob": f.knob,
                    "methods": sorted(f.curves),
                    "failed": f.failed,
                    "crossings": [c.to_json() for c in f.crossings()],
                    "segments": [s.to_json() for s in segs],
                    "chosen_per_size": {
                        str(s): method_at(segs, s)
                        for s in sorted({s for c in f.curves.values() for s in c.sizes})
                    },
                }
            )
        return {
            "platform": self.fingerprint.key,
            "fingerprint": self.fingerprint.to_json(),
            "ranks": self.ranks,
            "quick": self.quick,
            "wall_seconds": round(self.wall_seconds, 2),
            "eager_threshold": self.eager_threshold(),
            "iov_threshold": self.iov_threshold(),
            "aggregation_limit": self.aggregation_limit(),
            "config": self.config(),
            "vetoed": self.vetoed,
            "families": fams,
        }
