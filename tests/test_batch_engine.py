"""The columnar underwriter's own rules: the flat schema and its converters, the
error rows, the scalar path for money beyond the fast range, the Arrow record-batch
interface, and the policies it refuses to restate."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from batch_support import policy_with
from conftest import POLICY, auto_case, card_case, key_factor
from credit.batch import (
    CASE_COLUMNS,
    cases_to_frame,
    decide_batches,
    decide_frame,
    decide_record_batch,
    decision_arrow_schema,
    decision_schema,
    documents_to_frame,
    frame_to_cases,
    scalar_decide_frame,
)
from credit.batch.differential import differences
from credit.batch.exact import FAST_LIMIT
from credit.batch.generate import generate_frame
from credit.errors import InputError, NotInPolicyError, PolicyError, UndecidedCaseError
from credit.models import parse_case
from credit.underwriting import decide_case


def _frame(*documents: dict[str, object]) -> pl.DataFrame:
    return cases_to_frame(parse_case(d) for d in documents)


def _row(frame: pl.DataFrame) -> dict[str, object]:
    return decide_frame(frame, POLICY).row(0, named=True)


def test_an_approved_auto_case_states_the_scalar_figures_as_exact_decimals() -> None:
    case = parse_case(auto_case())
    row = _row(cases_to_frame([case]))
    want = decide_case(case, POLICY).decision
    assert row["decision"] == "approve" and row["step"] == "approve"
    assert want.terms is not None
    assert (row["dtiPct"], row["ltvPct"], row["apr"]) == (
        want.dti_pct,
        want.ltv_pct,
        want.terms.apr,
    )
    assert (row["amount"], row["termMonths"]) == (Decimal("20000.00"), 60)
    assert row["creditLine"] is None and row["reasonCodes"] == []
    assert row["confidence"] == want.confidence
    assert all(isinstance(row[k], Decimal) for k in ("dtiPct", "ltvPct", "apr", "amount"))


def test_a_thin_unscored_file_is_referred_with_the_scalar_codes_in_order() -> None:
    case = card_case(
        score=None,
        tradelines=1,
        history_months=5,
        disputes=[{"tradelineId": "T1", "resolved": False}],
    )
    row = _row(_frame(case))
    assert row["decision"] == "refer" and row["scoreBand"] == "unscored"
    assert row["reasonCodes"] == [
        "REFER_NO_SCORE",
        "REFER_FEW_TRADELINES",
        "REFER_SHORT_HISTORY",
        "REFER_UNRESOLVED_DISPUTE",
    ]
    assert row["confidence"] == Decimal("0.50")


def test_a_decline_on_the_score_states_the_bureau_key_factors_after_the_failures_at_most_four() -> (
    None
):
    case = auto_case(
        score=560,
        debt="6000.00",
        key_factors=[key_factor("10"), key_factor("08"), key_factor("14"), key_factor("01")],
    )
    row = _row(_frame(case))
    assert row["decision"] == "decline"
    assert row["reasonCodes"] == ["SCORE_BELOW_MINIMUM", "DTI_OVER_CAP", "KF_10", "KF_08"]
    assert row["reasonCodes"] == list(decide_case(parse_case(case), POLICY).reason_codes)


def test_rows_that_cannot_be_decided_carry_the_scalar_error_and_keep_their_place() -> None:
    documents = [
        auto_case(case_id="OK-1"),
        auto_case(case_id="BAD-TERM", term=84),
        card_case(case_id="LOW-LINE", line="400.00"),
        auto_case(case_id="OK-2", amount="30000.00"),
        auto_case(case_id="EARLY", as_of="2025-06-30"),
        auto_case(case_id="KF", key_factors=[key_factor("10"), key_factor("99")]),
        auto_case(case_id="LOW-SCORE", score=250, score_range=(200, 850)),
    ]
    frame = _frame(*documents)
    got = decide_frame(frame, POLICY)
    assert got["caseId"].to_list() == [d["caseId"] for d in documents]
    assert got.equals(scalar_decide_frame(frame, POLICY)), differences(
        got, scalar_decide_frame(frame, POLICY)
    )
    errors = dict(
        zip(got["caseId"], zip(got["errorKind"], got["errorField"], strict=True), strict=True)
    )
    assert errors == {
        "OK-1": (None, None),
        "BAD-TERM": ("NotInPolicyError", "application.termMonths"),
        "LOW-LINE": ("NotInPolicyError", "application.requestedLine"),
        "OK-2": (None, None),
        "EARLY": ("NotInPolicyError", "asOf"),
        "KF": ("NotInPolicyError", "creditReport.keyFactors[1].code"),
        "LOW-SCORE": ("UndecidedCaseError", "scoreBands"),
    }
    assert got.filter(pl.col("caseId") == "BAD-TERM")["error"][0] == (
        "term of 84 months is not offered (allowed: 36, 48, 60, 72)"
    )
    assert got.filter(pl.col("errorKind").is_not_null())["decision"].null_count() == 5


def test_errors_raise_mode_raises_the_scalar_error_of_the_first_bad_row() -> None:
    frame = _frame(
        auto_case(case_id="OK"),
        auto_case(case_id="T", term=30),
        card_case(case_id="L", line="100.00"),
    )
    with pytest.raises(NotInPolicyError) as caught:
        decide_frame(frame, POLICY, errors="raise")
    assert (caught.value.case_id, caught.value.field) == ("T", "application.termMonths")
    low = _frame(auto_case(case_id="S", score=250, score_range=(200, 850)))
    with pytest.raises(UndecidedCaseError, match="score 250 is below every band's minimum"):
        decide_frame(low, POLICY, errors="raise")


def test_a_malformed_row_names_its_case_and_field() -> None:
    frame = _frame(auto_case(case_id="A1"), card_case(case_id="C1")).with_columns(
        annualIncomeCents=pl.Series([0, 5_000_000]),
        termMonths=pl.Series([60, 36], dtype=pl.Int32),
    )
    got = decide_frame(frame, POLICY)
    assert got.select("caseId", "errorKind", "errorField", "error").rows() == [
        (
            "A1",
            "InputError",
            "annualIncomeCents",
            "annualIncomeCents must be greater than 0 (got 0)",
        ),
        ("C1", "InputError", "termMonths", "termMonths is not allowed on a card application"),
    ]
    with pytest.raises(InputError) as caught:
        decide_frame(frame, POLICY, errors="raise")
    assert (caught.value.case_id, caught.value.field) == ("A1", "annualIncomeCents")


def test_a_frame_without_a_schema_column_is_refused_naming_the_column() -> None:
    frame = _frame(auto_case()).drop("historyMonths")
    with pytest.raises(InputError) as caught:
        decide_frame(frame, POLICY)
    assert caught.value.field == "historyMonths"


def test_money_beyond_the_fast_range_is_decided_by_the_scalar_underwriter() -> None:
    big = auto_case(
        case_id="BIG",
        income=Decimal(FAST_LIMIT) / 4,
        amount=Decimal(FAST_LIMIT) / 20,
        value=Decimal(FAST_LIMIT) / 10,
    )
    frame = _frame(auto_case(case_id="SMALL"), big)
    got = decide_frame(frame, POLICY)
    assert got.equals(scalar_decide_frame(frame, POLICY))
    assert got["decision"].to_list() == ["approve", "approve"]


def test_the_case_converters_round_trip_every_field_the_underwriter_reads() -> None:
    frame = generate_frame(7, 1_500)
    again = cases_to_frame(frame_to_cases(frame))
    assert again.equals(frame)
    unchecked = cases_to_frame(frame_to_cases(frame, validate=False))
    assert unchecked.equals(frame)


def test_case_documents_become_rows_and_a_bad_document_is_named_by_its_position() -> None:
    good = auto_case(case_id="G")
    bad = card_case(case_id="B")
    bad["application"]["requestedLine"] = "12.345"  # type: ignore[index]
    frame, errors = documents_to_frame([good, bad, good], source="cases.jsonl")
    assert frame.height == 2 and frame.columns[: len(CASE_COLUMNS)] == list(CASE_COLUMNS)
    assert [(e.line, e.case_id, e.field) for e in errors] == [(2, "B", "application.requestedLine")]
    assert frame["annualIncomeCents"][0] == 12_000_000
    assert frame["asOf"][0] == dt.date(2026, 11, 30)


def test_a_record_batch_is_decided_into_the_declared_arrow_schema() -> None:
    frame = generate_frame(3, 800)
    batches = frame.to_arrow().to_batches(max_chunksize=300)
    out = list(decide_batches(iter(batches), POLICY))
    assert [b.num_rows for b in out] == [b.num_rows for b in batches]
    schema = decision_arrow_schema(POLICY)
    assert all(b.schema == schema for b in out)
    table = pa.Table.from_batches(out, schema=schema)
    whole = decide_frame(frame, POLICY)
    assert pl.from_arrow(table).equals(whole)  # type: ignore[union-attr]
    nothing = pa.RecordBatch.from_pylist([], schema=frame.to_arrow().schema)
    empty = decide_record_batch(nothing, POLICY)
    assert empty.num_rows == 0 and empty.schema == schema


def test_the_decision_schema_follows_the_policy_quanta(tmp_path: Path) -> None:
    schema = decision_schema(POLICY)
    assert schema["dtiPct"] == pl.Decimal(38, 1) and schema["apr"] == pl.Decimal(38, 2)
    finer = policy_with({"rounding.percent": "0.01", "pricing.card.prime.apr": "19.995"}, tmp_path)
    schema = decision_schema(finer)
    assert schema["dtiPct"] == pl.Decimal(38, 2) and schema["apr"] == pl.Decimal(38, 3)


def test_a_policy_the_batch_cannot_restate_in_cents_is_refused_naming_the_key(
    tmp_path: Path,
) -> None:
    odd = policy_with({"products.auto.counterofferStep": "100.005"}, tmp_path, "odd-step")
    with pytest.raises(PolicyError) as caught:
        decide_frame(_frame(auto_case()), odd)
    assert caught.value.key == "products.auto.counterofferStep"
    fine = policy_with({"rounding.money": "0.001"}, tmp_path, "mills")
    with pytest.raises(PolicyError) as caught:
        decide_frame(_frame(auto_case()), fine)
    assert caught.value.key == "rounding.money"


def test_a_frame_decided_in_parts_is_the_frame_decided_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from credit.batch import engine

    frame = generate_frame(13, 2_600)
    whole = decide_frame(frame, POLICY)
    monkeypatch.setattr(engine, "_PART", 700)
    parts = decide_frame(frame, POLICY)
    assert parts.equals(whole)
    assert whole["errorKind"].null_count() < whole.height  # error rows among the parts


def test_what_a_batch_derives_from_the_plan_alone_is_made_once_and_shared(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The reason tables and the row checks are built on a plan's first batch and read
    by every batch after it, which decides as the scalar underwriter does; the shared
    tables cannot be written to by a batch."""
    from credit.batch import columns, engine
    from credit.batch.plan import plan_for

    policy = policy_with({}, tmp_path)  # a plan of its own, built in this test
    made: list[str] = []
    for module, name in ((columns, "_reason_tables"), (engine, "_check_exprs")):
        original = getattr(module, name)

        def counted(*args: object, _original: object = original, _name: str = name) -> object:
            made.append(_name)
            return _original(*args)  # type: ignore[operator]

        monkeypatch.setattr(module, name, counted)
    first, second = generate_frame(21, 600), generate_frame(22, 600)
    for frame in (first, second):
        assert not differences(decide_frame(frame, policy), scalar_decide_frame(frame, policy))
    assert made.count("_reason_tables") == 1
    # the checks: once for frames whose key factor codes are all known, once for others
    assert 1 <= made.count("_check_exprs") <= 2
    before = list(made)
    assert decide_frame(first, policy).equals(decide_frame(first, policy))
    assert made == before  # nothing made again
    tables = plan_for(policy).kept("reason tables", lambda: pytest.fail("not kept"))
    with pytest.raises(ValueError, match="read-only"):
        tables.pre[0, 0] = 1


