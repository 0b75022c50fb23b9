"""Case and decision files for the batch underwriter: JSON Lines, CSV and Parquet,
read and written in chunks so that memory stays flat however large the file.

**Cases in.** Every format carries the flat case rows of :mod:`credit.batch.schema`
(money in integer cents); JSON Lines may also carry the case format itself (one case
document a line, as ``credit decide`` reads it), which is validated with the case
model and flattened. In CSV the ``keyFactorCodes`` list is written ``01;10;14`` and an
empty cell is null. A file's columns must be the schema's: a missing required column
or an unknown column is an error naming it.

**Bad rows.** A row whose value cannot be read (``12.50`` in a cents column, a date
that is not a date, a line that is not JSON) is left out of its chunk and reported as
an :class:`~credit.errors.InputError` naming the file, the line (CSV: the header is
line 1; Parquet: the 1-based row, as ``row N``), the case and the field; the other
rows are still decided. Rows the underwriter cannot decide are reported the same way
by :func:`decision_errors`.

**Decisions out.** One row per case read, with the columns of
:func:`credit.batch.schema.decision_schema`: JSON Lines with every figure written
with its exact digits (:func:`credit.canonical.dumps`), CSV with ``reasonCodes``
joined by ``;``, Parquet with decimals as ``decimal128``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from credit.batch.schema import (
    CASE_COLUMNS,
    MONITORING_COLUMNS,
    cases_to_frame,
)
from credit.canonical import dumps, loads
from credit.cases import CaseLimits, check_case, iter_documents, json_type
from credit.errors import InputError
from credit.models import Case
from credit.policy import Policy

__all__ = [
    "FORMATS",
    "CaseChunk",
    "DecisionWriter",
    "Format",
    "count_rows",
    "decision_errors",
    "detect_format",
    "read_case_chunks",
    "read_cases",
    "read_decisions",
    "write_cases",
]

Format = Literal["jsonl", "csv", "parquet"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "parquet")
_SUFFIXES: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_LIST_SEPARATOR = ";"
_ALL_COLUMNS: dict[str, pl.DataType] = {**CASE_COLUMNS, **MONITORING_COLUMNS}
DEFAULT_CHUNK = 100_000


def detect_format(path: Path | str, given: str | None = None) -> Format:
    """The format named, or the one the file's suffix says."""
    if given is not None:
        if given not in FORMATS:
            raise InputError(f"unknown format {given!r} (one of {', '.join(FORMATS)})")
        return given
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        raise InputError(
            f"cannot tell the format from the suffix {suffix!r}: name one with --format "
            f"({', '.join(FORMATS)})",
            source=str(path),
        )
    return _SUFFIXES[suffix]


@dataclass(slots=True)
class CaseChunk:
    """A chunk of case rows read, the line (or row) of each, and the rows left out."""

    frame: pl.DataFrame
    lines: list[int]
    problems: list[InputError] = field(default_factory=list)
    rows_read: int = 0  # rows consumed from the file, good and bad


# ---------------------------------------------------------------- raw text -> typed rows


def _check_columns(columns: Sequence[str], source: str, *, complete: bool = True) -> None:
    """Every column is the schema's; with ``complete``, every required one is there."""
    unknown = [c for c in columns if c not in _ALL_COLUMNS]
    if unknown:
        raise InputError(
            f"unknown column {unknown[0]!r} is not part of the flat case schema",
            source=source,
            field=unknown[0],
        )
    missing = [c for c in CASE_COLUMNS if c not in columns]
    if missing and complete:
        raise InputError(
            f"the file has no column {missing[0]!r} (required: {', '.join(CASE_COLUMNS)})",
            source=source,
            field=missing[0],
        )


def _typed(raw: pl.DataFrame) -> pl.DataFrame:
    """String columns cast to the schema's types; a value that does not cast is null."""
    exprs = []
    for name in raw.columns:
        dtype = _ALL_COLUMNS[name]
        text = pl.col(name).str.strip_chars()
        text = pl.when(text == "").then(None).otherwise(text)
        if name == "keyFactorCodes":
            exprs.append(
                pl.when(text.is_null())
                .then(pl.lit([], dtype=pl.List(pl.String())))
                .otherwise(text.str.split(_LIST_SEPARATOR))
                .alias(name)
            )
        elif dtype == pl.Date():
            exprs.append(text.str.to_date("%Y-%m-%d", strict=False).alias(name))
        elif dtype == pl.Boolean():
            lowered = text.str.to_lowercase()
            exprs.append(
                pl.when(lowered == "true")
                .then(True)
                .when(lowered == "false")
                .then(False)
                .otherwise(None)
                .alias(name)
            )
        elif dtype == pl.String():
            exprs.append(text.alias(name))
        else:
            exprs.append(text.cast(dtype, strict=False).alias(name))
    return raw.select(exprs)


