"""Turn transcripts: what a model underwriter was sent and what it answered, stored
outside the database, content-addressed, and named by the journal.

A transcript (built by the underwriter that keeps one, e.g.
:meth:`credit.underwriters.claude.ClaudeUnderwriter.take_transcript`) is a JSON object:
the system prompt, the user prompt, every assistant message, every tool call with its
arguments and the tool result the model read (after both redaction layers), the final
answer and the usage. It is written as canonical JSON (keys sorted, compact, UTF-8:
:func:`credit.canonical.canonical_bytes`) to ``<folder>/<sha256>.json``, whole or not
at all (:func:`credit.journal.atomicfile.write_atomic`), readable by its owner only (it
holds the applicant's file as the model read it). The ``underwriter.turn`` entry
carries ``transcriptSha256`` and ``transcript`` (the file name), so the journal's hash
chain vouches for the file: :func:`read_transcript` gives it back only when its bytes
still hash to the name the journal holds.

The folder is ``$CREDIT_TRANSCRIPTS``, else ``./transcripts``
(:func:`transcripts_folder`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from credit.canonical import canonical_bytes, loads, sha256_hex
from credit.errors import InputError, JournalIntegrityError
from credit.journal.atomicfile import write_atomic

__all__ = [
    "DEFAULT_TRANSCRIPTS",
    "TRANSCRIPTS_ENV",
    "TRANSCRIPT_FORMAT",
    "TRANSCRIPT_MODE",
    "StoredTranscript",
    "read_transcript",
    "transcript_name",
    "transcripts_folder",
    "write_transcript",
]

TRANSCRIPTS_ENV: Final = "CREDIT_TRANSCRIPTS"
DEFAULT_TRANSCRIPTS: Final = Path("transcripts")
TRANSCRIPT_FORMAT: Final = "credit.transcript/1"
"""The ``format`` field of every transcript this version writes."""
TRANSCRIPT_MODE: Final = 0o600

_SHA256: Final = re.compile(r"[0-9a-f]{64}")


def transcripts_folder(folder: Path | str | None = None) -> Path:
    """``folder`` if given, else ``$CREDIT_TRANSCRIPTS``, else ``./transcripts``."""
    if folder is not None:
        return Path(folder)
    env = os.environ.get(TRANSCRIPTS_ENV)
    return Path(env) if env else DEFAULT_TRANSCRIPTS


def transcript_name(sha256: str) -> str:
    """The file name of the transcript whose canonical bytes hash to ``sha256``."""
    if not _SHA256.fullmatch(sha256):
        raise InputError(
            f"{sha256!r} is not a SHA-256 digest (64 lowercase hex digits)",
            field="transcriptSha256",
        )
    return f"{sha256}.json"


@dataclass(frozen=True, slots=True)
class StoredTranscript:
    """A transcript on disk: its SHA-256, its file name and its path."""

    sha256: str
    name: str
    path: Path


def write_transcript(folder: Path | str, transcript: Mapping[str, Any]) -> StoredTranscript:
    """Store ``transcript`` under the SHA-256 of its canonical bytes (the folder is
    created if need be). Writing the same transcript again changes nothing; a file of
    that name holding other bytes is a :class:`~credit.errors.JournalIntegrityError`
    (``check="transcript"``) and is left as it is."""
    folder = Path(folder)
    data = canonical_bytes(transcript)
    sha256 = sha256_hex(data)
    name = transcript_name(sha256)
    path = folder / name
    folder.mkdir(parents=True, exist_ok=True)
    try:
        write_atomic(path, data, mode=TRANSCRIPT_MODE)
    except FileExistsError:
        if path.read_bytes() != data:
            raise JournalIntegrityError(
                f"{path} exists and does not hold the transcript its name is the hash of",
                check="transcript",
            ) from None
    return StoredTranscript(sha256, name, path)


def read_transcript(folder: Path | str, sha256: str) -> dict[str, Any]:
    """The transcript the journal names by ``sha256``, read from ``folder``.

    Raises :class:`~credit.errors.JournalIntegrityError` when the file is missing
    (``check="transcript-missing"``), when its bytes do not hash to ``sha256``
    (``check="transcript"``: it was changed after it was journaled), or when it is not
    a transcript (``check="transcript-format"``); :class:`~credit.errors.InputError`
    when ``sha256`` is not a digest."""
    path = Path(folder) / transcript_name(sha256)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise JournalIntegrityError(
            f"the transcript {path.name} is not in {path.parent}", check="transcript-missing"
        ) from None
    actual = sha256_hex(data)
    if actual != sha256:
        raise JournalIntegrityError(
            f"{path} hashes to {actual}, not to the {sha256} the journal holds",
            check="transcript",
        )
    try:
        parsed = loads(data)
    except ValueError as err:
        raise JournalIntegrityError(
            f"{path} is not JSON: {err}", check="transcript-format"
        ) from None
    if not isinstance(parsed, dict) or parsed.get("format") != TRANSCRIPT_FORMAT:
        raise JournalIntegrityError(
            f"{path} is not a {TRANSCRIPT_FORMAT} transcript", check="transcript-format"
        )
    return parsed
