"""MPI-IO hints (ROMIO's, which Open MPI's ROMIO component, MPICH and Intel MPI read): the
hint keys of ``MPI_File_open``'s info object. libcommtune merges them into every open and
reads them back (``COMMTUNE_IO_HINTS``); without it, ROMIO reads the file ``ROMIO_HINTS``
names, which ``--format romio-hints`` writes. Found at run time, in the program's own MPI-IO:
no tool lists them."""

from __future__ import annotations

from commtune.families._family import Export, Family, Format, data


def render_hints(export: Export) -> str:
    """ROMIO's hints file: one ``key value`` per line."""
    lines = [f"# {export.header}: export ROMIO_HINTS=<this file>"]
    return "\n".join([*lines, *(f"{k} {v}" for k, v in export.hints.items())]) + "\n"


FAMILY = Family(
    name="romio",
    title="MPI-IO hints (ROMIO)",
    catalog=data("romio"),
    formats=(Format("romio-hints", "ROMIO's hints file (ROMIO_HINTS)", render_hints, ("romio",)),),
)
