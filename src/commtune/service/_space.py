"""The space of a study: the one the reference's first run, profiled, calls for where no
knob is named (``profile.guided``), and a training study's checked against it.

Several workers started at once on a new study (docs/guide/workers.md) each profile a run,
and two profiles may call for different spaces. The first to claim the study's space
(``SPACE_KEY`` in the storage's claims, one holder) keeps its own; the others wait for the
study it makes and take its space."""

from __future__ import annotations

import time
from collections.abc import Mapping

import optuna

from commtune.errors import UsageError
from commtune.knobs import Dimension, Knob, KnobStatus, Space, space_from_json
from commtune.mpi import Installation
from commtune.platform import on_testbed
from commtune.profile import Choice, guided, one_sided
from commtune.report import UI, guided_table
from commtune.service._common import load_study
from commtune.store import Store, StoreClaims, backend
from commtune.study import Plan, Scale, raw_spec, spec_of
from commtune.trial import Executor, RunRecord
from commtune.util import process_alive, worker_id

SPACE_KEY = "guided-space"  # the claim of the worker whose profile chose a new study's space
SPACE_WAIT = 600.0  # seconds a worker waits for the study of the one that chose its space


def guided_space(
    plan: Plan,
    name: str,
    inst: Installation,
    statuses: Mapping[str, KnobStatus],
    look: Executor,
    default: Space,
    ui: UI,
) -> tuple[Space, list[Choice], RunRecord | None]:
    """No knob named: the space one profiled run of the defaults (by ``look``) calls for
    (``profile.guided``), each knob with its reason, and that run (the reference's
    first); a study ``name`` resumed keeps its own space."""
    store = Store(plan.storage, create=False) if backend(plan.storage).exists() else None
    if store is not None:
        try:
            study = optuna.load_study(study_name=name, storage=store.optuna)
            knobs = {k: s.knob for k, s in statuses.items()}
            return space_from_json(inst.vendor.value, spec_of(study).space, knobs), [], None
        except KeyError:
            pass  # a new study
    ui.info("no knob named: the reference's first run (profiled) chooses the space")
    run = look.run(None, plan.reference_timeout)
    if run.profile is None or run.value is None:
        ui.warn(f"the profiled run failed ({run.failure or 'no profile'}): the default space")
        return default, [], None
    available = [s.knob for s in statuses.values() if s.available]
    choices = guided(run.profile, available, plan.across_nodes or on_testbed())
    rma = one_sided(run.profile)
    if rma >= 0.05 and not any("rma" in statuses[c.knob].knob.presets for c in choices):
        ui.info(f"one-sided calls are {rma:.0%} of MPI time; {inst.vendor.title}'s catalog "
                "has no knob of them")  # fmt: skip
    if not choices:
        ui.info("the profile calls for no knob in particular: the default space")
        return default, [], run
    theirs = _chosen_elsewhere(plan.storage, name, inst, statuses, ui)
    if theirs is not None:
        return theirs, [], run
    ui.print(guided_table(choices, "the space, from the program's profile"))
    dims = tuple(Dimension(statuses[c.knob].knob) for c in choices)
    return Space(inst.vendor.value, dims), choices, run


def _chosen_elsewhere(storage: str, name: str, inst: Installation,
                      statuses: Mapping[str, KnobStatus], ui: UI) -> Space | None:  # fmt: skip
    """None where this worker is the first to choose the new study's space (its claim);
    else the space of the study that the worker which chose it made (waited for)."""
    knobs = {k: s.knob for k, s in statuses.items()}
    return chosen_elsewhere(Store(storage), name, inst.vendor.value, knobs, SPACE_KEY,
                            "profile", ui)  # fmt: skip


def chosen_elsewhere(store: Store, name: str, library: str, knobs: Mapping[str, Knob], key: str,
                     whose: str, ui: UI) -> Space | None:  # fmt: skip
    """None where this worker is the first to claim ``key`` of new study ``name`` (it
    chooses the space, by its ``whose``: a profile, a race); else the space stored by the
    study the holder made (waited for, ``SPACE_WAIT`` s at most)."""
    claims = StoreClaims(store, name)
    deadline, said = time.monotonic() + SPACE_WAIT, False
    while True:
        holder = claims.claim(key, worker_id(), trial=None, counted=False, limit=None)
        if holder is None or holder.worker == worker_id():
            return None
        try:
            study = optuna.load_study(study_name=name, storage=store.optuna)
            if raw_spec(study.user_attrs):
                ui.info(f"study {name!r}: another worker's {whose} chose its space")
                return space_from_json(library, spec_of(study).space, knobs)
        except KeyError:
            pass  # not made yet
        if process_alive(holder.worker) is False:  # it died before making the study
            claims.release(key, holder.worker, None)
            continue
        if time.monotonic() > deadline:
            raise UsageError(f"study {name!r}: worker {holder.worker} chose its space "
                             f"and has not made the study in {SPACE_WAIT:.0f} s; use another "
                             "--study name")  # fmt: skip
        if not said:
            ui.info(f"study {name!r}: waiting for worker {holder.worker}, whose {whose} "
                    "chose its space first")  # fmt: skip
            said = True
        time.sleep(0.5)


def check_training_study(url: str, scale: Scale, space: Space) -> None:
    """``--train-from STUDY``: it exists in the storage (nothing is created to find out),
    was trained with the same template and scale names, and on these knobs."""
    assert scale.train_from is not None
    try:
        _, other = load_study(url, scale.train_from)
    except UsageError as exc:
        raise UsageError(f"--train-from: {exc}") from None
    spec = spec_of(other)
    theirs = spec.scale
    if theirs is None or not theirs.train:
        raise UsageError(f"--train-from {scale.train_from}: that study has no training runs")
    if theirs.template != scale.template or theirs.target.keys() != scale.target.keys():
        raise UsageError(
            f"--train-from {scale.train_from}: trained with another command template "
            f"({' '.join(theirs.template)})"
        )
    if spec.knob_names() != space.names:
        raise UsageError(f"--train-from {scale.train_from}: trained on other knobs")
