"""Calibrate a simulated cluster from the machine it stands for.

SimGrid's authors calibrate a platform from measurements of the real machine
(platform-calibration; Cornebize, Legrand, Heinrich 2019): a ping-pong and the time the
sender spends in ``MPI_Send`` and ``MPI_Isend`` and the receiver in ``MPI_Recv`` of a message
already sent, over message sizes drawn at random; the protocol breakpoints found in the
curves; a linear fit per size segment. :func:`calibrate` does the same with the user's MPI:

1. ``ct_calibrate`` (``native/bench``) on two nodes through the user's launch line (``srun -N
   2 -n 2``, ``mpirun -np 2 --host a,b``, a test bed's plain ``mpirun -np 2``), and on one node
   (two ranks that share it), each rank's compute rate beside; a launch line of more ranks
   (``srun -N 8 -n 8``) measures ranks 0 and 1 while every other pair does the same: the
   machine under the load of all its nodes talking at once, as in a collective;
2. the eager limit where ``MPI_Isend`` stops handing the whole message over (the time it
   keeps the sender drops: :func:`eager_limit`), and the size below which a receive finds
   the message already there;
3. the one-way time split into the sender's and the receiver's overheads and the network's
   part (below the eager limit the two overheads together, ``os + or``, capped at
   ``CPU_SHARE`` of the one-way time; ``ois``, the ``MPI_Isend`` overhead, is not capped),
   the network's part cut into segments by a least-squares search for breakpoints
   (dynamic programming, the number of segments by BIC) and fitted per segment: latency and
   bandwidth factors against the link's latency and its bandwidth at the largest sizes,
   within what the link can do (issue 78): a latency factor at least 1 (no message arrives
   sooner than the smallest do) and a bandwidth factor at most the rate of a train of 4 of
   the segment's messages sent back to back (:func:`train_cap`). A ping-pong of one message
   at a time passes a shaper's token bucket at its burst rate (on the bed, 20x the link's),
   which a collective's messages at once do not: fitted to ping-pongs alone, 2-68 KiB had
   a bandwidth factor of 20 and the collectives ran 2-4x too fast;
4. the simulator run on the calibrated platform with the same sizes, and each segment's
   factors corrected by what it got wrong (three rounds at most). This agreement is on the
   sizes and medians the fit used: in sample, a measure of the fit;
5. the check out of sample (:func:`held_out`): a fresh launch of ``ct_calibrate`` between
   the two nodes on sizes the fit never saw (drawn from another seed, none of the fit's),
   simulated on the calibrated platform and on the same links with SimGrid's own factors;
   both agreements are reported. It is still a ping-pong;
6. how the platform orders the collectives (:mod:`commtune.sample._ordering`): on the
   launch line's ranks, each collective's algorithms that SMPI ports faithfully, on the
   machine and simulated on the calibrated platform and on SimGrid's own factors; the
   command refuses (:func:`check_order`) a platform that puts the faster of two first less
   often than SimGrid's own factors on the same real runs.

Nothing is written before every step has passed; a launch on one node where two were
asked, a launch that fails, a platform the simulation cannot bring within 2x of the
measurement, or one that orders the collectives worse is one line (UsageError).
"""

from __future__ import annotations

import math
import os
import random
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commtune import native
from commtune.errors import UsageError
from commtune.launch import launcher_for
from commtune.mpi import (
    CALIBRATION_FORMAT,
    NO_COMPUTE,
    SIMULATOR_NEEDED,
    Calibration,
    Installation,
    find_simulators,
    launch_line,
    speed_args,
    write_cluster,
)
from commtune.progress import Progress
from commtune.sample._calibrate_fit import (
    Measurement,
    fit,
    refine,
    refine_loopback,
)
from commtune.sample._ordering import Ordering, check_ordering
from commtune.trial import run_process, stderr_summary

PROGRAM = "bench/ct_calibrate.c"
ROUNDS = 3  # corrections of the factors by the simulation
CONTRADICTED = 2.0  # a median simulated/measured ratio beyond this (or its inverse) fails
GOOD = (0.8, 1.25)  # a size whose simulated time is within this of the measured one agrees


@dataclass
class Agreement:
    """The simulated over the measured one-way time, per size."""

    ratios: dict[int, float]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios.values())

    def within(self, low: float, high: float) -> float:
        values = list(self.ratios.values())
        return sum(low <= r <= high for r in values) / len(values)

    def to_json(self) -> dict[str, Any]:
        return {"median": self.median, "within_0.8_1.25": self.within(*GOOD),
                "within_0.5_2": self.within(0.5, 2.0),
                "ratios": {str(k): v for k, v in self.ratios.items()}}  # fmt: skip


