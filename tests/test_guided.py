"""Profile-guided spaces: with no knob named, the reference's first run (profiled) chooses
the knobs whose mechanisms the program exercises, ordered by the MPI time they carry."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from commtune import native
from commtune.knobs import installed_knobs, load_catalog
from commtune.mpi import Vendor, find_installation, installation_of
from commtune.profile import Profile, guided

from .conftest import INSTALLATIONS, VENDORS, last_json, run_cli

METRIC = r"regex:time ([0-9.eE+-]+) s"
PROGRAMS = Path(__file__).parent / "programs"


def _op(cls: str, time: float, calls: int = 10, low: int = 8, high: int = 8) -> dict[str, Any]:
    stat = {"mean": time, "sum": 2 * time}
    return {"class": cls, "time": stat, "calls": {"mean": calls},
            "sizes": [{"min": low, "max": high, "calls": calls}]}  # fmt: skip


def _profile(ops: dict[str, Any], **more: Any) -> Profile:
    return Profile.from_json({"format": "commtune-profile", "ranks": 2, "features": {},
                              "operations": {"MPI_Init": _op("init", 5.0), **ops},
                              "cvars": [], **more})  # fmt: skip


def test_the_mechanisms_exercised_choose_the_knobs_by_their_share() -> None:
    knobs = [k for k in load_catalog("openmpi").values() if k.in_version("4.1.4")]
    profile = _profile({
        "MPI_Isend": _op("send", 0.2, low=8192, high=524287),
        "MPI_Waitall": _op("wait", 0.1),
        "MPI_Allreduce": _op("coll", 0.6, calls=900, high=1 << 20),
        "MPI_Bcast": _op("coll", 0.02),  # 2 %: below the threshold
        "MPI_Barrier": _op("coll", 0.08),
    })  # fmt: skip
    choices = guided(profile, knobs)
    names = [c.knob for c in choices]
    # allreduce 60 %, point-to-point 30 % (sends and their waits), barrier 8 %, the segment
    # size of the chosen component at half its collective's share; han's segment size (its
    # algorithm is not chosen), bcast (2 %) and every I/O hint are left out
    assert names[0] == "coll_tuned_allreduce_algorithm"
    assert set(names[1:]) == {"btl_vader_eager_limit", "btl_vader_single_copy_mechanism",
                              "coll_tuned_allreduce_algorithm_segmentsize",
                              "coll_tuned_barrier_algorithm"}  # fmt: skip
    assert [round(c.impact, 2) for c in choices][:2] == [0.6, 0.3]
    assert not any("coll_han" in n or "bcast" in n or "romio" in n for n in names)
    assert len(choices) <= 6 and len(set(names)) == len(names)
    assert choices[0].reason == "MPI_Allreduce: 60% of MPI time, 900 calls, 8 B-1 MiB"
    eager = next(c for c in choices if c.knob == "btl_vader_eager_limit")
    assert eager.reason == "point-to-point: 30% of MPI time, messages 8 KiB-512 KiB"
    across = [c.knob for c in guided(profile, knobs, across_nodes=True)]
    assert "btl_tcp_eager_limit" in across and "btl_vader_eager_limit" not in across


@pytest.mark.parametrize(("library", "version", "knob"), [
    ("openmpi", "4.1.4", "coll_tuned_alltoallv_algorithm"),
    ("openmpi", "5.0.8", "coll_tuned_alltoallv_algorithm"),
    ("mpich", "4.0.2", "MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM"),
    ("intel", "2021.16", "I_MPI_ADJUST_ALLTOALLV"),
])  # fmt: skip
def test_an_alltoallv_program_gets_the_alltoallv_algorithm(
    library: str, version: str, knob: str
) -> None:
    """The integer sort's profile (MPI_Alltoallv 58 % of MPI time, MPI_Allreduce 32 %, a
    barrier): its space holds the all-to-all-v algorithm first, on every library, and every
    other collective the profile records gets the knob that selects its algorithm."""
    knobs = [k for k in load_catalog(library).values() if k.in_version(version)]
    profile = _profile({
        "MPI_Alltoallv": _op("coll", 0.82, calls=10, high=1 << 20),
        "MPI_Allreduce": _op("coll", 0.46),
        "MPI_Barrier": _op("coll", 0.08),
        "MPI_Reduce_scatter_block": _op("coll", 0.1),
    })  # fmt: skip
    choices = guided(profile, knobs)
    assert choices[0].knob == knob and choices[0].reason.startswith("MPI_Alltoallv: ")
    ops = {k.collective for k in knobs if k.name in {c.knob for c in choices}}
    assert {"alltoallv", "allreduce", "barrier", "reduce_scatter_block"} <= ops


def test_a_one_sided_program_gets_its_library_s_rma_knobs() -> None:
    """Coarrays over MPI (ICAR through OpenCoarrays) spend their MPI time in puts, gets and
    their synchronization: the catalog's one-sided knobs join with that share (Open MPI's
    rdma component in 4.1 and 5, MPICH's ch4 RMA progress); Intel MPI has none, and its
    space holds no knob for it."""
    profile = _profile({
        "MPI_Put": _op("rma", 0.3, calls=4000, low=64, high=4096),
        "MPI_Win_flush": _op("rma", 0.4, calls=4000),
        "MPI_Win_lock_all": _op("rma", 0.1, calls=20),
        "MPI_Barrier": _op("coll", 0.2, calls=20),
    })  # fmt: skip
    want = {"openmpi": {"osc_rdma_locking_mode", "osc_rdma_acc_single_intrinsic",
                        "osc_rdma_buffer_size"},
            "mpich": {"MPIR_CVAR_CH4_RMA_ENABLE_DYNAMIC_AM_PROGRESS",
                      "MPIR_CVAR_CH4_RMA_AM_PROGRESS_INTERVAL",
                      "MPIR_CVAR_CH4_RMA_MEM_EFFICIENT"},
            "intel": set()}  # fmt: skip
    for library, rma in want.items():
        for version in ("4.1.4", "5.0.2") if library == "openmpi" else ("4.0.2",):
            knobs = [k for k in load_catalog(library).values() if k.in_version(version)]
            choices = guided(profile, knobs)
            chosen = {c.knob: c for c in choices if "rma" in load_catalog(library)[c.knob].presets}
            assert set(chosen) == rma, (library, version)
            for c in chosen.values():
                assert c.reason == "one-sided: 80% of MPI time, 8020 calls"
                assert c.impact == pytest.approx(0.8)


def test_every_collective_the_profile_records_has_an_algorithm_knob() -> None:
    """Every collective libcommtune wraps has a knob selecting its algorithm in each
    library's catalog (the v-variants, reduce_scatter(_block), gather(v), scatter(v),
    barrier, (ex)scan), where the library lets one choose it."""
    protos = Path(native.NATIVE_DIR) / "interposer" / "mpi.protos"
    wrapped = {line.split("MPI_", 1)[1].split("(")[0].lower()
               for line in protos.read_text().splitlines() if line.startswith("coll ")}  # fmt: skip
    # what a library has no algorithm variable for: Open MPI's libnbc chooses among
    # algorithms of six non-blocking collectives only, Intel MPI's presets are for the
    # blocking ones, and neither has one for neighbourhood collectives
    neighbor = {f"neighbor_{op}" for op in ("allgather", "allgatherv", "alltoall", "alltoallv")}
    nonblocking = {"ibarrier", "ibcast", "ireduce", "iallreduce", "ireduce_scatter_block",
                   "igather", "iscatter", "iallgather", "iallgatherv", "ialltoall",
                   "ialltoallv"}  # fmt: skip
    assert neighbor | nonblocking <= wrapped
    libnbc = {"ibcast", "ireduce", "iallreduce", "iallgather"}
    none = {"openmpi": {"alltoallw", "gatherv", "scatterv", *neighbor, *(nonblocking - libnbc)},
            "mpich": set(), "intel": {"alltoallw", *neighbor, *nonblocking}}  # fmt: skip
    for library, missing in none.items():
        have = {k.collective for k in load_catalog(library).values() if k.collective}
        assert wrapped - missing <= have, (library, wrapped - missing - have)


def test_io_hdf5_and_oversubscription() -> None:
    knobs = [k for k in load_catalog("openmpi").values() if k.in_version("4.1.4")]
    io = _profile({"MPI_File_write_all": _op("io", 0.9), "MPI_Allreduce": _op("coll", 0.1)})
    names = [c.knob for c in guided(io, knobs)]
    assert {"io", "fcoll"} <= set(names) and not any(n.startswith("hdf5_") for n in names)
    hdf5 = _profile({"MPI_File_write_all": _op("io", 0.9)},
                    hints=[{"kind": "hdf5", "name": "alignment", "intended": "1",
                            "actual": "1", "status": "applied"}])  # fmt: skip
    names = [c.knob for c in guided(hdf5, knobs)]
    assert any(n.startswith("hdf5_") for n in names)
    crowded = _profile({"MPI_Waitall": _op("wait", 0.5), "MPI_Isend": _op("send", 0.5)},
                       cpus=2, node_ranks=4)  # fmt: skip
    choices = guided(crowded, knobs)
    assert {"mpi_yield_when_idle", "bind-to"} <= {c.knob for c in choices}
    assert any("4 ranks on 2 cores" in c.reason for c in choices)


@pytest.mark.openmpi
def test_no_knob_named_the_first_reference_run_chooses_the_space(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ct_solver (small halos, allreduces, a broadcast every 8th iteration) tuned with no
    knob: the space is what its profile calls for, the profiled run is the reference's
    first (no run more: every launch is counted), and a second tune resumes the same
    study, its space kept without a new look."""
    inst = installation_of("openmpi")
    solver = str(native.build(inst, "demo/ct_solver.c"))
    count = tmp_path / "launches"
    program = ["sh", "-c", f'echo x >> {count}; exec "$0" "$@"', solver, "3000"]
    argv = ["tune", "--mpi", "openmpi", "--storage", f"sqlite:///{tmp_path}/s.db",
            "--trials", "2", "--repeats", "2", "--confirm", "0",
            "--metric", METRIC, "--json", "--", *inst.command(2, program)]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    data = last_json(out)
    chosen = [c["knob"] for c in data["space_from_profile"]]
    available = {k.name for k, s in ((s.knob, s) for s in installed_knobs(inst).values())
                 if s.available}  # fmt: skip
    assert set(chosen) <= available
    assert chosen and not any(k.startswith(("io", "fcoll", "romio", "cb_")) for k in chosen)
    for c in data["space_from_profile"]:  # each for a mechanism ct_solver exercises
        assert c["reason"].startswith(("point-to-point", "MPI_Allreduce", "MPI_Bcast"))
    impacts = [c["impact"] for c in data["space_from_profile"]]
    assert impacts == sorted(impacts, reverse=True)
    launches = len(count.read_text().split()) // 2  # two ranks each
    assert launches == data["runs"]  # the look was the reference's first run, not one more
    trials = argv.index("--trials") + 1
    code, out, err = run_cli([*argv[:trials], "3", *argv[trials + 1 :]], capsys)  # one more
    assert code == 0, err
    again = last_json(out)
    assert "space_from_profile" not in again and again["study"] == data["study"]
    assert len(count.read_text().split()) // 2 == again["runs"] > data["runs"]


