"""An in-run race's answer by message size (issue 95, item 3): the selection file commtune
writes from per-size choices is read by the library, which then runs the chosen algorithm at
each size, checked by which algorithm ran (``programs/witness.c``: the library's own calls
of a user operation, or, on MPICH 4, whose reduce-scatter algorithms take built-in
operations only, the messages it hands UCX: ``programs/ucx_sends.c``)."""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from commtune.launch import launcher_for
from commtune.mpi import Installation, installation_of
from commtune.service._inrun_file import BySize, by_size_file
from commtune.tune import SizeChoice

from .conftest import INSTALLATIONS, PROGRAMS

SMALL, LARGE = 16, 100_000  # ints: 64 B and 400,000 B a rank
Signature = tuple[tuple[int, ...], ...]


def _mode(inst: Installation) -> tuple[bool, tuple[str, str]]:
    """Whether the witness watches UCX's sends (MPI_SUM), and two algorithms it tells apart."""
    if inst.impl.vendor.value == "mpich" and inst.version.startswith("4."):
        return True, ("reduce_scatter_allgather", "recursive_doubling")
    return False, ("ring", "recursive_doubling")


def _build(inst: Installation, tmp: Path, ucx: bool) -> tuple[Path, dict[str, str]]:
    program = tmp / "witness"
    subprocess.run([inst.mpicc, "-O2", "-o", str(program), str(PROGRAMS / "witness.c")],
                   check=True)  # fmt: skip
    if not ucx:
        return program, {}
    shim = tmp / "ucx_sends.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(shim), str(PROGRAMS / "ucx_sends.c"),
                    "-ldl"], check=True)  # fmt: skip
    return program, {"LD_PRELOAD": str(shim)}


