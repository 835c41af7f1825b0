"""Running an MPI installation's own tools (``--version``, ``-show``, ``ompi_info``)."""

from __future__ import annotations

import subprocess


def output(argv: list[str], timeout: float = 30) -> str:
    """stdout and stderr of ``argv``; empty if it cannot run or hangs."""
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr
