"""Several tuners on one study, through SQLite, Optuna's journal file and a real PostgreSQL
server: the reference and the confirmation are done once, no configuration runs twice, the
budget holds across workers, and a worker killed with ``kill -9`` loses nothing."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import optuna
import pytest

from commtune import native
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.platform import Fingerprint
from commtune.store import Claim, Claims, MemoryClaims, Store, StoreClaims
from commtune.study import INTERRUPTED, Role, TrialRecord, TrialWriter, config_key

from .conftest import (
    STORAGE_KINDS as KINDS,
)
from .conftest import (
    commtune_subprocess,
    demo_command,
    needs_mpich,
    needs_openmpi,
    processes_running,
    run_cli,
    storage_url,
)


def _url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return storage_url(kind, tmp_path, request)


def _claims(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Claims:
    if kind == "memory":
        return MemoryClaims()
    return StoreClaims(Store(_url(kind, tmp_path, request)), "c")


@pytest.mark.parametrize("kind", ["memory", *KINDS])
def test_the_claims_contract(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Both homes of the claims (memory, a storage) behave alike: a key has one holder, a
    counted claim spends the budget, a claim is bound to its trial by its holder only,
    released by key, worker or trial, and claims made before are added without replacing."""
    claims = _claims(kind, tmp_path, request)
    first = claims.claim("reference", "a", trial=None, counted=True, limit=2)
    assert first == Claim("reference", "a", None, True)
    assert claims.claim("reference", "b", trial=None, counted=True, limit=2) == first
    assert claims.claim("config:1", "b", trial=3, counted=True, limit=2) == Claim(
        "config:1", "b", 3, True)  # fmt: skip
    assert claims.claim("config:2", "a", trial=4, counted=True, limit=2) is None  # spent
    assert claims.claim("confirm", "a", trial=None, counted=False, limit=2) is not None
    claims.bind("reference", "b", 7)  # not b's claim: nothing changes
    claims.bind("reference", "a", 1)
    held = {c.key: c for c in claims.all()}
    assert held["reference"] == Claim("reference", "a", 1, True) and len(held) == 3
    assert claims.release(None, None, 3) == 1  # by trial
    assert claims.release("confirm", "b", None) == 0  # not b's
    assert claims.release(None, "a", None) == 2  # by worker
    assert claims.all() == []
    added = claims.add([Claim("config:1", "c", 9, True), Claim("config:1", "d", 10, True)])
    assert added == 1 and claims.all() == [Claim("config:1", "c", 9, True)]
    claims.beat("c")
    beats = claims.beats()
    assert beats == {} if kind == "memory" else set(beats) == {"c"}


def _claim_many(url: str, worker: str, keys: int, limit: int, out: multiprocessing.Queue) -> None:
    store = Store(url)
    got = []
    for k in range(keys):
        holder = StoreClaims(store, "s").claim(f"k{k}", worker, counted=True, limit=limit)
        if holder is not None and holder.worker == worker:
            got.append(k)
    out.put((worker, got))


@pytest.mark.parametrize("kind", KINDS)
def test_claims_are_one_holder_each_and_within_the_limit(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _url(kind, tmp_path, request)
    Store(url)  # the tables exist before the workers race for claims
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_claim_many, args=(url, f"w{i}", 40, 25, out)) for i in range(4)]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    granted = [k for got in results.values() for k in got]
    assert len(granted) == 25 and len(set(granted)) == 25  # one holder per key, the limit held
    held = StoreClaims(Store(url), "s").all()
    assert {c.key for c in held} == {f"k{k}" for k in granted}
    assert Counter(c.worker for c in held) == Counter(
        {w: len(got) for w, got in results.items() if got}
    )


def _write_rows(url: str, worker: str, rows: int, out: multiprocessing.Queue) -> None:
    store = Store(url)
    errors = []
    for k in range(rows):
        try:
            store.record_knob_value("p", "knob", k, ok=True, reason=worker)
            store.save_platform(Fingerprint("cpu", 2, "v", f"{k}", "d"))
        except Exception as exc:  # the test counts them
            errors.append(repr(exc))
    out.put((worker, errors))


