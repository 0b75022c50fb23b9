"""Value objects of a credit case and of the decision taken on it.

Frozen pydantic v2 models with camelCase wire names. Unknown fields are rejected,
money and percentages are exact ``Decimal`` (never floats), and every validation
failure becomes an :class:`~credit.errors.InputError` naming the field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    Field,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)

from credit.application import (
    PRODUCTS,
    Application,
    Count,
    DecisionMoney,
    FieldProblem,
    NonEmpty,
    Percent,
    Product,
    StrictInt,
    WireModel,
)
from credit.errors import InputError
from credit.kept import KeptPer, ReadOnlyDict

__all__ = [
    "DECISIONS",
    "PRODUCTS",
    "SCORE_BANDS",
    "Application",
    "Bureau",
    "Case",
    "CreditReport",
    "Decision",
    "Derogatory",
    "Dispute",
    "KeyFactor",
    "MonitoringData",
    "RecordedDecision",
    "Terms",
    "input_error_from",
    "parse_case",
    "parse_decision",
    "recorded_decision",
    "stored_case",
]

DECISIONS = ("approve", "decline", "counteroffer", "refer")
SCORE_BANDS = ("prime", "near-prime", "subprime", "unscored")

DecisionKind = Literal["approve", "decline", "counteroffer", "refer"]
ScoreBand = Literal["prime", "near-prime", "subprime", "unscored"]


class Bureau(WireModel):
    name: NonEmpty
    address: NonEmpty
    phone: NonEmpty


class Derogatory(WireModel):
    kind: NonEmpty
    months_ago: Count


class Dispute(WireModel):
    tradeline_id: NonEmpty
    resolved: Annotated[bool, Strict()]


class KeyFactor(WireModel):
    """A key factor the bureau reported as adversely affecting the score."""

    code: NonEmpty
    text: NonEmpty
    value: NonEmpty


class CreditReport(WireModel):
    bureau: Bureau
    score: StrictInt | None
    score_model: NonEmpty | None = None
    score_range: tuple[StrictInt, StrictInt]
    score_date: dt.date | None = None
    tradelines: Count
    history_months: Count
    utilisation_pct: Percent
    inquiries12m: Count = Field(alias="inquiries12m")
    derogatories: tuple[Derogatory, ...] = ()
    disputes: tuple[Dispute, ...] = ()
    key_factors: tuple[KeyFactor, ...] = ()

    @field_validator("score_range")
    @classmethod
    def _range_ordered(cls, value: tuple[int, int]) -> tuple[int, int]:
        if value[0] >= value[1]:
            raise ValueError(f"scoreRange low {value[0]} must be below high {value[1]}")
        return value

    @model_validator(mode="after")
    def _score_in_range(self) -> CreditReport:
        if self.score is not None:
            low, high = self.score_range
            if not low <= self.score <= high:
                raise FieldProblem(
                    "score", f"score {self.score} is outside scoreRange [{low}, {high}]"
                )
            if self.score_date is None:
                raise FieldProblem("scoreDate", "scoreDate is required when a score is reported")
        return self

    @property
    def unresolved_disputes(self) -> tuple[Dispute, ...]:
        return tuple(d for d in self.disputes if not d.resolved)


class MonitoringData(WireModel):
    """Government-monitoring information (12 CFR 1002.13). Never seen by the
    underwriter; only the fair-lending review reads it."""

    race: str | None = None
    ethnicity: str | None = None
    sex: str | None = None
    age: Annotated[int, Strict(), Field(ge=0)] | None = None
    marital_status: str | None = None
    public_assistance_income: Annotated[bool, Strict()] | None = None


class Case(WireModel):
    case_id: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$")]
    as_of: dt.date
    application: Application
    credit_report: CreditReport
    monitoring: MonitoringData | None = None


class Terms(WireModel):
    apr: Annotated[Decimal, Field(ge=0, allow_inf_nan=False)] | None = None
    credit_line: DecisionMoney | None = None
    amount: DecisionMoney | None = None
    term_months: Annotated[int, Field(gt=0)] | None = None


class Decision(WireModel):
    """The outcome contract, exactly the seed's schema."""

    product: Product
    decision: DecisionKind
    terms: Terms | None = None
    score_band: ScoreBand
    dti_pct: Annotated[Decimal, Field(ge=0, allow_inf_nan=False)]
    ltv_pct: Annotated[Decimal, Field(ge=0, allow_inf_nan=False)] | None = None
    policy_basis: tuple[str, ...]
    factors: tuple[str, ...]
    confidence: Annotated[Decimal, Field(ge=0, le=1, allow_inf_nan=False)]

    @model_validator(mode="after")
    def _consistent(self) -> Decision:
        if self.product == "card" and self.ltv_pct is not None:
            raise ValueError("ltvPct is for auto only; a card decision carries null")
        if self.decision in ("approve", "counteroffer") and self.terms is None:
            raise ValueError(f"terms are required for {self.decision}")
        if self.decision in ("decline", "refer") and self.terms is not None:
            raise ValueError(f"a {self.decision} carries no terms")
        return self

    def to_wire(self) -> dict[str, Any]:
        wire = self.model_dump(mode="python", by_alias=True, exclude_none=True)
        wire["ltvPct"] = self.ltv_pct
        wire["policyBasis"] = list(self.policy_basis)
        wire["factors"] = list(self.factors)
        return {
            key: wire[key]
            for key in (
                "product",
                "decision",
                "terms",
                "scoreBand",
                "dtiPct",
                "ltvPct",
                "policyBasis",
                "factors",
                "confidence",
            )
            if key in wire
        }


