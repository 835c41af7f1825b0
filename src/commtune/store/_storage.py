"""Study storage: one database URL for Optuna's studies and commtune's own tables.

Optuna's tables hold studies and trials (ask/tell, resumable, every finished trial committed).
commtune's data lives in ``commtune_*`` tables beside them in the same database, with a schema
version in ``commtune_meta`` and a migration path (``_MIGRATIONS``): platform fingerprints and
the knob values tested on each platform, the interposer's profile of every run, the sampled
platform profile of each fingerprint, the prediction's training runs and models, and the
claims and heartbeats of several workers.
Values are JSON text, never pickles.

Accepted URLs: ``sqlite:///FILE``, a plain file path (a SQLite file), a server URL
(``postgresql://...``, ``mysql://...``), or ``journal:///FILE``: Optuna's journal file for
clusters with a shared file system and no database server, commtune's tables then in a SQLite
file beside it (``FILE.commtune.sqlite``).

Several workers on one study coordinate through ``commtune_claims`` (who does the reference,
the confirmation, each configuration; one row per claim, the study's lock row taken first so
that a claim and the count of the study's claims are one step for every database) and
``commtune_workers`` (each worker's last heartbeat).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from commtune.errors import UsageError
from commtune.platform import Fingerprint
from commtune.settings import sqlite_timeout
from commtune.study import ACCEPTANCE
from commtune.study import upgrade as upgrade_acceptance

if TYPE_CHECKING:
    import optuna

SCHEMA_VERSION = 6
DEFAULT_URL = "sqlite:///commtune.db"
_SERVER_SCHEMES = ("postgresql", "mysql")

_metadata = sa.MetaData()
meta_table = sa.Table(
    "commtune_meta",
    _metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
platforms_table = sa.Table(
    "commtune_platforms",
    _metadata,
    sa.Column("key", sa.String(32), primary_key=True),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)
knob_values_table = sa.Table(
    "commtune_knob_values",
    _metadata,
    sa.Column("platform", sa.String(32), primary_key=True),
    sa.Column("knob", sa.String(128), primary_key=True),
    sa.Column("value", sa.String(256), primary_key=True),
    sa.Column("ok", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("checked", sa.Float, nullable=False),
)

profiles_table = sa.Table(
    "commtune_profiles",
    _metadata,
    sa.Column("study", sa.String(512), primary_key=True),
    sa.Column("trial", sa.Integer, primary_key=True),
    sa.Column("run", sa.Integer, primary_key=True),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)


samples_table = sa.Table(
    "commtune_samples",
    _metadata,
    sa.Column("platform", sa.String(32), primary_key=True),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)


training_table = sa.Table(
    "commtune_training",
    _metadata,
    sa.Column("platform", sa.String(32), primary_key=True),
    sa.Column("point", sa.String(256), primary_key=True),  # the benchmark inputs, as a key
    sa.Column("config", sa.String(1024), primary_key=True),  # "" for the library's defaults
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)

models_table = sa.Table(
    "commtune_models",
    _metadata,
    sa.Column("platform", sa.String(32), primary_key=True),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)


# Coordination of several workers on one study (see the module docstring).
claims_table = sa.Table(
    "commtune_claims",
    _metadata,
    sa.Column("study", sa.String(512), primary_key=True),
    sa.Column("key", sa.String(128), primary_key=True),
    sa.Column("worker", sa.String(256), nullable=False),
    sa.Column("trial", sa.Integer, nullable=True),
    sa.Column("counted", sa.Boolean, nullable=False),  # spends one trial of the budget
    sa.Column("created", sa.Float, nullable=False),
)
workers_table = sa.Table(
    "commtune_workers",
    _metadata,
    sa.Column("study", sa.String(512), primary_key=True),
    sa.Column("worker", sa.String(256), primary_key=True),
    sa.Column("beat", sa.Float, nullable=False),
)
locks_table = sa.Table(
    "commtune_locks",
    _metadata,
    sa.Column("study", sa.String(512), primary_key=True),
    sa.Column("taken", sa.Integer, nullable=False),
)


@dataclass(frozen=True)
class Claim:
    """Who holds ``key`` of a study: ``worker`` (``util.worker_id``), for ``trial``."""

    key: str
    worker: str
    trial: int | None = None
    counted: bool = False


def _add_profiles(conn: sa.Connection) -> None:
    profiles_table.create(conn, checkfirst=True)


def _add_samples(conn: sa.Connection) -> None:
    samples_table.create(conn, checkfirst=True)


def _add_training(conn: sa.Connection) -> None:
    training_table.create(conn, checkfirst=True)
    models_table.create(conn, checkfirst=True)


def _one_acceptance_format(conn: sa.Connection) -> None:
    """Verdicts of every study in the one format of ``commtune.study`` (tune's and the one
    of studies made by sample and predict were two), in Optuna's own attribute table."""
    if not sa.inspect(conn).has_table("study_user_attributes"):
        return
    attrs = sa.Table("study_user_attributes", sa.MetaData(), autoload_with=conn)
    rows = conn.execute(
        sa.select(attrs.c.study_user_attribute_id, attrs.c.value_json).where(
            attrs.c.key == ACCEPTANCE
        )
    ).all()
    for row_id, text in rows:
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict):
            conn.execute(
                attrs.update()
                .where(attrs.c.study_user_attribute_id == row_id)
                .values(value_json=json.dumps(upgrade_acceptance(data)))
            )