def _kind(dtype: pl.DataType) -> str:
    if dtype == pl.Date():
        return "a date (YYYY-MM-DD)"
    if dtype == pl.Boolean():
        return "true or false"
    return "a whole number"


def _parse_strings(
    raw: pl.DataFrame, lines: list[int], source: str, *, row_label: str = "line"
) -> CaseChunk:
    """Cast a chunk of string cells; rows with a cell that does not cast are reported."""
    typed = _typed(raw)
    failed_any = pl.repeat(False, raw.height, eager=True)
    failures: dict[str, pl.Series] = {}
    for name in raw.columns:
        if name == "keyFactorCodes" or _ALL_COLUMNS[name] == pl.String():
            continue
        original = raw[name].str.strip_chars()
        bad = (original.is_not_null() & (original != "")) & typed[name].is_null()
        if bad.any():
            failures[name] = bad
            failed_any = failed_any | bad
    problems: list[InputError] = []
    if failed_any.any():
        for i in failed_any.arg_true().to_list():
            name = next(n for n, bad in failures.items() if bad[i])
            value = raw[name][i]
            case_id = raw["caseId"][i] if "caseId" in raw.columns else None
            problems.append(
                _located(
                    InputError(
                        f"{name} must be {_kind(_ALL_COLUMNS[name])} (got {value!r})",
                        case_id=case_id or None,
                        field=name,
                    ),
                    lines[i],
                    source,
                    row_label,
                )
            )
        keep = ~failed_any
        typed = typed.filter(keep)
        lines = [n for n, k in zip(lines, keep.to_list(), strict=True) if k]
    return CaseChunk(_complete(typed), lines, problems, raw.height)


def _complete(frame: pl.DataFrame) -> pl.DataFrame:
    """The schema's columns in order and types (absent monitoring columns are null)."""
    exprs = []
    for name, dtype in _ALL_COLUMNS.items():
        if name in frame.columns:
            exprs.append(pl.col(name).cast(dtype))
        elif name in MONITORING_COLUMNS:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    return frame.select(exprs)


def _located(err: InputError, number: int, source: str, row_label: str) -> InputError:
    if row_label == "line":
        return err.located(line=number, source=source)
    return err.located(source=f"{source} {row_label} {number}")


# ---------------------------------------------------------------- readers


def _csv_chunks(path: Path, chunk: int) -> Iterator[CaseChunk]:
    source = str(path)
    header = pl.read_csv(path, n_rows=0, infer_schema=False).columns
    _check_columns(header, source)
    scan = pl.scan_csv(path, infer_schema=False)
    line = 2  # the header is line 1 (a quoted cell spanning lines is not supported)
    for raw in scan.collect_batches(chunk_size=chunk):
        lines = list(range(line, line + raw.height))
        line += raw.height
        yield _parse_strings(raw, lines, source)


def _parquet_chunks(path: Path, chunk: int) -> Iterator[CaseChunk]:
    """Parquet columns of the schema's types (or text, read like CSV cells); another
    type (a float or a decimal where the schema holds integer cents) is an error
    naming the column."""
    source = str(path)
    try:
        handle = pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid) as err:
        raise InputError(f"cannot read as Parquet: {err}", source=source) from None
    _check_columns(handle.schema_arrow.names, source)
    row = 1
    for batch in handle.iter_batches(batch_size=chunk):
        raw = pl.from_arrow(batch)
        assert isinstance(raw, pl.DataFrame)
        rows = list(range(row, row + raw.height))
        row += raw.height
        text: dict[str, pl.Series] = {}
        typed: dict[str, pl.Series] = {}
        for name, dtype in raw.schema.items():
            want = _ALL_COLUMNS[name]
            if dtype == want and name != "caseId":  # the case id names a bad row's case
                typed[name] = raw[name]
            elif dtype == pl.String() and name != "keyFactorCodes":
                text[name] = raw[name]
            elif dtype.is_integer() and want.is_integer():
                text[name] = raw[name].cast(pl.String())
            else:
                raise InputError(
                    f"column {name} is {dtype}; the flat case schema holds {want} there",
                    source=source,
                    field=name,
                )
        if text:
            parsed = _parse_strings(pl.DataFrame(text), rows, source, row_label="row")
            kept = set(parsed.lines)
            keep = pl.Series([r in kept for r in rows])
            merged = pl.concat(
                [parsed.frame.select(list(text)), pl.DataFrame(typed).filter(keep)],
                how="horizontal",
            )
            yield CaseChunk(_complete(merged), parsed.lines, parsed.problems, raw.height)
        else:
            yield CaseChunk(_complete(raw), rows, [], raw.height)


