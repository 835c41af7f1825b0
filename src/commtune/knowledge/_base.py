"""The studies of a storage as knowledge: what each program was, where, and what won.

A study's *answer* is its accepted configuration, or, where none was accepted, the best
configuration its search measured if that came within 2 % of the defaults or beat them (a
configuration near the best is worth trying first elsewhere; one slower than the defaults
is not). Programs are compared by their reference run's profile features
(``predict.features_of``: message sizes, call shares, collective shares, ranks) with a
scale-free distance: the mean over the features both have of |a - b| / (|a| + |b|).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from commtune.knobs import Value

if TYPE_CHECKING:
    from commtune.store import Store

NEAR = 1.02  # a best configuration within 2 % of the defaults is still an answer


@dataclass
class Known:
    study: str
    program: str
    library: str
    platform: str | None  # fingerprint key
    accepted: bool
    speedup: float | None  # confirmed, or the search's estimate when not accepted
    ci: tuple[float, float] | None
    answer: dict[str, Value]  # what to try first elsewhere ({}: nothing)
    runs: int
    features: dict[str, float] | None  # the reference run's (None: not profiled)

    def to_json(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "program": self.program,
            "library": self.library,
            "platform": self.platform,
            "accepted": self.accepted,
            "speedup": self.speedup,
            "ci": list(self.ci) if self.ci else None,
            "answer": self.answer,
            "runs": self.runs,
            "profiled": self.features is not None,
        }


def known(store: Store, skip: str | None = None) -> list[Known]:
    """Every tuning study of the storage (``skip``: one left out, the study asking)."""
    import optuna

    from commtune.predict import features_of
    from commtune.profile import Profile, ProfileError
    from commtune.study import Source, StudyView, raw_spec

    out: list[Known] = []
    for summary in optuna.get_all_study_summaries(store.optuna, include_best_trial=False):
        spec = raw_spec(summary.user_attrs)
        if not spec or summary.study_name == skip:
            continue
        study = optuna.load_study(study_name=summary.study_name, storage=store.optuna)
        view = StudyView(study)
        verdict = view.acceptance()
        if verdict is not None and verdict.source is not Source.SEARCH:
            continue  # a sample's or a prediction's result: no program measured
        ref = view.reference()
        best = view.best(1)
        accepted = bool(verdict and verdict.accepted)
        answer: dict[str, Value] = {}
        speedup = ci = None
        if accepted and verdict is not None:
            answer, speedup, ci = dict(verdict.params), verdict.speedup, verdict.ci
        elif best and best[0].value is not None and best[0].value < NEAR:
            answer, speedup = dict(best[0].config), 1.0 / best[0].value
        features = None
        if ref is not None:
            stored = store.profiles(summary.study_name, ref.number)
            if stored:
                with contextlib.suppress(ProfileError):  # unreadable: as if not profiled
                    features = features_of(Profile.from_json(stored[0][2]))
        command = list(spec.get("command") or ["?"])
        out.append(
            Known(
                summary.study_name,
                _program(command),
                str(spec.get("library")),
                view.platform(),
                accepted,
                speedup,
                ci,
                answer,
                view.runs_spent(verdict),
                features,
            )
        )
    return out


def _program(command: Sequence[str]) -> str:
    """The program of a launch line: the first word after the launcher's options that is a
    file (its base name), else the first word."""
    for word in command[1:]:
        if os.sep in word or os.path.isfile(word):
            return os.path.basename(word)
    return os.path.basename(command[0])


def distance(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Scale-free distance of two feature sets (0: alike, 1: nothing in common)."""
    common = [k for k in a if k in b]
    if not common:
        return 1.0
    terms = [abs(a[k] - b[k]) / (abs(a[k]) + abs(b[k])) if a[k] or b[k] else 0.0 for k in common]
    return sum(terms) / len(terms)


def similar(
    entries: Sequence[Known],
    features: Mapping[str, float] | None,
    platform: str | None,
    library: str,
    limit: int = 3,
) -> list[tuple[Known, float]]:
    """The answers of studies on the same platform and library, the most similar program
    first (with its distance; unprofiled programs last), at most ``limit``."""
    same = [k for k in entries if k.answer and k.library == library and k.platform == platform]
    ranked = [(k, distance(features, k.features) if features and k.features else 1.0) for k in same]
    ranked.sort(key=lambda item: (item[1], not item[0].accepted))
    return ranked[:limit]
