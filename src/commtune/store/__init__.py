"""Storage: Optuna's studies and trials plus commtune's own tables, under one URL; the claims
of several workers on one study (in the storage, or in memory for one worker alone)."""

from commtune.store._claims import Claim, Claims, MemoryClaims, StoreClaims
from commtune.store._schema import SCHEMA_VERSION
from commtune.store._storage import Store
from commtune.store._url import (
    DEFAULT_URL,
    journal_path,
    normalize_url,
    shown_url,
    sqlite_path,
    storage_failure,
)

__all__ = [
    "DEFAULT_URL",
    "SCHEMA_VERSION",
    "Claim",
    "Claims",
    "MemoryClaims",
    "Store",
    "StoreClaims",
    "journal_path",
    "normalize_url",
    "shown_url",
    "sqlite_path",
    "storage_failure",
]
