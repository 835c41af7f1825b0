"""Knob: one tunable run-time parameter; Space: the knobs under tuning with their domains.

A knob's *value* is what the library reads (an int, a bool or a string). Its *internal* value
is what the search sees: for ``log2`` knobs the exponent, so samplers treat powers of two as an
ordered integer range; for every other type the value itself. A ``log2`` knob's default need
not be a power of two (Open MPI's segment sizes default to 0, "no segmentation"; UCX's
thresholds to "auto"; MPICH's queue cell is 68 KiB): its internal value is then -1, below
every exponent.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from commtune.errors import UsageError
from commtune.knobs._way import Apply
from commtune.util import parse_size

Value = int | bool | str


class KnobType(enum.Enum):
    BOOL = "bool"
    INT = "int"
    LOG2 = "log2-int"
    CATEGORICAL = "categorical"


_VERSION_OPS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a[: len(b)] == b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def version_in(version: str, spec: str) -> bool:
    """Whether ``version`` (``5.0.11``) satisfies every clause of ``spec`` (``">=4.1,<5"``);
    a clause's version compares on its own components (``<5``: any 4.x)."""
    have = _version_tuple(version)
    for clause in spec.split(","):
        clause = clause.strip()
        op = next((o for o in _VERSION_OPS if clause.startswith(o)), None)
        if op is None:
            raise ValueError(f"bad version clause {clause!r} (expected e.g. >=5 or <4.1)")
        want = _version_tuple(clause[len(op) :])
        if not want:
            raise ValueError(f"bad version clause {clause!r}")
        if not _VERSION_OPS[op](have[: len(want)], want):
            return False
    return True


