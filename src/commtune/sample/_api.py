"""Sampling a platform once and reusing it: the entry points behind ``commtune sample``."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commtune.errors import UsageError
from commtune.knobs import enumerators, load_catalog, selection_file_env
from commtune.mpi import Installation, Vendor
from commtune.platform import Fingerprint, on_testbed
from commtune.progress import Progress
from commtune.sample._curves import TIE, method_at
from commtune.sample._families import (
    AGGREGATION,
    ALGORITHM,
    ALL_OPERATIONS,
    BURST,
    OPERATIONS,
    PACK_OR_IOV,
    PINGPONG,
    PROTOCOL,
    VECTOR,
    families,
)
from commtune.sample._outputs import Outputs, builtin_selection, write_outputs
from commtune.sample._profile import FamilyCurves, PlatformProfile
from commtune.sample._sampler import Sampler, sizes_for
from commtune.study import Acceptance, Source, StudySpec, save_result_study

if TYPE_CHECKING:
    from commtune.store import Store

PLATFORM_STUDY = "platform"


def fingerprint_for(installation: Installation, ranks: int) -> Fingerprint:
    """The sample's key: the machine, the MPI and the ranks per node it was sampled with."""
    return Fingerprint.of(installation, ranks_per_node=ranks)


def load_profile(store: Store, fingerprint: Fingerprint) -> PlatformProfile | None:
    data = store.sample(fingerprint.key)
    return PlatformProfile.from_json(data) if data is not None else None


@dataclass
class SampleResult:
    profile: PlatformProfile
    reused: bool
    outputs: Outputs
    study: str

    def to_json(self) -> dict[str, Any]:
        return {
            **self.profile.summary(),
            "reused": self.reused,
            "study": self.study,
            **self.outputs.to_json(),
        }


def sample_platform(
    installation: Installation,
    store: Store,
    ui: Progress,
    *,
    ranks: int = 2,
    quick: bool = False,
    refresh: bool = False,
    output_dir: Path = Path("commtune-platform"),
    operations: Sequence[str] | None = None,
) -> SampleResult:
    """The platform profile for this fingerprint: the stored one unless ``refresh`` (or it is a
    quick one and a full one is asked for), else sampled now and stored. Writes the outputs
    and the study ``platform-<key>`` that ``run``/``export`` accept."""
    operations = OPERATIONS if operations is None else operations
    if "all" in operations:
        operations = ALL_OPERATIONS
    unknown = sorted(set(operations) - set(ALL_OPERATIONS))
    if unknown:
        raise UsageError(
            f"unknown operation {unknown[0]!r} (known: {', '.join(ALL_OPERATIONS)}, all)"
        )
    fingerprint = fingerprint_for(installation, ranks)
    store.save_platform(fingerprint)
    # inside a test bed's node the ranks are spread over its nodes: the network's limits
    fams = families(installation, enumerators(installation), tuple(operations),
                    across_nodes=on_testbed())  # fmt: skip
    profile = None if refresh else load_profile(store, fingerprint)
    if profile is not None and profile.quick and not quick:
        ui.info("stored platform profile is a quick one; sampling in full")
        profile = None
    if profile is not None and {f.key for f in fams} - {f.key for f in profile.families}:
        ui.info("the stored platform profile lacks operations asked for: sampling again")
        profile = None
    reused = profile is not None
    if profile is None:
        with ui.progress(f"sampling {installation.vendor.value}", total=0) as bar:
            sampler = Sampler(installation, ranks, quick, bar=bar)
            bar.grow(sampler.steps(fams))
            profile = sampler.sample(fams, fingerprint)
        store.save_sample(fingerprint.key, profile.to_json())
    else:
        ui.info(
            f"reusing the platform profile {fingerprint.key} (sampled "
            f"{'quick' if profile.quick else 'full'}; --refresh samples again)"
        )
    builtin = builtin_selection(installation) if profile.algorithm_segments() else None
    outputs = write_outputs(profile, output_dir, builtin)
    for warning in outputs.warnings:
        ui.warn(warning)
    study = save_study(store, profile, outputs)
    return SampleResult(profile, reused, outputs, study)


