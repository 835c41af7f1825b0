"""Does a calibrated platform order the collectives as the machine does? (issue 78, item 2)

A calibration fit to ping-pongs can time one message well and still reverse which of two
algorithms of a collective is the faster (2026-11-28, 4 bed nodes: a broadcast's linear
and binomial trees reversed at every size from 8 B to 8 KiB), and the faster of two is what
tuning on the simulation hands back. So the calibration is judged on that, out of sample:

- on the machine: each collective of ``OPS``, every algorithm the library has that SMPI
  ports faithfully (``MPIVendor.smpi_ports``), at ``SIZES``; ``ct_simcoll`` built with the
  user's compiler and started by the calibration's own launch line (all its ranks), the
  algorithm forced at launch, each size's time the median of ``reps`` calls, each after a
  barrier; ``ROUNDS`` launches an algorithm, the order of the algorithms reversed in the
  second, the median of the launches;
- simulated: the same program under ``smpirun`` on a flat cluster of as many nodes of the
  calibrated platform, and on the same links with SimGrid's own factors (the uncalibrated
  platform), the algorithm named by ``--cfg=smpi/OP:NAME``;
- every pair of algorithms at every size where the machine's two differ by more than
  ``CLEAR``: does each platform put the same one first? And the simulated over the real
  time, per collective.

:meth:`Ordering.worse` is what ``calibrate`` refuses: a calibrated platform that puts the
faster first less often than the uncalibrated one on the same real runs.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commtune import native
from commtune.knobs import enumerators
from commtune.launch import launcher_for
from commtune.mpi import CONFIGURATION_FILE, Calibration, Installation, write_cluster
from commtune.progress import Bar
from commtune.sample._simulated import SimRun, _command, _simulate, smpi_algorithms
from commtune.trial import run_process, stderr_summary

PROGRAM = "bench/ct_simcoll.c"
# what the twin proposes (DEFAULT_SIM_OPS), and all-to-all; --quick: three of them
OPS = ("allreduce", "bcast", "reduce", "allgather", "alltoall")
QUICK_OPS = ("allreduce", "bcast", "alltoall")
SIZES = (8, 128, 2048, 16384, 131072, 1048576)
ROUNDS = 2
CLEAR = 0.10  # the machine's two this far apart: an order its noise does not decide
# a platform's two within this: the simulation does not tell them apart (SMPI's ports of two
# algorithms can send the same messages, e.g. at 2 ranks, where the libraries' own code differs)
TIE = 0.01
# a launch's time limit: the first's, then this many times the slowest that ended (at least
# the floor), never more than the calibration's --timeout
FIRST_LAUNCH, LAUNCH_FACTOR, LAUNCH_FLOOR = 120.0, 10.0, 30.0
PLATFORMS = ("calibrated", "plain")  # plain: the same links, SimGrid's own factors
Times = dict[tuple[str, str], dict[int, float]]  # (collective, algorithm) -> size -> seconds
Rounds = dict[tuple[str, str], list[dict[int, float]]]  # the same, each launch's


@dataclass
class Pair:
    """Two algorithms of one collective at one size: the machine's times and each
    platform's."""

    op: str
    size: int
    names: tuple[str, str]  # the library's names
    real: tuple[float, float]
    simulated: dict[str, tuple[float, float]]  # platform -> its two times
    rounds: list[tuple[float, float]] = field(default_factory=list)  # each launch's two

    @property
    def steady(self) -> bool | None:
        """Every round of the machine put the same one first (None: fewer than 2 rounds)."""
        if len(self.rounds) < 2:
            return None
        return len({a < b for a, b in self.rounds}) == 1

    @property
    def clear(self) -> bool:
        a, b = self.real
        return max(a, b) > (1 + CLEAR) * min(a, b)

    def agrees(self, platform: str) -> bool:
        """The platform puts the machine's faster first (a tie puts neither)."""
        (a, b), (x, y) = self.real, self.simulated[platform]
        return (a < b and x < y) or (b < a and y < x)

    def tied(self, platform: str) -> bool:
        """The platform's two within ``TIE`` of each other: it tells them apart not at all."""
        x, y = self.simulated[platform]
        return max(x, y) <= (1 + TIE) * min(x, y)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "size": self.size, "names": list(self.names),
                "real": list(self.real), "clear": self.clear,
                "simulated": {p: list(t) for p, t in self.simulated.items()},
                "rounds": [list(r) for r in self.rounds], "steady": self.steady,
                "agrees": {p: self.agrees(p) for p in self.simulated},
                "tied": {p: self.tied(p) for p in self.simulated}}  # fmt: skip


