"""Shared contract suites: every launcher, every applier, every vendor and every storage
version passes the same cases (strategies have theirs in test_replay.py, models in
test_predict.py). A new launcher, applier, vendor or schema joins by its table entry."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import optuna
import pytest
import sqlalchemy as sa

from commtune.errors import UsageError
from commtune.knobs import (
    APPLIERS,
    Applied,
    Apply,
    Check,
    Knob,
    KnobType,
    apply,
    load_catalog,
    selection_file_env,
)
from commtune.knobs._catalog import _knob_from_json
from commtune.knobs._discovery import parse_cvar_lines
from commtune.launch import LocalLauncher, launcher_for
from commtune.mpi import (
    ENV_PREFIXES,
    LAUNCHER_NAMES,
    SHM_PATTERNS,
    Installation,
    Lack,
    MPIVendor,
    Profiled,
    RulesError,
    Segment,
    Selection,
    Vendor,
)
from commtune.store import SCHEMA_VERSION, Store
from commtune.study import (
    FORMAT,
    Acceptance,
    Notes,
    Source,
    StudySpec,
    acceptance_of,
    save_result_study,
    upgrade,
)
from commtune.trial import Objective

from .conftest import INSTALLATIONS, SIMULATOR, last_json, run_cli

FAKE = {
    Vendor.OPENMPI: Installation(Vendor.OPENMPI, "4.1.4", "btl:vader", "/x/mpirun", "/x/mpicc"),
    Vendor.MPICH: Installation(Vendor.MPICH, "4.0.2", "ch4:ucx", "/x/mpiexec", "/x/mpicc"),
    Vendor.INTEL: Installation(Vendor.INTEL, "2021.18.1", "ch4:ofi", "/x/mpirun", "/x/mpicc"),
    Vendor.SMPI: Installation(Vendor.SMPI, "3.32", "smpi", "/x/smpirun", "/x/smpicc"),
}
LAUNCHERS: dict[str, Callable[[Installation], LocalLauncher]] = {"local": LocalLauncher}
# the MPI libraries of real machines; a simulator (SMPI) takes the same contracts, where it
# differs as its ``lacks`` and ``configured_by_args`` say
REAL = [v for v in Vendor if not v.impl.simulated]


# -- launchers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("vendor", REAL, ids=lambda v: v.value)
@pytest.mark.parametrize("kind", sorted(LAUNCHERS))
def test_launcher_contract(kind: str, vendor: Vendor) -> None:
    launcher = LAUNCHERS[kind](FAKE[vendor])
    user = ["mpirun", "-np", "4", "./app", "--flag"]
    variables = {f"{vendor.impl.env_prefix}A": "1", "UCX_TLS": "sm,self"}
    base = {"PATH": "/usr/bin", "LD_PRELOAD": "/user.so", f"{vendor.impl.env_prefix}B": "9"}
    before = dict(os.environ)
    plan = launcher.plan(
        user, variables, remove=[f"{vendor.impl.env_prefix}B"], preload="/ct.so", base_env=base
    )
    # pure: the same inputs give the same plan, and nothing outside changes
    again = launcher.plan(
        user, variables, remove=[f"{vendor.impl.env_prefix}B"], preload="/ct.so", base_env=base
    )
    assert plan == again and dict(os.environ) == before
    # the user's command is kept whole, after the launcher and commtune's options
    assert plan.argv[0] == "mpirun" and plan.argv[-4:] == user[1:]
    # every variable reaches the ranks: forwarded from the launcher's environment or named
    # in the launcher's options; LD_PRELOAD (ours first, the user's kept) only for the ranks
    for name, value in variables.items():
        assert plan.env[name] == value
        assert launcher.forwarded(name) or name in plan.argv
    assert "LD_PRELOAD" not in plan.env or plan.env["LD_PRELOAD"] == "/user.so"
    assert any("/ct.so:/user.so" in a for a in plan.argv)
    assert f"{vendor.impl.env_prefix}B" not in plan.env
    # a wrapper script gets everything through the environment, its argv untouched
    script = launcher.plan(["./run.sh", "x"], variables, preload="/ct.so", base_env={})
    assert script.argv == ["./run.sh", "x"] and script.env["LD_PRELOAD"] == "/ct.so"
    # commtune's own programs: a local launch line of this vendor
    own = launcher.command(2, ["/bin/prog", "a"])
    assert own[0] == FAKE[vendor].launcher and own[-4:] == ["-n", "2", "/bin/prog", "a"]


@pytest.mark.parametrize("vendor", list(Vendor), ids=lambda v: v.value)
def test_launcher_for_every_vendor(vendor: Vendor) -> None:
    assert isinstance(launcher_for(FAKE[vendor]), LocalLauncher)


@pytest.mark.parametrize("vendor", [v for v in Vendor if v.impl.simulated], ids=lambda v: v.value)
def test_launcher_contract_of_a_simulator(vendor: Vendor) -> None:
    """A simulator's configuration reaches its ranks as launcher arguments, never through
    the environment (all ranks are one process it starts), the user's command kept whole;
    a variable outside its configuration still reaches them through the environment."""
    launcher = launcher_for(FAKE[vendor])
    impl = vendor.impl
    name = impl.algorithm_knob("bcast")
    assert impl.configured_by_args(name) and not impl.configured_by_args("OMP_NUM_THREADS")
    user = ["smpirun", "-np", "4", "-platform", "p.xml", "./app", "--flag"]
    plan = launcher.plan(user, {name: "binomial_tree", "OMP_NUM_THREADS": "2"},
                         base_env={"PATH": "/usr/bin"})  # fmt: skip
    assert plan == launcher.plan(user, {name: "binomial_tree", "OMP_NUM_THREADS": "2"},
                                 base_env={"PATH": "/usr/bin"})  # fmt: skip
    assert name not in plan.env and plan.env["OMP_NUM_THREADS"] == "2"
    assert impl.rank_args({name: "binomial_tree"})[0] in plan.argv
    assert plan.argv[0] == "smpirun" and plan.argv[-6:] == user[1:]


# -- appliers ------------------------------------------------------------------------------------
def _knob(how: Apply, vendor: Vendor) -> Knob:
    prefix = vendor.impl.env_prefix
    return Knob(
        name=f"{prefix}TEST" if vendor is Vendor.MPICH else "test_var",
        library=vendor.value,
        type=KnobType.CATEGORICAL,
        default="a",
        description="",
        env=f"{prefix}TEST" if vendor is Vendor.MPICH else f"{prefix}test_var",
        choices=("a", "b"),
        apply=how,
    )


@pytest.mark.parametrize("vendor", REAL, ids=lambda v: v.value)
@pytest.mark.parametrize("how", sorted(APPLIERS, key=lambda a: a.value), ids=lambda a: a.value)
def test_applier_contract(how: Apply, vendor: Vendor) -> None:
    knob = _knob(how, vendor)
    first = Applied()
    APPLIERS[how].apply(knob, "b", vendor.impl, (), first)
    second = Applied()
    APPLIERS[how].apply(knob, "b", vendor.impl, (), second)
    assert first == second  # pure
    assert first.env or first.cvar_writes or first.launch  # it does something
    for option, value in first.launch.items():  # a launcher option: the knob's, its value
        assert option == knob.env and value == "b" and not first.env
    for key, check in first.hints.items():  # hints: the knob's key, the value, in the env
        assert key == knob.env and check == Check(knob.name, "b")
        assert first.env == {"COMMTUNE_IO_HINTS": f"{key}=b"}
    for key, check in first.properties.items():  # HDF5 properties: the same, their variable
        assert key == knob.env and check == Check(knob.name, "b")
        assert first.env == {"COMMTUNE_HDF5_PROPS": f"{key}=b"}
    # what it checks is owned by the knob and is an MPI_T name of the vendor
    for name, check in first.checks.items():
        assert check.knob == knob.name and isinstance(check.value, str)
        assert name in {vendor.impl.mpit_name(e) for e in first.env} | set(first.cvar_writes)
    # apply() reaches it through the knob's own choice
    assert apply([knob], {knob.name: "b"}, vendor.impl) == first
    # a knob not in the configuration is left alone
    assert apply([knob], {}, vendor.impl) == Applied()


def test_env_applier_checks_what_mpi_t_reads_back() -> None:
    ompi = load_catalog("openmpi")
    knobs = [ompi["coll_tuned_allreduce_algorithm"], ompi["btl_vader_eager_limit"]]
    got = apply(knobs, {knobs[0].name: "ring", knobs[1].name: 8192}, Vendor.OPENMPI.impl)
    assert got.checks == {
        "coll_tuned_allreduce_algorithm": Check("coll_tuned_allreduce_algorithm", "ring"),
        "btl_vader_eager_limit": Check("btl_vader_eager_limit", "8192"),
        "coll_tuned_use_dynamic_rules": Check("coll_tuned_allreduce_algorithm", "1"),
    }
    # MPICH's algorithm needs the device's collectives off (as the race ran it): exported
    # with it, and read back as MPI_T gives an enumeration, its position in the list
    algorithm = load_catalog("mpich")["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"]
    listed = {algorithm.name: ("auto", "nb", "recursive_doubling", "ring"),
              "MPIR_CVAR_DEVICE_COLLECTIVES": ("all", "none", "percoll")}  # fmt: skip
    got = apply([algorithm], {algorithm.name: "ring"}, Vendor.MPICH.impl, listed)
    assert got.env == {algorithm.name: "ring", "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}
    assert got.checks["MPIR_CVAR_DEVICE_COLLECTIVES"] == Check(algorithm.name, "1")
    assert got.checks[algorithm.name] == Check(algorithm.name, "3")
    ucx = load_catalog("mpich")["UCX_RNDV_THRESH"]
    got = apply([ucx], {ucx.name: 8192}, Vendor.MPICH.impl)
    assert got.env == {"UCX_RNDV_THRESH": "8192"} and got.checks == {}  # outside MPI_T


def test_info_applier_joins_every_hint_into_one_variable() -> None:
    mpich = load_catalog("mpich")
    knobs = [mpich["cb_buffer_size"], mpich["romio_cb_write"]]
    got = apply(knobs, {"cb_buffer_size": 1 << 22, "romio_cb_write": "enable"}, Vendor.MPICH.impl)
    assert got.env == {"COMMTUNE_IO_HINTS": "cb_buffer_size=4194304;romio_cb_write=enable"}
    assert got.hints == {
        "cb_buffer_size": Check("cb_buffer_size", "4194304"),
        "romio_cb_write": Check("romio_cb_write", "enable"),
    }
    assert got.checks == {} and got.cvar_writes == {}  # hints are not MPI_T variables


def test_hdf5_applier_leaves_the_programs_own_choice_at_the_default() -> None:
    ompi = load_catalog("openmpi")
    knobs = [ompi["hdf5_alignment"], ompi["hdf5_xfer_mode"], ompi["hdf5_coll_metadata_write"]]
    config = {"hdf5_alignment": 1 << 20, "hdf5_xfer_mode": "app", "hdf5_coll_metadata_write": True}
    got = apply(knobs, config, Vendor.OPENMPI.impl)
    assert got.env == {"COMMTUNE_HDF5_PROPS": "alignment=1048576;coll_metadata_write=1"}
    assert got.properties == {
        "alignment": Check("hdf5_alignment", "1048576"),
        "coll_metadata_write": Check("hdf5_coll_metadata_write", "1"),
    }
    assert set(got.settings()) == {"alignment", "coll_metadata_write"} and got.hints == {}
    defaults = {k.name: k.default for k in knobs}  # all at their defaults: nothing set
    assert apply(knobs, defaults, Vendor.OPENMPI.impl) == Applied()


def test_file_applier_loads_each_vendors_selection_file() -> None:
    from commtune.knobs import selection_file_env

    assert selection_file_env(Vendor.OPENMPI.impl, "/r.conf") == {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_dynamic_rules_filename": "/r.conf",
    }
    assert selection_file_env(Vendor.MPICH.impl, "/s.json") == {
        "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": "/s.json"
    }


def test_every_catalog_knob_has_an_applier_and_unknown_ways_are_refused() -> None:
    for vendor in Vendor:
        for knob in load_catalog(vendor.value).values():
            assert knob.apply in APPLIERS, knob.name
    entry = {"name": "eager", "type": "int", "default": 1, "low": 1, "high": 8,
             "description": "", "apply": "mpit-runtime"}  # fmt: skip
    missing = [a for a in Apply if a not in APPLIERS]
    assert missing == [Apply.MPIT_RUNTIME]
    with pytest.raises(UsageError, match="applied by 'mpit-runtime'"):
        _knob_from_json(entry, "openmpi", "OMPI_MCA_")
    with pytest.raises(ValueError):
        _knob_from_json({**entry, "apply": "carrier-pigeon"}, "openmpi", "OMPI_MCA_")


# -- vendors -------------------------------------------------------------------------------------
class StubMPI(MPIVendor):
    """A third library, written only from the recipe in ``mpi/_vendor.py``: every generic
    part of commtune below takes what it needs from it, with no change anywhere else (the
    remaining steps are the registry's: a ``Vendor`` member, a line in ``_registry.py`` and
    its catalog file)."""

    title = "Stub MPI"
    env_prefix = "STUB_CVAR_"
    env_prefixes = ("STUB_CVAR_", "STUB_")
    shm_patterns = ("stub_shm.*",)
    launcher_names = ("stubrun",)
    launcher_aliases = ("stubexec",)
    compiler_names = ("stubcc",)
    launcher_word = "stubrun"
    p2p_knobs = (("STUB_CVAR_SINGLE_COPY", "STUB_CVAR_EAGER_LIMIT"),)
    selection_file_name = "stub-selection.json"
    forced_overrides_file = True
    default_algorithm_named = True
    keeps_unlisted_choices = False
    training_ranks = (2,)
    hdf5_package = "hdf5-stub"

    def _mpit_name(self, env_name: str) -> str:
        return env_name.removeprefix("STUB_CVAR_").lower()

    def algorithm_knob(self, op: str) -> str:
        return f"STUB_CVAR_{op.upper()}_ALGORITHM"

    def selection_env(self, path: str) -> dict[str, str]:
        return {"STUB_CVAR_SELECTION_FILE": path}

    def write_selection(self, segs, algorithms, ranks, header, builtin):  # type: ignore[no-untyped-def]
        tree = {op: [[s.low, algorithms[op][s.method]] for s in r] for op, r in segs.items()}
        return Selection(json.dumps({"ranks": ranks, "rules": tree}))

    def recognise(self, launcher: str, version_text: str) -> tuple[str, str] | None:
        return ("1.0", "shm") if version_text.startswith("stubrun") else None

    def is_compiler(self, show_text: str) -> bool:
        return "stub" in show_text

    def forwarded(self, name: str) -> bool:
        return name.startswith(self.env_prefixes)

    def rank_args(self, variables: Mapping[str, str]) -> list[str]:
        return [f"--env={name}" for name in variables]

    def algorithm_names(
        self, name: str, description: str, known: tuple[str, ...]
    ) -> tuple[str, ...]:
        return tuple(description.split(": ", 1)[1].split("|")) if ": " in description else ()


VERSION_TEXT = {
    Vendor.OPENMPI: "mpirun (Open MPI) 4.1.4",
    Vendor.MPICH: "HYDRA build details:",
    Vendor.INTEL: "Intel(R) MPI Library for Linux* OS, Version 2021.18.1 Build 20260626",
    Vendor.SMPI: "SimGrid version 3.32",
}
IMPLS = [pytest.param(v.impl, id=v.value) for v in Vendor] + [pytest.param(StubMPI(), id="stub")]


@pytest.mark.parametrize("impl", IMPLS)
def test_vendor_contract(impl: MPIVendor) -> None:
    """What every vendor says about itself, checked the same way for each, a simulator
    included: where it differs, its ``lacks`` says so and the layers above ask that."""
    assert impl.title and impl.env_prefix in impl.env_prefixes
    assert impl.mpit_name("PATH") is None
    assert (impl.mpit_name(f"{impl.env_prefix}X") is None) == (Lack.MPI_T in impl.lacks)
    assert impl.rank_args({f"{impl.env_prefix}A": "1"}) and impl.training_ranks
    assert set(impl.launcher_names).isdisjoint(impl.launcher_aliases)
    for fmt in impl.export_formats:
        assert impl.render(fmt, {f"{impl.env_prefix}x": "1"}, "h").strip()
    # what a run is: its value an objective the tuner has, a note where it is not wall time
    assert Objective.parse(impl.run_value).spec == impl.run_value
    assert (impl.run_value == "wall") == (not impl.run_value_note)
    # a real machine's runs never repeat exactly; only a simulator's may (judged from runs)
    assert impl.exact_runs is (None if impl.simulated else False)
    # how a run is profiled: preloaded, or the launcher's own trace written to a path
    assert impl.profile_source
    if impl.profiled_by is Profiled.TRACE:
        assert Lack.PRELOAD in impl.lacks and "/t.trace" in impl.trace_args("/t.trace")
    else:
        assert Lack.PRELOAD not in impl.lacks
        with pytest.raises(ValueError, match="profiled by a preloaded library"):
            impl.trace_args("/t.trace")
    if impl.decides_as(Vendor.OPENMPI.impl) is None:
        with pytest.raises(ValueError, match="stands for no other library"):
            impl.settings_as(Vendor.OPENMPI.impl, {})
    if impl.simulated:
        assert {Lack.PRELOAD, Lack.NODES} <= impl.lacks
    else:
        assert impl.device_label("shm") == "shm" and not impl.lacks
    segs = {"bcast": [Segment(0, 4096, "a"), Segment(4096, None, "b")]}
    if Lack.SELECTION_FILE in impl.lacks:
        with pytest.raises(RulesError):
            impl.selection_env("/f")
        with pytest.raises(RulesError):
            impl.write_selection(segs, {"bcast": {"a": 0, "b": 1}}, 2, "h", None)
        return
    assert impl.selection_env("/f") and "/f" in impl.selection_env("/f").values()
    # a selection file from sampled ranges: one algorithm per range, the library's numbers
    if not impl.selection_extends_builtin:
        chosen = impl.write_selection(segs, {"bcast": {"a": 0, "b": 1}}, 2, "h", None)
        assert chosen.text and not chosen.warnings
        with pytest.raises(KeyError):  # a range naming an algorithm the library lacks
            impl.write_selection(segs, {"bcast": {"a": 0}}, 2, "h", None)
    else:
        with pytest.raises(RulesError):  # it needs the library's own tree
            impl.write_selection(segs, {"bcast": {"a": 1, "b": 2}}, 2, "h", None)


@pytest.mark.parametrize("mpi", [*INSTALLATIONS, SIMULATOR])
def test_discovery_reads_the_installation(mpi: str) -> None:
    """Discovery on a real installation: it is named (version, device, launcher, compiler
    wrapper), its control variables are listed, and every catalog knob it has keeps a
    default inside its domain as installed; a knob it lacks says why."""
    from commtune.knobs import installed_knobs
    from commtune.mpi import installation_of

    inst = installation_of(mpi)
    assert inst.version[0].isdigit() and inst.device and inst.launcher and inst.mpicc
    statuses = installed_knobs(inst)
    available = [s for s in statuses.values() if s.available]
    assert len(available) >= len(statuses) // 2, [s.reason for s in statuses.values()]
    for s in statuses.values():
        assert s.available or s.reason
    for s in available:
        domain = s.knob.domain()
        if s.knob.default in domain or not domain:
            continue
        # a numeric default may lie outside the values searched (0 = the library decides)
        assert s.knob.type in (KnobType.INT, KnobType.LOG2), (s.knob.name, s.knob.default)


@pytest.mark.parametrize("vendor", list(Vendor), ids=lambda v: v.value)
def test_a_registered_vendor_has_a_catalog_and_knows_its_launcher(vendor: Vendor) -> None:
    impl = vendor.impl
    assert impl.vendor is vendor
    catalog = load_catalog(vendor.value)
    for op in ("allreduce", "bcast", "reduce", "allgather", "alltoall"):
        assert impl.algorithm_knob(op) in catalog
    assert all(k in catalog for pair in impl.p2p_knobs for k in pair)
    assert all(p in ENV_PREFIXES for p in impl.env_prefixes)
    assert all(p in SHM_PATTERNS for p in impl.shm_patterns)
    assert set(impl.launcher_names) | set(impl.launcher_aliases) <= LAUNCHER_NAMES
    assert impl.recognise("/nonexistent/mpirun", VERSION_TEXT[vendor]) is not None
    assert all(
        other.impl.recognise("/nonexistent/mpirun", VERSION_TEXT[vendor]) is None
        for other in Vendor
        if other is not vendor
    )


def test_a_stub_vendor_needs_nothing_outside_its_module(tmp_path: Path) -> None:
    """The generic layers take the stub's facts as they take Open MPI's and MPICH's:
    applying a configuration, listing its variables, choosing sampled algorithms and
    writing its selection file."""
    stub = StubMPI()
    knob = Knob("STUB_CVAR_BCAST_ALGORITHM", "stub", KnobType.CATEGORICAL, "auto", "",
                "STUB_CVAR_BCAST_ALGORITHM", choices=("auto", "ring"))  # fmt: skip
    applied = apply([knob], {knob.name: "ring"}, stub)
    assert applied.env == {"STUB_CVAR_BCAST_ALGORITHM": "ring"}
    assert applied.checks == {"bcast_algorithm": Check(knob.name, "ring")}
    line = json.dumps({"name": "STUB_CVAR_BCAST_ALGORITHM", "value": 0,
                       "description": "Algorithms: auto|ring|tree"})  # fmt: skip
    (var,) = parse_cvar_lines(line, {}, stub).values()
    assert var.enumerators == ("auto", "ring", "tree")
    assert selection_file_env(stub, "/s.json") == {"STUB_CVAR_SELECTION_FILE": "/s.json"}


# -- storage migrations --------------------------------------------------------------------------
# The tables each schema version added (version 1: meta, platforms, knob values).
ADDED = {
    2: ["commtune_profiles"],
    3: ["commtune_samples"],
    4: ["commtune_training", "commtune_models"],
    6: ["commtune_claims", "commtune_workers", "commtune_locks"],
}
OLD_SEARCH = {
    "trial": 3, "params": {"MPIR_CVAR_ASYNC_PROGRESS": True}, "default_values": [1.0, 1.1],
    "best_values": [0.5, 0.6], "speedup": 1.9, "ci": [1.5, 2.2], "p_value": 0.01,
    "accepted": True, "measured_trials": 8, "reason": "",
}  # fmt: skip
OLD_PREDICT = {
    "accepted": True, "params": {"MPIR_CVAR_ASYNC_PROGRESS": True}, "env": {},
    "speedup": None, "reason": "predicted", "features": {"comm_size": 2.0},
}  # fmt: skip
OLD_SAMPLE = {
    "accepted": True, "params": {"UCX_RNDV_THRESH": 8192},
    "env": {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": "/s.json"}, "speedup": None,
    "reason": "sampled platform profile",
}  # fmt: skip


def _database_at(version: int, path: Path) -> str:
    """A storage as that version of commtune left it, with one study per verdict shape."""
    url = f"sqlite:///{path}"
    store = Store(url)
    for name, old in (("search", OLD_SEARCH), ("predict", OLD_PREDICT), ("sample", OLD_SAMPLE)):
        study = optuna.create_study(study_name=name, storage=store.optuna)
        spec = StudySpec(["mpiexec", "./app"], "mpich", [], "wall", 1)
        study.set_user_attr("commtune", spec.to_json())
        # from version 5 on, verdicts were written in the one format
        study.set_user_attr("acceptance", old if version < 5 else upgrade(old))
    with store.engine.begin() as conn:
        for v in range(version + 1, SCHEMA_VERSION + 1):
            for table in ADDED.get(v, []):
                conn.execute(sa.text(f"DROP TABLE {table}"))
        conn.execute(
            sa.text("UPDATE commtune_meta SET value = :v WHERE key = 'schema_version'"),
            {"v": str(version)},
        )
    store.engine.dispose()
    return url


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_storage_migrates_from_every_version(
    version: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _database_at(version, tmp_path / "old.db")
    store = Store(url)
    tables = set(sa.inspect(store.engine).get_table_names())
    assert {t for ts in ADDED.values() for t in ts} <= tables
    with store.engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT value FROM commtune_meta")).scalar()
    assert stored == str(SCHEMA_VERSION)
    verdicts = {
        name: acceptance_of(optuna.load_study(study_name=name, storage=store.optuna))
        for name in ("search", "predict", "sample")
    }
    assert {n: v.source for n, v in verdicts.items() if v} == {
        "search": Source.SEARCH,
        "predict": Source.PREDICT,
        "sample": Source.SAMPLE,
    }
    search, predict, sample = verdicts["search"], verdicts["predict"], verdicts["sample"]
    assert search and search.trial == 3 and search.ci == (1.5, 2.2) and search.measured_trials == 8
    assert (
        predict and predict.finding is None and predict.notes == Notes(features={"comm_size": 2.0})
    )
    assert sample and sample.env == OLD_SAMPLE["env"]
    # stored in the new format, not only read through it
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT value_json FROM study_user_attributes WHERE key = 'acceptance'")
        ).all()
    assert {json.loads(r[0])["format"] for r in rows} == {FORMAT}
    # export takes every one of them
    code, out, err = run_cli(["export", "sample", "--storage", url, "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["env"]["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] == "/s.json"
    code, out, err = run_cli(["studies", "--storage", url, "--json"], capsys)
    assert code == 0 and len(last_json(out)["studies"]) == 3


def test_a_sampled_or_predicted_study_is_not_resumed_by_tune(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tune`` on a study that ``sample`` or ``predict`` wrote, even with the very same
    spec: one line naming what the study holds, exit 2, nothing written."""
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"default": [1.0], "trials": []}))
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = Store(url)
    knob = load_catalog("mpich")["MPIR_CVAR_ASYNC_PROGRESS"]
    spec = StudySpec(
        ["replay", str(replay)], "mpich", [{"knob": knob.name, "values": None}], "wall", 3
    )
    for source in (Source.SAMPLE, Source.PREDICT):
        verdict = Acceptance(source, {knob.name: True}, True, "made without a search")
        save_result_study(store.optuna, "made", spec, verdict)
        args = ["tune", "--mpi", "mpich", "--replay", str(replay), "--knob", knob.name]
        code, _, err = run_cli([*args, "--storage", url, "--study", "made"], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"holds a {source.value} result, not a search" in err
        study = optuna.load_study(study_name="made", storage=store.optuna)
        assert study.trials == []


def test_the_banner_names_open_mpis_protocol_layer_whole() -> None:
    """Open MPI's pml "v" (message logging) read like a cut word in the banner."""
    inst = Installation(Vendor.OPENMPI, "4.1.4", "pml:cm,ob1,ucx,v btl:self,vader", "/x", "/y")
    assert inst.describe() == "Open MPI 4.1.4 (pml:cm,ob1,ucx,v(protocol) btl:self,vader)"
    assert inst.device == "pml:cm,ob1,ucx,v btl:self,vader"  # the fingerprint's, unchanged


# Databases written by each earlier schema version's own code (the last commit at that
# version: `commtune tune --mpi openmpi --knob btl_vader_eager_limit=4K,8K,16K --trials 4
# --study sN -- true`), kept as SQL text: a changed column fails here, where the rebuilt
# databases above would follow today's table definitions.
SCHEMAS = Path(__file__).parent / "data" / "schemas"


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_a_database_written_by_an_earlier_version_opens_with_its_trials(
    version: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.executescript((SCHEMAS / f"schema-{version}.sql").read_text())
        before = conn.execute("SELECT number, state FROM trials ORDER BY number").fetchall()
        values = conn.execute(
            "SELECT t.number, v.value FROM trials t JOIN trial_values v "
            "ON v.trial_id = t.trial_id ORDER BY t.number"
        ).fetchall()
    url = f"sqlite:///{path}"
    store = Store(url)  # migrates
    with store.engine.begin() as conn:
        found = conn.execute(
            sa.text("SELECT value FROM commtune_meta WHERE key = 'schema_version'")
        ).scalar()
    assert found == str(SCHEMA_VERSION)
    study = optuna.load_study(study_name=f"s{version}", storage=store.optuna)
    trials = study.get_trials()
    assert [(t.number, t.state.name) for t in trials] == before
    assert [(t.number, t.value) for t in trials if t.value is not None] == values
    store.engine.dispose()
    for args in (
        ["studies"],
        ["show", f"s{version}"],
        ["report", f"s{version}", "-o", str(tmp_path / "r.html")],
    ):
        code, _, err = run_cli([*args, "--storage", url], capsys)
        assert code == 0, (args, err)


@pytest.mark.parametrize("vendor", REAL, ids=lambda v: v.value)
def test_a_launcher_option_goes_right_after_the_launcher(vendor: Vendor) -> None:
    """A launch knob's option is put into the user's line after the launcher, in the
    vendor's spelling, the rest untouched; a command without the launcher is refused."""
    launcher = LocalLauncher(FAKE[vendor])
    user = ["mpirun", "-np", "2", "./app"]
    plan = launcher.plan(user, {}, options={"bind-to": "core"}, base_env={})
    dash = "--" if vendor is Vendor.OPENMPI else "-"
    assert plan.argv == ["mpirun", f"{dash}bind-to", "core", "-np", "2", "./app"]
    with pytest.raises(UsageError, match="bind-to: an option of the MPI launcher"):
        launcher.plan(["./run.sh"], {}, options={"bind-to": "core"}, base_env={})


def test_binding_read_back_from_cpu_sets() -> None:
    from commtune.profile._checks import binding_problem
    from commtune.profile._profile import parse_cpus

    assert parse_cpus("0-2,5") == {0, 1, 2, 5} and parse_cpus("") == frozenset()
    one, two, both = frozenset({0}), frozenset({1}), frozenset({0, 1})
    assert binding_problem("core", [one, two]) is None
    assert "a rank runs on every CPU" in (binding_problem("core", [both, both]) or "")
    assert binding_problem("none", [both, both]) is None
    assert "the ranks are bound" in (binding_problem("none", [one, two]) or "")
    assert binding_problem("numa", [one, two]) is None  # says nothing on one NUMA node
    assert "no CPU sets" in (binding_problem("core", []) or "")


def test_an_export_says_how_to_launch_with_a_launcher_option() -> None:
    from commtune.report._export import render

    knob = load_catalog("openmpi")["bind-to"]
    text = render("env", "openmpi", [knob], {"bind-to": "core"}, "s")
    assert "launch with: mpirun --bind-to core ..." in text and "export " not in text
    data = json.loads(render("json", "mpich", [load_catalog("mpich")["bind-to"]],
                             {"bind-to": "none"}, "s"))  # fmt: skip
    assert data["launch"] == ["-bind-to", "none"] and data["env"] == {}
