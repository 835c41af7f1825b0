"""The scale of a run: values the command is written with (``{ranks}``, ``{size}``), which
are not tuned but change what the best configuration is.

Behzad et al. train their I/O model at small scale (fewer cores, smaller files) and use it at
a larger one: the model takes the scale as inputs. A study with a scale keeps the command as
a template; ``--scale NAME=VALUE`` gives the value it is tuned at (the *target*),
``--train NAME=V1,V2`` the values of the training runs (every combination of them, names
without ``--train`` at their target value).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from commtune.errors import UsageError

# {name} in a command, not ${name} (a shell's variable)
PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
MAGNITUDE = re.compile(r"([0-9]+(?:\.[0-9]*)?)([KMGT]?)(?:i?B)?", re.IGNORECASE)


def magnitude(text: str) -> float:
    """``256K`` -> 262144: a scale value as the model's input (positive)."""
    match = MAGNITUDE.fullmatch(text.strip())
    value = float(match.group(1)) * SUFFIXES[match.group(2).upper()] if match else 0.0
    if value <= 0:
        raise UsageError(f"scale value {text!r} is not a positive number (e.g. 4, 256K, 1M)")
    return value


@dataclass(frozen=True)
class Scale:
    template: tuple[str, ...]  # the command, with {name} where a scale value goes
    target: dict[str, str]  # name -> the value tuned at
    train: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> training values
    train_from: str | None = None  # a study (same storage) whose training this one uses

    @classmethod
    def parse(
        cls,
        command: Sequence[str],
        scales: Sequence[str],
        trains: Sequence[str],
        train_from: str | None = None,
    ) -> Scale | None:
        """From ``--scale``/``--train``/``--train-from``; None when none is given (the
        command is then taken as it is, braces and all)."""
        if not scales:
            if trains or train_from:
                raise UsageError("--train and --train-from need --scale NAME=VALUE (the target)")
            return None
        target = dict(_pairs(scales, "--scale"))
        used = {m for arg in command for m in PLACEHOLDER.findall(arg)}
        for name, value in target.items():
            magnitude(value)
            if name not in used:
                raise UsageError(f"--scale {name}: the command has no {{{name}}} to put it in")
        missing = sorted(used - target.keys())
        if missing:
            raise UsageError(f"the command has {{{missing[0]}}}: give --scale {missing[0]}=VALUE")
        train: dict[str, tuple[str, ...]] = {}
        for name, values in _pairs(trains, "--train"):
            if name not in target:
                raise UsageError(f"--train {name}: no --scale {name}=VALUE names it")
            listed = tuple(v.strip() for v in values.split(",") if v.strip())
            for v in listed:
                magnitude(v)
            train[name] = tuple(dict.fromkeys(train.get(name, ()) + listed))
        if train and train_from:
            raise UsageError("give --train (train here) or --train-from STUDY, not both")
        return cls(tuple(command), target, train, train_from)

    def command(self, values: Mapping[str, str] | None = None) -> list[str]:
        """The command at ``values`` (default: the target)."""
        at = {**self.target, **(values or {})}
        return [PLACEHOLDER.sub(lambda m: at[m.group(1)], arg) for arg in self.template]

    def training_scales(self) -> list[dict[str, str]]:
        """Every combination of the training values (others at their target), in order."""
        if not self.train:
            return []
        names = list(self.train)
        return [
            {**self.target, **dict(zip(names, combo, strict=True))}
            for combo in itertools.product(*(self.train[n] for n in names))
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "template": list(self.template),
            "target": dict(self.target),
            "train": {k: list(v) for k, v in self.train.items()},
            "train_from": self.train_from,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Scale:
        return cls(
            tuple(data["template"]),
            dict(data["target"]),
            {k: tuple(v) for k, v in data.get("train", {}).items()},
            data.get("train_from"),
        )


def _pairs(items: Sequence[str], option: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not value.strip():
            raise UsageError(f"{option} {item!r}: expected NAME=VALUE")
        out.append((name, value.strip()))
    return out
