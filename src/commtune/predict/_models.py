"""The prediction models, knob selection and their cross-validation.

- ``ANN`` (Wang et al.): features -> one hidden layer of 10 tanh units -> logistic outputs,
  one per encoded knob column (:class:`~commtune.predict._data.Encoding`), trained by
  Levenberg-Marquardt (``scipy.optimize.least_squares(method="lm")``) on the best measured
  configuration of each training point. A small weight penalty is appended to the residuals,
  so LM is well posed with fewer training points than weights; three restarts, the best kept.
- ``KNN`` (the alternative): a cost model, the time relative to the defaults of every
  configuration measured in training, averaged over the ``k`` nearest training points in
  standardised feature space (weights 1/distance); the prediction is its minimum. Each feature's
  axis is weighted by how strongly it correlates with the relative times (the largest |r| over
  the configurations), so features that change nothing do not pick the neighbours.

Cross-validation leaves one training point out at a time: the model trained on the others
predicts a configuration for it, scored by the share of the best measured speedup it reaches
there (``best relative time / its relative time``; a configuration not measured at that point
takes the time of the nearest one that was).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from commtune.knobs import Space, Value
from commtune.predict._data import Encoding
from commtune.study import config_key

HIDDEN = 10
PEARSON_MIN = 0.1


@dataclass
class Dataset:
    """Training points with their features (standardised by the model) and measured configs."""

    x: np.ndarray  # points x features
    configs: list[dict[str, Value]]  # every configuration measured (the same set at each point)
    relative: np.ndarray  # points x configs: time relative to the defaults (nan: not measured)

    def best(self) -> list[dict[str, Value]]:
        return [self.configs[int(np.nanargmin(row))] for row in self.relative]


def pearson(space: Space, data: Dataset) -> list[tuple[str, str, float]]:
    """|r| of each knob column with the relative time over every measured run: (knob, column,
    r). Integer and log2 knobs by their index; categorical and boolean knobs one-hot."""
    rows = []
    y_all = data.relative.ravel()
    for d in space.dimensions:
        name = d.knob.name
        cands = d.candidates()
        if d.ordinal:
            columns = [(name, [float(cands.index(c[name])) for c in data.configs])]
        else:
            columns = [
                (f"{name}={d.knob.format(v)}", [1.0 if c[name] == v else 0.0 for c in data.configs])
                for v in cands
            ]
        for label, values in columns:
            x_all = np.tile(np.asarray(values, dtype=float), len(data.relative))
            ok = ~np.isnan(y_all)
            x, y = x_all[ok], y_all[ok]
            r = 0.0
            if x.std() > 0 and y.std() > 0:
                r = float(np.corrcoef(x, y)[0, 1])
            rows.append((name, label, r))
    return rows


def selected_knobs(rows: list[tuple[str, str, float]]) -> list[str]:
    """Knobs with a column whose |r| exceeds 0.1 (the paper's threshold)."""
    return list(dict.fromkeys(k for k, _, r in rows if abs(r) > PEARSON_MIN))


class Standardiser:
    def __init__(self, mu: np.ndarray, sigma: np.ndarray) -> None:
        self.mu = mu
        self.sigma = sigma

    @classmethod
    def of(cls, x: np.ndarray) -> Standardiser:
        sigma = x.std(axis=0)
        return cls(x.mean(axis=0), np.where(sigma > 1e-12, sigma, 1.0))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.asarray((x - self.mu) / self.sigma)


class ANN:
    kind = "ann"

    def __init__(self, space: Space, seed: int = 0, penalty: float = 1e-2) -> None:
        self.enc = Encoding(space)
        self.seed = seed
        self.penalty = penalty
        self.weights: np.ndarray | None = None
        self.scale: Standardiser | None = None

    def shapes(self, n_in: int) -> list[tuple[int, ...]]:
        n_out = len(self.enc.columns)
        return [(n_in, HIDDEN), (HIDDEN,), (HIDDEN, n_out), (n_out,)]

    def unpack(self, w: np.ndarray, n_in: int) -> list[np.ndarray]:
        out, i = [], 0
        for shape in self.shapes(n_in):
            size = int(np.prod(shape))
            out.append(w[i : i + size].reshape(shape))
            i += size
        return out

    def forward(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        w1, b1, w2, b2 = self.unpack(w, x.shape[1])
        return np.asarray(1 / (1 + np.exp(-(np.tanh(x @ w1 + b1) @ w2 + b2))))

    def jacobian(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """d(outputs)/d(weights): rows are (point, output), columns the packed weights."""
        w1, b1, w2, b2 = self.unpack(w, x.shape[1])
        h = np.tanh(x @ w1 + b1)
        y = 1 / (1 + np.exp(-(h @ w2 + b2)))
        s = y * (1 - y)  # P x O
        g = 1 - h**2  # P x H
        p, o = y.shape
        back = np.einsum("po,jo,pj->poj", s, w2, g)  # through the hidden layer
        d_w1 = np.einsum("poj,pi->poij", back, x).reshape(p * o, -1)
        d_b1 = back.reshape(p * o, -1)
        eye = np.eye(o)
        d_w2 = np.einsum("po,pj,oq->pojq", s, h, eye).reshape(p * o, -1)
        d_b2 = np.einsum("po,oq->poq", s, eye).reshape(p * o, -1)
        return np.hstack([d_w1, d_b1, d_w2, d_b2])

    def fit(self, data: Dataset) -> ANN:
        from scipy.optimize import least_squares

        self.scale = Standardiser.of(data.x)
        x = self.scale(data.x)
        targets = np.array([self.enc.encode(c) for c in data.best()])
        n = sum(int(np.prod(s)) for s in self.shapes(x.shape[1]))
        rng = np.random.default_rng(self.seed)
        best = None
        penalty = np.sqrt(self.penalty) * np.eye(n)
        for _ in range(3):
            w0 = rng.normal(0, 0.5, n)

            def residuals(w: np.ndarray) -> np.ndarray:
                fit = (self.forward(w, x) - targets).ravel()
                return np.concatenate([fit, np.sqrt(self.penalty) * w])

            def jacobian(w: np.ndarray) -> np.ndarray:
                return np.vstack([self.jacobian(w, x), penalty])

            result = least_squares(
                residuals, w0, jac=jacobian, method="lm", max_nfev=100, xtol=1e-6, ftol=1e-6
            )
            if best is None or result.cost < best.cost:
                best = result
        assert best is not None
        self.weights = best.x
        return self

    def predict(self, features: np.ndarray) -> dict[str, Value]:
        assert self.weights is not None and self.scale is not None
        y = self.forward(self.weights, self.scale(features[None, :]))[0]
        return self.enc.decode(y)

    def to_json(self) -> dict[str, Any]:
        assert self.weights is not None and self.scale is not None
        return {
            "kind": self.kind,
            "weights": self.weights.tolist(),
            "mu": self.scale.mu.tolist(),
            "sigma": self.scale.sigma.tolist(),
        }

    @classmethod
    def from_json(cls, space: Space, data: Mapping[str, Any]) -> ANN:
        from commtune.errors import UsageError

        model = cls(space)
        model.weights = np.array(data["weights"])
        n = sum(int(np.prod(s)) for s in model.shapes(len(data["mu"])))
        if len(model.weights) != n:
            raise UsageError(
                "the stored model does not match this library's knob values any more; "
                "train it again (`commtune train`)"
            )
        model.scale = Standardiser(np.array(data["mu"]), np.array(data["sigma"]))
        return model


class KNN:
    kind = "knn"

    def __init__(self, space: Space, k: int = 3) -> None:
        self.space = space
        self.k = k
        self.data: Dataset | None = None
        self.scale: Standardiser | None = None
        self.axis = np.ones(0)

    def fit(self, data: Dataset) -> KNN:
        self.data = data
        self.scale = Standardiser.of(data.x)
        z = self.scale(data.x)
        self.axis = np.zeros(z.shape[1])
        for f in range(z.shape[1]):
            for col in data.relative.T:
                ok = ~np.isnan(col)
                if z[ok, f].std() > 0 and col[ok].std() > 0:
                    r = abs(float(np.corrcoef(z[ok, f], col[ok])[0, 1]))
                    self.axis[f] = max(self.axis[f], r)
        if not self.axis.any():
            self.axis[:] = 1.0
        return self

    def costs(self, features: np.ndarray) -> np.ndarray:
        """Predicted time relative to the defaults of every training configuration."""
        assert self.data is not None and self.scale is not None
        delta = self.scale(self.data.x) - self.scale(features[None, :])
        dist = np.linalg.norm(delta * self.axis, axis=1)
        near = np.argsort(dist, kind="stable")[: self.k]
        w = 1 / (dist[near] + 1e-6)
        rel = self.data.relative[near]
        ok = ~np.isnan(rel)
        return np.asarray(
            np.where(ok, rel, 0).T @ w / np.maximum(ok.T @ w, 1e-12), dtype=float
        ) + np.where(ok.any(axis=0), 0, np.inf)

    def predict(self, features: np.ndarray) -> dict[str, Value]:
        assert self.data is not None
        return dict(self.data.configs[int(np.argmin(self.costs(features)))])

    def to_json(self) -> dict[str, Any]:
        assert self.data is not None
        return {
            "kind": self.kind,
            "k": self.k,
            "x": self.data.x.tolist(),
            "configs": self.data.configs,
            "relative": [[None if np.isnan(v) else v for v in row] for row in self.data.relative],
        }

    @classmethod
    def from_json(cls, space: Space, data: Mapping[str, Any]) -> KNN:
        rel = np.array([[np.nan if v is None else v for v in row] for row in data["relative"]])
        dataset = Dataset(np.array(data["x"]), list(data["configs"]), rel)
        return cls(space, int(data["k"])).fit(dataset)


MODELS: dict[str, type[ANN] | type[KNN]] = {"ann": ANN, "knn": KNN}


def nearest_measured(
    enc: Encoding, configs: list[dict[str, Value]], config: Mapping[str, Value]
) -> int:
    target = enc.encode(config)
    return int(np.argmin([np.abs(enc.encode(c) - target).sum() for c in configs]))


def cross_validate(space: Space, data: Dataset, kind: str) -> list[float]:
    """Leave one point out: the share of the best measured speedup the prediction reaches."""
    enc = Encoding(space)
    keys = [config_key(c) for c in data.configs]
    shares = []
    for i in range(len(data.x)):
        keep = np.arange(len(data.x)) != i
        train = Dataset(data.x[keep], data.configs, data.relative[keep])
        model = MODELS[kind](space).fit(train)
        config = model.predict(data.x[i])
        key = config_key(config)
        j = keys.index(key) if key in keys else nearest_measured(enc, data.configs, config)
        row = data.relative[i]
        # A configuration that failed at this point reaches nothing.
        shares.append(0.0 if np.isnan(row[j]) else float(np.nanmin(row)) / float(row[j]))
    return shares
