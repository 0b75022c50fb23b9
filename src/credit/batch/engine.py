"""The columnar underwriter: a whole portfolio decided column by column.

:func:`decide_frame` gives, for every row of a flat case frame
(:mod:`credit.batch.schema`), exactly what the scalar underwriter
(:func:`credit.underwriting.underwrite`) decides for that case: the decision, the
band, the DTI and LTV as compared and stated, the terms, the reason codes in order,
the confidence and the step, or the error the scalar raises. The methodology steps
are the scalar's, restated on columns (:mod:`credit.batch.columns`):

* step 2, band the score: the highest band whose floor the score reaches; no score
  is ``unscored``; a score under every floor is an undecided case (an error row);
* step 3, capacity: the payment (auto: amortised, :mod:`credit.batch.exact`; card: a
  percentage of the line assessed), DTI and LTV as exact integer quotients in the
  percent quantum's units (:mod:`credit.batch.plan`);
* step 4, decide: each of the policy's steps is a predicate over the columns, the
  same condition the scalar step tests; a row is decided by the first step, in the
  policy's order, whose predicate holds. A row no step decides raises;
* the counteroffer search, vectorised: per allowed term no shorter than the one
  asked, the largest multiple of the step passing the LTV cap has a closed form in
  integers; the largest passing the DTI cap is the closed-form payment bound
  ``P`` inverted in floating point and then settled by exact checks of the two
  neighbouring multiples (the float estimate is within one of the true bound). The
  offer is the largest amount over the terms, ties to the shortest; card: the
  largest multiple of the step below the line assessed whose payment passes the DTI
  cap, in integers;
* step 5, the reasons: the scalar's codes in the policy's factor order, at most
  ``maxReasons``; referrals their own codes; the confidence from the same headroom
  formula, evaluated with the scalar's ``Decimal`` arithmetic once per distinct
  headroom and mapped back onto the rows.

A row with a money figure beyond :data:`credit.batch.exact.FAST_LIMIT` is decided by
the scalar underwriter itself, as are (in the payment only) the rare rows within the
tie tolerance of a half cent, so every row is exact.

**Per Arrow record batch** (a Spark ``mapInArrow`` runner, or any stream):
:func:`decide_record_batch` takes a ``pyarrow.RecordBatch`` of case rows and returns
one of decision rows; :func:`decide_batches` maps an iterator of them;
:func:`decision_arrow_schema` is the output schema to declare.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from credit.batch.columns import decide_columns
from credit.batch.exact import FAST_LIMIT
from credit.batch.plan import BatchPlan, plan_for
from credit.batch.schema import (
    CASE_COLUMNS,
    decision_schema,
    frame_to_cases,
    from_cents,
)
from credit.catalogue import Catalogue
from credit.errors import CreditError, InputError, NotInPolicyError, UndecidedCaseError
from credit.models import Case
from credit.policy import Policy
from credit.underwriting.engine import Underwriting, decide_case

__all__ = [
    "ErrorMode",
    "decide_batches",
    "decide_frame",
    "decide_record_batch",
    "decision_arrow_schema",
    "scalar_decide_frame",
    "underwriting_row",
]

ErrorMode = Literal["mark", "raise"]

_ERROR_COLUMNS = ("errorKind", "errorField", "error")
_PART = 1 << 17  # rows decided at a time within one frame
_CASE_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,64}$"


# ---------------------------------------------------------------- input checks


def _conform(frame: pl.DataFrame) -> pl.DataFrame:
    """The case columns in their schema types (a missing column is an InputError)."""
    missing = [name for name in CASE_COLUMNS if name not in frame.columns]
    if missing:
        raise InputError(
            f"the case frame has no column {missing[0]!r} "
            f"(the flat case schema: {', '.join(CASE_COLUMNS)})",
            field=missing[0],
        )
    return frame.select(
        pl.col(name).cast(dtype, strict=True) if frame.schema[name] != dtype else pl.col(name)
        for name, dtype in CASE_COLUMNS.items()
    )


def _checks(plan: BatchPlan, *, key_factors: bool = True) -> list[tuple[pl.Expr, str]]:
    """Each row check as (condition, ``kind|field``), in the order the scalar path
    meets them: the case's own shape, then the policy's request checks (in force,
    key-factor codes, term, amount, line), then the band. ``key_factors`` false
    leaves out the key-factor check (when no code in the frame is unknown)."""
    c = pl.col
    auto = c("product") == "auto"
    card = c("product") == "card"
    checks: list[tuple[pl.Expr, str]] = [
        (c("caseId").is_null() | ~c("caseId").str.contains(_CASE_ID_PATTERN), "I|caseId"),
        (c("asOf").is_null(), "I|asOf"),
        (~(auto | card).fill_null(False), "I|product"),
        (c("annualIncomeCents").is_null() | (c("annualIncomeCents") <= 0), "I|annualIncomeCents"),
        (c("monthlyDebtCents").is_null() | (c("monthlyDebtCents") < 0), "I|monthlyDebtCents"),
        (
            auto & (c("requestedAmountCents").is_null() | (c("requestedAmountCents") < 0)),
            "I|requestedAmountCents",
        ),
        (auto & (c("termMonths").is_null() | (c("termMonths") <= 0)), "I|termMonths"),
        (
            auto & (c("vehicleValueCents").is_null() | (c("vehicleValueCents") <= 0)),
            "I|vehicleValueCents",
        ),
        (auto & c("requestedLineCents").is_not_null(), "I|requestedLineCents"),
        (
            card & (c("requestedLineCents").is_null() | (c("requestedLineCents") < 0)),
            "I|requestedLineCents",
        ),
        (card & c("requestedAmountCents").is_not_null(), "I|requestedAmountCents"),
        (card & c("termMonths").is_not_null(), "I|termMonths"),
        (card & c("vehicleValueCents").is_not_null(), "I|vehicleValueCents"),
        (c("tradelines").is_null() | (c("tradelines") < 0), "I|tradelines"),
        (c("historyMonths").is_null() | (c("historyMonths") < 0), "I|historyMonths"),
        (c("unresolvedDisputes").is_null() | (c("unresolvedDisputes") < 0), "I|unresolvedDisputes"),
        (c("keyFactorCodes").is_null(), "I|keyFactorCodes"),
        (c("asOf") < pl.lit(plan.effective_date), "P|asOf"),
        *(
            [
                (
                    c("keyFactorCodes")
                    .list.eval(pl.element().is_in(list(plan.key_factor_codes)).not_())
                    .list.any(),
                    "P|keyFactorCodes",
                )
            ]
            if key_factors
            else []
        ),
        (auto & ~c("termMonths").is_in(list(plan.auto.terms)), "P|application.termMonths"),
        (auto & (c("requestedAmountCents") < plan.auto.min_cents), "P|application.requestedAmount"),
        (card & (c("requestedLineCents") < plan.card.min_cents), "P|application.requestedLine"),
        (c("score") < plan.bands[-1][1], "U|scoreBands"),
    ]
    return [(condition.fill_null(False), tag) for condition, tag in checks]


def _problems(df: pl.DataFrame, plan: BatchPlan) -> tuple[pl.Series, npt.NDArray[np.bool_]]:
    """The first problem of each row as ``kind|field``, null for a row with none; and
    whether each row has one.

    The mask of rows with any problem is one pass of boolean columns; only those rows
    (rare) are then tagged with their first problem."""
    unknown = ~df["keyFactorCodes"].explode().drop_nulls().is_in(list(plan.key_factor_codes))
    with_codes = bool(unknown.any())
    # the checks as expressions, built once per plan (an expression is immutable)
    each, first = plan.kept(f"checks {with_codes}", lambda: _check_exprs(plan, with_codes))
    # each check a column of its own, one after another, then any of them: polars runs
    # the parts of one nested expression as tasks of its thread pool, whose hand-offs
    # cost more than the checks themselves (1,000 rows: 1.5 ms as one expression, 0.5 as
    # columns; 20,000 rows: 3.3 and 1.7)
    bad: npt.NDArray[np.bool_] = np.asarray(df.select_seq(each).to_numpy().any(axis=1))
    tags = pl.repeat(None, df.height, dtype=pl.String(), eager=True).rename("problem")
    if not bad.any():
        return tags, bad
    rows = pl.Series(np.flatnonzero(bad))
    found = df[rows].select(first).to_series()
    return tags.scatter(rows, found), bad


def _check_exprs(plan: BatchPlan, key_factors: bool) -> tuple[list[pl.Expr], pl.Expr]:
    """Each check as a column, and a row's first problem's tag (:func:`_checks`)."""
    checks = _checks(plan, key_factors=key_factors)
    first = pl.lit(None, dtype=pl.String())
    for condition, name in reversed(checks):  # built inside out: the first check wins
        first = pl.when(condition).then(pl.lit(name)).otherwise(first)
    return [condition.alias(f"check{i}") for i, (condition, _) in enumerate(checks)], first


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _problem_error(tag: str, row: dict[str, Any], plan: BatchPlan) -> CreditError:
    """The error a problem row carries: for a policy problem, the scalar's own."""
    kind, field = tag.split("|", 1)
    case_id = row["caseId"]
    if kind == "U":
        return UndecidedCaseError(
            f"score {row['score']} is below every band's minimum", case_id=case_id, rule=field
        )
    policy = plan.policy
    if kind == "P":
        if field == "asOf":
            return NotInPolicyError(
                f"policy {policy.label} takes effect {policy.effective_date}, after the case "
                f"date {row['asOf']}",
                case_id=case_id,
                field="asOf",
            )
        if field == "keyFactorCodes":
            codes = row["keyFactorCodes"]
            i = next(i for i, code in enumerate(codes) if code not in plan.key_factor_codes)
            cat = plan.catalogue
            return NotInPolicyError(
                f"bureau key-factor code {codes[i]!r} is not in the reason catalogue "
                f"{cat.name} v{cat.version}",
                case_id=case_id,
                field=f"creditReport.keyFactors[{i}].code",
            )
        if field == "application.termMonths":
            allowed = ", ".join(str(t) for t in plan.auto.terms)
            return NotInPolicyError(
                f"term of {row['termMonths']} months is not offered (allowed: {allowed})",
                case_id=case_id,
                field=field,
            )
        if field == "application.requestedAmount":
            return NotInPolicyError(
                f"amount {from_cents(row['requestedAmountCents'])} is below the product "
                f"minimum {policy['products.auto.minAmount'].value}",
                case_id=case_id,
                field=field,
            )
        return NotInPolicyError(
            f"line {from_cents(row['requestedLineCents'])} is below the product minimum "
            f"{policy['products.card.minLine'].value}",
            case_id=case_id,
            field=field,
        )
    value = row.get(field)
    product = row.get("product")
    if value is None:
        message = f"{field} is required" + (
            f" for {'an' if product == 'auto' else 'a'} {product} application"
            if product in ("auto", "card")
            else ""
        )
    elif field in (
        "requestedLineCents",
        "requestedAmountCents",
        "termMonths",
        "vehicleValueCents",
    ) and ((product == "auto") == (field == "requestedLineCents")):
        message = (
            f"{field} is not allowed on {'an' if product == 'auto' else 'a'} {product} application"
        )
    elif field == "caseId":
        message = f"a case id is 1 to 64 of A-Z a-z 0-9 . _ : - (got {_shown(value)})"
    elif field == "product":
        message = f"product must be auto or card (got {_shown(value)})"
    elif field in ("annualIncomeCents", "termMonths", "vehicleValueCents"):
        message = f"{field} must be greater than 0 (got {value})"
    else:
        message = f"{field} must be at least 0 (got {value})"
    return InputError(message, case_id=case_id if isinstance(case_id, str) else None, field=field)


