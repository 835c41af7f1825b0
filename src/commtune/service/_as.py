"""``tune --as LIBRARY``: a study of a simulated cluster tuned as a real library (its
decision the reference, its algorithms the space), and its answer handed over in that
library's own settings as a proposal no real run has measured."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import optuna

from commtune.errors import UsageError
from commtune.knobs import Space
from commtune.mpi import Installation, MPIVendor, Vendor, launch_files
from commtune.report import UI
from commtune.store import Store
from commtune.study import DEFAULTS, Plan, words
from commtune.tune import TuneResult


class NothingFaithful(UsageError):
    """A space tuned as a library (``--as``) keeps no knob: none of its knobs (``knobs``,
    the simulator's names) has a choice of that library the simulator models faithfully. A
    twin ranks nothing then, and races on the machine what it could not model."""

    def __init__(self, message: str, knobs: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.knobs = knobs


def as_library(plan: Plan, inst: Installation) -> MPIVendor | None:
    """The library a study is tuned as (``--as``), checked against the installation that
    runs the command: only a simulator with a port of that library's decision stands for it."""
    if plan.as_library is None:
        return None
    library = Vendor(plan.as_library).impl
    if inst.impl.decides_as(library) is None:
        raise UsageError(f"--as {plan.as_library}: {inst.describe()} cannot stand for "
                         f"{library.title} (a simulated cluster with a port of its decision "
                         "can)")  # fmt: skip
    return library


def space_as(space: Space, inst: Installation, library: MPIVendor) -> Space:
    """``space`` as ``library`` has it: each knob restricted to the values that stand
    faithfully for one of its choices, the others left out; NothingFaithful if none is left."""
    dims = []
    for dim in space.dimensions:
        values = inst.impl.values_as(library, dim.knob.name, [str(v) for v in dim.candidates()])
        if len(values) > 1:
            dims.append(replace(dim, values=values))
    if not dims:
        raise NothingFaithful(f"--as {library.vendor.value}: none of {', '.join(space.names)} "
                              f"has an algorithm of {library.title} that {inst.impl.title} "
                              "models faithfully", tuple(space.names))  # fmt: skip
    return Space(space.library, tuple(dims))


def reference_words(inst: Installation, library: MPIVendor | None, base: Mapping[str, str]) -> str:
    """What every speedup of the study is against."""
    if library is None:
        return f"{inst.impl.title}'s defaults"
    return f"{library.title}'s own decision ({words(base)})"


def as_proposal(store: Store, name: str, result: TuneResult, inst: Installation,
                library: MPIVendor, base: Mapping[str, str], command: Sequence[str],
                plan: Plan, ui: UI) -> dict[str, Any]:  # fmt: skip
    """The answer of a study tuned as ``library``, in that library's own settings: a
    study of its own holding them as a proposal (no run of the real library has measured
    them), which ``commtune check`` measures on the real machine and ``export`` writes
    in the library's formats."""
    from commtune.knobs import apply, load_catalog
    from commtune.study import (
        Acceptance,
        Notes,
        Source,
        StudySpec,
        acceptance_of,
        save_result_study,
        set_acceptance,
    )

    acc = result.acceptance
    out: dict[str, Any] = {"library": library.vendor.value, "reference": words(base)}
    if acc is not None and acc.accepted:
        # the simulated study's own answer runs under the decision it was tuned against
        study = optuna.load_study(study_name=name, storage=store.optuna)
        stored = acceptance_of(study)
        if stored is not None and stored.accepted:
            set_acceptance(study, replace(stored, env={**base, **stored.env}))
    if acc is None or not acc.accepted:
        ui.info(f"as {library.title}: its own decision stays (nothing to hand over)")
        return {**out, "study": None, "settings": {}}
    settings = inst.impl.settings_as(library, {k: str(v) for k, v in acc.params.items()})
    catalog = load_catalog(library.vendor.value)
    env = apply([catalog[k] for k in settings], settings, library).env
    proposal = f"{name}-as-{library.vendor.value}"
    spec = StudySpec(["commtune", "tune", "--as", library.vendor.value],
                     library.vendor.value, [], "wall", 0)  # fmt: skip
    verdict = Acceptance(
        Source.SAMPLE, dict(settings), False,
        f"tuned as {library.title} on a simulated cluster (study {name}: {acc.speedup:.3g}x "
        f"against its own decision, simulated), not measured on a real machine",
        env=env, notes=Notes(proposal=True, simulated_study=name),
    )  # fmt: skip
    save_result_study(store.optuna, proposal, spec, verdict)
    fmt, file = library.settings_file
    storage = "" if plan.storage == DEFAULTS.storage else f" --storage {plan.storage}"
    launch = launch_files(command)
    ranks = f" -np {launch.ranks}" if launch.ranks else ""
    rest = list(command)[list(command).index(launch.program) :] if launch.program else []
    program = shlex.join(rest) if rest else "./app"
    ui.info(f"as {library.title}: {words(settings)} (study {proposal}, a proposal: no real run "
            f"has measured it); next, with the program built by {library.title}'s compiler "
            "wrapper:")  # fmt: skip
    ui.command(f"  commtune export {proposal}{storage} --proposal --format {fmt} "
               f"--output {file}")  # fmt: skip
    ui.command(f"  commtune check {proposal}{storage} -- {library.launcher_word}"
               f"{ranks} {program}")  # fmt: skip
    return {**out, "study": proposal, "settings": settings, "env": env}
