"""The command table, the parser built from it, and the one dispatch: a UsageError anywhere
becomes one line on stderr and exit status 2 (a RunFailed: 3), and, with ``--json``, a JSON
line on stdout too."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence

from commtune import __version__
from commtune.cli import (
    bed,
    interposer,
    knobs,
    platform,
    policy,
    prediction,
    racing,
    studies,
    tuning,
)
from commtune.cli._common import Command, Parser
from commtune.errors import RunFailed, Stopped, UsageError

# Every command, in the order ``commtune --help`` lists them; a group adds its own.
COMMANDS: tuple[Command, ...] = (
    *tuning.COMMANDS,
    *racing.COMMANDS,
    *knobs.COMMANDS,
    *studies.COMMANDS,
    *interposer.COMMANDS,
    *policy.COMMANDS,
    *platform.COMMANDS,
    *bed.COMMANDS,
    *prediction.COMMANDS,
)


def build_parser() -> Parser:
    parser = Parser(prog="commtune", description="Autotuner for MPI run-time parameters.")
    parser.add_argument("--version", action="version", version=f"commtune {__version__}")
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add_arguments(sub.add_parser(command.name, help=command.help))
    return parser


def split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """commtune's own arguments, and the user's command after ``--`` (None: no ``--``)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, None


def _stop(signum: int, frame: object) -> None:
    raise Stopped(signum)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, user_command = split_command(argv)
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        # SIGTERM and SIGHUP stop commtune as Ctrl-C does: the running trial's processes
        # are killed, the trial is recorded as interrupted, finished ones are kept.
        handlers = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    args: argparse.Namespace | None = None
    try:
        args = build_parser().parse_args(own)
        command = next(c for c in COMMANDS if c.name == args.cmd)
        if user_command is not None and not command.takes_command:
            raise UsageError(f"commtune {args.cmd} takes no command after '--'")
        return command.run(args, user_command)
    except (UsageError, RunFailed) as exc:
        status = 3 if isinstance(exc, RunFailed) else 2
        print(f"commtune: error: {exc}", file=sys.stderr)
        if getattr(args, "json", False):  # --json: every answer ends with its JSON line
            print(json.dumps({"error": str(exc), "status": status}), flush=True)
        return status
    except KeyboardInterrupt:
        print(
            "commtune: interrupted; finished trials are saved (re-run to resume)", file=sys.stderr
        )
        return 130
    except Stopped as stop:
        name = signal.Signals(stop.signum).name
        print(
            f"commtune: stopped by {name}; finished trials are saved (re-run to resume)",
            file=sys.stderr,
        )
        return 128 + stop.signum
    except Exception as exc:
        from commtune.store import storage_failure  # SQLAlchemy: 0.25 s of --help otherwise

        what = storage_failure(exc)
        if what is None:  # a bug: its traceback is what a report needs
            raise
        print(f"commtune: error: storage failed: {what}; finished trials are saved",
              file=sys.stderr)  # fmt: skip
        return 2
    finally:
        for s, previous in handlers.items():
            signal.signal(s, previous)
