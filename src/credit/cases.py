"""Reading cases: one JSON case or a JSON Lines batch, with errors that say where.

Numbers are read as exact Decimals. A bad line does not stop the batch: each line
yields either a validated :class:`~credit.models.Case` or an
:class:`~credit.errors.InputError` naming the source, line, case and field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from credit.canonical import loads
from credit.errors import InputError
from credit.models import Case, parse_case

__all__ = ["CaseLine", "iter_cases", "read_case_lines"]


@dataclass(frozen=True, slots=True)
class CaseLine:
    """One entry of a batch: the case, or the error that kept it out."""

    line: int
    case: Case | None
    error: InputError | None
    source: str | None = None


def _parse_line(text: str, line: int, source: str) -> CaseLine:
    try:
        data = loads(text)
    except (json.JSONDecodeError, ValueError) as err:
        error = InputError(f"not valid JSON: {err}", line=line, source=source)
        return CaseLine(line, None, error, source)
    try:
        return CaseLine(line, parse_case(data), None, source)
    except InputError as err:
        return CaseLine(line, None, err.located(line=line, source=source), source)


def iter_cases(path: Path | str) -> Iterator[CaseLine]:
    """Yield every case of a ``.json`` file (one case) or ``.jsonl`` batch, in order."""
    path = Path(path)
    source = str(path)
    try:
        handle = path.open("r", encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", source=source) from None
    with handle:
        if path.suffix.lower() == ".json":
            yield _parse_line(handle.read(), 1, source)
            return
        for number, text in enumerate(handle, start=1):
            if text.strip():
                yield _parse_line(text, number, source)


def read_case_lines(path: Path | str) -> list[CaseLine]:
    return list(iter_cases(path))
