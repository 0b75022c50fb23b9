"""A notice's and an expectation's canonical bytes, written by orjson from their fields,
are the canonical encoder's bytes of their wire form.

``Notice.canonical_bytes`` and ``Expectation.canonical_bytes`` hand orjson their fields
(each Decimal as its exact digits) once every value is of a type orjson writes as the
encoder does. Over notices and expectations of any text (quotes, backslashes, control
characters, non-ASCII, a notice's plain ASCII lines), any decimals and any values, both
give the same bytes; a model built without validation, holding a value orjson would
write otherwise (a float: 1e-7 for 1e-07, null for NaN), gets the encoder's bytes or
its error."""

from __future__ import annotations

import datetime as dt
import string
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from credit.canonical import canonical_bytes
from credit.models import Application
from credit.notice_format import (
    Expectation,
    ExpectedReason,
    KeyFactorFacts,
    Notice,
    NoticeReason,
    OfferFacts,
    ScoreFacts,
)
from notice_helpers import COUNTER_AUTO, DECLINE_SCORE, GOLDEN_IDS, notice_and_expectation

# a notice's text: printable ASCII lines (the writer's quick way), or any text
PLAIN = st.text(alphabet=string.printable.replace("\r", "").replace("\x0b", ""), max_size=300)
TEXT = st.one_of(
    PLAIN, st.text(max_size=60), st.sampled_from(['"', "\\", "\x00", "\x7f", "\u2028"])
)
SHORT = st.one_of(st.text(max_size=12), st.sampled_from(["auto loans", "46.2", "C-000001"]))
VALUES = st.dictionaries(SHORT, SHORT, max_size=4)
DECIMALS = st.decimals(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [Decimal("28000.00"), Decimal("-0.00"), Decimal("0E-7"), Decimal("1E+3"), Decimal("NaN")]
)
DATES = st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 12, 31))


def _same(model: Notice | Expectation) -> None:
    """The model's bytes are the encoder's bytes of its wire form, or both raise."""
    try:
        expected: Any = canonical_bytes(model.to_wire())
    except Exception as err:
        with pytest.raises(type(err)):
            model.canonical_bytes()
        return
    assert model.canonical_bytes() == expected


@st.composite
def notices(draw: st.DrawFn) -> Notice:
    reasons = tuple(
        NoticeReason(code=draw(SHORT), category=draw(SHORT), values=draw(VALUES))
        for _ in range(draw(st.integers(0, 4)))
    )
    return Notice(
        case_id=draw(SHORT),
        notice_date=draw(DATES),
        product=draw(st.sampled_from(["auto", "card"])),
        decision=draw(st.sampled_from(["decline", "counteroffer", "approve", "refer"])),
        reasons=reasons,
        frame_sha256=draw(SHORT),
        catalogue_sha256=draw(SHORT),
        text=draw(TEXT),
    )


@st.composite
def expectations(draw: st.DrawFn) -> Expectation:
    # built without validation, so that any decimal and any field left out are tried
    application = Application.model_construct(
        product=draw(st.sampled_from(["auto", "card"])),
        annual_income=draw(DECIMALS),
        monthly_debt_payments=draw(DECIMALS),
        requested_amount=draw(st.none() | DECIMALS),
        term_months=draw(st.none() | st.integers(1, 480)),
        vehicle_value=draw(st.none() | DECIMALS),
        requested_line=draw(st.none() | DECIMALS),
    )
    score = None
    if draw(st.booleans()):
        score = ScoreFacts(
            score=draw(st.integers(300, 850)),
            score_low=300,
            score_high=draw(st.integers(-(2**70), 2**70)),
            score_date=draw(DATES),
            score_model=draw(st.none() | SHORT),
            bureau_name=draw(SHORT),
            bureau_address=draw(TEXT),
            bureau_phone=draw(SHORT),
            key_factors=tuple(
                KeyFactorFacts(code=draw(SHORT), text=draw(TEXT), value=draw(SHORT))
                for _ in range(draw(st.integers(0, 4)))
            ),
        )
    offer = None
    if draw(st.booleans()):
        offer = OfferFacts.model_construct(
            apr=draw(DECIMALS),
            payment=draw(DECIMALS),
            amount=draw(st.none() | DECIMALS),
            term_months=draw(st.none() | st.integers(1, 480)),
            credit_line=draw(st.none() | DECIMALS),
        )
    return Expectation.model_construct(
        case_id=draw(SHORT),
        notice_date=draw(DATES),
        product=draw(st.sampled_from(["auto", "card"])),
        decision=draw(st.sampled_from(["decline", "counteroffer", "approve", "refer"])),
        application=application,
        reasons=tuple(
            ExpectedReason(code=draw(SHORT), values=draw(VALUES))
            for _ in range(draw(st.integers(0, 4)))
        ),
        credit_score=score,
        offer=offer,
    )


@settings(max_examples=400, deadline=None)
@given(notices())
def test_a_notice_of_any_text_and_values_writes_the_encoders_bytes(notice: Notice) -> None:
    _same(notice)


@settings(max_examples=400, deadline=None)
@given(expectations())
def test_an_expectation_of_any_values_and_decimals_writes_the_encoders_bytes(
    expectation: Expectation,
) -> None:
    _same(expectation)


@pytest.mark.parametrize("case_id", GOLDEN_IDS)
def test_the_golden_notices_and_expectations_write_the_encoders_bytes(case_id: str) -> None:
    notice, expectation = notice_and_expectation(case_id)
    assert notice.canonical_bytes() == canonical_bytes(notice.to_wire())
    assert expectation.canonical_bytes() == canonical_bytes(expectation.to_wire())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("case_id", 7),
        ("case_id", True),
        ("case_id", 1e-07),  # orjson would write 1e-7, the encoder 1e-07
        ("frame_sha256", float("nan")),  # orjson would write null, the encoder refuses
        ("text", None),
        ("notice_date", "2026-11-30"),
    ],
)
def test_a_notice_built_without_validation_gets_the_encoders_bytes_or_its_error(
    field: str, value: Any
) -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    _same(Notice.model_construct(**{**dict(notice), field: value}))


def test_an_expectation_with_a_value_the_writer_does_not_know_gets_the_encoders_bytes() -> None:
    _, expectation = notice_and_expectation(COUNTER_AUTO)
    assert expectation.offer is not None
    for apr in (9.99, 1e-07, float("inf")):  # orjson would write 1e-7 and null
        odd = expectation.offer.model_construct(**{**dict(expectation.offer), "apr": apr})
        _same(expectation.model_copy(update={"offer": odd}))
    score = expectation.credit_score
    assert score is not None
    flagged = score.model_construct(**{**dict(score), "score": True})
    _same(expectation.model_copy(update={"credit_score": flagged}))


@pytest.mark.parametrize("value", [1e-07, float("nan"), Decimal("6.49")])
def test_a_reason_value_of_another_type_gets_the_encoders_bytes_or_its_error(
    value: Any,
) -> None:
    # built without validation: a reason's values hold a number, not its text
    notice, expectation = notice_and_expectation(DECLINE_SCORE)
    reason = notice.reasons[0]
    odd = reason.model_construct(**{**dict(reason), "values": {"score": value}})
    _same(notice.model_copy(update={"reasons": (odd, *notice.reasons[1:])}))
    expected = expectation.reasons[0]
    odd_expected = expected.model_construct(**{**dict(expected), "values": {"score": value}})
    _same(expectation.model_copy(update={"reasons": (odd_expected, *expectation.reasons[1:])}))
