"""The lender's journal key: key ids and verifier keys exactly as Go's sumdb/note makes
them, key files that are written once with the right modes and refused when unsafe, and
entry MACs that only the key's holder can make.

The fixed keys are golang.org/x/mod's (github.com/golang/mod at commit
fe2ec04f7c3c3aa6fad97631aafcff6e49e2d1db, BSD-3-Clause): PeterNeumann and EnochRoot
from ``sumdb/note/note_test.go``, localhost.localdev/sumdb from
``sumdb/client_test.go``; example.com/foo is the example of C2SP's ``signed-note.md``
(github.com/C2SP/C2SP at commit 5ba5ee830903e91240fc6f9f3a7a9293d49e69c9).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from credit.errors import InputError
from credit.journal.keys import (
    ENTRY_MAC_CONTEXT,
    SigningKey,
    VerifierKey,
    entry_mac,
    entry_mac_key,
    keygen,
    load_signing_key,
    load_verifier,
    valid_key_name,
    verify_entry_mac,
)

PETER_SIGNER = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VERIFIER = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VERIFIER = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
SUMDB_SIGNER = (
    "PRIVATE+KEY+localhost.localdev/sumdb+00000c67+AXu6+oaVaOYuQOFrf1V59JK1owcFlJcHwwXHDfDGxSPk"
)
SUMDB_VERIFIER = "localhost.localdev/sumdb+00000c67+AcTrnkbUA+TU4heY3hkjiSES/DSQniBqIeQ/YppAUtK6"
FOO_VERIFIER = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
ENTRY_HASH = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def go_signer(encoded: str) -> SigningKey:
    """A SigningKey from a Go ``PRIVATE+KEY+<name>+<id>+<base64(0x01 || seed)>``."""
    _, _, name, _, material = encoded.split("+", 4)
    raw = base64.b64decode(material)
    assert raw[0] == 1
    return SigningKey(name, Ed25519PrivateKey.from_private_bytes(raw[1:]))


# ------------------------------------------------------------------ key ids and verifier keys


@pytest.mark.parametrize(
    ("signer", "verifier"),
    [(PETER_SIGNER, PETER_VERIFIER), (SUMDB_SIGNER, SUMDB_VERIFIER)],
    ids=["PeterNeumann", "localhost.localdev/sumdb"],
)
def test_a_go_signer_key_gives_go_s_verifier_key_and_key_id(signer: str, verifier: str) -> None:
    key = go_signer(signer)
    assert str(key.verifier) == verifier
    assert f"{key.key_id:08x}" == signer.split("+")[3]


@pytest.mark.parametrize("text", [PETER_VERIFIER, ENOCH_VERIFIER, SUMDB_VERIFIER, FOO_VERIFIER])
def test_published_verifier_keys_load_and_write_back_unchanged(text: str) -> None:
    verifier = load_verifier(text)
    assert str(verifier) == text
    assert verifier.name == text.split("+")[0]
    assert verifier.key_id == int(text.split("+")[1], 16)


def test_the_key_id_is_the_first_four_bytes_of_sha256_of_name_newline_type_and_key() -> None:
    verifier = load_verifier(FOO_VERIFIER)
    digest = hashlib.sha256(b"example.com/foo\n\x01" + verifier.public_key).digest()
    assert verifier.key_id == int.from_bytes(digest[:4], "big") == 0x530D903A


def _mangled(text: str) -> list[str]:
    """note_test.go's TestNewVerifier: every proper substring, every byte plus one."""
    raw = text.encode()
    cuts = {
        raw[i:j].decode("utf-8", "replace")
        for i in range(len(raw) + 1)
        for j in range(i + 1, len(raw) + 1)
        if (i, j) != (0, len(raw))
    }
    bumped = {(raw[:i] + bytes([raw[i] + 1]) + raw[i + 1 :]).decode() for i in range(len(raw))}
    return sorted(cuts | bumped)


