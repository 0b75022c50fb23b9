"""The reviewed lock: the SHA-256 and a snapshot of every piece of data a notice is
checked against (the legal frame, the reason catalogue, the code mapping derived from
it, and the verifier's rule data).

The lock file (``data/notice.lock.json``) is written only by a person, on purpose:
``credit lock`` prints a unified diff between the reviewed snapshot in the lock and the
current data and exits 1 when they differ; ``credit lock --accept`` prints the same
diff and writes the new lock. Until then, check V7 fails on every notice and the
golden-notice test fails: an edit to the template, the catalogue or the code mapping
cannot reach an applicant unreviewed.

The code mapping is the part of the catalogue a notice's meaning hangs on: each reason
code's kind, Regulation B reason, category label, stated fields and excluded
attributes, and which bureau key-factor code maps to which reason code. It is pinned
on its own so its diff reads as a mapping change, not as YAML lines.

The bureau-field formats (``bureau-formats.yaml``: each key-factor code's value format,
the bureau's name, address and telephone, the score model) are pinned like the rules:
check V8 refuses a notice that states a bureau value in any other form.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from credit.canonical import canonical_bytes, loads, sha256_hex
from credit.catalogue import Catalogue, load_catalogue
from credit.errors import NoticeInputError

__all__ = [
    "BUREAU_FORMATS",
    "CATALOGUE",
    "CODE_MAPPING",
    "FRAME",
    "LOCK_FORMAT",
    "PINNED",
    "RULES",
    "DataSources",
    "LockFile",
    "Pin",
    "code_mapping",
    "current_pins",
    "drift",
    "lock_diff",
    "read_lock",
    "write_lock",
]

LOCK_FORMAT = "credit.notice-lock/1"
FRAME = "legal-frame.yaml"
CATALOGUE = "reasons.yaml"
RULES = "notice-rules.yaml"
BUREAU_FORMATS = "bureau-formats.yaml"
CODE_MAPPING = "code-mapping"
PINNED = (FRAME, CATALOGUE, CODE_MAPPING, RULES, BUREAU_FORMATS)


def _data_dir() -> Path:
    return Path(str(resources.files("credit") / "data"))


def _packaged_bureau_formats() -> Path:
    return _data_dir() / BUREAU_FORMATS


@dataclass(frozen=True, slots=True)
class DataSources:
    """Where the pinned data and the lock live (the packaged data by default)."""

    frame: Path
    catalogue: Path
    rules: Path
    lock: Path
    bureau_formats: Path = field(default_factory=_packaged_bureau_formats)

    @classmethod
    def in_directory(cls, directory: Path | str, lock: Path | str | None = None) -> DataSources:
        d = Path(directory)
        return cls(
            frame=d / FRAME,
            catalogue=d / CATALOGUE,
            rules=d / RULES,
            lock=Path(lock) if lock is not None else d / "notice.lock.json",
            bureau_formats=d / BUREAU_FORMATS,
        )

    @classmethod
    def default(cls) -> DataSources:
        return cls.in_directory(_data_dir())


@dataclass(frozen=True, slots=True)
class Pin:
    """One pinned piece of data: its SHA-256 and the text that was reviewed."""

    name: str
    sha256: str
    snapshot: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LockFile:
    accepted_by: str
    accepted_on: dt.date
    pins: Mapping[str, Pin]
    source: str

    def sha256_of(self, name: str) -> str | None:
        pin = self.pins.get(name)
        return pin.sha256 if pin else None


def code_mapping(catalogue: Catalogue) -> dict[str, Any]:
    """The code mapping a notice's meaning hangs on (see the module docstring)."""
    return {
        "bureauCodes": dict(sorted(catalogue.by_bureau_code.items())),
        "reasons": {
            code: {
                "kind": e.kind,
                "regB": e.reg_b,
                "category": e.category,
                "states": list(e.states),
                "excludedAttributes": list(e.excluded_attributes),
            }
            for code, e in catalogue.entries.items()
        },
    }


def _file_pin(name: str, path: Path) -> Pin:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise NoticeInputError(f"cannot read: {err.strerror}", source=str(path)) from None
    text = raw.decode("utf-8", errors="replace")
    return Pin(name, sha256_hex(raw), tuple(text.splitlines()))


def current_pins(sources: DataSources, catalogue: Catalogue | None = None) -> dict[str, Pin]:
    """The pins of the data as it is now."""
    catalogue = catalogue or load_catalogue(sources.catalogue)
    mapping = code_mapping(catalogue)
    pretty = json.dumps(mapping, indent=2, sort_keys=True, ensure_ascii=True)
    return {
        FRAME: _file_pin(FRAME, sources.frame),
        CATALOGUE: _file_pin(CATALOGUE, sources.catalogue),
        CODE_MAPPING: Pin(
            CODE_MAPPING, sha256_hex(canonical_bytes(mapping)), tuple(pretty.splitlines())
        ),
        RULES: _file_pin(RULES, sources.rules),
        BUREAU_FORMATS: _file_pin(BUREAU_FORMATS, sources.bureau_formats),
    }


