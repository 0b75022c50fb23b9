"""Authentication and roles for the API and the console (a stable API).

Two ways in, checked in this order:

1. the ``X-API-Key`` header: an API key (:mod:`credit.service.keys`), one role each;
2. the signed ``credit_session`` cookie the console's login sets with
   :func:`issue_session` (itsdangerous, signed with the settings' session secret,
   expiring after ``session_max_age_s``; ``HttpOnly``, ``SameSite=Strict``). It
   carries the key's id, and every request checks the key still stands: revoking a
   key (``credit keys revoke``) ends its sessions on their next request.

Use::

    from credit.service.auth import Principal, Role, require_roles

    @router.post("/cases/{case_id}/release")
    def release(principal: Annotated[Principal, Depends(require_roles(Role.REVIEWER))]): ...

No credentials: 401. Credentials of a role not allowed: 403. Both are
:class:`~credit.errors.AccessError`, rendered by the app as JSON
``{"error": {"message", "field", "caseId"}}``. A cookie-authenticated request with an
unsafe method (POST, ...) must also come from the service's own origin (its ``Origin``
header, when sent, names the host it was sent to): cross-site forms are refused (403).

The console's login form handler::

    principal = authenticate_key(request, form_key)   # None if the key is wrong
    response = RedirectResponse("/console", status_code=303)
    issue_session(response, principal)
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Final
from urllib.parse import urlsplit

from fastapi import Depends, Request, Response
from fastapi.security import APIKeyCookie, APIKeyHeader
from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.concurrency import run_in_threadpool

from credit.errors import AccessError
from credit.service.roles import Principal, Role

__all__ = [
    "API_KEY_HEADER",
    "SESSION_COOKIE",
    "Principal",
    "Role",
    "authenticate_key",
    "clear_session",
    "issue_session",
    "optional_principal",
    "principal_from_request",
    "require_roles",
]

API_KEY_HEADER: Final = "X-API-Key"
SESSION_COOKIE: Final = "credit_session"
_SALT: Final = "credit.session.v1"
_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})

_api_key_scheme = APIKeyHeader(
    name=API_KEY_HEADER, auto_error=False, description="An API key (`credit keys create`)."
)
_cookie_scheme = APIKeyCookie(
    name=SESSION_COOKIE, auto_error=False, description="The console's signed session cookie."
)

# The app serving the current request (set by create_app's middleware), so that
# issue_session(response, principal) finds the secret without being handed the request.
current_app_state: contextvars.ContextVar[Any] = contextvars.ContextVar("credit_app_state")


def _serializer(state: Any) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(state.settings.session_secret, salt=_SALT)


def _state(request: Request | None) -> Any:
    if request is not None:
        return request.app.state
    try:
        return current_app_state.get()
    except LookupError:
        raise RuntimeError(
            "issue_session/clear_session outside a request of a credit.service app"
        ) from None


def authenticate_key(request: Request, key: str) -> Principal | None:
    """The principal of an API key (from a header or a login form), or None."""
    if not key or len(key) > 200:
        return None
    principal: Principal | None = request.app.state.keys.authenticate(key)
    return principal


def issue_session(
    response: Response, principal: Principal, *, request: Request | None = None
) -> None:
    """Set the signed ``credit_session`` cookie for ``principal`` on ``response``."""
    state = _state(request)
    settings = state.settings
    token = _serializer(state).dumps(
        {"n": principal.name, "r": principal.role.value, "k": principal.key_id}
    )
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=settings.session_max_age_s,
        httponly=True,
        samesite="strict",
        secure=settings.secure_cookies,
        path="/",
    )


def clear_session(response: Response, *, request: Request | None = None) -> None:
    """Remove the session cookie (log out)."""
    state = _state(request)
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=state.settings.secure_cookies,
    )


def _session_principal(request: Request, token: str) -> Principal | None:
    """The principal a session cookie was signed for, if its key still stands: a
    revoked key's sessions are refused on their next request."""
    state = request.app.state
    try:
        data = _serializer(state).loads(token, max_age=state.settings.session_max_age_s)
        key_id = data["k"]
        if not isinstance(key_id, str):
            return None
        principal: Principal | None = state.keys.active(key_id)
    except (BadSignature, KeyError, TypeError, ValueError):
        return None
    return principal


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return urlsplit(origin).netloc == host


def principal_from_request(request: Request) -> Principal | None:
    """The caller: by ``X-API-Key``, else by the session cookie; None if neither holds.

    A session cookie on an unsafe method from another origin counts as no caller."""
    key = request.headers.get(API_KEY_HEADER)
    if key is not None:
        return authenticate_key(request, key)
    token = request.cookies.get(SESSION_COOKIE)
    if token is None:
        return None
    principal = _session_principal(request, token)
    if principal is not None and request.method not in _SAFE_METHODS and not _same_origin(request):
        return None
    return principal


def optional_principal(
    request: Request,
    _key: Annotated[str | None, Depends(_api_key_scheme)] = None,
    _cookie: Annotated[str | None, Depends(_cookie_scheme)] = None,
) -> Principal | None:
    """A dependency: the caller or None (pages that redirect to a login instead)."""
    return principal_from_request(request)


def require_roles(*roles: Role) -> Callable[..., Awaitable[Principal]]:
    """A dependency admitting callers of these roles: 401 without valid credentials,
    403 with a role not among ``roles``. Returns the :class:`Principal`."""
    allowed = frozenset(roles)
    names = ", ".join(r.value for r in roles)

    async def dependency(
        request: Request,
        _key: Annotated[str | None, Depends(_api_key_scheme)] = None,
        _cookie: Annotated[str | None, Depends(_cookie_scheme)] = None,
    ) -> Principal:
        # On the event loop when the check is a cache hit and one read of whether the key
        # still stands (a session's signature and that read, likewise): a hand-off to a
        # worker thread costs more than that under load (docs/service.md, "Reads on the
        # event loop"). A key not verified within the minute runs scrypt, on a thread:
        # never on the loop, which a guesser's keys would otherwise stop. (A key whose
        # minute ends between this look and authenticate's own runs scrypt here, once:
        # a key in use is checked again before its minute ends, so only an idle key's
        # first request could, in the microseconds between two dictionary reads.)
        key = request.headers.get(API_KEY_HEADER)
        if key is not None and not request.app.state.keys.checked_lately(key):
            principal = await run_in_threadpool(principal_from_request, request)
        else:
            principal = principal_from_request(request)
        if principal is None:
            given = API_KEY_HEADER in request.headers or SESSION_COOKIE in request.cookies
            raise AccessError(
                "the credentials are not valid" if given else "no credentials: send X-API-Key",
                status=401,
                field=API_KEY_HEADER,
            )
        if API_KEY_HEADER not in request.headers and request.method not in ("GET", "HEAD"):
            # A console session reads the API; it changes state only through the
            # console's CSRF-protected forms. State-changing API calls need the key.
            raise AccessError(
                "a state-changing API call needs X-API-Key (a console session uses the "
                "console's forms)",
                status=403,
                field=API_KEY_HEADER,
                principal=principal.name,
                role=principal.role.value,
            )
        if principal.role not in allowed:
            raise AccessError(
                f"the {principal.role.value} role may not do this (allowed: {names})",
                status=403,
                field=API_KEY_HEADER,
                principal=principal.name,
                role=principal.role.value,
            )
        return principal

    dependency.__name__ = f"require_roles_{'_'.join(r.value for r in roles)}"
    return dependency
