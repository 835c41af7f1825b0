"""Where a study's first configurations come from, behind one interface: a
:class:`HintSource` answers, for the reference run's profile features (None: no profile),
the configurations it would try first. The study's observer asks every source once, when
the reference is done, in the order given (prediction, knowledge, the platform sample), and
hands the tuner their answers within the space, each configuration once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from commtune.errors import UsageError
from commtune.knobs import Space, Value
from commtune.knowledge import known, similar
from commtune.predict import Predictor
from commtune.progress import Progress
from commtune.sample import PlatformProfile
from commtune.store import Store

Features = Mapping[str, float]


class HintSource(Protocol):
    """Configurations to try first; ``needs_profile``: they depend on the reference's
    profile (its features are read only when a source needs them)."""

    needs_profile: bool

    def hints(self, features: Features | None, space: Space) -> list[dict[str, Value]]: ...


def in_space(config: Mapping[str, Value], space: Space) -> dict[str, Value]:
    """The part of ``config`` that sets knobs under tuning to values the space holds."""
    return {k: v for k, v in config.items() if k in space.names and v in space[k].candidates()}


class Prediction:
    """Wang et al.'s model of this platform, for the reference's profile (``--strategy
    predict``)."""

    needs_profile = True

    def __init__(self, predictor: Predictor, ui: Progress) -> None:
        self.predictor = predictor
        self.ui = ui

    def hints(self, features: Features | None, space: Space) -> list[dict[str, Value]]:
        if features is None:
            self.ui.warn("the reference run has no profile; the search starts without a prediction")
            return []
        hint = in_space(self.predictor.predict(features), space)
        if not hint:
            self.ui.info("the prediction names none of the knobs under tuning")
            return []
        self.ui.info("predicted start: " + ", ".join(f"{k}={v}" for k, v in hint.items()))
        return [hint]


class Knowledge:
    """The answers of earlier studies on this platform key and library, the most similar
    program first (``commtune.knowledge``), as far as they set knobs under tuning."""

    needs_profile = True

    def __init__(
        self, store: Store, study: str, platform: str | None, library: str, ui: Progress
    ) -> None:
        self.store, self.study, self.platform, self.library = store, study, platform, library
        self.ui = ui

    def hints(self, features: Features | None, space: Space) -> list[dict[str, Value]]:
        out: list[dict[str, Value]] = []
        entries = known(self.store, skip=self.study)
        for entry, far in similar(entries, features, self.platform, self.library):
            hint = in_space(entry.answer, space)
            if hint and hint not in out:
                out.append(hint)
                self.ui.info(f"known start from study {entry.study} ({entry.program}, "
                             f"distance {far:.2f}): "
                             + ", ".join(f"{k}={v}" for k, v in hint.items()))  # fmt: skip
        return out


class Sampled:
    """The knob values of this platform's newest sample (``commtune sample``; any ranks per
    node: the tuned command's are not known), on the knobs under tuning."""

    needs_profile = False

    def __init__(self, store: Store, platform: str | None) -> None:
        self.store, self.platform = store, platform

    def hints(self, features: Features | None, space: Space) -> list[dict[str, Value]]:
        if self.platform is None:
            return []
        here = self.store.platform(self.platform)
        for data in self.store.samples():
            try:
                profile = PlatformProfile.from_json(data)
                if replace(profile.fingerprint, ranks_per_node=None) != here:
                    continue
                hint = {k: v for k, v in profile.config().items() if k in space.names}
                if hint:
                    space.validate(hint)
                    return [hint]
            except UsageError:
                continue
        return []
