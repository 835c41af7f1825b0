"""The services below the command line: each takes typed settings (a ``study.Plan``) and a
``Progress``, runs, and returns typed results; the command line parses, calls, prints.

``Tuning`` (``tune``), ``demo``, the hint sources a study starts from, and the steps several
commands share (naming a study, opening the storage with the platform recorded, probing knob
values, setting up libcommtune, loading a study)."""

from commtune.service._common import (
    default_study_name,
    load_study,
    measured_on,
    open_store,
    probe,
    profiling,
    study_knobs,
)
from commtune.service._demo import build_programs, demo
from commtune.service._hints import HintSource, Knowledge, Prediction, Sampled, in_space
from commtune.service._inrun_file import BySize, file_of, handed_env, selection_text
from commtune.service._layer import layer_warnings, read_layer
from commtune.service._observer import StudyObserver
from commtune.service._race import RacedRun, RaceFailed, race
from commtune.service._race import candidates as race_candidates
from commtune.service._stale import stale_check
from commtune.service._tuning import Outcome, Recorded, Tuning, check

__all__ = [
    "BySize",
    "HintSource",
    "Knowledge",
    "Outcome",
    "Prediction",
    "RaceFailed",
    "RacedRun",
    "Recorded",
    "Sampled",
    "StudyObserver",
    "Tuning",
    "build_programs",
    "check",
    "default_study_name",
    "demo",
    "file_of",
    "handed_env",
    "in_space",
    "layer_warnings",
    "load_study",
    "measured_on",
    "open_store",
    "probe",
    "profiling",
    "race",
    "race_candidates",
    "read_layer",
    "selection_text",
    "stale_check",
    "study_knobs",
]
