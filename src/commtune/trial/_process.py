"""Run one launch, with a timeout, and leave nothing of it behind.

Open MPI gives each rank its own process group, so killing the launcher's group is not enough.
This module makes the tuner a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``): every
process a run starts stays a descendant of the tuner even when its parent dies, and can be
found from ``/proc``. Stopping a run: SIGTERM to the launcher (it forwards it to its ranks),
a short grace period, then SIGKILL to every remaining descendant. Launchers get
``PR_SET_PDEATHSIG`` so a run dies with the tuner, even on ``kill -9``. Shared-memory segments
that a killed run leaves in ``/dev/shm`` are removed.

Every run carries ``COMMTUNE_TUNER=PID:START`` (the tuner's pid and start time) in its
environment, which every process it starts inherits. A tuner killed with ``kill -9`` cannot
clean up; the next one on this machine finds the processes whose tuner is gone from that mark
(:func:`kill_leftovers`), whatever they are (ranks, wrapper scripts, their children), and
kills them: a pid alone could have been reused, a pid with its start time cannot.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from commtune.mpi import SHM_PATTERNS
from commtune.util import start_time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)

SHM_DIR = Path("/dev/shm")
STDERR_TAIL = 2000
# What is read of a run's standard output (a regex metric reads its last match): a program
# that writes gigabytes would otherwise be read into memory at every run.
STDOUT_TAIL = 8 << 20
GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class ProcessResult:
    """How one launch ended."""

    wall: float
    returncode: int | None  # None when killed on timeout
    timed_out: bool
    stdout: str
    stderr_tail: str
    job: dict[str, str] | None = None  # a Slurm job's id and nodes, where it was one

    def ended_well(self, what: str, timeout: float) -> ProcessResult:
        """This launch, or a UsageError in one line saying that ``what`` did not finish in
        ``timeout`` seconds or failed, and why (the tail of its stderr)."""
        from commtune.errors import UsageError

        if self.timed_out:
            raise UsageError(f"{what} did not finish in {timeout:g} s (--timeout)")
        if self.returncode != 0:
            why = stderr_summary(self.stderr_tail) or f"exit status {self.returncode}"
            raise UsageError(f"{what} failed: {why}")
        return self


@functools.cache
def become_subreaper() -> None:
    """Adopt orphaned descendants (once); without it strays could not be found."""
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _proc_file(pid: int, name: str) -> bytes | None:
    """The contents of /proc/PID/NAME, None where it cannot be read (gone, another user's)."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def _proc_files(name: str) -> Iterator[tuple[int, bytes]]:
    """(pid, contents of /proc/PID/NAME) of every process that can be read."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (data := _proc_file(int(entry.name), name)) is not None:
            yield int(entry.name), data


def _parents() -> dict[int, int]:
    """pid -> ppid of every process."""
    out = {}
    for pid, stat in _proc_files("stat"):
        # The command name may contain spaces and parentheses: split after the last ')'.
        out[pid] = int(stat[stat.rfind(b")") + 2 :].split()[1])
    return out


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (not ``root`` itself)."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


TUNER_VARIABLE = "COMMTUNE_TUNER"


@functools.cache
def tuner_mark() -> str:
    """This tuner's ``COMMTUNE_TUNER`` value."""
    return f"{os.getpid()}:{start_time(os.getpid())}"


def _tuner_of(environ: bytes) -> str | None:
    """The ``COMMTUNE_TUNER`` value in a process's environment block, None without one."""
    marker = f"{TUNER_VARIABLE}=".encode()
    for item in environ.split(b"\0"):
        if item.startswith(marker):
            return item[len(marker) :].decode(errors="replace")
    return None


def processes_of_tuner(pid: int) -> list[int]:
    """The live processes (not zombies) carrying the mark of the tuner whose pid is ``pid``:
    what it started, whatever their names; nothing else on the machine."""
    found = []
    for proc, environ in _proc_files("environ"):
        owner = _tuner_of(environ)
        if owner is None or owner.partition(":")[0] != str(pid):
            continue
        stat = _proc_file(proc, "stat")
        if stat is not None and stat[stat.rfind(b")") + 2 :].split()[:1] != [b"Z"]:
            found.append(proc)
    return found


def kill_leftovers() -> list[int]:
    """Kill the processes that a tuner no longer alive left behind (see the module
    docstring); returns their pids."""
    mine = tuner_mark()
    left = []
    me = os.geteuid()
    for proc, environ in _proc_files("environ"):
        if proc == os.getpid() or _owner(proc) != me:  # another user's are theirs, root too
            continue
        owner = _tuner_of(environ)
        if owner is None or owner == mine:
            continue
        pid, _, started = owner.partition(":")
        if not pid.isdigit() or start_time(int(pid)) != started:
            left.append(proc)
    _signal_all(left, signal.SIGKILL)
    return left


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _reap_strays(keep: set[int]) -> None:
    """Kill and reap the run's orphans: descendants of the tuner that are not in ``keep`` and
    carry this tuner's mark. Another descendant is left alone: a server the caller started
    (a test's PostgreSQL, whose postmaster this subreaper adopted, forks a backend per
    connection; killing one mid-recovery shuts the server down)."""
    killed: set[int] = set()
    _reap_zombies(keep)

    def ours(pid: int) -> bool:
        return pid in killed or _tuner_of(_proc_file(pid, "environ") or b"") == tuner_mark()

    for _ in range(20):
        strays = [p for p in descendants(os.getpid()) if p not in keep and ours(p)]
        if not strays:
            return
        _signal_all(strays, signal.SIGKILL)
        killed.update(strays)
        for pid in strays:
            with contextlib.suppress(ChildProcessError):  # not our child: its parent reaps it
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)


