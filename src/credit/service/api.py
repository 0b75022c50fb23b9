"""The JSON API (``/v1``) and ``GET /healthz``.

| method | path | roles |
|---|---|---|
| GET | /healthz | open |
| GET | /v1/me | any role |
| POST | /v1/cases | intake |
| GET | /v1/cases/{caseId} | any role (Keystone reviews: reviewer, auditor) |
| POST | /v1/cases/{caseId}/decide | underwriter |
| GET | /v1/cases/{caseId}/notice[?format=pdf], /notice/pdf | underwriter, reviewer, auditor |
| POST | /v1/cases/{caseId}/notice/send | underwriter, reviewer |
| GET | /v1/queue | reviewer, officer, auditor |
| POST | /v1/cases/{caseId}/release, /reject | reviewer |
| POST | /v1/cases/{caseId}/manual-decision, /withdraw | officer |
| GET | /v1/cases/{caseId}/journal | reviewer, auditor |
| GET | /v1/journal/verify | reviewer, auditor |

The underwriter role never receives monitoring data: no route it may call returns the
monitoring vault, the Keystone reviews (the comparative review reads monitoring data)
or the journal.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, Final, Literal, TypeVar

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from starlette.concurrency import run_in_threadpool

from credit import __version__
from credit.cases import read_document
from credit.errors import InputError, ServiceError
from credit.governance.onramp import screen
from credit.journal.sql import SqlStore
from credit.lifecycle import ItemKind
from credit.models import Case
from credit.service.auth import Principal, Role, require_roles
from credit.service.cases import CaseService
from credit.service.pdf import notice_pdf
from credit.service.wire import WireJSONResponse
from credit.service.writes import JOURNAL_WRITE, NEW_CASE_WRITE

__all__ = ["ROUTE_ROLES", "router", "service_openapi"]

CASE_ID_PATTERN: Final = r"^[A-Za-z0-9._:-]{1,64}$"

ANY_ROLE: Final = (Role.INTAKE, Role.UNDERWRITER, Role.REVIEWER, Role.OFFICER, Role.AUDITOR)
READERS: Final = (Role.REVIEWER, Role.AUDITOR)
QUEUE_READERS: Final = (Role.REVIEWER, Role.OFFICER, Role.AUDITOR)
NOTICE_READERS: Final = (Role.UNDERWRITER, Role.REVIEWER, Role.OFFICER, Role.AUDITOR)
SENDERS: Final = (Role.UNDERWRITER, Role.REVIEWER, Role.OFFICER)

router = APIRouter()
_F = TypeVar("_F", bound=Callable[..., Any])

# (method, path) -> the roles allowed; None is open. The access table test reads this.
ROUTE_ROLES: dict[tuple[str, str], tuple[Role, ...] | None] = {}

CaseId = Annotated[
    str,
    Path(
        alias="case_id",
        pattern=CASE_ID_PATTERN,
        description="The case id (1-64 of A-Z a-z 0-9 . _ : -).",
    ),
]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ErrorDetail(_Model):
    message: str
    field: str | None
    case_id: str | None


class ErrorBody(_Model):
    """Every error: what went wrong, the field it concerns, the case."""

    error: ErrorDetail


class Signing(_Model):
    """The answering worker's signing of the journal's tree head (ADR-0003)."""

    interval_s: float = Field(
        description="At most one signature this often while writes come (0: after every write).",
    )
    signed: int = Field(description="The journal's size under this worker's newest checkpoint.")
    waiting: int = Field(description="Entries this worker wrote that no checkpoint covers yet.")
    waiting_for_s: float = Field(description="How long the oldest of them has waited.")
    error: str | None = Field(
        description=(
            "What failed the latest signature: the error's type and check, no path "
            "(writes are refused until one succeeds)."
        )
    )


class Health(_Model):
    status: Literal["ok", "degraded"] = Field(
        description="degraded (503): the tree head could not be signed; writes are refused."
    )
    database: str
    version: str
    worker: int = Field(description="The process id of the worker that answered.")
    signing: Signing | None = Field(
        default=None, description="None when the worker signs no checkpoints."
    )


class Me(_Model):
    name: str
    role: Role


class IntakeResult(_Model):
    case_id: str
    taken_in: bool = Field(description="False when the same case was taken in before.")
    digest: str
    moved: list[str] = Field(description="Fields moved out of the underwriter's reach.")


class QueueItem(_Model):
    """An open work item: a case not at a final action, the role that works it, and
    the Regulation B clock (12 CFR 1002.9(a)(1))."""

    case_id: str
    kind: ItemKind
    role: str
    opened_at: str
    deadline: str
    days_left: int
    why: list[str]


class CaseView(_Model):
    case_id: str
    product: str | None
    as_of: str | None
    life: str = Field(description="The case's state in its life (credit.lifecycle).")
    final: bool = Field(description="Whether the case is at a final action.")
    item: QueueItem | None = Field(description="The case's open work item, if any.")
    state: Literal["not-recorded", "awaiting-review", "held", "released", "rejected"]
    refused: bool
    decision: dict[str, Any] | None
    decision_entry: int | None
    decision_by: str | None
    underwriter: str | None
    decided_by: str | None
    approved_by: list[str]
    reason: str | None
    notice: Literal["none", "awaiting-release", "ready", "sent", "blocked", "rejected"]
    refusal: list[str] | None = None
    reviews: dict[str, Any] | None = Field(
        default=None, description="The Keystone reviews (reviewer and auditor only)."
    )


class NoticeBody(_Model):
    case_id: str
    notice_sha256: str
    verified: bool
    delivery: Literal["sent", "blocked", "not-sent", "preview"]
    notice: dict[str, Any]
    report: dict[str, Any]


class SendResult(_Model):
    case_id: str
    delivery: Literal["sent"]
    sent_now: bool
    notice_sha256: str | None
    entry: int | None


class GateRequest(_Model):
    """A person's release or reject: why (the journal records it with the reviewer)."""

    reason: str = Field(min_length=1, max_length=2000, pattern=r"\S")


