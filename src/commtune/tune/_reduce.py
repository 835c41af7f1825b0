"""The smallest answer: the knobs of a configuration that do nothing measurable are dropped.

A search sets every knob of its space, and the best configuration it finds carries them all:
a held-out parallel I/O study was accepted at 1.18x with 22 knobs set, most of them hints
the library cannot verify or that do nothing on the file system. What the study measured
says which of them matter: every measured configuration's value (relative to the defaults,
the defaults themselves at 1) is fitted with an additive model on the log scale, one term
per knob value (ridge-regularised: values measured rarely stay near 0), and a knob of the
configuration whose value's term is not below its library default's by more than the
noise (``max(MIN_EFFECT, cv / 2)``, on a log scale) is dropped. A knob at its library
default is dropped without a model. Interactions the additive model cannot see are the
confirmation's to catch: the reduced configuration runs there beside the full one and is
preferred only if it is faster beyond noise too, and its speedup is within the full one's
CI (``tune._confirm``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from commtune.knobs import Knob, Value

MIN_EFFECT = 0.02  # below 2 % a knob's effect is not worth setting
RIDGE = 1.0


def reduce_config(
    config: Mapping[str, Value],
    knobs: Mapping[str, Knob],
    measured: Sequence[tuple[Mapping[str, Value], float]],
    noise_cv: float,
) -> tuple[dict[str, Value], dict[str, str]]:
    """(the configuration without the knobs that do nothing measurable, knob -> why it was
    dropped). ``measured``: (configuration, value relative to the defaults) of every
    measured configuration, the defaults ({}, 1.0) included."""
    kept: dict[str, Value] = {}
    dropped: dict[str, str] = {}
    for name, value in config.items():
        knob = knobs.get(name)
        if knob is not None and value == knob.default:
            dropped[name] = "the library's default value"
        else:
            kept[name] = value
    candidates = [n for n in kept if n in knobs]
    if not candidates or len(measured) < 3:
        return kept, dropped
    effects = _effects(candidates, kept, knobs, measured)
    threshold = max(MIN_EFFECT, noise_cv / 2)
    for name in candidates:
        effect = effects[name]  # log(time with the value) - log(time with the default)
        if effect > -math.log1p(threshold):
            gain = math.exp(-effect)
            dropped[name] = (
                f"its value measured {gain:.3f}x against the default's: not "
                f"{threshold:.0%} faster (the noise)"
            )
            del kept[name]
    return kept, dropped


def _effects(
    names: Sequence[str],
    config: Mapping[str, Value],
    knobs: Mapping[str, Knob],
    measured: Sequence[tuple[Mapping[str, Value], float]],
) -> dict[str, float]:
    """Per knob: the fitted log-time term of ``config``'s value less its default's."""
    columns: list[tuple[str, Value]] = []
    for name in names:
        values = {knobs[name].default, config[name]}
        values |= {c.get(name, knobs[name].default) for c, _ in measured}
        columns += [(name, v) for v in sorted(values, key=repr)]
    index = {col: i for i, col in enumerate(columns)}
    rows = np.zeros((len(measured), len(columns)))
    y = np.zeros(len(measured))
    for r, (c, value) in enumerate(measured):
        for name in names:
            rows[r, index[(name, c.get(name, knobs[name].default))]] = 1.0
        y[r] = math.log(max(value, 1e-12))
    y -= y.mean()
    centred = rows - rows.mean(axis=0)
    gram = centred.T @ centred + RIDGE * np.eye(len(columns))
    beta = np.linalg.solve(gram, centred.T @ y)
    return {
        n: float(beta[index[(n, config[n])]] - beta[index[(n, knobs[n].default)]]) for n in names
    }