def _jsonl_chunks(path: Path, chunk: int, policy: Policy | None) -> Iterator[CaseChunk]:
    """JSON Lines of flat rows or of case documents (told apart line by line: a case
    document has an ``application``), each line read by the one case reader
    (:func:`credit.cases.iter_documents`): a line it refuses is reported, and the
    lines after it are still read."""
    source = str(path)
    docs: list[tuple[int, Any]] = []
    problems: list[InputError] = []
    read = 0
    for entry in iter_documents(path, lines=True):
        read += 1
        if entry.error is not None:
            problems.append(entry.error)
        else:
            docs.append((entry.line, entry.raw))
        if read == chunk:
            yield _json_chunk(docs, problems, read, source, policy)
            docs, problems, read = [], [], 0
    if read:
        yield _json_chunk(docs, problems, read, source, policy)


def _json_chunk(
    docs: list[tuple[int, Any]],
    problems: list[InputError],
    read: int,
    source: str,
    policy: Policy | None,
) -> CaseChunk:
    flat: list[tuple[int, dict[str, Any]]] = []
    cases: list[tuple[int, Any]] = []
    for number, doc in docs:
        if isinstance(doc, dict) and "application" in doc:
            cases.append((number, doc))
        elif isinstance(doc, dict):
            flat.append((number, doc))
        else:
            problems.append(
                InputError(
                    f"a row must be a JSON object, got {json_type(doc)}",
                    line=number,
                    source=source,
                )
            )
    parts: list[pl.DataFrame] = []
    lines: list[int] = []
    if cases:
        good: list[Case] = []
        for number, doc in cases:
            try:
                good.append(check_case(doc, policies=policy))
            except InputError as err:
                problems.append(err.located(line=number, source=source))
                continue
            lines.append(number)
        parts.append(cases_to_frame(good))
    if flat:
        columns = sorted({k for _, d in flat for k in d}, key=list(_ALL_COLUMNS).index)
        for _, d in flat:
            unknown = [k for k in d if k not in _ALL_COLUMNS]
            if unknown:
                raise InputError(
                    f"unknown field {unknown[0]!r} is not part of the flat case schema",
                    source=source,
                    field=unknown[0],
                )
        _check_columns(columns, source, complete=False)
        columns = [c for c in CASE_COLUMNS if c not in columns] + columns
        raw = pl.DataFrame(
            {c: [_cell(d.get(c)) for _, d in flat] for c in columns},
            schema=dict.fromkeys(columns, pl.String()),
        )
        parsed = _parse_strings(raw, [n for n, _ in flat], source)
        problems += parsed.problems
        parts.append(parsed.frame)
        lines += parsed.lines
    frame = pl.concat(parts) if parts else _complete(pl.DataFrame(schema=CASE_COLUMNS))
    if cases and flat:  # keep the file's order
        order = sorted(range(len(lines)), key=lines.__getitem__)
        frame, lines = frame[order], [lines[i] for i in order]
    problems.sort(key=lambda e: e.line or 0)
    return CaseChunk(frame, lines, problems, read)