Money = Annotated[str, Field(pattern=r"^[0-9]{1,12}(\.[0-9]{1,2})?$")]


class ManualDecision(_Model):
    """A credit officer's decision: approve (terms within the policy), decline or
    counteroffer (terms), citing 1 to 4 reasons a person may cite (`credit catalogue`)."""

    decision: Literal["approve", "decline", "counteroffer"]
    reasons: list[str] = Field(default_factory=list, max_length=8)
    why: str = Field(min_length=1, max_length=2000, pattern=r"\S")
    amount: Money | None = None
    term_months: int | None = Field(default=None, ge=1, le=600)
    credit_line: Money | None = None
    apr: str | None = Field(default=None, pattern=r"^[0-9]{1,2}(\.[0-9]{1,2})?$")


class Withdrawal(_Model):
    """How the applicant withdrew the application (journaled with the officer)."""

    why: str = Field(min_length=1, max_length=2000, pattern=r"\S")


class ChainReportBody(_Model):
    ok: bool
    entries: int
    head: str
    first_broken_seq: int | None
    detail: str


class JournalEntry(_Model):
    seq: int
    case_id: str | None
    kind: str
    payload: dict[str, Any]
    prev_hash: str
    recorded_at: str
    hash: str


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    described = {
        400: "The request is malformed.",
        401: "No credentials, or credentials that are not valid.",
        403: "The caller's role may not do this.",
        404: "No such case (or nothing of that kind for it).",
        409: "The case is not in a state that allows this.",
        413: "The request body is over the size limit.",
        422: "The request is invalid; the error names the field.",
        503: "Nothing was recorded: the journal's tree head could not be signed.",
    }
    return {s: {"model": ErrorBody, "description": described[s]} for s in statuses}


AUTH_ERRORS: Final = (401, 403, 413, 422)


def _route(
    method: str,
    path: str,
    roles: tuple[Role, ...] | None,
    *,
    errors: tuple[int, ...] = (),
    extra_responses: dict[int | str, dict[str, Any]] | None = None,
    new_case: bool = False,
    **kwargs: Any,
) -> Callable[[_F], _F]:
    """A route of the API. ``new_case``: a POST that takes a new case in (its write
    waits while work on cases taken in waits); every other POST is such work."""
    ROUTE_ROLES[(method, path)] = roles
    write = NEW_CASE_WRITE if new_case else JOURNAL_WRITE
    # every POST writes, and no write is taken while the head cannot be signed (503)
    writes = (503,) if method == "POST" else ()
    statuses = tuple(sorted({*(AUTH_ERRORS if roles else (413, 422)), *errors, *writes}))
    return router.api_route(
        path,
        methods=[method],
        responses={**_errors(*statuses), **(extra_responses or {})},
        response_class=WireJSONResponse,
        # every POST writes the journal: a few at a time, the cases taken in before a
        # new case (credit.service.writes)
        dependencies=[write] if method == "POST" else None,
        **kwargs,
    )


