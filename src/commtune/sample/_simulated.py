"""Sampling a cluster that is not here (NewMadeleine's sampling, ACCLAiM's question): each
collective's algorithms over message sizes on a simulated cluster (SimGrid's SMPI), at the
rank counts a user names, the best per size, written as the real library's selection file for
that cluster, and the collective time saved against the library's own decision.

SMPI carries ports of real libraries' collective algorithms and of their decision logic (its
selectors; ``MPIVendor.smpi_selector``). Only the algorithms its selector runs for one of the
library's own (``MPIVendor.smpi_ports``) are sampled for that library, so every choice written
names an algorithm the library has; the rest of SMPI's algorithms are named as left out. The
simulation leaves computation out (``smpi/simulate-computation:no``): a call takes the same
simulated time each time and one call per size is the measurement (``bench/ct_simcoll.c``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commtune import native
from commtune.errors import UsageError
from commtune.knobs import enumerators, load_catalog, selection_file_env
from commtune.mpi import (
    Installation,
    Platform,
    RulesError,
    Segment,
    launch_files,
    simulated_command,
)
from commtune.mpi.smpi import SAMPLING_BARRIER, calibrated_args
from commtune.progress import Progress
from commtune.sample._curves import Curve, method_at, segments
from commtune.sample._outputs import builtin_selection
from commtune.util import write_atomic

if TYPE_CHECKING:
    from commtune.store import Store

SIM_OPS = ("allreduce", "bcast", "reduce", "allgather", "alltoall", "gather", "scatter",
           "barrier")  # fmt: skip
# alltoall when named: every rank's flows at once (its linear algorithm at 256 ranks took more
# than 12 minutes of simulation, measured)
DEFAULT_SIM_OPS = ("allreduce", "bcast", "reduce", "allgather")
# 8 B to 1 MiB, a factor of 8 apart: one call each, so the sizes are the cost
SIM_SIZES = (8, 64, 512, 4096, 32768, 262144, 1048576)
SELECTOR = "selector:"  # a run under one of SMPI's selectors: the library's own decision


@dataclass
class SimRun:
    """One simulation: a collective at every size under one algorithm (or a selector)."""

    ranks: int
    op: str
    method: str  # SMPI's algorithm, or "selector:<name>"
    times: dict[int, float] = field(default_factory=dict)  # size -> simulated seconds
    error: str | None = None
    wall: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"ranks": self.ranks, "op": self.op, "method": self.method,
                "times": {str(s): t for s, t in self.times.items()}, "error": self.error,
                "wall": round(self.wall, 3)}  # fmt: skip

    def curve(self, name: str) -> Curve | None:
        """Its times as a sampled curve (ns) under ``name``; None for a failed run."""
        if self.error:
            return None
        sizes = tuple(sorted(self.times))
        return Curve(name, sizes, tuple(self.times[s] * 1e9 for s in sizes))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SimRun:
        return cls(data["ranks"], data["op"], data["method"],
                   {int(s): float(t) for s, t in data["times"].items()}, data.get("error"),
                   float(data.get("wall", 0.0)))  # fmt: skip


@dataclass
class Saving:
    """At one rank count and size: the library's own decision against the sampled choice."""

    target: str
    ranks: int
    op: str
    size: int
    default: float  # seconds, SMPI's port of the library's decision
    chosen: float  # seconds, the sampled best among the library's algorithms
    algorithm: str  # the library's name of the chosen one

    @property
    def saved(self) -> float:
        return 1.0 - self.chosen / self.default

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "ranks": self.ranks, "op": self.op, "size": self.size,
                "default_s": self.default, "chosen_s": self.chosen, "algorithm": self.algorithm,
                "saved": self.saved}  # fmt: skip


