"""The FastAPI application: ``create_app(settings)``.

``app.state`` holds what routes need (the console's included):

- ``settings``: :class:`~credit.service.settings.ServiceSettings`
- ``store``: the journal :class:`~credit.journal.Store`; ``registry``: the policies
- ``outbox``: where sent notices go; ``keys``: the API-key store; ``claims``;
  ``service_db``: the service's tables (None when the caller handed in the stores)
- ``service``: :class:`~credit.service.cases.CaseService` (decide, release, ...)

The JSON API is at ``/v1`` (:mod:`credit.service.api`), ``GET /healthz`` is open.
When :mod:`credit.service.console` exists its ``router`` is included, and the
package's ``static/`` folder (if any) is served at ``/console/static`` (route name
``console-static``).

Every error is JSON ``{"error": {"message", "field", "caseId"}}``. A request body over
``settings.max_body_bytes`` is refused with 413 before it is read in full.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from credit import __version__
from credit.errors import (
    AccessError,
    CaseNotHeldError,
    CreditError,
    GovernanceError,
    InputError,
    IntakeConflictError,
    JournalIntegrityError,
    NoticeError,
    ServiceError,
)
from credit.journal.base import (
    DecisionAlreadyRecordedError,
    JournalError,
    StaleCaseError,
    Store,
)
from credit.journal.signer import checkpoints_dir, ensure_journal_key
from credit.journal.sql import SqlStore, open_store
from credit.notices.outbox import DirectoryOutbox, Outbox
from credit.policy import PolicyRegistry
from credit.service.auth import current_app_state
from credit.service.cases import CaseService
from credit.service.claims import Claims, MemoryClaims, SqlClaims
from credit.service.keys import KeyStore, MemoryKeyStore, SqlKeyStore
from credit.service.settings import ServiceSettings
from credit.service.tables import ServiceDb
from credit.service.wire import error_response
from credit.service.writes import WriteSlots

__all__ = ["api_routes", "create_app", "create_app_from_env"]

log = logging.getLogger("credit.service")

TITLE: Final = "credit"
DESCRIPTION: Final = (
    "Governed consumer credit decisioning over HTTP: intake, the governed underwriter "
    "turn and the Keystone gate, adverse-action notices (JSON and PDF), the held queue "
    "and the hash-chained journal. Every call but `/healthz` needs an API key "
    "(`X-API-Key`) of a role allowed to make it."
)


class BodyLimit:
    """Refuse a request body over ``limit`` bytes with 413 (by Content-Length, or while
    it streams in), before the route reads it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                declared = -1
            if declared < 0:
                await self._refuse(scope, receive, send, 400, "Content-Length is not a number")
                return
            if declared > self.limit:
                await self._refuse(scope, receive, send, 413, self._message())
                return
        received = 0
        too_large = False
        response_started = False
        replaced = False

        async def limited_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    too_large = True
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            # A route that turned the interrupted read into a response of its own (a
            # 400 "error parsing the body") answers 413 instead.
            nonlocal response_started, replaced
            if message["type"] == "http.response.start":
                response_started = True
                if too_large:
                    replaced = True
                    await self._refuse(scope, receive, send, 413, self._message())
                    return
            if not replaced:
                await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except Exception:
            if too_large and not response_started:
                await self._refuse(scope, receive, send, 413, self._message())
            else:
                raise

    def _message(self) -> str:
        return f"the request body is over the limit of {self.limit} bytes"

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, text: str) -> None:
        response = error_response(status, text, field="body")
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass


