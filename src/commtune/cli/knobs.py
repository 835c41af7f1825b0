"""``commtune mpis``, ``commtune knobs`` and ``commtune cvars``: the MPI installations found,
and what each lets commtune tune."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from commtune.cli._common import Command, add_json, add_mpi, print_json
from commtune.errors import UsageError
from commtune.knobs import PRESETS
from commtune.mpi import SEARCHED, installation_of, resolve_command

if TYPE_CHECKING:
    from commtune.mpi import Installation


def _add_knobs(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    p.add_argument("--preset", choices=PRESETS)
    p.add_argument(
        "--all",
        action="store_true",
        help="every variable the library has (each can be named with --knob), not the catalog",
    )
    p.add_argument("--filter", metavar="REGEX", help="with --all: only names matching REGEX")
    add_json(p)


def _add_cvars(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    p.add_argument("--pvars", action="store_true", help="performance variables instead")
    p.add_argument("--filter", metavar="REGEX", help="only names matching REGEX")
    add_json(p)


def _add_mpis(p: argparse.ArgumentParser) -> None:
    add_json(p)


def cmd_mpis(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.errors import UsageError
    from commtune.mpi import default_installation, find_installations
    from commtune.report import UI, installations_table

    found = find_installations()
    try:
        default: str | None = default_installation().launcher
    except UsageError:
        default = None
    rows = [
        {
            **i.to_json(),
            "title": i.vendor.title,
            "device_label": i.impl.device_label(i.device),
            "default": i.launcher == default,
        }
        for i in found
    ]
    ui = UI(json_mode=args.json)
    if not rows:
        ui.warn(f"no MPI installation found ({', '.join(SEARCHED)})")
    else:
        ui.print(installations_table(rows, f"{len(rows)} MPI installation(s)"))
    if args.json:
        print_json({"installations": rows})
    return 0


def cmd_knobs(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.knobs import installed_knobs, with_layer
    from commtune.report import UI, knobs_table
    from commtune.service import read_layer

    inst = installation_of(args.mpi)
    if args.all:
        return _all_variables(inst, args)
    if args.filter:
        raise UsageError("--filter goes with --all")
    ui = UI(json_mode=args.json)
    layer = None
    if command:  # the knobs as a run of this line reads them: the layer it selects
        inst = resolve_command(command, args.mpi)
        layer = read_layer(inst, command)
        ui.info(f"the run selects {layer.describe()}" if layer else
                f"{inst.describe()} does not say which layers a run selects")  # fmt: skip
    statuses = list(with_layer(installed_knobs(inst), layer, inst).values())
    if args.preset:
        statuses = [s for s in statuses if args.preset in s.knob.presets]
    ui.print(knobs_table(statuses, f"knobs of {inst.describe()}", inst.impl.knob_layer))
    if args.json:
        out = [
            {
                "name": s.knob.name,
                "type": s.knob.type.value,
                "domain": s.knob.domain(),
                "default": s.knob.default,
                "step": s.knob.step,
                "env": s.knob.env,
                "apply": s.knob.apply.value,
                "presets": list(s.knob.presets),
                "layer": inst.impl.knob_layer(s.knob.name),
                "available": s.available,
                "reason": s.reason,
                "description": s.knob.description,
            }
            for s in statuses
        ]
        print_json({"mpi": inst.vendor.value, "knobs": out,
                    "layer": layer.to_json() if layer else None})  # fmt: skip
    return 0


def _all_variables(inst: Installation, args: argparse.Namespace) -> int:
    from commtune import families
    from commtune.knobs import discover, load_catalog
    from commtune.report import UI, library_variables_table

    try:
        pattern = re.compile(args.filter or "")
    except re.error as exc:
        raise UsageError(f"--filter {args.filter!r}: {exc}") from None
    catalog = load_catalog(inst.vendor.value)
    rows = [
        {
            "name": v.name,
            "type": "enum" if v.enumerators and v.kind != "bool" else (v.kind or "unknown"),
            "default": v.value,
            "enumerators": list(v.enumerators),
            "tunable": v.settable,
            "catalog": v.name in catalog,
            "env": families.env_name(inst.impl, v.name),
        }
        for v in sorted(discover(inst).values(), key=lambda v: v.name)
        if pattern.search(v.name)
    ]
    ui = UI(json_mode=args.json)
    ui.print(library_variables_table(rows, f"{len(rows)} variables of {inst.describe()}"))
    if args.json:
        print_json({"mpi": inst.vendor.value, "installation": inst.to_json(), "variables": rows})
    return 0


def cmd_cvars(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.knobs import list_mpit
    from commtune.report import UI, mpit_table

    pattern = None
    if args.filter:
        try:
            pattern = re.compile(args.filter)
        except re.error as exc:
            raise UsageError(f"--filter: bad regular expression: {exc}") from None
    inst = installation_of(args.mpi)
    rows = list_mpit(inst, performance=args.pvars)
    if pattern is not None:
        rows = [r for r in rows if pattern.search(str(r["name"]))]
    ui = UI(json_mode=args.json)
    ui.print(mpit_table(rows, args.pvars))
    ui.info(f"{len(rows)} variables of {inst.describe()}")
    if args.json:
        print_json({"mpi": inst.vendor.value, "pvars" if args.pvars else "cvars": rows})
    return 0


COMMANDS = [
    Command("mpis", "list the MPI installations found", _add_mpis, cmd_mpis),
    Command(
        "knobs",
        "list the knobs of an MPI library (after '--': as a run of that line reads them)",
        _add_knobs,
        cmd_knobs,
        takes_command=True,
    ),
    Command("cvars", "list the MPI_T control (or performance) variables", _add_cvars, cmd_cvars),
]
