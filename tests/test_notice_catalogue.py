"""The reason catalogue is complete for notices: every code the underwriter can emit has
an entry, every entry is reachable from some case, adverse entries state the applicant's
values and are the only ones a notice uses, and no approved wording or frame text is
generic, promising or a prohibited-basis citation."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

from credit import PolicyError, default_catalogue, load_catalogue
from credit.errors import NoNoticeError
from credit.fairness_terms import find_prohibited
from credit.guardrails.rules import default_rules
from credit.legal_frame import default_frame, template_fields
from credit.notices import render_notice
from credit.underwriting import engine
from notice_helpers import (
    COUNTER_AUTO,
    COUNTER_CARD,
    DECLINE_DTI,
    DECLINE_SCORE,
    changed,
    decided,
    golden_case,
)

CATALOGUE = default_catalogue()


def _codes_named_in_the_engine() -> set[str]:
    """Every reason code the engine's source passes to ``_stated`` as a literal."""
    tree = ast.parse(inspect.getsource(engine))
    codes: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "_stated"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            codes.add(node.args[1].value)
    return codes


def _key_factor(code: str, value: str = "3 accounts") -> dict[str, str]:
    return {"code": code, "text": f"Bureau key factor {code}", "value": value}


def _reachability_cases() -> list[dict[str, Any]]:
    """One case (or a few) for every catalogue entry."""
    score_decline = golden_case(DECLINE_SCORE)
    bureau_codes = sorted(CATALOGUE.by_bureau_code)
    cases = [
        changed(score_decline, "creditReport.keyFactors", [_key_factor(c) for c in chunk])
        for chunk in (bureau_codes[i : i + 3] for i in range(0, len(bureau_codes), 3))
    ]
    cases += [
        golden_case(DECLINE_DTI),
        golden_case(COUNTER_AUTO),
        changed(golden_case(COUNTER_AUTO), "application.vehicleValue", "20000.00"),  # LTV 150
        changed(golden_case(COUNTER_CARD), "creditReport.score", None),
        changed(golden_case(COUNTER_CARD), "creditReport.tradelines", 2),
        changed(golden_case(COUNTER_CARD), "creditReport.historyMonths", 6),
        changed(
            golden_case(COUNTER_CARD),
            "creditReport.disputes",
            [{"tradelineId": "T9", "resolved": False}],
        ),
        changed(
            changed(golden_case(COUNTER_AUTO), "application.monthlyDebtPayments", "200.00"),
            "creditReport.score",
            605,
        ),
        changed(
            changed(golden_case(COUNTER_CARD), "application.monthlyDebtPayments", "1550.00"),
            "application.requestedLine",
            "1000.00",
        ),
        changed(
            changed(golden_case(COUNTER_AUTO), "application.monthlyDebtPayments", "200.00"),
            "application.vehicleValue",
            "25210.00",
        ),
    ]
    return cases


def test_every_code_the_underwriter_names_has_a_catalogue_entry() -> None:
    named = _codes_named_in_the_engine()
    assert named, "the engine names no reason code: the scan is broken"
    assert named <= set(CATALOGUE.entries), sorted(named - set(CATALOGUE.entries))


def test_every_rule_reason_is_a_named_code_or_a_bureau_key_factor() -> None:
    key_factor_codes = set(CATALOGUE.by_bureau_code.values())
    assert set(CATALOGUE.rule_codes()) == _codes_named_in_the_engine() | key_factor_codes


def test_the_reasons_only_a_person_states_are_all_ones_a_person_may_cite() -> None:
    person_only = set(CATALOGUE.entries) - set(CATALOGUE.rule_codes())
    assert person_only, "the catalogue has the Form C-1 reasons a credit officer cites"
    assert person_only <= set(CATALOGUE.citable())


def test_every_rule_reason_is_reachable_from_some_case() -> None:
    emitted: set[str] = set()
    for case in _reachability_cases():
        _, underwriting = decided(case)
        emitted |= set(underwriting.reason_codes)
    rule_codes = set(CATALOGUE.rule_codes())
    assert emitted == rule_codes, sorted(rule_codes - emitted)


def test_every_adverse_entry_states_an_applicant_value_in_every_wording() -> None:
    for code in CATALOGUE.codes("adverse"):
        entry = CATALOGUE[code]
        assert entry.states, code
        assert entry.reg_b and entry.category and entry.reference, code
        assert entry.excluded_attributes == (), code


def test_a_referral_never_reaches_a_notice() -> None:
    case, underwriting = decided(changed(golden_case(COUNTER_CARD), "creditReport.tradelines", 2))
    assert underwriting.decision.decision == "refer"
    assert all(CATALOGUE[c].kind == "referral" for c in underwriting.reason_codes)
    with pytest.raises(NoNoticeError) as info:
        render_notice(case, underwriting)
    assert str(info.value) == (
        "case G-COUNTER-CARD, field decision: a decision to refer takes no adverse-action notice"
    )


def test_an_approval_never_gets_a_notice() -> None:
    case, underwriting = decided(
        changed(golden_case(COUNTER_CARD), "application.monthlyDebtPayments", "100.00")
    )
    assert underwriting.decision.decision == "approve"
    with pytest.raises(NoNoticeError):
        render_notice(case, underwriting)


def test_the_catalogue_rejects_an_adverse_entry_that_states_no_value(tmp_path: Path) -> None:
    source = Path(CATALOGUE.source).read_text(encoding="utf-8")
    edited = source.replace("    states: [keyFactorValue]\n", "    states: []\n", 1)
    edited = edited.replace(
        "the amount owed on your accounts is too high ({keyFactorValue}).",
        "the amount owed on your accounts is too high.",
        1,
    )
    path = tmp_path / "reasons.yaml"
    path.write_text(edited, encoding="utf-8")
    with pytest.raises(PolicyError) as info:
        load_catalogue(path)
    assert info.value.key == "reasons.KF_01.states"
    assert "must state at least one of the applicant's values" in info.value.message


def _sample_values(states: tuple[str, ...]) -> dict[str, str]:
    sample = {
        "score": "575",
        "minScore": "600",
        "productName": "auto loans",
        "dtiPct": "46.2",
        "maxDtiPct": "45.0",
        "ltvPct": "125.0",
        "maxLtvPct": "120.0",
        "keyFactorValue": "3 accounts",
        "bureauName": "Example Credit Bureau",
        "tradelines": "2",
        "historyMonths": "7",
        "annualIncome": "$84,000.00",
        "monthlyDebtPayments": "$1,250.00",
        "derogatoryCount": "3",
        "lastDerogatoryMonthsAgo": "14",
        "vehicleValue": "$13,500.00",
        "requestedAmount": "$28,000.00",
    }
    return {name: sample[name] for name in states}


def test_no_approved_wording_is_generic_promising_or_a_prohibited_basis() -> None:
    rules = default_rules()
    for code in CATALOGUE.codes("adverse"):
        entry = CATALOGUE[code]
        for variant, _ in enumerate(entry.wordings):
            sentence = entry.render(_sample_values(entry.states), variant)
            assert rules.generic_phrases_in(sentence) == [], (code, sentence)
            assert rules.promises_in(sentence) == [], (code, sentence)
            assert find_prohibited(f"{entry.category} | {sentence}") == [], (code, sentence)
            assert sentence.isascii()


def test_no_frame_text_makes_a_promise_and_every_template_is_ascii() -> None:
    frame = default_frame()
    rules = default_rules()
    for key, text in frame.texts.items():
        filled = text.format_map({name: "X" for name in template_fields(text)})
        assert rules.promises_in(filled) == [], key
        assert text.isascii(), key
