"""``model``: Behzad et al.'s empirical performance model with prune, explore and refit.

The model is ``m(x) = sum_k beta_k prod_i x_i^p_ik`` with ``p_ik`` in {-1, 0, 1}
(``behzad-parallel-io-autotuning-models.txt`` eq. 2-3). Terms are added greedily: at each step
the term that most reduces the relative error of eq. (4), ``sum_j ((m(x_j) - y_j) / y_j)^2``,
with the coefficients of the least-squares fit of eq. (2), until the term limit, or until a term
reduces that error by less than 0.1 %. Inputs are positive numbers: a knob's value in steps
scaled to [1, 2] (integer and log2 knobs alike: ``1 + index / (levels - 1)``), and
also inputs that are not tuned (rank count, problem size), so a model fitted at a small scale
predicts a larger one. A categorical or boolean knob enters as indicator columns, one per value
but the first, each of which can multiply a term (one-hot, so one model covers every category).

The search (their Figure 1): a space-filling design; fit; *prune*: predict every configuration
of the space and keep the ``top_k`` best (default 20); *explore*: run them; *refit* with them;
run the ``top_m`` best of the refitted model (default 10). The best measured is the answer.
With budget left, the model is refitted after every batch and its best unmeasured
configurations are run.

With training runs at other scales (``--scale``/``--train``, ``tune/_train.py``) the design
is those runs: the scale values are inputs too (each over its smallest value), the first fit
predicts the target scale, and the prune, explore and refit steps run there. The target's
values and the training's are both relative to the library's defaults at their own scale.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from commtune.strategies._base import Option
from commtune.strategies._history import History, HistoryStrategy, Point

FULL_BASIS_LIMIT = 6  # up to this many numeric inputs every term of {-1,0,1}^n is a candidate


@dataclass(frozen=True)
class Term:
    powers: tuple[int, ...]  # exponent of each numeric input
    indicator: int = -1  # index of the indicator column multiplying the term, -1 for none

    def column(self, x: np.ndarray, ind: np.ndarray) -> np.ndarray:
        col = np.prod(x ** np.array(self.powers, dtype=float), axis=1)
        return col if self.indicator < 0 else col * ind[:, self.indicator]

    def describe(self, names: list[str], indicator_names: list[str]) -> str:
        parts = [n if p == 1 else f"1/{n}" for n, p in zip(names, self.powers, strict=True) if p]
        if self.indicator >= 0:
            parts.append(f"[{indicator_names[self.indicator]}]")
        return "*".join(parts) or "1"


@dataclass
class EmpiricalModel:
    terms: list[Term]
    coef: np.ndarray
    error: float  # eq. (4) at the fit

    def predict(self, x: np.ndarray, ind: np.ndarray | None = None) -> np.ndarray:
        ind = np.zeros((len(x), 0)) if ind is None else ind
        if not self.terms:
            return np.zeros(len(x))
        design = np.column_stack([t.column(x, ind) for t in self.terms])
        return np.asarray(design @ self.coef)


def candidate_terms(n_inputs: int, n_indicators: int) -> list[Term]:
    full = n_inputs <= FULL_BASIS_LIMIT
    powers = [
        p
        for p in itertools.product((-1, 0, 1), repeat=n_inputs)
        if full or sum(1 for e in p if e) <= 2
    ]
    return [Term(p, i) for i in range(-1, n_indicators) for p in powers]


def fit_model(
    x: np.ndarray, y: np.ndarray, max_terms: int = 7, ind: np.ndarray | None = None
) -> EmpiricalModel:
    """Greedy forward selection of the basis by eq. (4); least squares for the coefficients.

    ``x``: n x k positive inputs; ``y``: n positive outputs; ``ind``: n x c indicator columns.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ind = np.zeros((len(x), 0)) if ind is None else np.asarray(ind, dtype=float)
    terms = candidate_terms(x.shape[1], ind.shape[1])
    columns = np.column_stack([t.column(x, ind) for t in terms])
    scale = np.abs(columns).max(axis=0)
    usable = scale > 0
    columns = columns / np.where(usable, scale, 1.0)
    chosen: list[int] = []
    best_error = float(len(y))  # the empty model predicts 0: relative error 1 everywhere
    basis = np.zeros((len(y), 0))  # orthonormal basis of the chosen columns
    limit = min(max_terms, max(1, len(y) - 1))
    while len(chosen) < limit:
        # For every candidate at once: the least-squares fit with it added, through its part
        # orthogonal to the chosen columns, and that fit's eq. (4) error.
        ortho = columns - basis @ (basis.T @ columns)
        norms = np.einsum("ij,ij->j", ortho, ortho)
        fitted = basis @ (basis.T @ y)
        ok = usable & (norms > 1e-10 * np.einsum("ij,ij->j", columns, columns).clip(1e-300))
        ok[chosen] = False
        if not ok.any():
            break
        gain = np.where(ok, (ortho.T @ (y - fitted)) / np.where(ok, norms, 1.0), 0.0)
        predicted = fitted[:, None] + ortho * gain
        errors = np.where(ok, (((predicted - y[:, None]) / y[:, None]) ** 2).sum(axis=0), np.inf)
        j = int(np.argmin(errors))
        if errors[j] > best_error * (1 - 1e-3):
            break
        best_error = float(errors[j])
        chosen.append(j)
        basis = np.column_stack([basis, ortho[:, j] / math.sqrt(norms[j])])
    coef = np.zeros(0)
    if chosen:
        coef, *_ = np.linalg.lstsq(columns[:, chosen], y, rcond=None)
    return EmpiricalModel(
        [terms[j] for j in chosen], coef / scale[chosen] if chosen else coef, best_error
    )


