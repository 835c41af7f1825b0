"""Study storage: one database URL for Optuna's studies and commtune's own tables.

Optuna's tables hold studies and trials (ask/tell, resumable, every finished trial committed).
commtune's data lives in ``commtune_*`` tables beside them in the same database
(``store._schema``: the tables, their version and migrations); where the storage lives and
how Optuna opens it is its backend's (``store._backend``); the claims and heartbeats of
several workers on one study are in ``store._claims``. This module opens a storage and
reads and writes the platform, profile, sample and prediction tables (a row replaced is one
``_replace``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from commtune.errors import UsageError
from commtune.platform import Fingerprint
from commtune.settings import sqlite_timeout
from commtune.store._backend import backend
from commtune.store._schema import (
    create_schema,
    knob_values_table,
    models_table,
    platforms_table,
    profiles_table,
    samples_table,
    training_table,
)
from commtune.store._url import shown_url

if TYPE_CHECKING:
    import optuna


class Store:
    """An open storage. ``create=False`` refuses a storage file that does not exist yet."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.backend = backend(url)
        self.url = self.backend.url
        sqlite_timeout()  # a bad COMMTUNE_SQLITE_TIMEOUT is named before anything else
        self.backend.check(create)
        try:
            self.engine = sa.create_engine(self.backend.tables_url, **self.backend.engine_kwargs())
        except ImportError as exc:  # the database's driver is an optional extra
            dialect = self.url.split("://", 1)[0].split("+", 1)[0]
            how = (
                "pip install 'commtune[postgres]'"
                if dialect == "postgresql"
                else f"install the Python module {exc.name}"
            )
            raise UsageError(
                f"storage {shown_url(self.url)} needs the {dialect} driver ({exc.name}): {how}"
            ) from None
        self._optuna: optuna.storages.BaseStorage | None = None
        create_schema(self.engine, self.url)

    @property
    def optuna(self) -> optuna.storages.BaseStorage:
        """Optuna's storage of the studies and trials, opened once."""
        if self._optuna is None:
            import optuna

            optuna.logging.set_verbosity(optuna.logging.WARNING)
            self._optuna = self.backend.optuna()
        return self._optuna

    def _replace(self, table: sa.Table, key: Mapping[str, Any], **values: Any) -> None:
        """The row of ``table`` with these ``key`` columns, written anew (one statement).

        An upsert, not a delete and an insert: two workers writing the same row at once
        (a knob value both checked) would both delete nothing and one insert would fail.
        """
        with self.engine.begin() as conn:
            conn.execute(_upsert(self.engine.dialect.name, table, dict(key), values))

    # -- platforms ----------------------------------------------------------------------------
    def save_platform(self, fingerprint: Fingerprint) -> str:
        key = fingerprint.key
        with self.engine.begin() as conn:  # kept if a worker wrote it first
            conn.execute(
                _upsert(
                    self.engine.dialect.name,
                    platforms_table,
                    {"key": key},
                    {"data": json.dumps(fingerprint.to_json()), "created": time.time()},
                    replace=False,
                )
            )
        return key

    def platform(self, key: str) -> Fingerprint | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(platforms_table.c.data).where(platforms_table.c.key == key)
            ).first()
        return Fingerprint(**json.loads(row[0])) if row else None

    # -- knob values tested on a platform -----------------------------------------------------
    def knob_values(self, platform: str, knob: str) -> dict[Any, tuple[bool, str]]:
        """value -> (works, reason) for the values of ``knob`` tested on ``platform``."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(knob_values_table).where(
                    (knob_values_table.c.platform == platform) & (knob_values_table.c.knob == knob)
                )
            ).all()
        return {json.loads(r.value): (r.ok, r.reason) for r in rows}

    def record_knob_value(
        self, platform: str, knob: str, value: Any, ok: bool, reason: str
    ) -> None:
        self._replace(
            knob_values_table,
            {"platform": platform, "knob": knob, "value": json.dumps(value)},
            ok=ok,
            reason=reason,
            checked=time.time(),
        )

    # -- profiles of runs ---------------------------------------------------------------------
    def save_profile(self, study: str, trial: int, run: int, data: Any) -> None:
        self._replace(
            profiles_table,
            {"study": study, "trial": trial, "run": run},
            data=json.dumps(data),
            created=time.time(),
        )

    def profiles(self, study: str, trial: int | None = None) -> list[tuple[int, int, Any]]:
        """(trial, run, profile JSON) of a study's runs, in order."""
        query = sa.select(profiles_table).where(profiles_table.c.study == study)
        if trial is not None:
            query = query.where(profiles_table.c.trial == trial)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(profiles_table.c.trial, profiles_table.c.run))
            return [(r.trial, r.run, json.loads(r.data)) for r in rows]

    # -- platform samples ---------------------------------------------------------------------
    def save_sample(self, platform: str, data: Any) -> None:
        """Store (replace) the platform profile of fingerprint key ``platform``."""
        self._replace(
            samples_table, {"platform": platform}, data=json.dumps(data), created=time.time()
        )

    def sample(self, platform: str) -> Any | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(samples_table.c.data).where(samples_table.c.platform == platform)
            ).first()
        return json.loads(row[0]) if row else None

    def samples(self) -> list[Any]:
        """Every stored platform profile, newest first."""
        query = sa.select(samples_table.c.data).order_by(samples_table.c.created.desc())
        with self.engine.connect() as conn:
            return [json.loads(r[0]) for r in conn.execute(query)]

    # -- training sets and models (prediction) ------------------------------------------------
    def save_training_run(self, platform: str, point: str, config: str, data: Any) -> None:
        """One measurement of the training benchmark (committed at once: resumable)."""
        self._replace(
            training_table,
            {"platform": platform, "point": point, "config": config},
            data=json.dumps(data),
            created=time.time(),
        )

    def training_runs(self, platform: str) -> dict[tuple[str, str], Any]:
        query = sa.select(training_table).where(training_table.c.platform == platform)
        with self.engine.connect() as conn:
            return {(r.point, r.config): json.loads(r.data) for r in conn.execute(query)}

    def save_model(self, platform: str, data: Any) -> None:
        self._replace(
            models_table, {"platform": platform}, data=json.dumps(data), created=time.time()
        )

    def models(self) -> dict[str, Any]:
        """Every stored model by the platform key it was trained on."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(models_table.c.platform, models_table.c.data))
            return {r.platform: json.loads(r.data) for r in rows}


def _upsert(
    dialect: str,
    table: sa.Table,
    key: dict[str, Any],
    values: dict[str, Any],
    *,
    replace: bool = True,
) -> sa.Executable:
    """One statement inserting a row, or (``replace``) overwriting the row with its ``key``.

    Each database spells it its own way; all three commtune opens have one.
    """
    from sqlalchemy.dialects import mysql, postgresql, sqlite

    row = {**key, **values}
    if dialect == "mysql":
        mine = mysql.insert(table).values(**row)
        kept = values if replace and values else {name: mine.inserted[name] for name in key}
        return mine.on_duplicate_key_update(**kept)
    stmt = (postgresql if dialect == "postgresql" else sqlite).insert(table).values(**row)
    if replace and values:
        return stmt.on_conflict_do_update(index_elements=list(key), set_=values)
    return stmt.on_conflict_do_nothing(index_elements=list(key))