def test_every_substring_and_every_bumped_byte_of_a_verifier_key_is_refused() -> None:
    mangled = _mangled(PETER_VERIFIER)
    assert len(mangled) > 2000
    accepted = []
    for text in mangled:
        try:
            load_verifier(text)
        except InputError:
            continue
        accepted.append(text)
    assert accepted == []


def test_a_key_of_the_wrong_length_is_refused_even_with_its_key_id_adjusted() -> None:
    # note_test.go's own wrong-length key is not canonical base64 ("Y==" leaves bits).
    with pytest.raises(InputError, match="not the canonical base64 spelling") as err:
        load_verifier("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==")
    assert err.value.field == "verifier key"
    # A canonical 33-byte key whose key id is computed over its 33 bytes.
    long_key = load_verifier(PETER_VERIFIER).public_key + b"\x00"
    key_id = hashlib.sha256(b"PeterNeumann\n\x01" + long_key).digest()[:4].hex()
    material = base64.b64encode(b"\x01" + long_key).decode()
    with pytest.raises(InputError, match="an Ed25519 public key is 32 bytes, not 33"):
        load_verifier(f"PeterNeumann+{key_id}+{material}")


def test_a_key_of_an_unknown_algorithm_is_refused_even_with_its_key_id_adjusted() -> None:
    with pytest.raises(InputError, match=r"not an Ed25519 key \(algorithm byte 0x01\)"):
        load_verifier("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")


def test_a_key_id_that_is_not_the_key_s_own_is_refused() -> None:
    with pytest.raises(InputError, match="the key id c74f20a4 is not this key's \\(c74f20a3\\)"):
        load_verifier(PETER_VERIFIER.replace("c74f20a3", "c74f20a4"))


def test_a_key_id_in_uppercase_hex_is_refused_as_the_spec_writes_lowercase() -> None:
    with pytest.raises(InputError, match="8 lowercase hex digits"):
        load_verifier("PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")


@pytest.mark.parametrize(
    "name", ["example.com/log", "PeterNeumann", "crédit/journal", "a"], ids=repr
)
def test_names_without_spaces_or_plus_are_key_names(name: str) -> None:
    assert valid_key_name(name)
    assert VerifierKey(name, b"\x07" * 32).name == name


@pytest.mark.parametrize(
    "name", ["", "a b", "a+b", "a\tb", "a\u00a0b", "a\u2003b", "trailing "], ids=repr
)
def test_an_empty_name_or_one_with_a_space_or_plus_is_refused(name: str) -> None:
    assert not valid_key_name(name)
    with pytest.raises(InputError, match="is not a key name") as err:
        VerifierKey(name, b"\x07" * 32)
    assert err.value.field == "name"


@given(
    seed=st.binary(min_size=32, max_size=32),
    name=st.from_regex(r"[a-z0-9./-]{1,40}", fullmatch=True),
)
def test_any_verifier_key_written_out_loads_back_equal(seed: bytes, name: str) -> None:
    key = SigningKey(name, Ed25519PrivateKey.from_private_bytes(seed))
    assert load_verifier(str(key.verifier)) == key.verifier


def test_a_signature_checks_with_its_verifier_and_fails_on_a_changed_message_or_signature() -> None:
    key = go_signer(PETER_SIGNER)
    signature = key.sign(b"hi")
    assert key.verifier.verify(b"hi", signature)
    assert not key.verifier.verify(b"hj", signature)
    assert not key.verifier.verify(b"hi", bytes([signature[0] ^ 1]) + signature[1:])
    assert not load_verifier(ENOCH_VERIFIER).verify(b"hi", signature)


def test_a_signing_key_s_repr_shows_its_name_and_never_its_private_key() -> None:
    key = go_signer(PETER_SIGNER)
    seed = key.private_key.private_bytes_raw()
    shown = repr(key)
    assert "PeterNeumann" in shown
    assert seed.hex() not in shown and base64.b64encode(seed).decode() not in shown