@dataclass
class Ordering:
    """The check's result: every pair compared, the sim/real ratios per collective and
    platform, the algorithms left out and why."""

    ranks: int
    sizes: tuple[int, ...]
    pairs: list[Pair]
    ratios: dict[str, dict[str, list[float]]]  # platform -> collective -> sim / real
    left_out: dict[str, str] = field(default_factory=dict)  # "op/name" -> why

    def agree(self, platform: str) -> int:
        return sum(p.agrees(platform) for p in self.pairs if p.clear)

    @property
    def clear(self) -> int:
        return sum(p.clear for p in self.pairs)

    def ties(self, platform: str) -> int:
        """Clear pairs the platform simulates within ``TIE`` of each other: none of them can
        agree, whatever its factors."""
        return sum(p.tied(platform) for p in self.pairs if p.clear)

    @property
    def steady(self) -> int | None:
        """Clear pairs whose rounds on the machine agree with each other: what any platform
        can be expected to agree with (None: one round)."""
        known = [p.steady for p in self.pairs if p.clear and p.steady is not None]
        return sum(known) if known else None

    def worse(self) -> bool:
        """The calibrated platform puts the faster first less often than the plain one."""
        return self.agree("calibrated") < self.agree("plain")

    def ratio(self, platform: str, op: str) -> float | None:
        values = self.ratios.get(platform, {}).get(op, [])
        return statistics.median(values) if values else None

    def lines(self) -> list[str]:
        """The comparison as the terminal prints it."""
        if not self.clear:
            return [f"the collectives on {self.ranks} ranks: no two algorithms differed by "
                    f"more than {CLEAR:.0%} on the machine; the order was not checked"]  # fmt: skip
        out = [f"the collectives on {self.ranks} ranks, the faster of two algorithms where "
               f"the machine's differ by > {CLEAR:.0%} (calibrated / the simulator's own factors; "
               "sim/real median):"]  # fmt: skip
        for op in dict.fromkeys(p.op for p in self.pairs):
            mine = [p for p in self.pairs if p.op == op and p.clear]
            got = [sum(x.agrees(q) for x in mine) for q in PLATFORMS]
            ratios = " / ".join("-" if (r := self.ratio(q, op)) is None else f"{r:.2f}"
                                for q in PLATFORMS)  # fmt: skip
            out.append(f"  {op}: {got[0]} / {got[1]} of {len(mine)}; {ratios}")
        a, b = (self.agree(q) for q in PLATFORMS)
        out.append(f"  all: {a} / {b} of {self.clear} ({a / self.clear:.0%} / "
                   f"{b / self.clear:.0%})")  # fmt: skip
        tied = [self.ties(q) for q in PLATFORMS]
        out.append(f"  simulated within {TIE:.0%} of each other (the simulator's two ports "
                   f"send the same messages; no factor orders them): {tied[0]} / {tied[1]} of "
                   f"{self.clear}")  # fmt: skip
        if self.steady is not None:
            out.append(f"  the machine against itself (its launches in turn): {self.steady} of "
                       f"{self.clear}")  # fmt: skip
        for what, why in self.left_out.items():
            out.append(f"  left out: {what} ({why})")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"ranks": self.ranks, "sizes": list(self.sizes), "clear": self.clear,
                "steady": self.steady,
                "agree": {p: self.agree(p) for p in PLATFORMS},
                "ties": {p: self.ties(p) for p in PLATFORMS},
                "ratio": {p: {op: self.ratio(p, op) for op in self.ratios.get(p, {})}
                          for p in PLATFORMS},
                "pairs": [p.to_json() for p in self.pairs],
                "left_out": dict(self.left_out)}  # fmt: skip