def _error_row(case_id: object, err: CreditError) -> dict[str, Any]:
    if isinstance(err, UndecidedCaseError):
        kind, field, message = "UndecidedCaseError", err.rule, err.message
    elif isinstance(err, InputError):
        kind, field, message = type(err).__name__, err.field, err.message
    else:  # pragma: no cover - every error the underwriter raises is one of the above
        kind, field, message = type(err).__name__, None, str(err)
    return {
        "caseId": case_id,
        "errorKind": kind,
        "errorField": field,
        "error": message,
    }


# ---------------------------------------------------------------- the scalar path


def underwriting_row(u: Underwriting) -> dict[str, Any]:
    """One scalar underwriting as a decision row (the columnar output's form)."""
    d = u.decision
    terms = d.terms
    return {
        "caseId": u.case_id,
        "product": d.product,
        "decision": d.decision,
        "scoreBand": d.score_band,
        "step": u.step,
        "dtiPct": d.dti_pct,
        "ltvPct": d.ltv_pct,
        "apr": terms.apr if terms else None,
        "amount": terms.amount if terms else None,
        "termMonths": terms.term_months if terms else None,
        "creditLine": terms.credit_line if terms else None,
        "reasonCodes": list(u.reason_codes),
        "confidence": d.confidence,
        "errorKind": None,
        "errorField": None,
        "error": None,
    }


