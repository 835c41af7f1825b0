"""What a collective selection file is made from, whatever the library's format.

A selection file tells the library which algorithm runs a collective at each message size.
Sampling (``commtune sample``) finds the ranges; each vendor writes them in its own format
and reads the text back with a parser that follows its library's rules before it is handed
out (:meth:`commtune.mpi.MPIVendor.write_selection`).
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commtune.errors import UsageError


class RulesError(ValueError):
    """A selection file does not follow the library's format."""


@dataclass(frozen=True)
class Segment:
    """``method`` is the choice for sizes in [low, high] (high None: and above)."""

    low: float
    high: float | None
    method: str

    def to_json(self) -> dict[str, object]:
        return {"from": self.low, "to": self.high, "method": self.method}


def dominant(ranges: Sequence[Segment]) -> str:
    """The method chosen over the widest span of sampled sizes (on a log scale; the open last
    range counts one doubling): the one algorithm of a collective whose library compares no
    size, or compares one the sample is not in the terms of."""
    span: dict[str, float] = {}
    for seg in ranges:
        low = max(seg.low, 1.0)
        high = 2 * low if seg.high is None else max(seg.high, low)
        span[seg.method] = span.get(seg.method, 0.0) + math.log2(high / low) + 1e-9
    return max(span, key=lambda m: span[m])


def one_method(op: str, ranges: Sequence[Segment], why: str) -> tuple[list[Segment], str | None]:
    """``ranges`` as one open range of their :func:`dominant` method, and the warning to give
    when that drops a choice by size (``why``: what the library compares)."""
    method = dominant(ranges)
    others = sorted({s.method for s in ranges} - {method})
    said = None if not others else (
        f"{op}: {why}, so one algorithm for every size: {method} (fastest over most sampled "
        f"sizes; {', '.join(others)} won some)"
    )  # fmt: skip
    return [Segment(0.0, None, method)], said


def in_library_terms(
    segs: Mapping[str, Sequence[Segment]],
    by_size: Collection[str],
    why: str,
    one_only: Collection[str] | None = None,
    left: str = "",
) -> tuple[dict[str, Sequence[Segment]], list[str]]:
    """``segs`` as a library's selection file can say them, and the warnings: a collective in
    ``by_size`` (its file compares the size commtune samples) keeps its ranges; any other gets
    one algorithm for every size (:func:`one_method`, ``why`` saying why), or, where
    ``one_only`` lists the only collectives that can take one, is left to the library
    (``left`` saying why)."""
    out: dict[str, Sequence[Segment]] = {}
    warnings: list[str] = []
    for op, ranges in segs.items():
        if op in by_size:
            out[op] = ranges
        elif one_only is None or op in one_only:
            out[op], said = one_method(op, ranges, why)
            warnings += [said] if said else []
        else:
            warnings.append(f"{op}: {left}; {op} keeps the library's own selection")
    return out, warnings


@dataclass(frozen=True)
class Builtin:
    """A library's own selection, read from the library itself: a file must extend it
    (MPICH aborts on a collective its file leaves out). ``known``: the algorithm names its
    parser takes."""

    tree: dict[str, Any]
    known: frozenset[str]
    # The installed library's control variables (name -> value): where a file names an
    # algorithm that takes parameters (MPICH 4.1+: a tree's k), they are the library's own.
    variables: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Selection:
    """A selection file's text, validated, and what it had to leave to the library."""

    text: str
    warnings: tuple[str, ...] = ()


def linked_library(binary: Path) -> Path:
    """The MPI shared library ``binary`` is linked with (``ldd``)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        if "libmpi" in line and "=>" in line:
            return Path(line.split("=>", 1)[1].split("(")[0].strip())
    raise UsageError(f"cannot find the MPI library {binary} is linked with (ldd)")
