"""Signed checkpoints: C2SP signed notes as Go's sumdb/note signs and opens them, byte
for byte; tlog-checkpoint bodies parsed strictly, every bad line named; files kept one
per tree size, and a second, different checkpoint of a size refused as a fork.

The signed notes, keys and tree notes are golang.org/x/mod's (github.com/golang/mod at
commit fe2ec04f7c3c3aa6fad97631aafcff6e49e2d1db): ``sumdb/note/note_test.go``
(TestSign, TestOpen) and ``sumdb/client_test.go`` (the "go.sum database tree"
checkpoints of TestClientFork, signed by localhost.localdev/sumdb). The C2SP examples
are from github.com/C2SP/C2SP at commit 5ba5ee830903e91240fc6f9f3a7a9293d49e69c9
(``signed-note.md``, ``tlog-checkpoint.md``). Ed25519 is deterministic, so signing the
same text with the same key reproduces Go's signature.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from credit.canonical import canonical_bytes
from credit.errors import InputError, JournalIntegrityError
from credit.journal import InMemoryStore
from credit.journal.checkpoint import (
    NEWEST_POINTER,
    Checkpoint,
    NoteSignature,
    checkpoint_body,
    newest_file,
    open_note,
    parse_checkpoint,
    parse_note,
    read_checkpoints,
    sign_checkpoint,
    sign_note,
    verify_checkpoint,
    write_checkpoint,
)
from credit.journal.checkpoint import _control_character_line as _control_character_line
from credit.journal.keys import SigningKey, VerifierKey, load_verifier
from credit.journal.merkle import (
    EMPTY_ROOT,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root,
    verify_consistency,
)
from test_journal_keys import (
    ENOCH_VERIFIER,
    FOO_VERIFIER,
    PETER_SIGNER,
    PETER_VERIFIER,
    SUMDB_SIGNER,
    SUMDB_VERIFIER,
    go_signer,
)

TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdng"
    "otpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox3"
    "3WWd1RvMc+QQ=\n"
)
PETER = NoteSignature(
    "PeterNeumann",
    0xC74F20A3,
    base64.b64decode(
        "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
    )[4:],
)
ENOCH = NoteSignature(
    "EnochRoot",
    0xAF0CFE78,
    base64.b64decode(
        "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ="
    )[4:],
)

SUMDB_TREE_5 = (
    "go.sum database tree\n"
    "5\n"
    "nWzN20+pwMt62p7jbv1/NlN95ePTlHijabv5zO/s36w=\n"
    "\n"
    "— localhost.localdev/sumdb AAAMZ5/2FVAdMH58kmnz/0h299pwyskEbzDzoa2/YaPdhvLya4YWDFQQxu2TQb5"
    "GpwAH4NdWnTwuhILafisyf3CNbgg=\n"
)
SUMDB_TREE_6 = (
    "go.sum database tree\n"
    "6\n"
    "wc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=\n"
    "\n"
    "— localhost.localdev/sumdb AAAMZ6oRNswlEZ6ZZhxrCvgl1MBy+nusq4JU+TG6Fe2NihWLqOzb+y2c2kzRLoC"
    "r4tvw9o36ucQEnhc20e4nA4Qc/wc=\n"
)
C2SP_NOTE = (
    "This is an example message.\n"
    "\n"
    "— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXm"
    "RKuwHjG1Yu72IneyaQM=\n"
)
C2SP_POEM = (
    "Ognuno sta solo sul cuor della terra\n"
    "trafitto da un raggio di sole:\n"
    "\n"
    "ed è subito sera.\n"
    "\n"
    "— quasimodo.example/salvatore NnugSzTjtVAewIS+Z/iJhUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrM"
    "ouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=\n"
)
C2SP_CHECKPOINT = (
    "example.com/behind-the-sofa\n"
    "20852163\n"
    "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    "\n"
    "— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zh"
    "cyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
)

ORIGIN = "credit.example/journal"
LEAVES = [leaf_hash(f"entry {i}".encode()) for i in range(10)]


def lender_key() -> SigningKey:
    return SigningKey(ORIGIN, Ed25519PrivateKey.from_private_bytes(bytes(range(32))))


def signed(size: int, key: SigningKey | None = None) -> bytes:
    return sign_checkpoint(ORIGIN, size, root(LEAVES[:size]), key or lender_key())


def integrity_error(excinfo: pytest.ExceptionInfo[JournalIntegrityError]) -> tuple[object, ...]:
    e = excinfo.value
    return (e.check, e.line, e.tree_size, e.checkpoint)


# ------------------------------------------------------------------ Go's signed notes


def test_signing_go_s_note_with_go_s_key_gives_go_s_signed_note_byte_for_byte() -> None:
    assert sign_note(TEXT, go_signer(PETER_SIGNER)) == (TEXT + "\n" + PETER_SIG).encode()


def test_a_note_opens_with_one_known_key_and_keeps_the_unknown_one_unverified() -> None:
    note = open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, load_verifier(PETER_VERIFIER))
    assert note.text == TEXT
    assert note.verified == (PETER,)
    assert note.signatures == (PETER, ENOCH)


def test_a_note_opens_with_both_keys_known() -> None:
    verifiers = [load_verifier(PETER_VERIFIER), load_verifier(ENOCH_VERIFIER)]
    note = open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, verifiers)
    assert note.verified == (PETER, ENOCH)


def test_a_note_signed_by_no_known_key_is_rejected_naming_the_keys() -> None:
    with pytest.raises(JournalIntegrityError) as err:
        open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, load_verifier(SUMDB_VERIFIER))
    assert integrity_error(err) == ("unknown-key", None, None, None)
    assert str(err.value) == (
        "unknown-key: no signature by a known key (signed by PeterNeumann+c74f20a3, "
        "EnochRoot+af0cfe78; known: localhost.localdev/sumdb+00000c67)"
    )


def test_a_known_key_s_signature_that_does_not_verify_rejects_the_note_at_its_line() -> None:
    bad = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    with pytest.raises(
        JournalIntegrityError, match="PeterNeumann\\+c74f20a3 does not verify"
    ) as err:
        open_note(TEXT + "\n" + bad, load_verifier(PETER_VERIFIER))
    assert integrity_error(err) == ("signature", 4, None, None)


def test_a_repeated_signature_line_counts_once() -> None:
    """TestOpen's "duplicated verified and unverified signatures": the same line twice
    is one signature; unknown keys' distinct lines are all kept, unverified."""
    enoch_abcd = ENOCH_SIG[:60] + "ABCD" + ENOCH_SIG[60:]
    message = TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG + enoch_abcd
    note = open_note(message, load_verifier(PETER_VERIFIER))
    assert note.verified == (PETER,)
    assert [s.name for s in note.signatures] == ["PeterNeumann", "EnochRoot", "EnochRoot"]
    assert note.signatures[2].line() + "\n" == enoch_abcd