def _scalar_row(case: Case, policy: Policy, catalogue: Catalogue | None) -> dict[str, Any]:
    try:
        return underwriting_row(decide_case(case, policy, catalogue))
    except (InputError, UndecidedCaseError) as err:
        return _error_row(case.case_id, err)


def _rows_frame(rows: list[dict[str, Any]], policy: Policy) -> pl.DataFrame:
    schema = decision_schema(policy)
    return pl.DataFrame({name: [r.get(name) for r in rows] for name in schema}, schema=schema)


def scalar_decide_frame(
    frame: pl.DataFrame,
    policy: Policy,
    *,
    catalogue: Catalogue | None = None,
    validate: bool = False,
) -> pl.DataFrame:
    """The same decision rows from the scalar underwriter, one case at a time (the
    reference the columnar underwriter is checked against)."""
    cases = frame_to_cases(frame, validate=validate)
    return _rows_frame([_scalar_row(case, policy, catalogue) for case in cases], policy)


# ---------------------------------------------------------------- the columnar path


def decide_frame(
    frame: pl.DataFrame,
    policy: Policy,
    *,
    catalogue: Catalogue | None = None,
    errors: ErrorMode = "mark",
) -> pl.DataFrame:
    """Decide every row of a flat case frame; one decision row per case, in order.

    The result has the columns of :func:`credit.batch.schema.decision_schema`. A row
    that cannot be decided (a malformed row, a request the policy does not offer, a
    score under every band) gets null decision columns and its error's kind, field
    and message (``errors="mark"``, the default: a bad row never stops a batch); with
    ``errors="raise"`` the first such row raises the scalar underwriter's error.
    """
    plan = plan_for(policy, catalogue)
    df = _conform(frame)
    if df.height <= _PART:
        return _decide_part(df, plan, catalogue, errors)
    # in parts: the working columns of one part stay in cache and memory stays flat
    parts = [
        _decide_part(df.slice(start, _PART), plan, catalogue, errors)
        for start in range(0, df.height, _PART)
    ]
    return pl.concat(parts, how="vertical", rechunk=False)