@dataclass
class SimSample:
    cluster: str  # the simulated cluster's description (with its platform's digest)
    ranks: list[int]
    runs: list[SimRun]
    files: dict[str, str] = field(default_factory=dict)  # target -> selection file
    env: dict[str, dict[str, str]] = field(default_factory=dict)  # target -> its variables
    choices: dict[str, dict[int, dict[str, list[Segment]]]] = field(default_factory=dict)
    savings: list[Saving] = field(default_factory=list)
    left_out: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # target -> op -> algs
    warnings: list[str] = field(default_factory=list)
    reused: int = 0  # runs taken from an earlier sample of the same cluster
    studies: dict[str, str] = field(default_factory=dict)  # target -> its proposal's study

    @property
    def wall(self) -> float:
        return sum(r.wall for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "ranks": self.ranks,
            "simulations": len(self.runs),
            "reused": self.reused,
            "wall_s": round(self.wall, 1),
            "failed": [r.to_json() for r in self.runs if r.error],
            "files": self.files,
            "env": self.env,
            "choices": {t: {str(n): {op: [s.to_json() for s in segs] for op, segs in by.items()}
                            for n, by in per.items()} for t, per in self.choices.items()},
            "savings": [s.to_json() for s in self.savings],
            "left_out": self.left_out,
            "warnings": self.warnings,
            "studies": self.studies,
        }  # fmt: skip


def _targets_for(targets: Sequence[Installation]) -> list[Installation]:
    for t in targets:
        if t.impl.smpi_selector is None:
            raise UsageError(f"--for {t.describe()}: SMPI carries no port of its collectives")
    return list(targets)


def _methods(op: str, targets: Sequence[Installation],
             available: Mapping[str, Sequence[str]]) -> list[str]:  # fmt: skip
    """The simulations one collective needs: every ported algorithm this SMPI has, for any of
    ``targets``, and each one's selector."""
    algs = sorted({a for t in targets for a in t.impl.smpi_ports.get(op, {})
                   if a in available.get(op, ())})  # fmt: skip
    selectors = sorted({SELECTOR + str(t.impl.smpi_selector) for t in targets})
    return [*algs, *selectors]


def _command(smpi: Installation, platform: str, hostfile: str, ranks: int, op: str,
             method: str, binary: Path, sizes: Sequence[int]) -> list[str]:  # fmt: skip
    cfg = (f"--cfg=smpi/coll-selector:{method.removeprefix(SELECTOR)}"
           if method.startswith(SELECTOR) else f"--cfg=smpi/{op}:{method}")  # fmt: skip
    # One barrier algorithm before every call of every run: its exit skew is part of the time
    # measured, so under a selector's own barrier the same call would measure differently.
    fixed = [] if op == "barrier" else [SAMPLING_BARRIER]
    return simulated_command(smpi, platform, hostfile, ranks,
                             [cfg, *fixed, "--cfg=smpi/display-timing:no", str(binary),
                              "-s", ",".join(str(s) for s in sizes), op])  # fmt: skip


def _simulate(smpi: Installation, command: list[str], run: SimRun, sizes: Sequence[int],
              timeout: float) -> None:  # fmt: skip
    from commtune.trial import run_process, stderr_summary

    result = run_process(command, dict(os.environ), timeout)
    run.wall = result.wall
    failure = smpi.impl.run_failure(result.stderr_tail)
    if result.timed_out:
        run.error = f"killed after {timeout:.0f} s"
    elif result.returncode != 0 or failure:
        run.error = failure or f"exit {result.returncode}: {stderr_summary(result.stderr_tail)}"
    else:
        for line in result.stdout.splitlines():
            if line.startswith("{"):
                data = json.loads(line)
                run.times[int(data["size"])] = float(data["seconds"])
        if sorted(run.times) != sorted(sizes):
            run.error = "the program did not report every size"


