"""The flat, columnar form of a case and of a decision (Arrow, through polars).

A case row carries exactly what the underwriter reads, in exact integer units: money
in integer cents (``Int64``), counts and months as integers, the score nullable, the
bureau's key-factor codes as a list in the bureau's order. The government-monitoring
columns are optional and never reach the underwriter (only the fair-lending report
reads them, :mod:`credit.batch.whatif`).

==========================  ================  =======================================
column                      type              from the case format
==========================  ================  =======================================
``caseId``                  String            ``caseId``
``asOf``                    Date              ``asOf``
``product``                 String            ``application.product`` (auto, card)
``annualIncomeCents``       Int64             ``application.annualIncome`` x 100
``monthlyDebtCents``        Int64             ``application.monthlyDebtPayments`` x 100
``requestedAmountCents``    Int64, null       ``application.requestedAmount`` (auto)
``termMonths``              Int32, null       ``application.termMonths`` (auto)
``vehicleValueCents``       Int64, null       ``application.vehicleValue`` (auto)
``requestedLineCents``      Int64, null       ``application.requestedLine`` (card)
``score``                   Int32, null       ``creditReport.score`` (null: no score)
``tradelines``              Int32             ``creditReport.tradelines``
``historyMonths``           Int32             ``creditReport.historyMonths``
``unresolvedDisputes``      Int32             disputes with ``resolved`` false
``keyFactorCodes``          List(String)      ``creditReport.keyFactors[].code``
``race`` ... (optional)     String/Int32/Bool ``monitoring.*`` (see MONITORING_COLUMNS)
==========================  ================  =======================================

A decision row (:func:`decision_schema`) holds the case id and product, the decision,
the band, the DTI and
LTV as compared and stated, the terms, the reason codes in order, the confidence and
the decision step, every figure an exact ``Decimal`` (Arrow ``decimal128``) whose
scale follows the policy's quanta; a case that could not be decided carries the error
kind, field and message instead (the same the scalar underwriter raises).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import polars as pl

from credit.errors import InputError
from credit.models import (
    Application,
    Bureau,
    Case,
    CreditReport,
    Dispute,
    KeyFactor,
    MonitoringData,
    parse_case,
)
from credit.policy import BANDS, Policy

__all__ = [
    "CASE_COLUMNS",
    "DECISION_COLUMNS",
    "MONITORING_COLUMNS",
    "PLACEHOLDER_BUREAU",
    "SCORE_SCALE",
    "cases_to_frame",
    "cents",
    "decision_schema",
    "documents_to_frame",
    "empty_case_frame",
    "frame_to_cases",
    "from_cents",
]

CASE_COLUMNS: dict[str, pl.DataType] = {
    "caseId": pl.String(),
    "asOf": pl.Date(),
    "product": pl.String(),
    "annualIncomeCents": pl.Int64(),
    "monthlyDebtCents": pl.Int64(),
    "requestedAmountCents": pl.Int64(),
    "termMonths": pl.Int32(),
    "vehicleValueCents": pl.Int64(),
    "requestedLineCents": pl.Int64(),
    "score": pl.Int32(),
    "tradelines": pl.Int32(),
    "historyMonths": pl.Int32(),
    "unresolvedDisputes": pl.Int32(),
    "keyFactorCodes": pl.List(pl.String()),
}
MONITORING_COLUMNS: dict[str, pl.DataType] = {
    "race": pl.String(),
    "ethnicity": pl.String(),
    "sex": pl.String(),
    "age": pl.Int32(),
    "maritalStatus": pl.String(),
    "publicAssistanceIncome": pl.Boolean(),
}
_MONITORING_FIELDS = {
    "race": "race",
    "ethnicity": "ethnicity",
    "sex": "sex",
    "age": "age",
    "maritalStatus": "marital_status",
    "publicAssistanceIncome": "public_assistance_income",
}
# The columns of a decision row, in order (the decimal scales come from the policy).
DECISION_COLUMNS = (
    "caseId",
    "product",
    "decision",
    "scoreBand",
    "step",
    "dtiPct",
    "ltvPct",
    "apr",
    "amount",
    "termMonths",
    "creditLine",
    "reasonCodes",
    "confidence",
    "errorKind",
    "errorField",
    "error",
)
# The bureau scale a rebuilt report states (a property of the example bureau, not
# policy: see credit.examples.SCORE_RANGE); widened to hold any score the row has.
SCORE_SCALE = (300, 850)
PLACEHOLDER_BUREAU = Bureau(
    name="Not recorded in the batch row",
    address="Not recorded in the batch row",
    phone="Not recorded",
)
_CENTS = 2
_NO_UTILISATION = Decimal("0.0")
_DEC_PRECISION = 38


def cents(value: Decimal) -> int:
    """Money (at most two decimals, as the case format requires) as integer cents."""
    scaled = value.scaleb(_CENTS)
    whole = int(scaled)
    if whole != scaled:
        raise ValueError(f"{value} has more than two decimal places")
    return whole


def from_cents(value: int) -> Decimal:
    """Integer cents as money with exactly two decimals (``2800000`` -> ``28000.00``)."""
    return Decimal(value).scaleb(-_CENTS)


def _scale_of(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    return max(0, -exponent)


def decision_schema(policy: Policy) -> dict[str, pl.DataType]:
    """The polars schema of a decision row under ``policy`` (decimal scales: the
    percent quantum's for DTI and LTV, the APRs' own, cents for money)."""
    pct_scale = _scale_of(policy["rounding.percent"].value)
    aprs = [policy[f"pricing.{p}.{b}.apr"].value for p in ("auto", "card") for b in BANDS]
    apr_scale = max(_scale_of(a) for a in aprs)
    return {
        "caseId": pl.String(),
        "product": pl.String(),
        "decision": pl.String(),
        "scoreBand": pl.String(),
        "step": pl.String(),
        "dtiPct": pl.Decimal(_DEC_PRECISION, pct_scale),
        "ltvPct": pl.Decimal(_DEC_PRECISION, pct_scale),
        "apr": pl.Decimal(_DEC_PRECISION, apr_scale),
        "amount": pl.Decimal(_DEC_PRECISION, _CENTS),
        "termMonths": pl.Int32(),
        "creditLine": pl.Decimal(_DEC_PRECISION, _CENTS),
        "reasonCodes": pl.List(pl.String()),
        "confidence": pl.Decimal(_DEC_PRECISION, 2),
        "errorKind": pl.String(),
        "errorField": pl.String(),
        "error": pl.String(),
    }


# ---------------------------------------------------------------- cases -> rows


def _row_of(case: Case) -> dict[str, Any]:
    app, report = case.application, case.credit_report
    row: dict[str, Any] = {
        "caseId": case.case_id,
        "asOf": case.as_of,
        "product": app.product,
        "annualIncomeCents": cents(app.annual_income),
        "monthlyDebtCents": cents(app.monthly_debt_payments),
        "requestedAmountCents": None
        if app.requested_amount is None
        else cents(app.requested_amount),
        "termMonths": app.term_months,
        "vehicleValueCents": None if app.vehicle_value is None else cents(app.vehicle_value),
        "requestedLineCents": None if app.requested_line is None else cents(app.requested_line),
        "score": report.score,
        "tradelines": report.tradelines,
        "historyMonths": report.history_months,
        "unresolvedDisputes": len(report.unresolved_disputes),
        "keyFactorCodes": [k.code for k in report.key_factors],
    }
    monitoring = case.monitoring
    for column, name in _MONITORING_FIELDS.items():
        row[column] = None if monitoring is None else getattr(monitoring, name)
    return row


def _frame_of_rows(rows: Sequence[Mapping[str, Any]], *, monitoring: bool) -> pl.DataFrame:
    schema = dict(CASE_COLUMNS)
    if monitoring:
        schema.update(MONITORING_COLUMNS)
    columns = {name: [row.get(name) for row in rows] for name in schema}
    return pl.DataFrame(columns, schema=schema)


def cases_to_frame(cases: Iterable[Case], *, monitoring: bool = True) -> pl.DataFrame:
    """Validated cases as flat rows (money in cents; the monitoring columns too unless
    ``monitoring`` is false)."""
    return _frame_of_rows([_row_of(c) for c in cases], monitoring=monitoring)


def documents_to_frame(
    documents: Iterable[Any], *, monitoring: bool = True, source: str | None = None
) -> tuple[pl.DataFrame, list[InputError]]:
    """Case-format documents (parsed JSON) as flat rows, validated one by one with the
    case model; a bad document is left out and its error (naming the document's
    1-based position as its line, the case and the field) returned beside the frame."""
    rows: list[dict[str, Any]] = []
    errors: list[InputError] = []
    for line, document in enumerate(documents, start=1):
        try:
            rows.append(_row_of(parse_case(document)))
        except InputError as err:
            errors.append(err.located(line=line, source=source))
    return _frame_of_rows(rows, monitoring=monitoring), errors


def empty_case_frame(*, monitoring: bool = True) -> pl.DataFrame:
    return _frame_of_rows([], monitoring=monitoring)


# ---------------------------------------------------------------- rows -> cases


def _money(value: int | None) -> Decimal | None:
    return None if value is None else from_cents(value)


class _Rebuild:
    """Builds cases from rows, sharing the parts many rows have alike (a bureau key
    factor, a run of disputes, a monitoring record): they are immutable."""

    def __init__(self, validate: bool) -> None:
        self.validate = validate
        self.factors: dict[str, KeyFactor] = {}
        self.disputes: dict[int, tuple[Dispute, ...]] = {}
        self.monitoring: dict[tuple[Any, ...], MonitoringData | None] = {}

    def factor(self, code: str) -> KeyFactor:
        found = self.factors.get(code)
        if found is None:
            found = KeyFactor(code=code, text=f"Bureau key factor {code}", value="not recorded")
            self.factors[code] = found
        return found

    def dispute_run(self, count: int) -> tuple[Dispute, ...]:
        found = self.disputes.get(count)
        if found is None:
            found = tuple(
                Dispute(tradeline_id=f"T{i}", resolved=False) for i in range(1, count + 1)
            )
            self.disputes[count] = found
        return found

    def monitoring_of(self, row: Mapping[str, Any]) -> MonitoringData | None:
        values = tuple(row.get(column) for column in _MONITORING_FIELDS)
        if values not in self.monitoring:
            fields = {
                name: value
                for (column, name), value in zip(_MONITORING_FIELDS.items(), values, strict=True)
                if value is not None
            }
            self.monitoring[values] = MonitoringData(**fields) if fields else None
        return self.monitoring[values]

    def case(self, row: Mapping[str, Any]) -> Case:
        score = row["score"]
        as_of: dt.date = row["asOf"]
        low, high = SCORE_SCALE
        if score is not None:
            low, high = min(low, score), max(high, score)
        app_fields: dict[str, Any] = {
            "product": row["product"],
            "annual_income": _money(row["annualIncomeCents"]),
            "monthly_debt_payments": _money(row["monthlyDebtCents"]),
            "requested_amount": _money(row["requestedAmountCents"]),
            "term_months": row["termMonths"],
            "vehicle_value": _money(row["vehicleValueCents"]),
            "requested_line": _money(row["requestedLineCents"]),
        }
        report_fields: dict[str, Any] = {
            "bureau": PLACEHOLDER_BUREAU,
            "score": score,
            "score_range": (low, high),
            "score_date": as_of if score is not None else None,
            "tradelines": row["tradelines"],
            "history_months": row["historyMonths"],
            "utilisation_pct": _NO_UTILISATION,
            "inquiries12m": 0,
            "disputes": self.dispute_run(row["unresolvedDisputes"] or 0),
            "key_factors": tuple(self.factor(c) for c in row["keyFactorCodes"] or ()),
        }
        monitoring = self.monitoring_of(row)
        if self.validate:
            return Case(
                case_id=row["caseId"],
                as_of=as_of,
                application=Application(**app_fields),
                credit_report=CreditReport(**report_fields),
                monitoring=monitoring,
            )
        return Case.model_construct(
            case_id=row["caseId"],
            as_of=as_of,
            application=Application.model_construct(**app_fields),
            credit_report=CreditReport.model_construct(
                score_model=None, derogatories=(), **report_fields
            ),
            monitoring=monitoring,
        )


def frame_to_cases(frame: pl.DataFrame, *, validate: bool = True) -> Iterator[Case]:
    """Rebuild a decidable :class:`~credit.models.Case` from each flat row.

    Every field the underwriter reads comes from the row; the rest of the credit
    report (bureau, utilisation, inquiries, key-factor texts) is not in a flat row and
    is filled with stated placeholders, so these cases decide exactly as the originals
    but are not for notices. ``validate=False`` skips the model's validation (for
    rows already checked: the differential runs build a million cases this way).
    """
    rebuild = _Rebuild(validate)
    for row in frame.iter_rows(named=True):
        yield rebuild.case(row)
