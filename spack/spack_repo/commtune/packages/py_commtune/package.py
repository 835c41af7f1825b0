# commtune's Spack recipe: `spack repo add <commtune>/spack` (Spack 1.x, this directory) or
# `spack repo add <commtune>/spack/v0` (Spack 0.x); then `spack install py-commtune`.

from spack.package import *

try:  # Spack 1.x: the build systems live in the builtin repository
    from spack_repo.builtin.build_systems.python import PythonPackage
except ImportError:  # Spack 0.x: spack.package exports them
    pass


class PyCommtune(PythonPackage):
    """Autotuner for the run-time parameters of MPI libraries (Open MPI, MPICH, Intel MPI)
    and of the parallel I/O stack: runs the unchanged application under different settings,
    finds faster ones in few runs, checks them against noise and writes them in the forms
    each library reads."""

    homepage = "https://github.com/commtune/commtune"
    git = "https://github.com/commtune/commtune.git"

    license("BSD-3-Clause")

    version("main", branch="main")

    depends_on("python@3.11:", type=("build", "run"))
    depends_on("py-setuptools@77:", type="build")
    with default_args(type=("build", "run")):
        depends_on("py-optuna@4:")
        depends_on("py-numpy@1.26:")
        depends_on("py-scipy@1.11:")
        depends_on("py-rich@13:")
        depends_on("py-sqlalchemy@2:")
        depends_on("py-matplotlib@3.8:")
        depends_on("py-cmaes@0.10:")
    # The C parts (the profiling library, benchmarks, demo) are sources in the package,
    # built with the MPI's own mpicc per installation on first use into the user's cache:
    # nothing is compiled here, and the MPI is needed at run time only.
    depends_on("mpi", type="run")

    def setup_run_environment(self, env):
        # the MPI this installation was concretized with, first among those commtune finds
        env.prepend_path("COMMTUNE_MPI_PATH", self.spec["mpi"].prefix)