@pytest.mark.parametrize("kind", KINDS)
def test_workers_writing_the_same_rows_at_once_both_succeed(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two workers checking the same knob values write the same rows at the same moments:
    each write replaces the row (the last one wins), none fails on the row's key."""
    url = _url(kind, tmp_path, request)
    Store(url)
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_write_rows, args=(url, f"w{i}", 60, out)) for i in range(4)]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert results == {f"w{i}": [] for i in range(4)}
    values = Store(url).knob_values("p", "knob")
    assert set(values) == set(range(60))
    assert {reason for _, reason in values.values()} <= {f"w{i}" for i in range(4)}


def _space_of_a_second_worker(url: str, out: multiprocessing.Queue) -> None:
    from commtune.knobs import installed_knobs
    from commtune.report import UI
    from commtune.service._space import _chosen_elsewhere
    from commtune.util import worker_id

    worker_id.cache_clear()  # forked: another worker than its parent
    inst = find_installation(Vendor.OPENMPI)
    try:
        space = _chosen_elsewhere(url, "g", inst, installed_knobs(inst), UI())
        out.put(None if space is None else list(space.names))
    except Exception as exc:  # the test shows it
        out.put(repr(exc))


@needs_openmpi
def test_workers_starting_a_new_study_at_once_take_the_space_the_first_chose(
    tmp_path: Path,
) -> None:
    """Two tuners started at once with no knob named each profile a run, and two profiles
    may call for different spaces (the workers guide's block failed so: "exists with a
    different space"). The first to claim the space keeps its own; the second waits for the
    study the first makes and takes its space; a claim whose holder died is taken over."""
    from commtune.knobs import Dimension, Space, installed_knobs
    from commtune.report import UI
    from commtune.service._space import _chosen_elsewhere
    from commtune.study import DEFAULTS
    from commtune.tune import Target, open_study

    inst = find_installation(Vendor.OPENMPI)
    statuses = installed_knobs(inst)
    url = f"sqlite:///{tmp_path / 's.db'}"
    plan = replace(DEFAULTS, storage=url, study="g")
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue = ctx.Queue()
    # a first worker that claimed the space and died before making the study: taken over
    dead = ctx.Process(target=_space_of_a_second_worker, args=(url, out))
    dead.start()
    assert out.get(timeout=60) is None and dead.join(timeout=30) is None
    assert _chosen_elsewhere(url, "g", inst, statuses, UI()) is None
    second = ctx.Process(target=_space_of_a_second_worker, args=(url, out))
    second.start()
    time.sleep(2.0)
    assert second.is_alive() and out.empty()  # it waits for the study the first makes
    space = Space(inst.vendor.value, (Dimension(statuses["btl_vader_eager_limit"].knob),))
    target = Target.of("g", ["x"], space, plan, "p", inst.to_json())
    open_study(Store(url).optuna, target)
    assert out.get(timeout=60) == ["btl_vader_eager_limit"]
    second.join(timeout=30)


GATED_RUNS = 8  # the victim's runs before its next one waits (a search trial done by then)


def _tune_args(
    url: str, study: str, trials: int, iterations: int = 300, gate: Path | None = None
) -> list[str]:
    """``gate``: a file naming a tuner's pid; that tuner's runs after its first
    ``GATED_RUNS`` wait (rank 0 counts and waits; the other rank waits for it in MPI), so
    that tuner can never finish its study; other tuners' runs go on. A run's own timeout
    is then 300 s: a gated run is not a hung one."""
    installation = find_installation(Vendor.OPENMPI)
    program = [str(native.build(installation, "demo/ct_demo.c")), str(iterations)]
    if gate is not None:
        count = gate.with_suffix(".count")
        count.write_text("0")
        wait = (
            f'if [ "$OMPI_COMM_WORLD_RANK" = 0 ] && [ -s {gate} ] && '
            f'[ "${{COMMTUNE_TUNER%%:*}}" = "$(cat {gate})" ]; then '
            f"n=$(flock {count} sh -c 'n=$(($(cat {count}) + 1)); echo $n > {count}; echo $n');"
            f" [ $n -gt {GATED_RUNS} ] && sleep 600; fi; "
            'exec "$0" "$@"'
        )
        program = ["sh", "-c", wait, *program]
    command = launcher_for(installation).command(2, program)
    timeout = ["--timeout", "300"] if gate is not None else []
    return ["tune", "--mpi", "openmpi", "--knob", "btl_vader_eager_limit=4K,8K,16K,32K",
            "--knob", "btl_vader_single_copy_mechanism", "--strategy", "random", "--trials",
            str(trials), "--repeats", "2", "--confirm", "2", "--study", study, "--storage", url,
            "--max-runs", "60",  # the search's share of it (Plan.explore) above the trials
            *timeout, "--json", "--", *command]  # fmt: skip


