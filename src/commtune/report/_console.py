"""The terminal: messages, progress bars and tables, on stdout or (with --json) on stderr.

The progress bar refreshes only when told (no refresh thread): trials fork launchers, and
forking while another thread holds a lock is what ``preexec_fn`` must avoid.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column


class Bar:
    def __init__(self, progress: Progress | None, task: Any) -> None:
        self._progress = progress
        self._task = task

    def advance(self, steps: int = 1, status: str | None = None) -> None:
        if self._progress is None:
            return
        if status is not None:
            self._progress.update(self._task, status=status)
        self._progress.advance(self._task, steps)
        self._progress.refresh()

    def status(self, status: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, status=status)
            self._progress.refresh()

    def grow(self, total: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, total=total)


class UI:
    """Where commtune talks to the user. ``json_mode`` moves everything human to stderr."""

    def __init__(self, json_mode: bool = False, quiet: bool = False) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self.console = Console(stderr=json_mode, highlight=False)

    def info(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message)

    def command(self, line: str) -> None:
        """A command to copy: never broken by the console's width, no markup read in it."""
        if not self.quiet:
            self.console.print(line, soft_wrap=True, markup=False)

    def warn(self, message: str) -> None:
        self.console.print(f"[yellow]warning:[/yellow] {message}")

    def print(self, renderable: Any) -> None:
        if not self.quiet:
            self.console.print(renderable)

    @contextmanager
    def progress(self, title: str, total: int) -> Iterator[Bar]:
        if self.quiet:
            yield Bar(None, None)
            return
        progress = Progress(
            TextColumn("[bold]{task.description}", table_column=Column(no_wrap=True)),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            # the status is cut, not wrapped: the bar keeps its line at any width
            TextColumn(
                "{task.fields[status]}",
                table_column=Column(no_wrap=True, overflow="ellipsis", max_width=36),
            ),
            console=self.console,
            auto_refresh=False,
            transient=False,
        )
        with progress:
            task = progress.add_task(title, total=total, status="")
            yield Bar(progress, task)
            progress.refresh()
