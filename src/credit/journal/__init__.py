"""The hash-chained case journal and its stores.

``InMemoryStore`` for tests and one-off runs; ``open_store(url)`` for the SQL store
(SQLite or PostgreSQL), both satisfying the ``Store`` protocol.
"""

from credit.journal.base import (
    CONFLICT_ATTEMPTS,
    DECISION_KIND,
    GENESIS_HASH,
    ChainReport,
    Clock,
    DecisionAlreadyRecordedError,
    Entry,
    GroupConflictError,
    InMemoryStore,
    JournalError,
    Store,
    SystemClock,
    conflict_attempts,
    entry_hash,
    verify_chain,
)
from credit.journal.sql import (
    DATABASE_URL_ENV,
    DEFAULT_DATABASE_URL,
    SqlStore,
    open_store,
    resolve_url,
)

__all__ = [
    "CONFLICT_ATTEMPTS",
    "DATABASE_URL_ENV",
    "DECISION_KIND",
    "DEFAULT_DATABASE_URL",
    "GENESIS_HASH",
    "ChainReport",
    "Clock",
    "DecisionAlreadyRecordedError",
    "Entry",
    "GroupConflictError",
    "InMemoryStore",
    "JournalError",
    "SqlStore",
    "Store",
    "SystemClock",
    "conflict_attempts",
    "entry_hash",
    "open_store",
    "resolve_url",
    "verify_chain",
]
