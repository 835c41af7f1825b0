"""A configuration in the forms the libraries read: env lines, JSON, a ROMIO hints file (the
file ``ROMIO_HINTS`` names: one ``key value`` per line), H5Tuner's XML configuration, and each
vendor's own (Open MPI's ``mca-params.conf``), asked of the vendor."""

from __future__ import annotations

import json
from collections.abc import Mapping

from commtune.errors import UsageError
from commtune.knobs import Knob, Value, apply
from commtune.mpi import Vendor

COMMON_FORMATS = ("env", "json", "romio-hints", "h5tuner")
# H5Tuner's configuration file puts each hint under its layer of the I/O stack.
FILE_SYSTEM_HINTS = ("striping_factor", "striping_unit")
FORMATS = (*COMMON_FORMATS, *dict.fromkeys(f for v in Vendor for f in v.impl.export_formats))


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
    if fmt not in vendor.formats:
        owner = next((v.impl for v in Vendor if fmt in v.impl.export_formats), None)
        if owner is None and fmt not in COMMON_FORMATS:
            raise UsageError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
        whose = f" ({owner.title}'s file)" if owner is not None else ""
        raise UsageError(f"--format {fmt}{whose}: study {study} tunes {vendor.title}, whose "
                         f"formats are {', '.join(vendor.formats)}")  # fmt: skip
    header = f"commtune study {study}" + (
        f", measured on {measured_on}" if measured_on else f" ({library})"
    )
    applied = apply(knobs, config, vendor)
    env = {**applied.env, **(extra or {})}
    launch = vendor.launch_args(applied.launch)  # options, not variables: say how to launch
    if launch:
        header += f"; launch with: {vendor.launcher_word} {' '.join(launch)} ..."
    hints = {key: check.value for key, check in applied.hints.items()}
    properties = {key: check.value for key, check in applied.properties.items()}
    if fmt == "h5tuner":
        return _h5tuner(hints, properties, header)
    if fmt == "romio-hints":
        lines = [f"# {header}: export ROMIO_HINTS=<this file>"]
        return "\n".join([*lines, *(f"{k} {v}" for k, v in hints.items())]) + "\n"
    if fmt == "env":
        lines = [f"# {header}"]
        if hints:
            lines.append(
                "# MPI-IO hints: COMMTUNE_IO_HINTS needs libcommtune preloaded; without it, "
                "write them with --format romio-hints and export ROMIO_HINTS=FILE (ROMIO)"
            )
        if properties:
            lines.append(
                "# HDF5 properties: COMMTUNE_HDF5_PROPS needs libcommtune preloaded; without it, "
                "set them in the program (H5Pset_*) or use --format h5tuner with H5Tuner"
            )
        lines += [f"export {name}={_shell_quote(value)}" for name, value in env.items()]
        return "\n".join(lines) + "\n"
    if fmt == "json":
        data = {"study": study, "mpi": library, "measured_on": measured_on,
                "params": dict(config), "env": env, "launch": launch}  # fmt: skip
        return json.dumps(data, indent=2) + "\n"
    return vendor.render(fmt, env, header)


def _h5tuner(hints: Mapping[str, str], properties: Mapping[str, str], header: str) -> str:
    """H5Tuner's XML (``<Parameters>``: the HDF5 layer, MPI-IO's hints, the file system's),
    the form H5Tuner reads from ``H5TUNER_CONFIG_FILE``. HDF5 properties keep the names of
    ``COMMTUNE_HDF5_PROPS`` (one element each: ``alignment_threshold``, ``alignment``, ...)."""
    import xml.etree.ElementTree as ET

    root = ET.Element("Parameters")
    root.append(ET.Comment(f" {header} "))
    library = ET.SubElement(root, "High_Level_IO_Library")
    for key, value in properties.items():
        ET.SubElement(library, key).text = value
    middleware = ET.SubElement(root, "Middleware_Layer")
    file_system = ET.SubElement(root, "Parallel_File_System")
    for key, value in hints.items():
        parent = file_system if key in FILE_SYSTEM_HINTS else middleware
        ET.SubElement(parent, key).text = value
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def _shell_quote(value: str) -> str:
    safe = all(c.isalnum() or c in "._-,/:+=" for c in value)
    return value if safe and value else "'" + value.replace("'", "'\\''") + "'"
