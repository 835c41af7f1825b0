"""How every benchmark runs commtune and reads its answer: ``commtune ARGS --json`` in a
process of its own, its last line of output parsed (the ``--json`` answer; progress and
tables go to stderr). Scripts run as ``python benchmarks/NAME.py`` import it by name.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

COMMTUNE = (sys.executable, "-m", "commtune")


def argv(*args: str) -> list[str]:
    """``python -m commtune ARGS --json``, the flag before a ``--`` (the command's own
    arguments after it are the user's)."""
    line = [*COMMTUNE, *args]
    line.insert(line.index("--") if "--" in line else len(line), "--json")
    return line


def last_json(output: str) -> dict[str, Any]:
    """The ``--json`` answer in a command's output: its last line."""
    lines = output.strip().splitlines()
    if not lines:
        raise RuntimeError("commtune printed no answer")
    return json.loads(lines[-1])


def commtune(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float | None = None,
    inside: Callable[[list[str]], list[str]] | None = None,
) -> dict[str, Any]:
    """Run ``commtune ARGS --json`` (``inside``: wrapped, e.g. into a bed node's
    namespaces) and return its answer; RuntimeError with the end of its stderr if it
    failed."""
    line = argv(*args)
    done = subprocess.run(inside(line) if inside else line, capture_output=True, text=True,
                          env=dict(env) if env is not None else None, cwd=cwd,
                          timeout=timeout, check=False)  # fmt: skip
    return answer(done, args)


def timed(*args: str, **kwargs: Any) -> tuple[dict[str, Any], float]:
    """:func:`commtune` and its wall time in seconds."""
    start = time.perf_counter()
    out = commtune(*args, **kwargs)
    return out, time.perf_counter() - start


def answer(done: subprocess.CompletedProcess[str], args: Sequence[str]) -> dict[str, Any]:
    """The answer of a finished ``commtune ... --json`` (run however the caller ran it)."""
    if done.returncode != 0:
        raise RuntimeError(f"commtune {' '.join(args[:3])} failed ({done.returncode}): "
                           f"{done.stderr.strip()[-600:]}")  # fmt: skip
    return last_json(done.stdout)