def _cell(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return _LIST_SEPARATOR.join(str(v) for v in value)
    return str(value)


# The flat columns the case limits bound (case-limits.yaml), with the limit's field
# and the factor from the limit's unit to the column's (USD to cents).
_FLAT_LIMITS: dict[str, tuple[str, int]] = {
    "annualIncomeCents": ("application.annualIncome", 100),
    "monthlyDebtCents": ("application.monthlyDebtPayments", 100),
    "requestedAmountCents": ("application.requestedAmount", 100),
    "vehicleValueCents": ("application.vehicleValue", 100),
    "requestedLineCents": ("application.requestedLine", 100),
    "termMonths": ("application.termMonths", 1),
    "tradelines": ("creditReport.tradelines", 1),
    "historyMonths": ("creditReport.historyMonths", 1),
    "age": ("monitoring.age", 1),
}


def _bounds(limits: CaseLimits, policy: Policy | None) -> list[tuple[str, int, int, str]]:
    """``(column, least, most, limit)`` for each bounded column of the flat schema."""
    out = [
        (
            column,
            int(limits.value(f"{key}.min") * factor),
            int(limits.value(f"{key}.max") * factor),
            key,
        )
        for column, (key, factor) in _FLAT_LIMITS.items()
    ]
    if policy is not None:
        low, high = policy["scoreScale.min"].value, policy["scoreScale.max"].value
        out.append(("score", low, high, f"the scale of policy {policy.label} (scoreScale)"))
    return out


def _within_limits(
    chunk: CaseChunk, source: str, row_label: str, limits: CaseLimits, policy: Policy | None
) -> CaseChunk:
    """The chunk less its rows with a figure outside the case limits (or, given the
    policy, a score off its scale), each reported naming the row, case and column."""
    frame = chunk.frame
    bounds = [b for b in _bounds(limits, policy) if b[0] in frame.columns]
    if not bounds or frame.height == 0:
        return chunk
    outside = [
        ((pl.col(c) < low) | (pl.col(c) > high)).fill_null(False) for c, low, high, _ in bounds
    ]
    mask = frame.select(pl.any_horizontal(outside).alias("bad"))["bad"]
    if not mask.any():
        return chunk
    problems = list(chunk.problems)
    for i in mask.arg_true().to_list():
        row = frame.row(i, named=True)
        column, low, high, key = next(
            b for b in bounds if row[b[0]] is not None and not b[1] <= row[b[0]] <= b[2]
        )
        side = f"below the least, {low}" if row[column] < low else f"above the most, {high}"
        err = InputError(
            f"{column} {row[column]} is {side}, the case format allows ({key})",
            case_id=row["caseId"],
            field=column,
        )
        problems.append(_located(err, chunk.lines[i], source, row_label))
    keep = (~mask).to_list()
    lines = [n for n, k in zip(chunk.lines, keep, strict=True) if k]
    problems.sort(key=lambda e: e.line or 0)
    return CaseChunk(frame.filter(~mask), lines, problems, chunk.rows_read)


def read_case_chunks(
    path: Path | str,
    fmt: str | None = None,
    *,
    chunk_size: int = DEFAULT_CHUNK,
    policy: Policy | None = None,
    limits: CaseLimits | None = None,
) -> Iterator[CaseChunk]:
    """The cases of a file, ``chunk_size`` rows at a time. A case document (JSON Lines)
    is read by the one case reader, within the case limits; with ``policy``, one dated
    before it takes effect or scored off its scale is a bad row naming the field
    (docs/case-format.md). Flat rows are bounded too when ``limits`` is given (money in
    cents; with ``policy``, the score on its scale): the bundled generator's stress rows
    lie outside them on purpose, to test the columnar underwriter's exactness."""
    path = Path(path)
    if chunk_size < 1:
        raise InputError(f"chunk size must be at least 1, got {chunk_size}")
    kind = detect_format(path, fmt)
    if not path.is_file():
        raise InputError("no such file", source=str(path))
    if kind == "csv":
        chunks = _csv_chunks(path, chunk_size)
    elif kind == "parquet":
        chunks = _parquet_chunks(path, chunk_size)
    else:
        chunks = _jsonl_chunks(path, chunk_size, policy)
    if limits is None:
        return chunks
    row_label = "row" if kind == "parquet" else "line"
    return (_within_limits(c, str(path), row_label, limits, policy) for c in chunks)


def read_cases(path: Path | str, fmt: str | None = None) -> tuple[pl.DataFrame, list[InputError]]:
    """A whole case file as one frame, and the rows that could not be read."""
    frames, problems = [], []
    for chunk in read_case_chunks(path, fmt):
        frames.append(chunk.frame)
        problems += chunk.problems
    frame = pl.concat(frames) if frames else _complete(pl.DataFrame(schema=CASE_COLUMNS))
    return frame, problems


def count_rows(path: Path | str, fmt: str | None = None) -> int:
    """The number of rows a case file holds (for a progress bar): Parquet from its
    metadata; text formats by counting lines (CSV less its header)."""
    path = Path(path)
    kind = detect_format(path, fmt)
    if kind == "parquet":
        return int(pq.ParquetFile(path).metadata.num_rows)
    lines = 0
    last = b"\n"
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            lines += block.count(b"\n")
            last = block[-1:]
    if last != b"\n":
        lines += 1
    return max(0, lines - 1) if kind == "csv" else lines


# ---------------------------------------------------------------- writers


def _csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        pl.col(name).list.join(_LIST_SEPARATOR)
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.List)
    )


