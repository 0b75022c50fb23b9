"""API keys: one per caller, each with one role, stored hashed.

Every key names one person: two keys cannot share a name (the journal records each
action with the key's id and name). ``revoke`` revokes a key at once: the key store
refuses it on the next request, and so does every console session signed in with it
(sessions carry the key id and are checked on every request).

A key reads ``credit.<key id>.<secret>``: the key id (16 hex digits) finds the row,
the secret (32 random bytes, URL-safe base64) is checked against the row's salted
scrypt hash (``scrypt$n$r$p$salt$hash``) in constant time. The key itself is printed
once, when it is created, and stored nowhere.

``scrypt_n`` is the scrypt cost of keys a store creates (each stored hash names its
own parameters, so a key store checks keys of any cost). Checking at the default cost
takes ~0.1 s of CPU, so a store remembers the keys it has verified
for :data:`VERIFIED_TTL_S` seconds (by the SHA-256 of the key, in process memory).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Final, Protocol

from sqlalchemy import bindparam, select, update
from sqlalchemy.exc import IntegrityError

from credit.errors import InputError
from credit.journal.sql import read_connection
from credit.service.roles import Principal, Role
from credit.service.tables import ServiceDb

__all__ = [
    "KEY_PREFIX",
    "ApiKey",
    "KeyStore",
    "MemoryKeyStore",
    "SqlKeyStore",
    "hash_secret",
    "new_key",
    "verify_secret",
]

KEY_PREFIX: Final = "credit"
SCRYPT_N: Final = 2**14
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
VERIFIED_TTL_S: Final = 60.0
REFRESH_AHEAD_S: Final = 10.0  # a key in use is checked again this long before its minute ends
VERIFIED_MAX: Final = 4096


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored key's public half: who it is, the role, when it was made and revoked."""

    key_id: str
    name: str
    role: Role
    created_at: str
    revoked_at: str | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


def hash_secret(secret: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """``scrypt$n$r$p$salt$hash`` (hex) with a fresh 16-byte salt."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=n, r=r, p=p, dklen=32)
    return f"scrypt${n}${r}${p}${salt.hex()}${digest.hex()}"


def verify_secret(secret: str, stored: str) -> bool:
    """Whether ``secret`` matches ``stored`` (constant-time compare of the digests)."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        got = hashlib.scrypt(
            secret.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), dklen=32
        )
        return hmac.compare_digest(got, bytes.fromhex(digest))
    except ValueError:
        return False


