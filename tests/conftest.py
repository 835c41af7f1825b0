"""Shared fixtures: real MPI installations, the demo app built with each, temporary storages."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from commtune import native
from commtune.cli import main
from commtune.errors import UsageError
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation
from commtune.testbed import slurm_conf

# The MPI installations `make mpis` puts in prefixes of their own (as the Makefile exports it).
_MPIS = Path(__file__).resolve().parent.parent / ".mpis"
os.environ.setdefault(
    "COMMTUNE_MPI_PATH", os.pathsep.join(str(_MPIS / n) for n in ("openmpi5", "mpich5", "impi"))
)
# The suite's own build and discovery cache (issue 76): what a user's studies left in
# ~/.cache/commtune (a discovery made before ucx-utils was installed) never answers for it.
os.environ["COMMTUNE_CACHE"] = str(Path(__file__).resolve().parent.parent / "build" / "test-cache")


def _installed(vendor: Vendor) -> bool:
    try:
        find_installation(vendor)
    except UsageError:
        return False
    return True


HAVE = {v: _installed(v) for v in Vendor}
# A vendor marker says what a test needs; collection turns it into a skip (with the reason)
# where that MPI is missing, and adds the `mpi` marker (`make test-fast` leaves those out).
needs_openmpi = pytest.mark.openmpi
needs_mpich = pytest.mark.mpich
needs_intel = pytest.mark.intel
VENDORS = [
    pytest.param(Vendor.OPENMPI, marks=needs_openmpi, id="openmpi"),
    pytest.param(Vendor.MPICH, marks=needs_mpich, id="mpich"),
]


# The contract suite (marker `contract`: discovery, apply and read back, one short study)
# runs on every MPI installation the tests know (a `--mpi` form each: Debian's by family, the
# package index's by version, `make mpis`); every other test that needs MPI runs on one
# installation of each family (VENDORS). A new installation is one more entry here, and
# costs `make test` the contract suite only (docs/benchmarks.md, "The test suite").
def _installation(spec: str, *marks: pytest.MarkDecorator) -> Any:
    from commtune.mpi import MPISpec, find_installations

    parsed = MPISpec.parse(spec)
    if parsed.version is not None and not any(parsed.matches(i) for i in find_installations()):
        marks = (*marks, pytest.mark.skip(reason=f"no {spec} installation ('make mpis')"))
    return pytest.param(spec, marks=(*marks, pytest.mark.mpi, pytest.mark.contract), id=spec)


INSTALLATIONS = [
    _installation("openmpi", needs_openmpi),
    _installation("mpich", needs_mpich),
    _installation("openmpi@5"),
    _installation("mpich@5"),
    _installation("intel", needs_intel),
]
# A simulated cluster's library (SimGrid's SMPI): the vendor contract and discovery run on it
# too (tests/test_contracts.py); its studies are tests/test_smpi.py's
SIMULATOR = _installation("smpi", pytest.mark.smpi)


# The files whose tests take longest together (session 9: 100-290 s each), started first:
# make test hands a file's tests to one worker (--dist loadfile, in this order with
# --no-loadscope-reorder); a long file started last keeps one worker busy while the other
# has nothing left. The order only; a file gone from the suite does nothing.
HEAVIEST = ("test_predict.py", "test_workers.py", "test_installed.py", "test_e2e.py",
            "test_smpi.py", "test_sample.py", "test_guides.py", "test_stale.py",
            "test_replay.py", "test_docs.py", "test_interposer.py", "test_verdict.py")  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    first = {name: i for i, name in enumerate(HEAVIEST)}
    items.sort(key=lambda item: first.get(item.path.name, len(first)))  # stable: a file's order
    for item in items:
        for vendor in Vendor:
            if item.get_closest_marker(vendor.value) is None:
                continue
            item.add_marker(pytest.mark.mpi)
            if not HAVE[vendor]:
                item.add_marker(pytest.mark.skip(reason=f"{vendor.title} is not installed"))
        # a simulated cluster is one process on one core: such tests run two at a time
        real = [v for v in Vendor if v is not Vendor.SMPI and item.get_closest_marker(v.value)]
        if item.get_closest_marker("smpi") and not real and not item.get_closest_marker("root"):
            item.add_marker(pytest.mark.sim_only)


@pytest.fixture
def storage(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'study.db'}"


PROGRAMS = Path(__file__).resolve().parent / "programs"
# tests/programs/knob_speed.c runs 3x faster under these (one knob value a library)
FAST_KNOB = {Vendor.OPENMPI: "btl_tcp_links=4", Vendor.MPICH: "MPIR_CVAR_POLLS_BEFORE_YIELD=2000"}
SPEED_METRIC = r"regex:time ([0-9.]+) s"


def demo_command(vendor: Vendor, iterations: int = 300, ranks: int = 2) -> list[str]:
    installation = find_installation(vendor)
    program = native.build(installation, "demo/ct_demo.c")
    return launcher_for(installation).command(ranks, [str(program), str(iterations)])


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def _default_signals() -> None:
    # A command started in the background by a shell without job control ignores SIGINT and
    # SIGQUIT, and its children inherit that (Python then installs no KeyboardInterrupt):
    # the tuner under test gets the default handling a user's terminal gives it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def commtune_subprocess(args: list[str], **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "commtune", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,  # noqa: PLW1509  # the test's one thread holds no lock
        **kwargs,  # type: ignore[arg-type]
    )


def shm_segments() -> set[str]:
    return set(glob.glob("/dev/shm/vader_segment.*"))


def orphaned(segments: set[str]) -> set[str]:
    """Those of ``segments`` no live process maps: what a killed run left behind. Another
    MPI job running on the machine maps its own, and they are not this test's (the hang
    test compared all of /dev/shm and failed when one ran beside the suite)."""
    mapped: set[str] = set()
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            with open(maps) as f:
                mapped.update(
                    line.split(maxsplit=5)[-1].strip() for line in f if "/dev/shm/" in line
                )
        except OSError:  # the process ended, or is not ours to read
            continue
    return {s for s in segments if s not in mapped and os.path.exists(s)}


def processes_running(name: str) -> list[str]:
    """The processes whose command line holds ``name`` (pid and command line), not counting
    pgrep itself or a shell whose script names it."""
    out = subprocess.run(["pgrep", "-af", name], capture_output=True, text=True, check=False)
    return [line for line in out.stdout.splitlines() if "pgrep" not in line and "bash" not in line]


def processes_named(name: str) -> list[int]:
    out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


os.environ.setdefault("COLUMNS", "160")


STORAGE_KINDS = ["sqlite", "journal", "postgres"]


def storage_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A new, empty storage of ``kind`` (:data:`STORAGE_KINDS`): a SQLite file, a journal
    file, or a database of its own on the session's PostgreSQL server."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    if kind == "journal":
        return f"journal://{tmp_path / 's.journal'}"
    url: str = request.getfixturevalue("postgres")
    name = f"w{os.getpid()}_{time.time_ns() % 10**12}"
    params = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&"))
    subprocess.run(["runuser", "-u", "postgres", "--", "createdb", "-h", params["host"], "-p",
                    params["port"], "-U", "postgres", name], check=True)  # fmt: skip
    return url.replace("/commtune?", f"/{name}?")


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A PostgreSQL server from this machine's packages (Debian: postgresql), started for the
    tests and stopped after them: the URL of an empty database on it. Tests using it skip,
    with the reason, where it cannot start."""
    import importlib.util
    import socket
    import tempfile

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.skip("no PostgreSQL server here (Debian: apt-get install postgresql)")
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("no PostgreSQL driver (pip install 'commtune[postgres]')")
    bindir = Path(found[-1]).parent
    base = Path(tempfile.mkdtemp(prefix="commtune-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(base, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data, log = base / "data", base / "server.log"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*as_user, *argv], capture_output=True, text=True, check=False,
                              timeout=120)  # fmt: skip

    steps = [
        [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
        [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o",
         f"-p {port} -k {base} -c listen_addresses=''", "start"],
        [str(bindir / "createdb"), "-h", str(base), "-p", str(port), "-U", "postgres", "commtune"],
    ]  # fmt: skip
    for i, argv in enumerate(steps):
        if i == 1:  # a role that must give its password, for the wrong-password test
            hba = data / "pg_hba.conf"
            text = hba.read_text() if hba.exists() else ""
            hba.write_text("local all ctpassword scram-sha-256\n" + text)
        done = run(*argv)
        if done.returncode != 0:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
            shutil.rmtree(base, ignore_errors=True)
            why = (done.stderr or done.stdout).strip().splitlines()
            pytest.skip(f"cannot start PostgreSQL: {why[-1] if why else Path(argv[0]).name}")
    run(str(bindir / "psql"), "-h", str(base), "-p", str(port), "-U", "postgres", "-d",
        "commtune", "-c", "CREATE ROLE ctpassword LOGIN PASSWORD 'right'")  # fmt: skip
    try:
        yield f"postgresql://postgres@/commtune?host={base}&port={port}"
    finally:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm() -> Iterator[dict[str, str]]:
    """A one-node Slurm cluster from this machine's packages (Debian: slurmctld, slurmd,
    munge), started for the tests and stopped after them: the environment its clients need
    (``SLURM_CONF``). Tests using it skip, with the reason, where it cannot start."""
    import socket
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("a test Slurm cluster runs its daemons as root")
    for tool in ("munged", "mungekey", "slurmctld", "slurmd", "sinfo", "sbatch", "srun"):
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool} here (Debian: apt-get install slurmctld slurmd munge)")
    base = Path(tempfile.mkdtemp(prefix="commtune-slurm-"))
    (base / "state").mkdir()
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("", 0))
            ports.append(s.getsockname()[1])
    host = socket.gethostname().split(".")[0]
    conf = base / "slurm.conf"
    conf.write_text(slurm_conf(base, [(host, None)], os.cpu_count() or 1,
                               cluster="commtune-test", feature="commtune",
                               ctld_port=ports[0], d_port=ports[1]))  # fmt: skip
    (base / f"spool-{host}").mkdir()
    env = {**os.environ, "SLURM_CONF": str(conf)}
    for name in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST"):
        env.pop(name, None)
    key = base / "munge.key"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, env=env, check=False,
                              timeout=60)  # fmt: skip

    def stop() -> None:
        run("scancel", "--quiet", "--user", "root")
        for pid_file in (f"slurmd-{host}.pid", "slurmctld.pid", "munged.pid"):
            with contextlib.suppress(OSError, ValueError):
                os.kill(int((base / pid_file).read_text().split()[0]), signal.SIGTERM)
        time.sleep(0.5)
        shutil.rmtree(base, ignore_errors=True)

    steps = [
        ["mungekey", "--create", "--keyfile", str(key), "--force"],
        ["munged", "--force", f"--socket={base}/munge.sock", f"--key-file={key}",
         f"--log-file={base}/munged.log", f"--pid-file={base}/munged.pid",
         f"--seed-file={base}/munged.seed"],
        ["slurmctld", "-f", str(conf)],
        ["slurmd", "-f", str(conf)],
    ]  # fmt: skip
    for argv in steps:
        done = run(*argv)
        if done.returncode != 0:
            stop()
            why = (done.stderr or done.stdout).strip().splitlines()
            pytest.skip(f"cannot start Slurm: {argv[0]}: {why[-1] if why else 'failed'}")
    deadline = time.time() + 60
    state = ""
    while time.time() < deadline:
        state = run("sinfo", "-h", "-o", "%t").stdout.strip()
        if state == "idle":
            break
        time.sleep(0.5)
    if state != "idle":
        slurmd_log = base / f"slurmd-{host}.log"
        log = slurmd_log.read_text().strip().splitlines()[-1:] if slurmd_log.exists() else []
        stop()
        pytest.skip(f"Slurm did not come up (node {state or 'unknown'}): {' '.join(log)}")
    try:
        yield {"SLURM_CONF": str(conf)}
    finally:
        stop()
