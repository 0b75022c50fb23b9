"""The wire formats of an adverse-action notice and of what a notice must say.

Schemas only: no rendering and no checking lives here. The renderer
(:mod:`credit.notices`) produces a :class:`Notice`; the expectation builder
(:mod:`credit.guardrails.expectation`) produces an :class:`Expectation` from the
underwriting, never from the renderer; the verifier (:mod:`credit.guardrails`) reads
both. Keeping the format apart is what lets the verifier read a notice without
importing the renderer.

A notice carries machine fields (case id, the decision being recorded, the reasons in
order with their codes, category labels and the values they state, the hashes of the
frame and catalogue it was rendered from) and its exact text. Its canonical bytes
(:func:`credit.canonical.canonical_bytes` of the wire form: keys sorted, compact,
UTF-8) are what is hashed, verified, bound and sent.

Parsing is strict: unknown and missing fields and values of the wrong kind are a
:class:`~credit.errors.NoticeInputError` naming the field. Text is *not* restricted
here: a notice whose text holds a zero-width space is well-formed and fails check V8.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
)
from pydantic import ValidationError as _ValidationError
from pydantic.alias_generators import to_camel

from credit.application import Application
from credit.canonical import canonical_bytes, fragment, orjson_writes_alike, sha256_hex
from credit.errors import NoticeError, NoticeInputError

if TYPE_CHECKING:
    from credit.models import Case
    from credit.underwriting import Underwriting

__all__ = [
    "EXPECTATION_FORMAT",
    "NOTICE_FORMAT",
    "Expectation",
    "ExpectedReason",
    "KeyFactorFacts",
    "Notice",
    "NoticeBasis",
    "NoticeReason",
    "OfferFacts",
    "ScoreFacts",
    "parse_expectation",
    "parse_notice",
]

NOTICE_FORMAT = "credit.notice/1"
EXPECTATION_FORMAT = "credit.expectation/1"

DecisionKind = Literal["approve", "decline", "counteroffer", "refer"]
Product = Literal["auto", "card"]


def _iso_date(value: Any) -> Any:
    """Dates are ISO strings on the wire (or dates in Python); nothing else is coerced."""
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a date YYYY-MM-DD, got {type(value).__name__}")
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"expected a date YYYY-MM-DD, got {value!r}") from None


def _exact_decimal(value: Any) -> Any:
    if isinstance(value, (bool, float)):
        raise ValueError("expected an exact decimal (a JSON number or decimal string)")
    if isinstance(value, (int, str)):
        try:
            return Decimal(str(value))
        except ArithmeticError:
            raise ValueError(f"expected a decimal, got {value!r}") from None
    return value


def _encodable(value: str) -> str:
    """Any Unicode is accepted (the verifier judges it), but not lone surrogates: a
    string that is not valid UTF-8 has no canonical bytes to hash."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from None
    return value


IsoDate = Annotated[dt.date, BeforeValidator(_iso_date)]
ExactDecimal = Annotated[Decimal, BeforeValidator(_exact_decimal), Field(allow_inf_nan=False)]
Text = Annotated[StrictStr, AfterValidator(_encodable)]