def test_a_known_key_s_second_bad_signature_rejects_the_note_though_its_first_is_good() -> None:
    """C2SP signed-note: a known key's signatures MUST be verified, each of them. (Go's
    note.Open verifies a key's first line and skips the rest; this is stricter.)"""
    peter_abcd = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    with pytest.raises(JournalIntegrityError, match="does not verify") as err:
        open_note(TEXT + "\n" + PETER_SIG + peter_abcd, load_verifier(PETER_VERIFIER))
    assert integrity_error(err) == ("signature", 5, None, None)


def test_a_hundred_signatures_are_read_and_a_hundred_and_one_are_too_many() -> None:
    assert open_note(TEXT + "\n" + PETER_SIG * 100, load_verifier(PETER_VERIFIER)).verified == (
        PETER,
    )
    with pytest.raises(JournalIntegrityError, match="more than 100 signature lines") as err:
        open_note(TEXT + "\n" + PETER_SIG * 101, load_verifier(PETER_VERIFIER))
    assert integrity_error(err) == ("note", 104, None, None)


@pytest.mark.parametrize(
    ("message", "line", "reason"),
    [
        (TEXT.encode(), None, "no blank line"),
        ((TEXT + "\n").encode(), 4, "no signature line"),
        ((TEXT + "\n" + PETER_SIG[:-1]).encode(), 4, "the last signature line has no newline"),
        (("\x01" + TEXT + "\n" + PETER_SIG).encode(), 1, "a control character"),
        (b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), 1, "not valid UTF-8"),
        (
            (
                TEXT + "\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2p"
                "ZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
            ).encode(),
            4,
            "the last signature line has no newline",
        ),
        ((TEXT + "\n" + PETER_SIG + "Unexpected line.\n").encode(), 5, "starts with an em dash"),
        ((TEXT + "\n— Peter+Neumann " + PETER_SIG[15:]).encode(), 4, "is not a key name"),
        ((TEXT + "\n— PeterNeumann AAAA\n").encode(), 4, "a 4-byte key id and at least one"),
        ((TEXT + "\n— PeterNeumann x08go/===\n").encode(), 4, "not standard base64"),
        ((TEXT + "\n- " + PETER_SIG[2:]).encode(), 4, "starts with an em dash"),
        ((TEXT + "\tx\n\n" + PETER_SIG).encode(), 3, "a control character"),
    ],
    ids=[
        "no blank line",
        "no signature",
        "no final newline",
        "control character",
        "invalid UTF-8",
        "bad name, no newline",
        "a line after the signatures",
        "a name with a plus",
        "a signature too short",
        "bad base64",
        "a hyphen for the em dash",
        "a tab in the text",
    ],
)
def test_a_malformed_note_is_rejected_naming_its_line(
    message: bytes, line: int | None, reason: str
) -> None:
    with pytest.raises(JournalIntegrityError, match=reason) as err:
        open_note(message, load_verifier(PETER_VERIFIER))
    assert integrity_error(err) == ("note", line, None, None)


