"""Signed checkpoints of the journal's Merkle tree: C2SP tlog-checkpoint
(https://c2sp.org/tlog-checkpoint) as a C2SP signed note (https://c2sp.org/signed-note),
byte for byte what golang.org/x/mod/sumdb/note signs and opens::

    credit.example/journal                           origin
    5                                                tree size, decimal
    idZA3XMI6ALyUmHNnZiryyvK+CmhotvyYlV+QnJWsqU=     root hash, base64
                                                     (extension lines, if any)
                                                     a blank line
    — credit.example/journal EUt7aZLIY1Qs...a5YAc=   signature lines:
                                                     base64(key id || Ed25519)

(the example of docs/journal.md, in full there with its verifier key).

The note text (the body, with its final newline) is what is signed. A note is valid
UTF-8 with no ASCII control character but the newline; its text ends at the last blank
line; each signature line is an em dash (U+2014), a space, a key name, a space and the
base64 of the 4-byte key id and the signature. Signatures by unknown keys are kept but
not trusted; every signature by a known key is verified, and one that does not verify
rejects the note (the spec's MUST; Go's ``note.Open`` looks only at a known key's first
line); a note with no verified signature is rejected.

Every failure is a :class:`~credit.errors.JournalIntegrityError` whose ``check`` says
what failed and whose ``line`` (1-based, in the note) says where:

- ``note``: the signed-note syntax (encoding, control characters, the blank line,
  a signature line);
- ``body``: the checkpoint body (origin, tree size, root hash, an extension line);
- ``unknown-key``: no signature by a key the verifier knows;
- ``signature``: a known key's signature that does not verify;
- ``origin``: a checkpoint of another log than the one expected;
- ``fork``: a different checkpoint of a tree size already kept;
- ``file-name``: a checkpoint file whose name is not its tree size.

On disk a log's checkpoints live in one folder, one file per tree size
(``00000000000000000042.checkpoint``), each written atomically and never replaced:
two different checkpoints of one size are two trees the key signed for the same
size, a fork, and :func:`write_checkpoint` refuses the second.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from credit.errors import InputError, JournalIntegrityError
from credit.journal.atomicfile import write_atomic
from credit.journal.keys import SigningKey, VerifierKey, strict_b64decode, valid_key_name
from credit.journal.merkle import HASH_SIZE

__all__ = [
    "CHECKPOINT_SUFFIX",
    "MAX_SIGNATURES",
    "NEWEST_POINTER",
    "SIGNATURE_PREFIX",
    "Checkpoint",
    "Note",
    "NoteSignature",
    "checkpoint_body",
    "newest_file",
    "open_note",
    "parse_checkpoint",
    "parse_note",
    "read_checkpoints",
    "sign_checkpoint",
    "sign_note",
    "verify_checkpoint",
    "write_checkpoint",
]

SIGNATURE_PREFIX = "\u2014 "
MAX_SIGNATURES = 100
CHECKPOINT_SUFFIX = ".checkpoint"
_MAX_TREE_SIZE = 2**64 - 1
_SIZE_LINE = re.compile(r"0|[1-9][0-9]*")
_FILE_NAME = re.compile(r"([0-9]{20})" + re.escape(CHECKPOINT_SUFFIX))
_CONTROL_CHARACTER = re.compile("[\x00-\x09\x0b-\x1f]")  # below 0x20, but the newline
NEWEST_POINTER = ".newest"  # hidden: read_checkpoints and the examiner's tools skip it
# The pointer is written in place where the system can open a file without following a
# link and write at an offset (POSIX); elsewhere it is replaced whole every time.
_IN_PLACE = all(
    hasattr(os, name) for name in ("pwrite", "ftruncate", "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC")
)


@dataclass(frozen=True, slots=True)
class NoteSignature:
    """One signature line: the key name, the key id and the signature bytes."""

    name: str
    key_id: int
    signature: bytes

    def line(self) -> str:
        """The signature line, without its newline."""
        raw = self.key_id.to_bytes(4, "big") + self.signature
        return f"{SIGNATURE_PREFIX}{self.name} {base64.b64encode(raw).decode('ascii')}"


@dataclass(frozen=True, slots=True)
class Note:
    """A signed note: its text (with the final newline), every signature line in it
    (repeated identical lines once), and those a known key verified."""

    text: str
    signatures: tuple[NoteSignature, ...]
    verified: tuple[NoteSignature, ...] = ()


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint: the log's origin, the tree size, the root hash, the extension
    lines, and the note it was read from."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...]
    note: Note

    @property
    def body(self) -> str:
        return self.note.text


def _source(source: Path | str | None) -> str | None:
    return None if source is None else str(source)


def _control_character_line(text: str) -> int | None:
    """The line (1-based) of the first ASCII control character other than the newline,
    or None (one regular-expression search, not a test per character)."""
    found = _CONTROL_CHARACTER.search(text)
    return None if found is None else text.count("\n", 0, found.start()) + 1


def _parse_note(message: bytes | str, source: str | None) -> tuple[Note, list[int]]:
    """The note and, for each of its signatures, the line it was on."""

    def fail(text: str, line: int | None) -> JournalIntegrityError:
        return JournalIntegrityError(text, check="note", checkpoint=source, line=line)

    if isinstance(message, bytes):
        try:
            decoded = message.decode("utf-8")
        except UnicodeDecodeError as exc:
            at = message[: exc.start].count(b"\n") + 1
            raise fail("the note is not valid UTF-8", at) from None
    else:
        decoded = message
    bad_line = _control_character_line(decoded)
    if bad_line is not None:
        raise fail("a control character other than newline", bad_line)
    split = decoded.rfind("\n\n")
    if split < 0:
        raise fail("no blank line between the text and the signatures", None)
    text, block = decoded[: split + 1], decoded[split + 2 :]
    first_signature_line = text.count("\n") + 2
    if not block:
        raise fail("no signature line after the blank line", first_signature_line)
    if not block.endswith("\n"):
        raise fail(
            "the last signature line has no newline", first_signature_line + block.count("\n")
        )
    signatures: list[NoteSignature] = []
    lines: list[int] = []
    seen: set[str] = set()
    for offset, line in enumerate(block[:-1].split("\n")):
        number = first_signature_line + offset
        if offset + 1 > MAX_SIGNATURES:
            raise fail(f"more than {MAX_SIGNATURES} signature lines", number)
        if not line.startswith(SIGNATURE_PREFIX):
            raise fail("a signature line starts with an em dash (U+2014) and a space", number)
        name, _, encoded = line[len(SIGNATURE_PREFIX) :].partition(" ")
        if not valid_key_name(name):
            raise fail(f"{name!r} is not a key name (non-empty, no spaces, no '+')", number)
        try:
            raw = strict_b64decode(encoded)
        except ValueError as exc:
            raise fail(f"the signature is {exc}", number) from None
        if len(raw) < 5:
            raise fail("a signature is a 4-byte key id and at least one byte", number)
        if line in seen:
            continue
        seen.add(line)
        signatures.append(NoteSignature(name, int.from_bytes(raw[:4], "big"), raw[4:]))
        lines.append(number)
    return Note(text, tuple(signatures)), lines


def parse_note(message: bytes | str, *, source: Path | str | None = None) -> Note:
    """A signed note's text and signature lines, checked for syntax only: nothing in
    it is trustworthy until :func:`open_note` verified a signature."""
    return _parse_note(message, _source(source))[0]


def _known(verifiers: VerifierKey | Sequence[VerifierKey]) -> dict[tuple[str, int], VerifierKey]:
    listed = [verifiers] if isinstance(verifiers, VerifierKey) else list(verifiers)
    known: dict[tuple[str, int], VerifierKey] = {}
    for verifier in listed:
        key = (verifier.name, verifier.key_id)
        if key in known and known[key] != verifier:
            raise InputError(
                f"two different verifier keys share the name and key id "
                f"{verifier.name}+{verifier.key_id:08x}",
                field="verifiers",
            )
        known[key] = verifier
    return known


def _open(
    message: bytes | str,
    verifiers: VerifierKey | Sequence[VerifierKey],
    source: str | None,
    tree_size: int | None,
) -> Note:
    known = _known(verifiers)
    note, lines = _parse_note(message, source)
    signed = note.text.encode("utf-8")
    verified: list[NoteSignature] = []
    for signature, line in zip(note.signatures, lines, strict=True):
        verifier = known.get((signature.name, signature.key_id))
        if verifier is None:
            continue
        if not verifier.verify(signed, signature.signature):
            raise JournalIntegrityError(
                f"the signature of {signature.name}+{signature.key_id:08x} does not verify",
                check="signature",
                checkpoint=source,
                tree_size=tree_size,
                line=line,
            )
        verified.append(signature)
    if not verified:
        found = ", ".join(f"{s.name}+{s.key_id:08x}" for s in note.signatures)
        wanted = ", ".join(f"{name}+{key_id:08x}" for name, key_id in known) or "none"
        raise JournalIntegrityError(
            f"no signature by a known key (signed by {found}; known: {wanted})",
            check="unknown-key",
            checkpoint=source,
            tree_size=tree_size,
        )
    return Note(note.text, note.signatures, tuple(verified))


def open_note(
    message: bytes | str,
    verifiers: VerifierKey | Sequence[VerifierKey],
    *,
    source: Path | str | None = None,
) -> Note:
    """The note, once every signature by one of ``verifiers`` verified and there was at
    least one: ``verified`` lists them."""
    return _open(message, verifiers, _source(source), None)


def _check_note_text(text: str) -> None:
    if not text.endswith("\n"):
        raise InputError("a note's text ends with a newline", field="text")
    line = _control_character_line(text)
    if line is not None:
        raise InputError(
            f"line {line} of the note's text has a control character other than newline",
            field="text",
        )


def sign_note(text: str, key: SigningKey) -> bytes:
    """The signed note: ``text`` (ending in a newline), a blank line and ``key``'s
    signature line."""
    _check_note_text(text)
    signature = NoteSignature(key.name, key.key_id, key.sign(text.encode("utf-8")))
    return f"{text}\n{signature.line()}\n".encode()


def _one_line(value: str) -> bool:
    return bool(value) and not any(ord(ch) < 0x20 for ch in value)


def checkpoint_body(
    origin: str, size: int, root_hash: bytes, extensions: Sequence[str] = ()
) -> str:
    """The checkpoint's note text: origin, size, base64 root hash, extension lines."""
    if not _one_line(origin):
        raise InputError(
            "the origin is one non-empty line with no control character", field="origin"
        )
    if isinstance(size, bool) or not 0 <= size <= _MAX_TREE_SIZE:
        raise InputError(f"a tree size is 0 to 2^64-1, not {size}", field="size")
    if len(root_hash) != HASH_SIZE:
        raise InputError(
            f"a root hash is {HASH_SIZE} bytes, not {len(root_hash)}", field="root_hash"
        )
    for i, extension in enumerate(extensions):
        if not _one_line(extension):
            raise InputError(
                "an extension is one non-empty line with no control character",
                field=f"extensions[{i}]",
            )
    lines = [origin, str(size), base64.b64encode(root_hash).decode("ascii"), *extensions]
    return "\n".join(lines) + "\n"


