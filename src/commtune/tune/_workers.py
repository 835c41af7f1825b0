"""Several tuners on one study: who does what, and who is still alive.

Each ``commtune tune`` process is a *worker* (``util.worker_id``: host, pid, start time); every
trial names the worker that runs it. Workers share one storage and coordinate through claims
(``store.StoreClaims``: a row per claim, made under the study's lock row, so a claim and the
count of the study's claims are one atomic step on SQLite, PostgreSQL and a journal's side
file):

- ``reference``, ``training`` and ``confirm`` are done by the worker that claims them; the
  others wait for the result (polling the study) and take the work over if its holder dies;
- each configuration is claimed before it runs (``config:HASH``): one proposed by two workers
  is measured once, the second answered from the first; a claim also spends one trial of the
  study's budget (``--trials``), checked in the same step, so the workers together run no more;
- a worker whose trials are still running holds the confirmation back until they end.

A worker is alive while its process runs (same host: the pid with the same start time) or, on
another host, while its heartbeat (written every ``BEAT`` seconds) is younger than ``GRACE``.
Trials and claims of a dead worker are taken back (``recover``): its running trials become
failed (``interrupted``) and their configurations free to run again; finished trials of every
worker stay as they were committed.

Claims live in the storage (``Workers.on``) or, for a study without one (``Workers.solo``), in
memory: two implementations of one protocol (``store.Claims``), the same code here.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from commtune.knobs import Value
from commtune.progress import Progress
from commtune.store import Claim, Claims, MemoryClaims, Store, StoreClaims
from commtune.study import INTERRUPTED, StudyView, TrialRecord, config_key, mark
from commtune.util import process_alive, worker_id

if TYPE_CHECKING:
    import optuna

T = TypeVar("T")

REFERENCE = "reference"
TRAINING = "training"
CONFIRM = "confirm"
BEAT = 15.0  # seconds between two heartbeats
GRACE = 120.0  # a worker on another host silent this long is dead
# A trial is asked before its worker stamps its name on it: so long, and while another worker
# lives, a trial without a name is taken for one being stamped (a trial stored before workers
# were named, or one asked by a tuner killed before it stamped it, is unnamed for ever).
UNNAMED = 60.0
POLL = 1.0  # seconds between two looks at a study another worker is working on
MISSED = 3  # heartbeats failed in a row after which this worker says so and claims nothing


def config_claim(config: Mapping[str, Value] | None) -> str:
    return "config:" + hashlib.sha1(config_key(config).encode()).hexdigest()


class Workers:
    """This tuner as one of the workers of study ``study`` (see the module docstring)."""

    def __init__(self, claims: Claims, study: str) -> None:
        self.claims = claims
        self.study = study
        self.me = worker_id()
        # set while the heartbeat reaches the storage; cleared after MISSED failed beats in
        # a row (workers on other hosts will soon take this one for dead and fail its
        # running trials: it claims no new trial until a beat succeeds again)
        self.beating = threading.Event()
        self.beating.set()
        self.missed = 0

    @classmethod
    def solo(cls, study: str) -> Workers:
        """The only worker of a study without a storage: its claims in memory."""
        return cls(MemoryClaims(), study)

    @classmethod
    def on(cls, store: Store, study: str) -> Workers:
        """A worker of a study in ``store``, shared with the workers of other tuners."""
        return cls(StoreClaims(store, study), study)

    # -- claims -----------------------------------------------------------------------------
    def claim(
        self, key: str, *, trial: int | None = None, counted: bool = False, limit: int | None = None
    ) -> Claim | None:
        """The holder of ``key`` (this worker if it was free); None if ``counted`` and the
        study's ``limit`` trials are claimed. A new trial (``counted``) waits while the
        heartbeat fails (``beat``)."""
        if counted:
            self.beating.wait()
        return self.claims.claim(key, self.me, trial=trial, counted=counted, limit=limit)

    def mine(self, claim: Claim | None, trial: int | None = None) -> bool:
        return (
            claim is not None
            and claim.worker == self.me
            and (trial is None or claim.trial == trial)
        )

    def release(
        self, key: str | None = None, *, worker: str | None = None, trial: int | None = None
    ) -> None:
        self.claims.release(key, worker, trial)

    def bind(self, key: str, trial: int) -> None:
        self.claims.bind(key, self.me, trial)

    def counted(self) -> int:
        """Trials of the budget claimed by all workers (the reference and configurations)."""
        return sum(1 for c in self.claims.all() if c.counted)

    def sync(self, study: optuna.Study) -> None:
        """Claims for the study's measured trials that have none (made before claims)."""
        view = StudyView(study)
        claims = []
        ref = view.reference()
        if ref is not None:
            claims.append(Claim(REFERENCE, ref.worker or self.me, ref.number, True))
        for t in view.search_trials():
            claims.append(Claim(config_claim(t.config), t.worker or self.me, t.number, True))
        self.claims.add(claims)

    # -- liveness -----------------------------------------------------------------------------
    def alive(self, worker: str | None) -> bool:
        return _Look(self).alive(worker)

    def running_alive(self, trial: TrialRecord, look: _Look | None = None) -> bool:
        """Whether the RUNNING ``trial``'s worker may still finish it."""
        look = look or _Look(self)
        worker = trial.worker
        if worker is None:  # being stamped, if it is young and another worker lives
            start = trial.started  # Optuna's local time, as datetime.now() gives it
            young = start is not None and time.time() - start.timestamp() < UNNAMED
            return young and look.others_alive()
        return look.alive(worker)

    def beat(self) -> bool:
        """One heartbeat. A failure is said (one line on stderr) when ``MISSED`` come in a
        row, and this worker claims no new trial until a beat succeeds again, which is said
        too; whether this one reached the storage."""
        try:
            self.claims.beat(self.me)
        except Exception as exc:
            self.missed += 1
            if self.missed == MISSED:
                self.beating.clear()
                said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                print(f"commtune: {MISSED} heartbeats in a row did not reach the storage "
                      f"({said}); other workers may take this one for dead: no new trial "
                      "is claimed until a beat succeeds", file=sys.stderr)  # fmt: skip
            return False
        if self.missed >= MISSED:
            print(f"commtune: the heartbeat reaches the storage again after {self.missed} "
                  "missed beats; claiming trials again", file=sys.stderr)  # fmt: skip
        self.missed = 0
        self.beating.set()
        return True

    @contextlib.contextmanager
    def heartbeat(self, every: float = BEAT) -> Iterator[None]:
        """Beat every ``every`` seconds while the block runs, for workers on other hosts to
        see this one alive (``beat``)."""
        stop = threading.Event()

        def beats() -> None:
            while not stop.wait(every):
                self.beat()

        self.beat()  # the first beat before any trial is asked
        thread = threading.Thread(target=beats, name="commtune-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5)
            self.beating.set()  # nothing waits on a heartbeat that has stopped

    def recover(self, study: optuna.Study) -> int:
        """Trials left RUNNING by dead workers become failed (interrupted) and their claims
        free; returns how many."""
        from optuna.trial import TrialState

        storage = study._storage
        look = _Look(self)
        n = 0
        for trial in StudyView(study, (TrialState.RUNNING,)).records:
            if self.running_alive(trial, look):
                continue
            try:
                mark(study, trial.trial, failure=INTERRUPTED)
                storage.set_trial_state_values(trial.trial._trial_id, TrialState.FAIL)
            except RuntimeError:  # another worker recovered it first
                continue
            self.release(trial=trial.number)
            n += 1
        return n

    def others_running(self, study: optuna.Study) -> list[TrialRecord]:
        """Trials that live workers other than this one are running."""
        from optuna.trial import TrialState

        look = _Look(self)
        return [
            t
            for t in StudyView(study, (TrialState.RUNNING,)).records
            if t.worker != self.me and self.running_alive(t, look)
        ]

    # -- work done once -------------------------------------------------------------------------
    def once(
        self,
        key: str,
        done: Callable[[], T | None],
        work: Callable[[], T],
        ui: Progress,
        what: str,
    ) -> T:
        """``done()`` if another worker did it; else ``work()`` by the worker that claims
        ``key`` while the others wait. A holder that dies leaves the work to the next."""
        told = False
        while True:
            result = done()
            if result is not None:
                return result
            holder = self.claim(key)
            assert holder is not None
            if self.mine(holder):
                try:
                    return work()
                finally:
                    self.release(key, worker=self.me)
            if not self.alive(holder.worker):
                self.release(key, worker=holder.worker)
                continue
            if not told:
                ui.info(f"worker {holder.worker} is doing the {what}; waiting for it")
                told = True
            time.sleep(POLL)

    def wait_for_others(self, study: optuna.Study, ui: Progress) -> int:
        """Until the trials that other live workers are running have ended; returns how many
        trials of workers that died meanwhile were taken back (to be run again)."""
        told = False
        while running := self.others_running(study):
            if not told:
                ui.info(f"waiting for {len(running)} trial(s) of other workers to end")
                told = True
            time.sleep(POLL)
        return self.recover(study)


class _Look:
    """One look at which workers of a study live: their heartbeats are read once, when a
    worker on another host first needs them, not once per trial looked at."""

    def __init__(self, workers: Workers) -> None:
        self.workers = workers
        self._beats: dict[str, float] | None = None

    @property
    def beats(self) -> dict[str, float]:
        if self._beats is None:
            self._beats = self.workers.claims.beats()
        return self._beats

    def alive(self, worker: str | None) -> bool:
        if worker is None:  # a trial of a commtune that did not name workers
            return False
        if worker == self.workers.me:
            return True
        here = process_alive(worker)
        if here is not None:
            return here
        beat = self.beats.get(worker)
        return beat is not None and time.time() - beat < GRACE

    def others_alive(self) -> bool:
        """Whether a worker other than this one is working on the study (by its heartbeat)."""
        return any(w != self.workers.me and self.alive(w) for w in self.beats)
