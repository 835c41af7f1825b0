"""What a simulated twin (``tune --twin``) said, as typed records stored beside the real
study's verdict (``Acceptance.notes.twin_report``): the simulation's ranking with what the
real runs then said of each configuration (:class:`Ranked`), the program's simulated time at
larger scales (:class:`ScalingRow`), and the whole (:class:`TwinReport`), each with
``to_json``/``from_json``. :meth:`TwinReport.lines` is the one rendering: the terminal prints
it, the HTML report shows it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

FAITHFUL = (0.8, 1.25)  # simulated over real of the defaults: a simulation near the machine


@dataclass(frozen=True)
class Ranked:
    """One configuration the simulation found faster than the library's own decision:
    ``settings`` in the real library's names, ``config`` parsed for the real study, ``sim``
    in the simulator's names, its ``simulated`` speedup; once the real runs decided,
    ``real`` (their speedup, None: not run), ``passed`` and why it was ``dropped``. Where
    the simulation cannot model it, ``source`` is ``"machine"``: raced on this machine
    (:class:`RacedSpot`), ``raced`` its speedup a call there, ``simulated`` None."""

    settings: Mapping[str, str]
    config: Mapping[str, Any]
    simulated: float | None
    sim: Mapping[str, str]
    real: float | None = None
    passed: bool = False
    dropped: str | None = None
    source: str = "simulation"
    raced: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Ranked:
        return cls(**_fields(cls, data))


@dataclass(frozen=True)
class ScalingRow:
    """The program at ``factor`` times the twin's ranks (``ranks``) on its cluster grown as
    much: simulated seconds with the library's own decision (``defaults``) and with the
    simulation's #1 (``tuned``), None where not run or failed (``failure`` says why)."""

    factor: int
    ranks: int | None = None
    defaults: float | None = None
    tuned: float | None = None
    failure: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScalingRow:
        return cls(**_fields(cls, data))


@dataclass(frozen=True)
class RacedSpot:
    """One collective raced on this machine in runs of the program (issue 78): the
    algorithms of ``knob`` the simulation does not model faithfully (``blind``) beside its
    own pick (``pick``; None: it kept the library's decision), each against the library's
    own decision call by call; the ``answer`` (of those that passed their test, the fastest;
    None: none passed), the first run's ``calls``, the real ``runs`` it took (a second where
    the first's units were too long for its calls), each candidate's ``estimates`` (speedup a
    call, interval, passed), or why it could not race (``error``)."""

    op: str
    knob: str
    blind: tuple[str, ...]
    pick: str | None = None
    answer: str | None = None
    calls: int = 0
    estimates: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    error: str | None = None
    runs: int = 1

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "blind": list(self.blind),
                "estimates": {k: dict(v) for k, v in self.estimates.items()}}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RacedSpot:
        known = _fields(cls, data)
        known["blind"] = tuple(data.get("blind") or ())
        return cls(**known)

    def line(self) -> str:
        """The race in one line."""
        if self.error:
            return f"  {self.op} ({self.knob}): not raced: {self.error}"
        said = []
        for name, e in sorted(self.estimates.items(), key=lambda kv: -kv[1]["speedup"]):
            whose = " (the simulation's)" if name == self.pick else ""
            low, high = e["interval"]
            said.append(f"{name}{whose} {e['speedup']:.3g}x [{low:.3g}, {high:.3g}]"
                         + (" passed" if e.get("passed") else ""))  # fmt: skip
        answer = (f"{self.answer}, tested first" if self.answer and self.answer != self.pick
                  else self.answer or "none passed")  # fmt: skip
        runs = f" ({self.runs} runs)" if self.runs > 1 else ""
        return f"  {self.op}, {self.calls} calls{runs}: {'; '.join(said)}; answer: {answer}"