def sign_checkpoint(
    origin: str,
    size: int,
    root_hash: bytes,
    key: SigningKey,
    *,
    extensions: Sequence[str] = (),
) -> bytes:
    """The signed checkpoint of the tree of ``size`` leaves whose hash is
    ``root_hash``. The spec asks that the key's name be the origin; it is not enforced,
    so that existing logs (sum.golang.org signs "go.sum database tree") can be read."""
    return sign_note(checkpoint_body(origin, size, root_hash, extensions), key)


def _parse_body(text: str, source: str | None) -> tuple[str, int, bytes, tuple[str, ...]]:
    def fail(message: str, line: int) -> JournalIntegrityError:
        return JournalIntegrityError(message, check="body", checkpoint=source, line=line)

    lines = text.split("\n")[:-1]
    if not lines or not lines[0]:
        raise fail("the origin line is empty", 1)
    if len(lines) < 2:
        raise fail("no tree size line", 2)
    if not _SIZE_LINE.fullmatch(lines[1]):
        raise fail(f"the tree size {lines[1]!r} is not a decimal without leading zeros", 2)
    size = int(lines[1])
    if size > _MAX_TREE_SIZE:
        raise fail(f"the tree size {size} is over 2^64-1", 2)
    if len(lines) < 3:
        raise fail("no root hash line", 3)
    try:
        root_hash = strict_b64decode(lines[2])
    except ValueError as exc:
        raise fail(f"the root hash is {exc}", 3) from None
    if len(root_hash) != HASH_SIZE:
        raise fail(f"the root hash is {len(root_hash)} bytes, not {HASH_SIZE}", 3)
    for number, extension in enumerate(lines[3:], start=4):
        if not extension:
            raise fail("an extension line is empty", number)
    return lines[0], size, root_hash, tuple(lines[3:])


