"""The reviewer console: server-rendered pages over the Keystone gate.

Pages (Jinja2, autoescaped, plain HTML forms, no script):

- ``GET /console/login``, ``POST /console/login``: sign in with an API key. Only the
  reviewer and the auditor may sign in; the session is the signed ``credit_session``
  cookie (:func:`credit.service.auth.issue_session`). ``POST /console/logout``.
- ``GET /console/held``: the held queue, in the order decided, with why each case is
  held.
- ``GET /console/cases/{caseId}``: the decision (factors, policy basis), both reviews'
  findings (Equipoise, Backstop), the adverse-action notice of a decline or
  counteroffer rendered and verified now (its V1-V8 report and SHA-256), and the case's
  journal entries (seq, kind, hash, a payload summary).
- ``POST /console/cases/{caseId}/release`` and ``.../reject``: a reviewer's decision
  with a required reason, journaled (``keystone.released`` / ``keystone.rejected``)
  with the signed-in reviewer's name through :class:`~credit.service.cases.CaseService`
  (once per case, across workers), then a redirect back to the case.

Access: the reviewer sees and does everything; the auditor sees every page but gets no
forms, and a release or reject from an auditor is refused (403). Any other role gets
a 403 page, and signing in with its key is refused. A browser that is not signed in is
sent to the sign-in page.

Forgery: every form carries a CSRF token, the HMAC (keyed with the settings' session
secret) of the session cookie it was rendered for; a POST whose token does not match
the caller's own session cookie is refused (403). Together with the cookie's
``SameSite=Strict`` and the Origin check in :mod:`credit.service.auth`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Final
from urllib.parse import quote, urlsplit

import jinja2
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from credit.errors import CaseNotHeldError, CreditError, GovernanceError, ServiceError
from credit.governance.findings import Review
from credit.governance.keystone import KeystoneStatus
from credit.guardrails.expectation import expectation_for
from credit.guardrails.report import VerificationReport
from credit.journal.base import Entry
from credit.models import Decision, parse_case, parse_decision
from credit.notices.render import NOTICE_DECISIONS, render_notice
from credit.pipeline import NOTICE_SENT
from credit.service.auth import (
    SESSION_COOKIE,
    authenticate_key,
    clear_session,
    issue_session,
    principal_from_request,
)
from credit.service.cases import CaseService
from credit.service.roles import Principal, Role
from credit.underwriting import decide_case

__all__ = ["CONSOLE_ROLES", "MAX_REASON_CHARS", "csrf_token_for", "router"]

PREFIX: Final = "/console"
CONSOLE_ROLES: Final = frozenset({Role.REVIEWER, Role.AUDITOR})
DECIDING_ROLES: Final = frozenset({Role.REVIEWER})
MAX_REASON_CHARS: Final = 2000
_CSRF_CONTEXT: Final = b"credit.console.csrf.v1\x00"
_CASE_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_HERE: Final = Path(__file__).parent
_STATIC: Final = _HERE / "static"
_SUMMARY_CHARS: Final = 220
_SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

router = APIRouter(prefix=PREFIX, include_in_schema=False)


# ---------------------------------------------------------------------- the services


def _cases(request: Request) -> CaseService:
    service: CaseService = request.app.state.service
    return service


# ---------------------------------------------------------------------- templates


def _compact(value: Any) -> str:
    """A value, short: text and exact decimals as written, the rest as compact JSON."""
    if isinstance(value, str | Decimal):
        return str(value)
    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["compact"] = _compact
    return env


@lru_cache(maxsize=1)
def _stylesheet_version() -> str:
    """A cache-busting tag for the stylesheet (the app serves ``static/`` at
    ``/console/static``)."""
    return hashlib.sha256((_STATIC / "console.css").read_bytes()).hexdigest()[:12]


def _page(
    request: Request,
    template: str,
    principal: Principal | None,
    *,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    context.setdefault("error", None)
    context.setdefault("notice_message", None)
    html = (
        _environment()
        .get_template(f"console/{template}")
        .render(
            principal=principal,
            csrf_token=csrf_token_for(request),
            static_url=f"{PREFIX}/static/console.css?v={_stylesheet_version()}",
            max_reason=MAX_REASON_CHARS,
            status_code=status_code,
            **context,
        )
    )
    return HTMLResponse(html, status_code=status_code, headers=dict(_SECURITY_HEADERS))


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=dict(_SECURITY_HEADERS))


_FORGED: Final = (
    "This form was not issued to your session (the CSRF check failed, or it was posted "
    "from another site): nothing was changed. Open the page again and resubmit."
)


def _why_denied(principal: Principal | None, status_code: int) -> str:
    if status_code == 401:
        return "Sign in with a reviewer or auditor API key."
    if principal is not None and principal.role not in CONSOLE_ROLES:
        return (
            f"The {principal.role.value} role cannot open the reviewer console: "
            "sign in with a reviewer or auditor key."
        )
    return "Only a reviewer may release or reject a held decision; auditors only read."


def _denied(
    request: Request,
    principal: Principal | None,
    status_code: int,
    *,
    heading: str = "Not allowed",
    message: str | None = None,
) -> HTMLResponse:
    if message is None:
        message = _why_denied(principal, status_code)
        if status_code == 401:
            heading = "Not signed in"
    shown = principal if principal is not None and principal.role in CONSOLE_ROLES else None
    return _page(
        request,
        "denied.html",
        shown,
        status_code=status_code,
        heading=heading,
        message=message,
    )


# ---------------------------------------------------------------------- CSRF


def csrf_token_for(request: Request) -> str | None:
    """The CSRF token of the request's session cookie (None without one)."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        return None
    secret = str(request.app.state.settings.session_secret).encode()
    return hmac.new(secret, _CSRF_CONTEXT + cookie.encode(), hashlib.sha256).hexdigest()


