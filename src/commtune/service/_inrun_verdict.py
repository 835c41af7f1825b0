"""An in-run study's evidence as it is decided and handed back (``service._inrun``): the
space raced (:class:`InRun`), the raced runs that crashed (:class:`Crashed`), the answer's
whole runs beside the defaults (:func:`whole_runs_check`, the one pair runner's lone test
through ``tune.whole_runs``), the verdict as a typed finding (:func:`verdict_of`:
``study.InRunFinding``) and the study's result as ``tune`` reports every study
(:func:`result_of`)."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from commtune import rule
from commtune.knobs import Value
from commtune.mpi import Installation
from commtune.profile import Profile, ProfileError
from commtune.report import UI
from commtune.service._inrun_file import BySize
from commtune.service._race import RacedRun, RaceFailed, sized_config
from commtune.study import Acceptance, Gate, InRunFinding, Noise, Plan, Source, words
from commtune.trial import Executor
from commtune.tune import Halving, Raced, Row, SizeChoice, TuneResult, WholeRuns, whole_runs


@dataclass(frozen=True)
class InRun:
    """A space raced in-run: the collective, its algorithm variable, the library's own
    decision (the reference) and the candidates."""

    op: str
    knob: str
    reference: str
    names: tuple[str, ...]


@dataclass
class Crashed:
    """The raced runs that failed (a crash, a hang) and the candidates dropped for it, each
    with why (:attr:`RaceFailed.where`)."""

    failed: int = 0
    dropped: dict[str, str] = dataclasses.field(default_factory=dict)

    def count(self, exc: RaceFailed) -> None:
        """One more raced run failed, in ``exc.suspects`` (none: nothing to drop)."""
        self.failed += 1
        self.dropped.update(dict.fromkeys(exc.suspects, exc.where))


def check_pairs(plan: Plan, raced: int) -> int:
    """The whole-run test's pairs at most: what ``--max-runs`` leaves beside the ``raced``
    runs (``rule.UNBOUNDED`` without it)."""
    if plan.max_runs is None:
        return rule.UNBOUNDED
    return max(0, (plan.max_runs - raced) // 2)


@dataclass(frozen=True)
class Check:
    """The whole-run test (:class:`commtune.tune.WholeRuns`) and the raced collective's share
    of the defaults' first whole run (its profile)."""

    runs: WholeRuns
    share: float | None = None


def whole_runs_check(plan: Plan, inst: Installation, executor: Executor, how: InRun,
                     answer: Raced | None, seed: int, timeout: float, ui: UI, raced: int,
                     file: BySize | None = None) -> Check:  # fmt: skip
    """The answer against the defaults on whole runs (:func:`commtune.tune.whole_runs`, up
    to the pairs ``--max-runs`` leaves beside the ``raced`` runs), at the whole risk: the
    race only chose it. The answer is the selection ``file`` where the choices differ by
    size (loaded exactly as exported), else ``answer``'s static setting."""
    if file is not None:
        config: dict[str, Value] | None = None
        mine_runs = executor.with_variables(file.env())
        setting = f"the selection file {file.path()} ({file.says()})"
    else:
        assert answer is not None
        config = sized_config(inst, how.knob, how.op, answer.name)
        mine_runs = executor
        setting = f"{words({k: str(v) for k, v in config.items()})} (its static setting"
        setting += ", as export writes it)"
    pairs = check_pairs(plan, raced)
    ui.info(f"testing {setting} on whole runs beside the defaults, in pairs, at --risk "
            f"{plan.risk:g}: up to {pairs} pair(s), stopping once it passes or "
            "cannot")  # fmt: skip
    share: list[float | None] = [None]

    def run(mine: bool) -> tuple[float | None, str]:
        done = mine_runs.run(config, timeout) if mine else executor.run(None, timeout)
        if not mine and share[0] is None and done.profile is not None:
            share[0] = share_of(done.profile, how.op)
        return done.value, done.failure or ""

    done = whole_runs(run, pairs, plan.risk, plan.tolerance, plan.min_gain, seed)
    return Check(done, share[0])


def share_of(profile: Profile, op: str) -> float | None:
    """The time in ``op`` over the run's (each a mean over ranks), from its profile; None
    where the profile has no such call."""
    try:
        return profile.field(f"operations.MPI_{op.capitalize()}.time") / profile.field("wall_time")
    except ProfileError:
        return None


