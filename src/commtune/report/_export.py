"""A configuration in the forms the libraries read: env lines, Open MPI's mca-params.conf, JSON."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping

from commtune.errors import UsageError
from commtune.knobs import Knob, Value, environment

FORMATS = ("env", "mca", "json")


def render(
    fmt: str,
    library: str,
    knobs: list[Knob],
    config: Mapping[str, Value],
    study: str,
    extra: Mapping[str, str] | None = None,
) -> str:
    """``extra``: variables beyond the knobs (those that load a collective selection file)."""
    env = {**environment(knobs, config), **(extra or {})}
    if fmt == "env":
        lines = [f"# commtune study {study} ({library})"]
        lines += [f"export {name}={_shell_quote(value)}" for name, value in env.items()]
        return "\n".join(lines) + "\n"
    if fmt == "mca":
        if library != "openmpi":
            raise UsageError(f"--format mca is Open MPI's file; study {study} tunes {library}")
        lines = [f"# commtune study {study}: Open MPI MCA parameters (mca-params.conf)"]
        for name, value in env.items():
            lines.append(f"{name.removeprefix('OMPI_MCA_')} = {value}")
        return "\n".join(lines) + "\n"
    if fmt == "json":
        return (
            json.dumps(
                {"study": study, "mpi": library, "params": dict(config), "env": env}, indent=2
            )
            + "\n"
        )
    raise UsageError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def _shell_quote(value: str) -> str:
    safe = all(c.isalnum() or c in "._-,/:+=" for c in value)
    return value if safe and value else "'" + value.replace("'", "'\\''") + "'"


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write {path}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".commtune-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
