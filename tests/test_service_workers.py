"""Two server processes (``credit serve --workers 2``) under concurrent decides of one
case: exactly one is decided (201), every other request is 409, one
``decision.recorded`` entry, one underwriter turn, and the chain verifies."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from credit.journal import open_store
from credit.journal.checkpoint import newest_file
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
            entries = len(store.entries())
        # every entry is covered by a signed checkpoint, though a write whose entries a
        # head signed after them covers signs nothing itself
        newest = newest_file(tmp_path / "checkpoints", pointer=False)
        assert newest is not None and int(newest[:20]) == entries


# ------------------------------------------------------------------ the supervisor


def _listening_inodes(port: int) -> set[str]:
    """The inodes of the TCP sockets listening on ``port`` (from /proc/net/tcp)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    found.add(fields[9])
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


@pytest.mark.skipif(not os.path.isdir("/proc/net"), reason="reads Linux's /proc")
def test_each_worker_listens_on_a_socket_of_its_own_so_the_kernel_spreads_connections(
    tmp_path: Path,
) -> None:
    # uvicorn's own --workers shares one socket: a burst of new connections went to the
    # worker that woke first, and stayed there.
    with database("sqlite", tmp_path) as (url, schema), served(url, schema, tmp_path) as base:
        port = int(base.rsplit(":", 1)[1])
        workers = both_workers_answer(base)
        listening = _listening_inodes(port)
        own = [_socket_inodes(pid) & listening for pid in workers]
        assert all(len(inodes) == 1 for inodes in own), own
        assert own[0] != own[1]
        assert len(listening) == 2  # the supervisor holds the port without listening


def test_a_worker_killed_in_service_is_replaced_and_the_server_goes_on(tmp_path: Path) -> None:
    with database("sqlite", tmp_path) as (url, schema), served(url, schema, tmp_path) as base:
        first = both_workers_answer(base)
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 90
        seen: set[int] = set()
        while time.monotonic() < deadline and not (seen - first):
            with contextlib.suppress(httpx.HTTPError):
                seen |= both_workers_answer(base, timeout_s=5)
        assert seen - first, "no new worker took the killed one's place"
        assert victim not in seen


def test_a_worker_that_cannot_start_stops_the_server_with_its_status() -> None:
    from credit.service.launch import free_port
    from credit.service.workers import run_workers

    options = {"app": "credit_no_such_module:app", "log_level": "critical"}
    status = run_workers(options, host="127.0.0.1", port=free_port(), workers=2)
    assert status != 0


def test_stopping_the_server_stops_every_worker(tmp_path: Path) -> None:
    with database("sqlite", tmp_path) as (url, schema), served(url, schema, tmp_path) as base:
        pids = both_workers_answer(base)
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
