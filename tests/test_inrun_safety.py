"""In-run racing on programs shaped like production codes (issue 93): it never changes a
result, never hangs, races every communicator and language, refuses what it cannot race in
one line, and discards a race whose ranks disagree.

Each program checks its own results (a wrong value: ``MPI_Abort``) and prints a checksum; the
tests compare the raced run's output with a plain run's and assert what libctrace recorded.
Open MPI runs 4 ranks (communicators of 4 and of 2: sub-communicators), MPICH 2 (it
busy-waits when oversubscribed)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from commtune.launch import launcher_for
from commtune.mpi import Installation, Vendor, installation_of
from commtune.service import RacedRun, race

from .conftest import PROGRAMS, VENDORS, needs_openmpi, run_cli

RANKS = {Vendor.OPENMPI: 4, Vendor.MPICH: 2}
ITERATIONS = 300  # race_comms: 300 communicators made and freed, 3 broadcasts on each
CHECKSUM = re.compile(r"checksum\s+(\S+)")
# Debian's Fortran and C++ wrappers of each family
WRAPPERS = {
    (Vendor.OPENMPI, "f90"): ("mpifort.openmpi", "mpif90.openmpi"),
    (Vendor.MPICH, "f90"): ("mpif90.mpich", "mpifort.mpich"),
    (Vendor.OPENMPI, "cpp"): ("mpicxx.openmpi", "mpic++.openmpi"),
    (Vendor.MPICH, "cpp"): ("mpicxx.mpich", "mpic++.mpich"),
}


def _built(inst: Installation, name: str, folder: Path) -> Path:
    """``tests/programs/<name>`` built with the installation's own wrapper (C: its mpicc)."""
    source = PROGRAMS / name
    suffix = source.suffix.lstrip(".")
    if suffix == "c":
        compiler: str | None = inst.mpicc
    else:
        found = (shutil.which(w) for w in WRAPPERS.get((inst.vendor, suffix), ()))
        compiler = next((w for w in found if w), None)
    if compiler is None:
        pytest.fail(f"no {suffix} wrapper of {inst.describe()} (make test installs gfortran)")
    target = folder / f"{source.stem}-{inst.vendor.value}"
    subprocess.run([compiler, "-O1", "-o", str(target), str(source), "-lpthread"], check=True,
                   env=inst.tool_env())  # fmt: skip
    return target


def _line(inst: Installation, program: Path, *args: str) -> list[str]:
    return launcher_for(inst).command(RANKS[inst.vendor], [str(program), *args])


