"""The OpenAPI document: served by the app and committed as docs/openapi.json."""

from __future__ import annotations

import json
from pathlib import Path

from credit.cli.service import openapi_text
from credit.service.api import ROUTE_ROLES

COMMITTED = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"


def test_the_committed_openapi_document_is_the_apps_schema() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == openapi_text(), (
        "docs/openapi.json is stale: regenerate it with "
        "`credit serve --print-openapi > docs/openapi.json`"
    )


def test_every_guarded_operation_documents_the_api_key_and_its_auth_errors() -> None:
    document = json.loads(openapi_text())
    schemes = document["components"]["securitySchemes"]
    assert schemes["APIKeyHeader"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "An API key (`credit keys create`).",
    }
    for (method, path), roles in ROUTE_ROLES.items():
        operation = document["paths"][path][method.lower()]
        statuses = set(operation["responses"])
        if roles is None:
            assert "security" not in operation
            continue
        assert {"APIKeyHeader": []} in operation["security"]
        assert {"401", "403", "422"} <= statuses, (method, path)
        for status in statuses - {"200", "201"}:
            schema = operation["responses"][status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}


def test_the_intake_body_is_the_case_format_schema() -> None:
    document = json.loads(openapi_text())
    body = document["paths"]["/v1/cases"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Case"}
    case = document["components"]["schemas"]["Case"]
    assert set(case["required"]) == {"caseId", "asOf", "application", "creditReport"}
