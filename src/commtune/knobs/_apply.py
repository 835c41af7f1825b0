"""Appliers: how a configuration reaches the library, one class per way.

Each knob names its applier (``Knob.apply``, from the catalog's ``"apply"``; environment by
default). The trial layer asks :func:`apply` for what a configuration needs and never asks the
vendor itself: an :class:`Applied` holds the environment of the ranks, the variables
libcommtune writes through MPI_T, and the MPI_T variables (with the values) that prove each
knob took, read back after ``MPI_Init``.

The ways a knob can reach a library (:class:`Apply`):

- ``env``: an environment variable the library reads at ``MPI_Init`` (``OMPI_MCA_*``,
  ``MPIR_CVAR_*``, ``UCX_*``);
- ``file``: a file the library reads, named by variables (a collective selection file);
- ``mpit-init``: written by libcommtune through MPI_T before ``MPI_Init``;
- ``mpit-runtime``: written through MPI_T while the application runs (the policy engine);
- ``info``: an ``MPI_Info`` hint merged in at ``MPI_File_open`` (ROMIO, OMPIO);
- ``hdf5``: an HDF5 file-access or transfer property, set by libcommtune on a copy of the
  application's property list in ``H5Fcreate``/``H5Fopen``/``H5Dwrite`` (H5Tuner's way);
- ``launch``: an option of the launcher (``--bind-to core``), put into the user's launch line
  right after the launcher (the vendor spells it: :meth:`MPIVendor.launch_args`); its
  ``default`` value adds nothing (the launcher's own choice).

A knob marked ``binding`` (a launch option or a variable such as Intel MPI's
``I_MPI_PIN_DOMAIN``) is read back from the CPU set each rank reports in its profile.

``mpit-runtime`` is declared so the catalog and the record can name it; its applier comes with
the policy work, and until then a catalog knob naming it is refused when the catalog is loaded
(:data:`APPLIERS` has no entry for it).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from commtune.knobs._knob import Knob, KnobType, Value
from commtune.knobs._way import Apply
from commtune.libcommtune import Setting

if TYPE_CHECKING:
    from commtune.mpi import MPIVendor


@dataclass(frozen=True)
class Check:
    """An MPI_T variable to read back after ``MPI_Init``: the knob that set it (for a variable
    another knob requires, that knob) and the value libcommtune must read."""

    knob: str
    value: str


@dataclass
class Applied:
    """Everything one configuration needs: ``env`` for the ranks, ``cvar_writes`` (MPI_T name
    -> value) for libcommtune to write before ``MPI_Init``, ``checks`` (MPI_T name ->
    :class:`Check`) to read back."""

    env: dict[str, str] = field(default_factory=dict)
    cvar_writes: dict[str, str] = field(default_factory=dict)
    checks: dict[str, Check] = field(default_factory=dict)
    hints: dict[str, Check] = field(default_factory=dict)  # MPI-IO hint key -> its knob, value
    properties: dict[str, Check] = field(default_factory=dict)  # HDF5 property -> the same
    launch: dict[str, str] = field(default_factory=dict)  # launcher option -> value
    bindings: dict[str, Check] = field(default_factory=dict)  # knob -> the binding it asks

    def settings(self) -> dict[str, Check]:
        """The MPI-IO hints and HDF5 properties, which libcommtune applies and reads back."""
        return {**self.hints, **self.properties}

    def check_values(self) -> dict[str, str]:
        return {name: check.value for name, check in self.checks.items()}


class Applier(abc.ABC):
    """One way of applying a knob. ``apply`` adds what ``knob`` set to ``text`` needs to
    ``into``; it is pure (no I/O) and never sees other knobs."""

    how: ClassVar[Apply]

    @abc.abstractmethod
    def apply(
        self,
        knob: Knob,
        text: str,
        vendor: MPIVendor,
        enumerators: Sequence[str],
        into: Applied,
    ) -> None: ...

    @staticmethod
    def _check(knob: Knob, text: str, vendor: MPIVendor, enumerators: Sequence[str]) -> Check:
        categorical = knob.type is KnobType.CATEGORICAL
        return Check(knob.name, vendor.mpit_value(text, tuple(enumerators), categorical))


class EnvApplier(Applier):
    """An environment variable; checked through MPI_T where the variable is one (not UCX_*)."""

    how = Apply.ENV

    def apply(
        self,
        knob: Knob,
        text: str,
        vendor: MPIVendor,
        enumerators: Sequence[str],
        into: Applied,
    ) -> None:
        if text == UNSET:  # the library's own default, which it states as no value
            return
        into.env[knob.env] = text
        name = _mpit(knob, vendor)
        if name:
            into.checks[name] = self._check(knob, text, vendor, enumerators)


class FileApplier(Applier):
    """A file the library reads: the knob's value is its path, the vendor says which
    variables load it (Open MPI's dynamic rules, MPICH's CSEL JSON)."""

    how = Apply.FILE

    def apply(
        self,
        knob: Knob,
        text: str,
        vendor: MPIVendor,
        enumerators: Sequence[str],
        into: Applied,
    ) -> None:
        into.env.update(self.variables(vendor, text))

    @staticmethod
    def variables(vendor: MPIVendor, path: str) -> dict[str, str]:
        return vendor.selection_env(path)


class MpitInitApplier(Applier):
    """Written by libcommtune through MPI_T before ``MPI_Init`` (and again after it where
    the library did not keep it), then read back like the others."""

    how = Apply.MPIT_INIT

    def apply(
        self,
        knob: Knob,
        text: str,
        vendor: MPIVendor,
        enumerators: Sequence[str],
        into: Applied,
    ) -> None:
        name = _mpit(knob, vendor) or knob.name
        into.cvar_writes[name] = text
        into.checks[name] = self._check(knob, text, vendor, enumerators)


# The default of a variable whose library states none as a value: left unset (every knob's
# variable is removed from a run's environment first, so unset is the library's default).
UNSET = ""


# The value of a launch option that leaves the launcher's own choice.
LAUNCHER_DEFAULT = "default"


class LaunchApplier(Applier):
    """An option of the launcher (the knob's ``env`` is the option's name, ``bind-to``)."""

    how = Apply.LAUNCH

    def apply(
        self,
        knob: Knob,
        text: str,
        vendor: MPIVendor,
        enumerators: Sequence[str],
        into: Applied,
    ) -> None:
        if text != LAUNCHER_DEFAULT:
            into.launch[knob.env] = text


def _mpit(knob: Knob, vendor: MPIVendor) -> str | None:
    """The MPI_T name that reads ``knob`` back: its own where the catalog or discovery gives
    one ("": none can), else the vendor's rule (None: not an MPI_T variable)."""
    return knob.mpit if knob.mpit is not None else vendor.mpit_name(knob.env)