def test_the_c2sp_example_note_verifies_with_its_verifier_key() -> None:
    note = open_note(C2SP_NOTE, load_verifier(FOO_VERIFIER))
    assert note.text == "This is an example message.\n"
    assert [(s.name, s.key_id) for s in note.verified] == [("example.com/foo", 0x530D903A)]


def test_a_note_s_text_may_hold_blank_lines_and_ends_at_the_last_one() -> None:
    note = parse_note(C2SP_POEM)
    assert note.text.endswith("\n\ned è subito sera.\n")
    assert [s.name for s in note.signatures] == ["quasimodo.example/salvatore"]
    assert note.verified == ()


def test_a_note_s_text_must_end_in_a_newline_and_hold_no_control_character() -> None:
    key = lender_key()
    with pytest.raises(InputError, match="ends with a newline") as err:
        sign_note("no newline", key)
    assert err.value.field == "text"
    with pytest.raises(InputError, match="line 2 of the note's text has a control character"):
        sign_note("one\ntwo\r\n", key)


def test_two_different_verifier_keys_with_one_name_and_key_id_are_refused() -> None:
    real = load_verifier(PETER_VERIFIER)
    twin = VerifierKey.__new__(VerifierKey)
    for name, value in (("name", real.name), ("public_key", b"\x01" * 32), ("key_id", real.key_id)):
        object.__setattr__(twin, name, value)
    with pytest.raises(InputError, match="share the name and key id PeterNeumann\\+c74f20a3"):
        open_note(TEXT + "\n" + PETER_SIG, [real, twin])
    assert open_note(TEXT + "\n" + PETER_SIG, [real, real]).verified == (PETER,)


# ------------------------------------------------------------------ checkpoints


@pytest.mark.parametrize(
    ("size", "root_b64", "message"),
    [
        (5, "nWzN20+pwMt62p7jbv1/NlN95ePTlHijabv5zO/s36w=", SUMDB_TREE_5),
        (6, "wc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=", SUMDB_TREE_6),
    ],
    ids=["tree 5", "tree 6"],
)
def test_go_s_sumdb_tree_notes_are_checkpoints_we_sign_and_verify_byte_for_byte(
    size: int, root_b64: str, message: str
) -> None:
    key = go_signer(SUMDB_SIGNER)
    root_hash = base64.b64decode(root_b64)
    assert sign_checkpoint("go.sum database tree", size, root_hash, key) == message.encode()
    checkpoint = verify_checkpoint(message, load_verifier(SUMDB_VERIFIER))
    assert (checkpoint.origin, checkpoint.size, checkpoint.root_hash) == (
        "go.sum database tree",
        size,
        root_hash,
    )


def test_the_c2sp_example_checkpoint_parses_and_its_signer_is_unknown_to_us() -> None:
    checkpoint = parse_checkpoint(C2SP_CHECKPOINT)
    assert (checkpoint.origin, checkpoint.size, checkpoint.root_hash.hex()) == (
        "example.com/behind-the-sofa",
        20852163,
        "0ac5186a91863e8e1d90c808014aa89bf5da8e3ee1d9f07630f0378f68f1ab62",
    )
    assert checkpoint.extensions == ()
    assert [(s.name, s.key_id) for s in checkpoint.note.signatures] == [
        ("example.com/behind-the-sofa", 0x033DE0AE)
    ]
    with pytest.raises(JournalIntegrityError, match="behind-the-sofa\\+033de0ae") as err:
        verify_checkpoint(C2SP_CHECKPOINT, lender_key().verifier)
    assert integrity_error(err) == ("unknown-key", None, 20852163, None)


