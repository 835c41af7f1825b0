"""Steps several services take: name a study, open the storage with the platform recorded,
probe knob values, set up the interposer, load a study and its knobs."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Sequence

import optuna

from commtune import native, settings
from commtune.errors import UsageError
from commtune.knobs import Knob, Space, load_catalog, space_from_json, with_segments
from commtune.launch import Launcher
from commtune.libcommtune import PVAR_INTERVAL
from commtune.mpi import Installation, Vendor
from commtune.platform import Fingerprint, slurm_node_type
from commtune.profile import Profiling
from commtune.progress import Progress
from commtune.store import Store
from commtune.study import Plan, platform_of, spec_of
from commtune.trial import probe_space


def default_study_name(command: Sequence[str], library: str, space: Space) -> str:
    """``PROGRAM-LIBRARY-DIGEST``: the program is the last executable file the command names
    (not an input file or ``/dev/stdout`` after it), else its last path, else its first word."""
    paths = [a for a in reversed(command) if os.path.sep in a]
    runnable = (a for a in paths if os.path.isfile(a) and os.access(a, os.X_OK))
    program = next(runnable, None) or next(iter(paths), None) or command[0]
    program = os.path.basename(program)
    digest = hashlib.sha256(json.dumps([list(command), space.to_json()]).encode()).hexdigest()
    return f"{program}-{library}-{digest[:6]}"


def open_store(url: str, installation: Installation, nodes: str | None = None) -> tuple[Store, str]:
    """The storage, with this platform's fingerprint recorded (``nodes``: the Slurm nodes'
    type, where runs are Slurm's); returns its key too."""
    store = Store(url)
    return store, store.save_platform(Fingerprint.of(installation, nodes=nodes))


def probe(space: Space, launcher: Launcher, store: Store, platform: str, ui: Progress) -> Space:
    """The space without the values that abort the library here (tested once per platform);
    as it is where the installation has no MPI_T to probe with (SMPI: its names are read from
    the installation itself)."""
    if not launcher.installation.impl.probes_values:
        return space
    with ui.progress("checking knob values", 0) as bar:
        space, bad = probe_space(space, launcher, store, platform, progress=bar.status)
    for name, values in bad.items():
        ui.warn(f"{name}: {', '.join(map(str, values))} abort(s) the library here; left out")
    return space


def profiling(
    installation: Installation, interval: float = PVAR_INTERVAL, shared: str | None = None
) -> Profiling:
    """libcommtune for the installation; COMMTUNE_PROFILE_DIR: where rank 0 writes profiles
    (a directory its node can write, for multi-node runs), else ``shared`` if given."""
    directory = settings.PROFILE_DIR.get() or shared
    return Profiling(native.build_interposer(installation), interval, directory)


def load_study(url: str, name: str) -> tuple[Store, optuna.Study]:
    store = Store(url, create=False)
    try:
        study = optuna.load_study(study_name=name, storage=store.optuna)
    except KeyError:
        raise UsageError(f"no study named {name!r} in {store.url}") from None
    spec_of(study)  # UsageError for a study commtune did not make
    return store, study


def measured_on(store: Store, study: optuna.Study) -> str | None:
    """The MPI installation a study measured (its platform's), as the user reads it."""
    key = platform_of(study)
    fingerprint = store.platform(key) if key else None
    if fingerprint is None:
        return None
    try:
        title = Vendor(fingerprint.mpi_vendor).title
    except ValueError:
        title = fingerprint.mpi_vendor
    return f"{title} {fingerprint.mpi_version} ({fingerprint.mpi_device})"


def study_knobs(study: optuna.Study) -> tuple[str, list[Knob]]:
    spec = spec_of(study)
    space = space_from_json(spec.library, spec.space, load_catalog(spec.library))
    # an answer raced at a segment size sets the collective's segment size too
    return spec.library, with_segments(
        [d.knob for d in space.dimensions], Vendor(spec.library).impl
    )


def slurm_nodes(plan: Plan, command: Sequence[str]) -> str | None:
    """The Slurm nodes' type, for the fingerprint, where the runs are Slurm's: each its own
    job (the partition of ``--sbatch``), or steps of the allocation the tuner runs in."""
    if plan.sbatch is not None:
        sbatch = argparse.ArgumentParser(add_help=False)
        sbatch.add_argument("-p", "--partition")
        return slurm_node_type(sbatch.parse_known_args(list(plan.sbatch))[0].partition)
    if os.environ.get("SLURM_JOB_ID") or os.path.basename(command[0]) == "srun":
        return slurm_node_type()
    return None
