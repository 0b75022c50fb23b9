"""The case file (input contract) and the Decision (outcome contract) as value objects.

Unknown fields are errors naming the field; money is read exactly; the Decision's wire
form is exactly the seed's schema, with numbers written with the digits they carry.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from conftest import auto_case, card_case, decide, key_factor, with_changes
from credit import Decision, InputError, dumps, loads, parse_case, parse_decision
from credit.cases import read_case_lines

D = Decimal
WIRE_KEYS = [
    "product",
    "decision",
    "terms",
    "scoreBand",
    "dtiPct",
    "ltvPct",
    "policyBasis",
    "factors",
    "confidence",
]


def input_error(case: Any) -> InputError:
    with pytest.raises(InputError) as info:
        parse_case(case)
    return info.value


# ----------------------------------------------------------------------------- unknown fields


@pytest.mark.parametrize(
    "path",
    [
        "colour",
        "application.downPayment",
        "creditReport.ficoBonus",
        "creditReport.bureau.fax",
        "monitoring.shoeSize",
    ],
)
def test_an_unknown_field_anywhere_is_rejected_naming_the_field(path: str) -> None:
    case = auto_case()
    if path.startswith("monitoring."):
        case["monitoring"] = {"race": "declined to state"}
    err = input_error(with_changes(case, path, "x"))
    assert err.field == path
    assert err.case_id == "C-AUTO"
    assert f"unknown field '{path}'" in str(err)


def test_an_unknown_field_inside_a_list_is_named_with_its_index() -> None:
    case = auto_case(key_factors=[key_factor("10"), key_factor("14")])
    case["creditReport"]["keyFactors"][1]["weight"] = 3
    assert input_error(case).field == "creditReport.keyFactors[1].weight"


def test_a_known_case_with_optional_monitoring_data_is_accepted() -> None:
    case = with_changes(auto_case(), "monitoring", {"age": 41, "publicAssistanceIncome": False})
    assert parse_case(case).monitoring is not None


# ----------------------------------------------------------------------------- products


@pytest.mark.parametrize("missing", ["requestedAmount", "termMonths", "vehicleValue"])
def test_an_auto_application_needs_amount_term_and_vehicle_value(missing: str) -> None:
    err = input_error(with_changes(auto_case(), f"application.{missing}", ...))
    assert err.field == f"application.{missing}"
    assert f"{missing} is required for an auto application" in str(err)


def test_a_card_application_needs_a_requested_line() -> None:
    err = input_error(with_changes(card_case(), "application.requestedLine", ...))
    assert err.field == "application.requestedLine"
    assert "requestedLine is required for a card application" in str(err)


@pytest.mark.parametrize(
    ("product", "field", "value"),
    [
        ("card", "termMonths", 60),
        ("card", "requestedAmount", "20000.00"),
        ("card", "vehicleValue", "25000.00"),
        ("auto", "requestedLine", "5000.00"),
    ],
)
def test_a_field_of_the_other_product_is_not_allowed(product: str, field: str, value: Any) -> None:
    case = auto_case() if product == "auto" else card_case()
    err = input_error(with_changes(case, f"application.{field}", value))
    article = "an" if product == "auto" else "a"
    assert err.field == f"application.{field}"
    assert f"{field} is not allowed on {article} {product} application" in str(err)


def test_a_product_other_than_auto_or_card_is_rejected() -> None:
    err = input_error(with_changes(auto_case(), "application.product", "mortgage"))
    assert err.field == "application.product"
    assert "'mortgage'" in str(err)


# ----------------------------------------------------------------------------- score


@pytest.mark.parametrize(("score", "ok"), [(299, False), (300, True), (850, True), (851, False)])
def test_a_score_outside_the_bureaus_range_is_rejected(score: int, ok: bool) -> None:
    case = auto_case(score=score)
    if ok:
        assert parse_case(case).credit_report.score == score
        return
    err = input_error(case)
    assert err.field is not None and err.field.startswith("creditReport")
    assert err.field == "creditReport.score"
    assert f"score {score} is outside scoreRange [300, 850]" in str(err)


def test_a_score_must_be_an_integer_not_text() -> None:
    err = input_error(auto_case(score="720"))  # type: ignore[arg-type]
    assert err.field == "creditReport.score"


def test_no_score_is_allowed_and_means_unscored() -> None:
    assert parse_case(auto_case(score=None)).credit_report.score is None


# ----------------------------------------------------------------------------- money


@pytest.mark.parametrize(
    "raw",
    [
        '"84000.10"',  # a decimal string
        "84000.10",  # a JSON number, read as a Decimal, not through a float
    ],
)
def test_money_as_a_string_or_a_number_is_read_exactly(raw: str) -> None:
    text = json.dumps(auto_case()).replace('"120000.00"', raw)
    case = parse_case(loads(text))
    assert case.application.annual_income == D("84000.10")
    assert str(case.application.annual_income) == "84000.10"


def test_a_large_money_number_keeps_every_digit() -> None:
    """1234567890123456.78 has more digits than a float carries."""
    text = json.dumps(auto_case()).replace('"120000.00"', "1234567890123456.78")
    assert str(parse_case(loads(text)).application.annual_income) == "1234567890123456.78"


def test_money_read_from_a_batch_file_is_exact(tmp_path: Any) -> None:
    line = json.dumps(card_case()).replace('"1000.00"', "1000.10").replace('"5000.00"', "4999.99")
    path = tmp_path / "batch.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    (entry,) = read_case_lines(path)
    assert entry.case is not None
    assert entry.case.application.monthly_debt_payments == D("1000.10")
    assert str(entry.case.application.requested_line) == "4999.99"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("annualIncome", "84000.001"),  # sub-cent money
        ("annualIncome", "0.00"),  # no income: DTI undefined
        ("monthlyDebtPayments", "-1.00"),
        ("annualIncome", "NaN"),
        ("termMonths", "60"),  # a count is an integer, not text
    ],
)
def test_money_and_counts_that_are_not_exact_and_sensible_are_rejected(
    field: str, value: str
) -> None:
    err = input_error(with_changes(auto_case(), f"application.{field}", value))
    assert err.field == f"application.{field}"


# ----------------------------------------------------------------------------- Decision wire


def test_an_auto_decision_on_the_wire_has_exactly_the_schema_keys_in_order() -> None:
    wire = decide(auto_case()).decision.to_wire()
    assert list(wire) == WIRE_KEYS
    assert wire["terms"] == {"apr": D("6.49"), "amount": D("20000.00"), "termMonths": 60}
    assert wire["ltvPct"] == D("80.0")
    assert isinstance(wire["policyBasis"], list) and isinstance(wire["factors"], list)


def test_a_card_decision_carries_a_null_ltv_and_its_line() -> None:
    wire = decide(card_case()).decision.to_wire()
    assert list(wire) == WIRE_KEYS
    assert wire["ltvPct"] is None
    assert wire["terms"] == {"apr": D("19.99"), "creditLine": D("5000.00")}
    assert '"ltvPct":null' in dumps(wire)


def test_a_referral_or_decline_on_the_wire_carries_no_terms() -> None:
    for case in (auto_case(score=600), auto_case(score=500)):
        wire = decide(case).decision.to_wire()
        assert list(wire) == [k for k in WIRE_KEYS if k != "terms"]


def test_decision_numbers_are_written_exactly_with_apr_in_percent() -> None:
    text = dumps(decide(auto_case()).decision.to_wire())
    assert '"terms":{"apr":6.49,"amount":20000.00,"termMonths":60}' in text
    assert '"dtiPct":13.9' in text  # (1,000.00 + 391.23) / 10,000.00
    assert '"ltvPct":80.0' in text
    assert '"scoreBand":"prime"' in text
    assert text.endswith(f'"confidence":{decide(auto_case()).decision.confidence}}}')
    parsed = json.loads(text, parse_float=str)
    assert parsed["terms"]["apr"] == "6.49"  # a percentage, not a 0.0649 fraction


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"product": "card", "ltvPct": D("80.0")}, "ltvPct is for auto only"),
        ({"terms": None}, "terms are required for approve"),
        ({"confidence": D("1.01")}, "less than or equal to 1"),
        ({"scoreBand": "gold"}, "'gold'"),
        ({"riskGrade": "A"}, "unknown field 'decision.riskGrade'"),
    ],
)
def test_a_decision_that_breaks_the_schema_is_rejected(
    change: dict[str, Any], message: str
) -> None:
    wire = decide(auto_case()).decision.to_wire()
    wire.update(change)
    if wire.get("terms") is None:
        wire.pop("terms")
    with pytest.raises(InputError) as info:
        parse_decision(wire)
    assert message in str(info.value)


def test_a_decline_with_terms_is_not_a_valid_decision() -> None:
    wire = decide(auto_case(score=500)).decision.to_wire()
    wire["terms"] = {"apr": D("6.49")}
    with pytest.raises(InputError, match="a decline carries no terms"):
        parse_decision(wire)


def test_decisions_are_immutable() -> None:
    decision = decide(auto_case()).decision
    with pytest.raises(ValidationError):
        decision.decision = "decline"  # type: ignore[misc]
    assert isinstance(decision, Decision)


# ------------------------------------------------------------------------ a recorded decision


def test_a_recorded_decision_is_parsed_once_for_each_entry_while_it_lives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """recorded_decision: the Decision a decision entry records, read once for that
    entry while it lives (Backstop, Equipoise, its pool and the ethics review share it);
    another entry, even with the same payload, is read again; a payload that is not a
    decision is refused each time, naming the entry's case."""
    from credit import models
    from credit.journal.base import Entry
    from credit.kept import KeptPer

    parsed: list[str | None] = []
    real = models.parse_decision

    def counted(entry: Any) -> Decision:
        parsed.append(entry.case_id)
        return real(entry.payload.get("decision"), case_id=entry.case_id)

    monkeypatch.setattr(models, "_recorded", KeptPer(counted))

    def entry(case_id: str, payload: dict[str, Any]) -> Entry:
        return Entry(
            seq=1,
            case_id=case_id,
            kind="decision.recorded",
            payload=payload,
            prev_hash="0" * 64,
            recorded_at="2026-01-01T00:00:00Z",
            hash="1" * 64,
        )

    wire = decide(auto_case()).decision.to_wire()
    first = entry("R-1", {"decision": wire, "status": "held"})
    decision = models.recorded_decision(first)
    assert decision == parse_decision(wire)
    assert models.recorded_decision(first) is decision  # the same entry: read once
    again = entry("R-1", {"decision": wire, "status": "held"})
    assert models.recorded_decision(again) == decision  # another entry: read again
    assert parsed == ["R-1", "R-1"]
    kept = models._recorded._kept
    assert len(kept) == 2
    del again  # an entry gone takes what was read from it along
    assert len(kept) == 1
    for payload in ({"decision": {**wire, "riskGrade": "A"}}, {"status": "held"}):
        broken = entry("R-2", payload)
        for _ in range(2):
            with pytest.raises(InputError) as info:
                models.recorded_decision(broken)
            assert info.value.case_id == "R-2"
    assert len(kept) == 1  # nothing kept for an entry that records no decision


