"""Where a storage lives: one :class:`Backend` per kind of URL, as Optuna keeps one
``BaseStorage`` per kind of storage.

Contract: a backend is made from a URL its class's :meth:`Backend.normalize` accepted (the
one form of that URL; a UsageError names what is wrong with any other), does no I/O when made,
and answers: the file it lives in (``path``; None for a server), whether it exists yet
(:meth:`exists`, which creates nothing), whether it may be opened (:meth:`check`: a missing
file when ``create`` is False, a file of the wrong kind, a directory that cannot be written),
the SQLAlchemy URL of commtune's own tables (``tables_url``) with the engine's options, and
Optuna's storage of studies and trials (:meth:`optuna`, made once by the ``Store``).

Add a kind: a subclass with its ``schemes`` and its entry in :data:`BACKENDS`; the storage
contract suite (``tests/test_store.py``, ``tests/test_workers.py``) runs every backend.
"""

from __future__ import annotations

import abc
import json
import os
import time
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa

from commtune.errors import UsageError
from commtune.settings import sqlite_timeout
from commtune.store._schema import CREATE_ATTEMPTS, racing
from commtune.store._url import shown_url

if TYPE_CHECKING:
    import optuna

SIDECAR = ".commtune.sqlite"  # commtune's tables beside a journal file


class Backend(abc.ABC):
    """One storage's place (see the module docstring for the contract)."""

    schemes: ClassVar[tuple[str, ...]]  # the URL schemes (dialects) it takes

    def __init__(self, url: str) -> None:
        self.url = url  # as normalize() returned it

    @classmethod
    @abc.abstractmethod
    def normalize(cls, url: str) -> str:
        """The one form of ``url`` (whose dialect is one of ``schemes``), or UsageError."""

    @property
    def path(self) -> str | None:
        """The file the storage lives in; None: a server's."""
        return None

    def exists(self) -> bool:
        """The storage is there already (a file that exists, or a server's)."""
        return self.path is None or os.path.exists(self.path)

    def check(self, create: bool) -> None:
        """UsageError if the storage cannot be opened (``create`` False: it must exist)."""
        if not create and not self.exists():
            raise UsageError(f"no storage at {self.path} (run 'commtune tune' first)")

    @property
    def tables_url(self) -> str:
        """Where commtune's own tables are (the same database, or a file beside it)."""
        return self.url

    def engine_kwargs(self) -> dict[str, Any]:
        """Options of the SQLAlchemy engine of ``tables_url`` (and of Optuna's)."""
        return {}

    @abc.abstractmethod
    def optuna(self) -> optuna.storages.BaseStorage:
        """Optuna's storage of the studies and trials (UsageError if it cannot be opened)."""


