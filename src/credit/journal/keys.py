"""The lender's journal key: an Ed25519 signing key for checkpoints, its verifier key,
and the HMAC key derived from it for entry MACs.

Key names, key ids and verifier keys are those of C2SP signed notes
(https://c2sp.org/signed-note), exactly as golang.org/x/mod/sumdb/note makes them::

    key id       = SHA-256(name || 0x0A || 0x01 || 32-byte public key)[:4]  (big-endian)
    verifier key = <name>+<key id, 8 lowercase hex digits>+base64(0x01 || public key)

A name is non-empty and holds no Unicode space and no ``+``. On disk, :func:`keygen`
writes the private key as PKCS#8 PEM (mode 0600) at PATH and the verifier key, one
line, at PATH.pub; :func:`load_signing_key` reads both and refuses a pair that does
not match or a private key that others may read.

Entry MACs (the writer's mark on each journal entry, checkable only by whoever holds
the key, which is never stored in the database)::

    mac key   = HKDF-SHA256(ikm = the 32-byte Ed25519 seed, salt = none,
                            info = "credit.journal entry-mac v1", length = 32)
    entry MAC = hex(HMAC-SHA256(mac key, ASCII of the entry's 64-hex-digit hash))

The MAC key is derived, not the signing key itself, so one secret guards both and the
two uses never share key material.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from credit.errors import InputError
from credit.journal.atomicfile import write_atomic

__all__ = [
    "ED25519_ALGORITHM",
    "ENTRY_MAC_CONTEXT",
    "SigningKey",
    "VerifierKey",
    "entry_mac",
    "entry_mac_key",
    "keygen",
    "load_signing_key",
    "load_verifier",
    "strict_b64decode",
    "valid_key_name",
    "verify_entry_mac",
]

ED25519_ALGORITHM = 0x01
ENTRY_MAC_CONTEXT = b"credit.journal entry-mac v1"
_PUBLIC_KEY_SIZE = 32
_SIGNATURE_SIZE = 64
_MAC_KEY_SIZE = 32
_HEX_HASH = re.compile(r"[0-9a-f]{64}")
_HEX_KEY_ID = re.compile(r"[0-9a-f]{8}")


def valid_key_name(name: str) -> bool:
    """A signed-note key name: non-empty, with no Unicode space and no ``+``."""
    return bool(name) and "+" not in name and not any(ch.isspace() for ch in name)


def _key_id(name: str, public_key: bytes) -> int:
    digest = hashlib.sha256(
        name.encode("utf-8") + b"\n" + bytes([ED25519_ALGORITHM]) + public_key
    ).digest()
    return int.from_bytes(digest[:4], "big")


def strict_b64decode(text: str) -> bytes:
    """Standard base64 (RFC 4648 §4) with padding, in its one canonical spelling."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error) as exc:
        raise ValueError(f"not standard base64: {exc}") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise ValueError("not the canonical base64 spelling")
    return raw