# ------------------------------------------------------------------ key files


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keygen_writes_a_private_pem_for_the_owner_only_and_a_readable_verifier_key(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.key"
    key = keygen(path, "credit.example/journal")
    assert _mode(path) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    public = tmp_path / "journal.key.pub"
    assert _mode(public) == 0o644
    assert public.read_text() == f"{key.verifier}\n"
    assert load_verifier(public) == key.verifier
    loaded = load_signing_key(path)
    assert (loaded.name, loaded.verifier) == ("credit.example/journal", key.verifier)
    assert loaded.sign(b"checkpoint") == key.sign(b"checkpoint")


def test_keygen_leaves_no_temporary_file_behind(tmp_path: Path) -> None:
    keygen(tmp_path / "journal.key", "credit.example/journal")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journal.key", "journal.key.pub"]


@pytest.mark.parametrize("existing", ["journal.key", "journal.key.pub"])
def test_keygen_never_replaces_an_existing_key_file_unless_asked(
    tmp_path: Path, existing: str
) -> None:
    path = tmp_path / "journal.key"
    first = keygen(path, "credit.example/journal")
    (tmp_path / ("journal.key.pub" if existing == "journal.key" else "journal.key")).unlink()
    before = (tmp_path / existing).read_bytes()
    with pytest.raises(InputError, match="a key file is already there") as err:
        keygen(path, "credit.example/journal")
    assert err.value.source == str(tmp_path / existing)
    assert (tmp_path / existing).read_bytes() == before

    keygen(path, "credit.example/journal", overwrite=True)
    second = load_signing_key(path)
    assert second.verifier != first.verifier
    assert _mode(path) == 0o600


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644])
def test_a_private_key_that_others_may_read_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "journal.key"
    keygen(path, "credit.example/journal")
    os.chmod(path, mode)
    with pytest.raises(InputError, match=f"open to others \\(mode {mode:04o}\\)") as err:
        load_signing_key(path)
    assert err.value.source == str(path)
    os.chmod(path, 0o400)
    assert load_signing_key(path).name == "credit.example/journal"


def test_a_verifier_key_file_of_another_key_is_refused_beside_the_private_key(
    tmp_path: Path,
) -> None:
    keygen(tmp_path / "a.key", "credit.example/journal")
    keygen(tmp_path / "b.key", "credit.example/journal")
    (tmp_path / "a.key.pub").write_bytes((tmp_path / "b.key.pub").read_bytes())
    with pytest.raises(InputError, match="holds another key's verifier key"):
        load_signing_key(tmp_path / "a.key")


def test_a_private_key_without_its_verifier_key_file_is_refused(tmp_path: Path) -> None:
    keygen(tmp_path / "journal.key", "credit.example/journal")
    (tmp_path / "journal.key.pub").unlink()
    with pytest.raises(InputError, match="cannot read the verifier key") as err:
        load_signing_key(tmp_path / "journal.key")
    assert err.value.source == str(tmp_path / "journal.key.pub")


