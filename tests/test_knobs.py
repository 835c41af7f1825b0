"""Knob types, domains, the --knob syntax, catalogs and discovery parsers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commtune.errors import UsageError
from commtune.families import BUILT_IN
from commtune.knobs import (
    KnobStatus,
    KnobType,
    Space,
    apply,
    build_space,
    catalog_statuses,
    load_catalog,
    space_from_json,
)
from commtune.knobs._discovery import cache_path, parse_cvar_lines
from commtune.knobs._select import parse_knob_spec
from commtune.mpi import VENDOR_NAMES, Vendor
from commtune.mpi.mpich import parse_algorithm_names
from commtune.mpi.openmpi import parse_ompi_info


def statuses(library: str) -> dict[str, KnobStatus]:
    """The catalog as Debian's installations would have it (Open MPI 4.1, MPICH 4.0)."""
    return catalog_statuses(library, {"openmpi": "4.1.4", "mpich": "4.0.2"}[library])


def test_catalogs_cover_the_required_knobs() -> None:
    ompi = load_catalog("openmpi")
    for op in ("allreduce", "bcast", "reduce", "allgather", "alltoall"):
        knob = ompi[f"coll_tuned_{op}_algorithm"]
        assert knob.requires == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}
        assert "collectives" in knob.presets
        assert load_catalog("mpich")[f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM"].default == "auto"
    assert ompi["btl_vader_eager_limit"].type is KnobType.LOG2
    assert ompi["btl_vader_eager_limit"].env == "OMPI_MCA_btl_vader_eager_limit"
    mpich = load_catalog("mpich")
    for name in ("MPIR_CVAR_ASYNC_PROGRESS", "MPIR_CVAR_POLLS_BEFORE_YIELD", "UCX_RNDV_THRESH"):
        assert name in mpich
    assert mpich["MPIR_CVAR_POLLS_BEFORE_YIELD"].step == 500


def test_log2_domain_and_internal_values() -> None:
    knob = load_catalog("openmpi")["btl_vader_eager_limit"]
    assert knob.domain() == [1024 << i for i in range(8)]
    assert knob.to_internal(4096) == 12 and knob.from_internal(12) == 4096
    assert knob.parse("64k") == 65536
    with pytest.raises(UsageError, match="outside its domain"):
        knob.parse("4m")
    with pytest.raises(UsageError, match="not a power of two"):
        knob.parse("5000")


def test_default_outside_numeric_domain_is_accepted() -> None:
    knob = load_catalog("mpich")["UCX_RNDV_THRESH"]
    assert knob.parse("auto") == "auto"
    knob.check("auto")
    with pytest.raises(UsageError):
        knob.parse("automatic")


def test_knob_spec_lists_and_commas() -> None:
    st = statuses("mpich")
    dim = parse_knob_spec(st, "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=nb,smp", "mpich")
    assert dim.values == ("nb", "smp")
    # A value containing a comma is one value; '|' separates several of them.
    assert parse_knob_spec(st, "UCX_TLS=sm,self", "mpich").values == ("sm,self",)
    assert parse_knob_spec(st, "UCX_TLS=sm,self|tcp,self", "mpich").values == (
        "sm,self",
        "tcp,self",
    )
    assert parse_knob_spec(st, "UCX_RNDV_THRESH=8k|64k", "mpich").values == (8192, 65536)
    with pytest.raises(UsageError, match="unknown knob 'NOPE'"):
        parse_knob_spec(st, "NOPE", "mpich")
    assert parse_knob_spec(st, "UCX_TLS=sm", "mpich").values == ("sm",)  # UCX takes it
    with pytest.raises(UsageError, match="outside its domain"):
        parse_knob_spec(st, "UCX_TLS=smoke", "mpich")


def test_presets_and_default_space() -> None:
    st = statuses("openmpi")
    space = build_space(st, "openmpi", presets=["collectives"])
    assert "coll_tuned_allreduce_algorithm" in space.names
    assert "coll_tuned_use_dynamic_rules" not in space.names  # set by itself, not tuned
    default = build_space(st, "openmpi")
    assert set(default.names) == {
        "btl_vader_eager_limit",
        "btl_vader_single_copy_mechanism",
        "coll_tuned_allreduce_algorithm",
    }
    with pytest.raises(UsageError, match="unknown preset"):
        build_space(st, "openmpi", presets=["nope"])


def test_environment_sets_requirements_only_when_needed() -> None:
    cat = load_catalog("openmpi")
    knobs = [cat["coll_tuned_allreduce_algorithm"], cat["btl_vader_eager_limit"]]
    ompi = Vendor.OPENMPI.impl
    env = apply(
        knobs, {"coll_tuned_allreduce_algorithm": "ring", "btl_vader_eager_limit": 4096}, ompi
    ).env
    assert env == {
        "OMPI_MCA_coll_tuned_allreduce_algorithm": "ring",
        "OMPI_MCA_btl_vader_eager_limit": "4096",
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
    }
    env = apply(knobs, {"coll_tuned_allreduce_algorithm": "ignore"}, ompi).env
    assert "OMPI_MCA_coll_tuned_use_dynamic_rules" not in env


def test_space_drop_values_and_size() -> None:
    st = statuses("mpich")
    space = build_space(
        st, "mpich", ["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "MPIR_CVAR_ASYNC_PROGRESS"]
    )
    assert space.size() == 6 * 2
    smaller = space.drop_values({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": ["ring"]})
    assert "ring" not in smaller["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"].candidates()
    assert smaller.size() == 5 * 2
    with pytest.raises(UsageError, match="given twice"):
        Space("mpich", (space.dimensions[0], space.dimensions[0]))


OMPI_INFO = """\
mca:btl:vader:param:btl_vader_single_copy_mechanism:value:cma
mca:btl:vader:param:btl_vader_single_copy_mechanism:help:Single copy mechanism
mca:btl:vader:param:btl_vader_single_copy_mechanism:enumerator:value:1:cma
mca:btl:vader:param:btl_vader_single_copy_mechanism:enumerator:value:4:emulated
mca:btl:vader:param:btl_vader_single_copy_mechanism:enumerator:value:3:none
mca:btl:vader:param:btl_vader_eager_limit:value:4096
"""


def test_parse_ompi_info() -> None:
    found = parse_ompi_info(OMPI_INFO)
    assert found["btl_vader_single_copy_mechanism"].enumerators == ("cma", "emulated", "none")
    assert found["btl_vader_eager_limit"].value == "4096"


def test_parse_mpich_algorithm_descriptions() -> None:
    # As MPICH 4.0.2 prints it: lines joined without a separator.
    desc = (
        "Variable to select bcast algorithmauto - Internal algorithm selection (can be overridden"
        " with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)binomial                                -"
        " Force Binomial Treenb                                      - Force nonblocking algorithm"
        "smp                                     - Force smp algorithm"
    )
    known = ("auto", "binomial", "nb", "smp")
    assert parse_algorithm_names(desc, known) == ("auto", "binomial", "nb", "smp")
    # Without knowing the names, a glued word is not guessed at.
    assert parse_algorithm_names(desc) == ("binomial",)
    line = (
        '{"name":"MPIR_CVAR_BCAST_INTRA_ALGORITHM","datatype":"int","value":0,"enum":null,'
        '"description":' + __import__("json").dumps(desc) + "}"
    )
    parsed = parse_cvar_lines(line, {"MPIR_CVAR_BCAST_INTRA_ALGORITHM": known}, Vendor.MPICH.impl)
    assert parsed["MPIR_CVAR_BCAST_INTRA_ALGORITHM"].enumerators == known


@pytest.mark.parametrize("library", ["openmpi", "mpich"])
def test_every_value_a_user_can_give_round_trips(library: str) -> None:
    """Each catalog knob's default and every value of its domain, given as text, parse and
    pass through the search's internal value unchanged (a log2 knob whose default is 0 or not
    a power of two, such as Open MPI's segment sizes, once failed with a negative shift)."""
    for knob in load_catalog(library).values():
        for value in [knob.default, *knob.domain()]:
            assert knob.parse(knob.format(value)) == value, knob.name
            assert knob.from_internal(knob.to_internal(value)) == value, knob.name
        internals = {knob.to_internal(v) for v in [knob.default, *knob.domain()]}
        assert len(internals) == len({knob.default, *knob.domain()}), knob.name


def test_a_segment_size_list_with_its_default_of_zero_is_a_space() -> None:
    space = build_space(
        statuses("openmpi"), "openmpi", ["coll_tuned_bcast_algorithm_segmentsize=0,8k"]
    )
    from commtune.strategies import distributions

    (dist,) = distributions(space).values()
    knob = space.dimensions[0].knob
    assert sorted(knob.from_internal(c) for c in dist.choices) == [0, 8192]


def test_an_unknown_preset_names_every_preset() -> None:
    from commtune.knobs import PRESETS

    with pytest.raises(UsageError) as err:
        build_space(statuses("openmpi"), "openmpi", presets=["foo"])
    assert all(p in str(err.value) for p in PRESETS)


@pytest.mark.parametrize(
    ("version", "spec", "expected"),
    [
        ("4.1.4", "<5", True),
        ("5.0.11", "<5", False),
        ("5.0.11", ">=5", True),
        ("4.0.2", ">=4.1,<5", False),
        ("4.1.0", ">=4.1,<5", True),
        ("2021.18.1", ">=2021.10", True),
        ("5.0.2", "==5.0", True),
        ("5.1.0", "==5.0", False),
    ],
)
def test_a_knob_belongs_to_the_versions_that_have_it(
    version: str, spec: str, expected: bool
) -> None:
    from commtune.knobs._knob import version_in

    assert version_in(version, spec) is expected


def test_a_renamed_variable_is_a_knob_per_version() -> None:
    """Open MPI 5 renamed vader to sm: each name is available on its own versions only, and
    the default space has as many knobs on each."""
    four, five = catalog_statuses("openmpi", "4.1.4"), catalog_statuses("openmpi", "5.0.11")
    assert four["btl_vader_eager_limit"].available and not five["btl_vader_eager_limit"].available
    assert five["btl_sm_eager_limit"].available and not four["btl_sm_eager_limit"].available
    assert five["smsc"].available and not four["smsc"].available
    assert len(build_space(four, "openmpi").names) == len(build_space(five, "openmpi").names) == 3


def _var(kind: str, value: str, enumerators: tuple[str, ...] = (), settable: bool = True):  # type: ignore[no-untyped-def]
    from commtune.mpi import Variable

    return Variable("x_var", value, enumerators, "a variable", kind, settable)


@pytest.mark.parametrize(
    ("kind", "value", "enums", "text", "expected"),
    [
        ("bool", "false", ("false", "true"), None, [False, True]),
        ("string", "b", ("a", "b", "c"), None, ["a", "b", "c"]),
        ("string", "b", ("a", "b", "c"), "c,a", ["c", "a"]),
        ("int", "1", (), "1,2,4", [1, 2, 4]),
        ("int", "1", (), "1..4", [1, 2, 3, 4]),
        ("int", "65536", (), "4k..32k", [4096, 8192, 16384, 32768]),
        ("string", "", (), "x,y", ["x", "y"]),
    ],
)
def test_a_library_variable_becomes_a_knob_with_the_librarys_domain(
    kind: str, value: str, enums: tuple[str, ...], text: str | None, expected: list[object]
) -> None:
    from commtune.knobs._select import variable_knob

    dim = variable_knob(_var(kind, value, enums), "openmpi", "OMPI_MCA_x_var", text)
    assert dim.candidates() == expected and dim.knob.adhoc and dim.knob.env == "OMPI_MCA_x_var"
    # a study keeps its definition: the space reads back without the catalog knowing it
    back = space_from_json("openmpi", Space("openmpi", (dim,)).to_json())
    assert back.dimensions[0].candidates() == expected
    assert back.dimensions[0].knob.type is dim.knob.type


@pytest.mark.parametrize(
    ("kind", "value", "text", "settable", "needle"),
    [
        ("int", "1", None, True, "is an integer: give its values"),
        ("int", "1", "8..2", True, "the range 8..2 is empty"),
        ("int", "1", "1..100000", True, "holds 100000 values"),
        ("int", "1", "1,x", True, "'x' is not a whole number"),
        ("string", "", None, True, "takes text: give its values"),
        ("int", "1", "1,2", False, "is a constant of this build"),
    ],
)
def test_a_variable_refuses_what_it_cannot_take(
    kind: str, value: str, text: str | None, settable: bool, needle: str
) -> None:
    from commtune.knobs._select import variable_knob

    with pytest.raises(UsageError, match=needle):
        variable_knob(_var(kind, value, (), settable), "mpich", "X_VAR", text)


def test_ucx_info_gives_each_variable_its_kind() -> None:
    from commtune.families.ucx import parse_ucx_info

    text = """#
# Rendezvous threshold.
#
# syntax:    memory units: <number>[b|kb|mb|gb], "inf", or "auto"
#
UCX_RNDV_THRESH=auto

#
# syntax:    unsigned integer
#
UCX_MAX_RNDV_RAILS=2

# syntax:    <y|n>
UCX_LOG_PRINT_ENABLE=n

# syntax:    [FATAL|ERROR|WARN]
UCX_LOG_LEVEL=WARN

# syntax:    comma-separated list of: string
UCX_TLS=all
"""
    found = parse_ucx_info(text)
    kinds = {n: (v.kind, v.value, v.enumerators) for n, v in found.items()}
    assert kinds == {
        "UCX_RNDV_THRESH": ("int", "auto", ()),
        "UCX_MAX_RNDV_RAILS": ("int", "2", ()),
        "UCX_LOG_PRINT_ENABLE": ("string", "n", ("y", "n")),
        "UCX_LOG_LEVEL": ("string", "WARN", ("FATAL", "ERROR", "WARN")),
        "UCX_TLS": ("string", "all", ()),
    }
    assert found["UCX_RNDV_THRESH"].description == "Rendezvous threshold."


CATALOG_DIR = Path(__file__).resolve().parent.parent / "src/commtune/knobs/data"


@pytest.mark.parametrize("library", VENDOR_NAMES)
def test_every_catalog_follows_its_schema(library: str) -> None:
    """data/catalog.schema.json documents and checks the catalog's grammar (``versions``
    clauses, ``bounds``, what each type needs)."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test extra")
    schema = json.loads((CATALOG_DIR / "catalog.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    catalog = json.loads((CATALOG_DIR / f"{library}.json").read_text())
    assert [e.message for e in validator.iter_errors(catalog)] == []
    bad = {"library": library, "knobs": [
        {"name": "x", "type": "int", "default": 1, "description": "", "low": 1, "high": 2,
         "versions": "5+"},
        {"name": "y", "type": "categorical", "default": "a", "description": ""},
    ]}  # fmt: skip
    found = sorted(".".join(map(str, e.absolute_path)) for e in validator.iter_errors(bad))
    assert found == ["knobs.0.versions", "knobs.1"]


@pytest.mark.parametrize("family", [f.name for f in BUILT_IN])
def test_every_familys_catalog_follows_the_schema(family: str) -> None:
    """A family's data (families/data/<name>.json) is a catalog of the same grammar."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test extra")
    schema = json.loads((CATALOG_DIR / "catalog.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    data = json.loads(next(f for f in BUILT_IN if f.name == family).catalog.read_text())
    assert data["family"] == family and data["knobs"]
    assert [e.message for e in validator.iter_errors(data)] == []


def test_ucx_values_users_set_are_values() -> None:
    """What users set UCX to (UCX_TLS=posix,self or sysv,self, UCX_RNDV_THRESH=inf, any size)
    is taken, each value keeps an internal value of its own through the search, and what UCX
    would not take is still refused."""
    knobs = load_catalog("mpich")
    tls, rndv = knobs["UCX_TLS"], knobs["UCX_RNDV_THRESH"]
    for text in ("posix,self", "sysv,self", "^tcp", "tcp,\\cma,self"):
        assert tls.parse(text) == text
    with pytest.raises(UsageError, match="outside its domain"):
        tls.parse("posix,carrier-pigeon")
    values = [rndv.parse(t) for t in ("inf", "auto", "8k", "100000", "0")]
    assert values == ["inf", "auto", 8192, 100000, 0]
    internals = [rndv.to_internal(v) for v in values]
    assert len(set(internals)) == len(values)
    assert [rndv.from_internal(i) for i in internals] == values
    assert internals[2] == 13 and internals[1] == -1  # the domain's and the default's as before
    with pytest.raises(UsageError):
        rndv.parse("fast")
    with pytest.raises(UsageError):
        rndv.parse("-5")
    specs = ["UCX_TLS=posix,self|sysv,self", "UCX_RNDV_THRESH=inf,auto,64k"]
    space = build_space(statuses("mpich"), "mpich", specs)
    dims = {d.knob.name: d.values for d in space.dimensions}
    assert dims == {"UCX_TLS": ("posix,self", "sysv,self"),
                    "UCX_RNDV_THRESH": ("inf", "auto", 65536)}  # fmt: skip


def test_ucx_info_gives_the_domain_of_a_ucx_knob() -> None:
    """The transports and aliases ucx_info describes for UCX_TLS, and the words of a memory
    unit's syntax, widen the catalog's knob (``layer_domain``)."""
    from commtune.families.ucx import parse_ucx_info
    from commtune.knobs._discovery import layer_domain

    text = """#
# Comma-separated list of transports to use. The order is not meaningful.
#  - all     : use all the available transports.
#  - sm/shm  : all shared memory transports (mm, cma, knem).
#  - frob    : a transport of a newer UCX.
#
# syntax:    comma-separated list (use "all" for including all items or '^' for negation) of: string
#
UCX_TLS=all

#
# syntax:    memory units: <number>[b|kb|mb|gb], "inf", or "auto"
#
UCX_ZCOPY_THRESH=auto
"""
    found = parse_ucx_info(text)
    knobs = load_catalog("mpich")
    tls = layer_domain(knobs["UCX_TLS"], found["UCX_TLS"])
    assert {"all", "sm", "shm", "frob"} <= set(tls.items)
    assert tls.parse("frob,self") == "frob,self"
    zcopy = layer_domain(knobs["UCX_ZCOPY_THRESH"], found["UCX_ZCOPY_THRESH"])
    assert zcopy.any_size and set(zcopy.words) == {"inf", "auto"}
    assert zcopy.parse("3000") == 3000


def test_the_discovery_cache_is_read_again_when_a_layers_tool_changes(tmp_path: Path) -> None:
    """Issue 76: a cache written before ``ucx-utils`` was installed kept MPICH without its UCX
    variables (``--knob UCX_...`` then an unknown knob, on that machine a failing suite).
    The key holds the tools the discovery reads: one installed, or changed, is read again."""
    import os

    from commtune.mpi import Installation

    (tmp_path / "bin").mkdir()
    launcher = tmp_path / "bin" / "mpiexec"
    launcher.write_text("#!/bin/sh\n")
    inst = Installation(Vendor.MPICH, "4.0.2", "ch4:ucx", str(launcher), "mpicc")
    before = cache_path(inst)
    assert cache_path(inst) == before  # nothing changed: the same cache
    tool = tmp_path / "bin" / "ucx_info"
    tool.write_text("#!/bin/sh\necho UCX_TLS=all\n")
    installed = cache_path(inst)
    assert installed != before
    os.utime(tool, (2e9, 2e9))  # upgraded
    assert cache_path(inst) not in (before, installed)