class ModelStrategy(HistoryStrategy):
    name: ClassVar[str] = "model"
    batch_size: ClassVar[int] = 4
    OPTIONS: ClassVar[dict[str, Option]] = {
        "initial": Option(int, 0, "size of the space-filling design (0: max(8, 2 x knobs + 2))"),
        "top_k": Option(int, 20, "configurations explored after pruning with the first fit"),
        "top_m": Option(int, 10, "best configurations of the refitted model that are run"),
        "terms": Option(int, 7, "limit on the number of model terms"),
        "refit": Option(
            str,
            "phases",
            "fit on the phases' data (the paper) or on all data",
            ("phases", "always"),
        ),
    }

    _candidates: tuple[object, list[Point], np.ndarray, np.ndarray] | None = None

    def propose(self, history: History, rng: np.random.Generator, seed: int | None) -> Point:
        if history.training:
            return self.propose_trained(history, rng, seed)
        o = self.options
        n0 = int(o["initial"]) or max(8, 2 * len(history.sizes) + 2)
        n = history.n_measured()
        if n < n0:
            hints = [p for p in self.hint_points(history, seed) if p not in history.seen()]
            return hints[0] if hints else history.next_of_design(n0, seed, rng)
        # Which data the model is fitted on: the design (prune and explore), the design plus
        # the explored (refit), then everything.
        order = distinct_order(history)
        if o["refit"] == "always":
            fitted_on = set(order)
        elif n < n0 + o["top_k"]:
            fitted_on = set(order[:n0])
        elif n < n0 + o["top_k"] + o["top_m"]:
            fitted_on = set(order[: n0 + int(o["top_k"])])
        else:
            fitted_on = set(order)
        data = zip(history.points, history.values, strict=True)
        train = [(p, v) for p, v in data if p in fitted_on]
        if len(train) < 2:
            return history.unseen_random(rng)
        x, ind = inputs(history, [p for p, _ in train])
        terms = min(int(o["terms"]), max(1, len(train) // 3))
        model = fit_model(x, np.array([v for _, v in train]), terms, ind)
        candidates, x, ind = self.candidates(history, seed)
        return self.best_unseen(history, model, candidates, x, ind, rng)

    def propose_trained(
        self, history: History, rng: np.random.Generator, seed: int | None
    ) -> Point:
        """With training runs at other scales (the paper's flow): the first fit is on them
        alone, the scale values among its inputs, and predicts the target scale; the
        ``top_k`` best predicted run at the target (explore); the refit adds those; its
        ``top_m`` best run; then every measurement counts."""
        o = self.options
        at_target = [p for p in distinct_order(history) if p != history.default]
        k = len(at_target)
        if o["refit"] == "always" or k >= o["top_k"] + o["top_m"]:
            fitted_on = set(at_target)
        elif k < o["top_k"]:
            fitted_on = set()
        else:
            fitted_on = set(at_target[: int(o["top_k"])])
        names = sorted(history.target_scale)
        rows = [(p, scale, v) for p, scale, v in history.training]
        target = history.target_scale
        measured = dict(zip(history.points, history.values, strict=True))
        if history.default is not None and history.reference is not None:
            rows.append((history.default, target, history.reference))
        rows += [(p, target, measured[p]) for p in fitted_on if p in measured]
        if len(rows) < 2:
            return history.unseen_random(rng)
        base = {n: min([target[n], *(scale[n] for _, scale, _ in rows)]) for n in names}

        def with_scale(x: np.ndarray, scales: list[dict[str, float]]) -> np.ndarray:
            columns = [[s[n] / base[n] for s in scales] for n in names]
            return np.column_stack([x, *map(np.array, columns)]) if columns else x

        x, ind = inputs(history, [p for p, _, _ in rows])
        x = with_scale(x, [scale for _, scale, _ in rows])
        terms = min(int(o["terms"]), max(1, len(rows) // 3))
        model = fit_model(x, np.array([v for _, _, v in rows]), terms, ind)
        candidates, cx, cind = self.candidates(history, seed)
        cx = with_scale(cx, [target] * len(candidates))
        return self.best_unseen(history, model, candidates, cx, cind, rng)

    @staticmethod
    def best_unseen(
        history: History,
        model: EmpiricalModel,
        candidates: list[Point],
        x: np.ndarray,
        ind: np.ndarray,
        rng: np.random.Generator,
    ) -> Point:
        """The configuration the model predicts fastest among those not measured yet."""
        ranking = np.argsort(model.predict(x, ind), kind="stable")
        seen = history.seen()
        best = next((candidates[int(i)] for i in ranking if candidates[int(i)] not in seen), None)
        return best if best is not None else history.unseen_random(rng)

    def candidates(
        self, history: History, seed: int | None
    ) -> tuple[list[Point], np.ndarray, np.ndarray]:
        """Every configuration of the space (or a sample of a large one) and its inputs, kept
        for the next proposals of this tuning run."""
        key = (tuple(map(tuple, history.levels)), seed)
        if self._candidates is None or self._candidates[0] != key:
            points = history.candidates(np.random.default_rng(seed))
            self._candidates = (key, points, *inputs(history, points))
        _, points, x, ind = self._candidates
        return points, x, ind


def distinct_order(history: History) -> list[Point]:
    """Measured configurations (finished or failed), each once, in the order they ran."""
    return list(dict.fromkeys(p for p, _ in history.order))


def inputs(history: History, points: list[Point]) -> tuple[np.ndarray, np.ndarray]:
    """The model's numeric inputs and indicator columns of ``points``."""
    idx = np.array(points, dtype=int).reshape(len(points), len(history.sizes))
    numeric: list[np.ndarray] = []
    indicators: list[np.ndarray] = []
    for d, lv in enumerate(history.levels):
        if history.ordinal[d]:
            numeric.append(1.0 + idx[:, d] / max(len(lv) - 1, 1))
        else:
            indicators.extend((idx[:, d] == j).astype(float) for j in range(1, len(lv)))
    x = np.column_stack(numeric) if numeric else np.ones((len(points), 0))
    ind = np.column_stack(indicators) if indicators else np.zeros((len(points), 0))
    return x, ind
