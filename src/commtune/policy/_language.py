"""The rule language of the policy engine (the MVAPICH2/TAU paper's JSON rules, extended).

A rule file is ``{"rules": [RULE, ...]}`` (or the list alone). A rule::

    {"name": "small-allreduce",          # how actions and errors name it
     "when": "final",                    # "final" (at MPI_Finalize, default) or "periodic"
     "pvars": ["unexpected_recvq_length"],   # the paper's list of its PVARs (optional, checked)
     "operation": {
        "condition": {"stmt": "if", "leftoperand": "ct:MPI_Allreduce.time_share",
                      "operator": ">", "rightoperand": 0.2},
        "result": RESULT,
        "else": RESULT}}                 # optional

A condition is that comparison (``operator``: ==, !=, <, <=, >, >=), or ``{"and": [...]}`` /
``{"or": [...]}`` of conditions. A RESULT is a CVAR assignment in the paper's shape
(``{"leftoperand": "MPIR_CVAR_X", "operator": "=", "rightoperand": VALUE}``), a
recommendation (``{"recommend": "text", "knob": NAME, "value": VALUE}``, knob optional), a
nested operation, or a list of results.

Operands: numbers, strings, and variables written ``KIND:NAME``:

* ``pvar:NAME[@STAT]`` an MPI_T performance variable sampled during the run;
* ``user:NAME[@STAT]`` a variable the program records (``commtune.h``);
  STAT: ``last`` (default), ``min``, ``max``, ``mean``, ``sd``, ``n`` (samples), ``sum``;
* ``ct:FIELD`` the interposer's counters, per rank (mean over ranks): ``wall_time``,
  ``mpi_time``, ``comm_time``, ``ranks``, ``cpus`` and ``node_ranks`` (rank 0's node: its
  online CPUs and the ranks on it; more ranks than CPUs is oversubscription), the features
  (``p2p_time_share``, ``coll_time_share``, ``comm_time_share``, ``p2p_bytes``,
  ``coll_bytes``), and per wrapped
  operation ``OP.calls``, ``OP.bytes``, ``OP.time``, ``OP.mean_bytes``, ``OP.time_share``
  (of the wall time), ``OP.share_at_most:N`` / ``OP.share_above:N`` (the share of its calls
  whose message size is at most / above N bytes, from the size histogram).

Errors name the file and the JSON path of what is wrong (``a.json: rules[2].operation.
condition.operator: ...``), one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commtune.errors import UsageError

OPERATORS = ("==", "!=", "<", "<=", ">", ">=")
STATS = ("last", "min", "max", "mean", "sd", "n", "sum")
WHEN = ("final", "periodic")
KINDS = ("pvar", "user", "ct")
CT_GLOBAL = (
    "wall_time",
    "mpi_time",
    "comm_time",
    "ranks",
    "cpus",
    "node_ranks",
    "p2p_time_share",
    "coll_time_share",
    "comm_time_share",
    "p2p_bytes",
    "coll_bytes",
)
CT_OP_FIELDS = ("calls", "bytes", "time", "mean_bytes", "time_share")
CT_OP_SHARES = ("share_at_most", "share_above")
# What libcommtune's periodic evaluator (native/interposer/ct_policy.c) holds and computes over
# an interval: its tables are generated from these (native/interposer/generate.py writes
# ct_language.h; `make lint` fails when it is stale), and `policy check` refuses a rule set
# beyond them instead of the C side dropping rules without a word.
CT_PERIODIC_GLOBAL = (
    "wall_time",
    "ranks",
    "cpus",
    "node_ranks",
    "p2p_time_share",
    "coll_time_share",
    "comm_time_share",
)
MAX_PERIODIC_RULES = 64
MAX_RULE_FILES = 16
VARIABLE = re.compile(r"(pvar|user|ct):(.+)")


class PolicyError(UsageError):
    """A rule file that cannot be used: the message names the file and the JSON path."""


@dataclass(frozen=True)
class Variable:
    kind: str  # pvar | user | ct
    name: str  # the PVAR or user variable, or the ct field (OP.FIELD)
    stat: str = "last"
    threshold: float | None = None  # ct share_at_most / share_above

    @property
    def text(self) -> str:
        if self.kind == "ct":
            return f"ct:{self.name}"
        return f"{self.kind}:{self.name}" + ("" if self.stat == "last" else f"@{self.stat}")

    @property
    def operation(self) -> str | None:
        """The wrapped MPI call a ``ct:OP.FIELD`` names."""
        if self.kind != "ct" or "." not in self.name:
            return None
        return self.name.split(".", 1)[0]


Operand = float | str | bool | Variable


@dataclass(frozen=True)
class Comparison:
    left: Operand
    operator: str
    right: Operand


@dataclass(frozen=True)
class Junction:
    op: str  # and | or
    parts: tuple[Condition, ...]


Condition = Comparison | Junction


@dataclass(frozen=True)
class Assign:
    cvar: str
    value: str | float | bool
    path: str


@dataclass(frozen=True)
class Recommend:
    message: str
    knob: str | None
    value: str | float | bool | None
    path: str


@dataclass(frozen=True)
class Operation:
    condition: Condition
    result: tuple[Result, ...]
    otherwise: tuple[Result, ...] = ()


Result = Assign | Recommend | Operation


@dataclass(frozen=True)
class Rule:
    name: str
    when: str
    operation: Operation
    source: str  # file
    path: str  # JSON path of the rule in its file
    pvars: tuple[str, ...] = ()

    def variables(self) -> list[Variable]:
        return list(_variables(self.operation))

    def results(self) -> list[Assign | Recommend]:
        return list(_results(self.operation))


@dataclass
class RuleSet:
    rules: list[Rule] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rules)


# -- loading ------------------------------------------------------------------------------------
def load_rules(paths: Sequence[str | Path]) -> RuleSet:
    """The rules of every file, in order (later files' rules run after earlier ones')."""
    out = RuleSet()
    for path in paths:
        out.rules.extend(parse_file(Path(path)))
    names: dict[str, str] = {}
    for rule in out.rules:
        where = f"{rule.source}: {rule.path}.name"
        if rule.name in names:
            raise PolicyError(f"{where}: rule {rule.name!r} is also defined in {names[rule.name]}")
        names[rule.name] = f"{rule.source}"
    return out


def check_periodic(rules: RuleSet, files: Sequence[str | Path]) -> None:
    """PolicyError where libcommtune's periodic evaluator could not hold the rule set read from
    ``files``: more files or periodic rules than it keeps, or a periodic rule reading a counter
    known at the end of the run only."""
    if len(files) > MAX_RULE_FILES:
        raise PolicyError(
            f"{files[MAX_RULE_FILES]}: {len(files)} rule files: libcommtune reads at most "
            f"{MAX_RULE_FILES} during a run (merge some)"
        )
    periodic = [r for r in rules.rules if r.when == "periodic"]
    if len(periodic) > MAX_PERIODIC_RULES:
        extra = periodic[MAX_PERIODIC_RULES]
        raise PolicyError(
            f"{extra.source}: {extra.path}: {len(periodic)} periodic rules: libcommtune "
            f"evaluates at most {MAX_PERIODIC_RULES} during a run"
        )
    for rule in periodic:
        for var in rule.variables():
            if var.kind == "ct" and var.operation is None and var.name not in CT_PERIODIC_GLOBAL:
                raise PolicyError(
                    f"{rule.source}: {rule.path}: ct:{var.name} is known at the end of the run "
                    f"only; a periodic rule reads {', '.join(CT_PERIODIC_GLOBAL)} or OP.FIELD"
                )


def parse_file(path: Path) -> list[Rule]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PolicyError(
            f"{path}: not JSON: {exc.msg} (line {exc.lineno} col {exc.colno})"
        ) from None
    return parse_rules(data, str(path))


def parse_rules(data: Any, source: str) -> list[Rule]:
    p = _Parser(source)
    if isinstance(data, Mapping):
        p.keys(data, "", {"rules", "description"})
        rules, base = p.need(data, "rules", ""), "rules"
    else:
        rules, base = data, ""
    if not isinstance(rules, list):
        p.fail(base, "expected a list of rules")
    return [p.rule(r, f"{base}[{i}]") for i, r in enumerate(rules)]


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> None:
        raise PolicyError(f"{self.source}: {path or '(top)'}: {message}")

    def need(self, obj: Mapping[str, Any], key: str, path: str) -> Any:
        if key not in obj:
            self.fail(path, f"missing {key!r}")
        return obj[key]

    def keys(self, obj: Any, path: str, allowed: set[str]) -> None:
        if not isinstance(obj, Mapping):
            self.fail(path, "expected an object")
        unknown = sorted(set(obj) - allowed)
        if unknown:
            self.fail(
                _join(path, unknown[0]), f"unknown key (allowed: {', '.join(sorted(allowed))})"
            )

    def rule(self, obj: Any, path: str) -> Rule:
        self.keys(obj, path, {"name", "when", "pvars", "operation", "num_pvars", "description"})
        name = self.need(obj, "name", path)
        if not isinstance(name, str) or not name:
            self.fail(_join(path, "name"), "expected a non-empty string")
        when = obj.get("when", "final")
        if when not in WHEN:
            self.fail(_join(path, "when"), f"expected one of {', '.join(WHEN)}, not {when!r}")
        pvars = obj.get("pvars", [])
        if not isinstance(pvars, list) or not all(isinstance(v, str) for v in pvars):
            self.fail(_join(path, "pvars"), "expected a list of PVAR names")
        if "num_pvars" in obj and obj["num_pvars"] != len(pvars):
            self.fail(
                _join(path, "num_pvars"), f"says {obj['num_pvars']}, pvars lists {len(pvars)}"
            )
        operation = self.operation(self.need(obj, "operation", path), _join(path, "operation"))
        rule = Rule(name, when, operation, self.source, path, tuple(pvars))
        listed = set(pvars)
        for var in rule.variables():
            if var.kind == "pvar" and listed and var.name not in listed:
                self.fail(_join(path, "pvars"), f"the rule uses {var.text} but does not list it")
        return rule

    def operation(self, obj: Any, path: str) -> Operation:
        self.keys(obj, path, {"condition", "result", "else"})
        condition = self.condition(self.need(obj, "condition", path), _join(path, "condition"))
        result = self.results(self.need(obj, "result", path), _join(path, "result"))
        otherwise = self.results(obj["else"], _join(path, "else")) if "else" in obj else ()
        return Operation(condition, result, otherwise)

    def condition(self, obj: Any, path: str) -> Condition:
        if isinstance(obj, Mapping) and len(obj) == 1 and next(iter(obj)) in ("and", "or"):
            op = next(iter(obj))
            parts = obj[op]
            if not isinstance(parts, list) or len(parts) < 1:
                self.fail(_join(path, op), "expected a non-empty list of conditions")
            return Junction(op, tuple(self.condition(c, f"{_join(path, op)}[{i}]")
                                      for i, c in enumerate(parts)))  # fmt: skip
        self.keys(obj, path, {"stmt", "leftoperand", "operator", "rightoperand"})
        if obj.get("stmt", "if") != "if":
            self.fail(_join(path, "stmt"), f"expected 'if', not {obj.get('stmt')!r}")
        operator = self.need(obj, "operator", path)
        if operator not in OPERATORS:
            self.fail(
                _join(path, "operator"), f"expected one of {' '.join(OPERATORS)}, not {operator!r}"
            )
        left = self.operand(self.need(obj, "leftoperand", path), _join(path, "leftoperand"))
        right = self.operand(self.need(obj, "rightoperand", path), _join(path, "rightoperand"))
        if not isinstance(left, Variable) and not isinstance(right, Variable):
            self.fail(
                path, "compares two constants: one operand must be a variable (pvar:, user:, ct:)"
            )
        if operator not in ("==", "!=") and any(isinstance(o, str) for o in (left, right)):
            self.fail(_join(path, "operator"), f"{operator} needs numbers, not a string")
        return Comparison(left, operator, right)

    def operand(self, value: Any, path: str) -> Operand:
        if isinstance(value, bool | int | float):
            return float(value) if not isinstance(value, bool) else value
        if not isinstance(value, str):
            self.fail(
                path, "expected a number, a string or a variable (pvar:NAME, user:NAME, ct:FIELD)"
            )
        match = VARIABLE.fullmatch(value)
        if match is None:
            return value
        kind, rest = match.groups()
        if kind == "ct":
            return self.counter(rest, path)
        name, _, stat = rest.partition("@")
        stat = stat or "last"
        if not name or stat not in STATS:
            self.fail(
                path, f"{value!r}: expected {kind}:NAME[@STAT], STAT one of {', '.join(STATS)}"
            )
        return Variable(kind, name, stat)

    def counter(self, text: str, path: str) -> Variable:
        if text in CT_GLOBAL:
            return Variable("ct", text)
        op, _, fld = text.partition(".")
        name, _, arg = fld.partition(":")
        if not op.startswith("MPI_") or not (name in CT_OP_FIELDS or name in CT_OP_SHARES):
            fields = ", ".join([*CT_GLOBAL, *(f"OP.{f}" for f in CT_OP_FIELDS),
                                *(f"OP.{f}:BYTES" for f in CT_OP_SHARES)])  # fmt: skip
            self.fail(path, f"ct:{text}: unknown counter (known: {fields})")
        threshold = None
        if name in CT_OP_SHARES:
            try:
                threshold = float(arg)
            except ValueError:
                self.fail(path, f"ct:{text}: {name} needs a size in bytes, e.g. {name}:4096")
        elif arg:
            self.fail(path, f"ct:{text}: {name} takes no argument")
        return Variable("ct", text, "last", threshold)

    def results(self, obj: Any, path: str) -> tuple[Result, ...]:
        if isinstance(obj, list):
            if not obj:
                self.fail(path, "expected at least one result")
            return tuple(r for i, o in enumerate(obj) for r in self.results(o, f"{path}[{i}]"))
        if isinstance(obj, Mapping) and "condition" in obj:
            return (self.operation(obj, path),)
        if isinstance(obj, Mapping) and "recommend" in obj:
            self.keys(obj, path, {"recommend", "knob", "value"})
            message = obj["recommend"]
            if not isinstance(message, str) or not message:
                self.fail(_join(path, "recommend"), "expected the recommendation's text")
            if ("knob" in obj) != ("value" in obj):
                self.fail(path, "a recommendation names a knob and its value, or neither")
            return (Recommend(message, obj.get("knob"), obj.get("value"), path),)
        self.keys(obj, path, {"leftoperand", "operator", "rightoperand"})
        if obj.get("operator", "=") != "=":
            self.fail(
                _join(path, "operator"), f"an assignment's operator is '=', not {obj['operator']!r}"
            )
        cvar = self.need(obj, "leftoperand", path)
        if not isinstance(cvar, str) or not cvar:
            self.fail(_join(path, "leftoperand"), "expected the name of a control variable")
        value = self.need(obj, "rightoperand", path)
        if not isinstance(value, str | int | float | bool):
            self.fail(_join(path, "rightoperand"), "expected a value (number, string, true/false)")
        return (Assign(cvar.removeprefix("cvar:"), value, path),)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _variables(node: Operation | Condition | Result) -> Any:
    if isinstance(node, Operation):
        yield from _variables(node.condition)
        for r in (*node.result, *node.otherwise):
            yield from _variables(r)
    elif isinstance(node, Junction):
        for c in node.parts:
            yield from _variables(c)
    elif isinstance(node, Comparison):
        for o in (node.left, node.right):
            if isinstance(o, Variable):
                yield o


def _results(node: Operation) -> Any:
    for r in (*node.result, *node.otherwise):
        if isinstance(r, Operation):
            yield from _results(r)
        else:
            yield r