async def _service(request: Request) -> CaseService:
    # async: FastAPI runs a plain function dependency on a worker thread, a hand-off
    # (and on a busy machine a wait for the thread to be scheduled) for an attribute read.
    service: CaseService = request.app.state.service
    return service


Service = Annotated[CaseService, Depends(_service)]


def _who(*roles: Role) -> Any:
    return Depends(require_roles(*roles))


async def _raw_case(request: Request) -> Any:
    """The body, read by the one case reader and screened as intake will take it in
    (the case format, its limits, the policy in force on ``asOf`` and its score
    scale): a malformed or out-of-range body is a 422 naming the field."""
    body = await request.body()
    if not body.strip():
        raise InputError("the body is empty: send the case as a JSON object", field="body")
    try:
        raw = read_document(body)
        screen(raw, registry=request.app.state.service.registry)
    except InputError as err:  # a 422 always names a field: the body, when no other
        if err.field is not None:
            raise
        raise InputError(err.message, case_id=err.case_id, field="body") from None
    return raw


# ---------------------------------------------------------------------- routes


@_route(
    "GET",
    "/healthz",
    None,
    operation_id="health",
    response_model=Health,
    extra_responses={503: {"model": Health, "description": "The tree head could not be signed."}},
    tags=["service"],
)
def health(request: Request) -> Response:
    """Liveness, the database and the signing: 200 when the journal's database answers
    and the tree head is being signed, 503 ("degraded") when its latest signature
    failed (writes are refused until one succeeds; ``signing.error`` names what failed,
    the log says why)."""
    store = request.app.state.store
    store.get_case("#healthz")  # a read of the journal's database ('#' is in no case id)
    database = store.dialect if isinstance(store, SqlStore) else "memory"
    body: dict[str, Any] = {
        "status": "ok",
        "database": database,
        "version": __version__,
        "worker": os.getpid(),
        "signing": None,
    }
    service: CaseService = request.app.state.service
    if service.cadence is not None:
        now = service.cadence.status()
        signing = now._replace(waiting_for_s=round(now.waiting_for_s, 3))._asdict()
        body["signing"] = Signing.model_validate(signing).model_dump(by_alias=True)
    if service.write_refusal() is not None:  # the rule every write is refused by
        body["status"] = "degraded"
        return WireJSONResponse(body, status_code=503)
    return WireJSONResponse(body)


@_route("GET", "/v1/me", ANY_ROLE, operation_id="whoAmI", response_model=Me, tags=["service"])
def who_am_i(principal: Annotated[Principal, _who(*ANY_ROLE)]) -> Response:
    """The caller's name and role."""
    return WireJSONResponse({"name": principal.name, "role": principal.role.value})


@_route(
    "POST",
    "/v1/cases",
    (Role.INTAKE,),
    errors=(409,),
    new_case=True,
    status_code=201,
    operation_id="intakeCase",
    response_model=IntakeResult,
    tags=["cases"],
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "One case in the case format (shared/spec/case-format.md).",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Case"}}},
        }
    },
)
def intake_case(
    service: Service,
    _principal: Annotated[Principal, _who(Role.INTAKE)],
    raw: Annotated[Any, Depends(_raw_case)],
) -> Response:
    """Take a case in (Onramp). 201 when taken in; 200 when the same case was taken in
    before; 409 for the same id with other content; 422 naming the field."""
    result = service.take_in(raw)
    return WireJSONResponse(result, status_code=201 if result["takenIn"] else 200)


