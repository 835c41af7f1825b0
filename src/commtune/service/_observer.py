"""What a tuning study does beside the tuner (:class:`StudyObserver`): it stores every run's
profile and, for a trial's first run, its variables relative to the reference trial
(AITuning), warns once per knob that the library did not take, and hands the tuner the
configurations its hint sources (``_hints``) would try first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import optuna

from commtune.knobs import Space, Value
from commtune.predict import features_of
from commtune.profile import Profile, ProfileError, relative_to
from commtune.progress import Progress
from commtune.service._hints import Features, HintSource
from commtune.store import Store
from commtune.study import Role, StudyView, TrialRecord, TrialWriter
from commtune.trial import RunRecord
from commtune.tune import Observer


class StudyObserver(Observer):
    """The observer of one study in ``store``; ``profiles``: runs carry libcommtune's
    profile, stored as they end; ``sources``: asked in order for the first configurations."""

    def __init__(
        self,
        store: Store,
        ui: Progress,
        study: str,
        space: Space,
        *,
        profiles: bool,
        sources: Sequence[HintSource] = (),
    ) -> None:
        self.store = store
        self.study = study
        self.ui = ui
        self.profiles = profiles
        self.space = space
        self.sources = tuple(sources)
        self.warned: set[str] = set()
        self.reference: list[Profile | None] = []  # read once: [None] there is none

    def _reference_profile(self, find: Callable[[], int | None]) -> Profile | None:
        """The reference trial's first profile (``find``: the trial's number, asked only
        the first time), read from the storage once."""
        if not self.reference:
            number = find()
            stored = self.store.profiles(self.study, number) if number is not None else []
            try:
                self.reference.append(Profile.from_json(stored[0][2]) if stored else None)
            except ProfileError:  # a profile this commtune cannot read: as if there were none
                self.reference.append(None)
        return self.reference[0]

    def run_done(self, trial: Any, index: int, run: RunRecord) -> None:
        if self.profiles and run.profile is not None:
            self.store.save_profile(trial.study.study_name, trial.number, index, run.profile.data)
            if index == 0 and Role.of(trial) is not Role.REFERENCE:
                ref = self._reference_profile(lambda: _reference_number(trial.study))
                if ref is not None:
                    TrialWriter(trial).relative(relative_to(run.profile, ref))
        for knob, reason in run.not_applied.items():
            if knob not in self.warned:
                self.warned.add(knob)
                self.ui.warn(f"{knob} not applied (trial {trial.number}): {reason}")

    def hints(self, reference: TrialRecord) -> list[dict[str, Value]]:
        features: Features | None = None
        if any(s.needs_profile for s in self.sources):
            profile = self._reference_profile(lambda: reference.number)
            features = features_of(profile) if profile is not None else None
        out: list[dict[str, Value]] = []
        for source in self.sources:
            out += source.hints(features, self.space)
        return out


def _reference_number(study: optuna.Study) -> int | None:
    trials = StudyView(study).by_role(Role.REFERENCE)
    return trials[0].number if trials else None
