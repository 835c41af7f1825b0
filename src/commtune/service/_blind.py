"""The twin's blind spots raced on the machine (issue 78, item 3).

A twin ranks only what its simulation models faithfully: of a collective's algorithms, those
SMPI carries a faithful port of (``MPIVendor.smpi_ports``). The rest (Open MPI's pipelined and
chained broadcasts, its segmented ring, MPICH's algorithms SMPI lacks) are not dropped: for
each collective algorithm variable the twin's simulation tuned (at most ``BLIND_OPS``), where
the library switches it while the program runs, they are raced in-run in one run of the real
program against the library's own decision, the simulation's pick for that collective beside
them (:func:`commtune.tune.halving`; a second run only where the first's units were too long
for its calls; each test at the risk over the candidates and the two runs). Of those that
pass, the fastest that is not the simulation's pick joins the verdict's ranking first, as the
simulation's #1 with that collective's algorithm replaced, named "raced on this machine"; the
verdict on whole runs beside the defaults then decides, at the study's risk, as for every
configuration the twin hands it. Each raced run comes out of the real runs' budget
(``--max-runs``).

Segment sizes are a blind spot too: a forced algorithm that segments (Open MPI's pipeline,
chain, trees; ``MPIVendor.segmented``) runs with the library's segment size variable at its
launch value (0: one segment), and the simulation models none of it. The fastest two such
algorithms that passed are raced in one more run at a few sizes
(:func:`commtune.service._race.sized_field`; ``pipeline@64K``: libctrace writes the
segment size with the algorithm before each candidate's communicator is made) against the
same reference; the answer is the fastest that passed in either run, and a sized answer
sets both knobs (the whole runs apply both: :func:`commtune.knobs.with_segments`)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from commtune.errors import UsageError
from commtune.knobs import Value, load_catalog
from commtune.mpi import Installation
from commtune.progress import Progress
from commtune.service._inrun import plan_races
from commtune.service._race import OPS, race, sized_config, sized_field
from commtune.study import Plan, RacedSpot, Ranked, TwinReport
from commtune.tune import Named, Race, Raced, halving

BLIND_OPS = 2  # collectives raced at most: one real run each


def racing_allowed(plan: Plan, inst: Installation) -> bool:
    """The real runs can race in-run (:func:`plan_races`) with a library that switches
    algorithms at run time."""
    return plan_races(plan) and inst.impl.race_mode is not None


Ranking = tuple[Mapping[str, Value], ...]


def blind_spots(plan: Plan, inst: Installation, command: Sequence[str], report: TwinReport,
                ranked: Ranking, ui: Progress) -> tuple[Plan, TwinReport, Ranking]:  # fmt: skip
    """The plan (its budget less the raced runs), the report with the races and what the
    verdict tests (a raced answer first), after racing ``report.not_modeled``."""
    catalog = load_catalog(inst.vendor.value)
    seed = plan.seed if plan.seed is not None else random.SystemRandom().randrange(2**31)
    top = dict(ranked[0]) if ranked else {}
    spots, first, rows = [], [], []
    # the raced runs come out of the budget, never out of the runs the verdict needs
    spare = (plan.max_runs - plan.repeats - plan.deciding_runs() if plan.max_runs is not None
             else 2 * BLIND_OPS)  # fmt: skip
    for k, (knob, blind) in enumerate(list(report.not_modeled.items())[:BLIND_OPS]):
        op = catalog[knob].collective
        if op not in OPS:
            continue
        if spare < 1:
            ui.info(f"{op}: not raced, --max-runs {plan.max_runs} leaves no run beside the "
                    f"reference's {plan.repeats} and the {plan.deciding_runs()} the verdict "
                    "needs")  # fmt: skip
            break
        pick = str(top[knob]) if knob in top else None
        ui.info(f"{op}: {len(blind)} algorithm(s) the simulation does not model raced in one "
                f"run on this machine{' beside its pick ' + pick if pick else ''}")  # fmt: skip
        spot, answer = _race(plan, inst, command, op, knob, blind, pick, seed + k, spare)
        spots.append(spot)
        spare -= spot.runs
        ui.info(spot.line().strip())
        if answer is not None and answer.name != pick:
            config = {**top, **sized_config(inst, knob, op, answer.name)}
            first.append(Named(config, f"raced on this machine ({op}: {answer.name})"))
            base = report.ranking[0].settings if report.ranking else {}
            rows.append(Ranked({**base, knob: answer.name}, config, None, {}, source="machine",
                               raced=answer.test.speedup))  # fmt: skip
    # a run that failed to race was run all the same
    spent = sum(s.runs for s in spots)
    budget = plan.max_runs - spent if plan.max_runs is not None else None
    report = replace(report, raced=tuple(spots), ranking=(*rows, *report.ranking))
    return replace(plan, max_runs=budget), report, (*first, *ranked)


def _race(plan: Plan, inst: Installation, command: Sequence[str], op: str, knob: str,
          blind: tuple[str, ...], pick: str | None, seed: int,
          most: int) -> tuple[RacedSpot, Raced | None]:  # fmt: skip
    """One raced run of ``blind`` and ``pick`` against the library's own decision (a second
    where its units were too long, a third for segment sizes: ``most`` in all): the record,
    and the answer (None: none passed, or the run could not race)."""
    names = list(dict.fromkeys([*blind, *([pick] if pick else [])]))
    runs: list[Race] = []

    def racer(field: Sequence[str], r: int, run: int) -> Race:
        runs.append(race(inst, command, op, field, seed + r, plan.timeout or
                         plan.reference_timeout, through=plan.through, run=run).race)  # fmt: skip
        return runs[-1]

    try:  # a second run only where the first's units were too long for its calls
        raced = [halving(racer, names, min(2, most), plan.risk, plan.min_gain, halve=False)]
    except UsageError as exc:  # the run that failed was made: counted
        return RacedSpot(op, knob, blind, pick, error=str(exc), runs=len(runs) + 1), None
    failed = 0
    # the fastest that passed and segment, at most SIZED, each at every size
    if (sized := sized_field(inst, op, raced[0])) and len(runs) < most:
        try:
            raced.append(halving(racer, sized, 1, plan.risk, plan.min_gain, halve=False,
                                 calls=runs[-1].raced_calls))  # fmt: skip
        except UsageError:  # the first run's answer stands, the failed run counted
            failed = 1
    estimates: dict[str, dict[str, Any]] = {}
    for h in raced:  # a lead raced again beside its sizes keeps the first run's record
        for c in h.pooled:
            estimates.setdefault(c.name, {"speedup": c.test.speedup, "passed": c.name in h.passed,
                                          "interval": list(c.test.interval)})  # fmt: skip
    calls = runs[0].raced_calls if runs else 0
    # as tune's in-run study chooses (service._inrun._sized): of those that passed in either
    # run, the fastest on the evidence of both
    answer = (raced[0] if len(raced) == 1 else raced[0].then(raced[1], plan.min_gain)).answer
    return RacedSpot(op, knob, blind, pick, answer.name if answer else None, calls,
                     estimates, runs=max(1, len(runs) + failed)), answer  # fmt: skip
