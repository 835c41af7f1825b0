"""What a family of knobs declares, once: the contract every family module fills.

A *family* is a set of variables that is not one library's own: a layer the library runs over
(UCX, libfabric), an interface several libraries read (MPI-IO hints, HDF5 properties), or a
component family one library keeps apart (OMPIO). Its module (``families/<name>.py``) owns:

- its catalog data (``families/data/<name>.json``, the knob entries the vendor catalogs take);
- the prefixes of its environment variables (what a study records of the user's environment);
- where an installation runs over it (``device``: a word of ``Installation.device``);
- its discovery (``discover``: the variables its own tool lists) and the tools it reads;
- the export formats that carry its settings.

A vendor lists the families it reads (``MPIVendor.families``); everything else (catalog,
discovery, recorded environment, export) asks the registry (``families/__init__.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from commtune.mpi import Installation, Variable


@dataclass(frozen=True)
class Export:
    """What a format writes: one accepted configuration, as the appliers apply it."""

    study: str
    library: str
    header: str  # the file's first comment (the study, where it was measured, how to launch)
    params: Mapping[str, Any]  # knob -> value
    env: Mapping[str, str]  # every variable the configuration sets
    hints: Mapping[str, str]  # MPI-IO hint -> value
    properties: Mapping[str, str]  # HDF5 property -> value
    launch: tuple[str, ...]  # launcher options
    measured_on: str | None


@dataclass(frozen=True)
class Format:
    """An export format: its name (``--format``), what it is, and how it renders. Offered to
    a vendor that reads one of ``families`` (empty: to every vendor, ``MPIVendor.base_formats``
    decides which of these)."""

    name: str
    what: str
    render: Callable[[Export], str]
    families: tuple[str, ...] = ()
    in_report: bool = True  # shown in a study's report (False: it repeats what another shows)


def no_variables(installation: Installation) -> dict[str, Variable]:
    return {}


def no_tools(installation: Installation) -> list[str]:
    return []


@dataclass(frozen=True)
class Family:
    """One family of knobs (see the module docstring). ``env_prefix``: the prefix its
    catalog's names take to be environment variables (None: the vendor's own, for a family
    of the library's own variables)."""

    name: str
    title: str
    catalog: Traversable | Path
    prefixes: tuple[str, ...] = ()
    env_prefix: str | None = ""
    device: str | None = None
    discover: Callable[[Installation], dict[str, Variable]] = no_variables
    tools: Callable[[Installation], list[str]] = no_tools
    formats: tuple[Format, ...] = ()

    def entries(self) -> list[dict[str, Any]]:
        """Its catalog's knob entries (each as a vendor catalog holds one)."""
        return list(json.loads(self.catalog.read_text())["knobs"])

    def runs_over(self, installation: Installation) -> bool:
        """Whether ``installation`` runs over this family's layer (no layer: always)."""
        return self.device is None or self.device in installation.device


def data(name: str) -> Traversable:
    """A built-in family's catalog file."""
    return resources.files("commtune.families").joinpath("data", f"{name}.json")


def candidates(installation: Installation, names: tuple[str, ...]) -> list[str]:
    """Where a layer's tool may be: ``names`` in the installation's ``bin/``, then the last
    name on PATH; those that exist."""
    own = [os.path.join(installation.prefix, "bin", name) for name in names]
    found = [*own, shutil.which(os.path.basename(names[-1]))]
    return [tool for tool in found if tool and os.path.exists(tool)]


def tool_output(installation: Installation, names: tuple[str, ...], args: list[str]) -> str:
    """stdout of the tool of a layer the library runs over (UCX, libfabric): the first of
    ``names`` in the installation's ``bin/``, else the last name on PATH; "" if none runs."""
    for tool in candidates(installation, names):
        done = subprocess.run([tool, *args], capture_output=True, encoding="utf-8",
                              errors="replace", check=False, timeout=60,
                              env=installation.tool_env())  # fmt: skip
        if done.returncode == 0:
            return done.stdout
    return ""