@dataclass(frozen=True)
class TwinReport:
    """A twin's simulated study (``study``, its ``runs``, ``wall_per_run`` seconds here) and
    what it handed the real one: its ``ranking`` against ``reference``, the knobs taken
    ``from_simulation`` (pinned), searched ``on_this_machine``, ``left_to_simulation``; why it
    ranked ``nothing``; its ``scaling``; the defaults by the program's own timer
    (``defaults_simulated``, ``defaults_real``) and whether the two are near (``faithful``)."""

    study: str
    reference: str
    metric: str
    runs: int = 0
    wall_per_run: float | None = None
    ranking: tuple[Ranked, ...] = ()
    scaling: tuple[ScalingRow, ...] = ()
    from_simulation: Mapping[str, str] = field(default_factory=dict)
    on_this_machine: tuple[str, ...] = ()
    left_to_simulation: tuple[str, ...] = ()
    nothing: str | None = None
    defaults_simulated: float | None = None
    defaults_real: float | None = None
    # the algorithms of each collective knob the simulation tuned that it does not model
    # faithfully (knob -> the library's names), and what racing them on this machine said
    not_modeled: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    raced: tuple[RacedSpot, ...] = ()
    # the field the real study raced in-run (the picks, then the unmodeled): its verdict
    in_run: tuple[str, ...] = ()

    @property
    def ratio(self) -> float | None:
        """Simulated over real of the defaults, by the program's own timer."""
        if self.defaults_simulated is None or not self.defaults_real:
            return None
        return self.defaults_simulated / self.defaults_real

    @property
    def faithful(self) -> bool | None:
        """Whether the simulation stands within :data:`FAITHFUL` of the machine."""
        ratio = self.ratio
        return None if ratio is None else FAITHFUL[0] <= ratio <= FAITHFUL[1]

    def fidelity(self) -> str | None:
        """The line that says how far the simulation stands from this machine."""
        ratio = self.ratio
        if ratio is None:
            return None
        assert self.defaults_simulated is not None and self.defaults_real is not None
        line = (f"the defaults by the program's own timer: simulated {self.defaults_simulated:.4g}"
                f", real {self.defaults_real:.4g} ({ratio:.2f}x)")  # fmt: skip
        if not self.faithful:
            line += (": the simulation stands far from this machine on this program, its "
                     "ranking a guess here (calibrate the platform on this machine: commtune "
                     "calibrate)")  # fmt: skip
        return line

    def why_nothing(self) -> str | None:
        """The verdict's reason where the simulation had nothing it models to search."""
        if not self.nothing or self.in_run or any(r.answer for r in self.raced):
            return None  # what passed its race went to the verdict (or it was raced in-run)
        raced = ("; what it does not model was raced on this machine and none passed" if
                 self.raced else "")  # fmt: skip
        return (f"the simulation ranked nothing ({self.nothing}){raced}: the real runs measured "
                "the defaults only")  # fmt: skip

    def decided(self, candidates: list[Mapping[str, Any]]) -> TwinReport:
        """The report with what the real verdict said of each ranked configuration
        (``candidates``: the verdict's tested configurations, as ``--json`` lists them)."""
        import json

        def key(config: Mapping[str, Any]) -> str:
            return json.dumps(dict(config), sort_keys=True, default=str)

        tested = {key(c["params"]): c for c in candidates}
        rows = []
        for r in self.ranking:
            real = tested.get(key(r.config))
            rows.append(replace(r, real=real["speedup"] if real else None,
                                passed=bool(real and real["faster"]),
                                dropped=real.get("dropped") if real else None))  # fmt: skip
        return replace(self, ranking=tuple(rows))

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["ranking"] = [dict(r.to_json(), rank=i) for i, r in enumerate(self.ranking, 1)]
        out["scaling"] = [s.to_json() for s in self.scaling]
        out["from_simulation"] = dict(self.from_simulation)
        out["on_this_machine"] = list(self.on_this_machine)
        out["left_to_simulation"] = list(self.left_to_simulation)
        out["not_modeled"] = {k: list(v) for k, v in self.not_modeled.items()}
        out["raced"] = [r.to_json() for r in self.raced]
        out["in_run"] = list(self.in_run)
        out |= {"faithful": self.faithful, "fidelity": self.fidelity()}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TwinReport:
        known = _fields(cls, data)
        known["ranking"] = tuple(Ranked.from_json(r) for r in data.get("ranking") or ())
        known["scaling"] = tuple(ScalingRow.from_json(r) for r in data.get("scaling") or ())
        for k in ("on_this_machine", "left_to_simulation"):
            known[k] = tuple(data.get(k) or ())
        known["not_modeled"] = {k: tuple(v) for k, v in (data.get("not_modeled") or {}).items()}
        known["raced"] = tuple(RacedSpot.from_json(r) for r in data.get("raced") or ())
        known["in_run"] = tuple(data.get("in_run") or ())
        return cls(**known)

    # -- the one rendering ---------------------------------------------------------------
    def lines(self) -> list[str]:
        """What the twin said, line by line, as the terminal prints it and the report shows
        it: how near the simulation stands, its ranking beside the real runs', where each
        knob came from, and the program as it grows."""
        near = self.fidelity()
        return [*([near] if near else []), *self._raced_lines(), *self._ranking_lines(),
                *self._scaling_lines()]  # fmt: skip

    def _raced_lines(self) -> list[str]:
        if not self.raced:
            return []
        return ["raced on this machine, in-run, against the library's own decision (what "
                "the simulation does not model faithfully, beside its pick; a speedup a call):",
                *(r.line() for r in self.raced)]  # fmt: skip

    def _ranking_lines(self) -> list[str]:
        if self.nothing:
            return [
                self.why_nothing()
                or f"the simulation ranked nothing ({self.nothing}): "
                "what passed its race on this machine went to the verdict"
            ]
        if not self.ranking:
            only = "searched its knobs alone" if self.on_this_machine else (
                "measured the defaults only")  # fmt: skip
            return [f"the simulation ({self.runs} runs, study {self.study}) found nothing "
                    f"faster than {self.reference}: the real runs {only}",
                    *self._origin_lines()]  # fmt: skip
        lines = [
            f"the simulation's ranking (study {self.study}, {self.runs} runs, against "
            f"{self.reference}) and what the real runs said:",
            *self._origin_lines(),
        ]
        if self.in_run:
            lines.append(f"  raced in-run on this machine, with what it does not model: "
                         f"{', '.join(self.in_run)} (the verdict below)")  # fmt: skip
        for i, r in enumerate(self.ranking, 1):
            real = ("raced in-run" if self.in_run else "not run") if r.real is None else (
                f"real {r.real:.3g}x" + (", passed" if r.passed else
                                         f", {r.dropped or 'not passed'}"))  # fmt: skip
            said = (f"simulated {r.simulated:.3g}x" if r.simulated is not None else
                    f"raced on this machine {r.raced:.3g}x a call" if r.raced is not None else
                    "raced on this machine")  # fmt: skip
            lines.append(f"  #{i} {words(r.settings)}: {said}, {real}")
        return lines

    def _origin_lines(self) -> list[str]:
        lines = []
        if self.from_simulation:
            lines.append("  from the simulation (its #1, pinned in every real run but the "
                         f"defaults'): {words(self.from_simulation)}")  # fmt: skip
        if self.on_this_machine:
            lines.append("  searched on this machine (the simulation does not model them): "
                         f"{', '.join(self.on_this_machine)}")  # fmt: skip
        if self.left_to_simulation:
            lines.append("  asked for and modeled, so the simulation's: "
                         f"{', '.join(self.left_to_simulation)}")  # fmt: skip
        return lines

    def _scaling_lines(self) -> list[str]:
        if not self.scaling:
            return []
        tuned = bool(self.ranking)  # a #1 was run beside (its runs may have failed)
        lines = ["the program as it grows (simulated time, the library's own decision"
                 + (" -> the simulation's #1):" if tuned else "; the simulation found nothing "
                    "faster):")]  # fmt: skip
        for r in self.scaling:
            size = f"  {r.ranks} ranks (x{r.factor})" if r.ranks else f"  x{r.factor}"
            if r.defaults is None:
                lines.append(f"{size}: {r.failure}")
                continue
            said = f"{size}: {r.defaults:.4g} s"
            if r.tuned is not None:
                said += f" -> {r.tuned:.4g} s ({r.defaults / r.tuned:.3g}x)"
            elif tuned:
                said += f" -> failed: {r.failure}"
            lines.append(said)
        return lines


def words(settings: Mapping[str, str]) -> str:
    """``settings`` as one line: ``A=1, B=2``."""
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def _fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``data`` that are fields of the dataclass ``cls`` (a newer report's
    extra keys are left out)."""
    return {k: data[k] for k in cls.__dataclass_fields__ if k in data}  # type: ignore[attr-defined]
