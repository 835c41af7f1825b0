"""The policy engine (MVAPICH2 + TAU): JSON rules over PVARs and the interposer's counters that
set CVARs or recommend settings. ``_language``: the rules and their errors; ``_evaluate``: the
final rules on a run's profile; ``_check``: a rule set against the installed library;
``data/``: the built-in recommendations."""

from pathlib import Path

from commtune.policy._check import check_rules, wrapped_operations
from commtune.policy._evaluate import Action, evaluate, value_in
from commtune.policy._language import (
    PolicyError,
    Rule,
    RuleSet,
    Variable,
    check_periodic,
    load_rules,
)

DATA = Path(__file__).parent / "data"
SCHEMA = DATA / "rules.schema.json"  # the rule files' JSON schema (editors; tests check it)


def builtin_path(library: str) -> Path:
    """The built-in recommendations of a library (``data/recommendations-LIBRARY.json``)."""
    return DATA / f"recommendations-{library}.json"


def builtin_rules(library: str) -> RuleSet:
    """The recommendations commtune prints after ``profile`` and ``policy run``."""
    return load_rules([builtin_path(library)])


__all__ = [
    "SCHEMA",
    "Action",
    "PolicyError",
    "Rule",
    "RuleSet",
    "Variable",
    "builtin_path",
    "builtin_rules",
    "check_periodic",
    "check_rules",
    "evaluate",
    "load_rules",
    "value_in",
    "wrapped_operations",
]