class AppStateContext:
    """Make the app's state reachable from code handed no request (issue_session)."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = current_app_state.set(self.state)
        try:
            await self.app(scope, receive, send)
        finally:
            current_app_state.reset(token)


# ---------------------------------------------------------------------- errors -> JSON


def _status_of(err: CreditError) -> int:
    if isinstance(err, (AccessError, ServiceError)):
        return err.status
    if isinstance(
        err, (IntakeConflictError, DecisionAlreadyRecordedError, CaseNotHeldError, StaleCaseError)
    ):
        return 409
    if isinstance(err, InputError):
        return 422
    if isinstance(err, (GovernanceError, NoticeError, JournalIntegrityError)):
        return 409  # a journal integrity failure: the service refuses to act on it
    if isinstance(err, JournalError):
        return 503
    return 500


def _credit_error(request: Request, err: Exception) -> JSONResponse:
    assert isinstance(err, CreditError)
    status = _status_of(err)
    if status >= 500:
        log.error("%s %s failed: %s", request.method, request.url.path, err)
    message = getattr(err, "message", None) or str(err)
    field = getattr(err, "field", None)
    case_id = getattr(err, "case_id", None) or request.path_params.get("case_id")
    headers = {"WWW-Authenticate": "ApiKey"} if status == 401 else None
    if isinstance(err, IntakeConflictError) and field is None:
        field = "caseId"
    return error_response(status, str(message), field=field, case_id=case_id, headers=headers)


def _field_of(loc: Any) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:] or parts
    return ".".join(parts)


def _validation_error(request: Request, err: Exception) -> JSONResponse:
    assert isinstance(err, RequestValidationError)
    errors = list(err.errors())
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request"}
    field = _field_of(first.get("loc", ("body",)))
    message = str(first.get("msg", "invalid request"))
    if first.get("type") == "json_invalid":
        message = "the body is not valid JSON"
        field = "body"
    return error_response(
        422, f"{field}: {message}", field=field, case_id=request.path_params.get("case_id")
    )


def _http_error(request: Request, err: Exception) -> JSONResponse:
    assert isinstance(err, StarletteHTTPException)
    status = err.status_code
    message = str(err.detail) if err.detail else "error"
    if status == 400 and message == _BODY_UNREADABLE:  # a body not JSON at all (not UTF-8)
        why = f": {err.__cause__}" if err.__cause__ is not None else ""
        return error_response(
            422,
            f"the body is not valid JSON{why}",
            field="body",
            case_id=request.path_params.get("case_id"),
        )
    if status == 404 and message == "Not Found":
        message = f"no such path: {request.url.path}"
    if status == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    return error_response(status, message, headers=getattr(err, "headers", None))


# FastAPI's words for a declared body it could not decode (bytes that are not UTF-8).
_BODY_UNREADABLE: Final = "There was an error parsing the body"


def _unexpected(request: Request, err: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path, exc_info=err)
    return error_response(500, f"internal error ({type(err).__name__}); see the server log")


# ---------------------------------------------------------------------- the factory


def create_app(
    settings: ServiceSettings | None = None,
    *,
    store: Store | None = None,
    keys: KeyStore | None = None,
    claims: Claims | None = None,
    outbox: Outbox | None = None,
    registry: PolicyRegistry | None = None,
    checkpoints: Path | None = None,
    freeze_gc: bool = False,
) -> FastAPI:
    """The service. ``settings`` say where the journal, keys and outbox are; tests may
    hand in a store, key store, claims or outbox instead. ``checkpoints``: the folder
    the tree head is signed into at the settings' interval (default $CREDIT_CHECKPOINTS, else
    ./checkpoints; one folder per journal). A store opened here (from
    ``settings.database_url``) is closed when the app shuts down (or by
    ``app.state.close()`` for an app never started). ``freeze_gc``: once started, freeze
    the process's objects out of the garbage collector (``gc.freeze``), for a process
    that is the app's alone (a ``credit serve`` worker)."""
    settings = settings or ServiceSettings()
    owned: SqlStore | None = None
    service_db: ServiceDb | None = None
    try:
        if store is None:
            owned = store = open_store(
                settings.database_url,
                schema=settings.schema_name,
                create=settings.create_tables,
                key=ensure_journal_key(),
            )
            if keys is None or claims is None:
                service_db = ServiceDb(
                    settings.database_url,
                    schema=settings.schema_name,
                    create=settings.create_tables,
                )
        if service_db is not None:
            keys = keys or SqlKeyStore(service_db)
            claims = claims or SqlClaims(service_db)
        keys = keys or MemoryKeyStore()
        claims = claims or MemoryClaims()
        outbox = outbox or DirectoryOutbox(settings.outbox)
        registry = registry or PolicyRegistry.bundled()
    except BaseException:
        for opened in (owned, service_db):
            if opened is not None:
                opened.close()
        raise

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            # Finish what a killed worker left half way (a review, a notice): the system
            # does it, at start-up, never a person.
            _app.state.service.start()
            # The requests that write the journal, a few at a time, the cases taken in
            # before new ones (docs/service.md, "Writes at once"): the worker's loop's.
            _app.state.writes = WriteSlots(settings.concurrent_writes)
            if freeze_gc:
                # A served worker's start-up objects (modules, models and their schemas,
                # the policies) live as long as it does: kept out of every collection,
                # a full collection pauses a request for about 13 ms instead of 75.
                gc.freeze()
            yield
        finally:
            close()

    from credit.service.api import router as api_router
    from credit.service.api import service_openapi

    app = FastAPI(
        title=TITLE,
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.store = store
    app.state.registry = registry
    app.state.outbox = outbox
    app.state.keys = keys
    app.state.claims = claims
    app.state.service = CaseService(
        store,
        outbox,
        claims,
        registry=registry,
        claim_stale_after_s=settings.claim_stale_after_s,
        checkpoints=checkpoints_dir(checkpoints),
        checkpoint_interval_s=settings.checkpoint_interval_s,
    )
    app.state.service_db = service_db

    def close() -> None:
        """Close what this app opened (the tool sessions its workers kept, its store
        and service tables)."""
        app.state.service.close()
        for opened in (owned, service_db):
            if opened is not None:
                opened.close()

    app.state.close = close

    app.add_exception_handler(CreditError, _credit_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)

    app.include_router(api_router)
    _include_console(app)
    app.add_middleware(AppStateContext, state=app.state)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = service_openapi(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def api_routes(app: FastAPI) -> list[APIRoute]:
    """Every APIRoute of the app, those of included routers too (FastAPI keeps an
    included router as one entry of ``app.routes``)."""
    found: list[APIRoute] = []

    def walk(routes: Sequence[BaseRoute]) -> None:
        for route in routes:
            if isinstance(route, APIRoute):
                found.append(route)
            inner = getattr(route, "original_router", None)
            if inner is not None:
                walk(inner.routes)

    walk(app.routes)
    return found


def _include_console(app: FastAPI) -> None:
    if importlib.util.find_spec("credit.service.console") is None:
        return
    from credit.service.console import router as console_router  # type: ignore[import-not-found, unused-ignore]

    app.include_router(console_router)
    static = Path(__file__).with_name("static")
    if static.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/console/static", StaticFiles(directory=static), name="console-static")


def create_app_from_env() -> FastAPI:
    """The app ``credit serve`` runs in each worker: settings from ``CREDIT_*``. The
    worker process is the app's alone, so its start-up objects are frozen out of the
    garbage collector once it has started (``gc.freeze``); an app made in a process of
    its own (a test's) is not."""
    return create_app(ServiceSettings.from_env(), freeze_gc=True)
