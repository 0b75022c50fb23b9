"""The console: server-rendered pages over the work queue, the Keystone gate and a
credit officer's decisions.

Pages (Jinja2, autoescaped, plain HTML forms, no script):

- ``GET /console/login``, ``POST /console/login``: sign in with an API key. The
  reviewer, the credit officer and the auditor may sign in; the session is the signed
  ``credit_session`` cookie (:func:`credit.service.auth.issue_session`), which carries
  the key's id: a revoked key's session is refused on its next request.
  ``POST /console/logout``.
- ``GET /console/queue``: the work queue, every case not at a final action, with the
  role that works it and the Regulation B clock (deadline, days left; overdue marked),
  most urgent first. ``GET /console/held``: the held items alone.
- ``GET /console/cases/{caseId}``: where the case stands in its life and its work item;
  the current decision (the underwriter's or an officer's: factors with their reason
  codes, policy basis), both reviews' findings (Equipoise, Backstop), the adverse-action
  notice of a decline or counteroffer (as sent, or as it would be sent today: its V1-V8
  report and SHA-256), and the case's journal entries.
- ``POST /console/cases/{caseId}/release`` and ``.../reject``: a reviewer's action with
  a required reason (a release takes two different reviewers: the first approves);
  ``POST /console/cases/{caseId}/decide``: a credit officer's decision (approve,
  decline or counteroffer, terms, 1 to 4 reasons a person may cite, why) on a case at
  a person's item; ``POST /console/cases/{caseId}/withdraw``: the officer records a
  withdrawal. Each is journaled with the signed-in person's key id and name through
  :class:`~credit.service.cases.CaseService`, then a redirect back to the case.

Access: the reviewer releases and rejects, the officer decides and withdraws, the
auditor sees every page but gets no forms; an action from a role that may not take it
is refused (403). Any other role gets a 403 page, and signing in with its key is
refused. A browser that is not signed in is sent to the sign-in page.

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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Final
from urllib.parse import quote, urlsplit

import jinja2
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from credit.errors import AccessError, CreditError, GovernanceError, InputError, ServiceError
from credit.governance.findings import Review
from credit.governance.keystone import KeystoneStatus, status_of
from credit.guardrails.report import VerificationReport
from credit.journal.base import Entry, StaleCaseError
from credit.journal.why import explain
from credit.lifecycle import OFFICER_DECIDES, CaseLife
from credit.models import Decision, parse_decision
from credit.notices.render import NOTICE_DECISIONS
from credit.service.auth import (
    SESSION_COOKIE,
    authenticate_key,
    clear_session,
    issue_session,
    principal_from_request,
)
from credit.service.cases import CaseService
from credit.service.roles import Principal, Role
from credit.service.writes import JOURNAL_WRITE

__all__ = ["CONSOLE_ROLES", "MAX_REASON_CHARS", "csrf_token_for", "router"]

PREFIX: Final = "/console"
CONSOLE_ROLES: Final = frozenset({Role.REVIEWER, Role.OFFICER, Role.AUDITOR})
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
        return "Sign in with a reviewer, officer or auditor API key."
    if principal is not None and principal.role not in CONSOLE_ROLES:
        return (
            f"The {principal.role.value} role cannot open the console: "
            "sign in with a reviewer, officer or auditor key."
        )
    return (
        "Only a reviewer may release or reject a held decision, and only a credit officer "
        "may decide a case or record a withdrawal; auditors only read."
    )


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
    life: CaseLife
    entries: list[EntryRow]
    raw_entries: list[Entry] = field(default_factory=list)
    today: str = ""
    item: dict[str, Any] | None = None
    decision: Decision | None = None
    decision_by: str | None = None
    by_officer: bool = False
    decision_error: str | None = None
    reason_codes: list[str] = field(default_factory=list)
    reviews: list[tuple[str, Review | None]] = field(default_factory=list)
    notice_applies: bool = False
    notice: NoticeShown | None = None
    notice_delivery: str = ""
    notice_error: str | None = None
    sent_sha256: str | None = None
    can_release: bool = False
    can_reject: bool = False
    can_decide: bool = False
    can_withdraw: bool = False
    citable: list[tuple[str, str]] = field(default_factory=list)  # (code, category)
    product: str | None = None
    reason_release: str = ""
    reason_reject: str = ""
    form: dict[str, Any] = field(default_factory=dict)  # an officer's form, re-shown
    highlight: int | None = None
    why: dict[str, Any] | None = None  # credit.journal.why: the same account as `credit why`


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
    if store.get_case(case_id) is None and not store.entries(case_id):
        return None
    life = service.work.finish(case_id)  # a read of a case finishes the system's work on it
    entries = store.entries(case_id)
    status = status_of(life)
    today = service.work.today()
    view = CaseView(
        case_id=case_id,
        status=status,
        life=life,
        entries=[_row(e) for e in entries],
        raw_entries=entries,
        today=today.isoformat(),
        item=life.item.to_wire(today) if life.item is not None else None,
        reviews=[
            ("Equipoise", status.reviews.get("equipoise")),
            ("Backstop", status.reviews.get("backstop")),
        ],
        product=life.product,
        highlight=highlight,
        why=explain(case_id, entries, life, catalogue=service.work.catalogue),
    )
    view.can_release = principal.role in DECIDING_ROLES and status.state == "held"
    view.can_reject = principal.role in DECIDING_ROLES and status.held and not life.final
    officer = principal.role is Role.OFFICER
    view.can_decide = officer and life.state in OFFICER_DECIDES
    view.can_withdraw = officer and not life.final and life.accepted is not None
    if view.can_decide:
        catalogue = service.work.catalogue
        view.citable = [
            (code, catalogue[code].category)
            for code in catalogue.citable()
            if life.product is None or life.product in catalogue[code].products
        ]
    current = life.decision
    if current is not None:
        view.decision_by = current.by
        view.by_officer = current.by_officer
        view.reason_codes = [code for code, _ in current.reasons or ()]
        try:
            view.decision = parse_decision(dict(current.wire), case_id=case_id)
        except CreditError as err:
            view.decision_error = f"The recorded decision cannot be read: {err}"
    if view.decision is not None:
        _add_notice(service, view)
    if life.sent is not None:
        sha = life.sent.payload.get("noticeSha256")
        view.sent_sha256 = sha if isinstance(sha, str) else None
    return view


def _add_notice(service: CaseService, view: CaseView) -> None:
    """For a decline or counteroffer, the notice as sent (or as it would be sent today,
    journaling nothing) with its V1-V8 report."""
    assert view.decision is not None
    view.notice_applies = view.decision.decision in NOTICE_DECISIONS
    if not view.notice_applies:
        return
    try:
        shown = service.notice(view.case_id, preview=True)
    except CreditError as err:
        view.notice_error = f"No notice can be shown: {err}"
        return
    view.notice_delivery = shown.delivery
    view.notice = NoticeShown(
        text=shown.notice.text, sha256=shown.notice.sha256, report=shown.report
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
    return _redirect(f"{PREFIX}/queue")


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request) -> Response:
    principal = _signed_in(request)
    if principal is not None and principal.role in CONSOLE_ROLES:
        return _redirect(f"{PREFIX}/queue")
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
    response = _redirect(f"{PREFIX}/queue")
    issue_session(response, principal, request=request)
    return response


@router.post("/logout")
def logout(request: Request, csrf_token: Annotated[str, Form(max_length=200)] = "") -> Response:
    if not _csrf_ok(request, csrf_token):
        return _denied(request, None, 403, heading="Refused", message=_FORGED)
    response = _redirect(f"{PREFIX}/login")
    clear_session(response, request=request)
    return response


def _queue_page(request: Request, *, held_only: bool) -> Response:
    principal = _signed_in(request)
    if principal is None:
        return _redirect(f"{PREFIX}/login")
    if principal.role not in CONSOLE_ROLES:
        return _denied(request, principal, 403)
    service = _cases(request)
    today = service.work.today()
    items = [i.to_wire(today) for i in service.work.queue()]
    if held_only:
        items = [i for i in items if i["kind"] == "held"]
    return _page(
        request,
        "queue.html",
        principal,
        items=items,
        today=today.isoformat(),
        held_only=held_only,
        overdue=sum(1 for i in items if i["daysLeft"] < 0),
    )


@router.get("/fairness", response_class=HTMLResponse)
def fairness_page(request: Request) -> Response:
    """The portfolio report: approval rates and adverse impact ratios by group, and the
    findings (a group whose ratio's interval lies wholly under the four-fifths line)."""
    principal = _signed_in(request)
    if principal is None:
        return _redirect(f"{PREFIX}/login")
    if principal.role not in CONSOLE_ROLES:
        return _denied(request, principal, 403)
    report = _cases(request).keystone.equipoise.portfolio()
    return _page(request, "fairness.html", principal, report=report)


@router.get("/queue", response_class=HTMLResponse)
def work_queue(request: Request) -> Response:
    return _queue_page(request, held_only=False)


@router.get("/held", response_class=HTMLResponse)
def held_queue(request: Request) -> Response:
    return _queue_page(request, held_only=True)


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
    if seq is not None:
        written = next(store_entry(view, seq), None)
        if written is not None:
            message = (
                f"Journal entry {seq}: {written.kind} by {_by(written)}. "
                f"The case is now {view.life.state}."
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
            before = service.store.last_seq(case_id)
            act(case_id, principal, reason)
        except CreditError as err:
            error, status_code = _action_error(err)
        else:
            return _back_to(service, case_id, before)
    view = _case_view(service, case_id, principal)
    if view is None:
        return _not_found(request, principal, case_id)
    if release:
        view.reason_release = reason
    else:
        view.reason_reject = reason
    return _page(request, "case.html", principal, status_code=status_code, view=view, error=error)


def store_entry(view: CaseView, seq: int) -> Iterator[Entry]:
    """The journal entry ``seq`` of the case on the page (none if it is not the case's)."""
    return (e for e in view.raw_entries if e.seq == seq)


def _by(entry: Entry) -> str:
    """Who wrote an entry: the person named in it, else the system."""
    by = entry.payload.get("by")
    officer = entry.payload.get("officer")
    if isinstance(officer, Mapping):
        by = officer.get("name")
    return str(by) if by else "the system"


def _action_error(err: CreditError) -> tuple[str, int]:
    """How a refused action is shown: its message and the API's status for it."""
    message = getattr(err, "message", None) or str(err)
    if isinstance(err, ServiceError):
        return message, err.status
    if isinstance(err, AccessError):
        return message, err.status
    if isinstance(err, InputError):
        return str(err), 422
    if isinstance(err, GovernanceError | StaleCaseError):
        return message, 409
    return message, 400


def _back_to(service: CaseService, case_id: str, before: int) -> Response:
    """After an action: back to the case, the first entry it wrote highlighted."""
    written = [e.seq for e in service.store.entries(case_id, after_seq=before)]
    seq = written[0] if written else None
    anchor = f"?entry={seq}#entry-{seq}" if seq is not None else "#journal"
    return _redirect(f"{PREFIX}/cases/{quote(case_id, safe='')}{anchor}")


def _officer_gate(request: Request, case_id: str, csrf_token: str) -> Principal | Response:
    principal = _signed_in(request)
    if principal is None:
        return _denied(request, None, 401)
    if principal.role is not Role.OFFICER:
        return _denied(request, principal, 403)
    if not _csrf_ok(request, csrf_token):
        return _denied(request, principal, 403, heading="Refused", message=_FORGED)
    if not _CASE_ID.fullmatch(case_id):
        return _not_found(request, principal, case_id)
    return principal


_MONEY: Final = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,2})?$")