def _plain(line: list[str]) -> str:
    done = subprocess.run(line, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def _raced(inst: Installation, line: list[str], op: str, **extra: str) -> RacedRun:
    """``op``'s every algorithm raced in one run of ``line``, in units of 2 calls."""
    return race(inst, line, op, [], 7, 120, extra=extra or None, run=2)


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.timeout(400)
def test_communicators_made_and_freed_keep_their_results_under_every_race(
    vendor: Vendor, tmp_path: Path
) -> None:
    """race_comms: hundreds of communicators made and freed, each of another rank order than
    the one whose handle it may reuse, with rooted broadcasts and reduces on them; a pair's
    sub-communicator; in-place allgathers whose ignored send arguments differ between ranks
    (MPI_DATATYPE_NULL on rank 0). Raced with every algorithm the library lists, each op: the
    same output as a plain run (the program checks every value), every communicator's calls
    raced (no cap), sub-communicators raced as strata of their own, and Open MPI's two-process
    allgather never run on 4 ranks (its stated restriction)."""
    inst = installation_of(vendor.value)
    line = _line(inst, _built(inst, "race_comms.c", tmp_path), str(ITERATIONS))
    plain = _plain(line)
    assert "race_comms ok" in plain
    world = RANKS[vendor]
    races = {}
    for op in ("bcast", "reduce", "allreduce", "allgather", "alltoall"):
        done = _raced(inst, line, op)
        races[op] = done.race
        assert CHECKSUM.findall(done.stdout) == CHECKSUM.findall(plain) != [], op
        assert "race_comms ok" in done.stdout, op
        r = done.race
        if op == "bcast":  # 3 on each of the communicators made and freed: every one raced
            assert r.raced_calls == 3 * ITERATIONS
        if op in ("allreduce", "allgather"):  # on the world and each pair, each iteration
            assert r.raced_calls == (1 + world // 2) * ITERATIONS and len(r.time) > 0
            assert r.comm is not None and len(set(r.comm.tolist())) == (3 if world > 2 else 2)
            assert sorted(set(r.slot_ranks)) == sorted({2, world})
            assert len(r.blocks()) > 0
    if vendor is Vendor.OPENMPI:
        gathered = races["allgather"]
        # two_proc refused on the world's 4 ranks (never run), raced on the pairs' 2
        assert "two_proc (256 B)" in gathered.refused_names()
        pair = [s for s, n in enumerate(gathered.slot_ranks) if n == 2]
        two = gathered.names.index("two_proc")
        assert all(s not in pair for s, c in gathered.fell_back if c == two)


@needs_openmpi
@pytest.mark.timeout(200)
def test_an_algorithm_the_library_refuses_is_caught_where_no_restriction_is_stated(
    tmp_path: Path,
) -> None:
    """Without the stated restriction (COMMTUNE_RACE_RULES empty) Open MPI's two_proc
    allgather on 4 ranks returns an error: its first call at a size on a communicator is made
    with errors returned, then again as the library's own decision, and its later calls
    there run the reference, marked. The program's results are unchanged."""
    inst = installation_of("openmpi")
    line = _line(inst, _built(inst, "race_comms.c", tmp_path), "60")
    done = race(inst, line, "allgather", ["two_proc", "ring"], 3, 120,
                extra={"COMMTUNE_RACE_RULES": ""}, run=2)  # fmt: skip
    assert "race_comms ok" in done.stdout
    assert "two_proc (256 B)" in done.race.refused_names()
    assert not any(n.startswith("ring") for n in done.race.refused_names())


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("program", ["race_loop.f90", "race_loop_f08.f90", "race_cxx.cpp"])
@pytest.mark.timeout(300)
def test_fortran_and_cxx_programs_are_raced(vendor: Vendor, program: str, tmp_path: Path) -> None:
    """A Fortran program through `use mpi` and through `use mpi_f08` (gfortran), and a C++
    one: their allreduces raced as a C program's (blocks of evidence), their broadcasts on
    communicators made and freed raced too, the results unchanged."""
    inst = installation_of(vendor.value)
    line = _line(inst, _built(inst, program, tmp_path), "200")
    plain = _plain(line)
    assert CHECKSUM.findall(plain) != []
    for op, calls in (("allreduce", 200), ("bcast", 50)):
        done = _raced(inst, line, op)
        assert CHECKSUM.findall(done.stdout) == CHECKSUM.findall(plain), op
        assert done.race.raced_calls == calls, op  # once each: never raced twice over
    assert len(_raced(inst, line, "allreduce").race.blocks()) > 0


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.timeout(200)
def test_a_thread_multiple_program_is_refused_in_one_line(
    vendor: Vendor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A program that runs MPI_THREAD_MULTIPLE is not raced: libctrace leaves it untouched and
    ``commtune race`` says why in one line, exit 2."""
    inst = installation_of(vendor.value)
    line = launcher_for(inst).command(2, [str(_built(inst, "threads.c", tmp_path))])
    code, _, err = run_cli(["race", "--op", "allreduce", "--", *line], capsys)
    assert code == 2 and "MPI_THREAD_MULTIPLE" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.timeout(200)
def test_ranks_that_disagree_on_the_assignment_discard_the_race(
    vendor: Vendor, tmp_path: Path
) -> None:
    """Each rank hashes its assignments per communicator and rank 0 compares them at
    MPI_Finalize: one rank's recorded assignments altered (COMMTUNE_RACE_SKEW, what it runs
    left alone) and the race is discarded, said, never evidence."""
    from commtune.service import RaceFailed

    inst = installation_of(vendor.value)
    line = _line(inst, _built(inst, "race_comms.c", tmp_path), "60")
    with pytest.raises(RaceFailed, match=r"different assignments.*discarded"):
        _raced(inst, line, "allreduce", COMMTUNE_RACE_SKEW="1")
    assert len(_raced(inst, line, "allreduce").race.time) > 0  # the same run unaltered