def _add_coordination(conn: sa.Connection) -> None:
    for table in (claims_table, workers_table, locks_table):
        table.create(conn, checkfirst=True)


# version -> function upgrading a database from that version to the next one.
_MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {
    1: _add_profiles,
    2: _add_samples,
    3: _add_training,
    4: _one_acceptance_format,
    5: _add_coordination,
}


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


SIDECAR = ".commtune.sqlite"  # commtune's tables beside a journal file


_CREATE_ATTEMPTS = 5


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


def _racing(exc: Exception) -> bool:
    """A new database's tables made by two workers at once: the loser's error; retried."""
    text = str(exc).lower()
    return "already exists" in text or "unique constraint" in text or "duplicate key" in text


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
            _check_journal(self.journal)
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
        self._lock_rows: set[str] = set()  # studies whose lock row exists
        self._init_schema()

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
            for attempt in range(_CREATE_ATTEMPTS):
                try:
                    self._optuna = optuna.storages.RDBStorage(
                        self.url, engine_kwargs=self._engine_kwargs(self.url)
                    )
                    break
                except Exception as exc:  # Optuna raises several types for a broken database
                    if attempt + 1 < _CREATE_ATTEMPTS and _racing(exc):
                        time.sleep(0.2 * (attempt + 1))
                        continue
                    reason = str(exc).strip().splitlines()
                    raise UsageError(
                        f"cannot open storage {shown_url(self.url)}: {reason[0] if reason else exc}"
                    ) from None
        assert self._optuna is not None
        return self._optuna

    def _init_schema(self) -> None:
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                self._create_schema()
                return
            except UsageError as exc:
                if attempt + 1 < _CREATE_ATTEMPTS and _racing(exc):
                    time.sleep(0.2 * (attempt + 1))
                    continue
                raise

    def _create_schema(self) -> None:
        try:
            with self.engine.begin() as conn:
                _metadata.create_all(conn)
                row = conn.execute(
                    sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")
                ).first()
                version = int(row[0]) if row else None
                if version is None:
                    conn.execute(
                        meta_table.insert().values(key="schema_version", value=str(SCHEMA_VERSION))
                    )
                    return
                if version > SCHEMA_VERSION:
                    raise UsageError(
                        f"storage {self.url} has schema {version}, newer than this commtune "
                        f"({SCHEMA_VERSION}): upgrade commtune"
                    )
                while version < SCHEMA_VERSION:
                    _MIGRATIONS[version](conn)
                    version += 1
                conn.execute(
                    meta_table.update()
                    .where(meta_table.c.key == "schema_version")
                    .values(value=str(version))
                )
        except sa.exc.SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc.__class__.__name__).strip().splitlines()
            raise UsageError(
                f"cannot open storage {shown_url(self.url)}: {reason[0] if reason else exc}"
            ) from None

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

    # -- several workers on one study ---------------------------------------------------------
    @contextlib.contextmanager
    def _lock(self, study: str) -> Iterator[sa.Connection]:
        """A transaction holding the study's lock row (a row lock on a server, the database's
        write lock in SQLite): claims of one study are made one at a time."""
        if study not in self._lock_rows:
            try:
                with self.engine.begin() as conn:
                    exists = conn.execute(
                        sa.select(locks_table.c.study).where(locks_table.c.study == study)
                    ).first()
                    if not exists:
                        conn.execute(locks_table.insert().values(study=study, taken=0))
            except sa.exc.IntegrityError:  # another worker made it at the same moment
                pass
            self._lock_rows.add(study)
        with self.engine.begin() as conn:
            conn.execute(
                locks_table.update()
                .where(locks_table.c.study == study)
                .values(taken=locks_table.c.taken + 1)
            )
            yield conn

    def claim(
        self,
        study: str,
        key: str,
        worker: str,
        *,
        trial: int | None = None,
        counted: bool = False,
        limit: int | None = None,
    ) -> Claim | None:
        """Claim ``key`` for ``worker``; returns the holder (``worker`` if it was free, the
        earlier holder if not), or None if ``limit`` counted claims are held already."""
        with self._lock(study) as conn:
            row = conn.execute(
                sa.select(claims_table).where(
                    (claims_table.c.study == study) & (claims_table.c.key == key)
                )
            ).first()
            if row is not None:
                return Claim(row.key, row.worker, row.trial, row.counted)
            if counted and limit is not None:
                held = conn.execute(
                    sa.select(sa.func.count()).where(
                        (claims_table.c.study == study) & claims_table.c.counted
                    )
                ).scalar_one()
                if held >= limit:
                    return None
            conn.execute(
                claims_table.insert().values(
                    study=study,
                    key=key,
                    worker=worker,
                    trial=trial,
                    counted=counted,
                    created=time.time(),
                )
            )
        return Claim(key, worker, trial, counted)

    def release(
        self,
        study: str,
        key: str | None = None,
        worker: str | None = None,
        trial: int | None = None,
    ) -> int:
        """Free the claims of ``study`` on ``key``, of ``worker``, for ``trial`` (those given);
        returns how many were held."""
        cond = claims_table.c.study == study
        if key is not None:
            cond &= claims_table.c.key == key
        if worker is not None:
            cond &= claims_table.c.worker == worker
        if trial is not None:
            cond &= claims_table.c.trial == trial
        with self.engine.begin() as conn:
            return int(conn.execute(claims_table.delete().where(cond)).rowcount)

    def bind(self, study: str, key: str, worker: str, trial: int) -> None:
        """The trial that carries out ``worker``'s claim on ``key``."""
        with self.engine.begin() as conn:
            conn.execute(
                claims_table.update()
                .where(
                    (claims_table.c.study == study)
                    & (claims_table.c.key == key)
                    & (claims_table.c.worker == worker)
                )
                .values(trial=trial)
            )

    def claims(self, study: str) -> list[Claim]:
        query = sa.select(claims_table).where(claims_table.c.study == study)
        with self.engine.connect() as conn:
            return [Claim(r.key, r.worker, r.trial, r.counted) for r in conn.execute(query)]

    def add_claims(self, study: str, claims: Iterable[Claim]) -> int:
        """Record claims that are missing (a study made before claims, or by one worker
        alone); returns how many were added."""
        added = 0
        with self._lock(study) as conn:
            held = {
                r[0]
                for r in conn.execute(
                    sa.select(claims_table.c.key).where(claims_table.c.study == study)
                )
            }
            for c in claims:
                if c.key not in held:
                    conn.execute(
                        claims_table.insert().values(
                            study=study,
                            key=c.key,
                            worker=c.worker,
                            trial=c.trial,
                            counted=c.counted,
                            created=time.time(),
                        )
                    )
                    held.add(c.key)
                    added += 1
        return added

    def beat(self, study: str, worker: str) -> None:
        """``worker`` is alive (its heartbeat, for workers on other hosts to see)."""
        with self.engine.begin() as conn:
            done = conn.execute(
                workers_table.update()
                .where((workers_table.c.study == study) & (workers_table.c.worker == worker))
                .values(beat=time.time())
            ).rowcount
            if not done:
                conn.execute(
                    workers_table.insert().values(study=study, worker=worker, beat=time.time())
                )

    def beats(self, study: str) -> dict[str, float]:
        """worker -> the time of its last heartbeat."""
        query = sa.select(workers_table.c.worker, workers_table.c.beat).where(
            workers_table.c.study == study
        )
        with self.engine.connect() as conn:
            return {r.worker: r.beat for r in conn.execute(query)}
