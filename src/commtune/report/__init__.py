"""What users see: the terminal (rich; a :class:`commtune.progress.Progress`), result tables
of every command, and the configuration formats of ``export``.

Names are imported from their modules when first used (the tables pull in numpy and the
prediction package), so that ``commtune --help``, which needs only ``FORMATS``, stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_WHERE = {
    "UI": "_console",
    "Bar": "_console",
    "FORMATS": "_export",
    "render": "_export",
    "prediction_table": "_predict_tables",
    "train_tables": "_predict_tables",
    "cvars_table": "_profile_tables",
    "features_table": "_profile_tables",
    "mpit_table": "_profile_tables",
    "operations_table": "_profile_tables",
    "summary_table": "_profile_tables",
    "variables_table": "_profile_tables",
    "action_json": "_policy_tables",
    "actions_table": "_policy_tables",
    "show_actions": "_policy_tables",
    "tune_line": "_policy_tables",
    "runtime_table": "_policy_tables",
    "rails_table": "_rails_tables",
    "calibration_lines": "_calibration",
    "calibration_plot": "_calibration",
    "calibration_table": "_calibration",
    "race_plot": "_race",
    "checks_table": "_sample_tables",
    "predict_table": "_sample_tables",
    "sample_tables": "_sample_tables",
    "simulated_sample_tables": "_sample_tables",
    "thresholds_table": "_sample_tables",
    "family_figure": "_sample_plots",
    "sample_plots": "_sample_plots",
    "acceptance_lines": "_tables",
    "inrun_table": "_tables",
    "verdict_lines": "_tables",
    "format_config": "_tables",
    "installations_table": "_tables",
    "knobs_table": "_tables",
    "by_size_table": "_tables",
    "library_variables_table": "_tables",
    "next_steps": "_tables",
    "noise_line": "_tables",
    "pareto_table": "_tables",
    "result_table": "_tables",
    "studies_table": "_tables",
    "differences_table": "_tables",
    "knowledge_table": "_tables",
    "guided_table": "_tables",
    "trials_table": "_tables",
    "collect": "_study_data",
    "page": "_html",
}

if TYPE_CHECKING:
    from commtune.report._calibration import (
        calibration_lines,
        calibration_plot,
        calibration_table,
    )
    from commtune.report._console import UI, Bar
    from commtune.report._export import FORMATS, render
    from commtune.report._html import page
    from commtune.report._policy_tables import (
        action_json,
        actions_table,
        runtime_table,
        show_actions,
        tune_line,
    )
    from commtune.report._predict_tables import prediction_table, train_tables
    from commtune.report._profile_tables import (
        cvars_table,
        features_table,
        mpit_table,
        operations_table,
        summary_table,
        variables_table,
    )
    from commtune.report._race import race_plot
    from commtune.report._rails_tables import rails_table
    from commtune.report._sample_plots import family_figure, sample_plots
    from commtune.report._sample_tables import (
        checks_table,
        predict_table,
        sample_tables,
        simulated_sample_tables,
        thresholds_table,
    )
    from commtune.report._study_data import collect
    from commtune.report._tables import (
        acceptance_lines,
        by_size_table,
        differences_table,
        format_config,
        guided_table,
        inrun_table,
        installations_table,
        knobs_table,
        library_variables_table,
        next_steps,
        noise_line,
        pareto_table,
        result_table,
        studies_table,
        trials_table,
        verdict_lines,
    )


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "FORMATS",
    "UI",
    "Bar",
    "acceptance_lines",
    "action_json",
    "actions_table",
    "by_size_table",
    "calibration_lines",
    "calibration_plot",
    "calibration_table",
    "checks_table",
    "collect",
    "cvars_table",
    "differences_table",
    "family_figure",
    "features_table",
    "format_config",
    "guided_table",
    "inrun_table",
    "installations_table",
    "knobs_table",
    "knowledge_table",
    "library_variables_table",
    "mpit_table",
    "next_steps",
    "noise_line",
    "operations_table",
    "page",
    "pareto_table",
    "predict_table",
    "prediction_table",
    "race_plot",
    "rails_table",
    "render",
    "result_table",
    "runtime_table",
    "sample_plots",
    "sample_tables",
    "show_actions",
    "simulated_sample_tables",
    "studies_table",
    "summary_table",
    "thresholds_table",
    "train_tables",
    "trials_table",
    "tune_line",
    "variables_table",
    "verdict_lines",
]
