"""The policy engine's actions: recommendations with the setting and a ready ``tune`` line."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rich.table import Table

from commtune.policy import Action


def tune_line(action: Action, command: Sequence[str]) -> str | None:
    """``commtune tune --knob NAME=VALUE ...`` that checks a recommendation against the
    defaults on the same command (None: the recommendation names no knob)."""
    if action.target is None or action.kind != "recommend":
        return None
    value = str(action.value).lower() if isinstance(action.value, bool) else action.value
    return shlex.join(["commtune", "tune", "--knob", f"{action.target}={value}", "--trials", "2",
                       "--", *command])  # fmt: skip


def actions_table(actions: Sequence[Action], command: Sequence[str], title: str) -> Table:
    table = Table(title=title, show_lines=True)
    table.add_column("rule", style="bold")
    table.add_column("what")
    table.add_column("setting")
    table.add_column("check it with")
    for a in actions:
        setting = f"{a.target}={a.value}" if a.target is not None else ""
        table.add_row(a.rule, a.message, setting, tune_line(a, command) or "")
    return table


def runtime_table(actions: Sequence[dict[str, object]]) -> Table:
    """The periodic rules' actions during the run (the profile's ``policy.actions``)."""
    table = Table(title="policy: actions during the run")
    for column in ("time", "rule", "set", "because", "status"):
        table.add_column(column, justify="right" if column == "time" else "left")
    for a in actions:
        table.add_row(
            f"{float(a['time']):.3f} s",  # type: ignore[arg-type]
            str(a["rule"]),
            f"{a['cvar']}={a['value']}",
            str(a["trigger"]),
            str(a["status"]),
        )
    return table
