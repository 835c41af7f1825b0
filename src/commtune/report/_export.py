"""A configuration in the forms the libraries read: env lines and JSON (here), the formats of
the knob families it sets (a ROMIO hints file, H5Tuner's XML: ``commtune.families``), and each
vendor's own (Open MPI's ``mca-params.conf``), asked of the vendor."""

from __future__ import annotations

import json
from collections.abc import Mapping

from commtune import families
from commtune.errors import UsageError
from commtune.knobs import Knob, Value, apply
from commtune.mpi import Vendor

# The one registry of formats: the base ones here (env, json), each family's (``families``),
# each vendor's own (``MPIVendor.export_formats``, rendered by the vendor).
FORMATS = families.all_formats()


def render(
    fmt: str,
    library: str,
    knobs: list[Knob],
    config: Mapping[str, Value],
    study: str,
    extra: Mapping[str, str] | None = None,
    measured_on: str | None = None,
) -> str:
    """``extra``: variables beyond the knobs (those that load a collective selection file);
    ``measured_on``: the MPI installation the study measured (named in the file's header)."""
    vendor = Vendor(library).impl
    mine = families.formats(vendor)
    if fmt not in mine:
        if fmt not in FORMATS:
            raise UsageError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
        owner = next((v.impl for v in Vendor if fmt in v.impl.export_formats), None)
        whose = f" ({owner.title}'s file)" if owner is not None else ""
        raise UsageError(f"--format {fmt}{whose}: study {study} tunes {vendor.title}, whose "
                         f"formats are {', '.join(mine)}")  # fmt: skip
    header = f"commtune study {study}" + (
        f", measured on {measured_on}" if measured_on else f" ({library})"
    )
    applied = apply(knobs, config, vendor)
    env = {**applied.env, **(extra or {})}
    launch = vendor.launch_args(applied.launch)  # options, not variables: say how to launch
    if launch:
        header += f"; launch with: {vendor.launcher_word} {' '.join(launch)} ..."
    export = families.Export(
        study=study, library=library, header=header, params=dict(config), env=env,
        hints={key: check.value for key, check in applied.hints.items()},
        properties={key: check.value for key, check in applied.properties.items()},
        launch=tuple(launch), measured_on=measured_on,
    )  # fmt: skip
    if fmt == "env":
        return _env(export)
    if fmt == "json":
        data = {"study": study, "mpi": library, "measured_on": measured_on,
                "params": dict(config), "env": env, "launch": list(launch)}  # fmt: skip
        return json.dumps(data, indent=2) + "\n"
    family_format = families.format_named(fmt)
    if family_format is not None:
        return family_format.render(export)
    return vendor.render(fmt, env, header)


def _env(export: families.Export) -> str:
    """Shell lines: ``export NAME=value`` of every variable, with how the hints and the
    properties reach a program that does not preload libcommtune."""
    lines = [f"# {export.header}"]
    if export.hints:
        lines.append(
            "# MPI-IO hints: COMMTUNE_IO_HINTS needs libcommtune preloaded; without it, "
            "write them with --format romio-hints and export ROMIO_HINTS=FILE (ROMIO)"
        )
    if export.properties:
        lines.append(
            "# HDF5 properties: COMMTUNE_HDF5_PROPS needs libcommtune preloaded; without it, "
            "set them in the program (H5Pset_*) or use --format h5tuner with H5Tuner"
        )
    lines += [f"export {name}={_shell_quote(value)}" for name, value in export.env.items()]
    return "\n".join(lines) + "\n"


def _shell_quote(value: str) -> str:
    safe = all(c.isalnum() or c in "._-,/:+=" for c in value)
    return value if safe and value else "'" + value.replace("'", "'\\''") + "'"