def test_our_checkpoint_reads_back_with_its_origin_size_root_and_extensions() -> None:
    key = lender_key()
    message = sign_checkpoint(ORIGIN, 7, root(LEAVES[:7]), key, extensions=["k=v", "x"])
    text = message.decode()
    assert text.startswith(
        f"{ORIGIN}\n7\n{base64.b64encode(root(LEAVES[:7])).decode()}\nk=v\nx\n\n— "
    )
    checkpoint = verify_checkpoint(message, key.verifier, origin=ORIGIN)
    assert (checkpoint.size, checkpoint.root_hash, checkpoint.extensions) == (
        7,
        root(LEAVES[:7]),
        ("k=v", "x"),
    )
    assert checkpoint.body == checkpoint_body(ORIGIN, 7, root(LEAVES[:7]), ["k=v", "x"])
    assert checkpoint.note.verified[0].key_id == key.key_id


def test_the_empty_log_has_a_checkpoint_of_size_zero_with_the_empty_root() -> None:
    checkpoint = verify_checkpoint(signed(0), lender_key().verifier)
    assert (checkpoint.size, checkpoint.root_hash) == (0, EMPTY_ROOT)


def _body_variant(line: int, replacement: str | None) -> str:
    lines = checkpoint_body(ORIGIN, 3, root(LEAVES[:3])).split("\n")[:-1]
    if replacement is None:
        del lines[line - 1 :]
    else:
        lines[line - 1] = replacement
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("line", "replacement", "reason"),
    [
        (1, "", "the origin line is empty"),
        (2, None, "no tree size line"),
        (2, "007", "not a decimal without leading zeros"),
        (2, "+3", "not a decimal"),
        (2, " 3", "not a decimal"),
        (2, "3 ", "not a decimal"),
        (2, "٣", "not a decimal"),
        (2, "1_000", "not a decimal"),
        (2, "0x3", "not a decimal"),
        (2, "-1", "not a decimal"),
        (2, "18446744073709551616", "over 2\\^64-1"),
        (3, None, "no root hash line"),
        (3, "not base64!", "not standard base64"),
        (3, base64.b64encode(b"\x00" * 31).decode(), "31 bytes, not 32"),
        (3, base64.b64encode(b"\x00" * 33).decode(), "33 bytes, not 32"),
        (3, base64.b64encode(b"\x00" * 32).decode()[:-2] + "B=", "not the canonical base64"),
        (3, base64.b64encode(b"\x00" * 32).decode().rstrip("="), "not standard base64"),
    ],
    ids=lambda value: repr(value) if isinstance(value, str) else str(value),
)
def test_a_malformed_checkpoint_body_is_rejected_naming_its_line(
    line: int, replacement: str | None, reason: str
) -> None:
    message = sign_note(_body_variant(line, replacement), lender_key())
    with pytest.raises(JournalIntegrityError, match=reason) as err:
        parse_checkpoint(message)
    assert (err.value.check, err.value.line) == ("body", line)
    with pytest.raises(JournalIntegrityError, match=reason) as err:
        verify_checkpoint(message, lender_key().verifier)
    assert (err.value.check, err.value.line, err.value.tree_size) == ("body", line, None)


@pytest.mark.parametrize("size", [0, 1, 9, 10, 18446744073709551615], ids=str)
def test_tree_sizes_from_zero_to_two_to_the_64_minus_one_are_read(size: int) -> None:
    message = sign_checkpoint(ORIGIN, size, EMPTY_ROOT, lender_key())
    assert verify_checkpoint(message, lender_key().verifier).size == size


def test_an_empty_extension_line_is_rejected_naming_its_line() -> None:
    body = checkpoint_body(ORIGIN, 3, root(LEAVES[:3]), ["first"]) + "\nthird\n"
    with pytest.raises(JournalIntegrityError, match="an extension line is empty") as err:
        parse_checkpoint(sign_note(body, lender_key()))
    assert (err.value.check, err.value.line) == ("body", 5)


def test_a_checkpoint_with_its_tree_size_changed_fails_its_signature() -> None:
    tampered = signed(3).replace(b"\n3\n", b"\n4\n", 1)
    with pytest.raises(JournalIntegrityError, match="does not verify") as err:
        verify_checkpoint(tampered, lender_key().verifier)
    assert integrity_error(err) == ("signature", 5, 4, None)
    assert parse_checkpoint(tampered).size == 4


