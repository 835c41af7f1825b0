"""Small helpers every layer may use: whole-or-nothing file writes, message sizes as text.

Nothing here knows about MPI, knobs or studies.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from commtune.errors import UsageError

TESTBED_ENV = "COMMTUNE_TESTBED"  # set inside a test bed's nodes: the bed's description
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """A size in bytes: ``4096``, ``0x1000``, or a number with a binary suffix, any case,
    with or without ``i``/``b``: ``64k`` = ``64KiB`` = 65536, ``1.5M``, ``1GiB``.
    ValueError if it is not one, or negative."""
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    unit = t[-1] if t[-1:] in ("k", "m", "g", "t") else ""
    digits = t[: len(t) - len(unit)].strip()
    if not digits:
        raise ValueError(f"{text!r} is not a size")
    try:
        value = int(digits, 0) * _UNITS[unit]
    except ValueError:
        scaled = float(digits) * _UNITS[unit]  # ValueError again if it is no number at all
        if scaled != int(scaled):
            raise ValueError(f"{text!r} is not a whole number of bytes") from None
        value = int(scaled)
    if value < 0:
        raise ValueError(f"{text!r} is negative")
    return value


def format_size(size: float | None) -> str:
    """``65536`` -> ``64 KiB``; None (no upper bound) -> ``∞``."""
    if size is None:
        return "∞"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size:.0f} B"


def _mode_for(target: Path, mode: int | None) -> int:
    """``mode`` less the umask; without one, the mode of the file being replaced, or the one a
    new file gets (0666 less the umask)."""
    if mode is None:
        try:
            return target.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666
    mask = os.umask(0)
    os.umask(mask)
    return mode & ~mask


@contextmanager
def atomic_path(path: str | Path, mode: int | None = None) -> Iterator[Path]:
    """A temporary path beside ``path``, unique to this writer, renamed onto ``path`` when the
    block ends without an error and removed otherwise: readers see the old file or the whole
    new one, and two writers never share a temporary file. The file gets ``mode`` (less the
    umask; 0o777 for a program), or keeps the replaced file's, or a new file's 0666."""
    target = Path(path)
    directory = target.resolve().parent
    if not directory.is_dir():
        raise UsageError(f"cannot write {path}: directory {directory} does not exist")
    if target.exists() and not target.is_file():  # /dev/stdout, a FIFO: written, never replaced
        with tempfile.TemporaryDirectory() as scratch:
            tmp_path = Path(scratch) / target.name
            yield tmp_path
            with open(target, "wb") as out:
                out.write(tmp_path.read_bytes() if tmp_path.exists() else b"")
        return
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=target.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _mode_for(target, mode))  # mkstemp's 0600 is for the temporary file only
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, /proc/PID/stat field 22); None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()[19].decode()


@functools.cache
def worker_id() -> str:
    """This process as a worker of a study: ``HOST:PID:START``, unique across the machines
    that share a storage and over time (a pid reused later has another start time)."""
    return f"{socket.gethostname()}:{os.getpid()}:{start_time(os.getpid())}"


def process_alive(worker: str) -> bool | None:
    """Whether the process named by ``worker_id()`` value ``worker`` still runs; None if it
    ran on another host (this one cannot tell)."""
    host, pid, started = _split_worker(worker)
    if host != socket.gethostname():
        return None
    return pid is not None and same_process(pid, started)


def same_process(pid: int, started: str) -> bool:
    """Whether process ``pid`` runs and is the one that started at ``started`` (its
    ``start_time``: a pid reused later has another)."""
    return start_time(pid) == started


def _split_worker(worker: str) -> tuple[str, int | None, str]:
    host, pid, started = [*worker.rsplit(":", 2), "", ""][:3]
    return host, int(pid) if pid.isdigit() else None, started


def read_json(path: str | Path, label: str) -> Any:
    """The JSON in ``path``; a file that cannot be read or is not JSON is one UsageError,
    ``label`` first (what the file is to the user, e.g. ``replay table FILE``)."""
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise UsageError(f"{label}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise UsageError(f"{label}: not JSON ({exc})") from None