@_route(
    "GET",
    "/v1/cases/{case_id}",
    ANY_ROLE,
    errors=(404,),
    operation_id="getCase",
    response_model=CaseView,
    tags=["cases"],
)
async def get_case(
    case_id: CaseId, service: Service, principal: Annotated[Principal, _who(*ANY_ROLE)]
) -> Response:
    """The case's standing: its decision, the Keystone gate, the notice."""
    # On the event loop: a few reads of one case's rows, bounded by the case, cost less
    # than a hand-off to a worker thread under load (docs/service.md, "Reads on the
    # event loop"). Routes whose work grows with the journal, or that print a PDF, run
    # on worker threads.
    return WireJSONResponse(service.view(case_id, principal))


@_route(
    "POST",
    "/v1/cases/{case_id}/decide",
    (Role.UNDERWRITER,),
    errors=(404, 409),
    status_code=201,
    operation_id="decideCase",
    response_model=CaseView,
    tags=["cases"],
)
def decide_case(
    case_id: CaseId,
    service: Service,
    principal: Annotated[Principal, _who(Role.UNDERWRITER)],
) -> Response:
    """Run the governed underwriter turn and the Keystone review, exactly once: a
    second decide is 409 and changes nothing."""
    return WireJSONResponse(service.decide(case_id, principal), status_code=201)


_PDF_CONTENT: Final[dict[int | str, dict[str, Any]]] = {
    200: {
        "description": "The notice and its verification report, or the PDF letter.",
        "content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}},
    }
}


def _notice_response(service: CaseService, case_id: str, pdf: bool) -> Response:
    view = service.notice(case_id)
    if pdf:
        if not view.report.passed:
            raise ServiceError(
                "the notice did not pass verification "
                f"({', '.join(view.report.failed)}): no letter is printed",
                status=409,
                case_id=case_id,
            )
        return Response(
            notice_pdf(view.notice),
            media_type="application/pdf",
            headers={
                "Content-Disposition": f'inline; filename="{case_id}.notice.pdf"',
                "X-Notice-SHA256": view.notice.sha256,
            },
        )
    return WireJSONResponse(view.to_wire())


@_route(
    "GET",
    "/v1/cases/{case_id}/notice",
    NOTICE_READERS,
    errors=(404, 409),
    operation_id="getNotice",
    response_model=NoticeBody,
    extra_responses=_PDF_CONTENT,
    tags=["notices"],
)
async def get_notice(
    case_id: CaseId,
    service: Service,
    _principal: Annotated[Principal, _who(*NOTICE_READERS)],
    format: Annotated[Literal["json", "pdf"], Query(description="json (default) or pdf")] = "json",
) -> Response:
    """A released decline's or counteroffer's notice, rendered and verified now (V1-V8),
    with the report; ``?format=pdf`` for the printable letter."""
    if format == "pdf":  # printing a letter is not a short read: on a worker thread
        return await run_in_threadpool(_notice_response, service, case_id, True)
    # one case's notice rendered and verified: bounded, on the event loop (as get_case)
    return _notice_response(service, case_id, False)


@router.get(
    "/v1/cases/{case_id}/notice/pdf",
    operation_id="getNoticePdf",
    response_class=Response,
    responses={
        200: {
            "description": "The printable letter; its footer carries the notice's SHA-256.",
            "content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}},
        },
        **_errors(401, 403, 404, 409, 413, 422),
    },
    tags=["notices"],
)
def get_notice_pdf(
    case_id: CaseId,
    service: Service,
    _principal: Annotated[Principal, _who(*NOTICE_READERS)],
) -> Response:
    """The verified notice as a PDF letter."""
    return _notice_response(service, case_id, True)


ROUTE_ROLES[("GET", "/v1/cases/{case_id}/notice/pdf")] = NOTICE_READERS


@_route(
    "POST",
    "/v1/cases/{case_id}/notice/send",
    SENDERS,
    errors=(404, 409),
    operation_id="sendNotice",
    response_model=SendResult,
    tags=["notices"],
)
def send_notice(
    case_id: CaseId, service: Service, _principal: Annotated[Principal, _who(*SENDERS)]
) -> Response:
    """Render, verify and send the notice (once). One that fails verification is
    blocked and journaled, never sent: 409."""
    return WireJSONResponse(service.send(case_id))


@_route(
    "GET",
    "/v1/queue",
    QUEUE_READERS,
    operation_id="workQueue",
    response_model=list[QueueItem],
    tags=["review"],
)
def work_queue(
    service: Service, _principal: Annotated[Principal, _who(*QUEUE_READERS)]
) -> Response:
    """Every open work item (a case not at a final action), most urgent first, with
    the role that works it and its deadline (``daysLeft`` below 0 is overdue)."""
    return WireJSONResponse(service.queue())