def _measured(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.get_trials() if TrialRecord.of(t).role in (Role.REFERENCE, Role.SEARCH)
            and t.state.name in ("COMPLETE", "FAIL")]  # fmt: skip


def _search_keys(measured: list[optuna.trial.FrozenTrial]) -> list[str]:
    """The configurations of the measured search trials, one entry per trial."""
    return [
        config_key(TrialRecord.of(t).config)
        for t in measured
        if TrialRecord.of(t).role is Role.SEARCH
    ]


def _two_workers(args: list[str]) -> tuple[str, list[dict]]:
    """Two tuners started 0.3 s apart on the same command: their stderr, their results."""
    first = commtune_subprocess(args)
    time.sleep(0.3)
    second = commtune_subprocess(args)
    outs = [p.communicate(timeout=300) for p in (first, second)]
    for p, (_, err) in zip((first, second), outs, strict=True):
        assert p.returncode == 0, err
    return "".join(err for _, err in outs), [
        json.loads(o.strip().splitlines()[-1]) for o, _ in outs
    ]


@needs_mpich
def test_two_mpich_workers_share_one_study(tmp_path: Path) -> None:
    """The same with MPICH's launcher (one rank per worker: MPICH busy-waits, and two workers
    of two ranks would be four spinning ranks on these two cores)."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    command = demo_command(Vendor.MPICH, 300, ranks=1)
    args = ["tune", "--mpi", "mpich", "--knob", "UCX_RNDV_THRESH=8192,65536,524288",
            "--knob", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=auto,nb,recursive_doubling",
            "--strategy", "random", "--trials", "6", "--repeats", "2", "--confirm", "2",
            "--study", "m", "--storage", url, "--json", "--", *command]  # fmt: skip
    errs, results = _two_workers(args)
    assert errs.count("reference (library defaults)") == 1
    assert results[0]["trials"] == results[1]["trials"] == 6
    assert results[0]["accepted_params"] == results[1]["accepted_params"]
    study = optuna.load_study(study_name="m", storage=Store(url).optuna)
    measured = _measured(study)
    keys = _search_keys(measured)
    assert len(measured) == 6 and len(keys) == len(set(keys)) == 5


@needs_openmpi
@pytest.mark.parametrize("kind", KINDS)
def test_two_workers_share_one_study(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _url(kind, tmp_path, request)
    args = _tune_args(url, "w", 8)
    errs, results = _two_workers(args)
    assert errs.count("reference (library defaults)") == 1  # run by one worker only
    assert errs.count("confirming the best") <= 1
    assert results[0]["trials"] == results[1]["trials"] == 8  # the budget, across workers
    for field in ("accepted", "reason", "speedup", "accepted_params"):  # one confirmation
        assert results[0][field] == results[1][field]
    store = Store(url)
    study = optuna.load_study(study_name="w", storage=store.optuna)
    measured = _measured(study)
    assert len(measured) == 8
    assert sum(TrialRecord.of(t).role is Role.REFERENCE for t in measured) == 1
    keys = _search_keys(measured)
    assert len(keys) == len(set(keys)) == 7  # no configuration measured twice
    assert {TrialRecord.of(t).worker for t in study.get_trials()} <= {
        c.worker for c in StoreClaims(store, "w").all()
    } | {TrialRecord.of(t).worker for t in measured}


def _victim_state(store: Store, pid: int) -> tuple[dict[int, float], set[int]]:
    """The finished search trials (number: value) of the tuner with this pid, and the numbers
    of its running trials."""
    try:
        study = optuna.load_study(study_name="k", storage=store.optuna)
    except KeyError:
        return {}, set()
    trials = study.get_trials()
    ids = {
        w for w in (TrialRecord.of(t).worker for t in trials) if w and int(w.split(":")[1]) == pid
    }
    victim_id = next(iter(ids), None)
    mine = [t for t in trials if victim_id is not None and TrialRecord.of(t).worker == victim_id]
    search = [t for t in mine if TrialRecord.of(t).role is Role.SEARCH and t.value is not None]
    done = {t.number: t.value for t in search if t.state.name == "COMPLETE"}
    return done, {t.number for t in mine if t.state.name == "RUNNING"}


@needs_openmpi
@pytest.mark.parametrize("kind", KINDS)
def test_a_worker_killed_with_kill_9_loses_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _url(kind, tmp_path, request)
    gate = tmp_path / "gate"
    args = _tune_args(url, "k", 10, iterations=600, gate=gate)
    victim = commtune_subprocess(args)
    gate.write_text(str(victim.pid))  # its runs from the 9th on wait: it cannot finish
    # The survivor joins once the victim waits at its gate. Started at once, it once ran so
    # many of the study's runs that the victim never reached its 9th and finished (CI).
    count = gate.with_suffix(".count")
    deadline = time.time() + 120
    while time.time() < deadline and victim.poll() is None:
        if int(count.read_text().strip() or 0) > GATED_RUNS:
            break
        time.sleep(0.1)
    survivor = commtune_subprocess(args)
    store = Store(url)
    deadline = time.time() + 120
    finished: dict[int, float] = {}
    running: set[int] = set()
    looks = concurrent.futures.ThreadPoolExecutor(1)
    while time.time() < deadline and victim.poll() is None:
        done, running = _victim_state(store, victim.pid)
        if not (done and running):
            time.sleep(0.1)
            continue
        # Frozen, the victim cannot finish the trial between this look and the kill: what it
        # has RUNNING now is what it leaves behind. Frozen inside a write, it holds the
        # storage's lock and the look waits for it: after 2 s it is let go on.
        victim.send_signal(signal.SIGSTOP)
        look = looks.submit(_victim_state, store, victim.pid)
        try:
            done, running = look.result(timeout=2)
        except concurrent.futures.TimeoutError:
            victim.send_signal(signal.SIGCONT)
            look.result()
            continue
        if done and running:
            finished = done
            victim.send_signal(signal.SIGKILL)
            break
        victim.send_signal(signal.SIGCONT)
    looks.shutdown()
    _, victim_err = victim.communicate(timeout=60)
    assert finished, f"the victim was never seen mid-trial: {victim_err[-2000:]}"
    _, err = survivor.communicate(timeout=300)
    assert survivor.returncode == 0, err
    study = optuna.load_study(study_name="k", storage=store.optuna)
    by_number = {t.number: t for t in study.get_trials()}
    for number, value in finished.items():  # the killed worker's finished trials are intact
        assert by_number[number].state.name == "COMPLETE" and by_number[number].value == value
    for number in running:  # its running trials, taken back by the survivor
        assert str(TrialRecord.of(by_number[number]).failure) == INTERRUPTED, by_number[number]
    measured = [t for t in _measured(study) if str(TrialRecord.of(t).failure) != INTERRUPTED]
    assert len(measured) == 10  # the budget is still met: the survivor ran the rest
    keys = _search_keys(measured)
    assert len(keys) == len(set(keys))


def test_a_journal_on_a_read_only_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(ro)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a directory here: {mounted.stderr.strip()}")
    url = f"journal://{ro / 'j.log'}"
    try:  # a journal that exists, on a directory mounted read-only since
        made = subprocess.run([sys.executable, "-c", "import sys; from commtune.store import "
                               "Store; Store(sys.argv[1]).optuna", url], check=False)  # fmt: skip
        assert made.returncode == 0  # the journal and its side file exist
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        code, out, err = run_cli(["studies", "--storage", url], capsys)
    finally:
        subprocess.run(["umount", str(ro)], check=False)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "is not writable" in err and str(ro) in err


def test_a_file_that_is_not_a_journal_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "not.journal"
    bad.write_text("this is not a journal\n")
    code, out, err = run_cli(["studies", "--storage", f"journal://{bad}"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"commtune: error: bad storage: {bad} is not an Optuna journal")


def test_a_trial_being_stamped_is_not_taken_for_a_dead_workers(tmp_path: Path) -> None:
    """Between ``ask`` and its worker's name there is a moment; a worker recovering dead
    workers' trials then must leave the trial alone while another worker lives (seen as a race
    with two workers), and take it back at once when none does (a tuner killed in that
    moment, resumed alone, must not wait for it)."""
    import datetime
    import socket

    from commtune.study import TrialRecord, ask
    from commtune.tune._workers import UNNAMED, Workers
    from commtune.util import start_time

    url = f"sqlite:///{tmp_path / 's.db'}"
    store = Store(url)
    study = optuna.create_study(study_name="r", storage=store.optuna)
    fresh = study.ask()  # its worker has not stamped it yet
    named = ask(study)  # this process's, alive
    TrialWriter(named).role(Role.SEARCH)
    old = study.ask()  # unnamed for longer than any stamping takes: a dead commtune's
    started = datetime.datetime.now() - datetime.timedelta(seconds=UNNAMED + 1)
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("UPDATE trials SET datetime_start = ? WHERE trial_id = ?",
                   (started.isoformat(" "), old._trial_id))  # fmt: skip
    other = subprocess.Popen(["sleep", "60"])  # another worker, alive on this host
    try:
        StoreClaims(store, "r").beat(f"{socket.gethostname()}:{other.pid}:{start_time(other.pid)}")
        study = optuna.load_study(study_name="r", storage=Store(url).optuna)
        assert Workers.on(store, "r").recover(study) == 1
        states = {t.number: t.state.name for t in study.get_trials()}
        assert states == {fresh.number: "RUNNING", named.number: "RUNNING", old.number: "FAIL"}
        assert str(TrialRecord.of(study.get_trials()[old.number]).failure) == INTERRUPTED
    finally:
        other.kill()
        other.wait()
    assert Workers.on(store, "r").recover(study) == 1  # alone now: the fresh one too
    assert study.get_trials()[fresh.number].state.name == "FAIL"
    assert study.get_trials()[named.number].state.name == "RUNNING"


@needs_openmpi
def test_a_lock_held_too_long_stops_the_tuner_in_one_line(tmp_path: Path) -> None:
    """Another process holds the SQLite file's lock past ``$COMMTUNE_SQLITE_TIMEOUT``: the
    tuner stops with one line and exit 2, not a traceback, and a rerun resumes the study with
    every finished trial as it was."""
    db = tmp_path / "s.db"
    args = _tune_args(f"sqlite:///{db}", "L", 12)
    tuner = commtune_subprocess(args, env={**os.environ, "COMMTUNE_SQLITE_TIMEOUT": "1"})
    deadline = time.time() + 120
    finished: dict[int, float] = {}
    while time.time() < deadline and tuner.poll() is None and not finished:
        time.sleep(0.2)
        with (
            contextlib.suppress(sqlite3.OperationalError),  # no tables yet, or busy
            contextlib.closing(sqlite3.connect(db, timeout=5)) as conn,
        ):
            finished = dict(conn.execute(
                "SELECT t.number, v.value FROM trials t JOIN trial_values v USING (trial_id)"
                " WHERE t.state = 'COMPLETE'").fetchall())  # fmt: skip
    assert finished, "no trial finished"
    holder = sqlite3.connect(db, timeout=30, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        _, err = tuner.communicate(timeout=60)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert tuner.returncode == 2, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "commtune: error: storage failed: database is locked (another process held it for "
        "over 1 s); finished trials are saved"
    )
    rerun = subprocess.run([sys.executable, "-m", "commtune", *args], capture_output=True,
                           text=True, timeout=300, check=False)  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    study = optuna.load_study(study_name="L", storage=f"sqlite:///{db}")
    by_number = {t.number: t for t in study.get_trials()}
    for number, value in finished.items():
        assert by_number[number].state.name == "COMPLETE" and by_number[number].value == value
    assert not [t for t in by_number.values() if t.state.name == "RUNNING"]


@needs_openmpi
def test_connections_the_server_drops_during_a_trial_are_reopened(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """PostgreSQL drops the tuner's idle connections while its runs go on (the server's idle
    timeout, a firewall, a restart do this to a trial of ten minutes): the tuner opens new
    ones and the study finishes."""
    import sqlalchemy as sa

    url = _url("postgres", tmp_path, request)
    name = f"ctidle{os.getpid()}x{int(time.time() * 1000) % 10**6}"
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "1",
               "bash", "-c", f"exec -a {name} sleep 1.5"]  # fmt: skip
    args = ["tune", "--mpi", "openmpi", "--knob", "btl_vader_eager_limit=4K,8K,16K",
            "--strategy", "grid", "--trials", "4", "--repeats", "1", "--confirm", "0",
            "--no-interposer", "--study", "p", "--storage", url, "--json", "--",
            *command]  # fmt: skip
    tuner = commtune_subprocess(args)
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    drop = sa.text("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                   " WHERE datname = current_database() AND pid <> pg_backend_pid()")  # fmt: skip
    runs: set[str] = set()
    drops = []
    deadline = time.time() + 120
    while tuner.poll() is None and time.time() < deadline:
        for run in (
            set(processes_running(name)) - runs
        ):  # a run has started: the tuner is waiting for it
            runs.add(run)
            with admin.connect() as conn:
                drops.append(conn.execute(drop).scalar_one())
        time.sleep(0.1)
    out, err = tuner.communicate(timeout=120)
    admin.dispose()
    assert tuner.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["trials"] == 4
    assert len(drops) >= 4 and all(n >= 1 for n in drops), drops  # each run's connections


class _FlakyBeats(MemoryClaims):
    """Claims in memory whose heartbeat fails while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.down = threading.Event()
        self.tries = 0

    def beat(self, worker: str) -> None:
        self.tries += 1
        if self.down.is_set():
            raise OSError("database is locked")
        super().beat(worker)


