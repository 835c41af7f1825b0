"""A rule set against the installed library: every PVAR it reads, every CVAR it writes (and
whether the library lets it be written), every knob it recommends and every counter's MPI
call must exist, so that a typo is an error here and not a silent no-op at run time."""

from __future__ import annotations

import functools
import re

from commtune import native
from commtune.errors import UsageError
from commtune.knobs import list_mpit, load_catalog
from commtune.mpi import Installation, Lack
from commtune.policy._language import Assign, PolicyError, Recommend, RuleSet

READ_ONLY_SCOPES = ("constant", "readonly")


@functools.cache
def wrapped_operations() -> frozenset[str]:
    """The MPI calls libcommtune counts (``native/interposer/mpi.protos``)."""
    text = native.source_path("interposer/mpi.protos").read_text()
    return frozenset(re.findall(r"^\s*\w+\s*\|\s*int\s+(MPI_\w+)\s*\(", text, re.MULTILINE))


def check_rules(rules: RuleSet, installation: Installation) -> None:
    """PolicyError (file, JSON path, what) for the first thing the library does not have."""
    # without MPI_T (a simulator) a rule may recommend, never read or write a variable (the
    # check below names the first that does)
    no_mpit = Lack.MPI_T in installation.impl.lacks
    cvars = {} if no_mpit else {v["name"]: v for v in list_mpit(installation)}
    performance = [] if no_mpit else list_mpit(installation, performance=True)
    pvars = {str(v["name"]) for v in performance}
    catalog = load_catalog(installation.vendor.value)
    title = installation.describe()
    ops = wrapped_operations()
    for rule in rules.rules:
        where = f"{rule.source}: {rule.path}"
        for name in rule.pvars:
            if name not in pvars:
                raise PolicyError(f"{where}.pvars: {title} has no performance variable {name!r}")
        for var in rule.variables():
            if var.kind == "pvar" and var.name not in pvars:
                raise PolicyError(f"{where}: {title} has no performance variable {var.name!r}")
            op = var.operation
            if op is not None and op not in ops:
                raise PolicyError(f"{where}: ct:{var.name}: libcommtune does not count {op}")
        for result in rule.results():
            at = f"{rule.source}: {result.path}"
            if isinstance(result, Assign):
                info = cvars.get(result.cvar)
                if info is None:
                    raise PolicyError(
                        f"{at}.leftoperand: {title} has no control variable {result.cvar!r}"
                    )
                if info.get("scope") in READ_ONLY_SCOPES:
                    raise PolicyError(
                        f"{at}.leftoperand: {result.cvar} is {info['scope']} in {title}: "
                        "it cannot be written at run time"
                    )
            elif isinstance(result, Recommend) and result.knob is not None:
                knob = catalog.get(result.knob)
                if knob is None:
                    raise PolicyError(
                        f"{at}.knob: {title} has no knob {result.knob!r} in commtune's catalog"
                    )
                try:
                    knob.parse(str(result.value))
                except UsageError as exc:  # the knob's own message: outside its domain
                    raise PolicyError(f"{at}.value: {exc}") from None
