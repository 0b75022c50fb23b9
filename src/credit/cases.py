"""The one case reader: the case format (docs/case-format.md), strictly, for every
entry point (``credit decide``, ``credit notice``, ``credit run``, ``credit batch
decide``'s JSON Lines, the service's request body).

A bad case never stops the work: each line of a batch yields either a validated
:class:`~credit.models.Case` or one :class:`~credit.errors.InputError` naming the
source, the line, the case id (whenever the line has one, even if the rest is bad) and
the field, and saying what is wrong. Nothing but ``InputError`` ever leaves the reader
for a bad line, whatever its bytes.

Reading a line, in order (each step is one rule of the case format):

1. **Lines.** A batch is split on the byte ``\\n`` only, so a U+2028 or U+0085 inside a
   string is just a character and line numbers are the file's. One ``\\r`` before the
   ``\\n`` is dropped (CRLF files read the same); a UTF-8 byte order mark is dropped at
   the very start of the file and is an error anywhere else. A line of only spaces and
   tabs is skipped (its number is still counted).
2. **Size.** A line longer than ``document.lineBytes`` is an error before anything else
   is done with it (the file is read in pieces, so a huge line costs no memory).
3. **UTF-8.** Each line is decoded on its own: a line that is not UTF-8 is an error for
   that line alone.
4. **Nesting.** Objects and arrays nested deeper than ``document.nestingDepth`` are an
   error found by counting brackets before the JSON parser runs (no RecursionError).
5. **Strict JSON.** One JSON value and nothing after it; duplicate keys (at any
   depth), ``NaN``, ``Infinity``, a number written with an exponent or with more than
   ``document.numberDigits`` digits, a string (or key) longer than
   ``document.stringChars``, a lone surrogate (``"\\ud800"``) or a control character in
   a string are errors naming the key path. Numbers are exact Decimals.
6. **The case.** :func:`credit.models.parse_case` (types, required and unknown fields,
   the spelling of money), then :func:`check_limits` (the ranges of
   ``case-limits.yaml``), then, given the policies, :func:`check_policy` (a policy is
   in force on ``asOf``; the score lies on that policy's scale).

The limits are versioned data (``src/credit/data/case-limits.yaml``), read by
:func:`load_case_limits` as strictly as the policy.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import IO, Any, Final, Literal, NoReturn

from pydantic import BaseModel, ConfigDict

from credit.bureau_formats import BureauFormats, default_bureau_formats
from credit.canonical import is_mapping
from credit.errors import InputError, PolicyError
from credit.models import Case, parse_case
from credit.policy import Param, Policy, PolicyRegistry, parameter_tree, read_parameters
from credit.yamldata import (
    expect_keys,
    load_yaml,
    read_date,
    read_decimal,
    read_int,
    read_source,
    read_str,
)

__all__ = [
    "CaseLimits",
    "CaseLine",
    "DocumentLine",
    "Policies",
    "check_case",
    "check_limits",
    "check_policy",
    "default_case_limits",
    "default_case_limits_path",
    "iter_cases",
    "iter_documents",
    "json_type",
    "load_case_limits",
    "read_case_bytes",
    "read_case_lines",
    "read_document",
]

Policies = Policy | PolicyRegistry

# ---------------------------------------------------------------- the limits, as data

_LimitKind = Literal["int", "decimal"]
_DOCUMENT_KEYS = ("lineBytes", "nestingDepth", "stringChars", "numberDigits")
# Each range's field (a dotted path in the case's wire names; `[]` marks a list whose
# every item has the field) and the kind of its bounds.
_RANGES: dict[str, _LimitKind] = {
    "application.annualIncome": "decimal",
    "application.monthlyDebtPayments": "decimal",
    "application.requestedAmount": "decimal",
    "application.vehicleValue": "decimal",
    "application.requestedLine": "decimal",
    "application.termMonths": "int",
    "creditReport.tradelines": "int",
    "creditReport.historyMonths": "int",
    "creditReport.inquiries12m": "int",
    "creditReport.utilisationPct": "decimal",
    "creditReport.derogatories.monthsAgo": "int",
    "monitoring.age": "int",
}
_LISTS = ("creditReport.derogatories", "creditReport.disputes", "creditReport.keyFactors")
_SCHEMA: dict[str, _LimitKind] = {
    **{f"document.{k}": "int" for k in _DOCUMENT_KEYS},
    **{f"{field}.{end}": kind for field, kind in _RANGES.items() for end in ("min", "max")},
    **{f"{field}.maxItems": "int" for field in _LISTS},
}
_TREE = parameter_tree(_SCHEMA)
_HEADER_REQUIRED = frozenset({"name", "version", "effectiveDate", "reference"})
_HEADER_OPTIONAL = frozenset({"description"})


class CaseLimits(BaseModel):
    """A loaded, validated version of the case limits. Immutable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    version: str
    effective_date: dt.date
    reference: str
    description: str | None
    source: str
    sha256: str
    params: Mapping[str, Param]

    def __getitem__(self, key: str) -> Param:
        try:
            return self.params[key]
        except KeyError:
            raise PolicyError("no such case limit", file=self.source, key=key) from None

    def value(self, key: str) -> Any:
        return self[key].value

    @property
    def line_bytes(self) -> int:
        return int(self.value("document.lineBytes"))

    @property
    def nesting_depth(self) -> int:
        return int(self.value("document.nestingDepth"))

    @property
    def string_chars(self) -> int:
        return int(self.value("document.stringChars"))

    @property
    def number_digits(self) -> int:
        return int(self.value("document.numberDigits"))

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


