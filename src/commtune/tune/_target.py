"""What the tuning loop is given: the study to tune (:class:`Target`), the one context its
steps share (:class:`Context`), and what its caller hears of and adds (:class:`Observer`).

The user's settings are one :class:`~commtune.study.Plan`, built at the edge; a ``Target``
adds what the service resolved around it (the study's name, its typed space, its stored
record, the platform); a ``Context`` adds the study being run and the seven things every
step needs. The steps (``run_reference``, ``search``, ``train``, the confirmation) take a
``Context`` and read the plan from it, never a copy of a setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from commtune.knobs import Space, Value
from commtune.progress import Progress
from commtune.study import Plan, Scale, StudySpec, TrialRecord
from commtune.trial import Executor, RunRecord
from commtune.tune._workers import Workers

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class Target:
    """One study to tune: its name, what defines it (``spec``, made from ``plan``), the
    ``space`` it searches, the user's ``plan``, and the platform and installation it runs
    on."""

    study: str
    spec: StudySpec
    space: Space
    plan: Plan
    platform: str | None = None
    installation: Mapping[str, Any] | None = None  # Installation.to_json() of its runs

    @classmethod
    def of(
        cls,
        name: str,
        command: list[str],
        space: Space,
        plan: Plan,
        platform: str | None = None,
        installation: Mapping[str, Any] | None = None,
        scale: Scale | None = None,
    ) -> Target:
        """The target of ``plan`` over ``space``, its record made from the plan."""
        spec = StudySpec.of(command, space.library, space.to_json(), plan, scale)
        return cls(name, spec, space, plan, platform, installation)


class Observer:
    """What the caller of the tuner hears of and adds: a subclass overrides what it needs."""

    def run_done(self, trial: optuna.trial.BaseTrial, index: int, run: RunRecord) -> None:
        """After every recorded run of a trial (``index`` from 0): store its profile, warn."""

    def hints(self, reference: TrialRecord) -> list[dict[str, Value]]:
        """Configurations to try first, most promising first (what earlier studies found, a
        prediction from the reference's profile, the platform's sample); asked once, when
        the reference is done."""
        return []


@dataclass(frozen=True)
class Context:
    """One run of a study: the study, its target, how its runs are made (``executor``, with
    ``timeout`` seconds each once the reference has set it), where the user hears of it
    (``ui``), the study's other workers, the caller's observer and what it hinted; the
    results it carries from one step to the next (``ranked``, ``settled``), never the plan."""

    study: optuna.Study
    target: Target
    executor: Executor
    ui: Progress
    workers: Workers
    observer: Observer
    timeout: float = 0.0
    hints: tuple[Mapping[str, Value], ...] = ()  # configurations to try first (the observer's)
    # what a simulation ranked, best first (--twin): no search, the verdict tests them in
    # that order; None: the study searches
    ranked: tuple[Mapping[str, Value], ...] | None = None
    settled: bool = False  # the reference's runs gave one value (tune._loop.exact_plan)

    @classmethod
    def solo(
        cls,
        study: optuna.Study,
        target: Target,
        executor: Executor,
        ui: Progress,
        timeout: float = 0.0,
        hints: tuple[Mapping[str, Value], ...] = (),
    ) -> Context:
        """The context of a study run by this process alone, heard by no one."""
        return cls(study, target, executor, ui, Workers.solo(study.study_name), Observer(),
                   timeout, hints)  # fmt: skip

    @property
    def plan(self) -> Plan:
        return self.target.plan

    @property
    def space(self) -> Space:
        return self.target.space

    def timed(self, timeout: float) -> Context:
        return replace(self, timeout=timeout)
