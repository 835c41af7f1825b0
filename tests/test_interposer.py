"""libcommtune under real mpirun/mpiexec: exact counts in the profile, Fortran, threads, MPI_T
write and read-back, user-defined variables, a program without MPI_Finalize, and tuning on a
profile field. Programs are in tests/programs; Open MPI runs 4 ranks, MPICH 2 (it busy-waits
when oversubscribed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from commtune import native
from commtune.knobs import Apply, Check, Knob, KnobType, Value, apply, enumerators, installed_knobs
from commtune.launch import launcher_for
from commtune.mpi import Installation, Vendor, find_installation, installation_of
from commtune.profile import Profile, not_applied
from commtune.store import Store
from commtune.study import Role, TrialRecord

from .conftest import HAVE, INSTALLATIONS, VENDORS, last_json, needs_mpich, needs_openmpi, run_cli

PROGRAMS = Path(__file__).parent / "programs"
RANKS = {Vendor.OPENMPI: 4, Vendor.MPICH: 2, Vendor.INTEL: 2}  # hydra's spin: one per core
FORTRAN = {
    Vendor.OPENMPI: ("mpifort.openmpi", "mpif90.openmpi"),
    Vendor.MPICH: ("mpif90.mpich", "mpifort.mpich"),
}


class Built:
    """Test programs compiled with each installation's own wrappers (C with commtune.h), on
    first use: ``built[vendor, name]`` (the family's usual installation) or
    ``built[installation, name]``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.programs: dict[tuple[str, str], Path] = {}

    def __getitem__(self, key: tuple[Vendor | Installation, str]) -> Path:
        which, name = key
        inst = find_installation(which) if isinstance(which, Vendor) else which
        if (inst.launcher, name) not in self.programs:
            self._build(inst)
        return self.programs[inst.launcher, name]

    def __contains__(self, key: tuple[Vendor | Installation, str]) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def _build(self, inst: Installation) -> None:
        tag = f"{inst.vendor.value}-{inst.version}"
        for name in ("counts", "threads", "nofinalize"):
            target = self.folder / f"{name}-{tag}"
            include = f"-I{native.interposer_dir()}"
            source = str(PROGRAMS / f"{name}.c")
            cmd = [inst.mpicc, "-O1", include, "-o", str(target), source, "-lpthread"]
            subprocess.run(cmd, check=True, env=inst.tool_env())
            self.programs[inst.launcher, name] = target
        if inst == find_installation(inst.vendor):  # Debian's Fortran wrappers
            wrappers = FORTRAN.get(inst.vendor, ())
            fortran = next((shutil.which(f) for f in wrappers if shutil.which(f)), None)
            if fortran:
                target = self.folder / f"fcounts-{tag}"
                subprocess.run(
                    [fortran, "-o", str(target), str(PROGRAMS / "counts.f90")], check=True
                )
                self.programs[inst.launcher, "fcounts"] = target


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return Built(tmp_path_factory.mktemp("programs"))


def _command(which: Vendor | Installation, program: Path, *args: str) -> list[str]:
    inst = find_installation(which) if isinstance(which, Vendor) else which
    return launcher_for(inst).command(RANKS[inst.vendor], [str(program), *args])


def _run_preloaded(
    installation: Installation, command: list[str], tmp_path: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run with libcommtune preloaded and COMMTUNE_* variables set by hand."""
    profile = tmp_path / "profile.json"
    variables = {"COMMTUNE_PROFILE": str(profile), **env}
    plan = launcher_for(installation).plan(
        command, variables, preload=str(native.build_interposer(installation))
    )
    done = subprocess.run(
        plan.argv, env=plan.env, capture_output=True, text=True, timeout=120, check=False
    )
    return done, profile


def _stats(op: dict, key: str) -> tuple[float, float, float]:
    return op[key]["sum"], op[key]["min"], op[key]["max"]


def test_generated_wrappers_are_current() -> None:
    script = native.interposer_dir() / "generate.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_generator_rejects_a_malformed_line() -> None:
    sys.path.insert(0, str(native.interposer_dir()))
    try:
        import generate  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    calls = generate.parse("send | int MPI_Send(const void *buf, int count) | ct_bytes(count, 0)")
    assert calls[0].name == "MPI_Send" and [p.name for p in calls[0].params] == ["buf", "count"]
    with pytest.raises(ValueError, match=r"mpi\.protos:1"):
        generate.parse("bogus | int MPI_Send(void) | 0")


@pytest.mark.parametrize("mpi", INSTALLATIONS)
def test_exact_counts_bytes_and_features(
    mpi: str, built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = installation_of(mpi)
    n = RANKS[inst.vendor]
    command = _command(inst, built[inst, "counts"], str(tmp_path / "io.dat"))
    code, out, err = run_cli(["profile", "--json", "--", *command], capsys)
    assert code == 0, err
    p = last_json(out)
    ops = p["operations"]
    assert p["ranks"] == n
    assert _stats(ops["MPI_Allreduce"], "calls") == (100 * n, 100, 100)
    assert _stats(ops["MPI_Allreduce"], "bytes") == (800 * n, 800, 800)
    assert ops["MPI_Allreduce"]["sizes"] == [{"min": 8, "max": 15, "calls": 100 * n}]
    assert _stats(ops["MPI_Send"], "calls") == (50 * n, 50, 50)
    assert ops["MPI_Send"]["bytes"]["sum"] == 50 * 1024 * n
    assert ops["MPI_Send"]["sizes"] == [{"min": 1024, "max": 2047, "calls": 50 * n}]
    assert ops["MPI_Recv"]["calls"]["sum"] == 50 * n
    assert ops["MPI_Bcast"]["bytes"]["sum"] == 10 * 16 * n
    assert ops["MPI_Isend"]["bytes"]["sum"] == 20 * 65536 * n
    assert ops["MPI_Waitall"]["calls"]["sum"] == 20 * n
    assert ops["MPI_Alltoallv"]["bytes"]["sum"] == 16 * 8 * n * n
    assert _stats(ops["MPI_Iallreduce"], "calls") == (7 * n, 7, 7)
    assert ops["MPI_Iallreduce"]["bytes"]["sum"] == 7 * 8 * n
    assert ops["MPI_Ialltoallv"]["bytes"]["sum"] == 3 * 16 * 8 * n * n
    assert ops["MPI_Wait"]["calls"]["sum"] == 10 * n
    assert _stats(ops["MPI_Neighbor_alltoall"], "calls") == (5 * n, 5, 5)
    assert ops["MPI_Neighbor_alltoall"]["bytes"]["sum"] == 5 * 4 * 4 * 2 * n  # 2 neighbours
    assert all(ops[o]["class"] == "coll" for o in ("MPI_Iallreduce", "MPI_Neighbor_alltoall"))
    assert ops["MPI_Put"]["bytes"]["sum"] == 8 * n
    assert ops["MPI_Win_fence"]["calls"]["sum"] == 3 * n
    assert ops["MPI_File_write_at_all"]["bytes"]["sum"] == 1024 * n
    assert ops["MPI_Init"]["calls"]["sum"] == n and "MPI_Barrier" not in ops
    assert ops["MPI_Send"]["class"] == "send" and ops["MPI_Allreduce"]["class"] == "coll"
    f = p["features"]
    assert f["comm_size"] == n
    assert f["p2p_bytes"] == 50 * 1024 + 20 * 65536
    assert f["coll_bytes"] == 800 + 160 + 16 * 8 * n + 7 * 8 + 3 * 16 * 8 * n + 5 * 16 * 2
    assert 0 < f["p2p_time_share"] < 1 and 0 < f["coll_time_share"] < 1
    assert f["p2p_time_share"] + f["coll_time_share"] <= 1 + 1e-9
    assert 0 < p["mpi_time"]["mean"] < p["wall_time"]["mean"]
    (step,) = p["user"]
    assert step["name"] == "step"
    assert (step["samples"], step["min"], step["max"], step["mean"], step["sum"]) == (
        10 * n,
        1,
        10,
        5.5,
        55 * n,
    )
    assert step["std"] == pytest.approx(2.8722813232690143)
    assert "operations by time" in err  # the summary table


@pytest.mark.parametrize("vendor", VENDORS)
def test_fortran_program_counts_once(
    vendor: Vendor, built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if (vendor, "fcounts") not in built:
        pytest.skip("no Fortran compiler wrapper")
    n = RANKS[vendor]
    code, out, err = run_cli(
        ["profile", "--json", "--", *_command(vendor, built[vendor, "fcounts"])], capsys
    )
    assert code == 0, err
    ops = last_json(out)["operations"]
    # Open MPI's mpi_allreduce_ calls PMPI_Allreduce, MPICH's calls MPI_Allreduce: both once.
    assert _stats(ops["MPI_Allreduce"], "calls") == (100 * n, 100, 100)
    assert ops["MPI_Allreduce"]["bytes"]["sum"] == 800 * n
    assert ops["MPI_Send"]["calls"]["sum"] == 50 * n
    assert ops["MPI_Send"]["bytes"]["sum"] == 50 * 1024 * n
    assert ops["MPI_Recv"]["calls"]["sum"] == 50 * n
    assert ops["MPI_Barrier"]["calls"]["sum"] == 5 * n
    assert ops["MPI_Init"]["calls"]["sum"] == n


@pytest.mark.parametrize("vendor", VENDORS)
def test_thread_multiple_program(
    vendor: Vendor, built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    installation = find_installation(vendor)
    command = launcher_for(installation).command(2, [str(built[vendor, "threads"])])
    code, out, err = run_cli(["profile", "--json", "--", *command], capsys)
    assert code == 0, err
    p = last_json(out)
    assert p["thread_level"] == "multiple"
    # 4 threads x 25 sends on rank 0, as many receives on rank 1.
    assert _stats(p["operations"]["MPI_Send"], "calls") == (100, 0, 100)
    assert _stats(p["operations"]["MPI_Recv"], "calls") == (100, 0, 100)
    assert p["operations"]["MPI_Init_thread"]["calls"]["sum"] == 2


WRITES = {
    # (variable, value, expected status, expected write): one the library takes, one it refuses.
    Vendor.OPENMPI: [
        ("coll_tuned_allreduce_algorithm", "3", "applied", "MPI_Init"),
        ("btl_vader_eager_limit", "8192", "differs", "refused"),
    ],
    Vendor.MPICH: [
        ("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "3", "applied", "before MPI_Init"),
        ("MPIR_CVAR_BCAST_INTRA_ALGORITHM", "no_such_algorithm", "differs", "refused"),
    ],
    # Intel MPI: an integer takes a write, text where it wants a number is refused
    Vendor.INTEL: [
        ("MPIR_CVAR_INTEL_SHM_EAGER_THRESHOLD", "8192", "applied", "before MPI_Init"),
        ("MPIR_CVAR_INTEL_SHM_EAGER_NUM", "many", "differs", "refused"),
    ],
}
EXPECTED_ACTUAL = {"coll_tuned_allreduce_algorithm": "recursive_doubling"}


def _sm(installation: Installation) -> bool:
    """Open MPI 5 calls its shared-memory transport sm (vader before)."""
    from commtune.knobs import load_catalog

    knob = load_catalog(installation.vendor.value).get("btl_sm_eager_limit")
    return knob is not None and knob.in_version(installation.version)


@pytest.mark.parametrize("mpi", INSTALLATIONS)
def test_cvar_write_read_back_and_refusal(mpi: str, built: Built, tmp_path: Path) -> None:
    installation = installation_of(mpi)
    writes = [
        (name.replace("btl_vader_", "btl_sm_") if _sm(installation) else name, *rest)
        for name, *rest in WRITES[installation.vendor]
    ]
    done, path = _run_preloaded(
        installation,
        _command(installation, built[installation, "counts"]),
        tmp_path,
        COMMTUNE_CVAR_WRITE=";".join(f"{name}={value}" for name, value, _, _ in writes),
        COMMTUNE_CVARS="btl_vader_eagr_limit=4096",  # misspelt: never silent
    )
    assert done.returncode == 0, done.stderr
    checks = {c.name: c for c in Profile.load(path).cvars}
    for name, value, status, write in writes:
        assert checks[name].intended == value
        assert checks[name].status == status, checks[name]
        assert write in (checks[name].write or ""), checks[name]
    applied = writes[0][0]
    assert checks[applied].actual == EXPECTED_ACTUAL.get(applied, writes[0][1])
    assert checks["btl_vader_eagr_limit"].status == "unknown"
    assert checks["btl_vader_eagr_limit"].write is None


def _contract_value(knob: Knob) -> Value:
    """A value every installation runs with: a numeric knob inside its domain away from its
    default (a limit, a size, a count), every other knob at its default (still set, so still
    read back; a categorical choice may abort MPI_Init, which probing handles in a study)."""
    if knob.type in (KnobType.INT, KnobType.LOG2):
        domain = knob.domain()
        return domain[len(domain) // 2]
    return knob.default


@pytest.mark.parametrize("mpi", INSTALLATIONS)
def test_every_catalog_knob_is_applied_and_read_back(
    mpi: str, built: Built, tmp_path: Path
) -> None:
    """Every catalog knob the installation has, set the way a study sets it (its variable,
    with what it requires), in one run on 2 ranks: each one MPI_T can read back is read back
    with the value set; none is unknown to the library."""
    inst = installation_of(mpi)
    knobs = [s.knob for s in installed_knobs(inst).values()
             if s.available and s.knob.apply is Apply.ENV]  # fmt: skip
    assert len(knobs) >= 8
    applied = apply(knobs, {k.name: _contract_value(k) for k in knobs}, inst.impl,
                    enumerators(inst))  # fmt: skip
    command = launcher_for(inst).command(2, [str(built[inst, "counts"])])
    cvars = ";".join(f"{name}={value}" for name, value in applied.check_values().items())
    done, path = _run_preloaded(inst, command, tmp_path, **applied.env, COMMTUNE_CVARS=cvars)
    assert done.returncode == 0, done.stderr[-2000:]
    profile = Profile.load(path)
    assert not_applied(profile, applied.checks) == {}
    read = {c.name: c for c in profile.cvars}
    assert set(applied.checks) <= set(read)
    assert all(read[name].status == "applied" for name in applied.checks)


BINDING = {  # the family's binding knob: (all CPUs, one core each)
    Vendor.OPENMPI: ("bind-to", "none", "core"),
    Vendor.MPICH: ("bind-to", "none", "core"),
    Vendor.INTEL: ("I_MPI_PIN_DOMAIN", "node", "core"),
}


@pytest.mark.parametrize("mpi", INSTALLATIONS)
def test_a_binding_knob_changes_the_cpu_sets_in_the_profile(
    mpi: str, built: Built, tmp_path: Path
) -> None:
    """Process binding set the way a study sets it (a launcher option put after the launcher,
    or Intel MPI's variable): each rank reports its CPU set, one core each when bound, every
    CPU when not, and the read-back agrees with what was asked."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: every binding is the same CPU set")
    inst = installation_of(mpi)
    name, unbound, bound = BINDING[inst.vendor]
    knob = installed_knobs(inst)[name].knob
    seen = {}
    for value in (unbound, bound):
        applied = apply([knob], {name: value}, inst.impl)
        command = launcher_for(inst).command(2, [str(built[inst, "counts"])])
        plan = launcher_for(inst).plan(
            command, {"COMMTUNE_PROFILE": str(tmp_path / f"{value}.json"), **applied.env},
            preload=str(native.build_interposer(inst)), options=applied.launch,
        )  # fmt: skip
        done = subprocess.run(plan.argv, env=plan.env, capture_output=True, text=True,
                              timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-1500:]
        profile = Profile.load(tmp_path / f"{value}.json")
        assert not_applied(profile, {}, None, applied.bindings) == {}
        seen[value] = profile.cpusets
    every = frozenset().union(*seen[unbound])
    assert len(every) >= 2 and seen[unbound] == [every, every]
    assert all(len(s) == 1 for s in seen[bound]) and seen[bound][0] != seen[bound][1]


RUNTIME_WRITES = {
    Vendor.OPENMPI: [
        ("coll_tuned_allreduce_algorithm=ring", 0),
        ("btl_vader_eager_limit=8192", -1),
    ],
    # MPICH 4.0 has no MPI_T enum for its algorithms: the number (3: recursive_doubling).
    Vendor.MPICH: [("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=3", 0), ("nope=1", -1)],
}


@pytest.mark.parametrize("vendor", VENDORS)
def test_cvar_write_at_run_time(vendor: Vendor, built: Built, tmp_path: Path) -> None:
    installation = find_installation(vendor)
    for setting, expected in RUNTIME_WRITES[vendor]:
        done, _ = _run_preloaded(
            installation, _command(vendor, built[vendor, "counts"]), tmp_path, COUNTS_WRITE=setting
        )
        assert done.returncode == 0, done.stderr
        assert f"write {setting} rc {expected}" in done.stdout
    # Without libcommtune the header's calls are harmless no-ops.
    plan = launcher_for(installation).plan(_command(vendor, built[vendor, "counts"]), {})
    plain = subprocess.run(
        plan.argv,
        env={**plan.env, "COUNTS_WRITE": RUNTIME_WRITES[vendor][0][0]},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert plain.returncode == 0 and "rc -1" in plain.stdout and "counts done" in plain.stdout


@pytest.mark.parametrize("vendor", VENDORS)
def test_program_without_finalize_neither_hangs_nor_crashes(
    vendor: Vendor, built: Built, tmp_path: Path
) -> None:
    installation = find_installation(vendor)
    command = launcher_for(installation).command(2, [str(built[vendor, "nofinalize"])])
    done, path = _run_preloaded(installation, command, tmp_path)  # 120 s timeout raises
    assert "leaving without MPI_Finalize" in done.stdout
    assert "Segmentation" not in done.stderr and "commtune:" not in done.stderr
    assert not path.exists()


@pytest.mark.parametrize("vendor", VENDORS)
def test_disabled_passes_through(vendor: Vendor, built: Built, tmp_path: Path) -> None:
    installation = find_installation(vendor)
    done, path = _run_preloaded(
        installation, _command(vendor, built[vendor, "counts"]), tmp_path, COMMTUNE_DISABLE="1"
    )
    assert done.returncode == 0, done.stderr
    assert "counts done" in done.stdout and not path.exists()


@pytest.mark.parametrize("vendor", VENDORS)
def test_debug_prints_every_setting_of_the_table(
    vendor: Vendor, built: Built, tmp_path: Path
) -> None:
    """COMMTUNE_DEBUG=1 prints every setting of ``commtune.libcommtune`` (the C table is
    generated from it), each with its value or default, and the run reads the ones given."""
    from commtune.libcommtune import Setting

    installation = find_installation(vendor)
    done, path = _run_preloaded(
        installation,
        _command(vendor, built[vendor, "counts"]),
        tmp_path,
        COMMTUNE_DEBUG="1",
        COMMTUNE_HDF5_PROPS="alignment=4096",
        COMMTUNE_POLICY_EVERY="nope",
    )
    assert done.returncode == 0, done.stderr
    printed = {
        line.split()[1]: line.split()[2]
        for line in done.stderr.splitlines()
        if line.startswith("commtune: COMMTUNE_") and "=" not in line.split()[1]
    }
    assert sorted(printed) == sorted(s.env for s in Setting)
    assert printed["COMMTUNE_HDF5_PROPS"] == "alignment=4096"
    assert printed["COMMTUNE_PVAR_INTERVAL"] == Setting.PVAR_INTERVAL.default
    assert "COMMTUNE_POLICY_EVERY=nope is not a count above 0" in done.stderr
    assert json.loads(path.read_text())["policy"]["every"] == int(Setting.POLICY_EVERY.default)


@needs_openmpi
@needs_mpich
def test_lib_is_built_once_per_installation(capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for vendor in [v for v in Vendor if HAVE[v] and shutil.which(find_installation(v).mpicc)]:
        if vendor.impl.simulated:  # no preloaded library reaches a simulated program
            code, _, err = run_cli(["lib", "--mpi", vendor.value], capsys)
            assert code == 2 and "no preloaded library reaches its program" in err
            continue
        code, out, _ = run_cli(["lib", "--mpi", vendor.value], capsys)
        assert code == 0
        again = run_cli(["lib", "--mpi", vendor.value], capsys)[1]
        assert out == again and out.strip().endswith("libcommtune.so")
        assert os.path.exists(out.strip())
        paths.append(out.strip())
    assert len(set(paths)) == len(paths)  # side by side
    code, out, _ = run_cli(["lib", "--header"], capsys)
    assert Path(out.strip()).read_text().count("commtune_pvar_register") >= 2


@pytest.mark.parametrize("vendor", VENDORS)
def test_cvars_listing(vendor: Vendor, capsys: pytest.CaptureFixture[str]) -> None:
    pattern = "allreduce" if vendor is Vendor.OPENMPI else "ALLREDUCE_INTRA_ALGORITHM"
    code, out, _ = run_cli(["cvars", "--mpi", vendor.value, "--filter", pattern, "--json"], capsys)
    assert code == 0
    rows = {r["name"]: r for r in last_json(out)["cvars"]}
    name = (
        "coll_tuned_allreduce_algorithm"
        if vendor is Vendor.OPENMPI
        else "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"
    )
    assert rows[name]["scope"] in ("all", "all_eq", "local")
    assert rows[name]["description"]
    if vendor is Vendor.OPENMPI:
        assert [3, "recursive_doubling"] in rows[name]["enum"]
    code, out, _ = run_cli(["cvars", "--mpi", vendor.value, "--pvars", "--json"], capsys)
    assert code == 0 and isinstance(last_json(out)["pvars"], list)


@pytest.mark.parametrize("vendor", VENDORS)
def test_tune_on_a_profile_field_stores_every_profile(
    vendor: Vendor, built: Built, storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    knob = (
        "coll_tuned_allreduce_algorithm=ignore,recursive_doubling"
        if vendor is Vendor.OPENMPI
        else "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=auto,recursive_doubling"
    )
    args = ["tune", "--strategy", "grid", "--knob", knob, "--trials", "3", "--repeats", "2"]
    args += ["--confirm", "0", "--metric", "profile:operations.MPI_Allreduce.time.max"]
    args += ["--study", "p", "--storage", storage, "--timeout", "120", "--json", "--"]
    code, out, err = run_cli([*args, *_command(vendor, built[vendor, "counts"])], capsys)
    assert code == 0, err
    result = last_json(out)
    assert result["trials"] == 3 and result["failed_trials"] == 0
    assert result["not_applied"] == {}
    profiles = Store(storage).profiles("p")
    # every run of the reference and of the searched trials has its profile (the number of
    # runs is raced; the control runs of the defaults store none)
    study = optuna.load_study(study_name="p", storage=Store(storage).optuna)
    measured = [
        t for t in study.get_trials() if TrialRecord.of(t).role in (Role.REFERENCE, Role.SEARCH)
    ]
    expected = [(t.number, r) for t in measured for r in range(len(TrialRecord.of(t).runs))]
    assert [(t, r) for t, r, _ in profiles] == expected
    # raced: 1 to 2 counted runs, and a run between two disagreeing controls made again
    assert all(1 <= len(TrialRecord.of(t).runs) <= 2 * 2 for t in measured) and len(measured) == 3
    assert len(TrialRecord.of(measured[0]).runs) == 2  # the reference: every run
    for _, _, data in profiles:
        assert data["operations"]["MPI_Allreduce"]["calls"]["sum"] == 100 * RANKS[vendor]
    # Each searched configuration was read back through MPI_T as intended; the reference
    # (library defaults) sets nothing to check.
    for trial, _, data in profiles:
        statuses = {c["name"]: c["status"] for c in data["cvars"]}
        assert (trial == 0) == (not statuses), statuses
        assert set(statuses.values()) <= {"applied"}, statuses
    # AITuning's relative variables: each search trial against the reference's profile.
    for t in [t for t in study.trials if TrialRecord.of(t).role is Role.SEARCH]:
        relative = TrialRecord.of(t).relative
        assert relative["operations.MPI_Allreduce.time"] > 0 and "wall_time" in relative
        assert relative["user.step"] == 1.0


def test_not_applied_names_the_knob_and_the_reason() -> None:
    from commtune.knobs import load_catalog

    knobs = [
        load_catalog("openmpi")[n]
        for n in ("coll_tuned_allreduce_algorithm", "btl_vader_eager_limit")
    ]
    config = {"coll_tuned_allreduce_algorithm": "ring", "btl_vader_eager_limit": 8192}
    intents = apply(knobs, config, Vendor.OPENMPI.impl).checks
    assert intents == {
        "coll_tuned_allreduce_algorithm": Check("coll_tuned_allreduce_algorithm", "ring"),
        "btl_vader_eager_limit": Check("btl_vader_eager_limit", "8192"),
        "coll_tuned_use_dynamic_rules": Check("coll_tuned_allreduce_algorithm", "1"),
    }
    cvars = [
        {"name": "coll_tuned_allreduce_algorithm", "intended": "ring", "actual": "ring",
         "status": "applied", "write": None},
        {"name": "btl_vader_eager_limit", "intended": "8192", "actual": "4096",
         "status": "differs", "write": None},
        {"name": "coll_tuned_use_dynamic_rules", "intended": "1", "actual": None,
         "status": "unknown", "write": None},
    ]  # fmt: skip
    profile = Profile.from_json(
        {"format": "commtune-profile", "ranks": 2, "features": {}, "operations": {}, "cvars": cvars}
    )
    assert not_applied(profile, intents) == {
        "btl_vader_eager_limit": "btl_vader_eager_limit: reads back '4096', not '8192'",
        "coll_tuned_allreduce_algorithm": "coll_tuned_use_dynamic_rules: "
        "the library has no such MPI_T variable",
    }
    mpich = load_catalog("mpich")["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"]
    names = {mpich.name: ("auto", "nb", "smp", "recursive_doubling"),
             "MPIR_CVAR_DEVICE_COLLECTIVES": ("all", "none", "percoll")}  # fmt: skip
    checks = apply([mpich], {mpich.name: "recursive_doubling"}, Vendor.MPICH.impl, names).checks
    assert checks == {mpich.name: Check(mpich.name, "3"),
                      "MPIR_CVAR_DEVICE_COLLECTIVES": Check(mpich.name, "1")}  # fmt: skip


def test_profile_metric_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from commtune.trial import Objective

    profile = Profile.from_json(
        {
            "format": "commtune-profile",
            "ranks": 2,
            "features": {},
            "operations": {},
            "cvars": [],
            "mpi_time": {"sum": 4, "min": 1, "max": 3, "mean": 2, "median": 2, "std": 1},
        }
    )
    assert Objective.parse("profile:mpi_time").extract(9.0, "", profile) == 2
    assert Objective.parse("profile:mpi_time.max").extract(9.0, "", profile) == 3
    assert Objective.parse("profile:nothing").extract(9.0, "", profile) is None
    code, _, err = run_cli(["tune", "--metric", "profile:", "--", "true"], capsys)
    assert code == 2 and "profile:FIELD" in err
    code, _, err = run_cli(
        ["tune", "--no-interposer", "--metric", "profile:mpi_time", "--", "true"], capsys
    )
    assert code == 2 and "needs the interposer" in err


@pytest.mark.parametrize("vendor", VENDORS)
def test_programs_built_into_a_cold_cache_run(
    vendor: Vendor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh machine has no cache: what commtune builds there must be runnable (the
    interposer's probe under the vendor's real launcher)."""
    monkeypatch.setenv("COMMTUNE_CACHE", str(tmp_path / "cache"))
    inst = find_installation(vendor)
    probe = native.build(inst, "tools/ct_probe.c")
    assert probe.is_relative_to(tmp_path / "cache") and os.access(probe, os.X_OK)
    done = subprocess.run(inst.command(2, [str(probe), "init"]), capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr


@needs_openmpi
def test_a_forced_pml_does_not_crash_the_profile(built: Built, tmp_path: Path) -> None:
    """Open MPI 4.1.4 crashed in MPI_Init when libcommtune opened the psm2 MTL's statistics
    with OMPI_MCA_pml=ob1 (the MTL registers them unused): they are left out."""
    inst = find_installation(Vendor.OPENMPI)
    command = launcher_for(inst).command(2, [str(built[inst, "counts"])])
    done, path = _run_preloaded(inst, command, tmp_path, OMPI_MCA_pml="ob1")
    assert done.returncode == 0, done.stderr[-1500:]
    assert Profile.load(path).ranks == 2
