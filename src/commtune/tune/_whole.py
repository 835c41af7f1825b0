"""The whole runs that test what an in-run race chose (issue 93, item 5): the race's answer
beside the defaults in pairs of runs of the program, each pair's order by a coin, decided by
the rule every verdict uses (:mod:`commtune.rule`), at the whole ``--risk``. The race
(``_inrun``) only chooses; these runs decide."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from commtune import rule


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
    defaults: list[float] = []
    mine: list[float] = []
    coins = rule.coins(seed)
    test: rule.Test | None = None
    failure: str | None = None
    for n in range(1, schedule[-1][0] + 1):  # one pair a round
        for answer in (True, False) if next(coins) else (False, True):
            value, why = run(answer)
            if value is None:
                failure = f"a whole run of {'the answer' if answer else 'the defaults'}: {why}"
                break
            (mine if answer else defaults).append(value)
        if failure is not None:
            break
        limit = rule.limit_at(schedule, n)
        if limit > 0:
            test = rule.test(defaults, mine, limit=limit, tolerance=tolerance, min_gain=min_gain)
            if test.passed:
                break
        if not rule.could_pass(schedule, defaults, mine, tolerance):
            break
    n = min(len(defaults), len(mine))
    if n and (test is None or not test.passed):  # its figures on every pair, no look
        test = rule.test(defaults[:n], mine[:n], limit=0.0, tolerance=tolerance,
                         min_gain=min_gain)  # fmt: skip
    return WholeRuns(tuple(defaults[:n]), tuple(mine[:n]), test, failure, schedule)
