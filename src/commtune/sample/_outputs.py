"""What sampling hands back: the selection file of the library and an env file (the plots of
the curves are the report's: ``report.sample_plots``).

Every file is validated before it is moved into place (atomically); a collective whose rules
fail validation is left to the library's own decision, with a warning, rather than written
wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from commtune import native
from commtune.knobs import apply, discover, load_catalog, selection_file_env
from commtune.mpi import Builtin, Installation, Segment, Selection, Vendor, linked_library
from commtune.sample._families import ALGORITHM
from commtune.sample._profile import PlatformProfile
from commtune.util import write_atomic


@dataclass
class Outputs:
    files: dict[str, str] = field(default_factory=dict)  # what -> path
    env: dict[str, str] = field(default_factory=dict)  # variables that load the rules
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"files": self.files, "env": self.env, "warnings": self.warnings}


def _header(profile: PlatformProfile) -> str:
    fp = profile.fingerprint
    return (
        f"commtune platform {fp.key}: {fp.mpi_vendor} {fp.mpi_version} ({fp.mpi_device}), "
        f"{fp.cpu_model}, {fp.cores} cores\n"
        f"sampled with {profile.ranks} ranks ({'quick' if profile.quick else 'full'})"
    )


def builtin_selection(installation: Installation) -> Builtin | None:
    """What the library's selection file must extend (None: it starts empty), read from the
    library the sampler links."""
    if not installation.impl.selection_extends_builtin:
        return None
    binary = native.build(installation, "bench/ct_sample.c")
    return installation.impl.builtin_selection(linked_library(binary), discover(installation))


def selection_file(
    profile: PlatformProfile, segs: dict[str, list[Segment]], builtin: Builtin | None = None
) -> Selection:
    """The library's selection file for ``segs`` (collective -> ranges), validated;
    collectives that cannot be expressed are dropped with a warning."""
    algorithms = {f.op: f.values for f in profile.families if f.name == ALGORITHM}
    return Vendor(profile.vendor).impl.write_selection(
        segs, {op: algorithms[op] for op in segs}, profile.ranks, _header(profile), builtin
    )


def write_outputs(
    profile: PlatformProfile,
    directory: Path,
    builtin: Builtin | None = None,
) -> Outputs:
    directory.mkdir(parents=True, exist_ok=True)
    out = Outputs()
    vendor = profile.vendor
    segs = profile.algorithm_segments()
    segs = {op: s for op, s in segs.items() if s}
    if segs:
        selection = selection_file(profile, segs, builtin)
        out.warnings = list(selection.warnings)
        path = directory / f"{vendor}-{Vendor(vendor).impl.selection_file_name}"
        write_atomic(str(path), selection.text)
        out.files["rules"] = str(path.resolve())
        out.env = selection_file_env(Vendor(vendor).impl, out.files["rules"])
    catalog = load_catalog(vendor)
    config = profile.config()
    knobs = [catalog[k] for k in config]
    env = {**apply(knobs, config, Vendor(vendor).impl).env, **out.env}
    lines = [f"# {line}" for line in _header(profile).splitlines()]
    lines += [f"export {k}={v}" for k, v in env.items()]
    env_path = directory / f"{vendor}-platform.env"
    write_atomic(str(env_path), "\n".join(lines) + "\n")
    out.files["env"] = str(env_path.resolve())
    return out
