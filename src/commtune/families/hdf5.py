"""HDF5 properties (alignment, sieve buffer, metadata blocks, chunk cache, collective
metadata, the transfer mode): libcommtune sets them on the program's own property lists
(``COMMTUNE_HDF5_PROPS``) and reads them back; ``--format h5tuner`` writes them, with the
MPI-IO hints, as H5Tuner's XML. Found at run time, in the program's own HDF5."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from commtune.families._family import Export, Family, Format, data

# H5Tuner's configuration file puts each hint under its layer of the I/O stack.
FILE_SYSTEM_HINTS = ("striping_factor", "striping_unit")


def render_h5tuner(export: Export) -> str:
    """H5Tuner's XML (``<Parameters>``: the HDF5 layer, MPI-IO's hints, the file system's),
    the form H5Tuner reads from ``H5TUNER_CONFIG_FILE``. HDF5 properties keep the names of
    ``COMMTUNE_HDF5_PROPS`` (one element each: ``alignment_threshold``, ``alignment``, ...)."""
    root = ET.Element("Parameters")
    root.append(ET.Comment(f" {export.header} "))
    library = ET.SubElement(root, "High_Level_IO_Library")
    for key, value in export.properties.items():
        ET.SubElement(library, key).text = value
    middleware = ET.SubElement(root, "Middleware_Layer")
    file_system = ET.SubElement(root, "Parallel_File_System")
    for key, value in export.hints.items():
        parent = file_system if key in FILE_SYSTEM_HINTS else middleware
        ET.SubElement(parent, key).text = value
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


H5TUNER = Format("h5tuner", "H5Tuner's XML (H5TUNER_CONFIG_FILE): HDF5 properties and MPI-IO "
                 "hints", render_h5tuner, ("hdf5", "romio"), in_report=False)  # fmt: skip

FAMILY = Family(
    name="hdf5",
    title="HDF5 properties",
    catalog=data("hdf5"),
    formats=(H5TUNER,),
)
