"""The policy engine's actions: recommendations with the setting and a ready ``tune`` line."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table

from commtune.policy import Action

if TYPE_CHECKING:
    from commtune.report._console import UI


def tune_line(action: Action, command: Sequence[str]) -> str | None:
    """``commtune tune --knob NAME=VALUE ...`` that checks a recommendation against the
    defaults on the same command (None: the recommendation names no knob)."""
    if action.target is None or action.kind != "recommend":
        return None
    value = str(action.value).lower() if isinstance(action.value, bool) else action.value
    return shlex.join(["commtune", "tune", "--knob", f"{action.target}={value}", "--trials", "2",
                       "--", *command])  # fmt: skip


def actions_table(actions: Sequence[Action], title: str) -> Table:
    """Rule, what it says and the setting, folded (never cut) to the terminal's width; the
    commands that check them are printed whole after it (:func:`show_actions`)."""
    table = Table(title=title, show_lines=True)
    table.add_column("rule", style="bold", overflow="fold")
    table.add_column("what", overflow="fold")
    table.add_column("setting", overflow="fold")
    for a in actions:
        setting = f"{a.target}={a.value}" if a.target is not None else ""
        table.add_row(a.rule, a.message, setting)
    return table


def show_actions(ui: UI, actions: Sequence[Action], command: Sequence[str], title: str) -> None:
    """The actions' table, then each ``commtune tune`` line that checks a recommendation, on
    a line of its own and whole, to copy as it is."""
    ui.print(actions_table(actions, title))
    lines = [(a.rule, line) for a in actions if (line := tune_line(a, command)) is not None]
    if lines:
        ui.info("check a recommendation against the defaults:")
    for rule, line in lines:
        ui.command(f"# {rule}")
        ui.command(line)


def action_json(action: Action, command: Sequence[str]) -> dict[str, Any]:
    """An action for ``--json``: what the terminal shows (``knob``, ``value``, ``reason``
    and the line that checks it), with the rule's own record."""
    return {
        **action.to_json(),
        "knob": action.target,
        "reason": action.message,
        "tune": tune_line(action, command),
    }


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
