"""A configuration in the forms the libraries read: env lines, JSON, and each vendor's own
(Open MPI's ``mca-params.conf``), asked of the vendor."""

from __future__ import annotations

import json
from collections.abc import Mapping

from commtune.errors import UsageError
from commtune.knobs import Knob, Value, apply
from commtune.mpi import Vendor

COMMON_FORMATS = ("env", "json")
FORMATS = (*COMMON_FORMATS, *dict.fromkeys(f for v in Vendor for f in v.impl.export_formats))


def render(
    fmt: str,
    library: str,
    knobs: list[Knob],
    config: Mapping[str, Value],
    study: str,
    extra: Mapping[str, str] | None = None,
) -> str:
    """``extra``: variables beyond the knobs (those that load a collective selection file)."""
    vendor = Vendor(library).impl
    env = {**apply(knobs, config, vendor).env, **(extra or {})}
    if fmt == "env":
        lines = [f"# commtune study {study} ({library})"]
        lines += [f"export {name}={_shell_quote(value)}" for name, value in env.items()]
        return "\n".join(lines) + "\n"
    if fmt == "json":
        data = {"study": study, "mpi": library, "params": dict(config), "env": env}
        return json.dumps(data, indent=2) + "\n"
    if fmt in vendor.export_formats:
        return vendor.render(fmt, env, f"commtune study {study}")
    owner = next((v.impl for v in Vendor if fmt in v.impl.export_formats), None)
    if owner is not None:
        raise UsageError(f"--format {fmt} is {owner.title}'s file; study {study} tunes {library}")
    raise UsageError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def _shell_quote(value: str) -> str:
    safe = all(c.isalnum() or c in "._-,/:+=" for c in value)
    return value if safe and value else "'" + value.replace("'", "'\\''") + "'"