class DecisionWriter:
    """Writes decision (or case) rows chunk by chunk to JSON Lines, CSV or Parquet."""

    def __init__(self, path: Path | str, fmt: str | None = None) -> None:
        self.path = Path(path)
        self.format = detect_format(self.path, fmt)
        self._text: IO[str] | None = None
        self._parquet: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None
        self.rows = 0
        self._closed = False
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, frame: pl.DataFrame) -> None:
        if self.format == "parquet":
            table = frame.to_arrow()
            if self._parquet is None:
                self._schema = table.schema
                self._parquet = pq.ParquetWriter(self.path, table.schema)
            self._parquet.write_table(table.cast(self._schema))
        else:
            if self._text is None:
                self._text = self.path.open("w", encoding="utf-8", newline="")
                if self.format == "csv":
                    self._text.write(_csv_ready(frame.head(0)).write_csv())
            if self.format == "csv":
                self._text.write(_csv_ready(frame).write_csv(include_header=False))
            else:
                for row in frame.iter_rows(named=True):
                    self._text.write(dumps(_plain(row)) + "\n")
        self.rows += frame.height

    def close(self, schema: dict[str, pl.DataType] | None = None) -> None:
        """Finish the file (once; closing again does nothing); one that got no rows
        still gets its header (CSV) or its schema (Parquet) when ``schema`` is given,
        and exists (JSON Lines)."""
        if self._closed:
            return
        self._closed = True
        if self._text is None and self._parquet is None:
            if schema is not None:
                self.write(pl.DataFrame(schema=schema))
            elif self.format != "parquet":
                self.path.write_text("", encoding="utf-8")
        if self._text is not None:
            self._text.close()
            self._text = None
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None

    def __enter__(self) -> DecisionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        out[key] = value.isoformat() if hasattr(value, "isoformat") else value
    return out


def write_cases(frame: pl.DataFrame, path: Path | str, fmt: str | None = None) -> None:
    """Flat case rows to a file (``keyFactorCodes`` joined by ``;`` in CSV)."""
    with DecisionWriter(path, fmt) as writer:
        writer.write(frame)


def read_decisions(
    path: Path | str, schema: dict[str, pl.DataType], fmt: str | None = None
) -> pl.DataFrame:
    """Decision rows written by :class:`DecisionWriter`, back in ``schema``'s types."""
    path = Path(path)
    kind = detect_format(path, fmt)
    if kind == "parquet":
        frame = pl.read_parquet(path)
        return frame.select(pl.col(n).cast(t) for n, t in schema.items())
    if kind == "csv":
        raw = pl.read_csv(path, infer_schema=False)
        exprs = []
        for name, dtype in schema.items():
            if isinstance(dtype, pl.List):
                # an empty cell is no codes, except on a row that was not decided
                exprs.append(
                    pl.when(pl.col("errorKind").is_not_null())
                    .then(pl.lit(None, dtype=dtype))
                    .when(pl.col(name).is_null() | (pl.col(name) == ""))
                    .then(pl.lit([], dtype=dtype))
                    .otherwise(pl.col(name).str.split(_LIST_SEPARATOR))
                    .alias(name)
                )
            else:
                exprs.append(pl.col(name).cast(dtype))
        return raw.select(exprs)
    rows = [loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return pl.DataFrame({n: [r.get(n) for r in rows] for n in schema}, schema=schema)


def decision_errors(
    decisions: pl.DataFrame, lines: Sequence[int], source: str, *, row_label: str = "line"
) -> list[InputError]:
    """The rows the underwriter could not decide, as errors naming line, case, field."""
    bad = decisions["errorKind"].is_not_null()
    out: list[InputError] = []
    if not bad.any():
        return out
    for i in bad.arg_true().to_list():
        row = decisions.row(i, named=True)
        err = InputError(row["error"], case_id=row["caseId"], field=row["errorField"])
        out.append(_located(err, lines[i], source, row_label))
    return out
