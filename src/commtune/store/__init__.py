"""Storage: Optuna's studies and trials plus commtune's own tables, under one URL; the claims
of several workers on one study (in the storage, or in memory for one worker alone)."""

from commtune.store._backend import (
    BACKENDS,
    Backend,
    JournalBackend,
    ServerBackend,
    SQLiteBackend,
    backend,
    normalize_url,
)
from commtune.store._claims import Claim, Claims, MemoryClaims, StoreClaims
from commtune.store._schema import SCHEMA_VERSION
from commtune.store._storage import Store
from commtune.store._url import DEFAULT_URL, shown_url, storage_failure

__all__ = [
    "BACKENDS",
    "DEFAULT_URL",
    "SCHEMA_VERSION",
    "Backend",
    "Claim",
    "Claims",
    "JournalBackend",
    "MemoryClaims",
    "SQLiteBackend",
    "ServerBackend",
    "Store",
    "StoreClaims",
    "backend",
    "normalize_url",
    "shown_url",
    "storage_failure",
]
