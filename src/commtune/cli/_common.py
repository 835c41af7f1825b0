"""What the command groups share: the command table's entry, the parser, argument types and
options, JSON output. The steps several commands take (open the storage, probe knob values,
set up the interposer, load a study) are services' (``commtune.service``).

Arguments are checked by argparse types here and turned into typed objects by each command
group before anything is written; the ``argparse.Namespace`` is never changed or passed down.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from commtune import settings
from commtune.errors import UsageError
from commtune.mpi import VENDOR_NAMES
from commtune.util import parse_size

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


def probability(text: str) -> float:
    """A number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def fraction(text: str) -> float:
    """A share from 0 to below 1, written as a fraction (``0.05``) or as a percentage with
    its sign (``5%``): the one convention of ``--risk``, ``--tolerance`` and ``--min-gain``."""
    body = text.strip()
    try:
        value = float(body.removesuffix("%")) / (100 if body.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a share below 1, as a fraction (0.05) or a percentage with its sign (5%)"
        )
    return value


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


def cluster_files(args: argparse.Namespace, inst: Any, doing: str) -> tuple[str, str] | None:
    """``--platform`` and ``--hostfile`` (``Installation.cluster_files``)."""
    files: tuple[str, str] | None = inst.cluster_files(args.platform, args.hostfile, doing)
    return files