def test_a_checkpoint_signed_by_another_key_of_the_same_name_is_unknown() -> None:
    impostor = SigningKey(ORIGIN, Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33))))
    with pytest.raises(JournalIntegrityError) as err:
        verify_checkpoint(signed(3, impostor), lender_key().verifier, source="cp/3")
    assert integrity_error(err) == ("unknown-key", None, 3, "cp/3")


def test_a_checkpoint_verifies_with_either_key_of_a_rotation() -> None:
    old, new = lender_key(), SigningKey(ORIGIN, Ed25519PrivateKey.from_private_bytes(b"\x05" * 32))
    for key in (old, new):
        assert verify_checkpoint(signed(3, key), [old.verifier, new.verifier]).size == 3


def test_a_checkpoint_of_another_log_is_refused_when_the_origin_is_asked() -> None:
    other = sign_checkpoint("other.example/log", 3, root(LEAVES[:3]), lender_key())
    assert verify_checkpoint(other, lender_key().verifier).origin == "other.example/log"
    with pytest.raises(JournalIntegrityError, match=r"'other\.example/log', not of") as err:
        verify_checkpoint(other, lender_key().verifier, origin=ORIGIN)
    assert integrity_error(err) == ("origin", 1, 3, None)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"origin": ""}, "origin"),
        ({"origin": "two\nlines"}, "origin"),
        ({"origin": "tab\there"}, "origin"),
        ({"size": -1}, "size"),
        ({"size": 2**64}, "size"),
        ({"size": True}, "size"),
        ({"root_hash": b"\x00" * 31}, "root_hash"),
        ({"extensions": ["ok", ""]}, "extensions[1]"),
        ({"extensions": ["two\nlines"]}, "extensions[0]"),
    ],
    ids=lambda value: repr(value),
)
def test_a_checkpoint_is_not_signed_for_bad_values(kwargs: dict[str, object], field: str) -> None:
    arguments: dict[str, object] = {
        "origin": ORIGIN,
        "size": 3,
        "root_hash": root(LEAVES[:3]),
        "extensions": (),
    }
    arguments.update(kwargs)
    with pytest.raises(InputError) as err:
        sign_checkpoint(
            arguments["origin"],  # type: ignore[arg-type]
            arguments["size"],  # type: ignore[arg-type]
            arguments["root_hash"],  # type: ignore[arg-type]
            lender_key(),
            extensions=arguments["extensions"],  # type: ignore[arg-type]
        )
    assert err.value.field == field


def test_the_integrity_error_names_the_file_size_entry_and_line() -> None:
    error = JournalIntegrityError(
        "bad", check="body", checkpoint="cp/00000000000000000003.checkpoint", tree_size=3, line=2
    )
    assert (
        str(error)
        == "checkpoint cp/00000000000000000003.checkpoint, tree size 3, line 2: body: bad"
    )
    assert str(JournalIntegrityError("bad", check="entry-mac", seq=7)) == "entry 7: entry-mac: bad"
    assert isinstance(error, RuntimeError)


printable_line = st.text(
    alphabet=st.characters(min_codepoint=0x20, exclude_categories=["Cs"]), min_size=1, max_size=20
)


@given(
    origin=printable_line,
    size=st.integers(0, 2**64 - 1),
    root_hash=st.binary(min_size=32, max_size=32),
    extensions=st.lists(printable_line, max_size=3),
)
def test_any_checkpoint_signed_verifies_back_to_what_was_signed(
    origin: str, size: int, root_hash: bytes, extensions: list[str]
) -> None:
    key = lender_key()
    message = sign_checkpoint(origin, size, root_hash, key, extensions=extensions)
    checkpoint = verify_checkpoint(message, key.verifier, origin=origin)
    assert (checkpoint.origin, checkpoint.size, checkpoint.root_hash, checkpoint.extensions) == (
        origin,
        size,
        root_hash,
        tuple(extensions),
    )


SIGNED_7 = sign_checkpoint(ORIGIN, 7, root(LEAVES[:7]), lender_key(), extensions=["ext"])


def _first_control_character_line(text: str) -> int | None:
    """The rule as the spec words it, a character at a time: a second implementation,
    here only to check the note reader's one search."""
    for number, line in enumerate(text.split("\n"), start=1):
        if any(ord(ch) < 0x20 for ch in line):
            return number
    return None


@given(st.text(alphabet=st.sampled_from("ab \n\t\r\x00\x0b\x1f\x7f\u2014\u0085"), max_size=40))
def test_the_first_control_character_s_line_is_the_one_the_rule_names(text: str) -> None:
    assert _control_character_line(text) == _first_control_character_line(text)