@dataclass(frozen=True, slots=True)
class VerifierKey:
    """A public key that checks signatures made under one key name."""

    name: str
    public_key: bytes
    key_id: int = field(init=False)

    def __post_init__(self) -> None:
        if not valid_key_name(self.name):
            raise InputError(
                f"{self.name!r} is not a key name (non-empty, no spaces, no '+')",
                field="name",
            )
        if len(self.public_key) != _PUBLIC_KEY_SIZE:
            raise InputError(
                f"an Ed25519 public key is {_PUBLIC_KEY_SIZE} bytes, not {len(self.public_key)}",
                field="public_key",
            )
        object.__setattr__(self, "key_id", _key_id(self.name, self.public_key))

    def __str__(self) -> str:
        """The verifier key string, ``<name>+<hex key id>+<base64(0x01 || key)>``."""
        material = base64.b64encode(bytes([ED25519_ALGORITHM]) + self.public_key).decode()
        return f"{self.name}+{self.key_id:08x}+{material}"

    def verify(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` (64 bytes, no key id) is this key's over ``message``."""
        if len(signature) != _SIGNATURE_SIZE:
            return False
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True, slots=True)
class SigningKey:
    """The private half: signs checkpoints and derives the entry MAC key. Its repr
    shows the name and the key id, never the key."""

    name: str
    private_key: Ed25519PrivateKey = field(repr=False, compare=False)
    verifier: VerifierKey = field(init=False)

    def __post_init__(self) -> None:
        public = self.private_key.public_key().public_bytes_raw()
        object.__setattr__(self, "verifier", VerifierKey(self.name, public))

    @property
    def key_id(self) -> int:
        return self.verifier.key_id

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message`` (deterministic, RFC 8032)."""
        return self.private_key.sign(message)


def _pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _public_path(path: Path) -> Path:
    return path.with_name(path.name + ".pub")


def keygen(path: Path, name: str, *, overwrite: bool = False) -> SigningKey:
    """Make a new key named ``name``: the private key at ``path`` (PKCS#8 PEM, mode
    0600) and its verifier key at ``path``.pub. An existing file at either place is an
    error unless ``overwrite`` is set."""
    key = SigningKey(name, Ed25519PrivateKey.generate())
    public_path = _public_path(path)
    if not overwrite:
        for existing in (path, public_path):
            if existing.exists():
                raise InputError(
                    "a key file is already there; pass overwrite to replace it",
                    source=str(existing),
                )
    try:
        write_atomic(path, _pem(key.private_key), mode=0o600, replace=overwrite)
        write_atomic(public_path, f"{key.verifier}\n".encode(), mode=0o644, replace=overwrite)
    except FileExistsError as exc:
        raise InputError(
            "a key file appeared there while writing; pass overwrite to replace it",
            source=str(exc.filename),
        ) from None
    return key


def load_verifier(path_or_text: Path | str) -> VerifierKey:
    """A verifier key, from its file (a :class:`~pathlib.Path`, as keygen wrote it) or
    from the key string itself (a ``str``). Strict, like Go's ``note.NewVerifier``: the
    name, the 8 lowercase hex digits of the key id, canonical base64 of 0x01 and 32
    key bytes, and a key id that is the key's."""
    if isinstance(path_or_text, Path):
        source: str | None = str(path_or_text)
        try:
            text = path_or_text.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the verifier key: {exc}", source=source) from None
        text = text.removesuffix("\n")
    else:
        source, text = None, path_or_text

    def bad(message: str) -> InputError:
        return InputError(message, source=source, field="verifier key")

    # Split at the first two pluses only, as Go's note.NewVerifier: base64 has '+' too.
    name, first, rest = text.partition("+")
    hex_id, second, material = rest.partition("+")
    if not (first and second):
        raise bad("a verifier key is <name>+<hex key id>+<base64 key>")
    if not valid_key_name(name):
        raise bad(f"{name!r} is not a key name (non-empty, no spaces, no '+')")
    if not _HEX_KEY_ID.fullmatch(hex_id):
        raise bad(f"the key id {hex_id!r} is not 8 lowercase hex digits")
    try:
        raw = strict_b64decode(material)
    except ValueError as exc:
        raise bad(f"the key material is {exc}") from None
    if not raw or raw[0] != ED25519_ALGORITHM:
        raise bad("the key material is not an Ed25519 key (algorithm byte 0x01)")
    if len(raw) != 1 + _PUBLIC_KEY_SIZE:
        raise bad(f"an Ed25519 public key is {_PUBLIC_KEY_SIZE} bytes, not {len(raw) - 1}")
    verifier = VerifierKey(name, raw[1:])
    if verifier.key_id != int(hex_id, 16):
        raise bad(f"the key id {hex_id} is not this key's ({verifier.key_id:08x})")
    return verifier


def load_signing_key(path: Path) -> SigningKey:
    """The signing key keygen wrote at ``path``, named by its verifier key at
    ``path``.pub. Refused: a private key file that group or others may read, a file
    that is not an unencrypted PKCS#8 Ed25519 key, a .pub for another key."""
    source = str(path)
    try:
        mode = path.stat().st_mode
        pem = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the signing key: {exc}", source=source) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InputError(
            f"the signing key is open to others (mode {stat.S_IMODE(mode):04o}); it must be 0600",
            source=source,
        )
    try:
        private = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise InputError(f"not an unencrypted PEM private key: {exc}", source=source) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise InputError(f"not an Ed25519 key but {type(private).__name__}", source=source)
    verifier = load_verifier(_public_path(path))
    key = SigningKey(verifier.name, private)
    if key.verifier != verifier:
        raise InputError(
            f"{_public_path(path)} holds another key's verifier key ({verifier}), "
            f"not this key's ({key.verifier})",
            source=source,
        )
    return key


def entry_mac_key(signing_key: SigningKey) -> bytes:
    """The 32-byte HMAC key for entry MACs, derived from the signing key's seed."""
    return HKDF(
        algorithm=hashes.SHA256(),
        length=_MAC_KEY_SIZE,
        salt=None,
        info=ENTRY_MAC_CONTEXT,
    ).derive(signing_key.private_key.private_bytes_raw())


def _check_mac_key(mac_key: bytes) -> None:
    if len(mac_key) != _MAC_KEY_SIZE:
        raise InputError(
            f"an entry MAC key is {_MAC_KEY_SIZE} bytes, not {len(mac_key)}", field="mac_key"
        )


def entry_mac(mac_key: bytes, entry_hash_hex: str) -> str:
    """The entry MAC of a journal entry hash (64 lowercase hex digits), in hex."""
    _check_mac_key(mac_key)
    if not _HEX_HASH.fullmatch(entry_hash_hex):
        raise InputError(
            f"an entry hash is 64 lowercase hex digits, not {entry_hash_hex!r}", field="hash"
        )
    return hmac.new(mac_key, entry_hash_hex.encode("ascii"), hashlib.sha256).hexdigest()


def verify_entry_mac(mac_key: bytes, entry_hash_hex: str, mac_hex: str) -> bool:
    """Whether ``mac_hex`` is the entry MAC of ``entry_hash_hex`` (compared in
    constant time). A malformed entry hash is a failure, not an error."""
    _check_mac_key(mac_key)
    if not _HEX_HASH.fullmatch(entry_hash_hex):
        return False
    expected = hmac.new(mac_key, entry_hash_hex.encode("ascii"), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), mac_hex.encode("utf-8"))
