"""The whole runs that test what an in-run race chose (issue 93, item 5): the race's answer
beside the defaults in pairs of runs of the program, each pair's order by a coin (the one
pair runner, :func:`commtune.tune._pairs.lone`), decided by the rule every verdict uses
(:mod:`commtune.rule`), at the whole ``--risk``. The race (``_inrun``) only chooses; these
runs decide."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from commtune import rule
from commtune.knobs import Value
from commtune.tune._pairs import Lone, Ran, lone


@dataclass(frozen=True)
class WholeRuns:
    """The race's answer against the defaults on whole runs (issue 93, item 5): their runs in
    pairs, the rule's test (at the look that passed it; else on every pair, no look) and the
    looks it had; ``failure``: a run that failed (no evidence: nothing handed back)."""

    defaults: tuple[float, ...]
    answer: tuple[float, ...]
    test: rule.Test | None
    failure: str | None
    looks: tuple[tuple[int, float], ...]

    @property
    def passed(self) -> bool:
        return self.failure is None and self.test is not None and self.test.passed


@dataclass(frozen=True)
class _Ran:
    value: float | None
    failure: str | None
    secondary: Mapping[str, float | None] = field(default_factory=dict)


def whole_runs(run: Callable[[bool], tuple[float | None, str]], pairs: int, risk: float,
               tolerance: float, min_gain: float, seed: int | None) -> WholeRuns:  # fmt: skip
    """The answer tested as every verdict tests a lone configuration: up to ``pairs`` pairs of
    whole runs (``run(True)``: the answer's, ``run(False)``: the defaults'; each a value, or
    None with why), each pair's order by a coin (``rule.coins(seed)``), the rule at the whole
    ``risk`` at looks fixed before the first pair (``rule.looks``: an early one where the
    pairs allow, spending ``rule.CONFIRM_EARLY`` of the risk, and the last). It stops once a
    look passes it or no look to come could."""
    schedule = tuple(rule.looks(risk, 0, pairs, share=rule.CONFIRM_EARLY))
    if not schedule:
        return WholeRuns((), (), None, f"{2 * pairs} runs were left for the whole-run test, "
                         f"fewer than a first pass needs at --risk {risk:g}: raise --max-runs",
                         ())  # fmt: skip

    def runner(config: Mapping[str, Value] | None) -> Ran:
        return _Ran(*run(config is not None))

    done: Lone = lone(runner, {}, schedule, tolerance=tolerance, min_gain=min_gain, seed=seed)
    failure = None
    if done.failed is not None:
        which = "the defaults" if done.failed.of_defaults else "the answer"
        failure = f"a whole run of {which}: {done.failed.why}"
    return WholeRuns(done.defaults, done.config, done.test, failure, schedule)