def save_study(store: Store, profile: PlatformProfile, outputs: Outputs) -> str:
    """A study holding the sampled configuration as its accepted one (with the variables that
    load the selection file), so ``commtune run --study`` and ``export`` take it as is."""
    name = f"{PLATFORM_STUDY}-{profile.vendor}-{profile.fingerprint.key}"
    config = profile.config()
    spec = StudySpec(
        ["commtune", "sample", "--np", str(profile.ranks)],
        profile.vendor,
        [{"knob": k, "values": None} for k in config],
        "platform sample",
        0,
    )
    verdict = Acceptance(
        Source.SAMPLE, dict(config), True, "sampled platform profile", env=dict(outputs.env)
    )
    save_result_study(store.optuna, name, spec, verdict, platform=profile.fingerprint.key)
    return name


# -- verification by timing -------------------------------------------------------------------
@dataclass
class Check:
    op: str
    size: int
    method: str
    with_file: float  # ns, median over repeats
    forced: float  # ns, the chosen algorithm forced, median over repeats
    best_forced: float  # ns, the best of all algorithms measured again (same launches)

    @property
    def ratio(self) -> float:
        return self.with_file / self.forced

    @property
    def vs_best(self) -> float:
        return self.with_file / self.best_forced

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "size": self.size,
            "method": self.method,
            "with_file_ns": self.with_file,
            "forced_ns": self.forced,
            "best_forced_ns": self.best_forced,
            "ratio": self.ratio,
            "vs_best": self.vs_best,
        }


def _knob_env(library: str, knob: str) -> str:
    """The environment variable of the catalog knob ``knob``."""
    return load_catalog(library)[knob].env


def verify(
    installation: Installation,
    profile: PlatformProfile,
    outputs: Outputs,
    ui: Progress,
    repeats: int = 3,
) -> list[Check]:
    """At every sampled size: the collective with the selection file loaded, against the
    chosen algorithm forced (and every algorithm, for the best), in alternating launches."""
    if "rules" not in outputs.files:
        return []
    vendor = Vendor(profile.vendor).impl
    env_file = selection_file_env(vendor, outputs.files["rules"])
    fams = [f for f in profile.families if f.name == ALGORITHM]
    with_file: dict[tuple[str, int], list[float]] = {}
    forced: dict[tuple[str, int, str], list[float]] = {}
    # MPICH: a forced algorithm variable overrides the file, so one launch with the file loaded
    # measures the file's choice (value 0, "auto") and each forced algorithm, interleaved.
    # Open MPI: the file overrides forced algorithms, so launches with and without it alternate.
    # Intel MPI reads its presets at MPI_Init only: a launch with the file, one per algorithm.
    per_launch = not vendor.algorithms_at_run_time
    same_launch = vendor.forced_overrides_file and not per_launch

    def launches(fam: FamilyCurves) -> int:
        return 1 + len(fam.curves) if per_launch else 1 if same_launch else 2

    total = repeats * sum(launches(f) for f in fams)
    with ui.progress("verifying the selection file", total=total) as bar:
        sampler = Sampler(installation, profile.ranks, profile.quick, bar=bar)
        for _ in range(repeats):
            for fam in fams:
                file_rows, rows = _round(sampler, fam, env_file, profile.vendor, bar,
                                         per_launch, same_launch)  # fmt: skip
                for row in file_rows:
                    with_file.setdefault((fam.op, int(row["size"])), []).append(row["median_ns"])
                for method, row in rows:
                    forced.setdefault((fam.op, int(row["size"]), method), []).append(
                        row["median_ns"]
                    )
    return _checks(profile, fams, with_file, forced)


Row = dict[str, float]  # a row a sampler's launch printed


