"""What writing a selection file and planning a multi-rail split cost, before and after the
review of issue 25 (same inputs, the two ways interleaved in one process).

    python benchmarks/selection_costs.py [--repeats 200] [--json]

1. MPICH's selection file for five sampled collectives, from this MPICH's built-in tree (read
   from the library the sampler links): the first way copied the whole tree once per
   collective to test it and once more for the file (six deep copies); the second builds each
   collective's subtree and copies the tree once. Both texts must be equal.
2. ``rails.split`` of 8 MiB over two sampled links: the link's time as the curve's
   interpolation (first way) and as its non-decreasing envelope (second way). On monotone
   curves the chunks must be equal; reported: the cost of one split.

Each way runs ``--repeats`` times, alternating; medians with the 5th-95th percentile range.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from commtune import native
from commtune.mpi import Segment, Vendor, find_installation, linked_library
from commtune.mpi._mpich_csel import intra_subtree, validate, with_subtrees
from commtune.rails import Link, split
from commtune.sample import Curve

OPS = {
    "allreduce": ["recursive_doubling", "reduce_scatter_allgather"],
    "bcast": ["binomial", "scatter_recursive_doubling_allgather"],
    "reduce": ["binomial", "reduce_scatter_gather"],
    "allgather": ["recursive_doubling", "ring"],
    "alltoall": ["brucks", "pairwise"],
}


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _summary(seconds: list[float]) -> dict[str, float]:
    q = statistics.quantiles(seconds, n=20)
    return {"median_us": 1e6 * statistics.median(seconds), "p5_us": 1e6 * q[0],
            "p95_us": 1e6 * q[-1]}  # fmt: skip


def selection(repeats: int) -> dict[str, Any]:
    inst = find_installation(Vendor.MPICH)
    base = Vendor.MPICH.impl.builtin_selection(
        linked_library(native.build(inst, "bench/ct_sample.c"))
    )
    assert base is not None
    segs = {op: [Segment(0, 4096, a), Segment(4096, None, b)] for op, (a, b) in OPS.items()}

    def copies_per_collective() -> str:  # the way before the review
        for op, ranges in segs.items():
            with_subtrees(base, {op: intra_subtree(base, op, ranges, 2)})
        subtrees = {op: intra_subtree(base, op, r, 2) for op, r in segs.items()}
        text = json.dumps(with_subtrees(base, subtrees), indent=1)
        validate(text, base)
        return text

    def one_copy() -> str:
        text = Vendor.MPICH.impl.write_selection(segs, {op: {} for op in segs}, 2, "", base).text
        return text.rstrip("\n")

    before: list[float] = []
    after: list[float] = []
    for _ in range(repeats):
        t, a = _timed(copies_per_collective)
        before.append(t)
        t, b = _timed(one_copy)
        after.append(t)
        assert a == b
    return {"before": _summary(before), "after": _summary(after)}


def rails(repeats: int) -> dict[str, Any]:
    sizes = tuple(1 << k for k in range(0, 23, 2))
    fast = Curve("fast", sizes, tuple(5e3 + s / 0.4 for s in sizes))  # ns, 400 MB/s
    slow = Curve("slow", sizes, tuple(8e3 + s / 0.1 for s in sizes))  # ns, 100 MB/s
    raw = [Link("fast", lambda x: fast.predict(x) * 1e-9 if x > 0 else 0.0),
           Link("slow", lambda x: slow.predict(x) * 1e-9 if x > 0 else 0.0)]  # fmt: skip
    envelope = [Link.sampled("fast", fast), Link.sampled("slow", slow)]
    before: list[float] = []
    after: list[float] = []
    for _ in range(repeats):
        t, a = _timed(lambda: split(8 << 20, raw))
        before.append(t)
        t, b = _timed(lambda: split(8 << 20, envelope))
        after.append(t)
        assert a == b, (a, b)
    return {"before": _summary(before), "after": _summary(after), "chunks": a}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = {"mpich_selection": selection(args.repeats), "rails_split": rails(args.repeats)}
    if args.json:
        print(json.dumps(out))
        return
    for name, r in out.items():
        for way in ("before", "after"):
            s = r[way]
            print(f"{name:16s} {way:6s} median {s['median_us']:9.1f} us "
                  f"[{s['p5_us']:.1f}, {s['p95_us']:.1f}]")  # fmt: skip
    print(f"rails chunks (equal both ways): {out['rails_split']['chunks']}")


if __name__ == "__main__":
    main()
