"""Prediction from one run (Wang et al.): the training benchmark's sweep, Pearson knob
selection, the neural network and the cost model, and the prediction for an application."""

from commtune.predict._data import FEATURES, Point, design_points, features_of
from commtune.predict._models import (
    ANN,
    KNN,
    MODELS,
    PEARSON_MIN,
    Dataset,
    cross_validate,
    pearson,
    selected_knobs,
)
from commtune.predict._predict import TRAIN_HINT, Predictor, model_store
from commtune.predict._train import TrainReport, collect, dataset, fit_and_store

__all__ = [
    "ANN",
    "FEATURES",
    "KNN",
    "MODELS",
    "PEARSON_MIN",
    "TRAIN_HINT",
    "Dataset",
    "Point",
    "Predictor",
    "TrainReport",
    "collect",
    "cross_validate",
    "dataset",
    "design_points",
    "features_of",
    "fit_and_store",
    "model_store",
    "pearson",
    "selected_knobs",
]
