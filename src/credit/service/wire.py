"""JSON on the wire: exact decimals (canonical JSON), and the one error shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi.responses import JSONResponse

from credit.canonical import dumps

__all__ = ["WireJSONResponse", "error_body", "error_response"]


class WireJSONResponse(JSONResponse):
    """JSON with Decimals written with exactly their digits (``9.99``, ``28000.00``)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")


def error_body(
    message: str, *, field: str | None = None, case_id: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "field": field, "caseId": case_id}}


def error_response(
    status: int,
    message: str,
    *,
    field: str | None = None,
    case_id: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    return WireJSONResponse(
        error_body(message, field=field, case_id=case_id),
        status_code=status,
        headers=dict(headers) if headers else None,
    )