HINTS_VARIABLE = Setting.IO_HINTS.env  # libcommtune merges these into every MPI_File_open


class InfoApplier(Applier):
    """An MPI-IO hint (the knob's ``env`` is the hint's key): libcommtune merges every hint
    of the configuration into the info object of each ``MPI_File_open`` and reads them back
    with ``MPI_File_get_info`` (``COMMTUNE_IO_HINTS``, ``native/interposer/ct_hints.c``)."""

    how = Apply.INFO

    def apply(
        self,
        knob: Knob,
        text: str,
        vendor: MPIVendor,
        enumerators: Sequence[str],
        into: Applied,
    ) -> None:
        into.hints[knob.env] = Check(knob.name, text)
        into.env[HINTS_VARIABLE] = ";".join(f"{k}={c.value}" for k, c in into.hints.items())


PROPERTIES_VARIABLE = Setting.HDF5_PROPS.env  # libcommtune sets these on HDF5's property lists


class Hdf5Applier(Applier):
    """An HDF5 property (the knob's ``env`` is the property's key in ``COMMTUNE_HDF5_PROPS``,
    ``native/interposer/ct_hdf5.c``). A knob at its default is *not* set: the application's
    own choice (its alignment, its collective transfers) is the default being tuned against,
    and HDF5's library default would override it."""

    how = Apply.HDF5

    def apply(
        self,
        knob: Knob,
        text: str,
        vendor: MPIVendor,
        enumerators: Sequence[str],
        into: Applied,
    ) -> None:
        if text == knob.format(knob.default):
            return
        into.properties[knob.env] = Check(knob.name, text)
        into.env[PROPERTIES_VARIABLE] = ";".join(
            f"{k}={c.value}" for k, c in into.properties.items()
        )


# how -> applier; a kind without an entry is declared but not applicable yet.
APPLIERS: dict[Apply, Applier] = {
    a.how: a
    for a in (EnvApplier(), LaunchApplier(), FileApplier(), MpitInitApplier(), InfoApplier(),
              Hdf5Applier())
}  # fmt: skip


def apply(
    knobs: Sequence[Knob],
    config: Mapping[str, Value] | None,
    vendor: MPIVendor,
    enumerators: Mapping[str, Sequence[str]] | None = None,
) -> Applied:
    """What applying ``config`` (knob -> value, knobs not in it untouched) needs.

    A knob at its default is still set: that overrides a value the user may have exported,
    so the configuration measured is exactly the one recorded. The variables a knob
    ``requires`` are added when it is not at its default (and checked, owned by it).
    """
    config = config or {}
    out = Applied()
    for knob in knobs:
        if knob.name in config:
            text = knob.format(config[knob.name])
            names = (enumerators or {}).get(knob.name, ())
            APPLIERS[knob.apply].apply(knob, text, vendor, names, out)
            if knob.binding:
                out.bindings[knob.name] = Check(knob.name, text)
    for knob in knobs:
        if knob.name in config and config[knob.name] != knob.default:
            for env_name, value in knob.requires.items():
                if env_name in out.env:
                    continue
                out.env[env_name] = value
                name = vendor.mpit_name(env_name)
                if name is not None:  # read back as MPI_T gives it (an enumeration's position)
                    listed = tuple((enumerators or {}).get(env_name, ()))
                    read = vendor.mpit_value(value, listed, bool(listed))
                    out.checks.setdefault(name, Check(knob.name, read))
    return out


def selection_file_env(vendor: MPIVendor, path: str) -> dict[str, str]:
    """The variables that make the library read the collective selection file ``path``."""
    return FileApplier.variables(vendor, path)
