"""Schemathesis against the OpenAPI document, the app in process, with a valid API key
of a role allowed on each operation: bounded examples per operation, valid and
invalid. No 500; every 4xx is the error shape, and a 422 names the field; responses
conform to the document (status codes, content types, schemas)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from credit.cli.service import openapi_text
from credit.service.api import ROUTE_ROLES
from service_support import Api, golden, held_case, service_api

MAX_EXAMPLES = 25
KNOWN_CASES = ("FUZZ-1", "FUZZ-2")
DOCUMENT = json.loads(openapi_text())
OPERATIONS = [
    (method.upper(), path)
    for path, item in sorted(DOCUMENT["paths"].items())
    for method in sorted(item)
]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with service_api("sqlite", tmp_path_factory.mktemp("fuzz")) as built:
        built.decided(golden("G-DECLINE-SCORE", KNOWN_CASES[0]))
        held_case(built, KNOWN_CASES[1])
        yield built


@pytest.fixture(scope="module")
def schema(api: Api) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", api.app)


def error_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx: {"error": {"message", "field", "caseId"}}; a 422 names the field."""
    if not 400 <= response.status_code < 500:
        return None
    body = json.loads(response.content)
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "field", "caseId"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if response.status_code == 422:
        assert body["error"]["field"], f"a 422 that names no field: {body}"
    return True


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
    error_shape,
]


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_answers_generated_requests_without_a_server_error(
    api: Api, schema: Any, method: str, path: str
) -> None:
    operation = schema[path][method]
    roles = ROUTE_ROLES[(method, path)]
    headers = api.headers(roles[0]) if roles else {}
    strategies = [
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    ]
    if "{case_id}" in path:  # the known cases too: a released decline, a held case
        strategies += [
            operation.as_strategy(path_parameters={"case_id": case_id}) for case_id in KNOWN_CASES
        ]
    strategy = st.one_of(*strategies)

    @given(case=strategy)
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        case.headers = {**(case.headers or {}), **headers}
        response = case.call()
        case.validate_response(response, checks=CHECKS)

    run()
