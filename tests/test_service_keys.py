"""API keys: a key's secret is checked by scrypt once a minute per worker; a key in use
is checked again aside before its minute ends (no request of it waits for scrypt), and
when a key's minute has run out, its requests wait for one check instead of each
running its own (a burst of scrypt at 32 clients stalled requests for over a second)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import credit.service.keys as keys_module
from credit.service.auth import Role
from credit.service.keys import REFRESH_AHEAD_S, VERIFIED_TTL_S, MemoryKeyStore
from service_support import CHEAP_SCRYPT_N, approvable, golden, service_api


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fixed = Clock()
    monkeypatch.setattr(keys_module.time, "monotonic", fixed)
    return fixed


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each scrypt check of a secret, slowed a little so that racers overlap."""
    made: list[str] = []
    real = keys_module.verify_secret

    def counted(secret: str, stored: str) -> bool:
        made.append(secret)
        time.sleep(0.05)
        return real(secret, stored)

    monkeypatch.setattr(keys_module, "verify_secret", counted)
    yield made


def checks_aside_done() -> None:
    for thread in threading.enumerate():
        if thread.name == "credit-key-check":
            thread.join(timeout=30)


def test_a_key_in_use_is_checked_aside_before_its_minute_ends_and_an_idle_one_in_its_request(
    clock: Clock, checks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryKeyStore(scrypt_n=CHEAP_SCRYPT_N)
    record, key = store.create("underwriter", "ada")
    for _ in range(3):
        principal = store.authenticate(key)
        assert principal is not None and principal.name == "ada"
    assert len(checks) == 1
    clock.now += VERIFIED_TTL_S - REFRESH_AHEAD_S - 1
    assert store.authenticate(key) is not None
    checks_aside_done()
    assert len(checks) == 1  # not due yet
    clock.now += 2  # due: answered from memory at once, and checked again aside
    release, finished = threading.Event(), []
    counted = keys_module.verify_secret

    def held(secret: str, stored: str) -> bool:
        release.wait(30)
        finished.append(secret)
        return counted(secret, stored)

    monkeypatch.setattr(keys_module, "verify_secret", held)
    assert store.authenticate(key) is not None
    assert finished == []  # answered while its check aside is still held
    release.set()
    checks_aside_done()
    assert len(checks) == 2 and len(finished) == 1
    clock.now += REFRESH_AHEAD_S  # past the first minute: remembered anew, no check
    assert store.authenticate(key) is not None
    checks_aside_done()
    assert len(checks) == 2
    clock.now += VERIFIED_TTL_S + 1  # unused for a minute: checked in its request
    assert store.authenticate(key) is not None and len(checks) == 3
    store.revoke(record.key_id)
    assert store.authenticate(key) is None  # though its secret was checked a moment ago


def test_many_requests_with_a_key_whose_minute_ran_out_wait_for_one_check(
    clock: Clock, checks: list[str]
) -> None:
    store = MemoryKeyStore(scrypt_n=CHEAP_SCRYPT_N)
    _, key = store.create("underwriter", "ada")
    assert store.authenticate(key) is not None
    clock.now += VERIFIED_TTL_S + 1
    barrier = threading.Barrier(16)
    results: list[Any] = []

    def request() -> None:
        barrier.wait()
        results.append(store.authenticate(key))

    threads = [threading.Thread(target=request) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(results) == 16 and all(p is not None and p.name == "ada" for p in results)
    assert len(checks) == 2  # the first, and one for the sixteen


def test_a_guessed_key_neither_passes_nor_holds_up_the_real_one(
    clock: Clock, checks: list[str]
) -> None:
    store = MemoryKeyStore(scrypt_n=CHEAP_SCRYPT_N)
    _, key = store.create("underwriter", "ada")
    guess = key[: key.rindex(".") + 1] + "x" * 43  # the right id, a wrong secret
    assert store.authenticate(guess) is None and store.authenticate(guess) is None
    assert len(checks) == 2  # a wrong secret is never remembered
    answered: list[Any] = []
    with store._verified.flight(guess):  # a guess being checked right now
        # Were the real key's check behind the guess's, it would wait for this block
        # to end, which waits for it: the thread would still be waiting (not hang).
        real = threading.Thread(target=lambda: answered.append(store.authenticate(key)))
        real.start()
        real.join(timeout=30)
        assert len(answered) == 1 and answered[0] is not None


# ------------------------------------------------------------------ where the check runs


@pytest.fixture
def hand_offs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of each function the app hands to a worker thread."""
    import anyio.to_thread

    made: list[str] = []
    real = anyio.to_thread.run_sync

    async def counted(func: Any, *args: Any, **kwargs: Any) -> Any:
        inner = getattr(func, "func", func)  # run_in_threadpool hands on a partial
        made.append(getattr(inner, "__name__", repr(inner)))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    return made


def test_a_key_checked_lately_and_a_short_read_run_on_the_loop_and_scrypt_never_does(
    tmp_path: Path, hand_offs: list[str], checks: list[str]
) -> None:
    with service_api("sqlite", tmp_path) as api:
        assert api.take_in(approvable("LOOP-1")).status_code == 201
        assert api.decide("LOOP-1").status_code == 201
        reader = api.headers(Role.AUDITOR)
        api.app.state.keys._verified = keys_module._Verified()  # no key checked lately
        hand_offs.clear()
        checks.clear()
        first = api.client.get("/v1/cases/LOOP-1", headers=reader)
        assert first.status_code == 200
        # the key's first check (scrypt) went to a thread; the read itself did not
        assert hand_offs == ["principal_from_request"] and len(checks) == 1
        hand_offs.clear()
        for _ in range(3):
            assert api.client.get("/v1/cases/LOOP-1", headers=reader).status_code == 200
            assert api.client.get("/v1/me", headers=reader).status_code == 200
        assert len(checks) == 1  # checked lately: no scrypt
        assert "principal_from_request" not in hand_offs
        assert "get_case" not in hand_offs and "view" not in hand_offs
        # a guessed key is checked by scrypt on a thread, every time
        guess = reader["X-API-Key"][:-4] + "xxxx"
        hand_offs.clear()
        for _ in range(2):
            refused = api.client.get("/v1/cases/LOOP-1", headers={"X-API-Key": guess})
            assert refused.status_code == 401
        assert hand_offs.count("principal_from_request") == 2 and len(checks) == 3
        # a notice read on the loop; its printed letter on a thread
        assert api.take_in(golden("G-DECLINE-DTI", "LOOP-2")).status_code == 201
        assert api.decide("LOOP-2").status_code == 201
        hand_offs.clear()
        notice = api.client.get("/v1/cases/LOOP-2/notice", headers=reader)
        assert notice.status_code == 200 and notice.json()["report"]["passed"] is True
        assert hand_offs == []
        pdf = api.client.get("/v1/cases/LOOP-2/notice?format=pdf", headers=reader)
        assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
        assert hand_offs == ["_notice_response"]
