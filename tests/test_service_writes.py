"""The requests that write the journal, a few at a time in each worker process
(:mod:`credit.service.writes`, ``concurrent_writes``): never more at once than the
setting allows, the rest waiting their turn; reads not held up by them."""

from __future__ import annotations

import asyncio
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
from credit.service.writes import WriteSlots
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


# ------------------------------------------------------------- the slots themselves


def _run(coro: Any) -> Any:
    """The scenario, bounded: a slot lost leaves a waiter waiting for ever."""
    return asyncio.run(asyncio.wait_for(coro, timeout=10))


async def _settle() -> None:
    for _ in range(5):  # let every task that can run reach its next wait
        await asyncio.sleep(0)


def test_a_slot_that_comes_free_goes_to_a_case_taken_in_before_a_new_case() -> None:
    async def scenario() -> list[str]:
        slots = WriteSlots(1)
        order: list[str] = []
        await slots.acquire(new_case=False)  # the slot is held

        async def wants(name: str, *, new_case: bool) -> None:
            await slots.acquire(new_case=new_case)
            order.append(name)
            await asyncio.sleep(0)
            slots.release()

        tasks = []
        for name, new_case in (
            ("intake 1", True),
            ("intake 2", True),
            ("decide 1", False),
            ("send 1", False),
        ):  # the intakes came first
            tasks.append(asyncio.create_task(wants(name, new_case=new_case)))
            await _settle()
        assert slots.waiting(new_case=True) == 2 and slots.waiting(new_case=False) == 2
        slots.release()
        await asyncio.gather(*tasks)
        assert slots.free == 1
        return order

    # the case work first, each kind in the order it came
    assert _run(scenario()) == ["decide 1", "send 1", "intake 1", "intake 2"]


def test_a_new_case_takes_a_free_slot_at_once_and_no_more_run_than_the_slots() -> None:
    async def scenario() -> int:
        slots = WriteSlots(2)
        running, most = 0, 0

        async def write(new_case: bool) -> None:
            nonlocal running, most
            await slots.acquire(new_case=new_case)
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.001)
            running -= 1
            slots.release()

        await asyncio.gather(*(write(i % 3 == 0) for i in range(12)))
        assert slots.free == 2 and running == 0
        return most

    assert _run(scenario()) == 2


def test_a_waiter_whose_client_went_away_takes_no_slot_and_loses_none() -> None:
    async def scenario() -> None:
        slots = WriteSlots(1)
        await slots.acquire(new_case=False)
        gone = asyncio.create_task(slots.acquire(new_case=False))
        stays = asyncio.create_task(slots.acquire(new_case=True))
        await _settle()
        gone.cancel()  # cancelled while it waits
        await _settle()
        assert gone.cancelled() and slots.waiting(new_case=False) == 0
        slots.release()  # passes the cancelled waiter over, to the new case
        await _settle()
        assert stays.done() and slots.free == 0
        # cancelled, and the slot given back before the waiter's task ran again: the
        # cancelled waiter is still queued, and passed over
        gone = asyncio.create_task(slots.acquire(new_case=False))
        stays = asyncio.create_task(slots.acquire(new_case=True))
        await _settle()
        gone.cancel()
        slots.release()
        await _settle()
        assert gone.cancelled() and stays.done() and slots.free == 0
        # handed the slot, then cancelled before it ran: the slot goes on, not lost
        late = asyncio.create_task(slots.acquire(new_case=False))
        await _settle()
        slots.release()
        late.cancel()
        await _settle()
        assert late.cancelled() and slots.free == 1

    _run(scenario())


def test_there_is_no_write_slots_without_a_slot() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        WriteSlots(0)


def test_in_the_service_a_decide_waiting_goes_before_an_intake_that_waited_longer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with service_api("sqlite", tmp_path, concurrent_writes=1) as api:
        for case_id in ("FIRST-1", "FIRST-2"):
            assert api.take_in(approvable(case_id)).status_code == 201
        slots: WriteSlots = api.app.state.writes
        ran: list[str] = []
        go = threading.Event()
        real_decide, real_take_in = CaseService.decide, CaseService.take_in

        def decide(self: CaseService, case_id: str, principal: Any) -> dict[str, Any]:
            ran.append(case_id)
            if case_id == "FIRST-1":
                assert go.wait(timeout=30), "the test never let the first decide go"
            return real_decide(self, case_id, principal)

        def take_in(self: CaseService, raw: Any) -> dict[str, Any]:
            ran.append(raw["caseId"])
            return real_take_in(self, raw)

        monkeypatch.setattr(CaseService, "decide", decide)
        monkeypatch.setattr(CaseService, "take_in", take_in)
        answers: dict[str, int] = {}

        def wait_for(ready: Any) -> None:
            deadline = time.monotonic() + 30
            while not ready() and time.monotonic() < deadline:
                time.sleep(0.005)
            assert ready()

        calls = {
            "FIRST-1": lambda: api.decide("FIRST-1"),
            "NEW-1": lambda: api.take_in(approvable("NEW-1")),
            "FIRST-2": lambda: api.decide("FIRST-2"),
        }
        threads = []
        try:
            for case_id, ready in (
                ("FIRST-1", lambda: ran == ["FIRST-1"]),  # holds the one slot
                ("NEW-1", lambda: slots.waiting(new_case=True) == 1),
                ("FIRST-2", lambda: slots.waiting(new_case=False) == 1),
            ):
                call = calls[case_id]
                thread = threading.Thread(
                    target=lambda c=case_id, f=call: answers.__setitem__(c, f().status_code)
                )
                thread.start()
                threads.append(thread)
                wait_for(ready)
        finally:
            go.set()
            for thread in threads:
                thread.join(timeout=60)
        assert ran == ["FIRST-1", "FIRST-2", "NEW-1"]
        assert answers == {"FIRST-1": 201, "FIRST-2": 201, "NEW-1": 201}
        assert slots.free == 1
        assert api.store.verify().ok


def test_a_write_that_fails_gives_its_slot_back_before_its_answer(tmp_path: Path) -> None:
    with service_api("sqlite", tmp_path, concurrent_writes=1) as api:
        slots: WriteSlots = api.app.state.writes
        for _ in range(3):  # a 404 from inside the route: the slot is back at once
            assert api.decide("NEVER-TAKEN-IN").status_code == 404
            assert slots.free == 1
        assert api.take_in(approvable("AFTER-1")).status_code == 201
        assert api.decide("AFTER-1").status_code == 201
        assert api.decide("AFTER-1").status_code == 409  # decided: refused, slot back
        assert slots.free == 1
