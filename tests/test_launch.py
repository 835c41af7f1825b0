"""The launch layer: vendor detection and how a configuration reaches the ranks."""

from __future__ import annotations

import pytest

from commtune.errors import UsageError
from commtune.launch import launcher_for
from commtune.mpi import Installation, Vendor, find_installation, resolve_command

from .conftest import needs_mpich, needs_openmpi

OMPI = Installation(Vendor.OPENMPI, "4.1.4", "btl:vader", "/usr/bin/mpirun", "/usr/bin/mpicc")
MPICH = Installation(Vendor.MPICH, "4.0.2", "ch4:ucx", "/usr/bin/mpiexec.mpich", "/usr/bin/mpicc")


def test_openmpi_forwards_non_mca_variables_with_x() -> None:
    plan = launcher_for(OMPI).plan(
        ["mpirun", "-np", "4", "./app"],
        {"OMPI_MCA_btl_vader_eager_limit": "8192", "UCX_TLS": "sm,self"},
        preload="/lib/libcommtune.so",
        base_env={"PATH": "/usr/bin", "OMPI_MCA_btl_vader_eager_limit": "1"},
    )
    assert plan.argv == [
        "mpirun",
        "-x",
        "UCX_TLS",
        "-x",
        "LD_PRELOAD=/lib/libcommtune.so",
        "-np",
        "4",
        "./app",
    ]
    assert plan.env["OMPI_MCA_btl_vader_eager_limit"] == "8192"
    assert "LD_PRELOAD" not in plan.env  # the ranks get it, mpirun itself does not


def test_mpich_uses_genv_and_removes_overridden_variables() -> None:
    plan = launcher_for(MPICH).plan(
        ["mpiexec.mpich", "-n", "2", "./app"],
        {"MPIR_CVAR_ASYNC_PROGRESS": "1"},
        remove=["MPIR_CVAR_POLLS_BEFORE_YIELD"],
        base_env={"MPIR_CVAR_POLLS_BEFORE_YIELD": "5", "HOME": "/root"},
    )
    assert plan.argv[:4] == ["mpiexec.mpich", "-genv", "MPIR_CVAR_ASYNC_PROGRESS", "1"]
    assert "MPIR_CVAR_POLLS_BEFORE_YIELD" not in plan.env
    assert plan.env["HOME"] == "/root"


def test_wrapper_script_gets_environment_only() -> None:
    plan = launcher_for(OMPI).plan(["./run.sh"], {"UCX_TLS": "tcp"}, base_env={})
    assert plan.argv == ["./run.sh"] and plan.env == {"UCX_TLS": "tcp"}


@needs_openmpi
@needs_mpich
def test_both_installations_found_side_by_side() -> None:
    ompi, mpich = find_installation(Vendor.OPENMPI), find_installation(Vendor.MPICH)
    assert ompi.version.startswith("4.") and "vader" in ompi.device
    assert mpich.device.startswith("ch4") and mpich.mpicc != ompi.mpicc
    assert resolve_command(["mpiexec.mpich", "-n", "2", "true"], None).vendor is Vendor.MPICH
    assert resolve_command(["mpirun.openmpi", "-np", "2", "true"], None).vendor is Vendor.OPENMPI
    with pytest.raises(UsageError, match="does not match the launcher"):
        resolve_command(["mpiexec.mpich", "-n", "2", "true"], Vendor.OPENMPI)


def test_command_not_found() -> None:
    with pytest.raises(UsageError, match="command not found: no-such-mpirun"):
        resolve_command(["no-such-mpirun", "-np", "2"], None)
