"""Study storage: one database URL for Optuna's studies and commtune's own tables.

Optuna's tables hold studies and trials (ask/tell, resumable, every finished trial committed).
commtune's data lives in ``commtune_*`` tables beside them in the same database
(``store._schema``: the tables, their version and migrations); the URL forms are in
``store._url``; the claims and heartbeats of several workers on one study in
``store._claims``. This module opens a storage and reads and writes the platform,
profile, sample and prediction tables.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from commtune.errors import UsageError
from commtune.platform import Fingerprint
from commtune.settings import sqlite_timeout
from commtune.store._schema import (
    CREATE_ATTEMPTS,
    create_schema,
    knob_values_table,
    models_table,
    platforms_table,
    profiles_table,
    racing,
    samples_table,
    training_table,
)
from commtune.store._url import (
    SIDECAR,
    check_journal,
    journal_path,
    normalize_url,
    shown_url,
    sqlite_path,
)

if TYPE_CHECKING:
    import optuna


class Store:
    """An open storage. ``create=False`` refuses a SQLite file that does not exist yet."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = normalize_url(url)
        self.timeout = sqlite_timeout()  # for a SQLite file, its sidecar, Optuna's engine
        self.journal = journal_path(self.url)
        if self.journal is not None:
            if not create and not os.path.exists(self.journal):
                raise UsageError(f"no storage at {self.journal} (run 'commtune tune' first)")
            if not os.access(os.path.dirname(self.journal), os.W_OK | os.X_OK):
                raise UsageError(
                    f"cannot open storage {self.url}: directory "
                    f"{os.path.dirname(self.journal)} is not writable (the journal's lock "
                    "and commtune's tables are written beside it)"
                )
            check_journal(self.journal)
            self.db_url = "sqlite:///" + self.journal + SIDECAR
        else:
            self.db_url = self.url
        path = sqlite_path(self.db_url)
        if self.journal is None and path is not None and not create and not os.path.exists(path):
            raise UsageError(f"no storage at {path} (run 'commtune tune' first)")
        if path is not None and os.path.exists(path):
            with open(path, "rb") as f:
                head = f.read(16)
            if head and not head.startswith(b"SQLite format 3"):
                raise UsageError(f"bad storage: {path} is not a SQLite database")
        try:
            self.engine = sa.create_engine(self.db_url, **self._engine_kwargs(self.db_url))
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

    def _engine_kwargs(self, url: str) -> dict[str, Any]:
        if sqlite_path(url) is not None:
            # several workers write one SQLite file: wait for the lock, do not fail
            return {"connect_args": {"timeout": self.timeout}}
        # A server drops connections idle for a trial's length (its idle timeout, a
        # firewall, a restart): each is tested when taken from the pool, and reopened.
        return {"pool_pre_ping": True}

    @property
    def optuna(self) -> optuna.storages.BaseStorage:
        if self._optuna is None:
            import optuna

            optuna.logging.set_verbosity(optuna.logging.WARNING)
            if self.journal is not None:
                from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

                try:
                    # the open lock (O_EXCL) works on NFS, unlike a symlink on some mounts
                    backend = JournalFileBackend(
                        self.journal, lock_obj=JournalFileOpenLock(self.journal)
                    )
                    self._optuna = optuna.storages.JournalStorage(backend)
                except Exception as exc:  # a file that is not a journal fails in many ways
                    raise UsageError(f"cannot open storage {self.url}: {exc}") from None
                return self._optuna
            for attempt in range(CREATE_ATTEMPTS):
                try:
                    self._optuna = optuna.storages.RDBStorage(
                        self.url, engine_kwargs=self._engine_kwargs(self.url)
                    )
                    break
                except Exception as exc:  # Optuna raises several types for a broken database
                    if attempt + 1 < CREATE_ATTEMPTS and racing(exc):
                        time.sleep(0.2 * (attempt + 1))
                        continue
                    reason = str(exc).strip().splitlines()
                    raise UsageError(
                        f"cannot open storage {shown_url(self.url)}: {reason[0] if reason else exc}"
                    ) from None
        assert self._optuna is not None
        return self._optuna

    # -- platforms ----------------------------------------------------------------------------
    def save_platform(self, fingerprint: Fingerprint) -> str:
        key = fingerprint.key
        with self.engine.begin() as conn:
            exists = conn.execute(
                sa.select(platforms_table.c.key).where(platforms_table.c.key == key)
            ).first()
            if not exists:
                conn.execute(
                    platforms_table.insert().values(
                        key=key, data=json.dumps(fingerprint.to_json()), created=time.time()
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
        with self.engine.begin() as conn:
            key = json.dumps(value)
            conn.execute(
                knob_values_table.delete().where(
                    (knob_values_table.c.platform == platform)
                    & (knob_values_table.c.knob == knob)
                    & (knob_values_table.c.value == key)
                )
            )
            conn.execute(
                knob_values_table.insert().values(
                    platform=platform,
                    knob=knob,
                    value=key,
                    ok=ok,
                    reason=reason,
                    checked=time.time(),
                )
            )

    # -- profiles of runs ---------------------------------------------------------------------
    def save_profile(self, study: str, trial: int, run: int, data: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                profiles_table.delete().where(
                    (profiles_table.c.study == study)
                    & (profiles_table.c.trial == trial)
                    & (profiles_table.c.run == run)
                )
            )
            conn.execute(
                profiles_table.insert().values(
                    study=study, trial=trial, run=run, data=json.dumps(data), created=time.time()
                )
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
        with self.engine.begin() as conn:
            conn.execute(samples_table.delete().where(samples_table.c.platform == platform))
            conn.execute(
                samples_table.insert().values(
                    platform=platform, data=json.dumps(data), created=time.time()
                )
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
        with self.engine.begin() as conn:
            conn.execute(
                training_table.delete().where(
                    (training_table.c.platform == platform)
                    & (training_table.c.point == point)
                    & (training_table.c.config == config)
                )
            )
            conn.execute(
                training_table.insert().values(
                    platform=platform,
                    point=point,
                    config=config,
                    data=json.dumps(data),
                    created=time.time(),
                )
            )

    def training_runs(self, platform: str) -> dict[tuple[str, str], Any]:
        query = sa.select(training_table).where(training_table.c.platform == platform)
        with self.engine.connect() as conn:
            return {(r.point, r.config): json.loads(r.data) for r in conn.execute(query)}

    def save_model(self, platform: str, data: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(models_table.delete().where(models_table.c.platform == platform))
            conn.execute(
                models_table.insert().values(
                    platform=platform, data=json.dumps(data), created=time.time()
                )
            )

    def models(self) -> dict[str, Any]:
        """Every stored model by the platform key it was trained on."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(models_table.c.platform, models_table.c.data))
            return {r.platform: json.loads(r.data) for r in rows}