def _loc_to_field(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += ("." if path else "") + part
    return path


def input_error_from(
    err: ValidationError, *, case_id: str | None = None, prefix: str = ""
) -> InputError:
    """Turn pydantic's error into ours, naming the first bad field and its problem."""
    first = err.errors()[0]
    field = _loc_to_field(tuple(first["loc"]))
    problem = (first.get("ctx") or {}).get("error")
    if isinstance(problem, FieldProblem):
        field = f"{field}.{problem.field}" if field else problem.field
    if prefix:
        field = f"{prefix}.{field}" if field else prefix
    message = first["msg"]
    if isinstance(problem, ValueError):  # our own validators' words, with the value
        message = str(problem)
    elif first["type"] == "extra_forbidden":
        message = f"unknown field {field!r} is not part of the case format"
    elif (
        "input" in first
        and first["type"] not in ("missing",)
        and not isinstance(problem, FieldProblem)
    ):
        shown = repr(first["input"])
        if len(shown) > 60:
            shown = shown[:57] + "..."
        message = f"{message} (got {shown})"
    more = len(err.errors()) - 1
    if more:
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return InputError(message, case_id=case_id, field=field or None)


def parse_case(data: Any) -> Case:
    """Validate a case document; bad input raises InputError naming the field."""
    case_id = data.get("caseId") if isinstance(data, dict) else None
    if not isinstance(data, dict):
        raise InputError(f"a case must be a JSON object, got {type(data).__name__}")
    try:
        return Case.model_validate(data)
    except ValidationError as err:
        raise input_error_from(err, case_id=case_id if isinstance(case_id, str) else None) from None


def stored_case(document: Mapping[str, Any]) -> Case:
    """The case a stored document holds (:func:`parse_case` of it), read once for each
    read-only document (a :class:`~credit.kept.ReadOnlyDict`) while it lives. A store
    hands one such document for a case throughout a group commit
    (:meth:`credit.journal.base.Store.get_case`), so the group's readers of the case
    (the tools' completion of a decision, Backstop, Equipoise, the notice step) share
    one parse: a :class:`Case` is immutable all the way down (frozen models, tuples),
    and each reader gets exactly what :func:`parse_case` of the stored document gives.
    Any other mapping is parsed as it comes; a document that is not a case raises
    InputError each time it is read."""
    if type(document) is not ReadOnlyDict:
        return parse_case(dict(document))
    return _stored(document)


# The case of each read-only document read, kept while the document lives (no longer:
# the store drops a group's documents with its views).
_stored: KeptPer[ReadOnlyDict[str, Any], Case] = KeptPer(parse_case)


def parse_decision(data: Any, *, case_id: str | None = None) -> Decision:
    """Validate a Decision from any underwriter (rules or model)."""
    if not isinstance(data, dict):
        raise InputError(
            f"a decision must be a JSON object, got {type(data).__name__}", case_id=case_id
        )
    try:
        return Decision.model_validate(data)
    except ValidationError as err:
        raise input_error_from(err, case_id=case_id, prefix="decision") from None


class RecordedDecision(Protocol):
    """A journal entry that records a decision (its payload's ``decision``)."""

    @property
    def case_id(self) -> str | None: ...

    @property
    def payload(self) -> Mapping[str, Any]: ...


def recorded_decision(entry: RecordedDecision) -> Decision:
    """The Decision a decision entry records (:func:`parse_decision` of its payload's
    ``decision``, named by the entry's case), read once for each entry while it lives.
    An entry is immutable as recorded (a frozen model whose payload its hash covers:
    nothing modifies it), so the reviewers of a decision (Backstop, Equipoise and its
    comparison pool, the ethics review) share one parse of the same entry, and each
    gets exactly what parsing it gives. A payload that is not a decision raises
    InputError each time it is read."""
    return _recorded(entry)


_recorded: KeptPer[RecordedDecision, Decision] = KeptPer(
    lambda entry: parse_decision(entry.payload.get("decision"), case_id=entry.case_id)
)
