"""Which run comes next: the one place that decides (the strategies never see repeats).

A batch's trial runs are made block by block. Block r runs every configuration of the batch
that is still racing once, rotated by r so that no configuration always runs first.

Controls: the library's defaults run as a *control* before a trial run whenever
``control_every`` trial runs have passed since the last control run, across batches (the
reference's runs are the first controls); the first racing block of a batch opens with one
and a batch that raced ends with one, so every raced run has a control on both sides.
Every trial run is related to the control run nearest to it in time (the geometric mean of
both neighbours when they are equally near): a phase of the machine in which everything is
2.5x slower multiplies the control and the run alike, and the ratio stays. When the control
runs on either side of a run disagree beyond the noise, the machine changed phase in
between and the run cannot be placed: it gets no relative value and does not count (a
configuration runs at most twice its cap). A control run that fails is left out; with no
control at all a run is related to the reference's median (``fallback``), which is also the
design before controls (``controls=False``).

Racing (F-race in spirit, with the study's own noise as the test's width): after each block,
a configuration whose value (the study's statistic of its relative runs) is worse than the
incumbent's by more than ``RACE_Z`` noise widths (``cv / sqrt(runs)``) stops; one that is
better by more than that after two runs stops too (it is separated, the new incumbent); the
others run again, up to ``repeats`` counted runs (the cap). Without racing every
configuration runs ``repeats`` times.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from commtune import stats
from commtune.knobs import Value
from commtune.progress import Bar
from commtune.study import DEFAULTS, INTERRUPTED, Role, StudyView, TrialWriter, ask
from commtune.trial import Executor, RunRecord

if TYPE_CHECKING:
    import optuna

CONTROL_EVERY = DEFAULTS.control_every  # trial runs between two control runs
RACE_Z = 0.5  # noise widths by which a configuration must trail the incumbent to stop
PRIOR_CV = 0.1  # the noise assumed until the study has measured its own
MIN_CV = 0.02
DISAGREE_Z = 4.0  # neighbouring control runs further apart than this many CVs: drift
DISAGREE_MIN = 0.1


class Live:
    """A trial being measured in the current batch (or the batch's control runs). Every run
    is stored as it ends; its relative value is stored when the trial is told."""

    def __init__(
        self,
        trial: optuna.Trial,
        config: dict[str, Value] | None,
        on_run: Callable[[optuna.trial.BaseTrial, int, RunRecord], None] | None = None,
        *,
        control: bool = False,
    ) -> None:
        self.trial = trial
        self.write = TrialWriter(trial)
        self.config = config
        self.on_run = on_run
        self.control = control  # a control trial: a failed run fails nothing
        self.runs: list[RunRecord] = []
        self.blocks: list[str] = []
        self.seqs: list[int] = []  # each run's place among all runs of the study
        self.relative: list[float | None] = []
        self.failure: str | None = None
        self.not_applied: dict[str, str] = {}

    def store(self) -> None:
        records = []
        for i, run in enumerate(self.runs):
            relative = self.relative[i] if i < len(self.relative) else None
            where = {"block": self.blocks[i], "seq": self.seqs[i], "relative": relative}
            records.append({**run.to_json(), **where})
        self.write.runs(records)

    def record(self, run: RunRecord, block: str, seq: int) -> None:
        self.runs.append(run)
        self.blocks.append(block)
        self.seqs.append(seq)
        self.store()
        if run.not_applied.keys() - self.not_applied.keys():
            self.not_applied = {**run.not_applied, **self.not_applied}
            self.write.not_applied(self.not_applied)
        if run.profile is not None and len(self.runs) == 1:
            self.write.features(run.profile.features)
        if run.failure is not None and not self.control:
            self.fail(run.failure)
        if self.on_run is not None:
            self.on_run(self.trial, len(self.runs) - 1, run)

    def fail(self, reason: str) -> None:
        self.failure = reason
        self.write.failure(reason)

    def relate(self, level: Callable[[int], float | None]) -> None:
        """Every run relative to the control level at its place in time (None: no level)."""
        self.relative = []
        for run, seq in zip(self.runs, self.seqs, strict=True):
            anchor = level(seq)
            ok = run.value is not None and anchor is not None and anchor > 0
            self.relative.append(run.value / anchor if ok else None)  # type: ignore[operator]

    def relatives(self) -> list[float]:
        return [r for r in self.relative if r is not None]


class Scheduler:
    """Makes the runs of the study's batches; see the module docstring."""

    def __init__(
        self,
        study: optuna.Study,
        executor: Executor,
        timeout: float,
        *,
        repeats: int,
        statistic: str,
        controls: bool = True,
        racing: bool = True,
        control_every: int = CONTROL_EVERY,
        limit: int | None = None,
        scale: Mapping[str, str] | None = None,
    ) -> None:
        """``scale``: the runs are training runs at this scale (``tune/_train.py``): their
        controls are training trials too, and nothing relates them to the reference."""
        self.study = study
        self.executor = executor
        self.timeout = timeout
        self.repeats = repeats
        self.stat = stats.statistic(statistic)
        self.controls = controls
        self.racing = racing
        self.control_every = control_every
        self.limit = limit  # runs the study may reach (None: no bound)
        self.spent = StudyView(study).runs_spent()
        self.others = 0  # runs other workers made since (see ``affordable``)
        self.control: Live | None = None  # the control runs of the current batch
        self.stream: list[tuple[int, float]] = []  # (seq, value) of every control run, in order
        self.age = control_every  # trial runs since the last control run
        self.cv = PRIOR_CV  # the noise, measured at the start of each batch
        view = StudyView(study)
        ref = view.reference()
        assert ref is not None, "the reference runs before the search"
        self.scale = scale
        self.fallback: float | None = stats.median(ref.values())
        if scale is not None:
            self.fallback = None  # another command: the reference says nothing of its level
        elif view.records[-1].number == ref.number:  # a fresh study: the reference was last
            for i, run in enumerate(ref.runs):
                if run.value is not None:
                    self.stream.append((run.seq if run.seq is not None else i, run.value))
            self.age = 0

    # -- budget ---------------------------------------------------------------------------
    def affordable(self, wanted: int) -> int:
        """How many configurations of ``wanted`` can have their first run (and the controls
        that go with them) within the limit."""
        if self.limit is None:
            return wanted
        # the runs of other workers on the study since this scheduler began (all of this
        # one's are stored: none is running between batches)
        self.others = max(0, StudyView(self.study).runs_spent() - self.spent)
        n = wanted
        while n > 0 and self.spent + self.others + n + self._controls_for(n) > self.limit:
            n -= 1
        return n

    def _controls_for(self, runs: int) -> int:
        return (self.age + runs) // self.control_every if self.controls else 0

    def _room(self, runs: int) -> bool:
        return self.limit is None or self.spent + self.others + runs <= self.limit

    # -- running --------------------------------------------------------------------------
    def run_batch(self, batch: Sequence[Live], bar: Bar) -> None:
        """The batch's blocks; see the module docstring. Interrupted (an exception), the
        runs made so far are stored; the caller tells the trials."""
        self.control = None
        anchor = batch[0].trial.number
        view = StudyView(self.study)
        incumbent = view.incumbent()
        self.cv = max(MIN_CV, view.noise().cv or PRIOR_CV)
        racing = list(batch)
        r = 0
        while racing:
            k = r % len(racing)
            order = racing[k:] + racing[:k]
            block = f"{anchor}.{r}"
            for i, live in enumerate(order):
                # the first racing block opens with a control: block 0's runs get one after
                due = self.controls and (
                    self.age >= self.control_every or (r == 1 and i == 0 and self.age > 0)
                )
                if not self._room(1 + due):
                    return
                if due:
                    self._run_control(block, bar)
                self._run(live, block, bar)
            r += 1
            self.relate(batch)
            racing = [live for live in racing if self._races(live, incumbent)]
            for live in order:  # one that stopped below the incumbent is the new incumbent
                if live not in racing and live.failure is None and live.relatives():
                    incumbent = min(incumbent, self.stat(live.relatives()))
            racing = [live for live in racing if self._races(live, incumbent)]
            if not racing and r > 1 and self.controls and self.age > 0 and self._room(1):
                # the raced runs get a control after them; a run it leaves unplaced (the
                # machine changed phase) is made again
                placed = [len(live.relatives()) for live in batch]
                self._run_control(f"{anchor}.{r}", bar)
                self.relate(batch)
                racing = [
                    live
                    for live, n in zip(batch, placed, strict=True)
                    if len(live.relatives()) < n and self._races(live, incumbent)
                ]

    def close(self, bar: Bar) -> None:
        """A control after the last runs, so that each has one on both sides."""
        if self.controls and self.age > 0 and self._room(1):
            self._run_control(f"{self.control.trial.number if self.control else 0}.end", bar)

    def _races(self, live: Live, incumbent: float) -> bool:
        """Whether ``live`` runs again: see the module docstring."""
        relatives = live.relatives()
        if live.failure is not None or len(relatives) >= self.repeats:
            return False
        if len(live.runs) >= 2 * self.repeats:  # runs between disagreeing controls: bounded
            return False
        if not self.racing or not relatives:
            return True
        value = self.stat(relatives)
        width = RACE_Z * self.cv / math.sqrt(len(relatives))
        if value > incumbent * (1 + width):
            return False  # clearly worse
        return not (len(relatives) >= 2 and value * (1 + width) < incumbent)  # separated

    def _run(self, live: Live, block: str, bar: Bar) -> None:
        run = self.executor.run(live.config, self.timeout)
        live.record(run, block, self.spent)
        self.spent += 1
        self.age += 1
        bar.advance(status=status_line(live, run, "trial"))

    def _run_control(self, block: str, bar: Bar) -> None:
        if self.control is None:
            self.control = control_trial(self.study, self.scale)
        run = self.executor.run(None, self.timeout)
        self.control.record(run, block, self.spent)
        if run.value is not None:
            self.stream.append((self.spent, run.value))
        self.spent += 1
        self.age = 0
        bar.advance(status=status_line(self.control, run, "control"))

    def level(self, seq: int, lenient: bool = False) -> float | None:
        """The control level at ``seq``: the nearest control run (both neighbours' geometric
        mean when equally near); the reference's median where there is none; None where
        the control runs on either side disagree beyond the noise (``lenient``: their
        geometric mean)."""
        if not self.controls or not self.stream:
            return self.fallback
        i = bisect.bisect_left(self.stream, (seq,))
        before = self.stream[i - 1] if i > 0 else None
        after = self.stream[i] if i < len(self.stream) else None
        if before is None or after is None:
            return (before or after)[1]  # type: ignore[index]
        low, high = sorted((before[1], after[1]))
        if high > low * (1 + max(DISAGREE_MIN, DISAGREE_Z * self.cv)):
            return math.sqrt(low * high) if lenient else None
        gap_before, gap_after = seq - before[0], after[0] - seq
        if gap_before == gap_after:
            return math.sqrt(before[1] * after[1])
        return before[1] if gap_before < gap_after else after[1]

    def relate(self, batch: Sequence[Live]) -> None:
        for live in batch:
            live.relate(self.level)

    def settle(self, batch: Sequence[Live]) -> None:
        """The final relative values: a configuration none of whose runs could be placed
        (at its cap of runs) gets the best guess, the mean level of the controls around."""
        self.relate(batch)
        for live in batch:
            if live.runs and not live.relatives():
                live.relate(functools.partial(self.level, lenient=True))

    def estimate(self, trials: int) -> int:
        """Runs ``trials`` more configurations are expected to take (for the progress bar)."""
        runs = trials * (1 if self.racing else self.repeats)
        return runs + (runs // self.control_every if self.controls else 0)


def status_line(live: Live, run: RunRecord, what: str = "trial") -> str:
    if run.failure:
        return f"[red]{what} {live.trial.number} failed: {run.failure}[/red]"
    return f"{what} {live.trial.number}: {run.value:.4g}"


def control_trial(study: optuna.Study, scale: Mapping[str, str] | None = None) -> Live:
    """A trial holding a batch's control runs. Asked with a sampler that samples nothing, so
    the strategy's sampler neither sees nor spends anything on it. At a training ``scale``:
    a training trial of the defaults at that scale."""
    import optuna

    saved = study.sampler
    study.sampler = optuna.samplers.RandomSampler(seed=0)
    try:
        trial = ask(study)
    finally:
        study.sampler = saved
    write = TrialWriter(trial)
    write.role(Role.CONTROL if scale is None else Role.TRAINING)
    if scale is not None:
        write.scale(scale)
    write.config({})
    return Live(trial, None, control=True)


def tell(
    study: optuna.Study, live: Live, statistic: Callable[[Sequence[float]], float]
) -> float | None:
    """Finish the trial in the storage; returns its value (None if it failed)."""
    from optuna.trial import TrialState

    live.store()  # with the relative values
    if live.failure is not None or not live.relatives():
        if live.failure is None:
            live.fail(INTERRUPTED)
        study.tell(live.trial, state=TrialState.FAIL)
        return None
    value = statistic(live.relatives())
    study.tell(live.trial, value)
    return value


def tell_control(study: optuna.Study, control: Live) -> None:
    """The control trial's value is 1 (the defaults, relative to themselves); its runs keep
    the raw values (their spread over the study is the drift)."""
    from optuna.trial import TrialState

    control.store()
    if any(r.value is not None for r in control.runs):
        study.tell(control.trial, 1.0)
    else:
        last = control.runs[-1].failure if control.runs else None
        control.write.failure(last or INTERRUPTED)
        study.tell(control.trial, state=TrialState.FAIL)