def test_a_plan_made_from_another_starts_with_nothing_kept(tmp_path: Path) -> None:
    """What a plan keeps is its own: a plan made from it with other values (as
    ``dataclasses.replace`` makes one) builds its tables again."""
    import dataclasses

    from credit.batch.plan import plan_for

    plan = plan_for(policy_with({}, tmp_path))  # not the shared policy's plan
    plan.kept("a test's table", lambda: "the first plan's")
    other = dataclasses.replace(plan, max_reasons=plan.max_reasons - 1)
    assert other.kept("a test's table", lambda: "its own") == "its own"
    assert plan.kept("a test's table", lambda: "not made again") == "the first plan's"


def test_a_plan_is_made_once_per_policy_and_catalogue(tmp_path: Path) -> None:
    from credit.batch import plan as plans
    from credit.catalogue import default_catalogue, load_catalogue

    policy = policy_with({}, tmp_path)
    catalogue = default_catalogue()
    other = load_catalogue(catalogue.source)  # the same file, another object
    first = plans.plan_for(policy, catalogue)
    assert plans.plan_for(policy, catalogue) is first
    assert plans.plan_for(policy) is first  # the default catalogue is that object
    assert plans.plan_for(policy, other) is not first
    assert plans.plan_for(policy, other) is plans.plan_for(policy, other)
    assert plans.plan_for(policy_with({}, tmp_path, "another"), catalogue) is not first


def test_a_planned_policy_is_let_go_once_others_are_planned(tmp_path: Path) -> None:
    # a plan holds its policy, so its entry keeps it alive: only the policies planned
    # most recently are kept, and one planned before them goes when nothing holds it
    import gc
    import weakref

    from credit.batch import plan as plans

    policy = policy_with({}, tmp_path)
    plans.plan_for(policy)
    gone = weakref.ref(policy)
    del policy
    gc.collect()
    assert gone() is not None  # kept with its plan
    for n in range(plans.PLANNED_POLICIES):
        plans.plan_for(policy_with({}, tmp_path, f"other-{n}"))
    gc.collect()
    assert gone() is None