def parse_checkpoint(text: bytes | str, *, source: Path | str | None = None) -> Checkpoint:
    """The checkpoint in ``text``, checked strictly for syntax (signatures are not
    verified: see :func:`verify_checkpoint`)."""
    where = _source(source)
    note = parse_note(text, source=where)
    origin, size, root_hash, extensions = _parse_body(note.text, where)
    return Checkpoint(origin, size, root_hash, extensions, note)


def verify_checkpoint(
    text: bytes | str,
    verifier: VerifierKey | Sequence[VerifierKey],
    *,
    origin: str | None = None,
    source: Path | str | None = None,
) -> Checkpoint:
    """The checkpoint in ``text``, once a signature by ``verifier`` (or one of several,
    for a key rotation) verified over its body, its body parsed strictly and, when
    ``origin`` is given, its origin found to be that log's."""
    where = _source(source)
    note = parse_note(text, source=where)
    try:
        claimed_size: int | None = _parse_body(note.text, where)[1]
    except JournalIntegrityError:
        claimed_size = None
    opened = _open(text, verifier, where, claimed_size)
    found_origin, size, root_hash, extensions = _parse_body(opened.text, where)
    if origin is not None and found_origin != origin:
        raise JournalIntegrityError(
            f"a checkpoint of {found_origin!r}, not of {origin!r}",
            check="origin",
            checkpoint=where,
            tree_size=size,
            line=1,
        )
    return Checkpoint(found_origin, size, root_hash, extensions, opened)


