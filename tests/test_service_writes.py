"""The requests that write the journal, a few at a time in each worker process
(:mod:`credit.service.writes`, ``concurrent_writes``): never more at once than the
setting allows, the rest waiting their turn; reads not held up by them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from credit.errors import InputError
from credit.service.auth import Role
from credit.service.cases import CaseService
from credit.service.settings import DEFAULT_CONCURRENT_WRITES, ServiceSettings
from service_support import BACKENDS, Api, approvable, service_api


@pytest.fixture(params=BACKENDS)
def two_at_once(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    with service_api(request.param, tmp_path, concurrent_writes=2) as built:
        yield built


def test_no_more_writes_run_at_once_than_allowed_and_a_read_is_not_held_up_by_them(
    two_at_once: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = two_at_once
    ids = [f"WRITES-{i}" for i in range(5)]
    for case_id in ids:
        assert api.take_in(approvable(case_id)).status_code == 201
    running, most = [0], [0]
    count = threading.Lock()
    go = threading.Event()
    real = CaseService.decide

    def decide(self: CaseService, case_id: str, principal: Any) -> dict[str, Any]:
        with count:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            assert go.wait(timeout=30), "the test never let the decides go"
            return real(self, case_id, principal)
        finally:
            with count:
                running[0] -= 1

    monkeypatch.setattr(CaseService, "decide", decide)
    answers: dict[str, int] = {}

    def post(case_id: str) -> None:
        answers[case_id] = api.decide(case_id).status_code

    threads = [threading.Thread(target=post, args=(case_id,)) for case_id in ids]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 30
        while running[0] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the other three had their chance to start, and waited
        assert running[0] == 2
        # both slots are held: a read is answered all the same
        assert api.get(f"/v1/cases/{ids[0]}", Role.AUDITOR).status_code == 200
    finally:
        go.set()
        for thread in threads:
            thread.join(timeout=60)
    assert answers == dict.fromkeys(ids, 201)
    assert most[0] == 2  # never more than the two allowed
    assert api.store.verify().ok


def test_the_number_of_writes_at_once_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CREDIT_CONCURRENT_WRITES", raising=False)
    assert ServiceSettings.from_env().concurrent_writes == DEFAULT_CONCURRENT_WRITES
    monkeypatch.setenv("CREDIT_CONCURRENT_WRITES", "7")
    assert ServiceSettings.from_env().concurrent_writes == 7
    for bad in ("0", "-1", "four", "2.5"):
        monkeypatch.setenv("CREDIT_CONCURRENT_WRITES", bad)
        with pytest.raises(InputError, match=r"\$CREDIT_CONCURRENT_WRITES") as raised:
            ServiceSettings.from_env()
        assert raised.value.field == "CREDIT_CONCURRENT_WRITES"
    monkeypatch.setenv("CREDIT_CONCURRENT_WRITES", "3")
    monkeypatch.setenv("CREDIT_SESSION_SECRET", "too short")  # any setting refused
    with pytest.raises(InputError, match=r"\$CREDIT_SESSION_SECRET: String") as raised:
        ServiceSettings.from_env()
    assert raised.value.field == "CREDIT_SESSION_SECRET"