def read_lock(path: Path | str) -> LockFile:
    """Read and validate a lock file; a malformed one names the field."""
    path = Path(path)
    source = str(path)
    try:
        data = loads(path.read_bytes())
    except OSError as err:
        raise NoticeInputError(f"cannot read: {err.strerror}", source=source) from None
    except ValueError as err:
        raise NoticeInputError(f"not valid JSON: {err}", source=source) from None

    def bad(message: str, field: str) -> NoticeInputError:
        return NoticeInputError(message, field=field, source=source)

    if not isinstance(data, dict):
        raise bad("a lock must be a JSON object", "(top level)")
    expected = {"format", "acceptedBy", "acceptedOn", "pins"}
    for key in data:
        if key not in expected:
            raise bad("unknown field", str(key))
    for key in sorted(expected):
        if key not in data:
            raise bad("missing field", key)
    if data["format"] != LOCK_FORMAT:
        raise bad(f"format must be {LOCK_FORMAT!r}", "format")
    if not isinstance(data["acceptedBy"], str) or not data["acceptedBy"].strip():
        raise bad("expected non-empty text", "acceptedBy")
    try:
        accepted_on = dt.date.fromisoformat(data["acceptedOn"])
    except (TypeError, ValueError):
        raise bad("expected a date YYYY-MM-DD", "acceptedOn") from None
    raw_pins = data["pins"]
    if not isinstance(raw_pins, dict):
        raise bad("expected an object", "pins")
    pins: dict[str, Pin] = {}
    for name in PINNED:
        if name not in raw_pins:
            continue  # never reviewed: drift until accepted (`credit lock` shows it as new)
        body = raw_pins[name]
        field = f"pins.{name}"
        if not isinstance(body, dict) or set(body) != {"sha256", "snapshot"}:
            raise bad("expected an object with sha256 and snapshot", field)
        sha, snapshot = body["sha256"], body["snapshot"]
        if not isinstance(sha, str) or len(sha) != 64:
            raise bad("expected a SHA-256 in hex", f"{field}.sha256")
        if not isinstance(snapshot, list) or not all(isinstance(s, str) for s in snapshot):
            raise bad("expected a list of lines", f"{field}.snapshot")
        pins[name] = Pin(name, sha, tuple(snapshot))
    for name in raw_pins:
        if name not in PINNED:
            raise bad("unknown pin", f"pins.{name}")
    return LockFile(data["acceptedBy"], accepted_on, pins, source)


def drift(lock: LockFile, current: Mapping[str, Pin]) -> tuple[str, ...]:
    """The names of the pinned data whose hash is no longer the reviewed one."""
    return tuple(
        name
        for name in PINNED
        if name not in current or lock.sha256_of(name) != current[name].sha256
    )


def lock_diff(lock: LockFile | None, current: Mapping[str, Pin]) -> str:
    """A unified diff from the reviewed snapshots to the current data ('' if none)."""
    chunks: list[str] = []
    for name in PINNED:
        old = lock.pins[name] if lock is not None and name in lock.pins else None
        new = current[name]
        if old is not None and old.sha256 == new.sha256:
            continue
        lines = list(
            difflib.unified_diff(
                list(old.snapshot) if old else [],
                list(new.snapshot),
                fromfile=f"reviewed/{name}",
                tofile=f"current/{name}",
                lineterm="",
            )
        )
        if not lines:  # same text, different bytes (line endings, encoding)
            lines = [
                f"--- reviewed/{name}",
                f"+++ current/{name}",
                f"@@ bytes changed: sha256 {old.sha256 if old else '-'} -> {new.sha256} @@",
            ]
        chunks.append("\n".join(lines))
    return "\n".join(chunks) + ("\n" if chunks else "")


def write_lock(
    path: Path | str,
    current: Mapping[str, Pin],
    *,
    accepted_by: str,
    accepted_on: dt.date,
) -> LockFile:
    """Write the lock for the current data (atomically). Only ``credit lock --accept``
    calls this: accepting is the review."""
    if not accepted_by.strip():
        raise NoticeInputError("the reviewer must be named", field="acceptedBy")
    doc = {
        "format": LOCK_FORMAT,
        "acceptedBy": accepted_by,
        "acceptedOn": accepted_on.isoformat(),
        "pins": {
            name: {"sha256": current[name].sha256, "snapshot": list(current[name].snapshot)}
            for name in PINNED
        },
    }
    path = Path(path)
    text = json.dumps(doc, indent=1, ensure_ascii=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".lock-", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return read_lock(path)