@given(position=st.integers(0, len(SIGNED_7) - 1), bit=st.integers(0, 7))
def test_any_bit_changed_anywhere_in_a_signed_checkpoint_is_caught(position: int, bit: int) -> None:
    tampered = bytearray(SIGNED_7)
    tampered[position] ^= 1 << bit
    with pytest.raises(JournalIntegrityError):
        verify_checkpoint(bytes(tampered), lender_key().verifier, origin=ORIGIN)


# ------------------------------------------------------------------ checkpoint files


def test_a_checkpoint_is_kept_in_the_file_of_its_tree_size(tmp_path: Path) -> None:
    path = write_checkpoint(tmp_path / "checkpoints", signed(7))
    assert path == tmp_path / "checkpoints" / "00000000000000000007.checkpoint"
    assert path.read_bytes() == signed(7)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert read_checkpoints(tmp_path / "checkpoints") == [(path, signed(7).decode())]


def test_checkpoints_read_back_smallest_tree_first(tmp_path: Path) -> None:
    for size in (10, 2, 7, 0):
        write_checkpoint(tmp_path, signed(size))
    kept = read_checkpoints(tmp_path)
    assert [path.name for path, _ in kept] == [
        "00000000000000000000.checkpoint",
        "00000000000000000002.checkpoint",
        "00000000000000000007.checkpoint",
        "00000000000000000010.checkpoint",
    ]
    assert [verify_checkpoint(text, lender_key().verifier).size for _, text in kept] == [
        0,
        2,
        7,
        10,
    ]


def test_the_newest_checkpoint_is_the_largest_tree_kept_whatever_else_the_folder_holds(
    tmp_path: Path,
) -> None:
    from credit.journal.tree import newest_checkpoint

    verifier = lender_key().verifier
    assert newest_checkpoint(tmp_path / "none", verifier) is None
    assert newest_checkpoint(tmp_path, verifier) is None
    for size in (10, 2, 11, 7):
        write_checkpoint(tmp_path, signed(size))
    (tmp_path / "99999999999999999999.checkpoint.tmp").write_text("not one")
    (tmp_path / "0000000000000000099.checkpoint").write_text("19 digits: not one")
    (tmp_path / "notes.txt").write_text("not one")
    newest = newest_checkpoint(tmp_path, verifier, origin=ORIGIN)
    assert newest is not None and newest.size == 11
    assert newest.path == str(tmp_path / "00000000000000000011.checkpoint")
    # A file put there by hand, not by write_checkpoint: the examiner's lookup lists
    # the folder and reads it; signing's lookup goes by the folder's pointer, until the
    # pointer is gone.
    (tmp_path / "00000000000000000012.checkpoint").write_bytes(signed(3))
    with pytest.raises(JournalIntegrityError, match="named for another tree size"):
        newest_checkpoint(tmp_path, verifier, pointer=False)
    pointed = newest_checkpoint(tmp_path, verifier)
    assert pointed is not None and pointed.size == 11
    (tmp_path / NEWEST_POINTER).unlink()
    with pytest.raises(JournalIntegrityError, match="named for another tree size"):
        newest_checkpoint(tmp_path, verifier)


@pytest.mark.parametrize("in_place", [True, False], ids=["written-in-place", "replaced-whole"])
def test_the_folder_s_pointer_names_the_largest_checkpoint_written_in_any_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_place: bool
) -> None:
    # written in place where the system allows it (POSIX), else replaced whole each time
    import credit.journal.checkpoint as checkpoint_files

    monkeypatch.setattr(checkpoint_files, "_IN_PLACE", in_place)
    listings = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda d: listings.append(d) or real_listdir(d))
    for size in (5, 9, 7, 9):
        write_checkpoint(tmp_path, signed(size))
        assert (
            tmp_path / NEWEST_POINTER
        ).read_text() == f"{9 if size != 5 else 5:020d}.checkpoint\n"
    assert listings == [tmp_path]  # once, for the first: the folder had no pointer yet
    assert newest_file(tmp_path) == newest_file(tmp_path, pointer=False) == f"{9:020d}.checkpoint"
    assert len(listings) == 2  # only the lookup that was asked to list
    assert [p.name for p in sorted(tmp_path.iterdir())] == [
        NEWEST_POINTER,
        *(f"{n:020d}.checkpoint" for n in (5, 7, 9)),
    ]  # no temporary left behind
    assert [Path(p).name for p, _ in read_checkpoints(tmp_path)] == [
        f"{n:020d}.checkpoint" for n in (5, 7, 9)
    ]  # the pointer is no checkpoint


