"""The verdict: the best configurations and the default run again, interleaved.

The top ``k`` configurations of the search that came within the noise of the default or
beat it, and within the noise of the best of them (one slower than the best by more is
dominated: not confirmed), are the candidates. Every round runs the default and each
candidate once, in an order rotated round by round. From round ``FIRST_LOOK`` on, after
every round, each candidate is compared with the default on all its rounds, each candidate
run paired with the default run of its round, so drift between rounds cancels
(:func:`commtune.stats.compare_paired`, Bonferroni-corrected for ``k``): the confirmation
stops when the leading candidate is faster beyond noise or its CI ends below
``NEGLIGIBLE`` (not worth setting), and goes on while the leader is undecided, up to
``CONFIRM_CAP`` times ``confirm`` rounds, the candidates ruled out (CI ending below
``NEGLIGIBLE``) or clearly behind the leader left out. The signed-rank test cannot call a
candidate faster before 5 pairs (6 for three candidates), so looking from round 3 accepts
nothing earlier than looking from round 5 did: it only stops sooner what will not be
accepted, at the gate's error rates. The verdict names
the fastest candidate that is faster beyond noise, or, if none is, why the leader is not
(two clusters of runs against a stable default, for one). Keeping the default is a verdict.

The best configuration's knobs that measured no effect in the search are dropped
(``tune._reduce``), and the reduced configuration runs as one more candidate (in place of
the last of the top ``k`` when there are ``k``); it wins over its full configuration when
both are faster beyond noise, it sets nothing the full one does not, and the full one's
speedup lies inside the reduced one's CI: the smallest configuration that does as well is
what is accepted and exported.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from commtune import stats
from commtune.errors import UsageError
from commtune.knobs import Knob, Value
from commtune.progress import Progress
from commtune.study import (
    Acceptance,
    Notes,
    Plan,
    Source,
    StrictFinding,
    StudyView,
    config_key,
    set_acceptance,
)
from commtune.trial import Executor

if TYPE_CHECKING:
    import optuna

CONFIRM_CAP = 3  # the sequential confirmation adds rounds up to 3x --confirm (5 + 5 -> 15 + 15)
LEVEL = 0.95
# The first look: candidates ruled out go from here (the signed-rank test cannot call one
# faster before 5 pairs, so acceptance is no earlier than before).
FIRST_LOOK = 3
NEGLIGIBLE = 1.02  # a candidate whose CI ends below this cannot be worth setting


@dataclass
class Candidate:
    trial: int
    config: dict[str, Value]
    reduced: dict[str, str] | None = None  # knob -> why dropped: the best one, reduced
    rounds: dict[int, float] = field(default_factory=dict)  # round -> its run's value
    failure: str = ""
    cmp: stats.Comparison | None = None
    # the study's other objectives: round -> metric -> value; and their comparisons
    others: dict[int, dict[str, float | None]] = field(default_factory=dict)
    others_cmp: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def values(self) -> list[float]:
        return list(self.rounds.values())

    def pairs(self, default: dict[int, float]) -> tuple[list[float], list[float]]:
        """(default, candidate) values of the rounds where both ran."""
        both = [i for i in self.rounds if i in default]
        return [default[i] for i in both], [self.rounds[i] for i in both]

    def to_json(self) -> dict[str, Any]:
        cmp = self.cmp
        return {
            "trial": self.trial,
            "params": self.config,
            "values": self.values,
            "rounds": list(self.rounds),
            "failure": self.failure,
            "speedup": cmp.speedup if cmp else None,
            "ci": [cmp.ci_low, cmp.ci_high] if cmp else None,
            "p_value": cmp.p_value if cmp else None,
            "faster": bool(cmp and cmp.faster),
            "objectives": self.others_cmp,
            "dropped": self.reduced,
        }


def confirm(
    study: optuna.Study,
    executor: Executor,
    timeout: float,
    ui: Progress,
    plan: Plan,
) -> Acceptance | None:
    """Confirm the search's best configurations (see the module docstring) as ``plan`` asks
    (its ``confirm`` rounds, ``top``, ``statistic``, ``max_runs``); stored: the verdict of
    ``--gate strict`` (``tune._decide.verdict`` chooses by the gate)."""
    rounds, top, statistic, max_runs = plan.confirm, plan.top, plan.statistic, plan.max_runs
    view = StudyView(study)
    ref = view.reference()
    best = view.best(max(1, top))
    if not best or ref is None or ref.value is None or rounds <= 0:
        return None
    n_measured = len(view.ran())
    stored = view.verdict()
    if stored and stored.source is Source.SEARCH:
        return stored
    band = max(0.02, 2 * view.noise().cv)
    within = [t for t in best if t.value is not None and t.value < ref.value * (1 + band)]
    if not within:
        assert best[0].value is not None
        acc = Acceptance(
            Source.SEARCH,
            dict(best[0].config),
            False,
            "no configuration came within noise of the default in the search",
            trial=best[0].number,
            measured_trials=n_measured,
            # nothing was confirmed: no speedup, CI or p-value; the search's own estimate
            # is kept under its name
            finding=StrictFinding(search_speedup=ref.value / best[0].value),
        )
        set_acceptance(study, acc)
        return acc
    # dominated in the search (slower than the best by more than the noise): not confirmed
    lead = within[0].value
    assert lead is not None
    within = [t for t in within if t.value is not None and t.value <= lead * (1 + band)]
    candidates = [Candidate(t.number, dict(t.config)) for t in within]
    smaller = _reduced(view, candidates[0], view.noise().cv)
    if smaller is not None and all(config_key(smaller.config) != config_key(c.config)
                                   for c in candidates):  # fmt: skip
        candidates = [*candidates[: max(1, top - 1)], smaller]
    room = None if max_runs is None else max_runs - view.runs_spent()
    if room is not None:
        candidates = candidates[: _affordable(len(candidates), rounds, room)]
    level = 1 - (1 - LEVEL) / len(candidates)
    default, default_others = _rounds(executor, timeout, ui, candidates, rounds, statistic,
                                      level, room)  # fmt: skip
    _compare(default, candidates, statistic, level)
    for c in candidates:
        c.others_cmp = compare_others(default_others, c.others, level)
    acc = without_defaults(_verdict(candidates, default, statistic, n_measured), view)
    set_acceptance(study, acc)
    return acc


def _rounds(
    executor: Executor,
    timeout: float,
    ui: Progress,
    candidates: list[Candidate],
    rounds: int,
    statistic: str,
    level: float,
    room: int | None,
) -> tuple[dict[int, float], dict[int, dict[str, float | None]]]:
    """The confirmation's rounds: the default and every candidate still in once each a
    round, the order rotated, from the first look on the clearly slower dropped and the
    rounds stopped once the leader is decided; the default's runs (round -> value) and its
    further objectives returned, the candidates' kept on them."""
    default: dict[int, float] = {}  # round -> the default's run
    default_others: dict[int, dict[str, float | None]] = {}
    active = list(candidates)
    made = 0
    with ui.progress("confirming the best against the default", rounds * (1 + len(active))) as bar:
        for i in range(CONFIRM_CAP * rounds):
            if i >= min(FIRST_LOOK, rounds):
                _compare(default, active, statistic, level)
                leader = _leader(active)
                if leader is None or leader.cmp is None:
                    break
                # decided: faster, or not worth setting (CI ends below NEGLIGIBLE)
                if leader.cmp.faster or leader.cmp.ci_high < NEGLIGIBLE:
                    break
                active = [
                    c
                    for c in active
                    if c.cmp is not None
                    and c.cmp.ci_high >= NEGLIGIBLE
                    and c.cmp.ci_high >= leader.cmp.speedup  # not clearly behind the leader
                ]
                bar.grow(made + max(1, rounds - i) * (1 + len(active)))
            if room is not None and room < 1 + len(active):
                break
            order: list[Candidate | None] = [None, *active]
            k = i % len(order)
            for which in order[k:] + order[:k]:
                run = executor.run(None if which is None else which.config, timeout)
                made += 1
                bar.advance()
                if room is not None:
                    room -= 1
                if run.value is None:
                    if which is not None:
                        which.failure = f"failed when run again: {run.failure}"
                    continue
                (default if which is None else which.rounds)[i] = run.value
                (default_others if which is None else which.others)[i] = run.secondary
            active = [c for c in active if not c.failure]
            if not active:
                break
    return default, default_others