def _read_limit(kind: _LimitKind, value: Any, *, file: str, key: str) -> Any:
    number: int | Decimal = (
        read_int(value, file=file, key=key)
        if kind == "int"
        else read_decimal(value, file=file, key=key)
    )
    if number < 0:
        raise PolicyError(f"a case limit is never negative, got {value!r}", file=file, key=key)
    return number


def load_case_limits(path: Path | str | None = None, text: str | None = None) -> CaseLimits:
    """Load and validate a case-limits file (default: the bundled one); its SHA-256 is
    of the file's exact bytes. Unknown, missing or duplicate keys, a missing reference,
    a value of the wrong kind or a range whose min is above its max are a
    :class:`~credit.errors.PolicyError` naming the file and the key."""
    path = Path(path) if path is not None else default_case_limits_path()
    text, raw = read_source(path, text)
    file = str(path)
    document = load_yaml(path, text)
    header = expect_keys(
        document,
        required=_HEADER_REQUIRED | set(_TREE),
        optional=_HEADER_OPTIONAL,
        file=file,
        key="",
    )
    params = read_parameters(
        {k: header[k] for k in _TREE},
        _TREE,
        lambda key, value, value_key: _read_limit(_SCHEMA[key], value, file=file, key=value_key),
        file=file,
    )
    description = header.get("description")
    limits = CaseLimits(
        name=read_str(header["name"], file=file, key="name"),
        version=read_str(str(header["version"]), file=file, key="version"),
        effective_date=read_date(header["effectiveDate"], file=file, key="effectiveDate"),
        reference=read_str(header["reference"], file=file, key="reference"),
        description=None
        if description is None
        else read_str(description, file=file, key="description"),
        source=file,
        sha256=hashlib.sha256(raw).hexdigest(),
        params=params,
    )
    for field in _RANGES:
        if limits.value(f"{field}.min") > limits.value(f"{field}.max"):
            raise PolicyError("min must not be above max", file=file, key=field)
    for key in _DOCUMENT_KEYS:
        if limits.value(f"document.{key}") < 1:
            raise PolicyError("must be at least 1", file=file, key=f"document.{key}")
    return limits


def default_case_limits_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "case-limits.yaml"))


_DEFAULT: dict[str, CaseLimits] = {}


def default_case_limits() -> CaseLimits:
    """The case limits the product ships (loaded once)."""
    if "l" not in _DEFAULT:
        _DEFAULT["l"] = load_case_limits()
    return _DEFAULT["l"]


# ---------------------------------------------------------------- strict JSON


def json_type(value: Any) -> str:
    """A value's JSON type name (``object``, ``array``, ...), for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, Decimal, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


class _Refused:
    """A JSON value the case format refuses, kept until the walk names its path."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class _DuplicateKeys(dict[str, Any]):
    """An object in which a key appeared more than once (the first such key)."""

    duplicate: str = ""