def _cache_key(platform: Platform, hostfile: str, version: str, sizes: Sequence[int]) -> str:
    """What the simulations stand on: the platform, its calibrated configuration, the
    hostfile, the simulator's version and the sizes."""
    text = "\n".join([platform.digest, *calibrated_args(platform.path),
                      Path(hostfile).read_text(), version, ",".join(map(str, sizes))])  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def simulate_all(
    smpi: Installation,
    platform: str,
    hostfile: str,
    ranks: Sequence[int],
    ops: Sequence[str],
    targets: Sequence[Installation],
    ui: Progress,
    *,
    sizes: Sequence[int] = SIM_SIZES,
    cache: Path | None = None,
    reuse: bool = True,
    timeout: float = 3600.0,
) -> tuple[str, list[SimRun], int]:
    """Every simulation the sample needs (with ``reuse``, those ``cache`` holds for the same
    cluster, SMPI and sizes are not run again; every finished one is added to it at once):
    (the cluster's description, the runs, how many were reused)."""
    unknown = sorted(set(ops) - set(SIM_OPS))
    if unknown:
        raise UsageError(f"unknown operation {unknown[0]!r} on a simulated cluster "
                         f"(known: {', '.join(SIM_OPS)})")  # fmt: skip
    launch = launch_files([smpi.launcher, "-np", str(max(ranks)), "-platform", platform,
                           "-hostfile", hostfile])  # fmt: skip
    available = smpi_algorithms(smpi)
    binary = native.build(smpi, "bench/ct_simcoll.c")
    key = _cache_key(launch.platform, hostfile, smpi.version, sizes)
    stored: dict[tuple[int, str, str], SimRun] = {}
    if reuse and cache is not None and cache.exists():
        data = json.loads(cache.read_text())
        if data.get("key") == key:
            for r in map(SimRun.from_json, data["runs"]):
                stored[(r.ranks, r.op, r.method)] = r
    if cache is not None:  # the input checked: now the directory may be made
        cache.parent.mkdir(parents=True, exist_ok=True)
    plan = [(n, op, m) for n in sorted(ranks) for op in ops
            for m in _methods(op, targets, available)]  # fmt: skip
    runs: list[SimRun] = []
    reused = 0
    with ui.progress("simulating", total=len(plan)) as bar:
        for n, op, method in plan:
            op_sizes = (1,) if op == "barrier" else tuple(sizes)
            if (n, op, method) in stored:
                runs.append(stored[(n, op, method)])
                reused += 1
            else:
                run = SimRun(n, op, method)
                _simulate(smpi, _command(smpi, platform, hostfile, n, op, method, binary,
                                         op_sizes), run, op_sizes, timeout)  # fmt: skip
                runs.append(run)
                stored[(n, op, method)] = run
                if cache is not None:  # every finished simulation kept at once
                    kept = [r.to_json() for r in stored.values()]
                    write_atomic(cache, json.dumps({"key": key, "runs": kept}, indent=1))
            bar.advance(1, f"{n} ranks {op} {method}")
    return launch.describe(), runs, reused


def smpi_algorithms(smpi: Installation) -> dict[str, tuple[str, ...]]:
    """collective -> the algorithms this SMPI has (read from the installation), without the
    values that name a selector's choice (``mpich``, ``selector``, ...): no algorithm."""
    from commtune.mpi.smpi import FOLLOW_SELECTOR, SELECTORS

    chosen_by_selector = {*SELECTORS, FOLLOW_SELECTOR}
    # the installation's discovery, cached per installation (one set of probe runs)
    out = {name.removeprefix("smpi/"): names for name, names in enumerators(smpi).items()}
    return {k: v if k == "coll-selector" else tuple(a for a in v if a not in chosen_by_selector)
            for k, v in out.items()}  # fmt: skip


def _algorithm_numbers(target: Installation, ops: Sequence[str]) -> dict[str, dict[str, int]]:
    """op -> the library's algorithm name -> its number (what its selection file writes)."""
    catalog = load_catalog(target.vendor.value)
    names = enumerators(target)
    out: dict[str, dict[str, int]] = {}
    for op in ops:
        knob = catalog.get(target.impl.algorithm_knob(op))
        listed = names.get(knob.name, ()) if knob else ()
        if listed:
            out[op] = {n: i for i, n in enumerate(listed)}
    return out