def _affordable(k: int, rounds: int, room: int) -> int:
    """How many of ``k`` candidates the runs left (``room``) can confirm: each round runs
    the default and every candidate, and there must be room for ``rounds`` rounds and for
    the pairs the signed-rank test needs to call one faster at the level corrected for
    them (5 pairs for one, 6 for two or three: two candidates in 15 runs could never be
    accepted). At least one: the best is confirmed as far as the runs go."""
    while k > 1 and (1 + k) * max(rounds, stats.min_pairs(1 - (1 - LEVEL) / k)) > room:
        k -= 1
    return max(1, k)


def _compare(
    default: dict[int, float], candidates: list[Candidate], statistic: str, level: float
) -> None:
    for c in candidates:
        d, v = c.pairs(default)
        ok = not c.failure and len(d) >= 2
        c.cmp = stats.compare_paired(d, v, stat=statistic, level=level) if ok else None


def compare_others(
    default: dict[int, dict[str, float | None]],
    others: dict[int, dict[str, float | None]],
    level: float = LEVEL,
) -> dict[str, dict[str, Any]]:
    """Each further objective of a candidate (``others``: round -> metric -> value) against
    the default's (``default``), in the same rounds:
    ``improvement`` = default / candidate (above 1: lower, better), its CI, and whether it is
    lower beyond noise."""
    metrics = {m for values in default.values() for m in values}
    out: dict[str, dict[str, Any]] = {}
    for m in sorted(metrics):
        both = [
            i
            for i in others
            if i in default and others[i].get(m) is not None and default[i].get(m) is not None
        ]
        d = [float(default[i][m]) for i in both]  # type: ignore[arg-type]
        v = [float(others[i][m]) for i in both]  # type: ignore[arg-type]
        if len(both) < 2 or min(d + v) <= 0:
            out[m] = {"default": None, "candidate": None, "improvement": None, "ci": None,
                      "better": False}  # fmt: skip
            continue
        cmp = stats.compare_paired(d, v, level=level)
        out[m] = {
            "default": stats.median(d),
            "candidate": stats.median(v),
            "improvement": cmp.speedup,
            "ci": [cmp.ci_low, cmp.ci_high],
            "better": cmp.faster,
        }
    return out


