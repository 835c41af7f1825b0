"""The study record: roles, the trials as typed records (:class:`TrialRecord`), one view of a
study with its queries (:class:`StudyView`), the study's attributes and its verdict
(acceptance), as commtune writes them into Optuna's storage and reads them back."""

from commtune.study._acceptance import (
    ACCEPTANCE,
    FORMAT,
    Acceptance,
    Source,
    acceptance_of,
    raw_acceptance,
    save_result_study,
    set_acceptance,
    upgrade,
)
from commtune.study._plan import DEFAULTS, Plan
from commtune.study._record import (
    INTERRUPTED,
    Role,
    StudySpec,
    add_check,
    ask,
    checks_of,
    config_key,
    installation_of,
    platform_of,
    raw_spec,
    set_installation,
    set_spec,
    spec_of,
)
from commtune.study._scale import Scale, magnitude
from commtune.study._view import (
    Failure,
    FailureKind,
    Noise,
    StoredRun,
    StudyView,
    TrialRecord,
    TrialWriter,
    mark,
)

__all__ = [
    "ACCEPTANCE",
    "DEFAULTS",
    "FORMAT",
    "INTERRUPTED",
    "Acceptance",
    "Failure",
    "FailureKind",
    "Noise",
    "Plan",
    "Role",
    "Scale",
    "Source",
    "StoredRun",
    "StudySpec",
    "StudyView",
    "TrialRecord",
    "TrialWriter",
    "acceptance_of",
    "add_check",
    "ask",
    "checks_of",
    "config_key",
    "installation_of",
    "magnitude",
    "mark",
    "platform_of",
    "raw_acceptance",
    "raw_spec",
    "save_result_study",
    "set_acceptance",
    "set_installation",
    "set_spec",
    "spec_of",
    "upgrade",
]