def write_selections(
    sample: SimSample,
    targets: Sequence[Installation],
    ops: Sequence[str],
    output_dir: Path,
    available: Mapping[str, Sequence[str]],
) -> None:
    """Per target: the best of its algorithms per size at each rank count (its own decision
    among them, preferred on ties), its selection file (validated by commtune's reader of the
    library's format before it is moved into place), the savings and what was left out."""
    output_dir.mkdir(parents=True, exist_ok=True)
    by_key = {(r.ranks, r.op, r.method): r for r in sample.runs}
    for target in targets:
        vendor = target.vendor.value
        ports = target.impl.smpi_ports
        numbers = _algorithm_numbers(target, ops)
        builtin = builtin_selection(target)
        texts: dict[int, str] = {}
        choices: dict[int, dict[str, list[Segment]]] = {}
        for n in sample.ranks:
            segs: dict[str, list[Segment]] = {}
            for op in ops:
                ranges = _ranges(sample, target, by_key, numbers, n, op)
                if ranges is not None:
                    # kept where the library's own decision wins everywhere too: Open MPI
                    # takes the rules of the largest communicator size not above its own,
                    # so every size sampled says what it wants
                    segs[op] = ranges
            if not segs:
                continue
            header = (f"commtune sample of a simulated cluster: {sample.cluster}\n"
                      f"{n} ranks; SMPI's ports of {target.describe()}'s algorithms")  # fmt: skip
            try:
                selection = target.impl.write_selection(
                    segs, {op: numbers[op] for op in segs}, n, header, builtin
                )
            except RulesError as exc:
                sample.warnings.append(f"{vendor}, {n} ranks: {exc}")
                continue
            sample.warnings += [f"{vendor}, {n} ranks: {w}" for w in selection.warnings]
            texts[n] = selection.text
            choices[n] = segs
        sample.choices[vendor] = choices
        sample.left_out[vendor] = _left_out(available, ports, ops)
        if all(
            seg.method == next(iter(numbers.get(op, {"": 0})))
            for by_op in choices.values()
            for op, ranges in by_op.items()
            for seg in ranges
        ):
            sample.warnings.append(f"{vendor}: its own decision is the fastest at every size "
                                   "sampled; no selection file written")  # fmt: skip
            continue
        path = output_dir / f"{vendor}-{target.version}-{target.impl.selection_file_name}"
        try:
            text = target.impl.merge_selections(texts, builtin)
        except RulesError as exc:
            sample.warnings.append(f"{vendor}: {exc}; no selection file written")
            continue
        write_atomic(path, text)
        sample.files[vendor] = str(path.resolve())
        sample.env[vendor] = selection_file_env(target.impl, str(path.resolve()))


def _ranges(
    sample: SimSample,
    target: Installation,
    by_key: Mapping[tuple[int, str, str], SimRun],
    numbers: Mapping[str, Mapping[str, int]],
    n: int,
    op: str,
) -> list[Segment] | None:
    """The best of ``target``'s algorithms per size for ``op`` at ``n`` ranks (its own
    decision preferred on ties), with what choosing so saves at each size against its own
    decision added to ``sample.savings``; None where fewer than two were simulated."""
    vendor, ports = target.vendor.value, target.impl.smpi_ports
    # the library's own decision, under the name its selection file gives it (Open MPI's
    # "ignore": the fixed rules; MPICH's "auto": its built-in subtree)
    own_name = next(iter(numbers.get(op, {})), None)
    own = by_key.get((n, op, SELECTOR + str(target.impl.smpi_selector)))
    if own is not None and own.error:
        own = None
    named = [(own_name, own)] if own_name is not None else []
    named += [(name, by_key.get((n, op, alg))) for alg, name in
              ports.get(op, {}).items() if name in numbers.get(op, {})]  # fmt: skip
    curves = [c for name, run in named if run is not None
              if (c := run.curve(name)) is not None]  # fmt: skip
    if len(curves) < 2:
        return None
    ranges = segments(curves, prefer=own_name)
    by_name = {c.method: c for c in curves}
    own_times = own.times if own is not None else {}
    for size in sorted(own_times):
        method = method_at(ranges, size)  # what the file chooses at this size
        chosen = by_name[method].at(size)
        if chosen is not None:
            sample.savings.append(Saving(vendor, n, op, size, own_times[size], chosen / 1e9,
                                         method))  # fmt: skip
    return ranges


