"""What the working layers tell the user, as a protocol: messages and progress bars.

``tune``, ``sample``, ``predict``, ``rails`` and ``race`` take a :class:`Progress`; the
terminal implementation (rich) is ``commtune.report.UI``, which only the command line creates.
:class:`Silent` drops everything (benchmarks, tests, library use).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol


class Bar(Protocol):
    """One progress bar. ``advance`` moves it ``steps`` and optionally sets the status text;
    ``grow`` sets the total once it is known."""

    def advance(self, steps: int = 1, status: str | None = None) -> None: ...

    def status(self, status: str) -> None: ...

    def grow(self, total: int) -> None: ...


class Progress(Protocol):
    """Where messages and bars go. Called from the tuner's one thread; an implementation may
    draw from a thread of its own (rich's live display does), but must not call back into
    the caller's code from it."""

    def info(self, message: str) -> None: ...

    def warn(self, message: str) -> None: ...

    def progress(self, title: str, total: int) -> AbstractContextManager[Bar]: ...


class NullBar:
    """A :class:`Bar` that shows nothing."""

    def advance(self, steps: int = 1, status: str | None = None) -> None:
        pass

    def status(self, status: str) -> None:
        pass

    def grow(self, total: int) -> None:
        pass


class Silent:
    """A :class:`Progress` that shows nothing (warnings included)."""

    def info(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        pass

    @contextmanager
    def progress(self, title: str, total: int) -> Iterator[Bar]:
        yield NullBar()
