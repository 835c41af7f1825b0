"""Loading a stored model for this platform and predicting a configuration from features."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from commtune.errors import UsageError
from commtune.knobs import Space, Value, installed_knobs, space_from_json
from commtune.mpi import Installation
from commtune.platform import Fingerprint
from commtune.predict._data import feature_vector
from commtune.predict._models import ANN, KNN, MODELS
from commtune.predict._train import MODEL_FORMAT
from commtune.progress import Progress
from commtune.store import Store

TRAIN_HINT = "train one with `commtune train --quick`"


def model_store(url: str, installation: Installation) -> Store:
    """The storage holding the models; a SQLite file that does not exist is not created."""
    from commtune.store import backend

    where = backend(url)
    if not where.exists():
        raise UsageError(
            f"no prediction model for {installation.vendor.value} here (no storage "
            f"{where.path}); "
            f"{TRAIN_HINT}"
        )
    return Store(url)


@dataclass
class Predictor:
    space: Space
    model: ANN | KNN
    data: Mapping[str, Any]

    @classmethod
    def load(
        cls,
        store: Store,
        installation: Installation,
        force: bool,
        ui: Progress,
        nodes: str | None = None,
    ) -> Predictor:
        """The model of this platform (``nodes``: a simulated cluster's); another platform's
        only with ``force`` (and a warning), never another MPI library's. The space is rebuilt
        from the installed library's knobs: their choices are what this build has (the
        catalog may list more)."""
        fingerprint = Fingerprint.of(installation, nodes=nodes)
        models = store.models()
        data = models.get(fingerprint.key)
        if data is None:
            same_library = [
                m for m in models.values() if m.get("library") == fingerprint.mpi_vendor
            ]
            if not same_library:
                raise UsageError(
                    f"no prediction model for {fingerprint.mpi_vendor} here; {TRAIN_HINT}"
                )
            data = max(same_library, key=lambda m: m.get("created", 0))
            where = _describe(data.get("fingerprint", {}))
            if not force:
                raise UsageError(
                    f"the prediction model was trained on another platform ({where}); "
                    f"{TRAIN_HINT} here, or pass --force to use it anyway"
                )
            ui.warn(f"using a model trained on another platform ({where})")
        if data.get("format") != MODEL_FORMAT:
            raise UsageError(f"the stored model has an unknown format; {TRAIN_HINT}")
        knobs = {name: status.knob for name, status in installed_knobs(installation).items()}
        space = space_from_json(data["library"], data["space"], knobs)
        model = MODELS[data["model"]["kind"]].from_json(space, data["model"])
        return cls(space, model, data)

    def predict(self, features: Mapping[str, float]) -> dict[str, Value]:
        config = self.model.predict(feature_vector(features))
        return self.space.validate(config)


def _describe(fp: Mapping[str, Any]) -> str:
    keys = ("cpu_model", "cores", "mpi_vendor", "mpi_version", "mpi_device", "nodes")
    return ", ".join(str(fp[k]) for k in keys if fp.get(k)) or "unknown"
