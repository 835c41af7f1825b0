"""The ``commtune`` command line: one module per command group (``tuning``, ``knobs``,
``studies``, ``interposer``, ``platform``, ``prediction``), each with its entries of the
command table (``_app.COMMANDS``). Input is validated here, into typed objects, before
anything is written."""

from commtune.cli._app import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