@pytest.mark.parametrize("mpi", INSTALLATIONS)
def test_an_alltoallv_program_tuned_with_no_knob_gets_its_algorithm(
    mpi: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The integer sort's exchange (``tests/programs/sort.c``: MPI_Alltoallv with uneven
    counts, most of its MPI time), tuned with no knob named on every installation: the
    profile's space holds the library's all-to-all-v algorithm, for the reason of its
    share."""
    inst = installation_of(mpi)
    program = tmp_path / "sort"
    subprocess.run([inst.mpicc, "-O2", "-o", str(program), str(PROGRAMS / "sort.c")],
                   check=True, env=inst.tool_env())  # fmt: skip
    argv = ["tune", "--mpi", mpi, "--storage", f"sqlite:///{tmp_path}/s.db", "--trials", "1",
            "--repeats", "1", "--confirm", "0", "--metric", METRIC, "--json", "--",
            *inst.command(2, [str(program), "20", str(1 << 17)])]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    chosen = {c["knob"]: c["reason"] for c in last_json(out)["space_from_profile"]}
    knob = inst.impl.algorithm_knob("alltoallv")
    assert knob in chosen, chosen
    assert chosen[knob].startswith("MPI_Alltoallv: ")


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_one_sided_halo_exchange_tuned_with_no_knob_gets_rma_knobs(
    vendor: Vendor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A halo exchange in puts and flushes inside one lock_all epoch
    (``tests/programs/halo_rma.c``, as OpenCoarrays makes coarray halos), tuned with no knob
    named: its profile's space holds the library's one-sided knobs, for their share."""
    inst = find_installation(vendor)
    program = tmp_path / "halo_rma"
    subprocess.run([inst.mpicc, "-O2", "-o", str(program), str(PROGRAMS / "halo_rma.c")],
                   check=True, env=inst.tool_env())  # fmt: skip
    argv = ["tune", "--mpi", vendor.value, "--storage", f"sqlite:///{tmp_path}/s.db",
            "--trials", "1", "--repeats", "1", "--confirm", "0", "--metric", METRIC, "--json",
            "--", *inst.command(2, [str(program), "100", "4096"])]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    chosen = {c["knob"]: c["reason"] for c in last_json(out)["space_from_profile"]}
    rma = {k for k, knob in load_catalog(vendor.value).items() if "rma" in knob.presets}
    assert rma & set(chosen), chosen
    assert all(chosen[k].startswith("one-sided: ") for k in rma & set(chosen))
