"""Builders for the reviewer console's tests: a journal seeded by the governed pipeline
over a few bundled cases the Keystone gate holds, and the service app over it.

The held cases (from ``examples/cases.jsonl``), each a near-edge decision that
Backstop's confidence floor holds: C-000006 (a card decline), C-000108 (an auto
decline) and C-000165 (an auto counteroffer). C-000001 passed both reviews and was
released by the gate itself. C-000059 (an auto thin file with no score) was referred:
a referral work item for a credit officer.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from credit.journal import Store
from credit.notices.outbox import InMemoryOutbox, Outbox
from credit.pipeline import BatchLine, Pipeline, read_batch
from credit.service.keys import KeyStore, MemoryKeyStore
from credit.service.settings import ServiceSettings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"
HELD = ("C-000006", "C-000108", "C-000165")
PASSED = "C-000001"
REFERRAL = "C-000059"
SEED = (PASSED, *HELD, REFERRAL)
SESSION_SECRET = "console-tests-session-secret-0123456789"


@lru_cache(maxsize=1)
def _bundled() -> dict[str, BatchLine]:
    return {line.raw["caseId"]: line for line in read_batch(EXAMPLES) if line.error is None}


def seed(store: Store, case_ids: Sequence[str] = SEED) -> Pipeline:
    """Run the governed pipeline (intake, underwriter, Keystone, notices) over the cases."""
    lines = [_bundled()[case_id] for case_id in case_ids]
    pipeline = Pipeline(store, InMemoryOutbox())
    pipeline.run(lines)
    return pipeline


def settings(tmp_path: Path, **more: Any) -> ServiceSettings:
    return ServiceSettings(
        database_url=f"sqlite:///{tmp_path / 'service.db'}",
        outbox=tmp_path / "outbox",
        session_secret=SESSION_SECRET,
        **more,
    )


def service_app(
    tmp_path: Path,
    *,
    store: Store | None = None,
    keys: KeyStore | None = None,
    outbox: Outbox | None = None,
) -> FastAPI:
    """The service app (``create_app``) with the console included."""
    from credit.service.app import create_app

    return create_app(
        settings(tmp_path),
        store=store,
        keys=keys or MemoryKeyStore(),
        outbox=outbox or InMemoryOutbox(),
        checkpoints=tmp_path / "checkpoints",
    )
