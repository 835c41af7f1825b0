"""Rules evaluated on a profile (the final rules: what the interposer knew at MPI_Finalize)
and checked against an installed library."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from commtune.policy._language import (
    Assign,
    Comparison,
    Condition,
    Junction,
    Operand,
    Operation,
    PolicyError,
    Result,
    Rule,
    RuleSet,
    Variable,
)
from commtune.profile import Profile


@dataclass(frozen=True)
class Action:
    """What a rule decided: a CVAR to set (``assign``) or a recommendation, with the values
    of the variables that triggered it."""

    rule: str
    kind: str  # assign | recommend
    target: str | None  # the CVAR, or the recommended knob
    value: Any
    message: str
    trigger: dict[str, float | None] = field(default_factory=dict)
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "kind": self.kind,
            "target": self.target,
            "value": self.value,
            "message": self.message,
            "trigger": self.trigger,
            "source": self.source,
        }


# -- values of variables in a profile -----------------------------------------------------------
def _mean(obj: Any) -> float | None:
    if isinstance(obj, Mapping):
        obj = obj.get("mean")
    return float(obj) if isinstance(obj, int | float) else None


def value_in(profile: Profile, var: Variable) -> float | None:
    """The variable's value at the end of the run (None: the run has no such value)."""
    data = profile.data
    if var.kind in ("pvar", "user"):
        entries = data.get("pvars" if var.kind == "pvar" else "user", [])
        entry = next((e for e in entries if e.get("name") == var.name), None)
        if entry is None:
            return None
        key = {"sd": "std", "n": "samples"}.get(var.stat, var.stat)
        if var.stat == "last":  # a PVAR's last reading (mean over ranks); a user variable's mean
            return _mean(entry.get("final")) if "final" in entry else _mean(entry.get("mean"))
        if var.stat == "sum" and "sum" not in entry:
            return _mean(entry.get("final", {}).get("sum") if "final" in entry else None)
        return _mean(entry.get(key))
    name = var.name
    if name in ("ranks", "cpus", "node_ranks"):
        return float(data[name]) if data.get(name) else None
    if name in ("wall_time", "mpi_time", "comm_time"):
        return _mean(data.get(name))
    if "." not in name:
        return _mean(data.get("features", {}).get(name))
    op, fld = name.split(".", 1)
    fld = fld.split(":", 1)[0]
    stats = data.get("operations", {}).get(op)
    if stats is None:  # never called
        return 0.0 if fld in ("calls", "bytes", "time", "time_share") else None
    calls = float(stats["calls"]["sum"])
    if fld in ("calls", "bytes", "time"):
        return _mean(stats[fld])
    if fld == "mean_bytes":
        return float(stats["bytes"]["sum"]) / calls if calls else None
    if fld == "time_share":
        wall = _mean(data.get("wall_time"))
        return _mean(stats["time"]) / wall if wall else None  # type: ignore[operator]
    if not calls or var.threshold is None:
        return None
    at_most = sum(s["calls"] for s in stats.get("sizes", []) if s["max"] <= var.threshold)
    share = at_most / calls
    return share if fld == "share_at_most" else 1.0 - share


def _operand(profile: Profile, o: Operand, seen: dict[str, float | None]) -> Any:
    if isinstance(o, Variable):
        v = value_in(profile, o)
        seen[o.text] = v
        return v
    return o


def holds(profile: Profile, cond: Condition, seen: dict[str, float | None]) -> bool:
    """Whether the condition holds; a comparison with a value the run does not have is false."""
    if isinstance(cond, Junction):
        parts = [holds(profile, c, seen) for c in cond.parts]  # every value recorded
        return all(parts) if cond.op == "and" else any(parts)
    assert isinstance(cond, Comparison)
    left, right = _operand(profile, cond.left, seen), _operand(profile, cond.right, seen)
    if left is None or right is None:
        return False
    try:
        return bool(
            {
                "==": lambda a, b: a == b,
                "!=": lambda a, b: a != b,
                "<": lambda a, b: a < b,
                "<=": lambda a, b: a <= b,
                ">": lambda a, b: a > b,
                ">=": lambda a, b: a >= b,
            }[cond.operator](left, right)
        )
    except TypeError:
        return False


def evaluate(rules: RuleSet, profile: Profile, when: Iterable[str] = ("final",)) -> list[Action]:
    """The actions of every rule of ``when`` on the run's profile, in rule order."""
    phases = set(when)
    out: list[Action] = []
    for rule in rules.rules:
        if rule.when in phases:
            out.extend(_run(rule, rule.operation, profile))
    return out


def _run(rule: Rule, op: Operation, profile: Profile) -> list[Action]:
    seen: dict[str, float | None] = {}
    taken = op.result if holds(profile, op.condition, seen) else op.otherwise
    out: list[Action] = []
    for result in taken:
        out.extend(_act(rule, result, profile, seen))
    return out


def _act(
    rule: Rule, result: Result, profile: Profile, seen: dict[str, float | None]
) -> list[Action]:
    if isinstance(result, Operation):
        return _run(rule, result, profile)
    if isinstance(result, Assign):
        message = f"set {result.cvar} = {result.value}"
        return [
            Action(rule.name, "assign", result.cvar, result.value, message, dict(seen), rule.source)
        ]
    message = _format(result.message, profile, seen)
    return [
        Action(rule.name, "recommend", result.knob, result.value, message, dict(seen), rule.source)
    ]


_PLACEHOLDER = re.compile(r"\{((?:pvar|user|ct):[^}]+)\}")


def _format(message: str, profile: Profile, seen: Mapping[str, float | None]) -> str:
    """``{ct:MPI_Allreduce.mean_bytes}`` in a message becomes the value."""

    def value(match: re.Match[str]) -> str:
        text = match.group(1)
        v = seen.get(text)
        if v is None:
            from commtune.policy._language import _Parser

            try:
                v = value_in(profile, _Parser("message").operand(text, "recommend"))  # type: ignore[arg-type]
            except PolicyError:
                return match.group(0)
        return "n/a" if v is None else f"{v:.4g}"

    return _PLACEHOLDER.sub(value, message)