def algorithms(inst: Installation, smpi: Installation,
               ops: Sequence[str] = OPS) -> dict[str, dict[str, str]]:  # fmt: skip
    """collective -> {the library's name: SMPI's} of the faithful ports both have."""
    have = enumerators(inst)
    available = smpi_algorithms(smpi)
    out: dict[str, dict[str, str]] = {}
    for op in ops:
        names = have.get(inst.impl.algorithm_knob(op), ())
        ports = inst.impl.smpi_ports.get(op, {})
        mine = {lib: sim for sim, lib in ports.items()
                if lib in names and sim in available.get(op, ())}  # fmt: skip
        if len(mine) >= 2:
            out[op] = dict(sorted(mine.items()))
    return out


def _parse(stdout: str) -> tuple[dict[int, float], int]:
    """Times per size and the ranks the launch started, from ct_simcoll's lines."""
    times, ranks = {}, 0
    for line in stdout.splitlines():
        if line.startswith("{"):
            data = json.loads(line)
            times[int(data["size"])] = float(data["seconds"])
            ranks = int(data.get("ranks", 0))
    return times, ranks


def measure(inst: Installation, launch: Sequence[str], algs: Mapping[str, Mapping[str, str]],
            sizes: Sequence[int], reps: int, timeout: float,
            bar: Bar) -> tuple[Rounds, dict[str, str], int]:  # fmt: skip
    """The machine's times per (collective, algorithm), each launch's per size; what failed
    and why; the ranks the launch line started."""
    program = str(native.build(inst, PROGRAM))
    launcher = launcher_for(inst)
    runs: dict[tuple[str, str], list[dict[int, float]]] = {}
    failed: dict[str, str] = {}
    ranks, slowest = 0, 0.0
    for r in range(ROUNDS):
        for op, names in algs.items():
            order = list(names) if r % 2 == 0 else list(names)[::-1]
            for name in order:
                if f"{op}/{name}" in failed:
                    continue
                variables = {**inst.impl.race_env, **inst.impl.algorithm_env,
                             inst.impl.env_name(inst.impl.algorithm_knob(op)): name}  # fmt: skip
                argv = [*launch, program, "-s", ",".join(map(str, sizes)), "-r", str(reps), op]
                plan = launcher.plan(argv, variables)
                # a launch that hangs (MPICH 4.0's scatter-allgather broadcasts under Slurm, 2
                # ranks) costs a multiple of the slowest that ended, not the calibration's
                limit = min(timeout, max(LAUNCH_FLOOR, LAUNCH_FACTOR * slowest)
                            if slowest else FIRST_LAUNCH)  # fmt: skip
                done = run_process(plan.argv, plan.env, limit)
                if done.returncode == 0:
                    slowest = max(slowest, done.wall)
                times, started = _parse(done.stdout) if done.returncode == 0 else ({}, 0)
                ranks = max(ranks, started)
                if sorted(times) != sorted(sizes):
                    why = (
                        f"killed after {limit:.0f} s"
                        if done.timed_out
                        else (stderr_summary(done.stderr_tail) or f"exit {done.returncode}")
                    )
                    failed[f"{op}/{name}"] = why
                else:
                    runs.setdefault((op, name), []).append(times)
                bar.advance(1, f"{op} {name}")
    return {k: v for k, v in runs.items() if f"{k[0]}/{k[1]}" not in failed}, failed, ranks