def _round(sampler: Sampler, fam: FamilyCurves, env_file: Mapping[str, str], vendor: str,
           bar: Any, per_launch: bool,
           same_launch: bool) -> tuple[list[Row], list[tuple[str, Row]]]:  # fmt: skip
    """One round of a family's verification: the rows with the selection file loaded, and
    each forced algorithm's (method, row)."""
    names = {v: m for m, v in fam.values.items() if m in fam.curves}
    rows: list[tuple[str, Row]] = []  # (method, row) forced
    if same_launch:
        auto = fam.values[fam.default]
        bar.status(f"{fam.op}: file and forced")
        run = sampler.launch(fam.op, {**fam.env, **env_file}, (fam.knob, sorted(names)))
        bar.advance()
        file_rows = [r for r in run.rows if int(r["value"]) == auto]
        rows = [(names[int(r["value"])], r) for r in run.rows]
        return file_rows, rows
    bar.status(f"{fam.op}: with file")
    file_rows = sampler.launch(fam.op, {**fam.env, **env_file}).rows
    bar.advance()
    bar.status(f"{fam.op}: forced")
    if per_launch:
        for method in names.values():
            env = {**fam.env, _knob_env(vendor, fam.knob): method}
            rows += [(method, r) for r in sampler.launch(fam.op, env).rows]
            bar.advance()
    else:
        run = sampler.launch(fam.op, dict(fam.env), (fam.knob, sorted(names)))
        bar.advance()
        rows = [(names[int(r["value"])], r) for r in run.rows]
    return file_rows, rows


def _checks(profile: PlatformProfile, fams: Sequence[FamilyCurves],
            with_file: Mapping[tuple[str, int], list[float]],
            forced: Mapping[tuple[str, int, str], list[float]]) -> list[Check]:  # fmt: skip
    """Each sampled size's check: the file's choice's time with the file and forced, and the
    fastest forced."""
    checks = []
    segs = profile.algorithm_segments()
    for fam in fams:
        candidates = {c.method for c in fam.candidates(profile.vendor)}
        for size in sizes_for(fam.op, profile.quick):
            if (fam.op, size) not in with_file:
                continue
            chosen = method_at(segs[fam.op], size)
            times = {
                m: statistics.median(v)
                for (op, s, m), v in forced.items()
                if op == fam.op and s == size and m in candidates
            }
            if chosen not in times:
                continue
            checks.append(
                Check(
                    fam.op,
                    size,
                    chosen,
                    statistics.median(with_file[(fam.op, size)]),
                    times[chosen],
                    min(times.values()),
                )
            )
    return checks


# -- the sampled thresholds against the library's own ----------------------------------------
@dataclass
class ThresholdCheck:
    op: str
    knob: str
    size: int
    default: str  # the library's value (as set; "" for unset)
    sampled: str
    default_ns: float  # median over repeats
    sampled_ns: float

    @property
    def ratio(self) -> float:
        """Time with the sampled value over time with the library's: below 1 is a gain."""
        return self.sampled_ns / self.default_ns

    @property
    def between(self) -> bool:
        """The size lies where the two values send differently (between them; anywhere when
        the library's value is not a number, as UCX's ``auto``)."""
        try:
            low, high = sorted((float(self.default), float(self.sampled)))
        except ValueError:
            return True
        return low <= self.size < high

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "knob": self.knob,
            "size": self.size,
            "default": self.default,
            "sampled": self.sampled,
            "default_ns": self.default_ns,
            "sampled_ns": self.sampled_ns,
            "ratio": self.ratio,
            "between": self.between,
        }


