"""Where the workers of a study keep their claims and heartbeats: one protocol, two homes.

:class:`StoreClaims` keeps them in the storage, shared by every worker on it:
``commtune_claims`` holds a row per claim (who does the reference, the confirmation, each
configuration), made under the study's lock row so that a claim and the count of the study's
claims are one step on every database; ``commtune_workers`` holds each worker's last
heartbeat. :class:`MemoryClaims` keeps them in this process, for a study without a storage
(one worker). One contract test runs over both (``tests/test_workers.py``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import sqlalchemy as sa

from commtune.store._schema import claims_table, locks_table, workers_table

if TYPE_CHECKING:
    from commtune.store._storage import Store


@dataclass(frozen=True)
class Claim:
    """Who holds ``key`` of a study: ``worker`` (``util.worker_id``), for ``trial``."""

    key: str
    worker: str
    trial: int | None = None
    counted: bool = False  # spends one trial of the study's budget


class Claims(Protocol):
    """The claims of one study (see the module docstring)."""

    def claim(
        self, key: str, worker: str, *, trial: int | None, counted: bool, limit: int | None
    ) -> Claim | None:
        """The holder of ``key``, ``worker`` if it was free; None if ``counted`` and the
        study's ``limit`` counted claims are made."""

    def release(self, key: str | None, worker: str | None, trial: int | None) -> int:
        """Drop the claims matching every criterion given (None: any); how many were held."""

    def bind(self, key: str, worker: str, trial: int) -> None:
        """The trial that ``worker``'s claim of ``key`` runs in."""

    def all(self) -> list[Claim]: ...

    def add(self, claims: Iterable[Claim]) -> int:
        """Claims for work done before claims were kept (a key already claimed keeps its
        holder); how many were added."""

    def beat(self, worker: str) -> None:
        """``worker`` is alive now."""

    def beats(self) -> dict[str, float]:
        """worker -> the time of its last heartbeat."""


class MemoryClaims:
    """Claims in this process: one worker, nobody to beat for."""

    def __init__(self) -> None:
        self._claims: dict[str, Claim] = {}

    def claim(
        self, key: str, worker: str, *, trial: int | None, counted: bool, limit: int | None
    ) -> Claim | None:
        if key in self._claims:
            return self._claims[key]
        if counted and limit is not None and sum(c.counted for c in self._claims.values()) >= limit:
            return None
        self._claims[key] = Claim(key, worker, trial, counted)
        return self._claims[key]

    def release(self, key: str | None, worker: str | None, trial: int | None) -> int:
        held = [
            k
            for k, c in self._claims.items()
            if (key is None or k == key)
            and (worker is None or c.worker == worker)
            and (trial is None or c.trial == trial)
        ]
        for k in held:
            del self._claims[k]
        return len(held)

    def bind(self, key: str, worker: str, trial: int) -> None:
        held = self._claims.get(key)
        if held is not None and held.worker == worker:
            self._claims[key] = Claim(key, worker, trial, held.counted)

    def all(self) -> list[Claim]:
        return list(self._claims.values())

    def add(self, claims: Iterable[Claim]) -> int:
        added = 0
        for c in claims:
            if c.key not in self._claims:
                self._claims[c.key] = c
                added += 1
        return added

    def beat(self, worker: str) -> None:
        pass

    def beats(self) -> dict[str, float]:
        return {}


