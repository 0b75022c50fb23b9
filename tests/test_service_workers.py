"""Two server processes (``credit serve --workers 2``) under concurrent decides of one
case: exactly one is decided (201), every other request is 409, one
``decision.recorded`` entry, one underwriter turn, and the chain verifies."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from credit.journal import open_store
from credit.service.keys import SqlKeyStore
from credit.service.launch import served
from credit.service.tables import ServiceDb
from service_support import BACKENDS, CHEAP_SCRYPT_N, database, golden

CONCURRENT = 24


def keys_for(url: str, schema: str | None) -> tuple[str, str]:
    with ServiceDb(url, schema=schema) as db:
        keys = SqlKeyStore(db, scrypt_n=CHEAP_SCRYPT_N)
        return keys.create("intake", "intake")[1], keys.create("underwriter", "underwriter")[1]


def both_workers_answer(base: str, timeout_s: float = 60.0) -> set[int]:
    """Wait until two different worker processes have answered /healthz."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    with httpx.Client(base_url=base, timeout=5) as client:
        while len(seen) < 2 and time.monotonic() < deadline:
            # A fresh connection each time, so the kernel may hand it to either worker.
            response = client.get("/healthz", headers={"Connection": "close"})
            seen.add(response.json()["worker"])
    return seen


async def decide_all(base: str, case_id: str, key: str) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        calls = [
            client.post(f"/v1/cases/{case_id}/decide", headers={"X-API-Key": key})
            for _ in range(CONCURRENT)
        ]
        return list(await asyncio.gather(*calls))


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_workers_commit_a_case_decided_by_many_concurrent_requests_exactly_once(
    backend: str, tmp_path: Path
) -> None:
    with database(backend, tmp_path) as (url, schema):
        intake_key, underwriter_key = keys_for(url, schema)
        with served(url, schema, tmp_path, workers=2) as base:
            assert len(both_workers_answer(base)) == 2
            case = golden("G-DECLINE-DTI", "W-RACE-1")
            taken = httpx.post(
                f"{base}/v1/cases",
                content=json.dumps(case),
                headers={"X-API-Key": intake_key},
                timeout=30,
            )
            assert taken.status_code == 201, taken.text
            responses = asyncio.run(decide_all(base, "W-RACE-1", underwriter_key))
        statuses = Counter(r.status_code for r in responses)
        assert statuses == {201: 1, 409: CONCURRENT - 1}, [r.text for r in responses]
        for r in responses:
            if r.status_code == 409:
                message = r.json()["error"]["message"]
                assert "nothing was changed" in message and r.json()["error"]["caseId"]
        with open_store(url, schema=schema, create=False) as store:
            kinds = Counter(e.kind for e in store.entries("W-RACE-1"))
            assert kinds["decision.recorded"] == 1
            assert kinds["underwriter.turn"] == 1
            assert kinds["intake.accepted"] == 1
            assert store.verify().ok