def simulate(smpi: Installation, calibration: Calibration, ranks: int,
             algs: Mapping[str, Mapping[str, str]], sizes: Sequence[int], directory: Path,
             timeout: float) -> dict[str, Times]:  # fmt: skip
    """platform -> (collective, the library's name) -> simulated time per size."""
    binary = native.build(smpi, PROGRAM)
    out: dict[str, Times] = {}
    for platform in PLATFORMS:
        where = directory / f"order-{platform}"
        path, hosts = write_cluster(calibration.cluster(ranks, 1, "flat"), str(where))
        if platform == "calibrated":  # beside the platform, as `commtune cluster` writes it
            (where / CONFIGURATION_FILE).write_text(calibration.cfg_text("calibration checked"))
        got: Times = {}
        for op, names in algs.items():
            for name, port in names.items():
                run = SimRun(ranks, op, port)
                _simulate(smpi, _command(smpi, path, hosts, ranks, op, port, binary, sizes),
                          run, sizes, timeout)  # fmt: skip
                if run.error is None:
                    got[(op, name)] = dict(run.times)
        out[platform] = got
    return out


def compare(ranks: int, sizes: Sequence[int], real: Mapping[tuple[str, str], Mapping[int, float]],
            simulated: Mapping[str, Mapping[tuple[str, str], Mapping[int, float]]],
            left_out: Mapping[str, str],
            rounds: Mapping[tuple[str, str], Sequence[Mapping[int, float]]] | None = None,
            ) -> Ordering:  # fmt: skip
    """Every pair of algorithms both platforms simulated and the machine ran, every size
    (``real``: the median of the machine's ``rounds``, each launch's times)."""
    rounds = rounds or {}
    pairs: list[Pair] = []
    ratios: dict[str, dict[str, list[float]]] = {p: {} for p in PLATFORMS}
    known = [k for k in real if all(k in simulated[p] for p in PLATFORMS)]
    missing = {f"{op}/{name}": "the simulation failed" for op, name in real if (op, name)
               not in known}  # fmt: skip
    for op in dict.fromkeys(op for op, _ in known):
        names = sorted(name for o, name in known if o == op)
        for s in sizes:
            for platform in PLATFORMS:
                ratios[platform].setdefault(op, []).extend(
                    simulated[platform][(op, n)][s] / real[(op, n)][s] for n in names
                    if real[(op, n)][s] > 0)  # fmt: skip
            for a, b in itertools.combinations(names, 2):
                turns = list(zip(rounds.get((op, a), ()), rounds.get((op, b), ()), strict=False))
                pairs.append(Pair(op, s, (a, b), (real[(op, a)][s], real[(op, b)][s]),
                                  {p: (simulated[p][(op, a)][s], simulated[p][(op, b)][s])
                                   for p in PLATFORMS},
                                  [(x[s], y[s]) for x, y in turns]))  # fmt: skip
    return Ordering(ranks, tuple(sizes), pairs, ratios, {**left_out, **missing})


def check_ordering(inst: Installation, smpi: Installation, calibration: Calibration,
                   launch: Sequence[str], reps: int, largest: int, timeout: float,
                   directory: Path, bar: Bar, quick: bool = False) -> Ordering:  # fmt: skip
    """The check of the module docstring on the calibration's launch line (all its ranks;
    ``quick``: ``QUICK_OPS`` only)."""
    sizes = [s for s in SIZES if s <= largest] or [min(SIZES)]
    algs = algorithms(inst, smpi, QUICK_OPS if quick else OPS)
    bar.grow(ROUNDS * sum(len(v) for v in algs.values()))
    rounds, failed, ranks = measure(inst, launch, algs, sizes, reps, timeout, bar)
    if not rounds:
        return Ordering(ranks, tuple(sizes), [], {}, failed)
    real = {k: {s: statistics.median(t[s] for t in got) for s in sizes}
            for k, got in rounds.items()}  # fmt: skip
    simulated = simulate(smpi, calibration, ranks, algs, sizes, directory, timeout)
    return compare(ranks, sizes, real, simulated, failed, rounds)