def _ran(inst: Installation, program: Path, ucx: bool, env: dict[str, str]) -> dict[int, Signature]:
    """Each count's signature over the ranks: (calls, total, first length) of the user
    operation per rank, or the lengths of the UCX sends each rank made in the call."""
    args = [str(program), *(["sum"] if ucx else []), str(SMALL), str(LARGE)]
    line = launcher_for(inst).command(2, args)
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("OMPI_MCA_coll", "MPIR_CVAR_"))}  # fmt: skip
    done = subprocess.run(line, env={**clean, **env}, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return _signatures(done.stdout, done.stderr, ucx)


def _signatures(stdout: str, stderr: str, ucx: bool) -> dict[int, Signature]:
    per: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    if not ucx:
        for row in stdout.splitlines():
            if row.startswith("witness "):
                _, _, count, *calls = row.split()
                per[int(count)].append(tuple(map(int, calls)))
    else:
        at: dict[str, int] = {}
        sends: dict[tuple[str, int], list[int]] = defaultdict(list)
        for row in stderr.splitlines():
            word, *rest = row.split()[:3] or [""]
            if word == "begin":
                at[rest[0]] = int(rest[1])
                sends[(rest[0], int(rest[1]))] = []
            elif word == "send" and rest[0] in at:
                sends[(rest[0], at[rest[0]])].append(int(rest[1]))
        for (_, count), lengths in sends.items():
            per[count].append(tuple(sorted(lengths)))
    return {count: tuple(sorted(v)) for count, v in per.items()}


def _file(inst: Installation, small: str, large: str) -> BySize:
    """The file of a race that chose ``small`` at 64 B and ``large`` at 400,000 B."""
    knob = inst.impl.algorithm_knob("allreduce")
    reference = "ignore" if inst.impl.vendor.value == "openmpi" else "auto"

    def at(size: int, chosen: str) -> SizeChoice:
        return SizeChoice(size, 2, 0.5, chosen, 1.1, (1.05, 1.2), chosen, 1.1, 20)

    file, why = by_size_file(inst, "allreduce", knob, reference,
                             [at(SMALL * 4, small), at(LARGE * 4, large)], "test")  # fmt: skip
    assert why is None and file is not None
    return file


@pytest.mark.parametrize("mpi", INSTALLATIONS[:4])
@pytest.mark.timeout(300)
def test_the_file_written_by_size_makes_the_library_run_each_size_s_choice(
    mpi: str, tmp_path: Path
) -> None:
    """Forced one at a time (the race's way), the two algorithms leave different marks at
    both sizes; under the file that chose one at 64 B and the other at 400,000 B, each size
    shows its choice's mark, and the file the other way round the other's: so the library
    read the file, at each size, as commtune wrote it."""
    inst = installation_of(mpi)
    ucx, (one, other) = _mode(inst)
    program, preload = _build(inst, tmp_path, ucx)
    knob = inst.impl.env_name(inst.impl.algorithm_knob("allreduce"))
    forced = {name: _ran(inst, program, ucx, {**preload, **inst.impl.algorithm_env,
                                              **inst.impl.race_env, knob: name})
              for name in (one, other)}  # fmt: skip
    for count in (SMALL, LARGE):  # the witness tells the two apart at both sizes
        assert forced[one][count] != forced[other][count], (count, forced)
    for small, large in ((one, other), (other, one)):
        file = _file(inst, small, large)
        assert file.path().read_text() == file.text  # the file exactly as exported
        # under the conditions the race measured (MPICH's device collectives off: MPICH 5's
        # shared-memory ones serve MPI_SUM before the file is read, which no user op shows)
        assert inst.impl.race_env.items() <= file.env().items()
        got = _ran(inst, program, ucx, {**preload, **file.env()})
        assert got[SMALL] == forced[small][SMALL] and got[LARGE] == forced[large][LARGE], (
            small, large, got, forced)  # fmt: skip


def test_choices_by_size_are_written_only_where_they_differ() -> None:
    """One algorithm at every size, or none passing anywhere, is no answer by size; an
    algorithm at some sizes and the library's own at others is (the file keeps the library's
    decision where nothing passed); sizes of allgather are all ranks' blocks, as sampled."""
    from commtune.tune import by_comm_size, chooses_by_size

    def at(size: int, chosen: str | None, ranks: int = 4) -> SizeChoice:
        return SizeChoice(size, ranks, 0.5, chosen, None, None, "ring", 1.0, 10)

    same = by_comm_size([at(8, "ring"), at(1 << 20, "ring")], "allreduce", "ignore")
    assert not chooses_by_size(same, "ignore")
    none = by_comm_size([at(8, None), at(1 << 20, None)], "allreduce", "ignore")
    assert not chooses_by_size(none, "ignore")
    some = by_comm_size([at(8, "ring"), at(1 << 20, None)], "allreduce", "ignore")
    assert chooses_by_size(some, "ignore")
    assert [(s.low, s.high, s.method) for s in some[4]] == [(0.0, 1 << 20, "ring"),
                                                           (1 << 20, None, "ignore")]  # fmt: skip
    gathered = by_comm_size([at(8, "ring"), at(1024, "bruck")], "allgather", "ignore")
    assert gathered[4][1].low == 4 * 1024  # one rank's block times the ranks
    by_comm = by_comm_size([at(8, "ring", 2), at(8, "bruck", 4)], "allreduce", "ignore")
    assert chooses_by_size(by_comm, "ignore") and sorted(by_comm) == [2, 4]


@pytest.mark.parametrize("mpi", INSTALLATIONS[:2])
@pytest.mark.timeout(300)
def test_a_study_answering_by_size_hands_back_its_file_to_run_and_export(
    mpi: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A verdict handing back a selection file: ``export --format selection`` prints the
    file, ``--format env`` names the variables that load it, and ``run --study`` runs the
    program with it, the file written again from the study where the cache lost it (the
    library then runs each size's choice: the witness says so); a study handing back knobs
    has no file to export, said in one line."""
    from commtune.store import Store
    from commtune.study import Acceptance, Gate, InRunFinding, Source, StudySpec, save_result_study

    from .conftest import commtune_subprocess, run_cli

    monkeypatch.setenv("COMMTUNE_CACHE", str(tmp_path / "cache"))
    inst = installation_of(mpi)
    ucx, (one, other) = _mode(inst)
    program, preload = _build(inst, tmp_path, ucx)
    file = _file(inst, one, other)
    knob = inst.impl.algorithm_knob("allreduce")
    found = InRunFinding(op="allreduce", knob=knob, reference_name="auto", limit=0.01,
                         min_gain=0.02, tolerance=0.02, risk=0.05, raced_runs=1,
                         selection=file.to_json())  # fmt: skip
    storage = f"sqlite:///{tmp_path / 's.db'}"
    spec = StudySpec(["commtune", "tune"], inst.impl.vendor.value, [], "wall", 1)
    for name, acc in (
        ("f", Acceptance(Source.SEARCH, {}, True, "by size", env=file.env(), gate=Gate.INRUN,
                         finding=found)),
        ("k", Acceptance(Source.SEARCH, {knob: one}, True, "one")),
    ):  # fmt: skip
        save_result_study(Store(storage).optuna, name, spec, acc)
    code, text, _ = run_cli(["export", "f", "--storage", storage, "--format", "selection"], capsys)
    assert code == 0 and text == file.text
    code, env_text, _ = run_cli(["export", "f", "--storage", storage, "--format", "env"], capsys)
    assert code == 0 and str(file.path()) in env_text
    code, _, err = run_cli(["export", "k", "--storage", storage, "--format", "selection"], capsys)
    assert code == 2 and err.count("\n") == 1 and "no selection file" in err
    file.path().unlink()  # the cache emptied: the study still holds the file
    args = [str(program), *(["sum"] if ucx else []), str(SMALL), str(LARGE)]
    line = launcher_for(inst).command(2, args)
    knob_env = inst.impl.env_name(knob)
    forced = {n: _ran(inst, program, ucx, {**preload, **inst.impl.algorithm_env,
                                          **inst.impl.race_env, knob_env: n})
              for n in (one, other)}  # fmt: skip
    env = {**os.environ, **preload, "COMMTUNE_CACHE": str(tmp_path / "cache")}
    proc = commtune_subprocess(["run", "--study", "f", "--storage", storage, "--", *line],
                               env=env)  # fmt: skip
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    assert file.path().read_text() == file.text
    got = _signatures(out, err, ucx)
    assert got[SMALL] == forced[one][SMALL] and got[LARGE] == forced[other][LARGE]
    # onto a site-wide file (sample's writer) that decides allreduce the other way and bcast:
    # allreduce as the study answered, bcast as the site's file had it
    site = tmp_path / "site"
    site.write_text(_site(inst, other))
    merged = tmp_path / "merged"
    code, _, err = run_cli(["export", "f", "--storage", storage, "--format", "selection",
                            "--onto", str(site), "-o", str(merged)], capsys)  # fmt: skip
    assert code == 0, err
    assert _decides(inst, merged.read_text(), "allreduce") == _decides(inst, file.text,
                                                                      "allreduce")  # fmt: skip
    assert _decides(inst, merged.read_text(), "bcast") == _decides(inst, site.read_text(),
                                                                  "bcast")  # fmt: skip
    assert _decides(inst, site.read_text(), "allreduce") != _decides(inst, file.text,
                                                                    "allreduce")  # fmt: skip
    got = _ran(inst, program, ucx, {**preload, **file.env(),
                                    **inst.impl.selection_env(str(merged))})  # fmt: skip
    assert got[SMALL] == forced[one][SMALL] and got[LARGE] == forced[other][LARGE]
    code, _, err = run_cli(["export", "f", "--storage", storage, "--format", "selection",
                            "--onto", str(tmp_path / "none")], capsys)  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "--onto" in err


def _site(inst: Installation, allreduce: str) -> str:
    """A site-wide file as ``commtune sample`` writes one: ``allreduce`` at every size and
    bcast's binomial tree."""
    from commtune.knobs import enumerators
    from commtune.mpi import Segment
    from commtune.sample import builtin_selection

    names = enumerators(inst)
    ops = {"allreduce": allreduce, "bcast": "binomial"}
    numbers = {op: {n: i for i, n in enumerate(names[inst.impl.algorithm_knob(op)])}
               for op in ops}  # fmt: skip
    segs = {op: [Segment(0.0, None, method)] for op, method in ops.items()}
    return inst.impl.write_selection(segs, numbers, 2, "site", builtin_selection(inst)).text


def _decides(inst: Installation, text: str, op: str) -> object:
    """What a selection file says of ``op``: its rules (Open MPI), its intra subtree (MPICH)."""
    import json

    from commtune.mpi._ompi_rules import COLL_IDS, parse_rules

    if inst.impl.vendor.value == "openmpi":
        return parse_rules(text).get(COLL_IDS[op])
    return json.loads(text)[f"collective={op}"]["comm_type=intra"]
