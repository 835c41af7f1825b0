"""Running the sampler program (``native/bench/ct_sample.c``) under each method.

Launch-time methods (eager limit, single-copy mechanism) cannot be switched inside a run, so
each is measured in several short launches instead of one long one: the sizes are dealt
into rounds (round k takes every R-th size from the k-th), and each round launches every
method once in an order rotated by k, so no method is always first and a slow phase of the
machine lands on all methods' curves, as a kink between neighbouring sizes, rather than
shifting one method's whole curve. Each of those launches also measures a control before
every size, a ping-pong of ``CONTROL`` bytes (below every eager limit, so no method changes
it), and its rows are scaled by the family's median control over the launch's: on these
machines one launch can run 2.5x slower than the next, throughout. One launch per
collective for all its algorithms, switched through MPI_T inside the run, their order
rotated size by size (``ct_sample``).
A launch that crashes or hangs is killed with its process tree and recorded as failed; the
other methods go on. A collective whose all-in-one launch fails is retried one algorithm
per launch, so one broken algorithm costs only its own curve.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from commtune import native, stats
from commtune.errors import UsageError
from commtune.launch import launcher_for
from commtune.mpi import Installation
from commtune.platform import Fingerprint
from commtune.progress import Bar, NullBar
from commtune.sample._curves import Curve
from commtune.sample._families import LARGEST, MIN_SIZE, PROTOCOL, SINGLE_COPY, Family
from commtune.sample._profile import FamilyCurves, PlatformProfile
from commtune.trial import run_process, stderr_summary

MAX_SIZE = 4 << 20
CONTROL = 1  # bytes of the control ping-pong in launch-time families


def launch_plan(methods: Sequence[str], sizes: Sequence[int]) -> list[tuple[str, list[int]]]:
    """(method, sizes) of each launch, in order: ``len(methods)`` rounds (at least 2) of
    every method once, rotated round by round; round k measures sizes k, k + R, ..."""
    rounds = max(2, len(methods))
    plan = []
    for k in range(rounds):
        part = list(sizes[k::rounds])
        if not part:
            continue
        order = list(methods[k % len(methods) :]) + list(methods[: k % len(methods)])
        plan += [(method, part) for method in order]
    return plan


def sizes_for(op: str, quick: bool) -> list[int]:
    """1 B to 4 MiB: powers of two, and their midpoints unless ``quick`` (within the
    operation's own bounds: a vector's block lengths, from 8 B to a quarter of its message)."""
    out: list[int] = []
    size = 1
    while size <= MAX_SIZE:
        out.append(size)
        if not quick and 4 <= size < MAX_SIZE:
            out.append(size + size // 2)
        size *= 2
    return [s for s in out if MIN_SIZE.get(op, 1) <= s <= LARGEST.get(op, MAX_SIZE)]


@dataclass
class Launch:
    """What one launch measured: (method value or -1, size) -> row, or why it failed."""

    rows: list[dict[str, float]]
    error: str | None


def parse_output(stdout: str) -> tuple[list[dict[str, float]], list[str]]:
    """Rows and per-value errors from ct_sample's JSON lines (other lines are ignored)."""
    rows, errors = [], []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "error" in row:
            errors.append(str(row["error"]))
        elif {"op", "size", "median_ns"} <= row.keys():
            rows.append(row)
    return rows, errors


def curve_of(method: str, rows: Sequence[dict[str, float]]) -> Curve:
    rows = sorted(rows, key=lambda r: r["size"])
    return Curve(
        method,
        tuple(int(r["size"]) for r in rows),
        tuple(float(r["median_ns"]) for r in rows),
        tuple(float(r["q1_ns"]) for r in rows),
        tuple(float(r["q3_ns"]) for r in rows),
    )


def scale_to_control(launches: Sequence[Sequence[dict[str, float]]]) -> None:
    """Scale each launch's times by the median control level of all launches over its own
    (in place): a launch whose processes ran slower throughout is brought to the level of
    the others. A launch's level is the median of its rows' controls (one control is three
    short blocks; their median over the launch is steadier than each)."""
    levels = []
    for rows in launches:
        own = [r["control_ns"] for r in rows if r.get("control_ns", -1) > 0]
        levels.append(stats.median(own) if own else None)
    known = [level for level in levels if level]
    if not known:
        return
    middle = stats.median(known)
    for rows, level in zip(launches, levels, strict=True):
        if level is None:
            continue
        for r in rows:
            for key in ("median_ns", "q1_ns", "q3_ns"):
                r[key] *= middle / level