@dataclass(frozen=True)
class Knob:
    """One parameter of one MPI library, as declared in ``knobs/data/<library>.json``.

    ``low``/``high`` bound INT knobs (values) and LOG2 knobs (values, powers of two);
    ``choices`` lists CATEGORICAL values. ``step`` is the AITuning step: the amount one
    up/down action moves an INT knob (LOG2 knobs step by one power of two).
    ``requires`` are other variables this knob needs to take effect (Open MPI's algorithm
    variables need ``coll_tuned_use_dynamic_rules=1``); they are set whenever the knob is.
    ``apply`` names the way the knob reaches the library (``knobs._apply``).
    """

    name: str
    library: str
    type: KnobType
    default: Value
    description: str
    env: str
    presets: tuple[str, ...] = ()
    low: int | None = None
    high: int | None = None
    step: int = 1
    choices: tuple[str, ...] = ()
    requires: Mapping[str, str] = field(default_factory=dict)
    apply: Apply = Apply.ENV
    default_space: bool = False
    requires_device: str | None = None
    # The library versions that have this variable (``">=5"``, ``"<5"``, ``">=4.1,<5"``):
    # a knob renamed between versions is two knobs, one for each side.
    versions: str | None = None
    # Not in the catalog: made from a variable the installed library reports (``--knob`` of
    # any variable); a study stores its definition with its space.
    adhoc: bool = False
    # The MPI_T variable that reads it back where that is not the vendor's rule (Intel MPI's
    # aliases); "" where MPI_T cannot read it back (Intel MPI's text variables).
    mpit: str | None = None
    # Narrower domains of some versions: (versions, low, high) with None for a bound kept
    # (MPICH 5 aborts above its pack buffer where 4.0 took any cell size).
    bounds: tuple[tuple[str, int | None, int | None], ...] = ()
    # Where the ranks run (process binding): read back from each rank's CPU set.
    binding: bool = False
    # What the library takes beyond the search domain (low/high, choices), so that a value
    # a user sets by hand or a recorded table holds is never refused when the library takes
    # it: ``words``, text values besides numbers (UCX's "inf", "auto"); ``any_size``, any
    # size, not only the domain's powers of two; ``items``, any comma list of these (UCX_TLS's
    # transports, "^" or a backslash before one as UCX allows). The domains of UCX's own variables
    # come from ``ucx_info`` (``knobs._discovery``), the catalog's where it is not there.
    words: tuple[str, ...] = ()
    any_size: bool = False
    items: tuple[str, ...] = ()
    # The MPI operation whose algorithm (or segment size) it selects, lower case without
    # ``MPI_``: "alltoallv", "reduce_scatter_block", "iallreduce" (the profile's guide).
    collective: str | None = None

    def at_version(self, version: str) -> Knob:
        """The knob as the library at ``version`` takes it (its ``bounds``)."""
        low, high = self.low, self.high
        for versions, lo, hi in self.bounds:
            if version_in(version, versions):
                low = lo if lo is not None else low
                high = hi if hi is not None else high
        return self if (low, high) == (self.low, self.high) else replace(self, low=low, high=high)

    def to_json(self) -> dict[str, Any]:
        """The knob as a catalog entry (what ``knobs._catalog.knob_from_json`` reads)."""
        entry: dict[str, Any] = {
            "name": self.name,
            "type": self.type.value,
            "default": self.default,
            "description": self.description,
            "env": self.env,
            "apply": self.apply.value,
        }
        if self.low is not None:
            entry.update(low=self.low, high=self.high, step=self.step)
        if self.choices:
            entry["choices"] = list(self.choices)
        if self.mpit is not None:
            entry["mpit"] = self.mpit
        return entry

    def in_version(self, version: str) -> bool:
        """Whether the library at ``version`` has this knob (``versions``)."""
        return self.versions is None or version_in(version, self.versions)

    # -- values -------------------------------------------------------------------------------
    def domain(self) -> list[Value]:
        """Every value of the knob, in order (the grid of an exhaustive search)."""
        if self.type is KnobType.BOOL:
            return [False, True]
        if self.type is KnobType.CATEGORICAL:
            return list(self.choices)
        assert self.low is not None and self.high is not None
        if self.type is KnobType.LOG2:
            return [1 << e for e in range(self.low.bit_length() - 1, self.high.bit_length())]
        return list(range(self.low, self.high + 1, self.step))

    def parse(self, text: str) -> Value:
        """Parse a value given on the command line or read from a file; UsageError if invalid."""
        text = text.strip()
        if text == self.format(self.default):
            return self.default
        if self.type is KnobType.BOOL:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise UsageError(f"knob {self.name}: {text!r} is not a boolean (use 0/1/true/false)")
        if self.type is KnobType.CATEGORICAL:
            if text not in self.choices and not self._listed(text):
                raise UsageError(
                    f"knob {self.name}: value {text!r} is outside its domain "
                    f"({', '.join(self.choices)})"
                )
            return text
        if text in self.words:
            return text
        try:
            number = parse_size(text)
        except ValueError:
            try:  # a negative number: outside the domain, said by check()
                number = int(text, 0)
            except ValueError:
                raise UsageError(f"knob {self.name}: {text!r} is not an integer") from None
        self.check(number)
        return number

    def check(self, value: Value) -> None:
        """UsageError unless ``value`` is in the domain (the default always is)."""
        if value == self.default and type(value) is type(self.default):
            return
        if isinstance(value, str) and (value in self.words or self._listed(value)):
            return
        if self.any_size and isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise UsageError(f"knob {self.name}: value {value} is not a size")
            return
        if self.type in (KnobType.INT, KnobType.LOG2):
            assert self.low is not None and self.high is not None
            if isinstance(value, bool) or not isinstance(value, int):
                raise UsageError(f"knob {self.name}: {value!r} is not an integer")
            if not self.low <= value <= self.high:
                raise UsageError(
                    f"knob {self.name}: value {value} is outside its domain "
                    f"[{self.low}, {self.high}]"
                )
            if self.type is KnobType.LOG2 and value & (value - 1):
                raise UsageError(f"knob {self.name}: value {value} is not a power of two")
            if self.type is KnobType.INT and (value - self.low) % self.step:
                raise UsageError(
                    f"knob {self.name}: value {value} is not on its step {self.step} "
                    f"from {self.low}"
                )
        elif value not in self.domain():
            raise UsageError(f"knob {self.name}: value {value!r} is outside its domain")

    def _listed(self, text: str) -> bool:
        """Whether ``text`` is a comma list of ``items`` (each may start with ^ or a backslash)."""
        words = [w.strip().lstrip("^\\") for w in text.split(",")]
        return bool(self.items) and all(w in self.items for w in words)

    def format(self, value: Value) -> str:
        """The value as the library reads it from the environment or a file."""
        if isinstance(value, bool):
            return "1" if value else "0"
        return str(value)

    def to_internal(self, value: Value) -> Value:
        """The value the search sees (LOG2: the exponent; the default, when it is not a
        power of two, -1; a word the library takes, -2 - its index; another size, -10 -
        the size: each its own, and reversible)."""
        if self.type is KnobType.LOG2:
            odd = not isinstance(value, int) or value <= 0 or value & (value - 1)
            if odd and value == self.default and type(value) is type(self.default):
                return -1  # "auto", 0, 68 KiB (see check())
            if isinstance(value, str) and value in self.words:
                return -2 - self.words.index(value)
            if not isinstance(value, int) or value <= 0 or value & (value - 1):
                return -10 - int(value) if isinstance(value, int) and value >= 0 else -1
            return value.bit_length() - 1
        return value

    def from_internal(self, internal: Any) -> Value:
        if isinstance(internal, str) and internal in self.words:
            return internal
        if self.type is KnobType.LOG2:
            exponent = int(internal)
            if exponent <= -10:
                return -10 - exponent
            if exponent <= -2 and -2 - exponent < len(self.words):
                return self.words[-2 - exponent]
            return self.default if exponent < 0 else 1 << exponent
        if self.type is KnobType.INT:
            return int(internal)
        if self.type is KnobType.BOOL:
            return bool(internal)
        return str(internal)

    def describe_domain(self) -> str:
        if self.type is KnobType.BOOL:
            return "0|1"
        if self.type is KnobType.CATEGORICAL:
            return "|".join(self.choices)
        if self.type is KnobType.LOG2:
            return f"2^k in [{self.low}, {self.high}]"
        step = f" step {self.step}" if self.step != 1 else ""
        return f"[{self.low}, {self.high}]{step}"


