"""The writer's key in use: where it is, how it is found, and what it marks.

A :class:`JournalKey` is the lender's Ed25519 signing key (:mod:`credit.journal.keys`)
with the HMAC key derived from it. It marks every journal entry (``mac``), seals every
vault row (``seal``: the monitoring data, bound to its key and never reversible
without the key) and signs checkpoints. It is never stored in the database.

Where it is: ``$CREDIT_SIGNING_KEY``, else ``./credit-journal.key`` (git-ignored), its
verifier key beside it at ``PATH.pub``. :func:`ensure_journal_key` makes the default
key on first use, with a note on stderr, so ``credit run`` and ``credit serve`` work
from a fresh clone; a key named by ``$CREDIT_SIGNING_KEY`` is never made behind the
user's back. Checkpoints go to ``$CREDIT_CHECKPOINTS``, else ``./checkpoints``.
"""

from __future__ import annotations

import hmac
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from credit.canonical import canonical_bytes
from credit.errors import InputError
from credit.journal.keys import (
    SigningKey,
    VerifierKey,
    entry_mac,
    entry_mac_key,
    keygen,
    load_signing_key,
    verify_entry_mac,
)

__all__ = [
    "CHECKPOINTS_ENV",
    "DEFAULT_CHECKPOINTS",
    "DEFAULT_KEY_NAME",
    "DEFAULT_KEY_PATH",
    "SIGNING_KEY_ENV",
    "JournalKey",
    "checkpoints_dir",
    "ensure_journal_key",
    "ephemeral_key",
    "key_path",
    "load_journal_key",
    "seal",
]

SIGNING_KEY_ENV: Final = "CREDIT_SIGNING_KEY"
CHECKPOINTS_ENV: Final = "CREDIT_CHECKPOINTS"
DEFAULT_KEY_PATH: Final = Path("credit-journal.key")
DEFAULT_CHECKPOINTS: Final = Path("checkpoints")
DEFAULT_KEY_NAME: Final = "credit.local/journal"
_SEAL_CONTEXT: Final = b"credit.journal vault-seal v1\x00"
_MARK_CONTEXT: Final = b"credit.journal mark v1\x00"


@dataclass(frozen=True, slots=True)
class JournalKey:
    """The signing key and the entry-MAC key derived from it. Its repr names the key,
    never its material."""

    signing: SigningKey
    mac_key: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mac_key", entry_mac_key(self.signing))

    @property
    def name(self) -> str:
        """The key name, which is also the log's origin in its checkpoints."""
        return self.signing.name

    @property
    def verifier(self) -> VerifierKey:
        return self.signing.verifier

    def mac(self, entry_hash_hex: str) -> str:
        """The entry MAC of an entry hash."""
        return entry_mac(self.mac_key, entry_hash_hex)

    def checks(self, entry_hash_hex: str, mac: str | None) -> bool:
        """Whether ``mac`` is this key's MAC of the entry hash (None never is)."""
        return mac is not None and verify_entry_mac(self.mac_key, entry_hash_hex, mac)

    def seal(self, name: str, data: Mapping[str, Any]) -> str:
        """The seal of a vault row: an HMAC of its key and canonical JSON."""
        return seal(self.mac_key, name, data)

    def checks_seal(self, name: str, data: Mapping[str, Any], sealed: str) -> bool:
        """Whether ``sealed`` is this key's seal of the vault row (constant time)."""
        return hmac.compare_digest(self.seal(name, data).encode(), sealed.encode("utf-8"))

    def seal_mark(self, name: str, body: bytes) -> str:
        """The seal of a mark (what a reader derived from the journal through an entry,
        kept beside it): an HMAC of its name and canonical JSON ``body`` under a label
        of its own, so a mark's seal is never a vault row's or an entry's MAC."""
        return _sealed(self.mac_key, _MARK_CONTEXT, name, body)

    def checks_mark(self, name: str, body: bytes, sealed: str) -> bool:
        """Whether ``sealed`` is this key's seal of the mark (constant time)."""
        return hmac.compare_digest(self.seal_mark(name, body).encode(), sealed.encode("utf-8"))


def seal(mac_key: bytes, name: str, data: Mapping[str, Any]) -> str:
    """HMAC-SHA256(mac key, label || name || 0x00 || canonical JSON of data), in hex.
    The name is in it, so a row moved under another case's key does not match."""
    return _sealed(mac_key, _SEAL_CONTEXT, name, canonical_bytes(dict(data)))


def _sealed(mac_key: bytes, context: bytes, name: str, body: bytes) -> str:
    """HMAC-SHA256(mac key, label || name || 0x00 || body), in hex: the label keeps each
    kind of seal apart."""
    message = context + name.encode("utf-8") + b"\x00" + body
    return hmac.new(mac_key, message, sha256).hexdigest()


def ephemeral_key(name: str = "credit.memory/journal") -> JournalKey:
    """A key that lives as long as the process (for an in-memory journal)."""
    return JournalKey(SigningKey(name, Ed25519PrivateKey.generate()))


def key_path(path: Path | str | None = None) -> Path:
    """The signing key's path: ``path``, else ``$CREDIT_SIGNING_KEY``, else the
    default ``./credit-journal.key``."""
    if path is not None:
        return Path(path)
    named = os.environ.get(SIGNING_KEY_ENV)
    return Path(named) if named else DEFAULT_KEY_PATH


def checkpoints_dir(path: Path | str | None = None) -> Path:
    """Where checkpoints go: ``path``, else ``$CREDIT_CHECKPOINTS``, else ./checkpoints."""
    if path is not None:
        return Path(path)
    named = os.environ.get(CHECKPOINTS_ENV)
    return Path(named) if named else DEFAULT_CHECKPOINTS


def load_journal_key(path: Path | str | None = None) -> JournalKey:
    """The key at :func:`key_path` (InputError naming the file if it is not there)."""
    where = key_path(path)
    if not where.exists():
        raise InputError(
            f"no signing key there (make one with: credit journal keygen --out {where}; "
            f"select it with ${SIGNING_KEY_ENV})",
            source=str(where),
        )
    return JournalKey(load_signing_key(where))


def ensure_journal_key(
    path: Path | str | None = None,
    *,
    note: Callable[[str], None] | None = None,
) -> JournalKey:
    """The key at :func:`key_path`; the default key is made on first use (``note``,
    stderr by default, says so). A key named explicitly is never made here."""
    where = key_path(path)
    explicit = path is not None or bool(os.environ.get(SIGNING_KEY_ENV))
    if not where.exists() and not explicit:
        try:
            keygen(where, DEFAULT_KEY_NAME)
        except InputError:
            if not where.exists():  # not another process making it at the same moment
                raise
        else:
            say = note or (lambda text: print(text, file=sys.stderr))
            say(
                f"note: made the journal signing key {where} (and {where}.pub); keep it "
                f"outside the database, or set ${SIGNING_KEY_ENV} to your own"
            )
    return load_journal_key(where)