@pytest.mark.parametrize(
    "pointer",
    [
        None,
        "",
        "garbage\n",
        "00000000000000000003.checkpoint\n",
        b"\xff\xfe",
        "00000000000000000006.checkpoint\n" + "x" * 80,
    ],
    ids=["missing", "empty", "not-a-name", "a-file-not-there", "not-ascii", "too-long"],
)
def test_a_broken_pointer_is_a_listing_and_the_next_write_mends_it(
    tmp_path: Path, pointer: str | bytes | None
) -> None:
    for size in (4, 6):
        write_checkpoint(tmp_path, signed(size))
    target = tmp_path / NEWEST_POINTER
    if pointer is None:
        target.unlink()
    elif isinstance(pointer, bytes):
        target.write_bytes(pointer)
    else:
        target.write_text(pointer)
    assert newest_file(tmp_path) == f"{6:020d}.checkpoint"
    write_checkpoint(tmp_path, signed(5))  # smaller than the newest: points at the newest
    assert target.read_text() == f"{6:020d}.checkpoint\n"


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_pointer_that_is_a_link_is_replaced_never_written_through(
    tmp_path: Path, link: str
) -> None:
    # The pointer is overwritten in place; one that is a link to another file is
    # replaced by a pointer of its own, and the other file keeps its bytes.
    folder = tmp_path / "checkpoints"
    write_checkpoint(folder, signed(4))
    other = tmp_path / "other.txt"
    other.write_text(f"{4:020d}.checkpoint\n")
    pointer = folder / NEWEST_POINTER
    pointer.unlink()
    if link == "symbolic":
        pointer.symlink_to(other)
    else:
        os.link(other, pointer)
    write_checkpoint(folder, signed(6))
    assert other.read_text() == f"{4:020d}.checkpoint\n"
    assert not pointer.is_symlink() and pointer.stat().st_nlink == 1
    assert pointer.read_text() == f"{6:020d}.checkpoint\n"


def test_the_same_checkpoint_again_changes_nothing(tmp_path: Path) -> None:
    first = write_checkpoint(tmp_path, signed(7))
    assert write_checkpoint(tmp_path, signed(7).decode()) == first
    assert read_checkpoints(tmp_path) == [(first, signed(7).decode())]


def test_a_copy_with_a_further_signature_keeps_the_copy_already_kept(tmp_path: Path) -> None:
    path = write_checkpoint(tmp_path, signed(7))
    witness = SigningKey("witness.example", Ed25519PrivateKey.from_private_bytes(b"\x09" * 32))
    cosigned = signed(7) + sign_note(parse_checkpoint(signed(7)).body, witness).split(b"\n\n")[1]
    assert len(parse_checkpoint(cosigned).note.signatures) == 2
    assert write_checkpoint(tmp_path, cosigned) == path
    assert path.read_bytes() == signed(7)


def test_a_different_checkpoint_of_a_size_already_kept_is_a_fork(tmp_path: Path) -> None:
    path = write_checkpoint(tmp_path, signed(7))
    other_leaves = [*LEAVES[:6], leaf_hash(b"rewritten entry 6")]
    fork = sign_checkpoint(ORIGIN, 7, root(other_leaves), lender_key())
    with pytest.raises(JournalIntegrityError, match="signed two trees of one size, a fork") as err:
        write_checkpoint(tmp_path, fork)
    assert integrity_error(err) == ("fork", None, 7, str(path))
    assert path.read_bytes() == signed(7)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        NEWEST_POINTER,
        "00000000000000000007.checkpoint",
    ]


def test_a_malformed_checkpoint_is_not_kept(tmp_path: Path) -> None:
    with pytest.raises(JournalIntegrityError) as err:
        write_checkpoint(tmp_path, signed(7).replace(b"\n7\n", b"\n07\n"))
    assert (err.value.check, err.value.line) == ("body", 2)
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_write_leaves_neither_a_checkpoint_nor_a_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def power_cut(fd: int) -> None:
        raise OSError("no space left on device")

    monkeypatch.setattr(os, "fsync", power_cut)
    with pytest.raises(OSError, match="no space left"):
        write_checkpoint(tmp_path, signed(7))
    assert list(tmp_path.iterdir()) == []


