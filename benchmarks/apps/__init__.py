"""Real programs built from their public sources, as the yardstick of the tuner (issue 42).

Each program is an :class:`App`: where its source lives (a public repository and the commit
its figures were made with; `fetch` or `git clone` brings it, nothing of it is in this
repository), how it is built with an MPI installation's own compiler wrappers into
commtune's cache, a small input that runs in 2-30 s on 2 ranks here, and the metric its own
output reports (``--metric``). ``python benchmarks/app_build.py NAME --source DIR --mpi X``
builds one and prints the command to tune it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from commtune import native
from commtune.mpi import Installation

if TYPE_CHECKING:
    from commtune.testbed import Cluster


def wrapper(inst: Installation, language: str) -> str:
    """The installation's compiler wrapper for ``language`` (c, c++, fortran), beside its
    mpicc (Debian's ``mpicc.openmpi`` -> ``mpicxx.openmpi``); UsageError-free: a missing
    one is said by the build that needs it."""
    cc = Path(inst.mpicc)
    names = {"c": ["mpicc"], "c++": ["mpicxx", "mpic++"], "fortran": ["mpif90", "mpifort"]}
    for name in names[language]:
        candidate = cc.with_name(cc.name.replace("mpicc", name))
        if candidate.exists():
            return str(candidate)
    raise BuildError(
        f"{inst.describe()} at {inst.prefix} has no {language} compiler wrapper "
        f"({' or '.join(names[language])} beside {cc})"
    )


class BuildError(Exception):
    """A program that could not be built with an installation: the reason, in one line."""


def _run(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise BuildError(f"{' '.join(argv[:3])} ... failed: {' | '.join(tail)}")


@dataclass(frozen=True)
class App:
    name: str
    repo: str  # owner/name on GitHub
    commit: str  # the snapshot the recorded figures were made with
    languages: tuple[str, ...]
    build_in: Callable[[Path, Path, Installation, dict[str, str]], Path]  # (src, dest) -> binary
    args: Callable[[Path, Path, int], list[str]]  # (binary, workdir, ranks) -> its argv
    metric: str  # commtune's --metric
    ranks: int = 2
    note: str = ""

    def build(self, source: Path, inst: Installation) -> Path:
        """The program built from ``source`` with ``inst`` into the cache (once per source
        text and installation); its binary."""
        key = hashlib.sha256(f"{self.commit}:{inst.prefix}:{inst.version}:{_digest(source)}"
                             .encode()).hexdigest()[:12]  # fmt: skip
        dest = native.cache_dir() / "apps" / f"{self.name}-{inst.vendor.value}-{key}"
        done = dest / ".built"
        if done.exists():
            return Path(done.read_text().strip())
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        env = inst.tool_env()
        binary = self.build_in(source, dest, inst, env)
        done.write_text(str(binary))
        return binary

    def command(self, inst: Installation, binary: Path, workdir: Path,
                ranks: int | None = None) -> list[str]:  # fmt: skip

        workdir.mkdir(parents=True, exist_ok=True)
        ranks = ranks or self.ranks
        return inst.command(ranks, self.args(binary, workdir, ranks))


def on_bed(bed: Cluster | None,
           inst: Installation) -> tuple[list[str], dict[str, str], int | None]:  # fmt: skip
    """How a command runs as a cluster's user would on ``bed`` (None: here, as it is): the
    prefix that enters the bed's first node, the variables of its site environment, and the
    ranks, one a node (None: the program's own)."""
    if bed is None:
        return [], {}, None
    return bed.command(bed.hostnames[0], []), bed.site_env(inst), len(bed.hostnames)


def _digest(source: Path) -> str:
    """The source tree's identity: its git HEAD where it is a checkout, else its file list."""
    if not source.is_dir():  # a program the installation ships (IMB)
        return ""
    head = source / ".git" / "HEAD"
    if head.exists():
        return head.read_text()
    return str(sorted(p.name for p in source.iterdir()))


# -- CoMD (ECP-copa/CoMD): classical molecular dynamics, halo exchanges and allreduces -----
def _comd_build(src: Path, dest: Path, inst: Installation, env: dict[str, str]) -> Path:
    shutil.copytree(src / "src-mpi", dest / "src")
    shutil.copy(dest / "src" / "Makefile.vanilla", dest / "src" / "Makefile")
    _run(["make", f"CC={wrapper(inst, 'c')}", "OPTFLAGS=-O2"], dest / "src", env)
    return dest / "bin" / "CoMD-mpi"


# CoMD's decomposition per rank count (i x j x k): -i RANKS alone leaves 8 ranks 3 lattice
# units each in x, too thin for the potential's cutoff (CoMD exits 2)
COMD_GRID = {2: (2, 1, 1), 4: (2, 2, 1), 8: (2, 2, 2), 16: (4, 2, 2), 256: (8, 8, 4),
             512: (8, 8, 8), 1024: (16, 8, 8)}  # fmt: skip


def comd_weak(ranks: int) -> list[str]:
    """CoMD's arguments at ``ranks`` ranks, 4 lattice units a rank each way (weak scaling),
    20 steps printed every 10: the simulated tables' and the scale runs' case."""
    i, j, k = COMD_GRID[ranks]
    return ["-i", str(i), "-j", str(j), "-k", str(k), "-x", str(4 * i), "-y", str(4 * j),
            "-z", str(4 * k), "-N", "20", "-n", "10"]  # fmt: skip


def comd_box(ranks: int) -> list[str]:
    """CoMD's arguments at ``ranks`` ranks across the bed: the one-node tables' 24^3 box,
    decomposed by :data:`COMD_GRID`, 60 steps printed every 20."""
    i, j, k = COMD_GRID[ranks]
    return ["-i", str(i), "-j", str(j), "-k", str(k), "-x", "24", "-y", "24", "-z", "24",
            "-N", "60", "-n", "20"]  # fmt: skip


def _comd_args(binary: Path, work: Path, ranks: int) -> list[str]:
    return [
        str(binary),
        "-i",
        str(ranks),
        "-j",
        "1",
        "-k",
        "1",
        "-x",
        "24",
        "-y",
        "24",
        "-z",
        "24",
        "-N",
        "60",
        "-n",
        "20",
    ]  # Lennard-Jones: no potential file


# -- HPCG (hpcg-benchmark/hpcg): conjugate gradient, halo exchanges and allreduces ---------
def _hpcg_build(src: Path, dest: Path, inst: Installation, env: dict[str, str]) -> Path:
    sources = sorted(str(p) for p in (src / "src").glob("*.cpp"))
    _run(
        [
            wrapper(inst, "c++"),
            "-O2",
            "-DHPCG_NO_OPENMP",
            f"-I{src / 'src'}",
            *sources,
            "-o",
            str(dest / "xhpcg"),
        ],
        dest,
        env,
    )
    return dest / "xhpcg"


def _hpcg_args(binary: Path, work: Path, ranks: int) -> list[str]:
    # 16^3 points a rank, 3 s of timed run (HPCG's official minimum is 1800 s: its rating is
    # "invalid" for a benchmark report, a steady workload here)
    return [str(binary), "--nx=16", "--ny=16", "--nz=16", "--rt=3"]


# -- miniFE (Mantevo/miniFE, ref): finite elements, assembly then CG --------------------------
def _minife_build(src: Path, dest: Path, inst: Installation, env: dict[str, str]) -> Path:
    shutil.copytree(src / "ref", dest / "ref")
    build = dest / "ref" / "src"
    _run(
        [
            "make",
            f"CXX={wrapper(inst, 'c++')}",
            f"CC={wrapper(inst, 'c')}",
            "CXXFLAGS=-O2",
            "CFLAGS=-O2",
        ],
        build,
        env,
    )
    return build / "miniFE.x"


def _minife_args(binary: Path, work: Path, ranks: int) -> list[str]:
    return [str(binary), "-nx", "90", "-ny", "90", "-nz", "90"]


# -- SNAP (lanl/SNAP): discrete-ordinates transport sweeps (the TAU seed's case) --------------
SNAP_INPUT = """! a small problem for {ranks} ranks (npey x npez = {ranks} x 1)
 &invar
  nthreads=1
  nnested=1
  npey={ranks}
  npez=1
  ndimen=3
  nx=24
  lx=0.24
  ny=24
  ly=0.24
  nz=24
  lz=0.24
  ichunk=4
  nmom=1
  nang=8
  ng=16
  mat_opt=0
  src_opt=0
  timedep=0
  it_det=0
  tf=1.0
  nsteps=1
  iitm=5
  oitm=30
  epsi=1.E-4
  fluxp=0
  scatp=0
  fixup=1
  soloutp=0
  kplane=0
  popout=0
  swp_typ=0
 /
"""


def _fortran_modules(inst: Installation) -> list[str]:
    """Intel MPI's modules are per gfortran version (``include/mpi/gfortran/12.4.0``): its
    wrapper reads the default ones, which this gfortran cannot; the matching major's."""
    versions = Path(inst.prefix) / "include" / "mpi" / "gfortran"
    if not versions.is_dir():
        return []
    done = subprocess.run(["gfortran", "-dumpversion"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    major = done.stdout.strip().split(".")[0]
    match = sorted(p for p in versions.iterdir() if p.name.split(".")[0] == major)
    return [f"-I{match[-1]}"] if match else []


def _snap_build(src: Path, dest: Path, inst: Installation, env: dict[str, str]) -> Path:
    shutil.copytree(src / "src", dest / "src")
    flags = " ".join(["-O2", *_fortran_modules(inst)])
    _run(
        ["make", f"FORTRAN={wrapper(inst, 'fortran')}", "OPENMP=no", f"FFLAGS={flags}", "FFLAG2="],
        dest / "src",
        env,
    )
    return dest / "src" / "gsnap"


def _snap_args(binary: Path, work: Path, ranks: int) -> list[str]:
    (work / "snap.inp").write_text(SNAP_INPUT.format(ranks=ranks))
    # rank 0 writes the output file: standard output, where the metric is read
    return [str(binary), str(work / "snap.inp"), "/dev/stdout"]


# -- ICAR (NCAR/icar): the AITuning seed's case, Fortran coarrays over MPI (OpenCoarrays) ----
# Debian's OpenCoarrays (libcoarrays-openmpi-dev, libcoarrays-mpich-dev) is built against
# Debian's MPIs only; netCDF-Fortran and FFTW from Debian (libnetcdff-dev, libfftw3-dev).
# The input is ICAR's own idealised case (tests/gen_ideal_test.py: Schaer's advection test,
# 300 x 20 x 50 points), generated with the Python packages that script still runs with.
ICAR_PYTHON = ["numpy<2", "pandas<2.3", "xarray==2023.12.0", "netCDF4"]
ICAR_SET = {
    # mp=0 (the test's own setting) crashes in upwind advection: it passes the air density,
    # which only a microphysics scheme asks to be allocated; Thompson's (mp=1) does
    "mp": "1",
    "debug": "False",  # the test checks every field at every step and prints what it fixed
}


def _icar_options(text: str) -> str:
    for key, value in ICAR_SET.items():
        text = re.sub(rf"(?m)^{key}=[^,\n]*", f"{key}={value}", text)
    return text


def _caf(inst: Installation) -> str:
    caf = Path(f"/usr/bin/caf.{inst.vendor.value}")
    if not str(inst.prefix).startswith("/usr") or not caf.exists():
        raise BuildError(f"no OpenCoarrays for {inst.describe()} at {inst.prefix} (Debian's "
                         "libcoarrays-openmpi-dev and libcoarrays-mpich-dev are built against "
                         "Debian's Open MPI and MPICH only)")  # fmt: skip
    return str(caf)


def _icar_build(src: Path, dest: Path, inst: Installation, env: dict[str, str]) -> Path:
    # its makefile takes OpenCoarrays' flags only when F90 is "caf" by name
    (dest / "bin").mkdir()
    (dest / "bin" / "caf").symlink_to(_caf(inst))
    env = {**env, "PATH": f"{dest / 'bin'}:{env.get('PATH', os.environ['PATH'])}"}
    shutil.copytree(src, dest / "icar", ignore=shutil.ignore_patterns(".git"))
    _run(["make", "-C", "src", "COMPILER=gnu", "F90=caf", "NETCDF=/usr", "FFTW=/usr"],
         dest / "icar", env)  # fmt: skip
    venv = native.cache_dir() / "apps" / "icar-python"
    if not (venv / ".ready").exists():
        _run([sys.executable, "-m", "venv", str(venv)], dest, env)
        _run([str(venv / "bin" / "pip"), "install", "-q", *ICAR_PYTHON], dest, env)
        (venv / ".ready").touch()
    tests = dest / "icar" / "tests"
    _run([str(venv / "bin" / "python"), "gen_ideal_test.py"], tests, env)
    options = tests / "icar_options.nml"
    options.write_text(_icar_options(options.read_text()))
    binary = dest / "icar" / "src" / "icar"
    # Thompson's microphysics computes its lookup tables (2 min) unless it finds them in the
    # working folder: made once here, linked into every run's folder
    _run([*inst.command(2, [str(binary), options.name])], tests, env)
    return binary


def _icar_args(binary: Path, work: Path, ranks: int) -> list[str]:
    tests = binary.parent.parent / "tests"
    for f in [tests / "init.nc", tests / "forcing.nc", *tests.glob("*_mpt.dat")]:
        link = work / f.name
        if not link.exists():
            link.symlink_to(f)
    (work / "icar_options.nml").write_text(_icar_options((tests / "icar_options.nml").read_text()))
    return [str(binary), "icar_options.nml"]


# -- AMG (LLNL/AMG): algebraic multigrid (hypre), many small messages and allreduces --------
def _amg_build(src: Path, dest: Path, inst: Installation, env: dict[str, str]) -> Path:
    shutil.copytree(src, dest / "amg", ignore=shutil.ignore_patterns(".git"))
    flags = "-O2 -DTIMER_USE_MPI -DHYPRE_HOPSCOTCH -DHYPRE_BIGINT"  # no OpenMP: ranks only
    _run(
        ["make", f"CC={wrapper(inst, 'c')}", f"INCLUDE_CFLAGS={flags}", "INCLUDE_LFLAGS=-lm"],
        dest / "amg",
        env,
    )
    return dest / "amg" / "test" / "amg"


def _amg_args(binary: Path, work: Path, ranks: int) -> list[str]:
    # problem 1 (27-point Laplacian), ranks x 1 x 1 ranks of 64^3 points; the metric: the
    # solve's wall time (its figure of merit is larger-is-better; commtune minimizes)
    return [str(binary), "-problem", "1", "-n", "64", "64", "64", "-P", str(ranks), "1", "1"]


# -- LULESH (LLNL/LULESH): Lagrangian hydrodynamics, 26-neighbour halo exchanges ------------
def _lulesh_build(src: Path, dest: Path, inst: Installation, env: dict[str, str]) -> Path:
    sources = [str(src / f"lulesh{part}.cc") for part in ("", "-comm", "-init", "-util", "-viz")]
    _run([wrapper(inst, "c++"), "-O2", "-DUSE_MPI=1", "-DUSE_OMP=0", f"-I{src}", *sources,
          "-o", str(dest / "lulesh2.0")], dest, env)  # fmt: skip
    return dest / "lulesh2.0"


def _lulesh_args(binary: Path, work: Path, ranks: int) -> list[str]:
    # a cube of ranks (8, 27, 64, 216, 1000: LULESH refuses any other count), 8^3 elements a
    # rank, 50 steps
    return [str(binary), "-s", "8", "-i", "50"]


# -- IMB-MPI1 (Intel MPI Benchmarks, in Intel MPI's package): all-to-all-v ------------------
def _imb_build(src: Path, dest: Path, inst: Installation, env: dict[str, str]) -> Path:
    binary = Path(inst.prefix) / "bin" / "IMB-MPI1"
    if not binary.exists():
        raise BuildError(f"{inst.describe()} ships no IMB-MPI1 (Intel MPI's package does)")
    return binary


def _imb_args(binary: Path, work: Path, ranks: int) -> list[str]:
    # 1 MiB a rank, 8000 repetitions whatever the volume (IMB's own policy would run 40)
    return [
        str(binary),
        "Alltoallv",
        "-npmin",
        "2",
        "-msglog",
        "20:20",
        "-iter",
        "8000",
        "-iter_policy",
        "off",
        "-time",
        "600",
        "-sync",
        "1",
    ]


APPS = {
    app.name: app
    for app in (
        App(
            "comd",
            "ECP-copa/CoMD",
            "3d48396b77ca8caa3124bc2391f9139c3ffb556c",
            ("c",),
            _comd_build,
            _comd_args,
            r"regex:total\s+\d+\s+([0-9.]+)",
        ),
        App(
            "hpcg",
            "hpcg-benchmark/hpcg",
            "114602d458d1034faa52b71e4c15aba9b3a17698",
            ("c++",),
            _hpcg_build,
            _hpcg_args,
            "wall",
            note="HPCG writes its rating to a file, not to its output: the run's wall time",
        ),
        App(
            "minife",
            "Mantevo/miniFE",
            "c79e0f7f7afdd6c8191936efce7a668316159cc3",
            ("c", "c++"),
            _minife_build,
            _minife_args,
            "wall",
        ),
        App(
            "snap",
            "lanl/SNAP",
            "e7ab43dfb0c16419d9a42d756141d5957ac526fc",
            ("fortran",),
            _snap_build,
            _snap_args,
            r"regex:Total Execution time\s+([0-9.E+-]+)",
        ),
        App(
            "icar",
            "NCAR/icar",
            "9ee76831e6fa432f4ee185ecbe1aadb600eee0a4",
            ("fortran",),
            _icar_build,
            _icar_args,
            r"regex:First image timing:\s*\n\s*total\s*:\s*([0-9.E+-]+)",
            note="runs in its own folder: ICAR reads its input and lookup tables from there",
        ),
        App(
            "amg",
            "LLNL/AMG",
            "3ada8a128e311543e84d9d66344ece77924127a8",
            ("c",),
            _amg_build,
            _amg_args,
            r"regex:PCG Solve:\s*\n\s*wall clock time = ([0-9.]+)",
        ),
        App(
            "lulesh",
            "LLNL/LULESH",
            "3e01c40b3281aadb7f996525cdd4a3354f6d3801",
            ("c++",),
            _lulesh_build,
            _lulesh_args,
            r"regex:Elapsed time\s+=\s+([0-9.]+)",
            ranks=8,
            note="cube rank counts only (LULESH refuses others)",
        ),
        App(
            "imb-alltoallv",
            "(Intel MPI's package)",
            "-",
            (),
            _imb_build,
            _imb_args,
            r"regex:\n\s+1048576\s+\d+\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)",
        ),
    )
}
