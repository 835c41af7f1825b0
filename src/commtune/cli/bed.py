"""``commtune bed``: the test bed (``commtune.testbed``) as a command. ``up`` brings N nodes
of network namespaces up to stay, ``exec`` runs a command in the first node with the site
environment of every MPI installation found (so a plain ``mpirun -n 4 ./app`` spreads over
the nodes, as in an allocation), ``status`` says what is up and running, ``down`` removes
it all. Everything but ``status`` needs root."""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from commtune.cli._common import Command, Parser, add_json, need_command, positive, print_json
from commtune.errors import UsageError

DEFAULT = "ctbed"  # the bed's name when none is given
NAME = re.compile(r"[a-z][a-z0-9]{1,8}")  # its nodes' links are named after it (15 bytes)


def _name(text: str) -> str:
    if not NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r}: a bed's name is 2-9 of a-z and 0-9")
    return text


def _rates(text: str) -> list[float | None]:
    """Mbit/s per rail, ``-`` for an unshaped one: ``400,-,100``."""
    out: list[float | None] = []
    for word in text.split(","):
        if word.strip() == "-":
            out.append(None)
            continue
        try:
            rate = float(word)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{word!r} is not a rate in Mbit/s") from None
        if rate <= 0:
            raise argparse.ArgumentTypeError(f"{word!r}: a rate must be positive")
        out.append(rate)
    return out


def _add(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="bed_cmd", required=True, parser_class=Parser)
    up = sub.add_parser("up", help="bring a bed of N nodes up (root); it stays until 'down'")
    up.add_argument("--nodes", type=positive(int), default=4, help="nodes (1-8, default 4)")
    up.add_argument("--rails", type=positive(int), default=1, help="rails a node (1-4)")
    up.add_argument("--rates", type=_rates, help="Mbit/s per rail, '-' unshaped (e.g. 400,100)")
    up.add_argument("--name", type=_name, default=DEFAULT, help=f"default {DEFAULT}")
    add_json(up)
    run = sub.add_parser("exec", help="run '-- CMD' in the bed's first node, as on a cluster")
    run.add_argument("name", nargs="?", type=_name, default=DEFAULT, help=f"default {DEFAULT}")
    run.add_argument(
        "--mpi",
        action="append",
        metavar="MPI",
        help="the installation whose site environment to set (repeatable; default: all found)",
    )
    status = sub.add_parser("status", help="the beds that are up, and what runs in them")
    add_json(status)
    down = sub.add_parser("down", help="remove a bed: namespaces, links, processes, hosts")
    down.add_argument("name", nargs="?", type=_name, default=DEFAULT, help=f"default {DEFAULT}")
    down.add_argument("--all", action="store_true", help="every bed that is up")


def cmd_bed(args: argparse.Namespace, command: list[str] | None) -> int:
    handler = {"up": _up, "exec": _exec, "status": _status, "down": _down}[args.bed_cmd]
    if command is not None and args.bed_cmd != "exec":
        raise UsageError(f"commtune bed {args.bed_cmd} takes no command after '--'")
    return handler(args, command)


def _up(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.testbed import Cluster

    rails = len(args.rates) if args.rates else args.rails
    bed = Cluster(args.nodes, rails, args.rates, name=args.name).up(keep=True)
    if args.json:
        print_json(bed.to_json())
        return 0
    print(f"{bed.describe()} is up: {', '.join(bed.hostnames)}")
    print(f"  commtune bed exec {bed.name} -- mpirun -n {bed.nodes} ./app   (one rank a node)")
    print(f"  commtune bed down {bed.name}")
    return 0


def _exec(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.mpi import Lack, find_installations, installation_of
    from commtune.testbed import Cluster, available

    argv = need_command(command, "to run in the bed's first node")
    ok, why = available()
    if not ok:
        raise UsageError(why)
    bed = Cluster.load(args.name)
    installations = (
        [installation_of(spec) for spec in args.mpi]
        if args.mpi
        else [i for i in find_installations() if Lack.NODES not in i.impl.lacks]
    )
    env = dict(os.environ)
    if os.geteuid() == 0:  # the bed needs root: a plain 'mpirun' of Open MPI then too
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for inst in installations:  # their variables do not overlap
        env.update(bed.site_env(inst))
    return bed.execute(argv, env)


def _status(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.testbed import Cluster, beds, running

    rows: list[dict[str, Any]] = []
    for name in beds():
        try:
            data = Cluster.load(name).to_json()
        except UsageError:  # coming up, or a bed of an older commtune
            data = {"name": name}
        rows.append({**data, "processes": len(running(name)) if os.geteuid() == 0 else None})
    if args.json:
        print_json({"beds": rows})
        return 0
    if not rows:
        print("no test bed is up (commtune bed up)")
    for row in rows:
        hosts = ", ".join(m[0] for m in row.get("members", []))
        kept = "stays until 'commtune bed down'" if row.get("kept") else "owned by a process"
        procs = row["processes"]
        inside = "" if procs is None else f"; {procs} process(es) running in its nodes"
        print(f"{row['name']}: {row.get('description', '?')}: {hosts} ({kept}{inside})")
    return 0


def _down(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.testbed import available, beds, teardown

    ok, why = available()
    if not ok:
        raise UsageError(why)
    names = beds() if args.all else [args.name]
    for name in names:
        if name not in beds():
            raise UsageError(f"no test bed {name} is up (commtune bed status)")
        teardown(name)
        print(f"test bed {name} is down")
    return 0


COMMANDS = [
    Command(
        "bed",
        "a test bed of N nodes on this machine (root): up, exec, status, down",
        _add,
        cmd_bed,
        takes_command=True,
    ),
]