# ----------------------------------------------------------------------------- a stored case


def test_a_stored_document_is_parsed_once_while_it_lives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """stored_case: the case of a read-only document, read once for that object while
    it lives (its readers share one immutable Case); another object, or a plain
    mapping, is parsed as it comes; a document that is not a case is refused each time
    it is read."""
    from credit import models
    from credit.kept import KeptPer, ReadOnlyDict

    parsed: list[str] = []
    real = models.parse_case

    def counted(data: Any) -> Any:
        parsed.append(str(data.get("caseId")))
        return real(data)

    monkeypatch.setattr(models, "parse_case", counted)
    monkeypatch.setattr(models, "_stored", KeptPer(counted))
    first = ReadOnlyDict(loads(dumps(card_case(case_id="S-1"))))
    case = models.stored_case(first)
    assert case == real(dict(first))
    assert models.stored_case(first) is case  # the same object: read once
    same_text = ReadOnlyDict(loads(dumps(card_case(case_id="S-1"))))
    assert models.stored_case(same_text) == case  # another object: parsed again
    plain = dict(first)
    assert models.stored_case(plain) == case and models.stored_case(plain) == case
    assert parsed == ["S-1"] * 4
    kept = models._stored._kept
    assert len(kept) == 2
    del same_text  # a document gone takes what was read from it along
    assert len(kept) == 1
    broken = ReadOnlyDict({**first, "colour": "red"})
    for _ in range(2):
        with pytest.raises(InputError) as info:
            models.stored_case(broken)
        assert info.value.field == "colour"
    assert len(kept) == 1  # nothing kept for a document that is not a case