def _left_out(available: Mapping[str, Sequence[str]], ports: Mapping[str, Mapping[str, str]],
              ops: Sequence[str]) -> dict[str, list[str]]:  # fmt: skip
    """Per collective, SMPI's algorithms that are no port of one of the library's (those
    carried under its names but not its algorithm among them: ``smpi_unfaithful``)."""
    return {op: sorted(set(available.get(op, ())) - set(ports.get(op, {}))) for op in ops}


def save_proposals(store: Store, sample: SimSample, targets: Sequence[Installation]) -> None:
    """Per real library with a file: a study holding it as a proposal (not accepted: no run
    on the real machine has measured it), so ``commtune check STUDY -- mpirun ...`` runs it
    against the library's defaults there and ``commtune export`` hands out its variables."""
    from commtune.study import Acceptance, Notes, Source, StudySpec, save_result_study

    digest = hashlib.sha256(sample.cluster.encode()).hexdigest()[:8]
    for target in targets:
        vendor = target.vendor.value
        if vendor not in sample.files:
            continue
        name = f"simulated-{vendor}-{digest}"
        spec = StudySpec(["commtune", "sample", "--mpi", "smpi"], vendor, [],
                         "wall", 0)  # checked on the real machine by its wall time  # fmt: skip
        verdict = Acceptance(
            Source.SAMPLE, {}, False,
            f"sampled on a simulated cluster ({sample.cluster}), not measured on this machine",
            env=dict(sample.env[vendor]),
            notes=Notes(proposal=True, ranks=sample.ranks, file=sample.files[vendor]),
        )  # fmt: skip
        save_result_study(store.optuna, name, spec, verdict)
        sample.studies[vendor] = name


def sample_simulated(
    smpi: Installation,
    platform: str,
    hostfile: str,
    ranks: Sequence[int],
    targets: Sequence[Installation],
    ui: Progress,
    *,
    ops: Sequence[str] = DEFAULT_SIM_OPS,
    sizes: Sequence[int] = SIM_SIZES,
    output_dir: Path = Path("commtune-platform"),
    refresh: bool = False,
    timeout: float = 3600.0,
    store: Store | None = None,
) -> SimSample:
    """``commtune sample --mpi smpi``: see the module docstring."""
    targets = _targets_for(targets)
    if not targets:
        raise UsageError(
            "no real library to write a selection for: SMPI carries ports of "
            "libraries none of which is installed here (--for names one)"
        )
    cache = output_dir / "smpi-sample.json"
    cluster, runs, reused = simulate_all(smpi, platform, hostfile, ranks, ops, targets, ui,
                                         sizes=sizes, cache=cache, reuse=not refresh,
                                         timeout=timeout)  # fmt: skip
    sample = SimSample(cluster, sorted(ranks), runs, reused=reused)
    sample.warnings += [f"{r.ranks} ranks, {r.op} {r.method}: failed ({r.error})"
                        for r in runs if r.error]  # fmt: skip
    write_selections(sample, targets, ops, output_dir, smpi_algorithms(smpi))
    if store is not None:
        save_proposals(store, sample, targets)
    ui.info(
        f"{len(runs)} simulations ({reused} of them from {cache}) took {sample.wall:.0f} s "
        "of wall time"
    )
    return sample