@dataclass(frozen=True)
class Dimension:
    """One knob under tuning; ``values`` restricts it to a list (None: its whole domain);
    ``baseline``: the value the study's reference runs with where that is not the knob's
    default (a simulated cluster's calibration pins it beside the platform)."""

    knob: Knob
    values: tuple[Value, ...] | None = None
    baseline: Value | None = None

    @property
    def reference(self) -> Knob:
        """The knob as the study's reference has it: its default the baseline, if any."""
        return self.knob if self.baseline is None else replace(self.knob, default=self.baseline)

    def candidates(self) -> list[Value]:
        return list(self.values) if self.values is not None else self.knob.domain()

    @property
    def ordinal(self) -> bool:
        """True when the candidates are ordered steps (an integer or log2 knob over its whole
        domain); a categorical or boolean knob, or a list of values, is not."""
        return self.values is None and self.knob.type in (KnobType.INT, KnobType.LOG2)

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "knob": self.knob.name,
            "values": None if self.values is None else list(self.values),
        }
        if self.knob.adhoc:  # not in any catalog: the study keeps what it is
            entry["definition"] = self.knob.to_json()
        if self.baseline is not None:
            entry["baseline"] = self.baseline
        return entry


@dataclass(frozen=True)
class Space:
    """The knobs under tuning, in a fixed order. Immutable; the study stores ``to_json()``."""

    library: str
    dimensions: tuple[Dimension, ...]

    def __post_init__(self) -> None:
        names = [d.knob.name for d in self.dimensions]
        if len(set(names)) != len(names):
            raise UsageError(f"a knob is given twice: {', '.join(sorted(names))}")

    @property
    def names(self) -> list[str]:
        return [d.knob.name for d in self.dimensions]

    def __getitem__(self, name: str) -> Dimension:
        for d in self.dimensions:
            if d.knob.name == name:
                return d
        raise KeyError(name)

    def size(self) -> int:
        total = 1
        for d in self.dimensions:
            total *= len(d.candidates())
        return total

    def defaults(self) -> dict[str, Value]:
        """The configuration the study's reference runs: every knob at its default, or at
        its baseline where one is pinned (``Dimension.baseline``)."""
        return {d.knob.name: d.reference.default for d in self.dimensions}

    def pinned(self, values: Mapping[str, str]) -> Space:
        """The space whose reference runs with ``values`` (knob -> text, e.g. what a
        calibration beside a simulated platform sets): each knob they set to another value
        than its default gets it as its baseline."""
        dims = []
        for d in self.dimensions:
            try:
                text = values.get(d.knob.name)
                value = d.knob.parse(text) if text is not None else None
            except (ValueError, UsageError):  # a value the knob cannot hold: not its baseline
                value = None
            dims.append(d if value is None or value == d.knob.default else
                        replace(d, baseline=value))  # fmt: skip
        return Space(self.library, tuple(dims))

    def internal(self, config: Mapping[str, Value]) -> dict[str, Any]:
        """A whole configuration as the strategies and Optuna see it (``Knob.to_internal``);
        KeyError where it leaves a knob out."""
        return {d.knob.name: d.knob.to_internal(config[d.knob.name]) for d in self.dimensions}

    def validate(self, config: Mapping[str, Value]) -> dict[str, Value]:
        """A complete configuration of this space with every value in its domain."""
        unknown = set(config) - set(self.names)
        if unknown:
            raise UsageError(f"knob(s) not in the space: {', '.join(sorted(unknown))}")
        out: dict[str, Value] = {}
        for d in self.dimensions:
            value = config.get(d.knob.name, d.knob.default)
            if d.values is not None and value not in d.values and value != d.knob.default:
                raise UsageError(f"knob {d.knob.name}: value {value!r} is not among {d.values}")
            d.knob.check(value)
            out[d.knob.name] = value
        return out

    def drop_values(self, bad: Mapping[str, Iterable[Value]]) -> Space:
        """This space without the values in ``bad`` (values that abort the library)."""
        dims = []
        for d in self.dimensions:
            remove = set(bad.get(d.knob.name, ()))
            if not remove:
                dims.append(d)
                continue
            kept = tuple(v for v in d.candidates() if v not in remove)
            if not kept:
                raise UsageError(f"knob {d.knob.name}: no value of its domain works here")
            dims.append(replace(d, values=kept))
        return replace(self, dimensions=tuple(dims))

    def to_json(self) -> list[dict[str, Any]]:
        return [d.to_json() for d in self.dimensions]