def _write_private(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    os.chmod(path, 0o600)


def test_a_file_that_is_not_an_unencrypted_ed25519_pem_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.key"
    keygen(path, "credit.example/journal")
    _write_private(path, b"not a key\n")
    with pytest.raises(InputError, match="not an unencrypted PEM private key"):
        load_signing_key(path)

    encrypted = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    _write_private(path, encrypted)
    with pytest.raises(InputError, match="not an unencrypted PEM private key"):
        load_signing_key(path)

    other_kind = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_private(path, other_kind)
    with pytest.raises(InputError, match="not an Ed25519 key but ECPrivateKey"):
        load_signing_key(path)


def test_a_verifier_key_file_that_is_not_a_verifier_key_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.key.pub"
    path.write_text("credit.example/journal\n")
    with pytest.raises(InputError, match="a verifier key is <name>") as err:
        load_verifier(path)
    assert (err.value.source, err.value.field) == (str(path), "verifier key")


# ------------------------------------------------------------------ entry MACs


def _hkdf_sha256(ikm: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869, by hand: extract with the all-zero salt, then expand."""
    prk = hmac.new(b"\x00" * 32, ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def test_the_mac_key_is_hkdf_sha256_of_the_seed_under_the_fixed_label() -> None:
    key = go_signer(PETER_SIGNER)
    seed = key.private_key.private_bytes_raw()
    assert ENTRY_MAC_CONTEXT == b"credit.journal entry-mac v1"
    assert entry_mac_key(key) == _hkdf_sha256(seed, ENTRY_MAC_CONTEXT, 32)
    assert entry_mac_key(key) != seed
    assert entry_mac_key(go_signer(SUMDB_SIGNER)) != entry_mac_key(key)


def test_an_entry_mac_is_hmac_sha256_of_the_hash_s_hex_and_verifies() -> None:
    mac_key = entry_mac_key(go_signer(PETER_SIGNER))
    mac = entry_mac(mac_key, ENTRY_HASH)
    assert mac == hmac.new(mac_key, ENTRY_HASH.encode(), hashlib.sha256).hexdigest()
    assert verify_entry_mac(mac_key, ENTRY_HASH, mac)


def test_a_rewritten_entry_re_hashed_without_the_key_fails_its_mac() -> None:
    """Someone with the database but not the key edits an entry and recomputes its
    hash: the stored MAC is for the old hash, and a MAC made with any other key is
    not the lender's."""
    mac_key = entry_mac_key(go_signer(PETER_SIGNER))
    stored = entry_mac(mac_key, ENTRY_HASH)
    rewritten = "0" + ENTRY_HASH[1:]
    assert not verify_entry_mac(mac_key, rewritten, stored)
    forged = entry_mac(entry_mac_key(SigningKey("x", Ed25519PrivateKey.generate())), rewritten)
    assert not verify_entry_mac(mac_key, rewritten, forged)
    assert verify_entry_mac(mac_key, rewritten, entry_mac(mac_key, rewritten))


@pytest.mark.parametrize("position", [0, 31, 63])
def test_a_mac_with_one_hex_digit_changed_fails(position: int) -> None:
    mac_key = entry_mac_key(go_signer(PETER_SIGNER))
    mac = entry_mac(mac_key, ENTRY_HASH)
    digit = "0" if mac[position] != "0" else "1"
    assert not verify_entry_mac(mac_key, ENTRY_HASH, mac[:position] + digit + mac[position + 1 :])
    assert not verify_entry_mac(mac_key, ENTRY_HASH, mac.upper())
    assert not verify_entry_mac(mac_key, ENTRY_HASH, mac[:-1])


@pytest.mark.parametrize(
    "bad_hash", ["", ENTRY_HASH[:-1], ENTRY_HASH.upper(), ENTRY_HASH[:-1] + "g", " " + ENTRY_HASH]
)
def test_a_malformed_entry_hash_takes_no_mac_and_verifies_none(bad_hash: str) -> None:
    mac_key = entry_mac_key(go_signer(PETER_SIGNER))
    with pytest.raises(InputError, match="64 lowercase hex digits") as err:
        entry_mac(mac_key, bad_hash)
    assert err.value.field == "hash"
    assert not verify_entry_mac(mac_key, bad_hash, entry_mac(mac_key, ENTRY_HASH))
    own_hmac = hmac.new(mac_key, bad_hash.encode(), hashlib.sha256).hexdigest()
    assert not verify_entry_mac(mac_key, bad_hash, own_hmac)


def test_a_mac_key_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(InputError, match="an entry MAC key is 32 bytes, not 31") as err:
        entry_mac(b"k" * 31, ENTRY_HASH)
    assert err.value.field == "mac_key"
    with pytest.raises(InputError, match="not 33"):
        verify_entry_mac(b"k" * 33, ENTRY_HASH, "00")


def test_the_mac_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    mac_key = entry_mac_key(go_signer(PETER_SIGNER))
    mac = entry_mac(mac_key, ENTRY_HASH)
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert verify_entry_mac(mac_key, ENTRY_HASH, mac)
    assert compared == [(mac.encode(), mac.encode())]
