"""A study's settings, as the user chooses them: one frozen :class:`Plan`, built at the edge
(the command line, a script, a benchmark), every default in it once (argparse reads them
from :data:`DEFAULTS`), handed down to the tuning service, the loop, the scheduler and the
verdict. A plan holds settings, never what a step found (a study's name from its space, a
twin's ranking, a race's narrowing travel beside it); where a step runs under other
settings than the user's, one named function makes them from the user's
(``service.simulated_plan`` and ``budgeted``: a simulation's; the twin's real study,
``service._twin``; ``tune.exact_plan``: a deterministic study's). What *defines* a study
as stored (its command, space, metric, repeats, statistic) is its
:class:`~commtune.study.StudySpec`, made from the plan by ``StudySpec.of``; the rest of a
plan may change when a study is resumed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from commtune.study._gate import PLANNED, Gate


@dataclass(frozen=True)
class Plan:
    """A study's settings: what is tuned and measured, how it is searched and decided, and
    where its runs go. Checked as a whole by the service (``service.check``)."""

    # -- how it is searched and decided
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
    # Runs of the defaults that all give one value make a deterministic study (a
    # simulation): one run a configuration, no controls (tune._loop.exact_plan).
    exact: bool = True
    # The verdict (tune/_decide.py): ``risk`` hands a configuration back only where its
    # fresh runs beside the defaults' pass commtune.rule's paired test (its runs counted
    # ``tolerance`` faster; the null: it is ``tolerance`` slower; the chance of a wrong pass
    # below ``risk`` in all, a gain of ``min_gain`` at least); ``strict`` is the
    # signed-rank gate of the top ``top`` confirmed in ``confirm`` rounds (tune/_confirm.py).
    gate: Gate = Gate.RISK
    risk: float = 0.05
    min_gain: float = 0.01
    tolerance: float = 0.02
    explore: float = 0.3  # --gate risk: the share of --max-runs the search may spend
    # A space of one collective's algorithm variable that the library reads while the
    # program runs: its candidates raced call by call in up to ``inrun_runs`` runs
    # (service._inrun), the answer checked on whole runs; False: whole runs only.
    inrun: bool = True
    inrun_runs: int = 3
    # -- what is tuned and measured
    mpi: str | None = None  # --mpi: a family, FAMILY@VERSION or a prefix (None: the launcher's)
    knobs: tuple[str, ...] = ()  # --knob NAME[=VALUES]
    presets: tuple[str, ...] = ()
    # --metric: the first is searched and confirmed, the others measured in every run
    metrics: tuple[str, ...] = ("wall",)
    interposer: bool = True  # libcommtune preloaded: profiles, knobs checked
    knowledge: bool = True  # earlier studies' answers on this platform are tried first
    # -- the study and where its runs go
    study: str | None = None  # its name (None: made from the command and the space)
    storage: str = "sqlite:///commtune.db"  # normalised (``store.normalize_url``)
    replay: str | None = None  # run nothing: answer every run from this recorded table
    record: str | None = None  # run every configuration and write a replay table here
    scales: tuple[str, ...] = ()  # --scale NAME=VALUE: the command is a template
    trains: tuple[str, ...] = ()  # --train NAME=V1,V2 (--strategy model)
    train_from: str | None = None
    sbatch: tuple[str, ...] | None = None  # each run its own Slurm job, with these options
    through: tuple[str, ...] = ()  # every launch line runs under this prefix (a bed's node)
    across_nodes: bool = False  # one rank per node: the default space is the network's
    # --as LIBRARY: a simulated study tuned as that real library (its decision the reference,
    # its algorithms the space, its own settings the answer)
    as_library: str | None = None
    # --twin LINE: the same program built for the simulator and its smpirun line; its
    # simulated study ranks the configurations, the real runs decide (service.Tuning._twin)
    twin: tuple[str, ...] | None = None
    # seconds of this machine's wall time for a simulated search (the twin's, or a simulated
    # study's where ``by_wall_time``): as many runs as that buys, at most MOST_SIM_RUNS
    sim_budget: float = 600.0
    by_wall_time: bool = False  # the user bounded neither runs nor trials: sim_budget does

    @property
    def metric(self) -> str:
        """The metric searched and confirmed."""
        return self.metrics[0]

    @property
    def objectives(self) -> tuple[str, ...]:
        """The further metrics, measured in every run and shown beside."""
        return self.metrics[1:]

    def __post_init__(self) -> None:
        if not isinstance(self.gate, Gate):  # a plan built from words (a script, a benchmark)
            object.__setattr__(self, "gate", Gate(self.gate))

    @property
    def decides(self) -> bool:
        """Whether the study ends with a verdict: ``--confirm 0`` asks for none."""
        return self.confirm > 0

    def deciding_runs(self) -> int:
        """The runs the verdict's first decision needs: under ``risk``, the pairs of the
        first configuration it tests before it can pass (:func:`commtune.rule.fewest`);
        under ``strict``, the confirmation's first rounds of one candidate and the default.
        The one count that :func:`commtune.service.check`, :meth:`search_limit` and the
        verdict share; none under ``--confirm 0``, which asks for no verdict."""
        if not self.decides:
            return 0
        if self.gate is Gate.RISK:
            from commtune import rule  # numpy: not at --help

            return 2 * rule.fewest(self.risk)
        return 2 * self.confirm

    def search_limit(self, settled: bool = False) -> int | None:
        """Runs the search may reach. ``strict``: ``max_runs`` less the first rounds of a
        confirmation of one candidate (more candidates are confirmed only where the runs
        left allow ``confirm`` rounds of them all); ``risk``: the ``explore`` share of it,
        the rest for the verdict, and never so much that the verdict is left fewer runs than
        :meth:`deciding_runs`, and an even number of runs left for the verdict's pairs.
        ``settled``: a deterministic study (``tune._loop.exact_plan``), no reserve;
        ``--confirm 0`` asks for no verdict, and the search may spend every run."""
        if self.max_runs is None:
            return None
        if self.gate is Gate.RISK and not self.decides:
            return self.max_runs  # no verdict: every run the search's
        if self.gate is Gate.RISK:
            needed = 0 if settled else self.deciding_runs()
            limit = max(1, min(round(self.max_runs * self.explore), self.max_runs - needed))
            # the verdict's runs go in pairs: an odd one left over goes to the search
            return limit + (self.max_runs - limit) % 2 if not settled else limit
        return self.max_runs - self.deciding_runs()

    def search_repeats(self) -> int:
        """A configuration's runs in the search: ``repeats`` (raced) under the strict gate;
        one under the risk gate, whose duel gives contenders their repeats."""
        return 1 if self.gate is Gate.RISK else self.repeats


GATES = tuple(g.value for g in PLANNED)  # --gate's choices

DEFAULTS = Plan()

# The calls of an in-run race's unit: consecutive calls of one candidate, after a barrier
# (``commtune race --run``'s default; here, not in ``tune``, so that the command line's
# parser reads it without loading the tuner)
RACE_RUN = 8
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