def _leader(candidates: list[Candidate]) -> Candidate | None:
    compared = [c for c in candidates if c.cmp is not None and not c.failure]
    return max(compared, key=lambda c: c.cmp.speedup) if compared else None  # type: ignore[union-attr]


def _verdict(
    candidates: list[Candidate], rounds: dict[int, float], statistic: str, n_measured: int
) -> Acceptance:
    default = list(rounds.values())
    faster = [c for c in candidates if c.cmp is not None and c.cmp.faster and not c.failure]
    winner = max(faster, key=lambda c: c.cmp.speedup) if faster else _leader(candidates)  # type: ignore[union-attr]
    winner, reduced_from = _smaller(candidates, faster, winner)
    listed = [c.to_json() for c in candidates]
    if winner is None or winner.cmp is None:
        first = candidates[0]
        failures = "; ".join(f"trial {c.trial} {c.failure}" for c in candidates if c.failure)
        return Acceptance(
            Source.SEARCH,
            first.config,
            False,
            failures or "too few successful runs to compare",
            trial=first.trial,
            measured_trials=n_measured,
            default_values=default,
            best_values=first.values,
            finding=StrictFinding(candidates=listed, statistic=statistic, rounds=list(rounds)),
        )
    cmp = winner.cmp
    split = stats.clusters(winner.values)
    reason = ""
    if not cmp.faster:
        reason = "not faster beyond noise"
        if len(split) == 2:
            (n1, m1), (n2, m2) = split
            reason += (
                f": its runs fall into two clusters ({n1} at {m1:.4g}, {n2} at {m2:.4g}) "
                f"against a default at {stats.median(default):.4g}"
            )
    paired_default, paired = winner.pairs(rounds)
    mean_speedup = sum(paired_default) / sum(paired)  # the same rounds: throughput
    return Acceptance(
        Source.SEARCH,
        winner.config,
        cmp.faster,
        reason,
        speedup=cmp.speedup,
        ci=(cmp.ci_low, cmp.ci_high),
        p_value=cmp.p_value,
        trial=winner.trial,
        measured_trials=n_measured,
        default_values=default,
        best_values=winner.values,
        finding=StrictFinding(
            candidates=listed,
            statistic=statistic,
            rounds=list(rounds),
            mean_speedup=mean_speedup,
            objectives=winner.others_cmp,
            clusters=[{"runs": n, "median": m} for n, m in split] if len(split) == 2 else [],
        ),
        notes=Notes(dropped=winner.reduced, reduced_from=reduced_from)
        if winner.reduced is not None
        else Notes(),
    )


