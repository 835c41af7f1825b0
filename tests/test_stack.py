"""Issue 95: the space follows the layer the run really uses. Open MPI launched as an
InfiniBand cluster launches it (``--mca pml ucx``; here with ``pml_ucx_tls any`` and
``pml_ucx_devices any`` so that UCX runs over TCP and shared memory) says it selected pml
ucx, and no BTL knob is searched or accepted; a collective served by a component other than
tuned (``coll_basic_priority 100``) leaves tuned's variable for that call unsearched."""

from __future__ import annotations

from pathlib import Path

import pytest

from commtune import native
from commtune.cli import main
from commtune.knobs import build_space, installed_knobs, with_layer
from commtune.launch import launcher_for
from commtune.mpi import MPISpec, Vendor, find_installation, find_installations, with_program
from commtune.service import read_layer

from .conftest import last_json, needs_mpich, needs_openmpi

UCX = ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any"]
OPENMPIS = [pytest.param("openmpi", marks=needs_openmpi, id="openmpi4"),
            pytest.param("openmpi@5", marks=needs_openmpi, id="openmpi5")]  # fmt: skip


def _openmpi(spec: str):  # type: ignore[no-untyped-def]
    if spec == "openmpi":
        return find_installation(Vendor.OPENMPI)  # Debian's
    parsed = MPISpec.parse(spec)
    found = [i for i in find_installations() if parsed.matches(i)]
    if not found:
        pytest.skip(f"no {spec} installation ('make mpis')")
    return found[0]


