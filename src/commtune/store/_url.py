"""Storage URLs: what a user may give, what it means, and how its failures read.

Accepted URLs: ``sqlite:///FILE``, a plain file path (a SQLite file), a server URL
(``postgresql://...``, ``mysql://...``), or ``journal:///FILE``: Optuna's journal file for
clusters with a shared file system and no database server, commtune's tables then in a SQLite
file beside it (``FILE`` + :data:`SIDECAR`).
"""

from __future__ import annotations

import json
import os

import sqlalchemy as sa

from commtune.errors import UsageError
from commtune.settings import sqlite_timeout

DEFAULT_URL = "sqlite:///commtune.db"
_SERVER_SCHEMES = ("postgresql", "mysql")
SIDECAR = ".commtune.sqlite"  # commtune's tables beside a journal file


def normalize_url(url: str) -> str:
    """A SQLAlchemy URL for ``url``; UsageError if it is malformed or cannot be a storage."""
    if not url:
        raise UsageError("bad storage URL: empty")
    if "://" not in url:
        url = "sqlite:///" + os.path.abspath(url)
    scheme = url.split("://", 1)[0]
    dialect = scheme.split("+", 1)[0]
    if dialect == "journal":  # like file://: journal:///abs/path, journal://rel/path
        path = url.split("://", 1)[1]
        if not path:
            raise UsageError(f"bad storage URL {url!r}: a journal storage needs a file path")
        path = os.path.abspath(path)
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise UsageError(f"bad storage URL {url!r}: directory {parent} does not exist")
        if os.path.isdir(path):
            raise UsageError(f"bad storage URL {url!r}: {path} is a directory")
        return "journal://" + path
    if dialect == "sqlite":
        path = url.split(":///", 1)[1] if ":///" in url else ""
        if not path or path == ":memory:":
            raise UsageError(f"bad storage URL {url!r}: a SQLite storage needs a file path")
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise UsageError(f"bad storage URL {url!r}: directory {parent} does not exist")
        if os.path.isdir(path):
            raise UsageError(f"bad storage URL {url!r}: {path} is a directory")
        return "sqlite:///" + os.path.abspath(path)
    if dialect in _SERVER_SCHEMES:
        if scheme == "postgresql":  # the driver of commtune[postgres]: psycopg 3
            url = "postgresql+psycopg://" + url.split("://", 1)[1]
        try:
            sa.engine.make_url(url)
        except sa.exc.ArgumentError as exc:
            raise UsageError(f"bad storage URL {shown_url(url)!r}: {exc}") from None
        return url
    raise UsageError(
        f"bad storage URL {url!r}: use a file path, sqlite:///FILE, journal:///FILE, "
        "postgresql://... or mysql://..."
    )


def shown_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return url


def sqlite_path(url: str) -> str | None:
    return url.split(":///", 1)[1] if url.startswith("sqlite:///") else None


def journal_path(url: str) -> str | None:
    return url.split("://", 1)[1] if url.startswith("journal://") else None


def storage_failure(exc: BaseException) -> str | None:
    """What failed, in one line, if ``exc`` is the storage failing under a running command
    (a lock held too long, a server gone); None for any other exception."""
    import optuna

    if not isinstance(exc, optuna.exceptions.StorageInternalError | sa.exc.DBAPIError):
        return None
    cause: BaseException = exc
    while isinstance(cause, optuna.exceptions.StorageInternalError) and cause.__cause__:
        cause = cause.__cause__  # Optuna's message guesses; the driver's says what happened
    if isinstance(cause, sa.exc.DBAPIError) and cause.orig is not None:
        cause = cause.orig
    lines = str(cause).strip().splitlines()
    what = lines[0] if lines else type(cause).__name__
    if "database is locked" in what:
        what += f" (another process held it for over {sqlite_timeout():g} s)"
    return what


def check_journal(path: str) -> None:
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
