"""API keys: a key's secret is checked by scrypt once a minute per worker, and when its
minute runs out under load, its requests wait for one check instead of each running
its own (a burst of scrypt at 32 clients stalled requests for over a second)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import credit.service.keys as keys_module
from credit.service.keys import VERIFIED_TTL_S, MemoryKeyStore
from service_support import CHEAP_SCRYPT_N


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


def test_a_key_is_checked_once_a_minute_and_a_revoked_key_is_refused_at_once(
    clock: Clock, checks: list[str]
) -> None:
    store = MemoryKeyStore(scrypt_n=CHEAP_SCRYPT_N)
    record, key = store.create("underwriter", "ada")
    for _ in range(3):
        principal = store.authenticate(key)
        assert principal is not None and principal.name == "ada"
    assert len(checks) == 1
    clock.now += VERIFIED_TTL_S - 1
    assert store.authenticate(key) is not None and len(checks) == 1
    clock.now += 2  # the minute is out: checked again, once
    assert store.authenticate(key) is not None and store.authenticate(key) is not None
    assert len(checks) == 2
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
    with store._verified.flight(guess):  # a guess being checked right now
        started = time.perf_counter()
        assert store.authenticate(key) is not None
        assert time.perf_counter() - started < 5  # not behind the guess's check
