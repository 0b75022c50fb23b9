"""The renderer: a notice's machine fields and exact text, its canonical bytes and hash;
the legal frame as strict data; the notice and expectation wire formats."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from credit import PolicyError, canonical_bytes, default_catalogue, loads, sha256_hex
from credit.errors import NoticeInputError
from credit.legal_frame import default_frame, load_frame
from credit.notice_format import parse_expectation, parse_notice
from credit.notices import format_money, render_notice
from notice_helpers import (
    COUNTER_AUTO,
    COUNTER_CARD,
    DECLINE_DTI,
    DECLINE_SCORE,
    changed,
    decided,
    golden_case,
    notice_and_expectation,
)


def test_a_decline_notice_records_the_case_the_decision_and_the_reasons_in_order() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    assert notice.case_id == DECLINE_SCORE
    assert notice.decision == "decline"
    assert notice.notice_date == dt.date(2026, 11, 30)
    assert notice.reason_codes == ("SCORE_BELOW_MINIMUM", "KF_10", "KF_18", "KF_13")
    assert notice.reasons[0].category == "Credit score"
    assert dict(notice.reasons[0].values) == {
        "score": "575",
        "minScore": "600",
        "productName": "auto loans",
    }
    assert "1. Credit score\n   Your credit score of 575 is below our minimum of 600" in notice.text


def test_each_reason_states_the_values_the_decision_states() -> None:
    case, underwriting = decided(golden_case(DECLINE_DTI))
    notice = render_notice(case, underwriting)
    assert [dict(r.values) for r in notice.reasons] == [
        dict(r.values) for r in underwriting.reasons
    ]
    assert f"   {underwriting.reasons[0].text}\n" in notice.text
    assert "44.7% is above our maximum of 40.0% for credit cards." in notice.text


def test_another_approved_variant_can_be_chosen_per_code() -> None:
    case, underwriting = decided(golden_case(DECLINE_DTI))
    notice = render_notice(case, underwriting, variants={"DTI_OVER_CAP": 1})
    second = default_catalogue()["DTI_OVER_CAP"].render(underwriting.reasons[0].values, 1)
    assert f"   {second}\n" in notice.text


def test_money_is_written_with_dollars_separators_and_cents() -> None:
    from decimal import Decimal

    assert format_money(Decimal("24000.00")) == "$24,000.00"
    assert format_money(Decimal("451.9")) == "$451.90"
    assert format_money(Decimal("1234567.89")) == "$1,234,567.89"


def test_an_auto_counteroffer_states_the_offered_terms_and_how_long_the_offer_stands() -> None:
    notice, _ = notice_and_expectation(COUNTER_AUTO)
    assert notice.decision == "counteroffer"
    assert (
        "We can offer you an auto loan of $24,400.00 for 72 months at an annual percentage "
        "rate of 9.99%, with a monthly payment of $451.91." in notice.text
    )
    assert "This offer stands for 30 days, until 2026-12-30." in notice.text
    assert "on the terms you requested" in notice.text


def test_a_card_counteroffer_states_the_offered_line() -> None:
    notice, _ = notice_and_expectation(COUNTER_CARD)
    assert "a credit line of $6,700.00 at an annual percentage rate of 19.99%." in notice.text


def test_the_credit_score_disclosure_names_score_range_date_agency_and_rights() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    for line in (
        "Your credit score: 575",
        "Scores range from a low of 300 to a high of 850.",
        "Date of your credit score: 2026-11-20",
        "Consumer reporting agency: Example Credit Bureau, PO Box 1000, Springfield, ST 00000, "
        "telephone 1-800-555-0100.",
        "did not make this decision and is unable to explain why it was made.",
        "within 60 days of receiving this notice.",
        "You have a right to dispute the accuracy",
    ):
        assert line in notice.text


def test_at_most_four_key_factors_are_disclosed_plus_inquiries_when_one() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    factor_lines = [line for line in notice.text.splitlines() if line.startswith("- ")]
    assert len(factor_lines) == 5
    assert factor_lines[-1] == "- Too many inquiries last 12 months (5 inquiries)"
    without_inquiries = changed(
        golden_case(DECLINE_SCORE),
        "creditReport.keyFactors",
        golden_case(DECLINE_SCORE)["creditReport"]["keyFactors"][:4] * 2,
    )
    notice, _ = notice_and_expectation(without_inquiries)
    assert len([line for line in notice.text.splitlines() if line.startswith("- ")]) == 4


def test_a_score_without_key_factors_says_none_were_reported() -> None:
    notice, _ = notice_and_expectation(COUNTER_CARD)
    assert "- The consumer reporting agency reported no key factors with your score." in (
        notice.text
    )
    assert "Scoring model:" not in notice.text  # the report names no model


def test_the_notice_ends_with_the_ecoa_paragraph_naming_the_agency() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    last = notice.text.rstrip("\n").split("\n\n")[-1]
    assert last.startswith("Notice under the Equal Credit Opportunity Act:\n")
    assert last.endswith(
        "concerning this creditor is Federal Trade Commission, Equal Credit Opportunity, "
        "Washington, DC 20580."
    )
    assert notice.text.endswith(".\n") and not notice.text.endswith("\n\n")


def test_the_notice_text_is_ascii_and_has_no_tabs() -> None:
    for case_id in (DECLINE_SCORE, DECLINE_DTI, COUNTER_AUTO, COUNTER_CARD):
        notice, _ = notice_and_expectation(case_id)
        assert notice.text.isascii() and "\t" not in notice.text and "\r" not in notice.text


def test_the_hash_is_of_the_canonical_bytes_of_the_whole_notice() -> None:
    notice, _ = notice_and_expectation(COUNTER_CARD)
    assert notice.canonical_bytes() == canonical_bytes(notice.to_wire())
    assert notice.sha256 == sha256_hex(notice.canonical_bytes())
    assert notice.frame_sha256 == default_frame().sha256
    assert notice.catalogue_sha256 == default_catalogue().sha256
    edited = notice.model_copy(update={"text": notice.text.replace("$6,700.00", "$6,800.00")})
    assert edited.sha256 != notice.sha256


def test_a_notice_and_an_expectation_read_back_from_their_bytes_are_equal() -> None:
    notice, expectation = notice_and_expectation(COUNTER_AUTO)
    assert parse_notice(loads(notice.canonical_bytes())) == notice
    again = parse_expectation(loads(expectation.canonical_bytes()))
    assert again == expectation
    assert again.sha256 == expectation.sha256


def test_a_notice_missing_a_field_is_rejected_naming_it() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    wire = notice.to_wire()
    del wire["reasons"][0]["values"]
    with pytest.raises(NoticeInputError) as info:
        parse_notice(wire)
    assert info.value.field == "reasons[0].values"
    assert str(info.value) == (
        "case G-DECLINE-DTI, field reasons[0].values: missing field 'reasons[0].values' of "
        "the notice format"
    )


def test_a_notice_with_an_unknown_field_or_a_wrong_kind_is_rejected_naming_it() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    with pytest.raises(NoticeInputError) as info:
        parse_notice({**notice.to_wire(), "approved": True})
    assert info.value.field == "approved"
    assert "unknown field 'approved'" in info.value.message
    with pytest.raises(NoticeInputError) as info:
        parse_notice({**notice.to_wire(), "noticeDate": 20261130})
    assert info.value.field == "noticeDate"
    with pytest.raises(NoticeInputError) as info:
        parse_notice({**notice.to_wire(), "format": "credit.notice/0"})
    assert info.value.field == "format"
    with pytest.raises(NoticeInputError) as info:
        parse_notice([notice.to_wire()])
    assert info.value.message == "a notice must be a JSON object, got list"


def test_an_expectation_with_a_bad_application_is_rejected_naming_the_field() -> None:
    _, expectation = notice_and_expectation(COUNTER_AUTO)
    wire = expectation.to_wire()
    wire["application"]["termMonths"] = "60"
    with pytest.raises(NoticeInputError) as info:
        parse_expectation(wire)
    assert info.value.field == "application.termMonths"


def test_notice_text_with_a_lone_surrogate_is_bad_input_not_a_crash() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    with pytest.raises(NoticeInputError) as info:
        parse_notice({**notice.to_wire(), "text": "bad \ud800 text"})
    assert info.value.field == "text"


def _frame_with(tmp_path: Path, old: str, new: str) -> Path:
    text = Path(default_frame().source).read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "legal-frame.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_the_frame_loader_rejects_a_placeholder_the_template_may_not_use(tmp_path: Path) -> None:
    path = _frame_with(tmp_path, "{agencyName}, {agencyAddress}.", "{agencyName}, {score}.")
    with pytest.raises(PolicyError) as info:
        load_frame(path)
    assert info.value.key == "ecoa.text"
    assert "placeholder {score} is not allowed here" in info.value.message


def test_the_frame_loader_rejects_unknown_keys_and_non_ascii_text(tmp_path: Path) -> None:
    path = _frame_with(tmp_path, "  label: ", "  lable: ")
    with pytest.raises(PolicyError) as info:
        load_frame(path)
    assert info.value.key == "actionTaken.lable"
    path = _frame_with(tmp_path, "NOTICE OF ACTION", "NOTICE OF ACTI\u00d3N")
    with pytest.raises(PolicyError) as info:
        load_frame(path)
    assert (info.value.key, info.value.message) == ("header.title", "frame text must be ASCII")