def _csrf_ok(request: Request, token: str) -> bool:
    expected = csrf_token_for(request)
    return expected is not None and hmac.compare_digest(expected.encode(), token.encode())


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == request.headers.get("host", "")


# ---------------------------------------------------------------------- the case view


@dataclass(frozen=True, slots=True)
class EntryRow:
    seq: int
    kind: str
    hash: str
    recorded_at: str
    summary: str
    payload_json: str


@dataclass(frozen=True, slots=True)
class NoticeShown:
    text: str
    sha256: str
    report: VerificationReport


@dataclass(slots=True)
class CaseView:
    case_id: str
    status: KeystoneStatus
    entries: list[EntryRow]
    decision: Decision | None = None
    decision_error: str | None = None
    reason_codes: list[str] = field(default_factory=list)
    reviews: list[tuple[str, Review | None]] = field(default_factory=list)
    notice_applies: bool = False
    notice: NoticeShown | None = None
    notice_error: str | None = None
    sent_sha256: str | None = None
    can_release: bool = False
    can_reject: bool = False
    reason_release: str = ""
    reason_reject: str = ""
    highlight: int | None = None


def _summary(payload: Mapping[str, Any]) -> str:
    """One line: ``key=value`` for each top-level field, containers counted."""
    parts: list[str] = []
    for key, value in payload.items():
        if isinstance(value, Mapping):
            shown = f"{{{len(value)} fields}}"
        elif isinstance(value, list | tuple):
            shown = f"[{len(value)}]"
        elif isinstance(value, str):
            shown = value if len(value) <= 80 else value[:79] + "…"
        else:
            shown = _compact(value)
        parts.append(f"{key}={shown}")
    text = "; ".join(parts) or "(empty)"
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def _row(entry: Entry) -> EntryRow:
    return EntryRow(
        seq=entry.seq,
        kind=entry.kind,
        hash=entry.hash,
        recorded_at=entry.recorded_at,
        summary=_summary(entry.payload),
        payload_json=json.dumps(entry.payload, default=str, ensure_ascii=False, indent=2),
    )


