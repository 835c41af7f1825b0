"""How a study is searched and decided, as the user chooses it: one frozen :class:`Plan`,
built at the command line's edge, every default in it once (argparse reads them from
:data:`DEFAULTS`). What *defines* a study (its command, space, metric) is its
:class:`~commtune.study.StudySpec`; a plan may change when a study is resumed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Plan:
    """How a study is searched and decided, as the user chooses it (``tune``'s options).
    Every default is here, once: the command line reads its defaults from :data:`DEFAULTS`."""

    strategy: str = "tpe"
    strategy_options: Mapping[str, str] = field(default_factory=dict)
    trials: int = 20  # trials of the study, the reference included
    repeats: int = 3  # the cap of a configuration's runs (raced below it)
    statistic: str = "median"  # of a configuration's runs (stats.statistic)
    timeout: float | None = None  # per run; None: 5x the reference's median, >= MIN_TIMEOUT
    reference_timeout: float = 600.0
    confirm: int = 5  # first rounds of the confirmation (0: none)
    top: int = 3  # configurations the confirmation runs against the default
    max_runs: int | None = None  # every run of the study, controls and confirmation included
    seed: int | None = None
    # Controls beside the trials, and raced repeats (both False: the design before them,
    # every configuration run ``repeats`` times relative to the reference's median).
    controls: bool = True
    racing: bool = True
    control_every: int = 6  # trial runs between two control runs (tune/_schedule.py)

    def search_limit(self) -> int | None:
        """Runs the search may reach: ``max_runs`` less the first rounds of a confirmation
        of one candidate (more candidates are confirmed only where the runs left allow
        ``confirm`` rounds of them all)."""
        if self.max_runs is None:
            return None
        return self.max_runs - self.confirm * 2


DEFAULTS = Plan()

BUDGET_REPEATS = 2  # the raced cap of a study whose --max-runs cannot give every trial its


def default_repeats(max_runs: int | None, trials: int) -> int:
    """The cap of a configuration's runs when the user names none: the default, or, where
    ``max_runs`` cannot give every trial the default's runs, ``BUDGET_REPEATS`` (a second
    run is what racing needs to tell near-ties apart; a third costs a configuration: on the
    recorded tables at 30 runs, 2 held 95-99 % of the best speedup where 3 held 68-73 %,
    docs/benchmarks.md)."""
    if max_runs is not None and max_runs < trials * DEFAULTS.repeats:
        return BUDGET_REPEATS
    return DEFAULTS.repeats