def test_a_hidden_temporary_and_other_files_in_the_folder_are_left_alone(tmp_path: Path) -> None:
    path = write_checkpoint(tmp_path, signed(3))
    (tmp_path / ".00000000000000000004.checkpoint.tmp-x1y2").write_bytes(b"half a chec")
    (tmp_path / "README").write_text("checkpoints of the credit journal\n")
    assert read_checkpoints(tmp_path) == [(path, signed(3).decode())]


def test_a_checkpoint_file_renamed_to_another_size_is_caught(tmp_path: Path) -> None:
    path = write_checkpoint(tmp_path, signed(3))
    moved = path.with_name("00000000000000000009.checkpoint")
    os.rename(path, moved)
    with pytest.raises(JournalIntegrityError, match="named for tree size 9 but holds") as err:
        read_checkpoints(tmp_path)
    assert integrity_error(err) == ("file-name", None, 3, str(moved))


def test_a_checkpoint_file_not_named_by_twenty_digits_is_caught(tmp_path: Path) -> None:
    (tmp_path / "3.checkpoint").write_bytes(signed(3))
    with pytest.raises(JournalIntegrityError, match="20 digits") as err:
        read_checkpoints(tmp_path)
    assert integrity_error(err) == ("file-name", None, None, str(tmp_path / "3.checkpoint"))


def test_a_damaged_checkpoint_file_is_named_with_its_bad_line(tmp_path: Path) -> None:
    path = write_checkpoint(tmp_path, signed(3))
    path.write_bytes(signed(3).replace(b"\n\n", b"\n", 1))
    with pytest.raises(JournalIntegrityError) as err:
        read_checkpoints(tmp_path)
    assert (err.value.check, err.value.checkpoint) == ("note", str(path))


def test_a_folder_that_does_not_exist_holds_no_checkpoints(tmp_path: Path) -> None:
    assert read_checkpoints(tmp_path / "none") == []


def test_a_kept_checkpoint_proves_the_log_grew_from_it(tmp_path: Path) -> None:
    """The use the store will make of all this: the checkpoint of 4 kept outside the
    database, and the log at 10, are joined by a consistency proof."""
    write_checkpoint(tmp_path, signed(4))
    [(path, text)] = read_checkpoints(tmp_path)
    old: Checkpoint = verify_checkpoint(text, lender_key().verifier, origin=ORIGIN, source=path)
    new = verify_checkpoint(signed(10), lender_key().verifier, origin=ORIGIN)
    proof = consistency_proof(old.size, new.size, LEAVES)
    assert verify_consistency(old.size, new.size, old.root_hash, new.root_hash, proof)
    truncated_then_regrown = [*LEAVES[:3], *(leaf_hash(b"other") for _ in range(7))]
    assert not verify_consistency(
        old.size, new.size, old.root_hash, root(truncated_then_regrown), proof
    )


# ------------------------------------------------------------------ the documented example


class _Clock:
    def __init__(self) -> None:
        self.now_at = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)

    def now(self) -> dt.datetime:
        self.now_at += dt.timedelta(seconds=1)
        return self.now_at


def test_the_example_in_docs_journal_md_is_what_this_code_produces() -> None:
    """docs/journal.md shows a five-entry journal, its leaf hash, two checkpoints, a
    verifier key and two proofs; each is what the code makes today."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "journal.md").read_text()
    store = InMemoryStore(_Clock())
    store.append("C-1", "intake.accepted", {"income": "120000.00"})
    store.append("C-2", "intake.accepted", {"income": "64000.00"})
    store.append("C-1", "review.passed", {"checks": ["fair-lending"]})
    store.append("C-2", "review.passed", {"checks": []})
    store.append("C-1", "notice.sent", {"channel": "mail"})
    leaves = [leaf_hash(canonical_bytes(entry.to_wire())) for entry in store.entries()]
    seed = hashlib.sha256(b"docs/journal.md example key").digest()
    key = SigningKey(ORIGIN, Ed25519PrivateKey.from_private_bytes(seed))

    assert canonical_bytes(store.entries()[2].to_wire()).decode() in doc
    assert leaves[2].hex() in doc
    assert str(key.verifier) in doc
    for size in (3, 5):
        checkpoint = sign_checkpoint(ORIGIN, size, root(leaves[:size]), key).decode()
        assert f"```\n{checkpoint}```" in doc
    for value in (*inclusion_proof(2, 5, leaves), *consistency_proof(3, 5, leaves)):
        assert value.hex() in doc or f"{value.hex()[:4]}...{value.hex()[-4:]}" in doc