class StoreClaims:
    """The claims of study ``study`` in ``store`` (see the module docstring)."""

    def __init__(self, store: Store, study: str) -> None:
        self.store = store
        self.study = study
        self._lock_row = False  # whether the study's lock row is known to exist

    @contextlib.contextmanager
    def _lock(self) -> Iterator[sa.Connection]:
        """A transaction holding the study's lock row (a row lock on a server, the database's
        write lock in SQLite): claims of one self.study are made one at a time."""
        if not self._lock_row:
            try:
                with self.store.engine.begin() as conn:
                    exists = conn.execute(
                        sa.select(locks_table.c.study).where(locks_table.c.study == self.study)
                    ).first()
                    if not exists:
                        conn.execute(locks_table.insert().values(study=self.study, taken=0))
            except sa.exc.IntegrityError:  # another worker made it at the same moment
                pass
            self._lock_row = True
        with self.store.engine.begin() as conn:
            conn.execute(
                locks_table.update()
                .where(locks_table.c.study == self.study)
                .values(taken=locks_table.c.taken + 1)
            )
            yield conn

    def claim(
        self,
        key: str,
        worker: str,
        *,
        trial: int | None = None,
        counted: bool = False,
        limit: int | None = None,
    ) -> Claim | None:
        """Claim ``key`` for ``worker``; returns the holder (``worker`` if it was free, the
        earlier holder if not), or None if ``limit`` counted claims are held already."""
        with self._lock() as conn:
            row = conn.execute(
                sa.select(claims_table).where(
                    (claims_table.c.study == self.study) & (claims_table.c.key == key)
                )
            ).first()
            if row is not None:
                return Claim(row.key, row.worker, row.trial, row.counted)
            if counted and limit is not None:
                held = conn.execute(
                    sa.select(sa.func.count()).where(
                        (claims_table.c.study == self.study) & claims_table.c.counted
                    )
                ).scalar_one()
                if held >= limit:
                    return None
            conn.execute(
                claims_table.insert().values(
                    study=self.study,
                    key=key,
                    worker=worker,
                    trial=trial,
                    counted=counted,
                    created=time.time(),
                )
            )
        return Claim(key, worker, trial, counted)

    def release(
        self, key: str | None = None, worker: str | None = None, trial: int | None = None
    ) -> int:
        """Free the claims of ``study`` on ``key``, of ``worker``, for ``trial`` (those given);
        returns how many were held."""
        cond = claims_table.c.study == self.study
        if key is not None:
            cond &= claims_table.c.key == key
        if worker is not None:
            cond &= claims_table.c.worker == worker
        if trial is not None:
            cond &= claims_table.c.trial == trial
        with self.store.engine.begin() as conn:
            return int(conn.execute(claims_table.delete().where(cond)).rowcount)

    def bind(self, key: str, worker: str, trial: int) -> None:
        """The trial that carries out ``worker``'s claim on ``key``."""
        with self.store.engine.begin() as conn:
            conn.execute(
                claims_table.update()
                .where(
                    (claims_table.c.study == self.study)
                    & (claims_table.c.key == key)
                    & (claims_table.c.worker == worker)
                )
                .values(trial=trial)
            )

    def all(self) -> list[Claim]:
        query = sa.select(claims_table).where(claims_table.c.study == self.study)
        with self.store.engine.connect() as conn:
            return [Claim(r.key, r.worker, r.trial, r.counted) for r in conn.execute(query)]

    def add(self, claims: Iterable[Claim]) -> int:
        """Record claims that are missing (a self.study made before claims, or by one worker
        alone); returns how many were added."""
        added = 0
        with self._lock() as conn:
            held = {
                r[0]
                for r in conn.execute(
                    sa.select(claims_table.c.key).where(claims_table.c.study == self.study)
                )
            }
            for c in claims:
                if c.key not in held:
                    conn.execute(
                        claims_table.insert().values(
                            study=self.study,
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

    def beat(self, worker: str) -> None:
        """``worker`` is alive (its heartbeat, for workers on other hosts to see)."""
        with self.store.engine.begin() as conn:
            done = conn.execute(
                workers_table.update()
                .where((workers_table.c.study == self.study) & (workers_table.c.worker == worker))
                .values(beat=time.time())
            ).rowcount
            if not done:
                conn.execute(
                    workers_table.insert().values(study=self.study, worker=worker, beat=time.time())
                )

    def beats(self) -> dict[str, float]:
        """worker -> the time of its last heartbeat."""
        query = sa.select(workers_table.c.worker, workers_table.c.beat).where(
            workers_table.c.study == self.study
        )
        with self.store.engine.connect() as conn:
            return {r.worker: r.beat for r in conn.execute(query)}