@router.post("/cases/{case_id}/decide", response_class=HTMLResponse, dependencies=[JOURNAL_WRITE])
async def officer_decides(request: Request, case_id: str) -> Response:
    """A credit officer's decision from the case page's form."""
    form = await request.form()
    csrf_token = str(form.get("csrf_token", ""))[:200]
    gate = _officer_gate(request, case_id, csrf_token)
    if not isinstance(gate, Principal):
        return gate
    principal = gate
    service = _cases(request)
    fields = {
        name: str(form.get(name, "")).strip()[: 4 * MAX_REASON_CHARS]
        for name in ("decision", "why", "amount", "term", "line", "apr")
    }
    codes = [str(c) for c in form.getlist("reason")][:8]
    error: str | None = None
    status_code = 200
    numbers: dict[str, Decimal | None] = {}
    for name in ("amount", "line", "apr"):
        value = fields[name]
        if value and not _MONEY.fullmatch(value):
            error, status_code = f"The {name} {value!r} is not a plain decimal.", 422
        numbers[name] = Decimal(value) if value and error is None else None
    term = int(fields["term"]) if fields["term"].isdigit() and len(fields["term"]) < 4 else None
    if fields["term"] and term is None and error is None:
        error, status_code = f"The term {fields['term']!r} is not a number of months.", 422
    if error is None:
        try:
            before = service.store.last_seq(case_id)
            service.manual_decision(
                case_id,
                principal,
                decision=fields["decision"],
                reasons=codes,
                why=fields["why"],
                amount=numbers["amount"],
                term_months=term,
                credit_line=numbers["line"],
                apr=numbers["apr"],
            )
        except CreditError as err:
            error, status_code = _action_error(err)
        else:
            return _back_to(service, case_id, before)
    view = _case_view(service, case_id, principal)
    if view is None:
        return _not_found(request, principal, case_id)
    view.form = {**fields, "reasons": codes}
    return _page(request, "case.html", principal, status_code=status_code, view=view, error=error)


