"""What users see: the terminal (rich; a :class:`commtune.progress.Progress`), result tables
of every command, and the configuration formats of ``export``."""

from commtune.report._console import UI, Bar
from commtune.report._export import FORMATS, render
from commtune.report._predict_tables import prediction_table, train_tables
from commtune.report._profile_tables import (
    cvars_table,
    features_table,
    mpit_table,
    operations_table,
    summary_table,
    variables_table,
)
from commtune.report._rails_tables import rails_table
from commtune.report._sample_tables import checks_table, predict_table, sample_tables
from commtune.report._tables import (
    acceptance_lines,
    format_config,
    knobs_table,
    noise_line,
    result_table,
    trials_table,
)

__all__ = [
    "FORMATS",
    "UI",
    "Bar",
    "acceptance_lines",
    "checks_table",
    "cvars_table",
    "features_table",
    "format_config",
    "knobs_table",
    "mpit_table",
    "noise_line",
    "operations_table",
    "predict_table",
    "prediction_table",
    "rails_table",
    "render",
    "result_table",
    "sample_tables",
    "summary_table",
    "train_tables",
    "trials_table",
    "variables_table",
]