def verify_thresholds(
    installation: Installation,
    profile: PlatformProfile,
    ui: Progress,
    repeats: int = 3,
) -> list[ThresholdCheck]:
    """The sampled eager limit, IOV density and aggregation limit against the library's
    defaults, at every sampled size: the IOV density switched through MPI_T inside one
    launch (the two values interleaved size by size), the others in alternating launches
    (they are read at MPI_Init, like everything of the launch-time families). Sizes between
    the two thresholds are where they differ; elsewhere both values do the same and the
    ratio is noise."""
    config = profile.config()
    catalog = load_catalog(profile.vendor)
    plans = []  # (op, knob, sampled value)
    for op, name in ((PINGPONG, PROTOCOL), (VECTOR, PACK_OR_IOV), (BURST, AGGREGATION)):
        fam = profile.family(op, name)
        # a sampled value that is the library's own needs no check
        if fam is not None and fam.knob in config and config[fam.knob] != catalog[fam.knob].default:
            plans.append((fam, catalog[fam.knob], config[fam.knob]))
    if not plans:
        return []
    total = repeats * sum(1 if f.op == VECTOR else 2 for f, _, _ in plans)
    default: dict[tuple[str, int], list[float]] = {}
    sampled: dict[tuple[str, int], list[float]] = {}
    remove = [knob.env for _, knob, _ in plans]
    with ui.progress("verifying the sampled thresholds", total=total) as bar:
        sampler = Sampler(installation, profile.ranks, profile.quick, bar=bar, remove=remove)
        for k in range(repeats):
            for fam, knob, value in plans:
                bar.status(f"{fam.op}: {knob.name} {knob.default} and {value}")
                if fam.op == VECTOR:  # both values in one launch, read on every call
                    values = [int(knob.default), int(value)]
                    run = sampler.launch(fam.op, dict(fam.env), (knob.name, values))
                    bar.advance()
                    for row in run.rows:
                        into = default if int(row["value"]) == values[0] else sampled
                        into.setdefault((fam.op, int(row["size"])), []).append(row["median_ns"])
                    continue
                order = [(default, {}), (sampled, {knob.env: knob.format(value)})]
                for into, env in order if k % 2 == 0 else order[::-1]:
                    run = sampler.launch(fam.op, {**fam.env, **env})
                    bar.advance()
                    for row in run.rows:
                        into.setdefault((fam.op, int(row["size"])), []).append(row["median_ns"])
    checks = []
    for fam, knob, value in plans:
        for size in sizes_for(fam.op, profile.quick):
            a, b = default.get((fam.op, size)), sampled.get((fam.op, size))
            if a and b:
                checks.append(ThresholdCheck(fam.op, knob.name, size, str(knob.default),
                                             str(value), statistics.median(a),
                                             statistics.median(b)))  # fmt: skip
    return checks


def veto_slower(
    store: Store,
    installation: Installation,
    profile: PlatformProfile,
    checks: Sequence[ThresholdCheck],
    output_dir: Path,
) -> tuple[dict[str, str], Outputs | None]:
    """A sampled threshold that measured slower than the library's own where the two differ
    (median ratio above 1 + ``TIE`` over those sizes) is not handed back: the two ends of a
    knob's domain do not always predict its middle (Open MPI's TCP eager limit also sizes
    its fragments). Returns the knobs vetoed now with why, and, if any, the outputs and the
    study written again without them (the profile is stored again with its vetoes)."""
    ratios: dict[str, list[float]] = {}
    for c in checks:
        if c.between:
            ratios.setdefault(c.knob, []).append(c.ratio)
    vetoed = {}
    for knob, values in ratios.items():
        median = statistics.median(values)
        if median > 1 + TIE:
            vetoed[knob] = (
                f"{median:.2f}x slower than the library's value at {len(values)} size(s) "
                "where they differ"
            )
    if not vetoed:
        return {}, None
    profile.vetoed.update(vetoed)
    store.save_sample(profile.fingerprint.key, profile.to_json())
    builtin = builtin_selection(installation) if profile.algorithm_segments() else None
    outputs = write_outputs(profile, output_dir, builtin)
    save_study(store, profile, outputs)
    return vetoed, outputs