def _reap_zombies(keep: set[int]) -> None:
    """Reap the run's processes that ended after their parent did and were adopted by this
    subreaper (SMPI's ``smpimain`` outlives the ``smpirun`` script that started it): a zombie
    has no environment to carry the tuner's mark, and would stay one a run otherwise."""
    me = os.getpid()
    for pid, stat in _proc_files("stat"):
        fields = stat[stat.rfind(b")") + 2 :].split()
        if pid not in keep and fields[0] == b"Z" and int(fields[1]) == me:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def _mapped_shm() -> set[str]:
    """Files in /dev/shm that some live process still maps."""
    mapped = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/maps") as f:
                for line in f:
                    if "/dev/shm/" in line:
                        mapped.add(line.split(None, 5)[-1].strip().removesuffix(" (deleted)"))
        except OSError:
            continue
    return mapped


def clean_shm(since: float = 0.0, until: float | None = None) -> list[str]:
    """Remove this user's MPI shared-memory segments that nothing maps any more, last
    modified in [``since``, ``until``] (``until``: leave alone segments of jobs starting
    right now). Another user's are never touched (on a shared node their maps cannot even
    be read)."""
    removed: list[str] = []
    if not SHM_DIR.is_dir():
        return removed
    mapped = _mapped_shm()
    for pattern in SHM_PATTERNS:
        for path in SHM_DIR.glob(pattern):
            try:
                stat = path.stat()
                mtime = stat.st_mtime
                if stat.st_uid != os.geteuid():
                    continue
                if until is not None and mtime > until:
                    continue
                if mtime >= since and str(path) not in mapped:
                    path.unlink()
                    removed.append(str(path))
            except OSError:
                continue
    return removed


def run_process(
    argv: list[str],
    env: dict[str, str],
    timeout: float,
    cwd: str | None = None,
    stderr_tail: int = STDERR_TAIL,
) -> ProcessResult:
    """Run ``argv`` to completion or until ``timeout`` seconds; kill everything it started.
    ``stderr_tail``: the bytes of its stderr kept (a library's selection output: more)."""
    become_subreaper()
    keep = set(descendants(os.getpid()))
    start_wall = time.time()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env={**env, TUNER_VARIABLE: tuner_mark()},
            cwd=cwd,
            # Safe here: the one thread beside (the heartbeat of several workers) holds no
            # lock that prctl needs.
            preexec_fn=_die_with_parent,  # noqa: PLW1509
        )
        timed_out = False
        try:
            returncode: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            returncode = None
            stop(proc)
        except BaseException:  # Ctrl-C, SIGTERM: the run's whole tree goes before commtune
            stop(proc)
            _reap_strays(keep)
            clean_shm(start_wall - 1)
            raise
        wall = time.perf_counter() - t0
        # Anything the run left behind (daemons, orphaned ranks) goes too.
        _reap_strays(keep)
        if timed_out or returncode != 0:
            clean_shm(start_wall - 1)
        stdout = _tail(out, STDOUT_TAIL)
        stderr = _tail(err, stderr_tail)
    return ProcessResult(wall, returncode, timed_out, stdout, stderr, job_of(env))


_RULE = re.compile(r"^\s*[-=*_#]{5,}\s*$")  # the frame of Open MPI's help messages


def stderr_summary(tail: str, limit: int = 300) -> str:
    """What a run's stderr says last, on one line: the last message framed by rule lines (how
    Open MPI prints its errors) joined, or else the last line with a letter or digit."""
    lines = tail.strip().splitlines()
    rules = [i for i, line in enumerate(lines) if _RULE.match(line)]
    if len(rules) >= 2:
        said = [line.strip() for line in lines[rules[-2] + 1 : rules[-1]] if line.strip()]
        text = " ".join(said)
    else:
        said = [line.strip() for line in lines if any(c.isalnum() for c in line)]
        text = said[-1] if said else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tail(f: IO[bytes], size: int) -> str:
    """The last ``size`` bytes of ``f``, from the first whole line among them when cut."""
    end = f.seek(0, os.SEEK_END)
    f.seek(max(0, end - size))
    data = f.read()
    if end > size:
        data = data[data.find(b"\n") + 1 :] if b"\n" in data[:-1] else data
    return data.decode(errors="replace")


def job_of(env: Mapping[str, str]) -> dict[str, str] | None:
    """The Slurm job a run is a step of (a tuner inside an allocation), or None."""
    job = env.get("SLURM_JOB_ID")
    return {"job": job, "nodes": env.get("SLURM_JOB_NODELIST", "")} if job else None


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the launcher, wait a little, then SIGKILL it and every descendant."""
    tree = descendants(proc.pid)
    _signal_all([proc.pid], signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=GRACE_SECONDS)
    _signal_all([proc.pid, *tree, *descendants(proc.pid)], signal.SIGKILL)
    proc.wait()