def _line(inst, options: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    program = native.build(inst, "demo/ct_demo.c")
    return launcher_for(inst).command(2, [*options, str(program), "50"])


@pytest.mark.parametrize("spec", OPENMPIS)
def test_under_pml_ucx_the_library_says_ucx_and_no_btl_knob_is_searched(spec: str) -> None:
    inst = _openmpi(spec)
    ucx = read_layer(inst, _line(inst, UCX))
    plain = read_layer(inst, _line(inst, ["--mca", "pml", "ob1"]))
    assert ucx is not None and plain is not None
    assert ucx.p2p == "pml ucx" and plain.p2p == "pml ob1"
    assert [t for t in ucx.transports if t.startswith("UCX ")]  # the lanes UCX chose
    assert "btl self" in plain.transports  # the BTLs ob1 opened, as the library says
    assert ucx.serves("allreduce") == ("tuned", 30)
    statuses = with_layer(installed_knobs(inst), ucx, inst)
    space = build_space(statuses, inst.vendor.value)
    assert space.names and not [n for n in space.names if n.startswith("btl_")]
    assert "UCX_RNDV_THRESH" in space.names  # the layer it runs over, in its place
    btl = statuses["btl_tcp_eager_limit"]
    assert not btl.available and "pml ucx" in btl.reason
    # under ob1 the same knob is read, and UCX's are not
    under_ob1 = with_layer(installed_knobs(inst), plain, inst)
    assert under_ob1["btl_tcp_eager_limit"].available
    assert not under_ob1["UCX_RNDV_THRESH"].available


def _tune_one_knob(tmp_path: Path, capsys: pytest.CaptureFixture[str], knob: str,
                   line: list[str]) -> tuple[int, list[str]]:  # fmt: skip
    """``commtune tune --knob KNOB -- LINE``: its exit code and its stderr's lines."""
    code = main(["tune", "--storage", f"sqlite:///{tmp_path / 's.db'}", "--knob", knob, "--",
                 *line])  # fmt: skip
    return code, capsys.readouterr().err.strip().splitlines()


@needs_openmpi
def test_a_named_knob_the_run_does_not_read_is_one_line_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = find_installation(Vendor.OPENMPI)
    code, err = _tune_one_knob(tmp_path, capsys, "btl_tcp_eager_limit", _line(inst, UCX))
    assert code == 2 and len(err) == 1
    assert "btl_tcp_eager_limit" in err[0] and "pml ucx" in err[0] and "BTL" in err[0]
    assert not (tmp_path / "s.db").exists()  # nothing written, no run spent


@needs_openmpi
def test_a_collective_served_by_another_component_than_tuned_is_detected_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = find_installation(Vendor.OPENMPI)
    line = _line(inst, ["--mca", "coll_basic_priority", "100"])
    layer = read_layer(inst, line)
    assert layer is not None and layer.serves("allreduce") == ("basic", 100)
    statuses = with_layer(installed_knobs(inst), layer, inst)
    assert "served by coll basic" in statuses["coll_tuned_allreduce_algorithm"].reason
    code, err = _tune_one_knob(tmp_path, capsys, "coll_tuned_allreduce_algorithm", line)
    assert code == 2 and len(err) == 1 and "served by coll basic (priority 100" in err[0]


@needs_mpich
def test_mpich_over_ucx_says_its_device_and_the_transports_ucx_chose() -> None:
    inst = find_installation(Vendor.MPICH)
    layer = read_layer(inst, _line(inst, []))
    assert layer is not None and layer.p2p == "ch4:ucx"
    assert layer.transports and all(t.startswith("UCX ") for t in layer.transports)
    # UCX's TCP transport's variables are read exactly where UCX chose a TCP lane (on one
    # node it chooses shared memory)
    lanes = {t.split()[1].split("/")[0] for t in layer.transports}
    statuses = with_layer(installed_knobs(inst), layer, inst)
    tcp = statuses["UCX_TCP_SNDBUF"]
    assert tcp.available == ("tcp" in lanes)
    assert tcp.available or "transport; UCX chose" in tcp.reason
    assert statuses["UCX_RNDV_THRESH"].available and statuses["UCX_TLS"].available
    assert statuses["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"].available


def test_the_program_of_a_launch_line_is_found_past_its_options(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.write_text("#!/bin/sh\n")
    app.chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("a\n")
    line = ["mpirun", "-np", "4", "--hostfile", str(hosts), "--mca", "pml", "ucx", str(app), "9"]
    assert with_program(line, ["probe", "init"]) == [*line[:8], "probe", "init"]
    assert with_program(["mpirun", "-np", "2"], ["probe"]) is None
    # an agent given to an option is not the program (hydra's -launcher-exec on the bed)
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\n")
    agent.chmod(0o755)
    hydra = ["mpiexec", "-hosts", "a,b", "-launcher-exec", str(agent), "-n", "2", str(app), "1"]
    assert with_program(hydra, ["probe"]) == [*hydra[:7], "probe"]
    flagged = ["mpirun", "-np", "2", "--oversubscribe", str(app)]
    assert with_program(flagged, ["probe"]) == [*flagged[:4], "probe"]


@needs_openmpi
def test_a_study_under_pml_ucx_names_its_layer_first_and_searches_no_btl_knob(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = find_installation(Vendor.OPENMPI)
    db = f"sqlite:///{tmp_path / 's.db'}"
    code = main(["tune", "--storage", db, "--trials", "3", "--max-runs", "16", "--preset", "p2p",
                 "--json", "--", *_line(inst, UCX)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0
    said = " ".join(err.split())
    layer, tuning = said.index("the run selects point-to-point: pml ucx"), said.index("tuning ")
    assert layer < tuning  # named before the space it searches
    searched = [k.strip(",") for k in said[tuning:].split(" of ", 1)[1].split(" ")]
    assert not [k for k in searched if k.startswith("btl_")] and "UCX_RNDV_THRESH" in searched
    assert last_json(out)["layer"]["p2p"] == "pml ucx"


@needs_openmpi
def test_knobs_of_a_launch_line_show_the_layer_each_knob_is_read_by(
    capsys: pytest.CaptureFixture[str],
) -> None:
    inst = find_installation(Vendor.OPENMPI)
    assert main(["knobs", "--json", "--", *_line(inst, UCX)]) == 0
    out, err = capsys.readouterr()
    said = last_json(out)
    knobs = {k["name"]: k for k in said["knobs"]}
    assert said["layer"]["p2p"] == "pml ucx" and "the run selects point-to-point: pml ucx" in err
    assert knobs["btl_tcp_eager_limit"]["layer"] == "pml ob1"
    assert not knobs["btl_tcp_eager_limit"]["available"]
    assert knobs["UCX_RNDV_THRESH"]["layer"] == "pml ucx" and knobs["UCX_RNDV_THRESH"]["available"]
    assert "p2p" in knobs["UCX_RNDV_THRESH"]["presets"]
    # without a line: the library's knobs, UCX's named only (the layer is chosen at run time)
    assert main(["knobs", "--json", "--mpi", "openmpi"]) == 0
    plain = {k["name"]: k for k in last_json(capsys.readouterr().out)["knobs"]}
    assert plain["btl_tcp_eager_limit"]["available"] and not plain["UCX_RNDV_THRESH"]["presets"]


@pytest.mark.parametrize("spec", OPENMPIS)
def test_a_loaded_ucx_other_than_the_listed_one_is_said(spec: str) -> None:
    """pip's Open MPI 5 carries its own UCX; its variables are listed by PATH's ucx_info: a
    warning exactly where the two versions differ."""
    import re
    import shutil
    import subprocess

    from commtune.service import layer_warnings

    inst = _openmpi(spec)
    layer = read_layer(inst, _line(inst, UCX))
    assert layer is not None
    loaded = next(n for n in layer.notes if n.startswith("UCX ")).split()[1]
    tool = shutil.which("ucx_info")
    assert tool is not None  # the test set-up installs ucx-utils
    listed = re.search(r"Version (\S+)", subprocess.run([tool, "-v"], capture_output=True,
                                                        text=True, check=True).stdout)  # fmt: skip
    assert listed is not None
    warnings = layer_warnings(inst, layer)
    assert bool(warnings) == (loaded != listed.group(1))
    assert all(f"UCX {loaded} from" in w and listed.group(1) in w for w in warnings)


@needs_openmpi
def test_the_demo_over_ucx_is_a_study_of_the_ucx_layer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    code = main(["demo", "--ucx", "--mpi", "openmpi", "--max-runs", "13", "--storage", db,
                 "--json"])  # fmt: skip
    out, _ = capsys.readouterr()
    said = last_json(out)
    assert code == 0 and said["study"] == "demo-openmpi-ucx"
    assert said["layer"]["p2p"] == "pml ucx"
    assert said["runs"] <= 13