def _file_path(url: str, kind: str) -> str:
    """The absolute file path of a file storage's URL, checked: its directory exists and it
    is not one."""
    path = url.split("://", 1)[1]
    if kind == "SQLite":
        path = url.split(":///", 1)[1] if ":///" in url else ""
    if not path or path == ":memory:":
        raise UsageError(f"bad storage URL {url!r}: a {kind} storage needs a file path")
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise UsageError(f"bad storage URL {url!r}: directory {parent} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"bad storage URL {url!r}: {path} is a directory")
    return path


def _check_sqlite_file(path: str) -> None:
    if os.path.exists(path):
        with open(path, "rb") as f:
            head = f.read(16)
        if head and not head.startswith(b"SQLite format 3"):
            raise UsageError(f"bad storage: {path} is not a SQLite database")


class _Database(Backend):
    """A database SQLAlchemy opens: Optuna's RDB storage in it, commtune's tables beside."""

    def optuna(self) -> optuna.storages.BaseStorage:
        import optuna

        for attempt in range(CREATE_ATTEMPTS):
            try:
                return optuna.storages.RDBStorage(self.url, engine_kwargs=self.engine_kwargs())
            except Exception as exc:  # Optuna raises several types for a broken database
                if attempt + 1 < CREATE_ATTEMPTS and racing(exc):
                    time.sleep(0.2 * (attempt + 1))
                    continue
                reason = str(exc).strip().splitlines()
                raise UsageError(
                    f"cannot open storage {shown_url(self.url)}: {reason[0] if reason else exc}"
                ) from None
        raise AssertionError("unreachable")


class SQLiteBackend(_Database):
    """A SQLite file (a plain path means one): nothing to start."""

    schemes = ("sqlite",)

    @classmethod
    def normalize(cls, url: str) -> str:
        return "sqlite:///" + _file_path(url, "SQLite")

    @property
    def path(self) -> str:
        return self.url.split(":///", 1)[1]

    def check(self, create: bool) -> None:
        super().check(create)
        _check_sqlite_file(self.path)

    def engine_kwargs(self) -> dict[str, Any]:
        # several workers write one SQLite file: wait for the lock, do not fail
        return {"connect_args": {"timeout": sqlite_timeout()}}


class ServerBackend(_Database):
    """A database server (PostgreSQL through psycopg 3, MySQL)."""

    schemes = ("postgresql", "mysql")

    @classmethod
    def normalize(cls, url: str) -> str:
        if url.split("://", 1)[0] == "postgresql":  # the driver of commtune[postgres]
            url = "postgresql+psycopg://" + url.split("://", 1)[1]
        try:
            sa.engine.make_url(url)
        except sa.exc.ArgumentError as exc:
            raise UsageError(f"bad storage URL {shown_url(url)!r}: {exc}") from None
        return url

    def engine_kwargs(self) -> dict[str, Any]:
        # A server drops connections idle for a trial's length (its idle timeout, a
        # firewall, a restart): each is tested when taken from the pool, and reopened.
        return {"pool_pre_ping": True}


class JournalBackend(Backend):
    """Optuna's journal file, for clusters with a shared file system and no database server;
    commtune's tables in a SQLite file beside it (``FILE`` + :data:`SIDECAR`)."""

    schemes = ("journal",)

    @classmethod
    def normalize(cls, url: str) -> str:  # like file://: journal:///abs, journal://rel
        if not url.split("://", 1)[1]:
            raise UsageError(f"bad storage URL {url!r}: a journal storage needs a file path")
        return "journal://" + _file_path(url, "journal")

    @property
    def path(self) -> str:
        return self.url.split("://", 1)[1]

    @property
    def tables_url(self) -> str:
        return "sqlite:///" + self.path + SIDECAR

    def check(self, create: bool) -> None:
        super().check(create)
        folder = os.path.dirname(self.path)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(
                f"cannot open storage {self.url}: directory {folder} is not writable (the "
                "journal's lock and commtune's tables are written beside it)"
            )
        _check_journal(self.path)
        _check_sqlite_file(self.path + SIDECAR)

    def engine_kwargs(self) -> dict[str, Any]:
        return {"connect_args": {"timeout": sqlite_timeout()}}

    def optuna(self) -> optuna.storages.BaseStorage:
        import optuna
        from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

        try:
            # the open lock (O_EXCL) works on NFS, unlike a symlink on some mounts
            lock = JournalFileOpenLock(self.path)
            return optuna.storages.JournalStorage(JournalFileBackend(self.path, lock_obj=lock))
        except Exception as exc:  # a file that is not a journal fails in many ways
            raise UsageError(f"cannot open storage {self.url}: {exc}") from None


BACKENDS: tuple[type[Backend], ...] = (SQLiteBackend, ServerBackend, JournalBackend)


def _backend_class(url: str) -> tuple[type[Backend], str]:
    if not url:
        raise UsageError("bad storage URL: empty")
    if "://" not in url:
        url = "sqlite:///" + os.path.abspath(url)
    dialect = url.split("://", 1)[0].split("+", 1)[0]
    for cls in BACKENDS:
        if dialect in cls.schemes:
            return cls, url
    raise UsageError(
        f"bad storage URL {url!r}: use a file path, sqlite:///FILE, journal:///FILE, "
        "postgresql://... or mysql://..."
    )


def normalize_url(url: str) -> str:
    """The one form of a storage URL; UsageError if it is malformed or cannot be a storage."""
    cls, url = _backend_class(url)
    return cls.normalize(url)


def backend(url: str) -> Backend:
    """The backend of a storage URL (any accepted form), checked as :func:`normalize_url`."""
    cls, url = _backend_class(url)
    return cls(cls.normalize(url))


def _check_journal(path: str) -> None:
    """A file that exists is an Optuna journal: JSON lines with an ``op_code`` (Optuna skips
    lines it cannot read, so anything else would look like an empty storage)."""
    if not os.path.exists(path):
        return
    with open(path, "rb") as f:
        first = f.readline(1 << 20)
    if not first:
        return
    try:
        entry = json.loads(first)
    except ValueError:
        entry = None
    if not isinstance(entry, dict) or "op_code" not in entry:
        raise UsageError(f"bad storage: {path} is not an Optuna journal file")
