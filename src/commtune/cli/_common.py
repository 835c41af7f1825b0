"""What the command groups share: argument types and options, and the steps several commands
take (find the MPI, open the storage, probe knob values, set up the interposer, load a study).

Arguments are checked by argparse types here and turned into typed objects by each command
group before anything is written; the ``argparse.Namespace`` is never changed or passed down.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from commtune import settings
from commtune.errors import UsageError
from commtune.mpi import VENDOR_NAMES
from commtune.util import parse_size

if TYPE_CHECKING:
    import optuna

    from commtune.knobs import Knob, Space
    from commtune.launch import Launcher
    from commtune.mpi import Installation
    from commtune.profile import Profiling
    from commtune.report import UI
    from commtune.store import Store

Handler = Callable[[argparse.Namespace, "list[str] | None"], int]


@dataclass(frozen=True)
class Command:
    """One entry of the command table: ``commtune NAME``. ``takes_command``: the command
    accepts the user's launch line after ``--``."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Handler
    takes_command: bool = False


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


# -- argument types ----------------------------------------------------------------------------
def positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return value

    return parse


def nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


def size(text: str) -> int:
    """A message size: bytes, or with a K/M/G suffix (binary: 64K = 65536, 1GiB)."""
    try:
        return parse_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 4096, 64K, 1M)") from None


def default_storage() -> str:
    return settings.STORAGE.text()


def add_storage(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--storage",
        default=default_storage(),
        help="database URL or SQLite file (default: ./commtune.db)",
    )


def add_mpi(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mpi",
        metavar="MPI",
        help=f"the MPI installation: a family ({', '.join(VENDOR_NAMES)}), FAMILY@VERSION "
        f"(e.g. {VENDOR_NAMES[0]}@5) or its prefix; default: the one the command's launcher "
        "belongs to, "
        "else the one mpirun runs ('commtune mpis' lists them)",
    )


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON result as the last line")


def print_json(data: Any) -> None:
    print(json.dumps(data, separators=(",", ":")))


def need_command(command: list[str] | None, what: str = "to run") -> list[str]:
    if not command:
        raise UsageError(f"missing '--' before the command {what}, e.g. -- mpirun -np 4 ./app")
    return command


# -- shared steps ------------------------------------------------------------------------------
def default_study_name(command: Sequence[str], library: str, space: Space) -> str:
    program = next((os.path.basename(a) for a in reversed(command) if os.path.sep in a), None)
    program = program or os.path.basename(command[0])
    digest = hashlib.sha256(json.dumps([list(command), space.to_json()]).encode()).hexdigest()
    return f"{program}-{library}-{digest[:6]}"


def open_store(url: str, installation: Installation, nodes: str | None = None) -> tuple[Store, str]:
    """The storage, with this platform's fingerprint recorded (``nodes``: the Slurm nodes'
    type, where runs are Slurm's); returns its key too."""
    from commtune.platform import Fingerprint
    from commtune.store import Store

    store = Store(url)
    return store, store.save_platform(Fingerprint.of(installation, nodes=nodes))


def probe(space: Space, launcher: Launcher, store: Store, platform: str, ui: UI) -> Space:
    """The space without the values that abort the library here (tested once per platform)."""
    from commtune.trial import probe_space

    with ui.progress("checking knob values", 0) as bar:
        space, bad = probe_space(space, launcher, store, platform, progress=bar.status)
    for name, values in bad.items():
        ui.warn(f"{name}: {', '.join(map(str, values))} abort(s) the library here; left out")
    return space


def profiling(
    installation: Installation, interval: float = 0.1, shared: str | None = None
) -> Profiling:
    """libcommtune for the installation; COMMTUNE_PROFILE_DIR: where rank 0 writes profiles
    (a directory its node can write, for multi-node runs), else ``shared`` if given."""
    from commtune import native
    from commtune.profile import Profiling

    directory = settings.PROFILE_DIR.get() or shared
    return Profiling(native.build_interposer(installation), interval, directory)


def load_study(url: str, name: str) -> tuple[Store, optuna.Study]:
    import optuna

    from commtune.store import Store
    from commtune.study import spec_of

    store = Store(url, create=False)
    try:
        study = optuna.load_study(study_name=name, storage=store.optuna)
    except KeyError:
        raise UsageError(f"no study named {name!r} in {store.url}") from None
    spec_of(study)  # UsageError for a study commtune did not make
    return store, study


def measured_on(store: Store, study: optuna.Study) -> str | None:
    """The MPI installation a study measured (its platform's), as the user reads it."""
    from commtune.mpi import Vendor
    from commtune.study import platform_of

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
    from commtune.knobs import load_catalog, space_from_json
    from commtune.study import spec_of

    spec = spec_of(study)
    space = space_from_json(spec.library, spec.space, load_catalog(spec.library))
    return spec.library, [d.knob for d in space.dimensions]