@router.post("/cases/{case_id}/withdraw", response_class=HTMLResponse, dependencies=[JOURNAL_WRITE])
def officer_withdraws(
    request: Request,
    case_id: str,
    why: Annotated[str, Form(max_length=4 * MAX_REASON_CHARS)] = "",
    csrf_token: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    gate = _officer_gate(request, case_id, csrf_token)
    if not isinstance(gate, Principal):
        return gate
    service = _cases(request)
    try:
        before = service.store.last_seq(case_id)
        service.withdraw(case_id, gate, why)
    except CreditError as err:
        message, status_code = _action_error(err)
        view = _case_view(service, case_id, gate)
        if view is None:
            return _not_found(request, gate, case_id)
        return _page(request, "case.html", gate, status_code=status_code, view=view, error=message)
    return _back_to(service, case_id, before)


@router.post("/cases/{case_id}/release", response_class=HTMLResponse, dependencies=[JOURNAL_WRITE])
def release_case(
    request: Request,
    case_id: str,
    reason: Annotated[str, Form(max_length=4 * MAX_REASON_CHARS)] = "",
    csrf_token: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    return _decide(request, case_id, reason, csrf_token, release=True)


@router.post("/cases/{case_id}/reject", response_class=HTMLResponse, dependencies=[JOURNAL_WRITE])
def reject_case(
    request: Request,
    case_id: str,
    reason: Annotated[str, Form(max_length=4 * MAX_REASON_CHARS)] = "",
    csrf_token: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    return _decide(request, case_id, reason, csrf_token, release=False)