class _Wire(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class NoticeReason(_Wire):
    """One principal reason as delivered: its code, its category label and the exact
    values its sentence states. The sentence itself is in the notice's text."""

    code: Text
    category: Text
    values: dict[Text, Text]


class Notice(_Wire):
    """An adverse-action notice: machine fields and the exact text."""

    format: Literal["credit.notice/1"] = "credit.notice/1"
    case_id: Text
    notice_date: IsoDate
    product: Product
    decision: DecisionKind
    reasons: tuple[NoticeReason, ...]
    frame_sha256: Text
    catalogue_sha256: Text
    text: Text

    @property
    def reason_codes(self) -> tuple[str, ...]:
        return tuple([r.code for r in self.reasons])

    def to_wire(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "caseId": self.case_id,
            "noticeDate": self.notice_date.isoformat(),
            "product": self.product,
            "decision": self.decision,
            "reasons": [
                {"code": r.code, "category": r.category, "values": dict(r.values)}
                for r in self.reasons
            ],
            "frameSha256": self.frame_sha256,
            "catalogueSha256": self.catalogue_sha256,
            "text": self.text,
        }

    def canonical_bytes(self) -> bytes:
        """The bytes that are hashed, verified and sent: :func:`canonical_bytes` of the
        wire form (written from its fields by orjson, see :func:`_written`)."""
        return _written(self, _notice_bytes) or canonical_bytes(self.to_wire())

    @property
    def sha256(self) -> str:
        """Recomputed on every call, from the notice as it is now."""
        return sha256_hex(self.canonical_bytes())


class ExpectedReason(_Wire):
    """A derived reason code and the values the decision states for it."""

    code: Text
    values: dict[Text, Text]


class KeyFactorFacts(_Wire):
    code: Text
    text: Text
    value: Text


class ScoreFacts(_Wire):
    """The credit score the decision used, and the agency it came from (FCRA 615(a))."""

    score: StrictInt
    score_low: StrictInt
    score_high: StrictInt
    score_date: IsoDate
    score_model: Text | None = None
    bureau_name: Text
    bureau_address: Text
    bureau_phone: Text
    key_factors: tuple[KeyFactorFacts, ...] = ()


class OfferFacts(_Wire):
    """The offered terms of a counteroffer, as the decision recorded them."""

    apr: ExactDecimal
    payment: ExactDecimal
    amount: ExactDecimal | None = None
    term_months: StrictInt | None = None
    credit_line: ExactDecimal | None = None


class Expectation(_Wire):
    """What a notice must say: the application, the decision being recorded, the
    derived reason codes with their values, the score used and the offered terms.

    Built from the underwriting (never from the renderer) by
    :func:`credit.guardrails.expectation_for`."""

    format: Literal["credit.expectation/1"] = "credit.expectation/1"
    case_id: Text
    notice_date: IsoDate
    product: Product
    decision: DecisionKind
    application: Application
    reasons: tuple[ExpectedReason, ...]
    credit_score: ScoreFacts | None = None
    offer: OfferFacts | None = None

    @property
    def reason_codes(self) -> tuple[str, ...]:
        return tuple([r.code for r in self.reasons])

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "format": self.format,
            "caseId": self.case_id,
            "noticeDate": self.notice_date.isoformat(),
            "product": self.product,
            "decision": self.decision,
            "application": self.application.to_wire(),
            "reasons": [{"code": r.code, "values": dict(r.values)} for r in self.reasons],
            "creditScore": None,
            "offer": None,
        }
        if self.credit_score is not None:
            s = self.credit_score
            wire["creditScore"] = {
                "score": s.score,
                "scoreLow": s.score_low,
                "scoreHigh": s.score_high,
                "scoreDate": s.score_date.isoformat(),
                "scoreModel": s.score_model,
                "bureauName": s.bureau_name,
                "bureauAddress": s.bureau_address,
                "bureauPhone": s.bureau_phone,
                "keyFactors": [
                    {"code": k.code, "text": k.text, "value": k.value} for k in s.key_factors
                ],
            }
        if self.offer is not None:
            wire["offer"] = self.offer.model_dump(mode="python", by_alias=True)
        return wire

    def canonical_bytes(self) -> bytes:
        """:func:`canonical_bytes` of the wire form (written from its fields by orjson, see
        :func:`_written`)."""
        return _written(self, _expectation_bytes) or canonical_bytes(self.to_wire())

    @property
    def sha256(self) -> str:
        """Recomputed on every call, from the expectation as it is now (a copy made
        with ``model_copy(update=...)`` has its own)."""
        return sha256_hex(self.canonical_bytes())


# ---------------------------------------------------------------- the canonical bytes
#
# A notice's and an expectation's canonical bytes are written here by orjson from their
# fields, keys sorted: the same bytes as canonical_bytes(to_wire()) (a hypothesis
# property checks it over notices and expectations of any text,
# tests/test_notice_bytes.py), without building the wire form and encoding it. orjson
# writes strings, ints, booleans and None as the canonical encoder does, and each
# Decimal is handed to it as its exact digits (credit.canonical's fragment); it writes a
# float otherwise (1e-7, NaN as null), and some types the encoder refuses, so a value is
# taken only when its type is one of those (credit.canonical.orjson_writes_alike). A
# value of any other type (a model built without validation) makes the writer give up:
# canonical_bytes writes the whole, or raises.

_Model = TypeVar("_Model")


def _written(model: _Model, write: Callable[[_Model], bytes]) -> bytes | None:
    """The canonical bytes ``write`` gives, or None for a value it does not know (or
    cannot write: then the canonical encoder says why)."""
    try:
        return write(model)
    except Exception:
        return None