def _file_for(directory: Path, size: int) -> Path:
    return directory / f"{size:020d}{CHECKPOINT_SUFFIX}"


def write_checkpoint(directory: Path, text: bytes | str) -> Path:
    """Keep a checkpoint in ``directory`` (made if missing), in the file of its tree
    size, written atomically. The same checkpoint body again is no change (the copy
    already kept stays, with its signatures); a different body for a size already kept
    is a fork, and an error."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    checkpoint = parse_checkpoint(data)
    directory.mkdir(parents=True, exist_ok=True)
    path = _file_for(directory, checkpoint.size)
    try:
        write_atomic(path, data, mode=0o644)
    except FileExistsError:
        kept = parse_checkpoint(path.read_bytes(), source=path)
        if kept.body != checkpoint.body:
            kept_root = base64.b64encode(kept.root_hash).decode("ascii")
            new_root = base64.b64encode(checkpoint.root_hash).decode("ascii")
            raise JournalIntegrityError(
                f"a different checkpoint of this tree size is kept already (root {kept_root}, "
                f"origin {kept.origin!r}; this one: root {new_root}, origin "
                f"{checkpoint.origin!r}): the log signed two trees of one size, a fork",
                check="fork",
                checkpoint=str(path),
                tree_size=checkpoint.size,
            ) from None
    _point_at(directory, path.name)
    return path


def _pointed(directory: Path) -> str | None:
    """The checkpoint file the folder's pointer names, if it names one that is there."""
    try:
        named = (directory / NEWEST_POINTER).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if _FILE_NAME.fullmatch(named) is None or not (directory / named).is_file():
        return None
    return named


