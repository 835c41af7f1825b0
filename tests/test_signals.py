"""A clean stop: SIGTERM, SIGHUP and SIGINT stop the tuner the same way. The running trial's
whole process tree is killed (a wrapper's children too), the trial is recorded as
interrupted, the exit status is 128 + the signal, and a rerun resumes the study."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import optuna
import pytest

from commtune.study import INTERRUPTED, Role, TrialRecord

from .conftest import commtune_subprocess, needs_openmpi
from .conftest import processes_running as _named


@needs_openmpi
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_kills_the_trials_tree_and_a_rerun_resumes(
    sig: signal.Signals, tmp_path: Path
) -> None:
    name = f"ctstop{uuid.uuid4().hex[:8]}"
    flag = tmp_path / "fast"
    # mpirun's children are not MPI programs: they outlive a killed launcher unless commtune
    # kills them; once the flag exists the same command finishes at once
    script = f"if [ -e {flag} ]; then exit 0; fi; exec -a {name} sleep 60"
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
               "bash", "-c", script]  # fmt: skip
    storage = f"sqlite:///{tmp_path / 's.db'}"
    args = ["tune", "--mpi", "openmpi", "--knob", "btl_vader_eager_limit=4K,8K",
            "--strategy", "grid", "--trials", "3", "--repeats", "1", "--confirm", "0",
            "--no-interposer", "--study", "s", "--storage", storage, "--json", "--",
            *command]  # fmt: skip
    proc = commtune_subprocess(args)
    deadline = time.time() + 60
    while len(_named(name)) < 2 and time.time() < deadline:
        time.sleep(0.2)
    assert len(_named(name)) == 2, "the trial's processes did not start"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert err.strip().splitlines()[-1].startswith("commtune: ")
    assert "Traceback" not in err
    deadline = time.time() + 10  # the killed processes leave the process table
    while _named(name) and time.time() < deadline:
        time.sleep(0.1)
    assert _named(name) == []  # nothing of the trial is left
    study = optuna.load_study(study_name="s", storage=storage)
    (trial,) = study.get_trials()
    assert TrialRecord.of(trial).role is Role.REFERENCE and trial.state.name == "FAIL"
    assert str(TrialRecord.of(trial).failure) == INTERRUPTED
    # the rerun resumes: the interrupted trial is kept, the study finishes
    flag.touch()
    done = subprocess.run([sys.executable, "-m", "commtune", *args], capture_output=True,
                          text=True, check=False, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # the interrupted trial is kept and spends nothing: the budget's three trials all ran
    assert result["trials"] == 4 and result["failed_trials"] == 1
    trials = optuna.load_study(study_name="s", storage=storage).get_trials()
    assert (
        trials[0].number == trial.number and str(TrialRecord.of(trials[0]).failure) == INTERRUPTED
    )
    assert (
        next(TrialRecord.of(t).role for t in trials if t.state.name == "COMPLETE") is Role.REFERENCE
    )


@needs_openmpi
@pytest.mark.alone  # any tuner starting beside it would kill the leftovers first
def test_after_kill_9_the_next_tuner_kills_what_the_last_one_left(tmp_path: Path) -> None:
    name = f"ctleft{uuid.uuid4().hex[:8]}"
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
               "bash", "-c", f"exec -a {name} sleep 60"]  # fmt: skip
    storage = f"sqlite:///{tmp_path / 's.db'}"
    args = ["tune", "--mpi", "openmpi", "--knob", "btl_vader_eager_limit=4K,8K",
            "--strategy", "grid", "--trials", "2", "--repeats", "1", "--confirm", "0",
            "--no-interposer", "--study", "s", "--storage", storage, "--", *command]  # fmt: skip
    first = commtune_subprocess(args)
    deadline = time.time() + 60
    while len(_named(name)) < 2 and time.time() < deadline:
        time.sleep(0.2)
    assert len(_named(name)) == 2, "the trial's processes did not start"
    first.kill()  # kill -9: no handler runs; the ranks of a non-MPI command outlive it
    first.communicate(timeout=30)
    # the state to wait for: the tuner gone, its ranks still there (they sleep 60 s); a
    # rank that died would make the count below smaller, never skip the check
    survivors = _named(name)
    assert len(survivors) == 2, survivors
    # another study on this machine: its tuner cleans up before anything else
    quick = ["mpirun", "--allow-run-as-root", "-np", "1", "true"]
    head = args[: args.index("--study")]
    second = commtune_subprocess([*head, "--study", "other", "--storage", storage, "--", *quick])
    deadline = time.time() + 30
    while _named(name) and time.time() < deadline and second.poll() is None:
        time.sleep(0.2)
    out, err = second.communicate(timeout=120)
    assert _named(name) == [], err  # the second tuner killed them
    said = " ".join((out + err).split())  # the terminal may wrap the line
    killed = re.search(r"killed (\d+) process\(es\) that an earlier tuner left running", said)
    assert killed is not None, said
    assert int(killed.group(1)) >= len(survivors)  # the ranks, and mpirun if it outlived it


def test_a_run_that_floods_its_output_is_read_from_its_tail() -> None:
    """24 MiB of output, then the line a regex metric reads: the tuner keeps the last 8 MiB
    from a whole line on, and the last line is there."""
    from commtune.trial._process import STDOUT_TAIL, run_process

    flood = (
        "import sys; line = 'x' * 1023 + '\\n'\n"
        "for _ in range(24 << 10): sys.stdout.write(line)\n"
        "print('time: 1.25'); sys.stderr.write('e' * 5000 + '\\nlast words\\n')"
    )
    result = run_process([sys.executable, "-c", flood], {"PATH": "/usr/bin:/bin"}, timeout=60)
    assert result.returncode == 0
    assert len(result.stdout) <= STDOUT_TAIL and result.stdout.endswith("time: 1.25\n")
    assert result.stdout.startswith("x" * 1023 + "\n")  # a whole line, not a cut one
    assert result.stderr_tail.endswith("last words\n") and len(result.stderr_tail) <= 2000


def test_a_run_takes_its_orphans_and_leaves_the_callers_other_children(tmp_path: Path) -> None:
    """The tuner adopts orphans (subreaper). After a run, the orphan the run left (a
    double-forked sleep) is killed; a process the caller started while the run went on, and
    whose parent exited so that the tuner adopted it too (a server's daemon, PostgreSQL's
    postmaster forking a backend), lives on."""
    import threading

    from commtune.trial._process import run_process

    theirs, started = tmp_path / "theirs.pid", tmp_path / "started"

    def start_a_daemon() -> None:  # detached: its parent (sh) exits at once
        subprocess.run(["sh", "-c", f"sleep 30 & echo $! > {theirs}"], check=True)
        started.touch()  # the run ends only now: the daemon is surely new during it

    env = {"PATH": "/usr/bin:/bin"}
    during = threading.Thread(target=start_a_daemon)
    during.start()
    wait = f"sleep 30 & echo $!; while [ ! -e {started} ]; do sleep 0.05; done"
    result = run_process(["sh", "-c", wait], env, timeout=30)
    during.join()
    orphan, daemon = int(result.stdout.split()[0]), int(theirs.read_text())
    try:
        assert result.returncode == 0
        assert not Path(f"/proc/{orphan}").exists()  # killed and reaped
        assert Path(f"/proc/{daemon}/environ").read_bytes().count(b"COMMTUNE_TUNER=") == 0
        assert (Path(f"/proc/{daemon}/stat").read_text().split(") ")[1].split()[0]) in "SR"
    finally:
        os.kill(daemon, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(daemon, 0)