def _decide_part(
    df: pl.DataFrame, plan: BatchPlan, catalogue: Catalogue | None, errors: ErrorMode
) -> pl.DataFrame:
    """Decide a conformed frame (one part of a batch): the rows with a problem get
    their error, the rows beyond the fast range the scalar underwriter's decision,
    every other row the columns' decision, each in its place."""
    policy = plan.policy
    schema = decision_schema(policy)
    money = [
        "annualIncomeCents",
        "monthlyDebtCents",
        "requestedAmountCents",
        "vehicleValueCents",
        "requestedLineCents",
    ]
    tags, bad = _problems(df, plan)
    # each column's test an expression of its own (see _problems)
    slow = (
        df.select_seq([(pl.col(m).abs() > FAST_LIMIT).fill_null(False) for m in money])
        .to_numpy()
        .any(axis=1)
    )
    error_columns = [pl.lit(None, dtype=pl.String()).alias(n) for n in _ERROR_COLUMNS]
    if not (bad | slow).any():
        decided = decide_columns(df, plan).with_columns(df["caseId"], df["product"], *error_columns)
        return decided.select(list(schema))
    special = pl.Series(bad | slow)
    patches: list[dict[str, Any]] = []
    for index, row in zip(
        special.arg_true(), df.filter(special).iter_rows(named=True), strict=True
    ):
        tag = tags[index]
        if tag is not None:
            err = _problem_error(tag, row, plan)
            if errors == "raise":
                raise err
            patches.append(_error_row(row["caseId"], err))
        else:
            case = next(frame_to_cases(pl.DataFrame([row], schema=df.schema), validate=False))
            patches.append(_scalar_row(case, policy, catalogue))
    patched = _rows_frame(patches, policy)
    ok = (~special).arg_true()
    parts = [patched]
    if len(ok):
        fast = df[ok]
        decided = decide_columns(fast, plan).with_columns(
            fast["caseId"], fast["product"], *error_columns
        )
        parts.insert(0, decided.select(list(schema)))
    # put every row back in its place: row i of the result is the part row whose
    # original position is i
    positions = np.concatenate([ok.to_numpy(), special.arg_true().to_numpy()])
    order = np.empty(len(positions), dtype=np.int64)
    order[positions] = np.arange(len(positions))
    # one chunk first: a gather across chunks of a list column is many times slower
    return pl.concat(parts, how="vertical", rechunk=True)[pl.Series(order)]


# ---------------------------------------------------------------- Arrow record batches


def decision_arrow_schema(policy: Policy) -> pa.Schema:
    """The Arrow schema of the decision rows (what a mapInArrow runner declares)."""
    empty = pl.DataFrame(schema=decision_schema(policy))
    return empty.to_arrow().schema


def decide_record_batch(
    batch: pa.RecordBatch,
    policy: Policy,
    *,
    catalogue: Catalogue | None = None,
) -> pa.RecordBatch:
    """Decide one Arrow record batch of case rows; a record batch of decision rows."""
    frame = pl.from_arrow(batch)
    assert isinstance(frame, pl.DataFrame)
    table = decide_frame(frame, policy, catalogue=catalogue).to_arrow()
    table = table.cast(decision_arrow_schema(policy))
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def decide_batches(
    batches: Iterable[pa.RecordBatch],
    policy: Policy,
    *,
    catalogue: Catalogue | None = None,
) -> Iterator[pa.RecordBatch]:
    """Map an iterator of case record batches to decision record batches (the shape
    of a Spark ``mapInArrow`` function: ``lambda it: decide_batches(it, policy)``)."""
    for batch in batches:
        yield decide_record_batch(batch, policy, catalogue=catalogue)