def newest_file(directory: Path, *, pointer: bool = True) -> str | None:
    """The name of the newest checkpoint file in ``directory`` (None for none): the
    largest name, the names being zero-padded tree sizes.

    ``pointer``: as the folder's pointer (``.newest``) names it when it names a file
    that is there. :func:`write_checkpoint` keeps the pointer, so a folder written only
    through it (every signature: ``store.checkpoint``, under the folder's signer lock)
    never lists its files, one more with every signature, to find the newest. A missing
    or broken pointer falls back on listing; a pointer left stale by a crash between
    a file and its pointer names an older checkpoint, which only weakens the next
    signature's check, never refuses a good one. ``pointer=False`` lists the folder
    (the examiner's tools: a file copied in by hand counts too)."""
    if pointer and (named := _pointed(directory)) is not None:
        return named
    try:
        listed = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return max((n for n in listed if _FILE_NAME.fullmatch(n)), default=None)


def _point_at(directory: Path, name: str) -> None:
    """Point the folder's pointer at ``name`` if it is newer than the newest named
    there. Not made durable: it is a hint, and a pointer lost or stale after a crash is
    only a listing, or a weaker check, the next time.

    The pointer file is overwritten in place (every name is as long as every other):
    a rename per signature cost about 0.3 ms of the filesystem's journal, most of what
    keeping the pointer cost. Its writers all sign under the folder's signer lock
    (:func:`credit.journal.writerlock.signer_lock`), and so does the reader whose check
    it guides (:func:`credit.journal.tree.sign_head`);
    a reader without the lock (:func:`credit.journal.tree.covering_checkpoint`) that
    reads it half written finds a name that is no file (a listing) or an older
    checkpoint (no cover: it signs). A pointer that is not yet there, or is not a
    plain file of its own (a link, a folder), is replaced whole, atomically, as a
    fresh one."""
    pointed = _pointed(directory)  # read once: a listing only when it names nothing
    newest = pointed if pointed is not None else newest_file(directory, pointer=False)
    if newest is not None and newest >= name:
        if newest == pointed:
            return
        name = newest
    data = (name + "\n").encode("ascii")
    if not _IN_PLACE:
        _replace_pointer(directory, data)
        return
    target = directory / NEWEST_POINTER
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # none yet (or a link): made anew
        _replace_pointer(directory, data)
        return
    try:
        status = os.fstat(fd)
        if stat.S_ISREG(status.st_mode) and status.st_nlink == 1:
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            return
    finally:
        os.close(fd)
    _replace_pointer(directory, data)


def _replace_pointer(directory: Path, data: bytes) -> None:
    """Put a fresh pointer file in place, atomically (written aside, then renamed)."""
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f"{NEWEST_POINTER}.tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp_name, directory / NEWEST_POINTER)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)


def read_checkpoints(directory: Path) -> list[tuple[Path, str]]:
    """Every checkpoint kept in ``directory``, smallest tree size first, each checked
    for syntax and for its file name (signatures are for :func:`verify_checkpoint`).
    A folder that does not exist holds none. Files that are not named like checkpoints
    are left alone; hidden files (an interrupted write's temporary) are skipped."""
    if not directory.exists():
        return []
    kept: list[tuple[int, Path, str]] = []
    for path in directory.iterdir():
        if path.name.startswith(".") or not path.name.endswith(CHECKPOINT_SUFFIX):
            continue
        named = _FILE_NAME.fullmatch(path.name)
        if named is None:
            raise JournalIntegrityError(
                "a checkpoint file is named by its tree size in 20 digits",
                check="file-name",
                checkpoint=str(path),
            )
        data = path.read_bytes()
        checkpoint = parse_checkpoint(data, source=path)
        if checkpoint.size != int(named.group(1)):
            raise JournalIntegrityError(
                f"the file is named for tree size {int(named.group(1))} but holds "
                f"a checkpoint of size {checkpoint.size}",
                check="file-name",
                checkpoint=str(path),
                tree_size=checkpoint.size,
            )
        kept.append((checkpoint.size, path, data.decode("utf-8")))
    kept.sort(key=lambda item: item[0])
    return [(path, text) for _, path, text in kept]
