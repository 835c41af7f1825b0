"""The vendor table: one line per supported MPI library."""

from __future__ import annotations

from commtune.mpi._vendor import MPIVendor, Vendor
from commtune.mpi.intel import IntelMPI
from commtune.mpi.mpich import MPICH
from commtune.mpi.openmpi import OpenMPI
from commtune.mpi.smpi import SMPI

IMPLEMENTATIONS: dict[Vendor, MPIVendor] = {
    Vendor.OPENMPI: OpenMPI(),
    Vendor.MPICH: MPICH(),
    Vendor.INTEL: IntelMPI(),
    Vendor.SMPI: SMPI(),
}
