"""Running an MPI installation's own tools (``--version``, ``-show``, ``ompi_info``)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping


def output(argv: list[str], timeout: float = 30, env: Mapping[str, str] | None = None) -> str:
    """stdout and stderr of ``argv`` (``env``: added to this process's environment); empty
    if it cannot run or hangs. Run in an empty directory of its own: a compiler wrapper asked
    a question may compile and link (``smpicc -v`` writes ``a.out`` where it runs), and the
    user's directory is not ours to write."""
    try:
        with tempfile.TemporaryDirectory(prefix="commtune-ask-") as cwd:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
                env={**os.environ, **env} if env else None,
                cwd=cwd,
            )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr
