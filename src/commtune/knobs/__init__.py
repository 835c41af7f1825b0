"""Knobs: the catalog of tunable parameters, discovery on the installed MPI, spaces, and
the appliers that bring a configuration to the library."""

from commtune.knobs._apply import (
    APPLIERS,
    Applied,
    Applier,
    Apply,
    Check,
    apply,
    selection_file_env,
)
from commtune.knobs._catalog import LIBRARIES, PRESETS, load_catalog, with_segments
from commtune.knobs._discovery import (
    KnobStatus,
    catalog_statuses,
    discover,
    enumerators,
    installed_knobs,
    list_mpit,
)
from commtune.knobs._knob import Dimension, Knob, KnobType, Space, Value
from commtune.knobs._layer import with_layer
from commtune.knobs._select import build_space, space_from_json

__all__ = [
    "APPLIERS",
    "LIBRARIES",
    "PRESETS",
    "Applied",
    "Applier",
    "Apply",
    "Check",
    "Dimension",
    "Knob",
    "KnobStatus",
    "KnobType",
    "Space",
    "Value",
    "apply",
    "build_space",
    "catalog_statuses",
    "discover",
    "enumerators",
    "installed_knobs",
    "list_mpit",
    "load_catalog",
    "selection_file_env",
    "space_from_json",
    "with_layer",
    "with_segments",
]
