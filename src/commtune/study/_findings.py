"""What a verdict found, as typed records: one per gate (:class:`RiskFinding`,
:class:`ExactFinding`, :class:`StrictFinding`, :class:`InRunFinding`) and what the steps
around a verdict say beside it (:class:`Notes`). Each is frozen: a step that has more to say
makes a new one (``dataclasses.replace``).

Stored flat inside the verdict's ``extra`` object (format 2, as before the records), so that
studies written before them read the same: :func:`finding_from` and :meth:`Notes.from_json`
take their own keys from it. A field that was not measured is None (absent when stored).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from commtune.study._gate import Gate

R = TypeVar("R")

PROPOSAL = "proposal"  # the stored key of Notes.proposal


def _from(cls: type[R], data: Mapping[str, Any]) -> R:
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in names})


class _Stored:
    """A record stored as its fields' JSON, None left out."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: v for f in fields(self)  # type: ignore[arg-type]
                if (v := getattr(self, f.name)) is not None}  # fmt: skip


@dataclass(frozen=True)
class RiskFinding(_Stored):
    """``--gate risk``'s verdict (``tune._decide``; ``check`` and ``predict --verify`` say
    only its rule): the rule (``risk_limit``, ``tolerance``, ``min_gain``), every
    configuration tested (``candidates``, as ``tune._decide._listed`` writes them) and the
    test of the one handed back (``p`` at the look's ``share``, its sentence ``said``)."""

    risk_limit: float
    tolerance: float
    min_gain: float = 0.0
    candidates: Sequence[Mapping[str, Any]] = ()
    statistic: str | None = None
    arms: int | None = None  # the configurations the verdict could test
    tested: int | None = None
    twin: bool | None = None  # the arms were a simulation's ranking
    objectives: Mapping[str, Any] | None = None  # the further metrics, beside the defaults'
    p: float | None = None
    share: float | None = None  # the share of the risk the deciding look could spend
    level: float | None = None  # of the interval
    evidence_runs: int | None = None
    order: str | None = None  # of each pair's runs
    search_runs: int | None = None
    said: str | None = None
    label: str | None = None  # how the one handed back is named
    rounds: Sequence[int] | None = None  # every round with the defaults
    more_runs: int | None = None  # the runs more that would decide, where none passed


@dataclass(frozen=True)
class ExactFinding(_Stored):
    """A deterministic study's verdict (a simulation): its speedup is its runs'."""

    min_gain: float
    arms: int | None = None
    statistic: str | None = None
    said: str | None = None


@dataclass(frozen=True)
class StrictFinding(_Stored):
    """``--gate strict``'s top-k confirmation (``tune._confirm``)."""

    candidates: Sequence[Mapping[str, Any]] = ()
    statistic: str | None = None
    rounds: Sequence[int] | None = None
    mean_speedup: float | None = None
    objectives: Mapping[str, Any] | None = None
    clusters: Sequence[Mapping[str, Any]] | None = None  # the winner's runs in two modes
    search_speedup: float | None = None  # nothing confirmed: the search's own estimate


@dataclass(frozen=True)
class InRunFinding(_Stored):
    """An in-run race's verdict (``service._inrun``): the race, which chose, and the whole
    runs beside the defaults, which decided."""

    op: str
    knob: str
    reference_name: str
    limit: float  # each raced test's share of the risk
    min_gain: float
    tolerance: float
    risk: float
    raced_runs: int
    failed_runs: int = 0
    dropped: Mapping[str, str] = field(default_factory=dict)  # candidates a crash put out
    calls: Sequence[int] = ()
    walls: Sequence[float] = ()
    units: Sequence[Any] = ()
    units_max: Sequence[Any] = ()
    overhead: Sequence[Any] = ()
    fields: Sequence[Sequence[str]] = ()  # the candidates raced in each run
    fell_back: Sequence[str] = ()
    launch: Mapping[str, Any] = field(default_factory=dict)
    raced: Sequence[Mapping[str, Any]] = ()  # each candidate's pooled estimate
    passed: Sequence[str] = ()
    blocks: Mapping[str, Any] = field(default_factory=dict)  # the first run's, for the report
    promise: str | None = None  # what a raced unit's time is
    call_speedup: float | None = None  # the answer's test on the calls' time
    call_interval: Sequence[float] | None = None
    call_p: float | None = None
    call_limit: float | None = None
    call_blocks: int | None = None
    call_name: str | None = None
    share: float | None = None  # the call's share of the program's time (a profile)
    share_said: str | None = None
    whole_looks: Sequence[Sequence[float]] | None = None  # the whole runs' looks
    whole_limit: float | None = None
    whole_pairs: int | None = None
    # per message size, the race's choice (``tune.by_size``): evidence, not handed back
    by_size: Sequence[Mapping[str, Any]] = ()
    # where the choices differ by size, the selection file the whole runs tested and
    # handed back (``service._inrun_file.BySize.to_json``); empty: one algorithm or none
    selection: Mapping[str, Any] = field(default_factory=dict)


Finding = RiskFinding | ExactFinding | StrictFinding | InRunFinding

_OF_GATE: dict[Gate, type[Finding]] = {Gate.RISK: RiskFinding, Gate.EXACT: ExactFinding,
                                       Gate.INRUN: InRunFinding}  # fmt: skip
_STRICT_KEYS = {f.name for f in fields(StrictFinding)}


def finding_from(gate: Gate | None, data: Mapping[str, Any]) -> Finding | None:
    """The finding stored in ``data`` (a verdict's ``extra``) by ``gate`` (None: the strict
    confirmation's, where it stored any of its keys)."""
    if gate is None:
        return _from(StrictFinding, data) if _STRICT_KEYS & set(data) else None
    return _from(_OF_GATE.get(gate, StrictFinding), data)


@dataclass(frozen=True)
class Notes(_Stored):
    """What the steps around a verdict say beside it: ``proposal`` (a configuration no run
    has measured against the defaults yet), where it came from (a prediction's
    ``features``; a platform sample's ``ranks`` and selection ``file``; the
    ``simulated_study`` of ``--as``), what every speedup is against (``reference``), a
    twin's report, a mixed space's race (``inrun_first``), and the knobs dropped from what
    was tested (``dropped``, each with why; ``reduced_from``: what was tested)."""

    proposal: bool | None = None
    features: Mapping[str, Any] | None = None
    ranks: Sequence[int] | None = None
    file: str | None = None
    simulated_study: str | None = None
    reference: str | None = None
    twin_report: Mapping[str, Any] | None = None
    inrun_first: Mapping[str, Any] | None = None
    reduced_from: Mapping[str, Any] | None = None
    dropped: Mapping[str, str] | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], gate: Gate | None) -> Notes:
        """The notes in a verdict's ``extra`` (an in-run verdict's ``dropped`` is its
        finding's: the candidates a crash put out)."""
        if gate is Gate.INRUN:
            data = {k: v for k, v in data.items() if k not in ("dropped", "reduced_from")}
        return _from(cls, data)