def stored_blocks(run: RacedRun, most: int = 400) -> dict[str, Any]:
    """The first raced run's call times by block (thinned to ``most``), for the report."""
    blocks = run.race.blocks()
    step = max(1, -(-len(blocks) // most))
    return {"names": list(run.race.names), "calls": run.race.raced_calls,
            "times": [[float(f"{t:.4g}") if math.isfinite(t) else None for t in row]
                      for row in blocks[::step]]}  # fmt: skip


def limit_of(plan: Plan, how: InRun) -> float:
    """Each raced test's share of ``--risk``: split over ``how``'s candidates and the raced
    runs (a field raced again after a failed run keeps that share: :func:`_raced`)."""
    return plan.risk / (len(how.names) * plan.inrun_runs)


def verdict_of(plan: Plan, inst: Installation, how: InRun, runs: Sequence[RacedRun],
               raced: Halving, check: Check | None, crashed: Crashed,
               file: BySize | None = None,
               sizes: Sequence[SizeChoice] = ()) -> Acceptance:  # fmt: skip
    """The study's verdict: the answer handed back where its raced calls passed and its
    whole runs do not show it more than ``tolerance`` slower (``crashed``: the raced runs
    that failed and the candidates dropped for it, recorded). The answer is the selection
    ``file`` where the choices by size (``sizes``) differ, else the one algorithm."""
    answer = raced.answer
    found = InRunFinding(
        op=how.op, knob=how.knob, reference_name=how.reference,
        limit=limit_of(plan, how), min_gain=plan.min_gain, tolerance=plan.tolerance,
        risk=plan.risk, raced_runs=len(runs) + crashed.failed,
        failed_runs=crashed.failed, dropped=dict(crashed.dropped),
        calls=[r.race.raced_calls for r in runs], walls=[r.wall for r in runs],
        units=[r.race.run for r in runs], units_max=[r.race.run_max for r in runs],
        overhead=[r.race.overhead() for r in runs],
        fields=[list(r.race.names[1:]) for r in runs],
        fell_back=sorted({n for r in runs for n in r.race.refused_names()}),
        launch=dict(runs[0].launch) if runs else {},
        raced=[c.estimate_json() for c in raced.pooled], passed=sorted(raced.passed),
        blocks=stored_blocks(runs[0]) if runs else {},
        promise=runs[0].race.said(),
        by_size=[c.to_json() for c in sizes],
        selection=file.to_json() if file is not None else {},
    )  # fmt: skip
    if file is not None:
        return _on_whole_runs(plan, found, check, {}, file)
    if answer is None:
        said = f"no algorithm shown faster in the calls' time than {how.reference}"
        return Acceptance(Source.SEARCH, {}, False, f"{said} in {len(runs)} raced run(s)",
                          gate=Gate.INRUN, finding=found)  # fmt: skip
    t = answer.test
    found = replace(found, call_speedup=t.speedup, call_interval=list(t.interval),
                    call_p=t.p, call_limit=t.limit, call_blocks=answer.blocks,
                    call_name=answer.name)  # fmt: skip
    if check is not None and check.share is not None:
        saved = check.share * (1 - 1 / t.speedup)
        found = replace(found, share=check.share, share_said=(
            f"{how.op} took {check.share:.1%} of the program's time in the defaults' first "
            f"whole run (its profile, a mean over ranks): {t.speedup:.3f}x the calls' time is "
            f"about {saved:.1%} of the program's time (estimated)"))  # fmt: skip
    return _on_whole_runs(plan, found, check, sized_config(inst, how.knob, how.op, answer.name))


def _on_whole_runs(plan: Plan, found: InRunFinding, check: Check | None,
                   params: dict[str, Value], file: BySize | None = None) -> Acceptance:  # fmt: skip
    """The verdict of the whole runs' test of what the race chose: ``params``, or the
    selection ``file`` (its variables, no knob), handed back where it passed."""
    whole = check.runs.test if check is not None else None
    if check is None or whole is None:
        why = check.runs.failure if check is not None else "not tested on whole runs"
        return Acceptance(Source.SEARCH, params, False, f"{why}; the defaults stay",
                          p_value=None, gate=Gate.INRUN, finding=found)  # fmt: skip
    found = replace(found, whole_looks=[list(look) for look in check.runs.looks],
                    whole_limit=whole.limit, whole_pairs=whole.runs)  # fmt: skip
    lead = f"{file.says()}: " if file is not None else ""
    if check.runs.failure is not None:  # a whole run failed: no evidence, nothing handed back
        reason = f"{check.runs.failure}; the defaults stay"
    elif whole.passed:
        reason = (f"{lead}passed on the program's whole runs beside the defaults at --risk "
                  f"{plan.risk:g}: {whole.says()}")  # fmt: skip
    else:
        reason = (f"{lead}faster in the calls' time, not shown faster on the program's whole "
                  f"runs beside the defaults: {whole.says()}")  # fmt: skip
    env = file.env() if file is not None and check.runs.passed else {}
    return Acceptance(Source.SEARCH, params, check.runs.passed, reason, speedup=whole.speedup,
                      ci=whole.interval, p_value=whole.p,
                      default_values=list(check.runs.defaults),
                      best_values=list(check.runs.answer), env=env, gate=Gate.INRUN,
                      finding=found)  # fmt: skip


def result_of(name: str, inst: Installation, how: InRun, runs: Sequence[RacedRun],
            pooled: Sequence[Raced], acc: Acceptance, check: Check | None,
            failed: int) -> TuneResult:  # fmt: skip
    """The study's result as ``tune`` reports every study: its rows per call (pooled over the
    raced runs), the defaults' whole runs (the check's, else the raced runs' wall time); the
    real runs spent with the ``failed`` raced runs."""
    rows = [Row(i + 1, sized_config(inst, how.knob, how.op, c.name), 1 / c.test.speedup, 0.0,
                c.test.speedup, c.median, c.blocks) for i, c in enumerate(pooled)]  # fmt: skip
    base = list(check.runs.defaults) if check and check.runs.defaults else [r.wall for r in runs]
    cv = statistics.pstdev(base) / statistics.mean(base) if len(base) > 1 else 0.0
    best = next((row for row in rows if dict(acc.params) == row.config), None)
    spent = len(runs) + failed + (len(check.runs.defaults) + len(check.runs.answer) if check else 0)
    field = len({*how.names, *(c.name for c in pooled)}) + 1
    return TuneResult(name, field, 0, statistics.median(base), best, acc, rows, runs=spent,
                      noise=Noise(cv, max(base) / min(base)))  # fmt: skip
