"""commtune's own tables beside Optuna's, their schema version and the way from every
earlier version to this one.

The tables (values are JSON text, never pickles): platform fingerprints and the knob values
tested on each platform, the interposer's profile of every run, the sampled platform profile
of each fingerprint, the prediction's training runs and models, and the claims, heartbeats
and lock rows of several workers on one study (``store._claims``). ``commtune_meta`` holds the
schema version; :data:`_MIGRATIONS` upgrades a database one version at a time, and the
databases every earlier version wrote are kept as test fixtures (``tests/data/schemas``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import sqlalchemy as sa

from commtune.errors import UsageError
from commtune.store._url import shown_url
from commtune.study import ACCEPTANCE
from commtune.study import upgrade as upgrade_acceptance

SCHEMA_VERSION = 6
CREATE_ATTEMPTS = 5  # two workers making a new database at once: the loser tries again

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


def racing(exc: Exception) -> bool:
    """A new database's tables made by two workers at once: the loser's error; retried."""
    text = str(exc).lower()
    return "already exists" in text or "unique constraint" in text or "duplicate key" in text


def create_schema(engine: sa.Engine, url: str) -> None:
    """commtune's tables at :data:`SCHEMA_VERSION` in the database, made or migrated."""
    for attempt in range(CREATE_ATTEMPTS):
        try:
            _create_schema(engine, url)
            return
        except UsageError as exc:
            if attempt + 1 < CREATE_ATTEMPTS and racing(exc):
                time.sleep(0.2 * (attempt + 1))
                continue
            raise


def _create_schema(engine: sa.Engine, url: str) -> None:
    try:
        with engine.begin() as conn:
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
                    f"storage {url} has schema {version}, newer than this commtune "
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
            f"cannot open storage {shown_url(url)}: {reason[0] if reason else exc}"
        ) from None