def test_a_heartbeat_that_keeps_failing_says_so_and_claims_nothing_new(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 48: every heartbeat error was swallowed, so a worker whose beats never reached
    the storage went on claiming trials that workers on other hosts would fail as a dead
    one's. Three failed beats in a row: one line, and a new trial waits until a beat
    succeeds (said too); a claim that is no new trial does not wait."""
    from commtune.tune._workers import MISSED, Workers

    claims = _FlakyBeats()
    workers = Workers(claims, "s")
    claims.down.set()
    with workers.heartbeat(every=0.01):
        deadline = time.time() + 10
        while workers.beating.is_set() and time.time() < deadline:
            time.sleep(0.01)
        assert not workers.beating.is_set() and claims.tries >= MISSED
        said = capsys.readouterr().err
        assert said.count("heartbeats in a row did not reach the storage") == 1, said
        assert "database is locked" in said and len(said.strip().splitlines()) == 1
        assert workers.claim("reference") is not None  # not a new trial: no wait
        waiting = concurrent.futures.ThreadPoolExecutor(1)
        claimed = waiting.submit(workers.claim, "config:x", counted=True, limit=5)
        time.sleep(0.2)
        assert not claimed.done()  # held back while the beats fail
        claims.down.clear()
        assert claimed.result(timeout=10) is not None  # the next beat lets it go
        waiting.shutdown()
    assert "reaches the storage again" in capsys.readouterr().err
