"""Each run its own Slurm job, for tuning from a login node (``commtune tune --sbatch ARGS``).

A run's launch line (``mpirun ...``, ``srun ...``) becomes a batch script in a directory of
its own under ``workdir`` (on a file system the nodes share) and is submitted with
``sbatch --wait``, the user's options (``-N 2 -p compute --exclusive``) added. The script
records the job id, its node list and the run's own start and end, so the time in the queue
is not the run's time. The run's timeout counts from its start: ``sbatch --time`` is set to
cover it (Slurm's limit, in whole minutes) and the job is cancelled with ``scancel`` at the
timeout itself, and whenever the tuner stops (a signal, an error). The environment reaches
the job through ``sbatch``'s default ``--export=ALL``; ``LD_PRELOAD`` is set inside the
script only, never for ``sbatch`` itself.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from commtune.errors import UsageError
from commtune.trial._process import STDERR_TAIL, ProcessResult

POLL = 0.1  # seconds between two looks at a job
SUBMIT_TIMEOUT = 60.0
LEAVE_TIMEOUT = 10.0  # seconds a finished job may take to leave the queue

_SCRIPT = """#!/bin/sh
echo "$SLURM_JOB_ID $SLURM_JOB_NODELIST" > {info}
start=$(date +%s.%N)
{preload}{command}
status=$?
echo "$start $(date +%s.%N) $status" > {times}
exit $status
"""


class SlurmJobs:
    """Runs launch lines as Slurm jobs; a drop-in for ``run_process`` (see the module)."""

    def __init__(self, options: Sequence[str], workdir: str | Path | None = None) -> None:
        for tool in ("sbatch", "scancel"):
            if shutil.which(tool) is None:
                raise UsageError(f"--sbatch needs Slurm's {tool}, not found on PATH")
        self.options = list(options)
        self.workdir = Path(workdir or os.getcwd()) / ".commtune-jobs"
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot make the jobs' directory {self.workdir}: {exc}") from None

    def __call__(
        self, argv: list[str], env: dict[str, str], timeout: float, cwd: str | None = None
    ) -> ProcessResult:
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self.workdir))
        try:
            return self._run(run_dir, argv, env, timeout, cwd)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    def _run(
        self, run_dir: Path, argv: list[str], env: dict[str, str], timeout: float, cwd: str | None
    ) -> ProcessResult:
        env = dict(env)
        preload = env.pop("LD_PRELOAD", None)
        if preload is not None and preload == os.environ.get("LD_PRELOAD"):
            env["LD_PRELOAD"], preload = preload, None  # the user's own: it stays as it was
        info, times = run_dir / "info", run_dir / "times"
        script = run_dir / "run.sh"
        script.write_text(
            _SCRIPT.format(
                info=shlex.quote(str(info)),
                times=shlex.quote(str(times)),
                preload=f"export LD_PRELOAD={shlex.quote(preload)}\n" if preload else "",
                command=shlex.join(argv),
            )
        )
        minutes = max(1, math.ceil((timeout + 30) / 60))  # Slurm's limit covers ours
        out, err = run_dir / "out", run_dir / "err"
        submit = ["sbatch", "--wait", "--parsable", f"--time={minutes}",
                  "--job-name=commtune", f"--output={out}", f"--error={err}",
                  f"--chdir={cwd or os.getcwd()}", *self.options, str(script)]  # fmt: skip
        proc = subprocess.Popen(
            submit,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        job = None
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()  # printed at submission, before the wait
            job = line.split(";", 1)[0] if line else None
            if job is None or not job.isdigit():
                proc.wait(timeout=SUBMIT_TIMEOUT)
                assert proc.stderr is not None
                why = proc.stderr.read().strip().splitlines()
                return ProcessResult(0.0, 1, False, "", "sbatch: " + (why[-1] if why else "failed"))
            timed_out = self._wait(proc, job, info, times, timeout)
        except BaseException:
            if job is not None:
                _cancel(job)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()
            raise
        stdout = out.read_text(errors="replace") if out.exists() else ""
        stderr = err.read_text(errors="replace") if err.exists() else ""
        start, end, status = _times(times)
        nodes = info.read_text().split()[1:2] if info.exists() else []
        returncode = None if timed_out else (status if status is not None else proc.returncode)
        return ProcessResult(
            end - start if start is not None and end is not None else 0.0,
            returncode,
            timed_out,
            stdout,
            stderr[-STDERR_TAIL:],
            {"job": job, "nodes": nodes[0] if nodes else ""},
        )

    def _wait(
        self, proc: subprocess.Popen[str], job: str, info: Path, times: Path, timeout: float
    ) -> bool:
        """Until the run ends (its script says so: ``sbatch --wait`` itself polls Slurm
        seconds apart); cancelled ``timeout`` seconds after it started. Whether it was."""
        started = None
        while proc.poll() is None and not times.exists():
            if started is None and info.exists():
                started = time.monotonic()
            if started is not None and time.monotonic() - started > timeout:
                _cancel(job)
                proc.wait()
                return True
            time.sleep(POLL)
        deadline = time.monotonic() + LEAVE_TIMEOUT  # until Slurm has freed the job's nodes
        while proc.poll() is None and time.monotonic() < deadline and _queued(job):
            time.sleep(POLL)
        if proc.poll() is None:
            proc.terminate()  # only the client's wait: the job has ended
            proc.wait()
        return False


def _queued(job: str) -> bool:
    try:
        done = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i"], capture_output=True,
                              text=True, timeout=30, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def _cancel(job: str) -> None:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(["scancel", job], capture_output=True, timeout=30, check=False)


def _times(path: Path) -> tuple[float | None, float | None, int | None]:
    try:
        start, end, status = path.read_text().split()
        return float(start), float(end), int(status)
    except (OSError, ValueError):
        return None, None, None