class Sampler:
    def __init__(
        self,
        installation: Installation,
        ranks: int,
        quick: bool,
        timeout: float | None = None,
        bar: Bar | None = None,
        remove: Sequence[str] = (),
    ) -> None:
        if ranks < 2:
            raise UsageError("sampling needs at least 2 ranks (--np)")
        self.installation = installation
        self.ranks = ranks
        self.quick = quick
        self.timeout = timeout if timeout is not None else (120.0 if quick else 900.0)
        self.binary = native.build(installation, "bench/ct_sample.c")
        self.launcher = launcher_for(installation)
        self.bar: Bar = bar or NullBar()
        self._remove: list[str] = list(remove)  # variables of the user's not passed on

    def launch(
        self,
        op: str,
        env: dict[str, str],
        runtime: tuple[str, Sequence[int]] | None = None,
        sizes: Sequence[int] | None = None,
        control: int | None = None,
    ) -> Launch:
        program = [str(self.binary)]
        if self.quick:
            program.append("-q")
        if control is not None:
            program += ["-c", str(control)]
        program += ["-s", ",".join(map(str, sizes or sizes_for(op, self.quick)))]
        if runtime is not None:
            program += ["-w", runtime[0], "-v", ",".join(map(str, runtime[1]))]
        program.append(op)
        plan = self.launcher.plan(
            self.launcher.command(self.ranks, program), env, remove=self._remove
        )
        result = run_process(plan.argv, plan.env, self.timeout)
        rows, errors = parse_output(result.stdout)
        if result.timed_out:
            return Launch(rows, f"timed out after {self.timeout:.0f} s")
        if result.returncode != 0:
            said = stderr_summary(result.stderr_tail) or "no output"
            return Launch(rows, f"exit {result.returncode}: {said}")
        return Launch(rows, "; ".join(errors) or None)

    def steps(self, fams: Sequence[Family]) -> int:
        return sum(len(f.methods) if f.methods else 1 for f in fams)

    def sample(self, fams: Sequence[Family], fingerprint: Fingerprint) -> PlatformProfile:
        t0 = time.perf_counter()
        # The knobs being sampled are set by each launch; the user's own exports would blur it.
        self._remove = sorted({f.knob.env for f in fams})
        done: list[FamilyCurves] = []
        chosen_copy: dict[str, str] = {}
        for fam in fams:
            env = dict(fam.env)
            if fam.name == PROTOCOL:  # measured with the chosen single-copy mechanism
                env.update(chosen_copy)
            result = self._sample_family(fam, env)
            done.append(result)
            if fam.name == SINGLE_COPY and (best := result.best_overall()) is not None:
                chosen_copy = {fam.knob.env: fam.knob.format(fam.knob.to_internal(best))}
        return PlatformProfile(fingerprint, self.ranks, self.quick, done, time.perf_counter() - t0)

    def _sample_family(self, fam: Family, env: dict[str, str]) -> FamilyCurves:
        curves: dict[str, Curve] = {}
        failed: dict[str, str] = {}
        if fam.methods:
            rows: dict[str, list[dict[str, float]]] = {m: [] for m in fam.methods}
            launches: list[list[dict[str, float]]] = []
            plan = launch_plan(list(fam.methods), sizes_for(fam.op, self.quick))
            for i, (method, sizes) in enumerate(plan):
                if method in failed:
                    continue
                self.bar.status(f"{fam.key}: {method} ({i + 1}/{len(plan)} launches)")
                settings = {**env, **fam.methods[method]}
                out = self.launch(fam.op, settings, sizes=sizes, control=CONTROL)
                if out.error or not out.rows:
                    failed[method] = out.error or "no output"
                else:
                    rows[method] += out.rows
                    launches.append(out.rows)
            self.bar.advance(len(fam.methods))
            scale_to_control(launches)
            for method, measured in rows.items():
                if method not in failed:
                    curves[method] = curve_of(method, measured)
        else:
            self.bar.status(f"{fam.key}: {len(fam.runtime)} algorithms")
            names = {v: m for m, v in fam.runtime.items()}
            out = self.launch(fam.op, env, (fam.knob.name, list(names)))
            self.bar.advance()
            by_value: dict[int, list[dict[str, float]]] = {}
            for row in out.rows:
                by_value.setdefault(int(row["value"]), []).append(row)
            if out.error:  # retry each missing algorithm alone
                for value, method in names.items():
                    if len(by_value.get(value, ())) == len(sizes_for(fam.op, self.quick)):
                        continue
                    alone = self.launch(fam.op, env, (fam.knob.name, [value]))
                    if alone.error or not alone.rows:
                        failed[method] = alone.error or "no output"
                        by_value.pop(value, None)
                    else:
                        by_value[value] = alone.rows
            for value, got in sorted(by_value.items()):
                curves[names[value]] = curve_of(names[value], got)
        return FamilyCurves(
            fam.op,
            fam.name,
            fam.knob.name,
            fam.default,
            dict(env),
            curves,
            failed,
            dict(fam.runtime),
        )
