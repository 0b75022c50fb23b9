"""Who may call what: every API route against every role and no key (the table test),
the session cookie, and the underwriter's responses walked for monitoring data."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import Request, Response
from pypdf import PdfReader

from credit.service.api import ROUTE_ROLES
from credit.service.app import api_routes as all_routes
from credit.service.auth import SESSION_COOKIE, Role, issue_session
from service_support import (
    MONITORING,
    PROHIBITED_KEYS,
    Api,
    golden,
    held_case,
    service_api,
    walk_keys,
    with_monitoring,
)

CASE = "ACC-DECLINE"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with service_api("sqlite", tmp_path_factory.mktemp("access")) as built:
        built.decided(with_monitoring(golden("G-DECLINE-SCORE", CASE)))
        held_case(built, "ACC-HELD")

        def login(request: Request, role: str) -> Response:
            response = Response(status_code=204)
            principal = built.app.state.keys.authenticate(built.keys[Role(role)])
            issue_session(response, principal)
            return response

        built.app.add_api_route("/test-login/{role}", login, methods=["POST"])
        yield built


def api_routes(api: Api) -> list[tuple[str, str]]:
    """Every (method, path) of the JSON API, from app.routes."""
    found = []
    for route in all_routes(api.app):
        if route.endpoint.__module__ == "credit.service.api":
            found.extend((method, route.path) for method in sorted(route.methods))
    return found


def call(api: Api, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    url = path.replace("{case_id}", CASE)
    body: Any = None
    if path.endswith(("/release", "/reject")):
        body = {"reason": "table test"}
    if path == "/v1/cases":
        return api.client.post(url, json=golden("G-DECLINE-DTI", "ACC-INTAKE"), headers=headers)
    return api.client.request(method, url, json=body, headers=headers)


def test_every_api_route_declares_its_roles_and_none_is_left_out(api: Api) -> None:
    routes = api_routes(api)
    assert set(routes) == set(ROUTE_ROLES)
    assert len(routes) >= 12
    others = [
        r.path
        for r in all_routes(api.app)
        if r.endpoint.__module__ not in ("credit.service.api", "credit.service.console")
        and not r.path.startswith("/test-login")
    ]
    assert others == [], f"routes outside the API and the console: {others}"


ROLE_COLUMNS: list[Role | None] = [None, *Role]


def test_the_access_table_no_key_401_wrong_role_403_right_role_neither(api: Api) -> None:
    """For each route and each column (no key, each role): the status class it gets."""
    table: dict[tuple[str, str], list[str]] = {}
    for method, path in api_routes(api):
        allowed = ROUTE_ROLES[(method, path)]
        row = []
        for role in ROLE_COLUMNS:
            response = call(api, method, path, api.headers(role))
            status = response.status_code
            assert status < 500, (method, path, role, response.text)
            if allowed is None:
                expected = "open"
                got = "open" if status not in (401, 403) else str(status)
            elif role is None:
                expected, got = "401", str(status)
            elif role in allowed:
                expected = "ok"
                got = "ok" if status not in (401, 403) else str(status)
            else:
                expected, got = "403", str(status)
            assert got == expected, f"{method} {path} as {role}: {status} {response.text}"
            if status in (401, 403):
                assert response.json()["error"]["field"] == "X-API-Key"
            row.append(got)
        table[(method, path)] = row
    # The rules the issue states, read off the table.
    columns = {role: i for i, role in enumerate(ROLE_COLUMNS)}
    for (method, path), row in table.items():
        if path.endswith(("/release", "/reject")):
            assert [r for r, c in columns.items() if row[c] == "ok"] == [Role.REVIEWER]
        if method != "GET" and row[columns[Role.AUDITOR]] == "ok":
            raise AssertionError(f"the auditor may call {method} {path}")


@pytest.mark.parametrize(
    "key",
    ["", "nonsense", "credit.0000000000000000.secret", "credit..", "x" * 500],
)
def test_an_unknown_or_malformed_key_is_401(api: Api, key: str) -> None:
    response = api.client.get("/v1/me", headers={"X-API-Key": key})
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "the credentials are not valid"


def test_a_right_key_id_with_a_wrong_secret_is_401(api: Api) -> None:
    prefix, key_id, _secret = api.keys[Role.AUDITOR].split(".")
    forged = f"{prefix}.{key_id}.{'A' * 43}"
    assert api.client.get("/v1/me", headers={"X-API-Key": forged}).status_code == 401


def test_the_key_table_holds_salted_hashes_never_the_keys(api: Api) -> None:
    from sqlalchemy import text

    with api.app.state.service_db.engine.connect() as conn:
        rows = conn.execute(text("SELECT key_id, secret_hash FROM api_keys")).all()
    assert len(rows) == len(Role) + 1  # and the second reviewer (four eyes)
    for key in api.keys.values():
        secret = key.split(".")[2]
        assert all(secret not in row.secret_hash for row in rows)
    assert all(
        re.fullmatch(r"scrypt\$\d+\$8\$1\$[0-9a-f]{32}\$[0-9a-f]{64}", r.secret_hash) for r in rows
    )
    assert len({r.secret_hash.split("$")[4] for r in rows}) == len(rows)  # one salt each


# ---------------------------------------------------------------------- the session cookie


def session(api: Api, role: Role) -> str:
    response = api.client.post(f"/test-login/{role.value}")
    api.client.cookies.clear()  # later requests send the cookie only when told to
    assert response.status_code == 204
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    return response.cookies[SESSION_COOKIE]


def cookie(token: str) -> dict[str, str]:
    return {"Cookie": f"{SESSION_COOKIE}={token}"}


def test_a_signed_session_cookie_authenticates_as_its_principal(api: Api) -> None:
    token = session(api, Role.REVIEWER)
    response = api.client.get("/v1/me", headers=cookie(token))
    assert response.json() == {"name": "reviewer-tester", "role": "reviewer"}
    queue = api.client.get("/v1/queue", headers=cookie(token))
    assert queue.status_code == 200


def test_a_tampered_session_cookie_is_401(api: Api) -> None:
    token = session(api, Role.AUDITOR)
    forged = token.replace("auditor", "reviewe")
    response = api.client.get("/v1/queue", headers=cookie(forged + "x"))
    assert response.status_code == 401


def test_a_console_session_cannot_change_state_through_the_json_api_from_any_origin(
    api: Api,
) -> None:
    token = session(api, Role.REVIEWER)
    body = {"reason": "from the console"}
    cross = api.client.post(
        "/v1/cases/ACC-HELD/release",
        json=body,
        headers={**cookie(token), "Origin": "https://evil.example"},
    )
    assert cross.status_code == 401
    same = api.client.post(
        "/v1/cases/ACC-HELD/release",
        json=body,
        headers={**cookie(token), "Origin": "http://testserver"},
    )
    assert same.status_code == 403, same.text
    assert "X-API-Key" in same.json()["error"]["message"]
    assert api.store.entries("ACC-HELD", kinds=["keystone.released"]) == []
    reads = api.client.get("/v1/queue", headers={**cookie(token), "Origin": "http://testserver"})
    assert reads.status_code == 200


# ---------------------------------------------------------------------- monitoring data


def test_the_underwriter_never_receives_monitoring_data_from_any_route(api: Api) -> None:
    """Every response the underwriter's key gets, from every route (allowed or not):
    no monitoring key, no review or finding, no monitoring value anywhere in the bytes."""
    case = with_monitoring(golden("G-COUNTER-AUTO", "ACC-MON"))
    case["application"]["dateOfBirth"] = "1985-02-03"
    taken = api.take_in(case)
    assert taken.status_code == 201 and taken.json()["moved"] == ["application.dateOfBirth"]
    headers = api.headers(Role.UNDERWRITER)
    responses = [api.client.post("/v1/cases/ACC-MON/decide", headers=headers)]
    assert responses[0].status_code == 201
    for method, path in api_routes(api):
        url = path.replace("{case_id}", "ACC-MON")
        body = {"reason": "walk"} if path.endswith(("/release", "/reject")) else None
        responses.append(api.client.request(method, url, json=body, headers=headers))
        responses.append(
            api.client.request(method, url + "?format=pdf", json=body, headers=headers)
        )
    assert any(r.headers["content-type"] == "application/pdf" for r in responses)
    secrets = [str(v) for v in MONITORING.values() if isinstance(v, str)] + ["1985-02-03"]
    for response in responses:
        assert response.status_code < 500, response.text
        content = response.content
        if response.headers["content-type"] == "application/pdf":
            reader = PdfReader(io.BytesIO(content))
            content = "\n".join(page.extract_text() for page in reader.pages).encode()
        for secret in secrets:
            assert secret.encode() not in content, (response.url, secret)
        if response.headers["content-type"].startswith("application/json"):
            found = PROHIBITED_KEYS & set(walk_keys(response.json()))
            assert not found, (response.url, found)
