"""Knob families declared once (issue 94, item 3): each family's module owns its prefix, its
discovery, its catalog and its formats, and a vendor names the families it reads. A family
added through the registry, with no other change, is listed, applied to a real run and
exported."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from commtune import families
from commtune.families import Export, Family, Format
from commtune.knobs import apply, discover, installed_knobs, load_catalog
from commtune.launch import launcher_for
from commtune.mpi import Installation, Variable, Vendor, find_installation
from commtune.report import render
from commtune.tune import inherited_mpi_env

from .conftest import last_json, needs_openmpi, run_cli


def test_the_built_in_families_are_what_the_vendors_read() -> None:
    """Each MPI-IO hint, HDF5 property and layer variable is declared once, in its family,
    and reaches every catalog of a vendor that names the family; formats follow families."""
    ucx = {k for k in load_catalog("mpich") if k.startswith("UCX_")}
    assert ucx == {e["name"] for e in families.of(Vendor.MPICH.impl)[2].entries()}
    hints = {e["name"] for e in next(f for f in families.BUILT_IN if f.name == "romio").entries()}
    for library in ("openmpi", "mpich", "intel"):
        assert hints <= set(load_catalog(library)), library
        assert "romio-hints" in families.formats(Vendor(library).impl)
    assert not hints & set(load_catalog("smpi"))
    assert families.formats(Vendor.SMPI.impl) == ("json", "cfg")
    assert families.formats(Vendor.OPENMPI.impl) == ("env", "json", "romio-hints", "h5tuner", "mca")
    # a layer's knobs need its device; Open MPI names UCX's only (its PML is chosen at run time)
    assert load_catalog("mpich")["UCX_TLS"].requires_device == "ucx"
    assert load_catalog("mpich")["UCX_RNDV_THRESH"].default_space
    ompi = load_catalog("openmpi")["UCX_RNDV_THRESH"]
    assert ompi.presets == () and not ompi.default_space and ompi.env == "UCX_RNDV_THRESH"
    assert load_catalog("openmpi")["fcoll"].env == "OMPI_MCA_fcoll"  # OMPIO: Open MPI's prefix
    assert {"UCX_", "FI_"} <= set(families.recorded_prefixes())


def _toy_variables(installation: Installation) -> dict[str, Variable]:
    return {"TOY_LEVEL": Variable("TOY_LEVEL", "1", (), "the toy layer's level", "int", mpit="")}


def _toy_file(export: Export) -> str:
    return "".join(f"level {v}\n" for k, v in export.env.items() if k == "TOY_LEVEL")


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Family]:
    """A throwaway family (its own prefix, tool, catalog and format) registered and named by
    Open MPI's vendor: nothing else in commtune changes."""
    catalog = tmp_path / "toy.json"
    catalog.write_text(json.dumps({"family": "toy", "knobs": [
        {"name": "TOY_LEVEL", "type": "int", "default": 1, "low": 1, "high": 4,
         "description": "Toy: the layer's level.", "presets": ["p2p"]}]}))  # fmt: skip
    family = Family(
        name="toy", title="Toy", catalog=catalog, prefixes=("TOY_",), discover=_toy_variables,
        formats=(Format("toy-conf", "the toy layer's file", _toy_file, ("toy",)),),
    )  # fmt: skip
    impl = type(Vendor.OPENMPI.impl)
    monkeypatch.setenv("COMMTUNE_CACHE", str(tmp_path / "cache"))  # discovered afresh
    families.register(family)
    monkeypatch.setattr(impl, "families", (*impl.families, "toy"))
    for cached in (load_catalog, discover):
        cached.cache_clear()
    yield family
    families.unregister("toy")
    monkeypatch.undo()
    for cached in (load_catalog, discover):
        cached.cache_clear()


@needs_openmpi
def test_a_family_added_through_the_registry_is_listed_applied_and_exported(
    toy: Family, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    inst = find_installation(Vendor.OPENMPI)
    # listed: in the catalog, found by its tool, available, and in its preset
    status = installed_knobs(inst)["TOY_LEVEL"]
    assert status.available and status.knob.env == "TOY_LEVEL"
    code, out, _ = run_cli(["knobs", "--mpi", "openmpi", "--preset", "p2p", "--json"], capsys)
    assert code == 0 and "TOY_LEVEL" in [k["name"] for k in last_json(out)["knobs"]]
    # applied: a real run's ranks see it, and a study records it from the user's environment
    applied = apply([status.knob], {"TOY_LEVEL": 3}, inst.impl)
    assert applied.env == {"TOY_LEVEL": "3"} and applied.checks == {}  # outside MPI_T
    plan = launcher_for(inst).plan(
        [inst.launcher, "--oversubscribe", "--allow-run-as-root", "-np", "2", "printenv",
         "TOY_LEVEL"], applied.env)  # fmt: skip
    done = subprocess.run(plan.argv, env=plan.env, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 0 and done.stdout.split() == ["3", "3"], done.stderr
    monkeypatch.setenv("TOY_LEVEL", "2")
    assert inherited_mpi_env()["TOY_LEVEL"] == "2"
    # exported: in its own format and in the shell lines
    assert "toy-conf" in families.formats(inst.impl)
    assert render("toy-conf", "openmpi", [status.knob], {"TOY_LEVEL": 3}, "s") == "level 3\n"
    assert "export TOY_LEVEL=3" in render("env", "openmpi", [status.knob], {"TOY_LEVEL": 3}, "s")
    # a vendor that does not name it has none of it
    assert "TOY_LEVEL" not in load_catalog("mpich")
    assert "toy-conf" not in families.formats(Vendor.MPICH.impl)