def _alike(leaves: Iterable[Any]) -> None:
    """TypeError unless each value is of a type orjson writes as the encoder does."""
    if not orjson_writes_alike(leaves):
        raise TypeError("not written by orjson: a value of another type")


def _reasons(reasons: Iterable[Any], leaves: list[Any], *, category: bool) -> list[Any]:
    """The reasons' wire forms; their codes, categories and values added to ``leaves``
    (each reason's values a dict of strings)."""
    out = []
    for r in reasons:
        values = r.values
        if type(values) is not dict:
            raise TypeError(f"not written by orjson: {type(values).__name__}")
        leaves += values.values()
        leaves.append(r.code)
        if category:
            leaves.append(r.category)
            out.append({"category": r.category, "code": r.code, "values": values})
        else:
            out.append({"code": r.code, "values": values})
    return out


def _notice_bytes(n: Notice) -> bytes:
    leaves: list[Any] = [
        n.case_id,
        n.catalogue_sha256,
        n.decision,
        n.format,
        n.frame_sha256,
        n.product,
        n.text,
    ]
    reasons = _reasons(n.reasons, leaves, category=True)
    _alike(leaves)
    wire = {
        "caseId": n.case_id,
        "catalogueSha256": n.catalogue_sha256,
        "decision": n.decision,
        "format": n.format,
        "frameSha256": n.frame_sha256,
        "noticeDate": n.notice_date.isoformat(),
        "product": n.product,
        "reasons": reasons,
        "text": n.text,
    }
    return orjson.dumps(wire, default=fragment, option=orjson.OPT_SORT_KEYS)


