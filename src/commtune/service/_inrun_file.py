"""An in-run race's answer by message size, as the library's own selection file (issue 95,
item 3).

The race stratifies its blocks by communicator size and message size, and each size's
choice (``tune.by_size``) is tested there at its share of the race's limit. Where the choices
differ by size (``tune.chooses_by_size``), the answer is not one algorithm but the ranges:
written here in the library's selection format by the vendor's own writer, the one
``commtune sample`` uses (Open MPI's dynamic rules, algorithm 0, the library's fixed
decision, where the reference won; MPICH's CSEL JSON extending the library's own tree, its
own subtree where the reference won), read back by the vendor's parser before it is used.
That file, exactly as exported, is what the study's whole runs test beside the defaults.

The file's text is stored with the verdict; the file itself is named by its content under
the build cache and written again wherever it is missing (``run --study``, ``export``), so a
study keeps its answer when the cache is emptied.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commtune import native
from commtune.errors import UsageError
from commtune.knobs import enumerators, selection_file_env
from commtune.mpi import Installation, RulesError, Segment, Vendor
from commtune.sample import builtin_selection
from commtune.service._race import split_name
from commtune.study import Acceptance, InRunFinding
from commtune.tune import SizeChoice, by_comm_size, chooses_by_size
from commtune.util import format_size, write_atomic


@dataclass(frozen=True)
class BySize:
    """A selection file answering ``op`` by message size: ``ranges`` per communicator size,
    the file's ``text`` (validated by the library's parser) and its ``name``."""

    vendor: str
    op: str
    name: str
    text: str
    ranges: tuple[tuple[int, tuple[Segment, ...]], ...]

    def path(self) -> Path:
        """The file, written under the build cache where it is missing (named by content:
        whoever writes it first writes it whole)."""
        target = native.cache_dir() / "selections" / self.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, self.text)
        return target

    def env(self) -> dict[str, str]:
        """The variables that load the file (Open MPI: with its dynamic rules switched on),
        with those the race ran under (MPICH: ``MPIR_CVAR_DEVICE_COLLECTIVES=none``; MPICH
        5's shared-memory collectives serve small built-in reductions before the file is
        read, and the file then changed nothing: 1.00x on ``two_sizes`` beside 1.30x for the
        single algorithm, which sets it)."""
        impl = Vendor(self.vendor).impl
        return {**impl.race_env, **selection_file_env(impl, str(self.path()))}

    def says(self) -> str:
        """The ranges in words (``allreduce by message size, on 2 ranks: 0 B to 8 KiB ring,
        8 KiB+ ignore``)."""
        parts = []
        for ranks, segs in self.ranges:
            said = ", ".join(f"{_span(s)} {s.method}" for s in segs)
            parts.append(f"on {ranks} ranks: {said}")
        return f"{self.op} by message size, " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"vendor": self.vendor, "op": self.op, "name": self.name, "text": self.text,
                "ranges": [{"ranks": n, "ranges": [s.to_json() for s in segs]}
                           for n, segs in self.ranges]}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BySize:
        ranges = tuple((int(r["ranks"]), tuple(map(_segment, r["ranges"])))
                       for r in data["ranges"])  # fmt: skip
        return cls(str(data["vendor"]), str(data["op"]), str(data["name"]), str(data["text"]),
                   ranges)  # fmt: skip


def _segment(data: Mapping[str, Any]) -> Segment:
    high = data["to"]
    return Segment(float(data["from"]), None if high is None else float(high), str(data["method"]))


def _span(seg: Segment) -> str:
    low = format_size(int(seg.low))
    return f"{low}+" if seg.high is None else f"{low} to {format_size(int(seg.high))}"


def by_size_file(inst: Installation, op: str, knob: str, reference: str,
                 choices: Sequence[SizeChoice],
                 header: str) -> tuple[BySize | None, str | None]:  # fmt: skip
    """The selection file of ``choices`` where they differ by size, and why none where they
    do but the library's file cannot say them (None, None: one algorithm or none chose)."""
    segs = by_comm_size(choices, op, reference)
    if not chooses_by_size(segs, reference):
        return None, None
    methods = {s.method for ranges in segs.values() for s in ranges}
    sized = sorted(m for m in methods if split_name(m)[1] is not None)
    if sized:
        return None, (f"{op}: the choice by size names segment sizes ({', '.join(sized)}), "
                      "which commtune does not write in a selection file yet")  # fmt: skip
    impl = inst.impl
    names = enumerators(inst).get(knob, ())
    numbers = {op: {n: i for i, n in enumerate(names)}}
    try:
        builtin = builtin_selection(inst)
        texts: dict[int, str] = {}
        for ranks, ranges in segs.items():
            written = impl.write_selection({op: ranges}, numbers, ranks, header, builtin)
            if written.warnings:  # the library's file could not say the ranges as they are
                return None, "; ".join(written.warnings)
            texts[ranks] = written.text
        text = next(iter(texts.values())) if len(texts) == 1 else impl.merge_selections(
            texts, builtin)  # fmt: skip
    except (RulesError, KeyError) as exc:
        return None, f"{op}: the choice by size cannot be written as {impl.title}'s file: {exc}"
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    stem, _, suffix = impl.selection_file_name.rpartition(".")
    name = f"{stem}-{digest}.{suffix}"
    kept = tuple((n, tuple(s)) for n, s in segs.items())
    return BySize(impl.vendor.value, op, name, text, kept), None


def file_of(acc: Acceptance) -> BySize | None:
    """The selection file a verdict hands back (None: it hands back knobs only)."""
    found = acc.finding_of(InRunFinding)
    if found is None or not found.selection or not acc.accepted:
        return None
    return BySize.from_json(found.selection)


def handed_env(acc: Acceptance) -> dict[str, str]:
    """The variables a verdict hands back beyond its knobs, its selection file written
    again first where it is missing (the build cache emptied since, or moved)."""
    file = file_of(acc)
    return file.env() if file is not None else dict(acc.env)


def selection_text(acc: Acceptance | None, study: str, library: str, onto: str | None) -> str:
    """``export --format selection``: the selection file study ``study``'s verdict ``acc``
    hands back, or ``onto`` (a site-wide one, ``commtune sample``'s) with its collective
    replaced by it; UsageError in one line where there is none or ``onto`` is unreadable."""
    file = file_of(acc) if acc is not None else None
    if file is None:
        raise UsageError(f"study {study!r} hands back no selection file (its answer is not by "
                         "message size): --format env writes its settings")  # fmt: skip
    if onto is None:
        return file.text
    try:
        base = Path(onto).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--onto {onto}: cannot read it ({exc})") from None
    try:
        return Vendor(library).impl.overlay_selection(base, file.text, [file.op])
    except RulesError as exc:
        raise UsageError(
            f"--onto {onto}: not a selection file this library reads ({exc})"
        ) from None
