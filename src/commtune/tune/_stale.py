"""The stale check: is a study's accepted configuration still faster here and now?

A configuration is measured on one installation of one library, on one platform. After an
upgrade (a new Open MPI, UCX or MPICH), on another installation or another machine, it may
be faster still, no faster, or name a knob the library no longer has. What differs is read
from the study's record (the platform's fingerprint, the installation it ran) against this
one (:func:`differences`); a configuration naming a knob this installation lacks is refused
(``run``'s own check, before anything runs); else the configuration is run against the
library's defaults, interleaved (default and configuration in each round, which goes first
drawn by a coin: the rule's design), and judged by the tuner's rule (:mod:`commtune.rule`, the
configuration tested alone) at each of its looks: it stops as soon as the configuration
passes (*still faster*) or, from ``MIN_ROUNDS`` on, its runs show it no faster or its
interval ends below ``NEGLIGIBLE`` (*no longer faster*: slower, or at most 2 % faster);
after ``MAX_ROUNDS`` without either, it has not shown it is faster and the defaults are used
(*no longer faster*, undecided). A run that fails (of either) ends the check with
:class:`commtune.errors.RunFailed`: a run that did not run is no measurement, and nothing is
stored. The check is stored on the study (``checks``) with what it was made on; ``run``
then follows it on that installation and platform.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from commtune import rule as the_rule
from commtune.errors import RunFailed
from commtune.knobs import Value
from commtune.mpi import Installation
from commtune.platform import Fingerprint
from commtune.progress import Progress
from commtune.study import DEFAULTS
from commtune.trial import Executor
from commtune.tune._pairs import Slower, Stop, executor_runner, lone

MIN_ROUNDS = the_rule.NO_FASTER_AFTER  # the rounds before it may be called no faster
MAX_ROUNDS = 10
# A configuration whose speedup's CI ends below this is no longer worth setting.
NEGLIGIBLE = 1.02

STILL_FASTER = "still faster"
NO_LONGER_FASTER = "no longer faster"
UNCHANGED = "unchanged"

# fingerprint fields as a user reads them
_FIELDS = {
    "mpi_vendor": "library",
    "mpi_version": "library version",
    "mpi_device": "device",
    "cpu_model": "CPU",
    "cores": "cores",
    "nodes": "nodes",
}


@dataclass(frozen=True)
class Difference:
    what: str
    then: str
    now: str

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "then": self.then, "now": self.now}

    def __str__(self) -> str:
        return f"{self.what}: {self.then} -> {self.now}"


def differences(
    then_platform: Fingerprint | None,
    then_installation: Mapping[str, Any] | None,
    now_platform: Fingerprint,
    now_installation: Installation,
) -> list[Difference]:
    """What differs between where the study measured and here (nothing known: nothing)."""
    out: list[Difference] = []
    if then_platform is not None:
        for name, label in _FIELDS.items():
            a, b = getattr(then_platform, name), getattr(now_platform, name)
            if (a or None) != (b or None):
                out.append(Difference(label, str(a or "-"), str(b or "-")))
    if then_installation is not None:
        prefix = str(now_installation.prefix)
        if then_installation.get("prefix") not in (None, prefix):
            out.append(Difference("installation", str(then_installation["prefix"]), prefix))
        if then_platform is None and then_installation.get("version") != now_installation.version:
            then = str(then_installation.get("version"))
            out.append(Difference("library version", then, now_installation.version))
    return out


@dataclass
class StaleCheck:
    """One check of a study's accepted configuration, stored on the study."""

    verdict: str  # STILL_FASTER, NO_LONGER_FASTER or UNCHANGED (nothing run)
    differences: list[Difference]
    installation: dict[str, Any]  # Installation.to_json() of this check's runs
    platform: str  # fingerprint key
    speedup: float | None = None
    ci: tuple[float, float] | None = None
    rounds: int = 0
    runs: int = 0
    decided: bool = True  # False: MAX_ROUNDS passed without a clear answer
    when: float = field(default_factory=time.time)

    @property
    def use_configuration(self) -> bool:
        return self.verdict in (STILL_FASTER, UNCHANGED)

    def line(self) -> str:
        """What the user reads."""
        if self.verdict == UNCHANGED:
            return "unchanged since the study (same library, installation and platform): " \
                   "the accepted configuration stands; nothing run"  # fmt: skip
        measured = ""
        if self.speedup is not None and self.ci is not None:
            measured = f" ({self.speedup:.3f}x [{self.ci[0]:.3f}, {self.ci[1]:.3f}])"
        tail = "" if self.decided else f", undecided after {self.rounds} rounds"
        then = "the configuration is used" if self.use_configuration else "the defaults are used"
        return f"{self.verdict}{measured} in {self.runs} runs{tail}: {then}"

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "differences": [d.to_json() for d in self.differences],
            "installation": self.installation,
            "platform": self.platform,
            "speedup": self.speedup,
            "ci": list(self.ci) if self.ci else None,
            "rounds": self.rounds,
            "runs": self.runs,
            "decided": self.decided,
            "when": self.when,
            "use_configuration": self.use_configuration,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StaleCheck:
        ci = data.get("ci")
        return cls(
            str(data["verdict"]),
            [Difference(**d) for d in data.get("differences", [])],
            dict(data.get("installation", {})),
            str(data.get("platform", "")),
            data.get("speedup"),
            (float(ci[0]), float(ci[1])) if ci else None,
            int(data.get("rounds", 0)),
            int(data.get("runs", 0)),
            bool(data.get("decided", True)),
            float(data.get("when", 0.0)),
        )


def recheck(
    executor: Executor,
    config: Mapping[str, Value],
    timeout: float,
    ui: Progress,
    *,
    min_rounds: int = MIN_ROUNDS,
    max_rounds: int = MAX_ROUNDS,
    configured: Executor | None = None,
    rule: tuple[float, float, float] | None = None,
    seed: int | None = None,
) -> tuple[str, the_rule.Test | None, int, int, bool]:
    """The sequential interleaved comparison (module docstring), by the one pair runner
    (:func:`commtune.tune._pairs.lone`): (verdict, the rule's test, rounds, runs, decided); a
    run that fails raises :class:`RunFailed` (no measurement).
    ``executor`` runs the defaults, ``configured`` (the same if None) the configuration: it
    may carry variables only the configuration sets (the selection file of a sampled one).
    ``rule``: (risk, tolerance, min_gain) of the verdict checked (None: the tuner's
    defaults); ``seed``: of the coins that order each pair (None: drawn)."""
    risk, tolerance, min_gain = rule or (DEFAULTS.risk, DEFAULTS.tolerance, DEFAULTS.min_gain)
    with ui.progress("checking the configuration against the defaults", 2 * min_rounds) as bar:
        done = lone(executor_runner(executor, timeout, configured), config,
                    the_rule.looks(risk, 0, max_rounds), tolerance=tolerance, min_gain=min_gain,
                    seed=seed, bar=bar, pairs=max_rounds, hopeless=False,
                    slower=Slower(min_rounds, NEGLIGIBLE), grow=bar.grow)  # fmt: skip
    if done.failed is not None:  # no measurement: nothing is concluded from it
        raise RunFailed(done.failed.comparison())
    verdict = STILL_FASTER if done.passed else NO_LONGER_FASTER
    return verdict, done.test, done.pairs, 2 * done.pairs, done.stop is not Stop.ENDED
