"""The values the tuning service's steps hand each other (``service._tuning``): what the
command and the plan resolve to (:class:`Setup`), then a study about to run (:class:`Ready`).
Frozen: a step that changes one makes a new one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from commtune.knobs import KnobStatus, Space
from commtune.mpi import Installation, Layer, MPIVendor, Runs
from commtune.profile import Choice
from commtune.service._observer import StudyObserver
from commtune.store import Store
from commtune.study import Plan, Scale
from commtune.trial import Executor, Objective
from commtune.tune import Target


@dataclass(frozen=True)
class Setup:
    """What the command and the plan resolve to before anything is chosen: the plan as the
    installation runs it, the command (a template's made), the installation and its knobs,
    where its runs happen (:class:`Runs`: this machine or a simulated cluster), the library
    it is tuned as (``--as``) and that library's decision as the simulator ports it (``base``)."""

    plan: Plan
    command: tuple[str, ...]
    scale: Scale | None
    inst: Installation
    statuses: Mapping[str, KnobStatus]
    runs: Runs = field(default_factory=Runs)
    layer: Layer | None = None  # the layers the run selects, as the library says
    library: MPIVendor | None = None
    base: Mapping[str, str] = field(default_factory=dict)

    @property
    def objective(self) -> Objective:
        return Objective.parse(self.plan.metric)

    @property
    def secondary(self) -> tuple[Objective, ...]:
        return tuple(Objective.parse(m) for m in self.plan.objectives)


@dataclass(frozen=True)
class Ready:
    """A study about to run: its setup (the plan named), space (and the profile's reasons
    for it), storage, target, executor and observer."""

    setup: Setup
    space: Space
    guide: tuple[Choice, ...]
    store: Store
    target: Target
    executor: Executor
    observer: StudyObserver
