"""Storage URLs as the user reads them: the default, a URL without its password, and a
storage's failure in one line. What each URL means is its backend's (``store._backend``):
``sqlite:///FILE`` or a plain file path (a SQLite file), a server URL (``postgresql://...``,
``mysql://...``), or ``journal:///FILE`` (Optuna's journal file).
"""

from __future__ import annotations

import sqlalchemy as sa

from commtune.settings import sqlite_timeout

DEFAULT_URL = "sqlite:///commtune.db"


def shown_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return url


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