def _members(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """A model's fields: (the name on the wire, the attribute)."""
    return tuple((info.alias or name, name) for name, info in model.model_fields.items())


def _fields(
    model: Any, members: tuple[tuple[str, str], ...], leaves: list[Any], *, omit_none: bool
) -> dict[str, Any]:
    """The model's wire form from its fields (``members``: :func:`_members` of its
    class; ``omit_none``: absent optionals left out, as its ``to_wire`` does), its
    values added to ``leaves``."""
    out = {}
    for key, name in members:
        value = getattr(model, name)
        if value is None and omit_none:
            continue
        out[key] = value
    leaves += out.values()
    return out


_APPLICATION = _members(Application)
_OFFER = _members(OfferFacts)


def _expectation_bytes(e: Expectation) -> bytes:
    # the application's and the offer's wire forms from their fields: their own classes
    # only (a subclass may have fields or a to_wire of its own: the encoder writes it)
    a, o = e.application, e.offer
    if type(a) is not Application or (o is not None and type(o) is not OfferFacts):
        raise TypeError("not written by orjson: a subclass")
    leaves: list[Any] = [e.case_id, e.decision, e.format, e.product]
    c = e.credit_score
    score: dict[str, Any] | None = None
    if c is not None:
        factors = []
        for k in c.key_factors:
            leaves += (k.code, k.text, k.value)
            factors.append({"code": k.code, "text": k.text, "value": k.value})
        leaves += (c.bureau_address, c.bureau_name, c.bureau_phone, c.score, c.score_high)
        leaves += (c.score_low, c.score_model)
        score = {
            "bureauAddress": c.bureau_address,
            "bureauName": c.bureau_name,
            "bureauPhone": c.bureau_phone,
            "keyFactors": factors,
            "score": c.score,
            "scoreDate": c.score_date.isoformat(),
            "scoreHigh": c.score_high,
            "scoreLow": c.score_low,
            "scoreModel": c.score_model,
        }
    wire = {
        "application": _fields(a, _APPLICATION, leaves, omit_none=True),
        "caseId": e.case_id,
        "creditScore": score,
        "decision": e.decision,
        "format": e.format,
        "noticeDate": e.notice_date.isoformat(),
        "offer": None if o is None else _fields(o, _OFFER, leaves, omit_none=False),
        "product": e.product,
        "reasons": _reasons(e.reasons, leaves, category=False),
    }
    _alike(leaves)
    return orjson.dumps(wire, default=fragment, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True, slots=True)
class NoticeBasis:
    """What a notice is rendered from and checked against: the recorded decision.

    The decision (decline or counteroffer), its reasons as recorded (codes and the
    figures from the file each states, in order), the offered terms of a counteroffer
    as recorded, and whether a credit score was used (FCRA 615(a): only then is the
    score disclosed). Both the renderer and the expectation builder take it, so a
    notice says exactly what the journal recorded, for whoever decided (the rules
    underwriter, a model, a credit officer).
    """

    case_id: str
    decision: str
    product: str
    reasons: tuple[tuple[str, Mapping[str, str]], ...]
    offer: OfferFacts | None
    uses_score: bool

    @classmethod
    def of(cls, underwriting: Underwriting) -> NoticeBasis:
        """The basis of an underwriting (a notice made outside the journal: ``credit
        notice``, the mutation suite)."""
        decision = underwriting.decision
        co = underwriting.counteroffer
        offer = None
        if decision.decision == "counteroffer" and co is not None:
            offer = OfferFacts(
                apr=co.apr,
                payment=co.payment,
                amount=co.amount,
                term_months=co.term_months,
                credit_line=co.credit_line,
            )
        return cls(
            case_id=underwriting.case_id,
            decision=decision.decision,
            product=decision.product,
            reasons=tuple((r.code, dict(r.values)) for r in underwriting.reasons),
            offer=offer,
            uses_score=underwriting.figures.score is not None,
        )

    @classmethod
    def from_record(
        cls,
        case: Case,
        decision: Mapping[str, Any],
        reasons: Sequence[tuple[str, Mapping[str, str]]] | None,
        offer: Mapping[str, Any] | None,
    ) -> NoticeBasis:
        """The basis of a decision as the journal recorded it (its wire form, reason
        codes with values and, for a counteroffer, the offered payment). Raises
        NoticeError naming what the record lacks."""
        kind = str(decision.get("decision"))
        if reasons is None:
            raise NoticeError(
                "the recorded decision carries no reason codes: a person must decide it "
                "so its notice can state its reasons",
                case_id=case.case_id,
                field="reasons",
            )
        offer_facts: OfferFacts | None = None
        if kind == "counteroffer":
            terms = decision.get("terms")
            if not isinstance(terms, Mapping) or offer is None or "payment" not in offer:
                raise NoticeError(
                    "the recorded counteroffer carries no offered terms and payment",
                    case_id=case.case_id,
                    field="offer",
                )
            offer_facts = OfferFacts.model_validate(
                {
                    "apr": terms.get("apr"),
                    "payment": offer.get("payment"),
                    "amount": terms.get("amount"),
                    "termMonths": terms.get("termMonths"),
                    "creditLine": terms.get("creditLine"),
                }
            )
        return cls(
            case_id=case.case_id,
            decision=kind,
            product=case.application.product,
            reasons=tuple((code, dict(values)) for code, values in reasons),
            offer=offer_facts,
            uses_score=case.credit_report.score is not None,
        )


def _loc(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not part.startswith("function-"):
            path += ("." if path else "") + part
    return path


def _error(err: _ValidationError, *, kind: str, case_id: str | None) -> NoticeInputError:
    first = err.errors()[0]
    field = _loc(tuple(first["loc"]))
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = f"unknown field {field!r} is not part of the {kind} format"
    elif first["type"] == "missing":
        message = f"missing field {field!r} of the {kind} format"
    elif "input" in first:
        shown = repr(first["input"])
        if len(shown) > 60:
            shown = shown[:57] + "..."
        message = f"{message} (got {shown})"
    more = len(err.errors()) - 1
    if more:
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return NoticeInputError(message, case_id=case_id, field=field or None)


def _parse(model: type[_Wire], data: Any, kind: str, fmt: str) -> Any:
    if not isinstance(data, dict):
        raise NoticeInputError(f"a {kind} must be a JSON object, got {type(data).__name__}")
    case_id = data.get("caseId")
    case_id = case_id if isinstance(case_id, str) else None
    if data.get("format") != fmt:
        raise NoticeInputError(
            f"format must be {fmt!r}, got {data.get('format')!r}", case_id=case_id, field="format"
        )
    try:
        return model.model_validate(data)
    except _ValidationError as err:
        raise _error(err, kind=kind, case_id=case_id) from None


def parse_notice(data: Any) -> Notice:
    """Validate a notice document (its wire form); bad input names the field."""
    notice: Notice = _parse(Notice, data, "notice", NOTICE_FORMAT)
    return notice


def parse_expectation(data: Any) -> Expectation:
    """Validate an expectation document; bad input names the field."""
    expectation: Expectation = _parse(Expectation, data, "expectation", EXPECTATION_FORMAT)
    return expectation