@_route(
    "POST",
    "/v1/cases/{case_id}/release",
    (Role.REVIEWER,),
    errors=(404, 409),
    operation_id="releaseCase",
    response_model=CaseView,
    tags=["review"],
)
def release_case(
    case_id: CaseId,
    body: GateRequest,
    service: Service,
    principal: Annotated[Principal, _who(Role.REVIEWER)],
) -> Response:
    """Release a held case (the reviewer's name is journaled as ``by``, with the reason)."""
    return WireJSONResponse(service.release(case_id, principal, body.reason))


@_route(
    "POST",
    "/v1/cases/{case_id}/reject",
    (Role.REVIEWER,),
    errors=(404, 409),
    operation_id="rejectCase",
    response_model=CaseView,
    tags=["review"],
)
def reject_case(
    case_id: CaseId,
    body: GateRequest,
    service: Service,
    principal: Annotated[Principal, _who(Role.REVIEWER)],
) -> Response:
    """Reject a held case: the decision is not committed (who and why are journaled)."""
    return WireJSONResponse(service.reject(case_id, principal, body.reason))


@_route(
    "POST",
    "/v1/cases/{case_id}/manual-decision",
    (Role.OFFICER,),
    errors=(404, 409),
    operation_id="manualDecision",
    response_model=CaseView,
    tags=["review"],
)
def manual_decision(
    case_id: CaseId,
    body: ManualDecision,
    service: Service,
    principal: Annotated[Principal, _who(Role.OFFICER)],
) -> Response:
    """A credit officer decides a referred, rejected, refused, failed or
    notice-blocked case. It goes through the Keystone gate; a policy exception is held
    for two reviewers. 409 when the case is not at such an item; 422 naming a reason
    that may not be cited or that the file cannot ground."""
    return WireJSONResponse(
        service.manual_decision(
            case_id,
            principal,
            decision=body.decision,
            reasons=body.reasons,
            why=body.why,
            amount=Decimal(body.amount) if body.amount is not None else None,
            term_months=body.term_months,
            credit_line=Decimal(body.credit_line) if body.credit_line is not None else None,
            apr=Decimal(body.apr) if body.apr is not None else None,
        )
    )


@_route(
    "POST",
    "/v1/cases/{case_id}/withdraw",
    (Role.OFFICER,),
    errors=(404, 409),
    operation_id="withdrawCase",
    response_model=CaseView,
    tags=["review"],
)
def withdraw_case(
    case_id: CaseId,
    body: Withdrawal,
    service: Service,
    principal: Annotated[Principal, _who(Role.OFFICER)],
) -> Response:
    """Record that the applicant withdrew the application (a final action)."""
    return WireJSONResponse(service.withdraw(case_id, principal, body.why))


@_route(
    "GET",
    "/v1/cases/{case_id}/journal",
    READERS,
    errors=(404,),
    operation_id="caseJournal",
    response_model=list[JournalEntry],
    tags=["journal"],
)
def case_journal(
    case_id: CaseId, service: Service, _principal: Annotated[Principal, _who(*READERS)]
) -> Response:
    """The case's journal entries, in order (payloads and hashes as stored)."""
    return WireJSONResponse(service.journal(case_id))


@_route(
    "GET",
    "/v1/journal/verify",
    READERS,
    operation_id="verifyJournal",
    response_model=ChainReportBody,
    tags=["journal"],
)
def verify_journal(service: Service, _principal: Annotated[Principal, _who(*READERS)]) -> Response:
    """Walk the whole hash chain; name the first broken link."""
    report = service.verify()
    return WireJSONResponse(
        {
            "ok": report.ok,
            "entries": report.entries,
            "head": report.head,
            "firstBrokenSeq": report.first_broken_seq,
            "detail": report.detail,
        }
    )


# ---------------------------------------------------------------------- OpenAPI


def service_openapi(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document, with the case format's schema as ``Case``."""
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    case_schema = copy.deepcopy(
        Case.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
    )
    definitions = case_schema.pop("$defs", {})
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in {**definitions, "Case": case_schema}.items():
        components.setdefault(name, definition)
    return schema