@dataclass
class CalibrationResult:
    calibration: Calibration
    between: Measurement
    within: Measurement | None
    agreement: Agreement  # between two nodes, on the sizes the fit used (in sample)
    agreement_within: Agreement | None  # two ranks of one node
    simulated: dict[int, float]  # one-way time simulated between two nodes, per size
    simulated_within: dict[int, float] | None
    launch: list[str]
    one_node: list[str] | None
    installation: str
    # out of sample: a fresh launch on sizes the fit never saw, the calibrated platform and
    # the same links with SimGrid's own factors (None: not measured)
    held_out: Agreement | None = None
    held_out_plain: Agreement | None = None
    # how the platform orders the collectives against the machine (None: not checked)
    ordering: Ordering | None = None
    # each bandwidth factor's bound, by the trains (its piece's threshold, the bound)
    caps: list[tuple[int, float]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def curves(m: Measurement) -> dict[str, dict[str, float]]:
            return {op: {str(s): t for s, t in m.medians(op).items()} for op in m.samples}

        return {
            "format": CALIBRATION_FORMAT, "version": 1,
            "installation": self.installation, "launch": self.launch,
            "one_node": self.one_node, "hosts": list(self.between.hosts),
            "pairs": self.between.pairs,
            "calibration": self.calibration.to_json(),
            "configuration": self.calibration.configuration(),
            "agreement": self.agreement.to_json(),
            "agreement_within": (None if self.agreement_within is None
                                 else self.agreement_within.to_json()),
            "held_out": None if self.held_out is None else self.held_out.to_json(),
            "held_out_plain": (None if self.held_out_plain is None
                               else self.held_out_plain.to_json()),
            "ordering": None if self.ordering is None else self.ordering.to_json(),
            "bw_factor_caps": [list(c) for c in self.caps],
            "measured": curves(self.between),
            "measured_within": None if self.within is None else curves(self.within),
            "simulated": {str(s): t for s, t in self.simulated.items()},
            "simulated_within": (None if self.simulated_within is None else
                                 {str(s): t for s, t in self.simulated_within.items()}),
        }  # fmt: skip


# -- running ------------------------------------------------------------------------------------
def draw_sizes(count: int, largest: int, seed: int) -> list[int]:
    """``count`` message sizes drawn log-uniform in [1, ``largest``], in the drawn order."""
    rng = random.Random(seed)
    return [max(1, round(math.exp(rng.random() * math.log(largest)))) for _ in range(count)]


def simulator() -> Installation:
    """The installed simulator (smpicc and smpirun); UsageError naming the package."""
    found = find_simulators()
    if found:
        return found[0]
    raise UsageError(f"calibrate checks the cluster it writes in the simulator: it needs "
                     f"{SIMULATOR_NEEDED}")  # fmt: skip


def measure(inst: Installation, launch: Sequence[str], args: Sequence[str], timeout: float,
            where: str, env: Mapping[str, str] | None = None) -> Measurement:  # fmt: skip
    """One launch of ``ct_calibrate`` by the launch line ``launch`` (the program appended);
    UsageError where it fails or prints no measurement."""
    program = native.build(inst, PROGRAM)
    plan = launcher_for(inst).plan([*launch, str(program), *args], {}, base_env=env)
    line = " ".join(launch)
    done = run_process(plan.argv, plan.env, timeout).ended_well(f"{where}: '{line}'", timeout)
    try:
        return Measurement.parse(done.stdout)
    except ValueError:
        raise UsageError(f"{where}: '{line}' printed no measurement (does it start at "
                         "least 2 ranks?)") from None  # fmt: skip


def host_speed(smpi: Installation, directory: Path) -> float:
    """This machine's compute rate as SimGrid benchmarks compute bursts: ``ct_calibrate -c``
    simulated on a host of 1 Gflop/s with ``smpi/host-speed`` 1 Gflop/s."""
    from commtune.mpi import Cluster

    platform, hosts = write_cluster(Cluster(1, 1, "flat", speed="1Gf"), str(directory / "speed"))
    program = native.build(smpi, PROGRAM)
    argv = [*launch_line(platform, hosts, 1), *speed_args("1Gf"),
            "--log=root.thres:critical", str(program), "-c"]  # fmt: skip
    done = run_process(argv, dict(os.environ), 120)
    found = Measurement.flops_of(done.stdout) if done.returncode == 0 else None
    if not found:
        raise UsageError(f"the simulator's benchmark of this machine failed: "
                         f"{stderr_summary(done.stderr_tail) or 'no rate printed'}")  # fmt: skip
    return found


def simulate(smpi: Installation, calibration: Calibration, directory: Path, sizes_file: Path,
             same_node: bool, timeout: float, plain: bool = False) -> dict[int, float]:  # fmt: skip
    """The one-way time per size of ``ct_calibrate -p`` simulated on two nodes of the
    calibrated platform (``same_node``: two ranks of one node; ``plain``: its links with
    SimGrid's own factors and thresholds, nothing calibrated beside them)."""
    cluster = calibration.cluster(2, 2 if same_node else 1, "flat")
    platform, _ = write_cluster(cluster, str(directory / "sim"))
    hosts = directory / "sim" / ("hosts-one" if same_node else "hosts-two")
    first = cluster.hostfile().splitlines()[0]
    names = [first, first] if same_node else sorted(set(cluster.hostfile().split()))[:2]
    hosts.write_text("".join(f"{n}\n" for n in names))
    program = native.build(smpi, PROGRAM)
    argv = [*launch_line(platform, str(hosts), 2), NO_COMPUTE,
            *([] if plain else calibration.cfg_args()),
            "--log=root.thres:critical", str(program), "-f", str(sizes_file), "-r", "1",
            "-p"]  # fmt: skip
    done = run_process(argv, dict(os.environ), timeout)
    if done.timed_out:
        raise UsageError(f"the simulator did not finish the calibrated platform's ping-pong in "
                         f"{timeout:.0f} s (--timeout)")  # fmt: skip
    if done.returncode != 0:
        why = stderr_summary(done.stderr_tail) or f"exit status {done.returncode}"
        raise UsageError(f"the simulator refused the calibrated platform: {why}")
    try:
        return Measurement.parse(done.stdout).medians("pingpong")
    except ValueError:  # SMPI exits 0 where its ranks deadlock
        why = stderr_summary(done.stderr_tail) or "no output"
        raise UsageError(f"the simulator printed no measurement on the calibrated platform "
                         f"({why})") from None  # fmt: skip


def _agreement(measured: Mapping[int, float], simulated: Mapping[int, float]) -> Agreement:
    return Agreement({s: simulated[s] / measured[s] for s in sorted(measured)
                      if s in simulated and measured[s] > 0})  # fmt: skip


def calibrate(inst: Installation, launch: Sequence[str], one_node: Sequence[str] | None,
              count: int, reps: int, largest: int, seed: int, timeout: float,
              ui: Progress, quick: bool = False) -> CalibrationResult:  # fmt: skip
    """Measure, fit and check (see the module docstring; ``quick``: the collectives'
    check on three of them); nothing is written here."""
    smpi = simulator()
    with tempfile.TemporaryDirectory(prefix="commtune-calibrate-") as tmp:
        directory = Path(tmp)
        sizes_file = directory / "sizes"
        sizes_file.write_text("".join(f"{s}\n" for s in draw_sizes(count, largest, seed)))
        args = ["-f", str(sizes_file), "-r", str(reps), "-s", str(seed)]
        with ui.progress("calibrate: measure, fit, check in the simulator", 5) as bar:
            between = measure(inst, launch, args, timeout, "between two nodes")
            if between.hosts[0] == between.hosts[1]:
                raise UsageError(f"'{' '.join(launch)}' put both ranks on one node "
                                 f"({between.hosts[0]}): calibrate needs a launch line of 2 "
                                 "ranks on 2 nodes (srun -N 2 -n 2, mpirun -np 2 --host "
                                 "a,b)")  # fmt: skip
            bar.advance()
            within = None
            if one_node is not None:
                within = measure(inst, one_node, args, timeout, "within one node",
                                 env=_one_node_env(inst))  # fmt: skip
                if within.hosts[0] != within.hosts[1]:
                    raise UsageError(f"--one-node '{' '.join(one_node)}' put its ranks on two "
                                     f"nodes ({', '.join(within.hosts)})")  # fmt: skip
            bar.advance()
            speed = host_speed(smpi, directory)
            calibration, lines, caps = fit(between, within, speed)
            measured = between.medians("pingpong")
            simulated = simulate(smpi, calibration, directory, sizes_file, False, timeout)
            for _ in range(ROUNDS):
                if _agreement(measured, simulated).within(*GOOD) == 1.0:
                    break
                candidate = refine(calibration, lines, caps, measured, simulated)
                again = simulate(smpi, candidate, directory, sizes_file, False, timeout)
                if _error(measured, again) >= _error(measured, simulated):
                    break
                calibration, simulated = candidate, again
            bar.advance()
            simulated_within = agreement_within = None
            if within is not None:
                inside = within.medians("pingpong")
                simulated_within = simulate(smpi, calibration, directory, sizes_file, True,
                                            timeout)  # fmt: skip
                for _ in range(ROUNDS):
                    candidate = refine_loopback(calibration, inside, simulated_within)
                    again = simulate(smpi, candidate, directory, sizes_file, True, timeout)
                    if _error(inside, again) >= _error(inside, simulated_within):
                        break
                    calibration, simulated_within = candidate, again
                agreement_within = _agreement(inside, simulated_within)
            bar.advance()
            agreement = _agreement(measured, simulated)
            check_agreement(agreement)
            fitted = [int(x) for x in sizes_file.read_text().split()]
            held, plain = held_out(inst, launch, calibration, fitted, max(8, count // 3), reps,
                                   largest, seed, timeout, smpi, directory)  # fmt: skip
            bar.advance()
        with ui.progress("calibrate: the collectives on the machine and simulated", 0) as bar:
            ordering = check_ordering(inst, smpi, calibration, launch, max(3, 2 * reps - 1),
                                      largest, timeout, directory, bar, quick)  # fmt: skip
    return CalibrationResult(calibration, between, within, agreement, agreement_within,
                             simulated, simulated_within, list(launch),
                             None if one_node is None else list(one_node),
                             inst.describe(), held, plain, ordering,
                             [(p.above, c) for p, c in zip(calibration.bw_factor, caps,
                                                           strict=True)])  # fmt: skip


def check_order(ordering: Ordering) -> None:
    """UsageError where the calibrated platform puts the faster of two algorithms first
    less often than SimGrid's own factors on the same links (``Ordering.worse``)."""
    if ordering.worse():
        mine, theirs = ordering.agree("calibrated"), ordering.agree("plain")
        raise UsageError(f"the calibrated platform orders the collectives worse than the "
                         f"simulator's own factors on the same links: the faster of two "
                         f"algorithms agrees with the machine in {mine} of {ordering.clear} "
                         f"comparisons against {theirs}; nothing written (--allow-worse-order "
                         "writes it)")  # fmt: skip


HELD_OUT_SEED = 7919  # added to --seed: the held-out sizes' draw


def held_out(inst: Installation, launch: Sequence[str], calibration: Calibration,
             fitted: Sequence[int], count: int, reps: int, largest: int, seed: int,
             timeout: float, smpi: Installation, directory: Path
             ) -> tuple[Agreement, Agreement]:  # fmt: skip
    """The calibration out of sample: a fresh launch between the two nodes on ``count``
    sizes none of which the fit used (``fitted``), simulated on the calibrated platform and
    on its links with SimGrid's own factors; (calibrated, plain) agreements."""
    used = set(fitted)
    sizes = [s for s in draw_sizes(4 * count, largest, seed + HELD_OUT_SEED) if s not in used]
    sizes = list(dict.fromkeys(sizes))[:count]
    sizes_file = directory / "held-out"
    sizes_file.write_text("".join(f"{s}\n" for s in sizes))
    args = ["-f", str(sizes_file), "-r", str(reps), "-s", str(seed + HELD_OUT_SEED)]
    fresh = measure(inst, launch, args, timeout, "held out, a fresh launch between two nodes")
    measured = fresh.medians("pingpong")
    calibrated = simulate(smpi, calibration, directory, sizes_file, False, timeout)
    plain = simulate(smpi, calibration, directory, sizes_file, False, timeout, plain=True)
    return _agreement(measured, calibrated), _agreement(measured, plain)


def check_agreement(agreement: Agreement) -> None:
    """UsageError where the simulation on the calibrated platform stays more than
    ``CONTRADICTED`` times off the measurement at the median size."""
    if not 1 / CONTRADICTED <= agreement.median <= CONTRADICTED:
        raise UsageError(f"the measurement contradicts the calibrated platform: the simulated "
                         f"one-way time is {agreement.median:.2f}x the measured one at the "
                         "median size (the machine's runs too noisy? try more --reps)")  # fmt: skip


def _error(measured: Mapping[int, float], simulated: Mapping[int, float]) -> float:
    """The median of |log(simulated / measured)| over the sizes: how far the two are."""
    return statistics.median(abs(math.log(r)) for r in _agreement(measured, simulated)
                             .ratios.values())  # fmt: skip


def _one_node_env(inst: Installation) -> dict[str, str]:
    """The environment without what spreads a plain launch line over an allocation's nodes
    (a test bed's hostfile): the one-node launch stays on this node."""
    spread = inst.impl.hosts_env("", "")
    return {k: v for k, v in dict(os.environ).items() if k not in spread}