def _case_view(
    service: CaseService, case_id: str, principal: Principal, *, highlight: int | None = None
) -> CaseView | None:
    store = service.store
    entries = store.entries(case_id)
    if not entries and store.get_case(case_id) is None:
        return None
    status = service.keystone.status(case_id)
    view = CaseView(
        case_id=case_id,
        status=status,
        entries=[_row(e) for e in entries],
        reviews=[
            ("Equipoise", status.reviews.get("equipoise")),
            ("Backstop", status.reviews.get("backstop")),
        ],
        highlight=highlight,
    )
    deciding = principal.role in DECIDING_ROLES
    view.can_release = deciding and status.state == "held"
    view.can_reject = deciding and status.held
    recorded = store.decision_entry(case_id)
    if recorded is not None:
        try:
            view.decision = parse_decision(recorded.payload.get("decision"), case_id=case_id)
        except CreditError as err:
            view.decision_error = f"The recorded decision cannot be read: {err}"
    if view.decision is not None:
        _add_derivation(service, view, view.decision)
    sent = [e for e in entries if e.kind == NOTICE_SENT]
    if sent:
        sha = sent[-1].payload.get("noticeSha256")
        view.sent_sha256 = sha if isinstance(sha, str) else None
    return view


def _add_derivation(service: CaseService, view: CaseView, recorded: Decision) -> None:
    """The reason codes beside the factors and, for a decline or counteroffer, the
    notice rendered and verified now (journaling nothing)."""
    view.notice_applies = recorded.decision in NOTICE_DECISIONS
    document = service.store.get_case(view.case_id)
    if document is None:
        view.notice_error = "The case document is not in the store: no notice can be rendered."
        return
    try:
        case = parse_case(dict(document))
        underwriting = decide_case(case, service.registry.in_force(case.as_of))
    except CreditError as err:
        view.notice_error = f"The case cannot be derived again: {err}"
        return
    if underwriting.decision.to_wire() != recorded.to_wire():
        view.notice_error = (
            "The recorded decision is not the one the policy derives, so its reasons cannot "
            "be stated from the catalogue: a person must write this notice."
        )
        return
    view.reason_codes = [r.code for r in underwriting.reasons]
    if not view.notice_applies:
        return
    try:
        notice = render_notice(case, underwriting)
        report = service.verifier.verify(notice, expectation_for(case, underwriting))
    except CreditError as err:
        view.notice_error = f"The notice could not be rendered and verified: {err}"
        return
    view.notice = NoticeShown(
        text=notice.text,
        sha256=notice.sha256,
        report=report,
    )


# ---------------------------------------------------------------------- routes


def _signed_in(request: Request) -> Principal | None:
    return principal_from_request(request)


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
def console_home(request: Request) -> Response:
    principal = _signed_in(request)
    if principal is None:
        return _redirect(f"{PREFIX}/login")
    if principal.role not in CONSOLE_ROLES:
        return _denied(request, principal, 403)
    return _redirect(f"{PREFIX}/held")


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request) -> Response:
    principal = _signed_in(request)
    if principal is not None and principal.role in CONSOLE_ROLES:
        return _redirect(f"{PREFIX}/held")
    return _page(request, "login.html", None)


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, api_key: Annotated[str, Form(max_length=400)] = "") -> Response:
    if not _same_origin(request):
        return _denied(request, None, 403, heading="Refused", message=_FORGED)
    principal = authenticate_key(request, api_key.strip())
    if principal is None:
        return _page(
            request,
            "login.html",
            None,
            status_code=401,
            error="That API key is not valid.",
        )
    if principal.role not in CONSOLE_ROLES:
        return _denied(request, principal, 403)
    response = _redirect(f"{PREFIX}/held")
    issue_session(response, principal, request=request)
    return response


@router.post("/logout")
def logout(request: Request, csrf_token: Annotated[str, Form(max_length=200)] = "") -> Response:
    if not _csrf_ok(request, csrf_token):
        return _denied(request, None, 403, heading="Refused", message=_FORGED)
    response = _redirect(f"{PREFIX}/login")
    clear_session(response, request=request)
    return response