def _smaller(
    candidates: list[Candidate], faster: list[Candidate], winner: Candidate | None
) -> tuple[Candidate | None, dict[str, Any]]:
    """The winner, or its reduced configuration where that was confirmed as fast (every
    knob it sets set as the winner does), with what it was reduced from."""
    smaller = next((c for c in faster if c.reduced is not None), None)
    reduced_from = _origin(candidates, smaller) if smaller is not None else {}
    if (
        winner is not None
        and winner.cmp is not None
        and smaller is not None
        and smaller is not winner
        # the winner's configuration, reduced: every knob it sets, set as the winner does
        # (reduced from the winner's trial or from a trial that measured as fast)
        and all(winner.config.get(k) == v for k, v in smaller.config.items())
        and smaller.cmp is not None
        and smaller.cmp.ci_high >= winner.cmp.speedup
    ):
        if smaller.trial != winner.trial:  # reduced from another trial that measured as fast
            why = smaller.reduced or {}
            smaller = replace(smaller, reduced={
                k: why[k] if k in why and reduced_from.get(k) == v
                else "as fast without it in the confirmation"
                for k, v in winner.config.items() if k not in smaller.config
            })  # fmt: skip
            reduced_from = dict(winner.config)
        winner = smaller
    return winner, reduced_from


def knobs_of(view: StudyView) -> dict[str, Knob] | None:
    """The study's knobs as its reference runs them (a knob's default its baseline where a
    calibration pins another value: ``Dimension.reference``); None: its catalog no longer
    has one of them."""
    from commtune.knobs import space_from_json

    spec = view.spec()
    try:
        space = space_from_json(spec.library, spec.space)
    except (UsageError, OSError):  # a library without a catalog (a synthetic surface's)
        try:
            space = space_from_json(spec.library, spec.space, {})  # the stored definitions
        except UsageError:
            return None
    return {d.knob.name: d.reference for d in space.dimensions}


def without_defaults(acc: Acceptance, view: StudyView) -> Acceptance:
    """An accepted configuration without the knobs set to their library default (setting
    one is not setting it): what is handed back names only what differs."""
    knobs = knobs_of(view)
    if not acc.accepted or knobs is None:
        return acc
    at_default = [k for k, v in acc.params.items() if k in knobs and v == knobs[k].default]
    if not at_default or len(at_default) == len(acc.params):
        # nothing to drop; or everything: a configuration of defaults only measured faster
        # than the defaults left unset, and is handed back as measured
        return acc
    reduced = acc.notes.dropped is not None  # reduced already: what was tested is said
    tested = acc.notes.reduced_from if reduced else dict(acc.params)
    why = dict.fromkeys(at_default, "the library's default value")
    notes = replace(acc.notes, reduced_from=tested, dropped={**(acc.notes.dropped or {}), **why})
    params = {k: v for k, v in acc.params.items() if k not in at_default}
    return replace(acc, params=params, notes=notes)


def _reduced(view: StudyView, best: Candidate, noise_cv: float) -> Candidate | None:
    """The best configuration without the knobs that measured no effect (None: all of
    them matter, or none does)."""
    from commtune.tune._reduce import reduce_config

    knobs = knobs_of(view)
    if knobs is None:  # a knob its catalog no longer has: keep the configuration whole
        return None
    measured: list[tuple[dict[str, Value], float]] = [({}, 1.0)] + [
        (dict(r.config), float(r.value)) for r in view.completed() if r.value is not None
    ]
    kept, dropped = reduce_config(best.config, knobs, measured, noise_cv)
    if not dropped or not kept:
        return None
    return Candidate(best.trial, kept, reduced=dropped)


def _origin(candidates: list[Candidate], reduced: Candidate) -> dict[str, Value]:
    full = next((c for c in candidates if c.trial == reduced.trial and c.reduced is None), None)
    return dict(full.config) if full is not None else {}