_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_BAD_CHARACTER = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
_CASE_ID = re.compile(rb'"caseId"\s*:\s*"([A-Za-z0-9._:-]{1,64})"')
_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_BOM = b"\xef\xbb\xbf"
_BLANK = b" \t\r"


def _depth(text: str) -> int:
    """The deepest nesting of objects and arrays, strings left out."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRINGS.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_string(value: str, path: str, limits: CaseLimits, what: str = "string") -> None:
    if len(value) > limits.string_chars:
        raise InputError(
            f"a {what} of {len(value):,} characters; the case format allows at most "
            f"{limits.string_chars:,} (document.stringChars)",
            field=path or None,
        )
    bad = _BAD_CHARACTER.search(value)
    if bad is not None:
        code = ord(bad.group())
        kind = "a lone surrogate" if 0xD800 <= code <= 0xDFFF else "the control character"
        raise InputError(
            f"{kind} U+{code:04X} is not allowed in a {what}"
            + (" (it is not a Unicode character)" if kind == "a lone surrogate" else ""),
            field=path or None,
        )


def _walk(value: Any, path: str, limits: CaseLimits) -> None:
    """Name the first refused value, in document order."""
    if isinstance(value, _Refused):
        raise InputError(value.message, field=path or None)
    if isinstance(value, str):
        _check_string(value, path, limits)
    elif isinstance(value, dict):
        if isinstance(value, _DuplicateKeys):
            raise InputError(
                f"duplicate key {value.duplicate!r}: a key may appear only once in an object",
                field=_join(path, value.duplicate),
            )
        for key, item in value.items():
            here = _join(path, key)
            _check_string(key, here, limits, what="key")
            _walk(item, here, limits)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, f"{path}[{i}]", limits)


def _decoder(limits: CaseLimits) -> json.JSONDecoder:
    digits = limits.number_digits

    def number(text: str) -> Any:
        if not text.isascii():  # the pure-Python scanner's \d matches other digits
            return _Refused(f"the number {text!r} has digits that are not ASCII 0-9")
        if "e" in text or "E" in text:
            return _Refused(f"the number {text} is written with an exponent: write plain digits")
        count = sum(c.isdigit() for c in text)
        if count > digits:
            return _Refused(
                f"a number written with {count:,} digits; the case format allows at most "
                f"{digits} (document.numberDigits)"
            )
        if "." in text:
            exact = Decimal(text)
            return exact.copy_abs() if exact.is_zero() else exact  # no "-0.00"
        return int(text)

    def constant(name: str) -> Any:
        return _Refused(f"{name} is not a number the case format allows")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in items:
            if key in out and not isinstance(out, _DuplicateKeys):
                out = _DuplicateKeys(out)
                out.duplicate = key
            out[key] = item
        return out

    return json.JSONDecoder(
        parse_float=number, parse_int=number, parse_constant=constant, object_pairs_hook=pairs
    )


def _sniff_case_id(data: bytes) -> str | None:
    match = _CASE_ID.search(data[:4096])
    return match.group(1).decode("ascii") if match else None


def _too_long(size: int, limits: CaseLimits, what: str = "the line is") -> str:
    return (
        f"{what} {size:,} bytes; the case format allows at most {limits.line_bytes:,} "
        "(document.lineBytes)"
    )


def read_document(
    data: bytes,
    *,
    limits: CaseLimits | None = None,
    source: str | None = None,
    line: int | None = None,
    first: bool = True,
) -> Any:
    """One JSON document (a line of a batch, a ``.json`` file, a request body), read
    strictly (steps 2-5 of the module's rules): the parsed value, exact decimals. Any
    problem is an :class:`~credit.errors.InputError` naming the source, the line, the
    case id when the bytes show one, and the key path. ``first`` says the document
    starts the file (where a byte order mark is allowed)."""
    limits = limits or default_case_limits()
    try:
        return _read_document(data, limits, first)
    except InputError as err:
        _raise(err, err.case_id or _sniff_case_id(data), line, source)


def _raise(err: InputError, case_id: str | None, line: int | None, source: str | None) -> NoReturn:
    raise type(err)(
        err.message,
        case_id=case_id,
        field=err.field,
        line=line if line is not None else err.line,
        source=source,
    ) from None


def _read_document(data: bytes, limits: CaseLimits, first: bool) -> Any:
    if data.startswith(_BOM):
        if not first:
            raise InputError(
                "a byte order mark (U+FEFF) is allowed only at the very start of the file"
            )
        data = data[len(_BOM) :]
    if len(data) > limits.line_bytes:
        raise InputError(_too_long(len(data), limits))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(
            f"not UTF-8: byte 0x{data[err.start]:02x} at column {err.start + 1} "
            f"cannot be decoded ({err.reason})"
        ) from None
    deepest = _depth(text)
    if deepest > limits.nesting_depth:
        raise InputError(
            f"objects and arrays nested {deepest:,} deep; the case format allows at most "
            f"{limits.nesting_depth} (document.nestingDepth)"
        )
    decoder = _decoder(limits)
    try:
        value, end = decoder.raw_decode(text, _skip_blank(text, 0))
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}" if "\n" in text else f"column {err.colno}"
        raise InputError(f"not valid JSON: {err.msg} at {where}") from None
    except RecursionError:  # pragma: no cover - the nesting check comes first
        raise InputError("not valid JSON: nested too deep") from None
    rest = _skip_blank(text, end)
    if rest < len(text):
        raise InputError(
            f"not valid JSON: more after the JSON value at column {rest + 1} "
            "(one case is one JSON object, one a line)",
            case_id=_case_id_of(value),
        )
    try:
        _walk(value, "", limits)
    except InputError as err:
        raise InputError(err.message, field=err.field, case_id=_case_id_of(value)) from None
    return value


def _skip_blank(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


# ---------------------------------------------------------------- the case's figures


# Each limited field's wire path as its keys, split once, and the names of its limits.
_RANGE_PARTS: Final = tuple(
    (tuple(field.split(".")), f"{field}.min", f"{field}.max") for field in _RANGES
)
_LIST_PARTS: Final = tuple((tuple(field.split(".")), f"{field}.maxItems") for field in _LISTS)


def _values(
    node: Any, parts: tuple[str, ...], start: int = 0, trail: tuple[tuple[int, int], ...] = ()
) -> list[tuple[tuple[tuple[int, int], ...], Any]]:
    """The values at a dotted path of a wire document (``parts``, its keys, from
    ``start``), a list on the way walked, each with its trail: the index taken in each
    list met, as (the key it came before, the index). Its place is written out only for
    a value found out of bounds (:func:`_place`): a value checked and within bounds
    costs no string."""
    out: list[tuple[tuple[tuple[int, int], ...], Any]] = []
    for at in range(start, len(parts)):
        if isinstance(node, (list, tuple)):
            for index, item in enumerate(node):
                out += _values(item, parts, at, (*trail, (at, index)))
            return out
        key = parts[at]
        if not (is_mapping(node) and key in node):
            return out
        node = node[key]
    if node is not None:
        out.append((trail, node))
    return out


def _place(parts: tuple[str, ...], trail: tuple[tuple[int, int], ...]) -> str:
    """A value's place as a field name (``creditReport.derogatories[1].monthsAgo``)."""
    path = ""
    for at, key in enumerate(parts):
        for before, index in trail:
            if before == at:
                path += f"[{index}]"
        path = _join(path, key)
    return path


def check_limits(case: Case, limits: CaseLimits | None = None) -> None:
    """Every figure of ``case`` within its range of ``case-limits.yaml`` and every list
    no longer than its ``maxItems``; else an InputError naming the case and field."""
    limits = limits or default_case_limits()
    wire = case.to_wire()
    for parts, name in _LIST_PARTS:
        most = limits.value(name)
        for trail, items in _values(wire, parts):
            if len(items) > most:
                raise InputError(
                    f"{len(items):,} entries; the case format allows at most {most} "
                    f"({name}, {limits[name].reference})",
                    case_id=case.case_id,
                    field=_place(parts, trail),
                )
    for parts, low_name, high_name in _RANGE_PARTS:
        low, high = limits[low_name], limits[high_name]
        for trail, value in _values(wire, parts):
            if value < low.value:
                bound, side = low, "below the least"
            elif value > high.value:
                bound, side = high, "above the most"
            else:
                continue
            raise InputError(
                f"{value} is {side} the case format allows, {bound.value} {bound.unit} "
                f"({bound.key})",
                case_id=case.case_id,
                field=_place(parts, trail),
            )


def check_policy(case: Case, policies: Policies) -> Policy:
    """The policy in force on the case date, with the score on its scale; a case date
    no policy covers, or a score off the scale, is an InputError naming the case and
    the field (``asOf``, ``creditReport.score``), not the policy file."""
    if isinstance(policies, Policy):
        if not policies.in_force_on(case.as_of):
            raise InputError(
                f"no policy is in force on {case.as_of}: {policies.label} takes effect "
                f"{policies.effective_date}",
                case_id=case.case_id,
                field="asOf",
            )
        policy = policies
    else:
        try:
            policy = policies.in_force(case.as_of)
        except PolicyError:
            first = policies.policies[0]
            raise InputError(
                f"no policy is in force on {case.as_of}: the earliest, {first.label}, takes "
                f"effect {first.effective_date}",
                case_id=case.case_id,
                field="asOf",
            ) from None
    score = case.credit_report.score
    if score is not None:
        low, high = policy["scoreScale.min"], policy["scoreScale.max"]
        if not low.value <= score <= high.value:
            raise InputError(
                f"score {score} is off the scale {low.value}-{high.value} that policy "
                f"{policy.label} bands scores on ({low.key}, {high.key})",
                case_id=case.case_id,
                field="creditReport.score",
            )
    return policy


def check_case(
    raw: Any, *, limits: CaseLimits | None = None, policies: Policies | None = None
) -> Case:
    """A raw case document (as :func:`read_document` gives it) validated: the case
    model, the limits, and, given the policies, the policy in force and its scale."""
    if not isinstance(raw, dict):
        raise InputError(f"a case must be a JSON object, got {json_type(raw)}")
    case = parse_case(raw)
    check_limits(case, limits)
    check_bureau_fields(case)
    if policies is not None:
        check_policy(case, policies)
    return case


def check_bureau_fields(case: Case, formats: BureauFormats | None = None) -> None:
    """The bureau fields a notice prints are in the formats the bureau uses (data:
    ``bureau-formats.yaml``): each key factor's value in the form its code allows (a
    percentage, a count with its unit, a dollar amount, a duration), the bureau's name,
    address and telephone, and the score model. Anything else is an InputError naming
    the field: free text in a figure's place never reaches an applicant."""
    formats = formats or default_bureau_formats()
    report = case.credit_report
    for i, factor in enumerate(report.key_factors):
        if factor.code not in formats.key_factors:
            raise InputError(
                f"bureau key-factor code {factor.code!r} has no format in "
                f"{formats.name} {formats.version}",
                case_id=case.case_id,
                field=f"creditReport.keyFactors[{i}].code",
            )
        problem = formats.check_key_factor(factor.code, factor.value)
        if problem is not None:
            raise InputError(
                problem, case_id=case.case_id, field=f"creditReport.keyFactors[{i}].value"
            )
    fields = {
        "bureau.name": report.bureau.name,
        "bureau.address": report.bureau.address,
        "bureau.phone": report.bureau.phone,
        "scoreModel": report.score_model,
    }
    for name, value in fields.items():
        if value is None:
            continue
        problem = formats.check_field(name, value)
        if problem is not None:
            raise InputError(problem, case_id=case.case_id, field=f"creditReport.{name}")


def read_case_bytes(
    data: bytes,
    *,
    limits: CaseLimits | None = None,
    policies: Policies | None = None,
    source: str | None = None,
) -> Case:
    """One case from its bytes (a ``.json`` file, a request body), read and checked."""
    raw = read_document(data, limits=limits, source=source)
    try:
        return check_case(raw, limits=limits, policies=policies)
    except InputError as err:
        _raise(err, err.case_id or _case_id_of(raw), None, source)


def _case_id_of(raw: Any) -> str | None:
    """The document's case id, when it has one that is a well-formed id."""
    case_id = raw.get("caseId") if isinstance(raw, dict) else None
    return case_id if isinstance(case_id, str) and _ID.fullmatch(case_id) else None


# ---------------------------------------------------------------- files


@dataclass(frozen=True, slots=True)
class DocumentLine:
    """One entry of a batch read as a raw document: the value, or why it is refused."""

    line: int
    raw: Any
    error: InputError | None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class CaseLine:
    """One entry of a batch: the case, or the error that kept it out."""

    line: int
    case: Case | None
    error: InputError | None
    source: str | None = None


def _lines(handle: IO[bytes], limits: CaseLimits) -> Iterator[tuple[int, bytes, int | None]]:
    """``(number, bytes, None)`` for each line split on ``\\n``, without its line break
    (and one ``\\r`` before it). A line sure to be over the limit comes as its first
    bytes and its full size; the rest of it is read and dropped in pieces."""
    cap = limits.line_bytes + len(_BOM) + 2  # room for a BOM and "\r\n"
    number = 0
    while chunk := handle.readline(cap):
        number += 1
        if not chunk.endswith(b"\n") and len(chunk) == cap:
            size = len(chunk)
            while more := handle.readline(1 << 16):
                size += len(more)
                if more.endswith(b"\n"):
                    size -= 1
                    break
            yield number, chunk, size
            continue
        if chunk.endswith(b"\n"):
            chunk = chunk[:-1]
        if chunk.endswith(b"\r"):
            chunk = chunk[:-1]
        yield number, chunk, None


def iter_documents(
    path: Path | str, *, limits: CaseLimits | None = None, lines: bool | None = None
) -> Iterator[DocumentLine]:
    """Every document of a ``.json`` file (one case) or a ``.jsonl`` batch, in order,
    read strictly; a file that cannot be opened is an InputError naming it. ``lines``
    true reads any file as JSON Lines (false: as one document; default: by suffix)."""
    path = Path(path)
    source = str(path)
    limits = limits or default_case_limits()
    try:
        handle = path.open("rb")
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", source=source) from None
    with handle:
        if not (path.suffix.lower() != ".json" if lines is None else lines):
            most = limits.line_bytes + len(_BOM)
            data = handle.read(most + 1)
            if len(data) > most:
                error = InputError(
                    _too_long(limits.line_bytes, limits, "the file is more than"),
                    case_id=_sniff_case_id(data),
                    line=1,
                    source=source,
                )
                yield DocumentLine(1, None, error, source)
            else:
                yield _document(1, data, limits, source, first=True)
            return
        for number, data, size in _lines(handle, limits):
            if size is not None:
                error = InputError(
                    _too_long(size, limits),
                    case_id=_sniff_case_id(data),
                    line=number,
                    source=source,
                )
                yield DocumentLine(number, None, error, source)
            elif data.strip(_BLANK) and not (number == 1 and data.strip(_BLANK) == _BOM):
                yield _document(number, data, limits, source, first=number == 1)


def _document(
    number: int, data: bytes, limits: CaseLimits, source: str, *, first: bool
) -> DocumentLine:
    try:
        raw = read_document(data, limits=limits, source=source, line=number, first=first)
    except InputError as err:
        return DocumentLine(number, None, err, source)
    return DocumentLine(number, raw, None, source)


def iter_cases(
    path: Path | str,
    *,
    limits: CaseLimits | None = None,
    policies: Policies | None = None,
) -> Iterator[CaseLine]:
    """Yield every case of a ``.json`` file (one case) or ``.jsonl`` batch, in order,
    each validated (:func:`check_case`, with ``policies`` when given) or refused."""
    for entry in iter_documents(path, limits=limits):
        if entry.error is not None:
            yield CaseLine(entry.line, None, entry.error, entry.source)
            continue
        try:
            case = check_case(entry.raw, limits=limits, policies=policies)
        except InputError as err:
            error = err.located(line=entry.line, source=entry.source)
            if error.case_id is None and (case_id := _case_id_of(entry.raw)) is not None:
                error = _with_case_id(error, case_id)
            yield CaseLine(entry.line, None, error, entry.source)
            continue
        yield CaseLine(entry.line, case, None, entry.source)


def _with_case_id(err: InputError, case_id: str) -> InputError:
    return type(err)(
        err.message, case_id=case_id, field=err.field, line=err.line, source=err.source
    )


def read_case_lines(
    path: Path | str,
    *,
    limits: CaseLimits | None = None,
    policies: Policies | None = None,
) -> list[CaseLine]:
    return list(iter_cases(path, limits=limits, policies=policies))
