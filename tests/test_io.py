"""The I/O kernel (native/io/ct_io.c) under each MPI: the VPIC-IO layout written by MPI-IO and
by parallel HDF5, every value read back, a damaged file caught, the file removed."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from commtune import native
from commtune.launch import launcher_for
from commtune.mpi import Vendor, find_installation

from .conftest import VENDORS, last_json, run_cli


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_cli_prints_the_kernel_it_builds(
    vendor: Vendor, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["io-kernel", "--mpi", vendor.value], capsys)
    assert code == 0 and out.strip() == str(native.build_io(find_installation(vendor))[0])


def _run(vendor: Vendor, *args: str) -> subprocess.CompletedProcess[str]:
    installation = find_installation(vendor)
    program, _ = native.build_io(installation)
    launcher = launcher_for(installation)
    plan = launcher.plan(launcher.command(2, [str(program), *args]), {})
    return subprocess.run(
        plan.argv, env=plan.env, capture_output=True, text=True, timeout=120, check=False
    )


def _modes(vendor: Vendor) -> list[str]:
    _, has_hdf5 = native.build_io(find_installation(vendor))
    return ["mpiio", "hdf5"] if has_hdf5 else ["mpiio"]


def _check_one(vendor: Vendor, mode: str, folder: Path) -> None:
    done = _run(vendor, "-n", "32K", "-m", mode, "-d", str(folder))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["mode"] == mode and result["verified"] is True
    assert result["ranks"] == 2 and result["particles"] == 32 << 10
    assert result["bytes"] == 2 * (32 << 10) * 8 * 4  # 8 variables of 4 bytes
    assert result["write_s"] > 0 and result["bandwidth_mib_s"] > 0
    assert list(folder.iterdir()) == []  # removed after the run


@pytest.mark.parametrize("vendor", VENDORS)
def test_mpiio_writes_reads_back_and_removes_its_file(vendor: Vendor, tmp_path: Path) -> None:
    _check_one(vendor, "mpiio", tmp_path)


@pytest.mark.parametrize("vendor", VENDORS)
def test_hdf5_writes_reads_back_and_removes_its_file(vendor: Vendor, tmp_path: Path) -> None:
    if "hdf5" not in _modes(vendor):
        pytest.skip(f"no parallel HDF5 for {vendor.value} (Debian: libhdf5-{vendor.value}-dev)")
    _check_one(vendor, "hdf5", tmp_path)


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_damaged_file_fails_the_run(vendor: Vendor, tmp_path: Path) -> None:
    for mode in _modes(vendor):
        done = _run(vendor, "-n", "16K", "-m", mode, "-d", str(tmp_path), "--damage")
        assert done.returncode != 0
        assert "read-back:" in done.stderr and "differ from what was written" in done.stderr
        assert "verified" not in done.stdout


@pytest.mark.parametrize("vendor", VENDORS)
def test_an_unwritable_directory_is_a_usage_error(vendor: Vendor, tmp_path: Path) -> None:
    done = _run(vendor, "-n", "1K", "-d", str(tmp_path / "missing"))
    assert done.returncode != 0
    assert "ct_io: cannot write to the directory:" in done.stderr


@pytest.mark.parametrize("vendor", VENDORS)
def test_hints_reach_mpi_file_open_and_an_ignored_one_is_not_applied(
    vendor: Vendor, storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    installation = find_installation(vendor)
    program, _ = native.build_io(installation)
    folder = tmp_path / "io"
    folder.mkdir()
    command = launcher_for(installation).command(2, [str(program), "-n", "16K", "-d", str(folder)])
    args = ["tune", "--mpi", vendor.value, "--knob", "striping_factor=4"]
    args += ["--knob", "cb_buffer_size=4M", "--strategy", "grid", "--trials", "2"]
    args += ["--repeats", "1", "--confirm", "0", "--study", "h", "--storage", storage]
    args += ["--json", "--", *command]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    missing = last_json(out)["not_applied"]
    if vendor is Vendor.MPICH:  # ROMIO drops what this file system cannot stripe
        assert set(missing) == {"striping_factor"}
        assert "ignores it" in missing["striping_factor"]
    else:  # OMPIO reports back any key, a probe no library knows included: nothing proven
        assert set(missing) == {"striping_factor", "cb_buffer_size"}
        assert all("cannot be verified" in why for why in missing.values())
    assert list(folder.iterdir()) == []
    # handed back as a ROMIO hints file (ROMIO_HINTS) and, with a note, as env lines
    code, out, _ = run_cli(["export", "h", "--best", "--format", "romio-hints",
                            "--storage", storage], capsys)  # fmt: skip
    assert code == 0
    assert out.splitlines()[1:] == ["striping_factor 4", "cb_buffer_size 4194304"]
    code, out, _ = run_cli(["export", "h", "--best", "--storage", storage], capsys)
    assert code == 0 and "ROMIO_HINTS" in out
    assert "export COMMTUNE_IO_HINTS='striping_factor=4;cb_buffer_size=4194304'" in out
    # and as H5Tuner's configuration: hints under their layer of the I/O stack
    code, out, _ = run_cli(["export", "h", "--best", "--format", "h5tuner",
                            "--storage", storage], capsys)  # fmt: skip
    assert code == 0
    root = ET.fromstring(out)
    assert root.tag == "Parameters"
    assert root.findtext("Middleware_Layer/cb_buffer_size") == "4194304"
    assert root.findtext("Parallel_File_System/striping_factor") == "4"


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_default_directory_is_on_disk_and_tmpfs_is_warned_about(vendor: Vendor) -> None:
    before = set(Path("/var/tmp").glob("ct_io.*"))
    done = _run(vendor, "-n", "1K")  # default: /var/tmp
    assert done.returncode == 0, done.stderr
    assert "tmpfs" not in done.stderr and set(Path("/var/tmp").glob("ct_io.*")) <= before
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm here to stand for a tmpfs directory")
    done = _run(vendor, "-n", "1K", "--io-dir", str(shm))
    assert done.returncode == 0, done.stderr
    assert f"ct_io: warning: {shm} is tmpfs" in done.stderr


HDF5_KNOBS = {
    "hdf5_alignment": ("1M", "1048576"),
    "hdf5_alignment_threshold": ("64K", "65536"),
    "hdf5_sieve_buf_size": ("1M", "1048576"),
    "hdf5_meta_block_size": ("64K", "65536"),
    "hdf5_chunk_cache_bytes": ("4M", "4194304"),
    "hdf5_coll_metadata_ops": ("true", "1"),
    "hdf5_coll_metadata_write": ("true", "1"),
    "hdf5_xfer_mode": ("independent", "independent"),
}


@pytest.mark.parametrize("vendor", VENDORS)
def test_hdf5_properties_reach_an_unchanged_program_and_are_read_back(
    vendor: Vendor, storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if "hdf5" not in _modes(vendor):
        pytest.skip(f"no parallel HDF5 for {vendor.value} (Debian: libhdf5-{vendor.value}-dev)")
    installation = find_installation(vendor)
    program, _ = native.build_io(installation)
    launcher = launcher_for(installation)
    folder = tmp_path / "io"
    folder.mkdir()
    args = ["tune", "--mpi", vendor.value, "--strategy", "grid", "--trials", "2"]
    for name, (value, _) in HDF5_KNOBS.items():
        args += ["--knob", f"{name}={value}"]
    args += ["--repeats", "1", "--confirm", "0", "--storage", storage, "--json", "--"]
    # the HDF5 kernel: every property set on the program's own lists and read back
    hdf5 = [str(program), "-n", "16K", "-m", "hdf5", "-d", str(folder)]
    code, out, err = run_cli([*args[:-2], "--study", "h5", *args[-2:],
                              *launcher.command(2, hdf5)], capsys)  # fmt: skip
    assert code == 0, err
    assert last_json(out)["not_applied"] == {}
    code, out, _ = run_cli(["show", "h5", "--storage", storage, "--json"], capsys)
    assert code == 0
    tuned = [t for t in json.loads(out)["trials"] if t["params"]]
    assert tuned and all(t["not_applied"] == {} for t in tuned)
    # the MPI-IO kernel opens no HDF5 file: each property is reported unchecked, not applied
    mpiio = [str(program), "-n", "16K", "-m", "mpiio", "-d", str(folder)]
    code, out, err = run_cli([*args[:-2], "--study", "mpiio", *args[-2:],
                              *launcher.command(2, mpiio)], capsys)  # fmt: skip
    assert code == 0, err
    missing = last_json(out)["not_applied"]
    assert set(missing) == set(HDF5_KNOBS)
    assert all("no HDF5 file" in why for why in missing.values())
    assert list(folder.iterdir()) == []
    # handed back as H5Tuner's configuration: the properties in the HDF5 layer
    code, out, _ = run_cli(["export", "h5", "--best", "--format", "h5tuner",
                            "--storage", storage], capsys)  # fmt: skip
    assert code == 0
    library = ET.fromstring(out).find("High_Level_IO_Library")
    assert library is not None
    assert {e.tag: e.text for e in library} == {
        "alignment": "1048576", "alignment_threshold": "65536", "sieve_buf_size": "1048576",
        "meta_block_size": "65536", "rdcc_nbytes": "4194304", "all_coll_metadata_ops": "1",
        "coll_metadata_write": "1", "xfer_mode": "independent",
    }  # fmt: skip


@pytest.mark.parametrize("vendor", VENDORS)
def test_knobs_lists_the_io_preset_with_domains_and_apply_paths(
    vendor: Vendor, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["knobs", "--mpi", vendor.value, "--preset", "io", "--json"], capsys)
    assert code == 0
    knobs = {k["name"]: k for k in json.loads(out)["knobs"]}
    assert all("io" in k["presets"] and k["domain"] for k in knobs.values())
    hints = {"cb_buffer_size", "cb_nodes", "romio_cb_write", "romio_ds_write", "romio_no_indep_rw",
             "ind_wr_buffer_size", "striping_factor", "striping_unit"}  # fmt: skip
    assert {n for n, k in knobs.items() if k["apply"] == "info"} == hints
    properties = {n for n, k in knobs.items() if k["apply"] == "hdf5"}
    assert properties == set(HDF5_KNOBS)
    assert knobs["hdf5_xfer_mode"]["domain"] == ["app", "collective", "independent"]
    assert knobs["hdf5_alignment"]["domain"][0] == 1 and knobs["cb_nodes"]["domain"] == [1, 2, 3, 4]
    ompio = {"io", "fcoll", "fbtl", "io_ompio_num_aggregators", "io_ompio_bytes_per_agg"}
    if vendor is Vendor.OPENMPI:  # OMPIO's own settings: MCA variables
        assert ompio <= set(knobs) and all(knobs[n]["apply"] == "env" for n in ompio)
        assert {"ompio", "romio321"} <= set(knobs["io"]["domain"])
    else:
        assert not ompio & set(knobs)


JOINT = {  # a communication knob, an MPI-IO hint and an HDF5 property in one space
    Vendor.OPENMPI: ["btl_vader_eager_limit=4K", "romio_cb_write=disable",
                     "hdf5_sieve_buf_size=1M"],
    Vendor.MPICH: ["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=recursive_doubling",
                   "romio_cb_write=disable", "hdf5_sieve_buf_size=1M"],
}  # fmt: skip


@pytest.mark.parametrize("vendor", VENDORS)
def test_communication_and_io_knobs_in_one_study(
    vendor: Vendor, storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if "hdf5" not in _modes(vendor):
        pytest.skip(f"no parallel HDF5 for {vendor.value} (Debian: libhdf5-{vendor.value}-dev)")
    installation = find_installation(vendor)
    program, _ = native.build_io(installation)
    folder = tmp_path / "io"
    folder.mkdir()
    kernel = [str(program), "-n", "16K", "-m", "hdf5", "-d", str(folder)]
    args = ["tune", "--mpi", vendor.value, "--strategy", "grid", "--trials", "2"]
    args += [a for k in JOINT[vendor] for a in ("--knob", k)]
    args += ["--repeats", "1", "--confirm", "0", "--storage", storage, "--json", "--study", "j"]
    args += ["--timeout", "120"]  # room a user would give: failures are asserted, not speed
    code, out, err = run_cli([*args, "--", *launcher_for(installation).command(2, kernel)], capsys)
    assert code == 0, err
    result = last_json(out)
    assert result["failed_trials"] == 0
    tuned = {k.split("=")[0] for k in JOINT[vendor]}
    assert set(result["best_params"]) == tuned
    # each took its own way: the MPI_T variable read back, the hint and the property merged
    missing = result["not_applied"]
    if vendor is Vendor.MPICH:
        assert missing == {}
    else:  # OMPIO echoes every hint it is given: nothing proven for the hint alone
        assert set(missing) == {"romio_cb_write"}
    code, out, _ = run_cli(["export", "j", "--best", "--storage", storage], capsys)
    assert code == 0
    assert "COMMTUNE_IO_HINTS=romio_cb_write=disable" in out
    assert "COMMTUNE_HDF5_PROPS=sieve_buf_size=1048576" in out
