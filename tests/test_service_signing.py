"""The service's checkpoints at an interval (ADR-0003), on both databases.

A write is answered once its entries are committed; the worker's cadence signs the
tree head within an interval, and at shutdown whatever waits. When a signature fails,
``GET /healthz`` is 503 naming why and every write is refused (503, nothing recorded)
until a signature succeeds. An interval of 0 signs before each write's answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from conftest import auto_case
from credit.errors import InputError
from credit.journal.checkpoint import newest_file
from credit.journal.tree import covering_checkpoint
from credit.service.app import create_app
from credit.service.auth import Role
from credit.service.settings import CHECKPOINT_INTERVAL_ENV, ServiceSettings
from governance_support import record
from service_support import BACKENDS, MONITORING, Api, approvable, service_api
from test_service_api import error

LONG = 60.0  # the longest the settings allow, and no test outlasts it: a close or a flush signs


@pytest.fixture(params=BACKENDS)
def slow(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    """A service whose cadence signs once an hour (its first write's head at once)."""
    with service_api(request.param, tmp_path, checkpoint_interval_s=LONG) as api:
        yield api


def signed_size(tmp_path: Path) -> int:
    newest = newest_file(tmp_path / "checkpoints", pointer=False)
    return 0 if newest is None else int(newest[:20])


def test_a_write_is_answered_before_its_head_is_signed_and_shutdown_signs_it(
    tmp_path: Path,
) -> None:
    with service_api("sqlite", tmp_path, checkpoint_interval_s=LONG) as api:
        cadence = api.app.state.service.cadence
        first = api.take_in(approvable("SIGN-1"))
        assert first.status_code == 201
        # the thread signs the first write of an interval; wait for it to be done
        cadence.flush()
        assert signed_size(tmp_path) == len(api.store.entries())
        decided = api.decide("SIGN-1")
        assert decided.status_code == 201
        entries = len(api.store.entries())
        assert signed_size(tmp_path) < entries  # answered, not yet signed
        health = api.client.get("/healthz").json()
        assert health["status"] == "ok"
        assert health["signing"]["waiting"] == entries - signed_size(tmp_path)
        assert health["signing"]["intervalS"] == LONG and health["signing"]["error"] is None
    assert signed_size(tmp_path) == entries  # the shutdown signed what waited


def test_with_an_interval_of_0_every_write_is_covered_before_its_answer(
    tmp_path: Path,
) -> None:
    with service_api("sqlite", tmp_path, checkpoint_interval_s=0) as api:
        key = api.store.key
        for case_id in ("SIGN-0-A", "SIGN-0-B"):
            assert api.take_in(approvable(case_id)).status_code == 201
            size = len(api.store.entries())
            assert covering_checkpoint(tmp_path / "checkpoints", key, size) is not None
            assert api.decide(case_id).status_code == 201
            size = len(api.store.entries())
            assert covering_checkpoint(tmp_path / "checkpoints", key, size) is not None
        assert api.client.get("/healthz").json()["signing"]["waiting"] == 0


def test_a_signature_that_fails_refuses_every_write_until_one_succeeds(
    slow: Api, tmp_path: Path
) -> None:
    cadence = slow.app.state.service.cadence
    assert slow.take_in(approvable("SIGN-F-1")).status_code == 201
    cadence.flush()
    folder = tmp_path / "checkpoints"
    hidden = tmp_path / "checkpoints-away"
    folder.rename(hidden)
    folder.write_text("not a folder")  # the checkpoints cannot be kept
    assert slow.take_in(approvable("SIGN-F-2")).status_code == 201  # waits to be signed
    with pytest.raises(OSError):
        cadence.flush()
    health = slow.client.get("/healthz")
    assert health.status_code == 503
    assert health.json()["status"] == "degraded"
    failed = health.json()["signing"]["error"]  # the open health check names no path
    assert failed.endswith("Error") and str(tmp_path) not in health.text
    before = slow.store.entries()
    for refused in (
        slow.take_in(approvable("SIGN-F-3")),
        slow.decide("SIGN-F-2"),
        slow.post("/v1/cases/SIGN-F-2/withdraw", Role.OFFICER, {"reason": "asked"}),
    ):
        assert refused.status_code == 503, refused.text
        assert "could not be signed" in error(refused)["message"]
        assert "nothing was recorded" in error(refused)["message"]
        assert str(tmp_path) not in refused.text
    assert slow.store.entries() == before
    # reads go on: the journal is there, only its newest head is unsigned
    assert slow.get("/v1/cases/SIGN-F-2", Role.AUDITOR).status_code == 200
    folder.unlink()
    hidden.rename(folder)  # mended: the next signature succeeds, and writes go on
    cadence.flush()
    assert slow.client.get("/healthz").status_code == 200
    assert slow.decide("SIGN-F-2").status_code == 201


def test_a_worker_starts_by_signing_what_a_killed_worker_left(tmp_path: Path) -> None:
    with service_api("sqlite", tmp_path, checkpoint_interval_s=LONG) as api:
        url = api.store.url
        api.app.state.service.cadence = None  # as if killed: nothing signs its entries
        assert api.take_in(approvable("SIGN-K-1")).status_code == 201
        assert api.take_in(approvable("SIGN-K-2")).status_code == 201
        entries = len(api.store.entries())
    assert signed_size(tmp_path) < entries
    settings = ServiceSettings(database_url=url, outbox=tmp_path / "outbox")
    with TestClient(create_app(settings, checkpoints=tmp_path / "checkpoints")):
        assert signed_size(tmp_path) == entries  # at start, before any request


def test_a_read_that_finishes_the_systems_pending_work_has_it_signed(tmp_path: Path) -> None:
    with service_api("sqlite", tmp_path, checkpoint_interval_s=LONG) as api:
        cadence = api.app.state.service.cadence
        # a decision recorded with no Keystone review, as a worker killed before its
        # review leaves it (written here, behind the service's back: nothing told)
        record(api.store, auto_case(case_id="SIGN-R-1"), monitor=MONITORING)
        before = len(api.store.entries())
        assert cadence.status().waiting == 0
        read = api.get("/v1/cases/SIGN-R-1", Role.AUDITOR)
        assert read.status_code == 200 and read.json()["state"] != "pending"
        after = len(api.store.entries())
        assert after > before  # the read did the review first
        assert cadence.status().signed + cadence.status().waiting == after
    assert signed_size(tmp_path) == after


@pytest.mark.parametrize(
    ("text", "seconds"), [("0", 0.0), ("0.25", 0.25), ("2", 2.0), ("60", 60.0)]
)
def test_the_interval_comes_from_its_variable(
    text: str, seconds: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHECKPOINT_INTERVAL_ENV, text)
    assert ServiceSettings.from_env(database_url="sqlite://").checkpoint_interval_s == seconds


@pytest.mark.parametrize("text", ["-1", "nan", "inf", "1e3", "soon", "61", "0.1.2"])
def test_a_bad_interval_is_refused_naming_its_variable(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHECKPOINT_INTERVAL_ENV, text)
    with pytest.raises(InputError) as raised:
        ServiceSettings.from_env(database_url="sqlite://")
    assert CHECKPOINT_INTERVAL_ENV in str(raised.value)