@router.get("/held", response_class=HTMLResponse)
def held_queue(request: Request) -> Response:
    principal = _signed_in(request)
    if principal is None:
        return _redirect(f"{PREFIX}/login")
    if principal.role not in CONSOLE_ROLES:
        return _denied(request, principal, 403)
    held = _cases(request).keystone.held_cases()
    return _page(request, "held.html", principal, held=held)


def _not_found(request: Request, principal: Principal, case_id: str) -> HTMLResponse:
    return _page(
        request,
        "not_found.html",
        principal,
        status_code=404,
        message=f"No case {case_id!r} is in the journal.",
    )


@router.get("/cases/{case_id}", response_class=HTMLResponse)
def case_page(request: Request, case_id: str, entry: str | None = None) -> Response:
    """``entry``: the journal entry just written (highlighted)."""
    principal = _signed_in(request)
    if principal is None:
        return _redirect(f"{PREFIX}/login")
    if principal.role not in CONSOLE_ROLES:
        return _denied(request, principal, 403)
    if not _CASE_ID.fullmatch(case_id):
        return _not_found(request, principal, case_id)
    seq = int(entry) if entry is not None and entry.isdigit() and len(entry) < 12 else None
    view = _case_view(_cases(request), case_id, principal, highlight=seq)
    if view is None:
        return _not_found(request, principal, case_id)
    message = None
    if seq is not None and view.status.gate_seq == seq and view.status.decided_by:
        message = (
            f"{view.status.state.capitalize()} by {view.status.decided_by} (journal entry {seq})."
        )
    return _page(request, "case.html", principal, view=view, notice_message=message)


def _decide(
    request: Request, case_id: str, reason: str, csrf_token: str, release: bool
) -> Response:
    principal = _signed_in(request)
    if principal is None:
        return _denied(request, None, 401)
    if principal.role not in DECIDING_ROLES:
        return _denied(request, principal, 403)
    if not _csrf_ok(request, csrf_token):
        return _denied(request, principal, 403, heading="Refused", message=_FORGED)
    if not _CASE_ID.fullmatch(case_id):
        return _not_found(request, principal, case_id)
    service = _cases(request)
    reason = reason.strip()
    error: str | None = None
    status_code = 200
    if not reason:
        error, status_code = "A reason is required.", 400
    elif len(reason) > MAX_REASON_CHARS:
        error, status_code = f"The reason is longer than {MAX_REASON_CHARS} characters.", 400
    else:
        act = service.release if release else service.reject
        try:
            act(case_id, principal, reason)
        except ServiceError as err:
            error, status_code = err.message, err.status
        except CaseNotHeldError as err:
            error, status_code = err.message, 409
        except GovernanceError as err:
            error, status_code = err.message, 409
        else:
            seq = service.keystone.status(case_id).gate_seq
            if release:
                # As `credit review release`: a released decline or counteroffer gets its
                # notice rendered, verified and sent now (one that fails is blocked and
                # journaled); a case that takes no notice is left as it is.
                with suppress(ServiceError):
                    service.send(case_id)
            anchor = f"?entry={seq}#entry-{seq}" if seq is not None else "#journal"
            return _redirect(f"{PREFIX}/cases/{quote(case_id, safe='')}{anchor}")
    view = _case_view(service, case_id, principal)
    if view is None:
        return _not_found(request, principal, case_id)
    if release:
        view.reason_release = reason
    else:
        view.reason_reject = reason
    return _page(request, "case.html", principal, status_code=status_code, view=view, error=error)


@router.post("/cases/{case_id}/release", response_class=HTMLResponse)
def release_case(
    request: Request,
    case_id: str,
    reason: Annotated[str, Form(max_length=4 * MAX_REASON_CHARS)] = "",
    csrf_token: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    return _decide(request, case_id, reason, csrf_token, release=True)


@router.post("/cases/{case_id}/reject", response_class=HTMLResponse)
def reject_case(
    request: Request,
    case_id: str,
    reason: Annotated[str, Form(max_length=4 * MAX_REASON_CHARS)] = "",
    csrf_token: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    return _decide(request, case_id, reason, csrf_token, release=False)