def new_key() -> tuple[str, str, str]:
    """(key id, secret, the key as handed out)."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return key_id, secret, f"{KEY_PREFIX}.{key_id}.{secret}"


def _split(key: str) -> tuple[str, str] | None:
    parts = key.split(".")
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def _check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 100 or any(not c.isprintable() for c in name):
        raise InputError("a key's name is 1 to 100 printable characters", field="name")
    return name


def _role(value: str) -> Role:
    try:
        return Role(value)
    except ValueError:
        allowed = ", ".join(r.value for r in Role)
        raise InputError(f"no role {value!r} (roles: {allowed})", field="role") from None


class KeyStore(Protocol):
    """Where API keys are kept (hashed)."""

    def create(self, role: Role | str, name: str) -> tuple[ApiKey, str]:
        """Make a key; (its record, the key itself: shown once, stored nowhere)."""
        ...

    def list(self) -> list[ApiKey]: ...

    def authenticate(self, key: str) -> Principal | None:
        """The key's principal, or None for an unknown, wrong or revoked key."""
        ...

    def checked_lately(self, key: str) -> bool:
        """Whether ``key``'s secret was verified within the minute, so that its
        :meth:`authenticate` runs no scrypt, only the read of whether it still stands
        (the API's key check runs on the event loop then, on a worker thread if not)."""
        ...

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key at once (InputError naming ``keyId`` if there is no such key)."""
        ...

    def active(self, key_id: str) -> Principal | None:
        """The principal of a key that exists and is not revoked (a session's check)."""
        ...


class _Verified:
    """Keys verified lately (by SHA-256), so scrypt runs once a minute per key; and one
    verification of a key at a time (:meth:`flight`), so that when a key's minute runs
    out under load its requests wait for one scrypt instead of each running its own. A
    key in use is checked again aside before its minute ends, so no request of it waits
    for scrypt; only a key unused for a minute is checked in its request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[Principal, float]] = {}
        self._flights: dict[str, threading.Lock] = {}

    def flight(self, key: str) -> threading.Lock:
        """The lock a verification of ``key`` holds (one per key, so that different
        keys, a caller's and a guesser's, never wait for each other)."""
        tag = hashlib.sha256(key.encode()).hexdigest()
        with self._lock:
            if len(self._flights) >= VERIFIED_MAX:
                self._flights.clear()  # a holder keeps its own reference
            return self._flights.setdefault(tag, threading.Lock())

    def get(self, key: str) -> tuple[Principal, bool] | None:
        """The key's principal if verified within the minute, and whether its minute
        ends within :data:`REFRESH_AHEAD_S` (then it is due to be checked again)."""
        tag = hashlib.sha256(key.encode()).hexdigest()
        with self._lock:
            hit = self._seen.get(tag)
            if hit is None:
                return None
            now = time.monotonic()
            if hit[1] < now:
                del self._seen[tag]
                return None
            return hit[0], hit[1] - now < REFRESH_AHEAD_S

    def put(self, key: str, principal: Principal) -> None:
        tag = hashlib.sha256(key.encode()).hexdigest()
        with self._lock:
            if len(self._seen) >= VERIFIED_MAX:
                self._seen.clear()
            self._seen[tag] = (principal, time.monotonic() + VERIFIED_TTL_S)


class _KeyStoreBase(ABC):
    """Authentication over a store of hashed keys; subclasses say where rows live."""

    def __init__(self, *, scrypt_n: int = SCRYPT_N) -> None:
        self._verified = _Verified()
        self._scrypt_n = scrypt_n

    @abstractmethod
    def _row(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key's record and its stored hash, or None."""

    @abstractmethod
    def _set_revoked(self, key_id: str, when: str) -> None:
        """Record that a key was revoked (the row exists)."""

    def authenticate(self, key: str) -> Principal | None:
        split = _split(key)
        if split is None:
            return None
        cached = self._verified.get(key)
        if cached is None:
            with self._verified.flight(key):
                cached = self._verified.get(key)  # verified meanwhile by another request
                if cached is None:
                    return self._check(key, *split)
        principal, due = cached
        if due:  # in use and its minute nearly out: checked again aside, not in a request
            self._check_aside(key, *split)
        # The secret was checked lately; whether the key still stands is read now.
        return principal if self.active(split[0]) is not None else None

    def checked_lately(self, key: str) -> bool:
        return self._verified.get(key) is not None

    def _check(self, key: str, key_id: str, secret: str) -> Principal | None:
        """Check the secret against the stored hash (scrypt); remember it if it holds."""
        found = self._row(key_id)
        if found is None or found[0].revoked or not verify_secret(secret, found[1]):
            return None
        principal = Principal(found[0].name, found[0].role, found[0].key_id)
        self._verified.put(key, principal)
        return principal

    def _check_aside(self, key: str, key_id: str, secret: str) -> None:
        """:meth:`_check` on a thread of its own, unless a check of the key is under way
        (it holds the key's flight until done)."""
        flight = self._verified.flight(key)
        if not flight.acquire(blocking=False):
            return

        def run() -> None:
            try:
                self._check(key, key_id, secret)
            finally:
                flight.release()

        threading.Thread(target=run, name="credit-key-check", daemon=True).start()

    def active(self, key_id: str) -> Principal | None:
        found = self._row(key_id)
        if found is None or found[0].revoked:
            return None
        return Principal(found[0].name, found[0].role, found[0].key_id)

    def revoke(self, key_id: str) -> ApiKey:
        found = self._row(key_id)
        if found is None:
            raise InputError(f"no key with id {key_id!r}", field="keyId")
        if found[0].revoked:
            return found[0]
        self._set_revoked(key_id, _now())
        revoked = self._row(key_id)
        assert revoked is not None
        return revoked[0]


class MemoryKeyStore(_KeyStoreBase):
    """Keys in process memory (tests)."""

    def __init__(self, *, scrypt_n: int = SCRYPT_N) -> None:
        super().__init__(scrypt_n=scrypt_n)
        self._rows: dict[str, tuple[ApiKey, str]] = {}

    def create(self, role: Role | str, name: str) -> tuple[ApiKey, str]:
        key_id, secret, key = new_key()
        record = ApiKey(key_id, _check_name(name), _role(str(role)), _now())
        if any(r.name == record.name for r, _ in self._rows.values()):
            raise _name_taken(record.name)
        self._rows[key_id] = (record, hash_secret(secret, n=self._scrypt_n))
        return record, key

    def list(self) -> list[ApiKey]:
        return [record for record, _ in self._rows.values()]

    def _row(self, key_id: str) -> tuple[ApiKey, str] | None:
        return self._rows.get(key_id)

    def _set_revoked(self, key_id: str, when: str) -> None:
        record, secret_hash = self._rows[key_id]
        self._rows[key_id] = (
            ApiKey(record.key_id, record.name, record.role, record.created_at, when),
            secret_hash,
        )


class SqlKeyStore(_KeyStoreBase):
    """Keys in the ``api_keys`` table (:class:`~credit.service.tables.ServiceDb`)."""

    def __init__(self, db: ServiceDb, *, scrypt_n: int = SCRYPT_N) -> None:
        super().__init__(scrypt_n=scrypt_n)
        self._db = db
        self._table = db.api_keys
        # Read on every request (whether its key still stands): built once.
        self._by_id = select(self._table).where(self._table.c.key_id == bindparam("key_id"))

    def create(self, role: Role | str, name: str) -> tuple[ApiKey, str]:
        key_id, secret, key = new_key()
        record = ApiKey(key_id, _check_name(name), _role(str(role)), _now())
        try:
            with self._db.failures(), self._db.write() as conn:
                taken = conn.execute(
                    select(self._table.c.key_id).where(self._table.c.name == record.name)
                ).first()
                if taken is not None:
                    raise _name_taken(record.name)
                conn.execute(
                    self._table.insert().values(
                        key_id=record.key_id,
                        name=record.name,
                        role=record.role.value,
                        secret_hash=hash_secret(secret, n=self._scrypt_n),
                        created_at=record.created_at,
                    )
                )
        except IntegrityError:  # another process took the name between the check and insert
            raise _name_taken(record.name) from None
        return record, key

    def list(self) -> list[ApiKey]:
        t = self._table
        with self._db.failures(), read_connection(self._db.engine) as conn:
            rows = conn.execute(select(t).order_by(t.c.created_at, t.c.key_id)).all()
        return [ApiKey(r.key_id, r.name, Role(r.role), r.created_at, r.revoked_at) for r in rows]

    def _row(self, key_id: str) -> tuple[ApiKey, str] | None:
        with self._db.failures(), read_connection(self._db.engine) as conn:
            row = conn.execute(self._by_id, {"key_id": key_id}).first()
        if row is None:
            return None
        try:
            role = Role(row.role)
        except ValueError:
            return None
        record = ApiKey(row.key_id, row.name, role, row.created_at, row.revoked_at)
        return record, row.secret_hash

    def _set_revoked(self, key_id: str, when: str) -> None:
        t = self._table
        with self._db.failures(), self._db.write() as conn:
            conn.execute(
                update(t)
                .where(t.c.key_id == key_id, t.c.revoked_at.is_(None))
                .values(revoked_at=when)
            )


def _name_taken(name: str) -> InputError:
    return InputError(
        f"a key named {name!r} exists already: two keys cannot share a name (the journal "
        "names each person by their key)",
        field="name",
    )


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
