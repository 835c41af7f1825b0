"""Slurm, with a real one-node cluster (the ``slurm`` fixture): each run its own job
(``--sbatch``) with its job id and nodes stored, a timeout or a stopped tuner cancels the job,
and a tuner inside an allocation runs its trials as ``srun`` steps with libcommtune preloaded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import optuna

from commtune.mpi import Vendor
from commtune.store import Store
from commtune.study import TrialRecord

from .conftest import commtune_subprocess, demo_command, needs_mpich, needs_openmpi


def _queue(env: dict[str, str]) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True,
                         env={**os.environ, **env}, check=False)  # fmt: skip
    return out.stdout.split("\n") if out.stdout.strip() else []


def _named(name: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", f"^{name}"], capture_output=True, text=True, check=False)
    return out.stdout.split()


@needs_openmpi
def test_each_run_is_its_own_job(slurm: dict[str, str], tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    command = demo_command(Vendor.OPENMPI, 200)
    args = ["tune", "--mpi", "openmpi", "--knob", "btl_vader_eager_limit=4K,8K", "--strategy",
            "grid", "--trials", "3", "--repeats", "1", "--confirm", "0", "--study", "sb",
            "--storage", storage, "--sbatch", "-n 2", "--json", "--", *command]  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "commtune", *args], capture_output=True,
                          text=True, env={**os.environ, **slurm}, cwd=tmp_path, check=False,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["trials"] == 3
    study = optuna.load_study(study_name="sb", storage=storage)
    runs = [r for t in study.get_trials() for r in TrialRecord.of(t).runs]
    assert len(runs) == 3 and all(r.failure is None for r in runs)
    jobs = [r.job["job"] for r in runs if r.job]
    assert len(set(jobs)) == 3 and all(j.isdigit() for j in jobs)  # one job per run
    assert {r.job["nodes"] for r in runs if r.job} == {os.uname().nodename.split(".")[0]}
    # the fingerprint says which nodes' type it was measured on
    store = Store(storage)
    platform = store.platform(study.user_attrs["platform"])
    assert platform is not None and "AvailableFeatures=commtune" in (platform.nodes or "")
    # libcommtune's profiles came back from the jobs (written under .commtune-jobs/)
    assert len(store.profiles("sb")) == 3
    assert list((tmp_path / ".commtune-jobs").iterdir()) == []  # nothing of the jobs is left


def _hanging_args(storage: str, name: str, timeout: str) -> list[str]:
    # 8K hangs; everything else ends at once
    script = f'[ "$OMPI_MCA_btl_vader_eager_limit" = 8192 ] && exec -a {name} sleep 120; exit 0'
    return ["tune", "--mpi", "openmpi", "--knob", "btl_vader_eager_limit=4K,8K", "--strategy",
            "grid", "--trials", "3", "--repeats", "1", "--confirm", "0", "--no-interposer",
            "--timeout", timeout, "--study", "h", "--storage", storage, "--sbatch", "-n 1",
            "--json", "--", "bash", "-c", script]  # fmt: skip


def _settled(slurm: dict[str, str], name: str, within: float = 30.0) -> None:
    """Wait (up to ``within`` s) until the queue is empty and no process of the job is left:
    the state the caller then asserts, reached at the machine's own pace."""
    deadline = time.time() + within
    while (_queue(slurm) or _named(name)) and time.time() < deadline:
        time.sleep(0.2)


def test_a_timeout_cancels_the_job(slurm: dict[str, str], tmp_path: Path) -> None:
    name = f"cthang{uuid.uuid4().hex[:8]}"
    storage = f"sqlite:///{tmp_path / 's.db'}"
    done = subprocess.run([sys.executable, "-m", "commtune",
                           *_hanging_args(storage, name, "5")], capture_output=True, text=True,
                          env={**os.environ, **slurm}, cwd=tmp_path, check=False,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    study = optuna.load_study(study_name="h", storage=storage)
    failed = [t for t in study.get_trials() if t.state.name == "FAIL"]
    assert len(failed) == 1 and TrialRecord.of(failed[0]).runs[0].failure.startswith(
        "timeout after 5"
    )
    _settled(slurm, name)
    assert _queue(slurm) == [] and _named(name) == []  # the job was cancelled


def test_a_stopped_tuner_cancels_its_job(slurm: dict[str, str], tmp_path: Path) -> None:
    name = f"ctstop{uuid.uuid4().hex[:8]}"
    storage = f"sqlite:///{tmp_path / 's.db'}"
    proc = commtune_subprocess(_hanging_args(storage, name, "100"),
                               env={**os.environ, **slurm}, cwd=tmp_path)  # fmt: skip
    deadline = time.time() + 120
    while not _named(name) and time.time() < deadline:
        time.sleep(0.2)
    assert _named(name), "the hanging job did not start"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    _settled(slurm, name)
    assert _queue(slurm) == [] and _named(name) == []
    study = optuna.load_study(study_name="h", storage=storage)
    assert [t.state.name for t in study.get_trials()][-1] == "FAIL"


@needs_mpich
def test_a_tuner_inside_an_allocation_runs_srun_steps(
    slurm: dict[str, str], tmp_path: Path
) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    command = demo_command(Vendor.MPICH, 100)
    program = command[command.index("-n") + 2 :] if "-n" in command else command[-2:]
    args = ["tune", "--mpi", "mpich", "--knob", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=auto,"
            "recursive_doubling", "--strategy", "grid", "--trials", "2", "--repeats", "1",
            # a loaded machine once took a run past the default (5 s): the contract here is
            # that runs are steps of the allocation, not how fast they are
            "--timeout", "120",
            "--confirm", "0", "--study", "al", "--storage", storage, "--json", "--", "srun",
            "--mpi=pmi2", "-n", "2", *program]  # fmt: skip
    done = subprocess.run(["salloc", "-n", "2", sys.executable, "-m", "commtune", *args],
                          capture_output=True, text=True, env={**os.environ, **slurm},
                          cwd=tmp_path, check=False, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    study = optuna.load_study(study_name="al", storage=storage)
    trials = study.get_trials()
    runs = [r for t in trials for r in TrialRecord.of(t).runs]
    assert runs and all(r.failure is None for r in runs)
    assert len({r.job["job"] for r in runs if r.job}) == 1  # the allocation's job, its steps
    # libcommtune reached the tasks through srun's --export: every run has its profile
    profiles = Store(storage).profiles("al")
    assert len(profiles) == len(runs)
    assert all(p[2]["ranks"] == 2 for p in profiles)
    assert {TrialRecord.of(t).role.value for t in trials} >= {"reference", "search"}
