"""End to end with real mpirun/mpiexec: studies on the demo app, hangs, kill -9 and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from commtune import native
from commtune.knobs import installed_knobs, load_catalog, space_from_json
from commtune.launch import launcher_for
from commtune.mpi import Installation, Vendor, installation_of
from commtune.platform import Fingerprint
from commtune.store import Store
from commtune.study import Role, TrialRecord, config_key, spec_of
from commtune.trial import processes_of_tuner

from .conftest import (
    INSTALLATIONS,
    VENDORS,
    commtune_subprocess,
    demo_command,
    last_json,
    needs_mpich,
    needs_openmpi,
    orphaned,
    run_cli,
    shm_segments,
)

KNOB = {
    Vendor.OPENMPI: "btl_vader_single_copy_mechanism",
    Vendor.MPICH: "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=auto,nb,recursive_doubling,ring",
}


def pgrep(pattern: str) -> list[str]:
    out = subprocess.run(
        ["pgrep", "-af", pattern], capture_output=True, text=True, check=False
    ).stdout
    # Zombies are dead already: orphans of a killed tuner wait for this (subreaper) process.
    return [line for line in out.splitlines() if "pgrep" not in line and "<defunct>" not in line]


def _study_knob(inst: Installation) -> str:
    """The contract study's knob: Open MPI's single-copy mechanism (the version's own), and
    MPICH's allreduce algorithm with ring, which MPICH 4.0.2 aborts MPI_Init on."""
    from commtune.knobs import installed_knobs

    if inst.vendor is Vendor.MPICH:
        return KNOB[Vendor.MPICH]
    statuses = installed_knobs(inst)
    copy, _ = next(p for p in inst.impl.p2p_knobs if all(statuses[k].available for k in p))
    return copy


@pytest.mark.parametrize("mpi", INSTALLATIONS)
def test_short_study_on_the_demo_app(
    mpi: str, storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = installation_of(mpi)
    vendor = inst.vendor
    program = native.build(inst, "demo/ct_demo.c")
    command = launcher_for(inst).command(2, [str(program), "300"])
    knob = _study_knob(inst)
    args = [
        "tune",
        "--knob",
        knob,
        "--no-inrun",  # the whole-run study (MPICH's knob is an algorithm, raced in-run else)
        "--strategy",
        "grid",
        "--trials",
        "6",
        "--repeats",
        "2",
        "--confirm",
        "3",
        "--max-runs",
        "16",  # the search's 2 + 6 and a verdict's first pass (its runs are not what is tested)
        "--metric",
        r"regex:time ([0-9.]+) s",
        "--study",
        "e2e",
        "--storage",
        storage,
        "--json",
        "--",
        *command,
    ]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    result = last_json(out)
    assert set(result) >= {
        "study",
        "trials",
        "failed_trials",
        "best_params",
        "best_value",
        "default_value",
        "speedup",
        "speedup_ci",
        "accepted",
    }
    study = optuna.load_study(study_name="e2e", storage=Store(storage).optuna)
    # The run timeout is the tuner's own (5x the reference's). A configuration may be cut at
    # it (Open MPI 5 with no single-copy mechanism, 2 ranks on 2 cores, once ran 52 s where it
    # usually runs 1 s: the test took 135 s under a timeout of 120 s); none may crash.
    failures = [str(TrialRecord.of(t).failure) for t in study.trials if t.state.name == "FAIL"]
    assert result["failed_trials"] == len(failures)
    assert all(f.startswith("timeout after ") for f in failures), failures
    ref = study.trials[0]
    assert TrialRecord.of(ref).role is Role.REFERENCE and len(TrialRecord.of(ref).runs) == 2
    assert all(r.value > 0 and r.returncode == 0 for r in TrialRecord.of(ref).runs)
    if vendor is Vendor.MPICH and inst.version.startswith("4.0"):
        # MPICH 4.0.2 aborts MPI_Init on ring: probed, dropped, remembered for the platform.
        assert result["trials"] == 4
        assert "ring" in err and "left out" in err
        configs = [
            TrialRecord.of(t).config for t in study.trials if TrialRecord.of(t).role is Role.SEARCH
        ]
        assert all(c["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] != "ring" for c in configs)
        store = Store(storage)
        platform = Fingerprint.of(inst).key
        remembered = store.knob_values(platform, "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM")
        assert remembered["ring"][0] is False and "ring" in remembered["ring"][1]
        assert remembered["nb"][0] is True
    elif vendor is Vendor.MPICH:  # every algorithm runs: the grid of 4 took the 6 trials' 5
        assert result["trials"] == 5
    else:  # the mechanisms this build runs (4.1 here: cma, emulated, none) + the reference
        installed = {n: s.knob for n, s in installed_knobs(inst).items()}
        (dim,) = space_from_json(inst.vendor.value, spec_of(study).space, installed).dimensions
        assert result["trials"] == 1 + len(dim.candidates()) <= 6
        assert len(dim.candidates()) >= 2
    code, out, _ = run_cli(["export", "e2e", "--storage", storage, "--best"], capsys)
    exported = [line.split()[1].split("=")[0] for line in out.splitlines()
                if line.startswith("export ")]  # fmt: skip
    name = knob.split("=")[0]
    needs = load_catalog(inst.vendor.value)[name].requires  # what it needs to take effect
    assert code == 0 and exported[0] == inst.impl.env_name(name) and len(exported) >= 1
    assert set(exported[1:]) <= set(needs) and len(exported) in (1, 1 + len(needs))
    assert f"measured on {inst.vendor.title} {inst.version}" in out  # the installation
    for fmt in ("json", "romio-hints", "h5tuner", *inst.impl.export_formats):  # every format
        code, out, err = run_cli(["export", "e2e", "--storage", storage, "--best",
                                  "--format", fmt], capsys)  # fmt: skip
        assert code == 0 and out.strip(), (fmt, err)


@needs_openmpi
def test_run_applies_the_accepted_configuration(storage: str, tmp_path: Path) -> None:
    # An accepted study made by hand through the replay launcher, then `commtune run`.
    replay = tmp_path / "r.json"
    replay.write_text(
        json.dumps(
            {
                "default": [1.0, 1.02, 0.98],
                "trials": [
                    {
                        "params": {"btl_vader_single_copy_mechanism": v},
                        "values": [x, x * 1.01, x * 0.99],
                    }
                    for v, x in (("cma", 1.0), ("emulated", 0.9), ("none", 0.5))
                ],
            }
        )
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "commtune",
            "tune",
            "--mpi",
            "openmpi",
            "--replay",
            str(replay),
            "--knob",
            "btl_vader_single_copy_mechanism=cma,emulated,none",
            "--strategy",
            "grid",
            "--study",
            "r",
            "--storage",
            storage,
        ],
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "commtune",
            "run",
            "--study",
            "r",
            "--storage",
            storage,
            "--",
            "mpirun",
            "--allow-run-as-root",
            "-np",
            "1",
            "sh",
            "-c",
            "echo mech=$OMPI_MCA_btl_vader_single_copy_mechanism",
        ],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="cma"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "mech=none"


HANG = {
    Vendor.OPENMPI: ("btl_vader_eager_limit=4096,8192", "OMPI_MCA_btl_vader_eager_limit", "8192"),
    Vendor.MPICH: (
        "MPIR_CVAR_POLLS_BEFORE_YIELD=1000,1500",
        "MPIR_CVAR_POLLS_BEFORE_YIELD",
        "1500",
    ),
}


@pytest.mark.parametrize("vendor", VENDORS)
def test_hanging_configuration_is_killed_and_recorded(
    vendor: Vendor, storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    knob, env_name, bad = HANG[vendor]
    launch = demo_command(vendor)[:-2]  # the launcher and its options, without the program
    script = f'if [ "${env_name}" = "{bad}" ]; then exec sleep 317; fi; true'
    before = shm_segments()
    args = [
        "tune",
        "--knob",
        knob,
        "--no-inrun",  # the whole-run study (MPICH's knob is an algorithm, raced in-run else)
        "--strategy",
        "grid",
        "--repeats",
        "2",
        "--timeout",
        "3",
        "--confirm",
        "0",
        "--study",
        "hang",
        "--storage",
        storage,
        "--json",
        "--",
        *launch,
        "sh",
        "-c",
        script,
    ]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    # the hang was cut at its timeout (the failure says so, the sleep is gone), whatever the
    # machine's speed: no bound on the wall time
    result = last_json(out)
    assert result["trials"] == 3 and result["failed_trials"] == 1
    study = optuna.load_study(study_name="hang", storage=Store(storage).optuna)
    failed = [t for t in study.trials if t.state.name == "FAIL"]
    assert len(failed) == 1
    assert str(TrialRecord.of(failed[0]).failure) == "timeout after 3.0 s"
    assert len(TrialRecord.of(failed[0]).runs) == 1  # its second repeat was skipped
    assert pgrep("sleep 317") == []
    assert orphaned(shm_segments() - before) == set()  # the killed run left none behind


def test_the_processes_of_a_tuner_are_found_by_its_mark() -> None:
    """The product's finder (``trial.processes_of_tuner``, which the kill -9 test relies on):
    it finds a process carrying a tuner's mark and no other, and not once it has ended."""
    mark = {"COMMTUNE_TUNER": "999999999:1"}
    child = subprocess.Popen(["sleep", "30"], env={**os.environ, **mark})
    try:
        deadline = time.time() + 5  # a loaded machine may show the new process a moment late
        while processes_of_tuner(999999999) != [child.pid] and time.time() < deadline:
            time.sleep(0.05)
        assert processes_of_tuner(999999999) == [child.pid]
        assert child.pid not in processes_of_tuner(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert processes_of_tuner(999999999) == []


@needs_openmpi
def test_resume_after_kill_9(storage: str, tmp_path: Path) -> None:
    command = demo_command(Vendor.OPENMPI, iterations=400)
    args = [
        "tune",
        "--strategy",
        "random",
        "--seed",
        "3",
        "--trials",
        "10",
        "--repeats",
        "1",
        "--confirm",
        "0",
        "--study",
        "k",
        "--storage",
        storage,
        "--json",
        "--",
        *command,
    ]
    proc = commtune_subprocess(args)
    store = Store(storage)
    deadline = time.monotonic() + 120
    complete: list[optuna.trial.FrozenTrial] = []
    while time.monotonic() < deadline:
        try:
            study = optuna.load_study(study_name="k", storage=store.optuna)
            complete = [t for t in study.get_trials() if t.state.name == "COMPLETE"]
        except KeyError:
            pass
        if len(complete) >= 4:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(complete) >= 4
    deadline = time.monotonic() + 10  # the run's processes leave the process table
    while processes_of_tuner(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_of_tuner(proc.pid) == []  # the run died with the tuner (PDEATHSIG)
    study = optuna.load_study(study_name="k", storage=store.optuna)
    before = {
        t.number: (t.value, TrialRecord.of(t).config)
        for t in study.get_trials()
        if t.state.name == "COMPLETE"
    }
    assert len(before) >= 4
    done = subprocess.run(
        [sys.executable, "-m", "commtune", *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    study = optuna.load_study(study_name="k", storage=store.optuna)
    after = {t.number: (t.value, TrialRecord.of(t).config) for t in study.get_trials()}
    assert all(after[n] == v for n, v in before.items())  # finished trials intact
    # Interrupted trials that had started running (a trial killed between being proposed and
    # getting its role never ran and does not count).
    interrupted = [
        t
        for t in study.get_trials()
        if str(TrialRecord.of(t).failure) == "interrupted" and TrialRecord.of(t).role is not None
    ]
    # the budget is spent on trials that ran to their end: the interrupted come on top
    assert result["trials"] == 10 + len(interrupted)
    assert result["failed_trials"] == len(interrupted)
    searched = [
        config_key(TrialRecord.of(t).config)
        for t in study.get_trials()
        if TrialRecord.of(t).role is Role.SEARCH and t.state.name == "COMPLETE"
    ]
    assert len(searched) == len(set(searched))


@needs_mpich
@needs_openmpi
def test_knobs_listing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["knobs", "--mpi", "mpich", "--json"], capsys)
    knobs = {k["name"]: k for k in last_json(out)["knobs"]}
    assert code == 0 and knobs["UCX_RNDV_THRESH"]["available"] is True
    assert "nb" in knobs["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"]["domain"]
    code, out, _ = run_cli(["knobs", "--mpi", "openmpi", "--preset", "progress", "--json"], capsys)
    assert [k["name"] for k in last_json(out)["knobs"]] == ["mpi_yield_when_idle", "bind-to"]


@needs_mpich
@needs_openmpi
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_knobs_table_fits_80_columns(
    mpi: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run_cli(["knobs", "--mpi", mpi, "--json"], capsys)
    names = [k["name"] for k in last_json(out)["knobs"]]
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["knobs", "--mpi", mpi], capsys)
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= 80 and "…" not in out
    # every name is in the first column, folded over lines but whole
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["knob", "type"])
    column = [line[: lines[head].index("type")].strip() for line in lines[head + 2 :]]
    text = "".join(column)
    assert all(name in text for name in names)


def test_a_segment_counts_as_left_behind_only_when_no_live_process_maps_it() -> None:
    """The hang test's check: another job's segment, mapped by a live process, is not the
    test's; an unmapped one is what a killed run left."""
    import mmap

    path = "/dev/shm/vader_segment.commtune-test.1"
    with open(path, "wb") as f:
        f.write(b"\0" * 4096)
    try:
        assert orphaned({path}) == {path}
        with open(path, "r+b") as f, mmap.mmap(f.fileno(), 4096):
            assert orphaned({path}) == set()
    finally:
        os.unlink(path)
