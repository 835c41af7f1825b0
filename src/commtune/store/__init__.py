"""Storage: Optuna's studies and trials plus commtune's own tables, under one URL."""

from commtune.store._storage import (
    DEFAULT_URL,
    SCHEMA_VERSION,
    Claim,
    Store,
    normalize_url,
    shown_url,
    sqlite_path,
    storage_failure,
)

__all__ = [
    "DEFAULT_URL",
    "SCHEMA_VERSION",
    "Claim",
    "Store",
    "normalize_url",
    "shown_url",
    "sqlite_path",
    "storage_failure",
]
