"""Builders for the HTTP service tests.

``service_api(backend, tmp)`` builds the app on a fresh SQLite file or a fresh
PostgreSQL schema (skipped without ``CREDIT_TEST_DATABASE_URL``), makes one API key per
role (at a low scrypt cost: the hash format names its cost, so the app checks it as any
other key) and yields an :class:`Api` with a TestClient running the app's lifespan.
``held_case`` journals a tampered decision the Keystone gate holds, for the release and
reject routes. :mod:`credit.service.launch` runs a real server.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient

from conftest import auto_case, card_case
from credit.governance.keystone import Keystone
from credit.journal import SqlStore
from credit.service.app import create_app
from credit.service.auth import Role
from credit.service.keys import SqlKeyStore
from credit.service.settings import ServiceSettings
from credit.service.tables import ServiceDb
from governance_support import monitoring, record
from test_journal_store import pg_schema

BACKENDS = ("sqlite", "postgresql")
GOLDEN_CASES = Path(__file__).resolve().parent / "golden" / "cases.jsonl"
CHEAP_SCRYPT_N = 2**10
ROLES = tuple(Role)

# Monitoring data with values no decision, notice or finding would state by accident.
MONITORING = monitoring(race="Zyxian", ethnicity="Qwertian", sex="Female", age=41)
PROHIBITED_KEYS = frozenset(
    {
        "monitoring",
        "race",
        "ethnicity",
        "sex",
        "age",
        "maritalStatus",
        "publicAssistanceIncome",
        "dateOfBirth",
        "moved",
        "reviews",
        "findings",
    }
)


def golden(case_id: str, new_id: str | None = None) -> dict[str, Any]:
    """A golden case (decline or counteroffer) in wire form, optionally renamed."""
    for line in GOLDEN_CASES.read_text(encoding="utf-8").splitlines():
        case: dict[str, Any] = json.loads(line)
        if case["caseId"] == case_id:
            if new_id is not None:
                case["caseId"] = new_id
            return case
    raise KeyError(case_id)


def approvable(case_id: str, *, product: str = "auto") -> dict[str, Any]:
    return auto_case(case_id=case_id) if product == "auto" else card_case(case_id=case_id)


@dataclass
class Api:
    client: TestClient
    app: FastAPI
    keys: dict[Role, str]
    names: dict[Role, str]
    second_reviewer: str = ""  # another reviewer's key (four eyes)
    second_reviewer_name: str = ""

    @property
    def store(self) -> SqlStore:
        store: SqlStore = self.app.state.store
        return store

    def headers(self, role: Role | None) -> dict[str, str]:
        return {} if role is None else {"X-API-Key": self.keys[role]}

    def take_in(self, case: Mapping[str, Any]) -> httpx.Response:
        return self.client.post(
            "/v1/cases", content=json.dumps(case), headers=self.headers(Role.INTAKE)
        )

    def decide(self, case_id: str) -> httpx.Response:
        return self.client.post(
            f"/v1/cases/{case_id}/decide", headers=self.headers(Role.UNDERWRITER)
        )

    def get(self, path: str, role: Role, **params: str) -> httpx.Response:
        return self.client.get(path, headers=self.headers(role), params=params)

    def post(self, path: str, role: Role, body: Any = None) -> httpx.Response:
        return self.client.post(path, headers=self.headers(role), json=body)

    def post_as(self, path: str, key: str, body: Any = None) -> httpx.Response:
        return self.client.post(path, headers={"X-API-Key": key}, json=body)

    def released_by_two(self, case_id: str, reason: str = "checked by hand") -> httpx.Response:
        """A held case approved by the reviewer and released by a second reviewer."""
        first = self.post(f"/v1/cases/{case_id}/release", Role.REVIEWER, {"reason": reason})
        assert first.status_code == 200, first.text
        return self.post_as(
            f"/v1/cases/{case_id}/release", self.second_reviewer, {"reason": reason}
        )

    def decided(self, case: Mapping[str, Any]) -> dict[str, Any]:
        """Take the case in and decide it; the decide response's JSON."""
        assert self.take_in(case).status_code == 201
        response = self.decide(case["caseId"])
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body


@contextmanager
def database(backend: str, tmp: Path) -> Iterator[tuple[str, str | None]]:
    """(url, schema): a fresh SQLite file, or a fresh PostgreSQL schema."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp / 'service.db'}", None
    else:
        with pg_schema() as (url, schema):
            yield url, schema


def make_keys(db: ServiceDb) -> tuple[dict[Role, str], dict[Role, str]]:
    keys_store = SqlKeyStore(db, scrypt_n=CHEAP_SCRYPT_N)
    keys: dict[Role, str] = {}
    names: dict[Role, str] = {}
    for role in ROLES:
        record_, key = keys_store.create(role, f"{role.value}-tester")
        keys[role], names[role] = key, record_.name
    return keys, names


SECOND_REVIEWER = "reviewer-2-tester"


@contextmanager
def service_api(backend: str, tmp: Path, **settings: Any) -> Iterator[Api]:
    with database(backend, tmp) as (url, schema):
        config = ServiceSettings(
            database_url=url, schema_name=schema, outbox=tmp / "outbox", **settings
        )
        app = create_app(config, checkpoints=tmp / "checkpoints")
        keys, names = make_keys(app.state.service_db)
        second = SqlKeyStore(app.state.service_db, scrypt_n=CHEAP_SCRYPT_N)
        _, second_key = second.create(Role.REVIEWER, SECOND_REVIEWER)
        with TestClient(app) as client:
            yield Api(client, app, keys, names, second_key, SECOND_REVIEWER)


def held_case(api: Api, case_id: str) -> None:
    """A case held at the gate: its decision tampered with (Backstop disagrees)."""
    case = auto_case(case_id=case_id, score=560)
    record(api.store, case, monitor=MONITORING, changes={"decision": "refer"})
    assert Keystone(api.store).review(case_id).state == "held"


def with_monitoring(case: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(case))
    out["monitoring"] = dict(MONITORING)
    return out


def walk_keys(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from walk_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk_keys(item)
