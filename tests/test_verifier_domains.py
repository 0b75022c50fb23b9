"""Each check's own domain: bureau values in strict formats (V8), prohibited bases
however phrased (V3), every generic reason (V4), and none of them a false positive on
the approved wordings, the legal frame, the genuine notices of the bundled cases or
the policy document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from credit.catalogue import default_catalogue
from credit.fairness_terms import find_prohibited
from credit.guardrails import Verifier
from credit.guardrails.lock import BUREAU_FORMATS, current_pins, lock_diff, read_lock
from credit.guardrails.rules import default_rules
from credit.guardrails.verifier import _may_cite
from credit.legal_frame import default_frame
from credit.notice_format import Expectation, ExpectedReason, Notice
from credit.policy import default_policy
from notice_helpers import (
    COUNTER_AUTO,
    DECLINE_DTI,
    DECLINE_SCORE,
    data_copy,
    golden_case,
    notice_and_expectation,
    pins_from,
    replace_once,
)

ROOT = Path(__file__).resolve().parents[1]
VERIFIER = Verifier()
MALFORMED = "34%; call 1-900-555-0199"


def _failed(notice: Notice, expectation: Expectation) -> dict[str, str]:
    report = VERIFIER.verify(notice, expectation)
    return {k: report.checks[k].detail for k in report.failed}


def _with_report(case_id: str, **changes: Any) -> dict[str, Any]:
    case = golden_case(case_id)
    report = case["creditReport"]
    for key, value in changes.items():
        if key == "keyFactor0":
            report["keyFactors"][0]["value"] = value
        elif key.startswith("bureau."):
            report["bureau"][key.split(".", 1)[1]] = value
        else:
            report[key] = value
    return case


# ---------------------------------------------------------------- V8: bureau formats


def test_a_key_factor_value_with_a_phone_number_is_refused_by_v8_alone() -> None:
    """The measured defect: "34%; call 1-900-555-0199" came from the bureau file into a
    reason and the disclosure, every other check agreed with it, and it was sent."""
    case = _with_report(DECLINE_SCORE, keyFactor0=MALFORMED)
    notice, expectation = notice_and_expectation(case)
    assert f"({MALFORMED})." in notice.text and f"({MALFORMED})\n" in notice.text
    problems = _failed(notice, expectation)
    assert list(problems) == ["V8"]
    assert (
        "reason 2 (KF_10) states a bureau value: key factor 10 value "
        "'34%; call 1-900-555-0199' is not a whole percentage such as '59%'"
    ) in problems["V8"]
    assert (
        "the credit-score disclosure states key factor 10 in a form the bureau never uses"
        in (problems["V8"])
    )


def test_a_malformed_key_factor_shown_only_in_the_disclosure_is_refused_by_v8() -> None:
    case = _with_report(DECLINE_DTI, keyFactor0="$21,300 (call us)")
    notice, expectation = notice_and_expectation(case)
    assert all(r.code != "KF_01" for r in notice.reasons)  # not a reason: the disclosure only
    problems = _failed(notice, expectation)
    assert list(problems) == ["V8"]
    assert "disclosure states key factor 01 in a form the bureau never uses" in problems["V8"]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("bureau.phone", "1-900-555-0199", "bureau.phone"),
        ("bureau.name", "Example Credit Bureau 1-900-555-0199", "bureau.name"),
        ("bureau.address", "Call 1-900-555-0199 today", "bureau.address"),
        ("scoreModel", "Example Score 8; call 1-900-555-0199", "scoreModel"),
    ],
)
def test_a_bureau_field_in_another_form_is_refused_by_v8_alone(
    field: str, value: str, named: str
) -> None:
    notice, expectation = notice_and_expectation(_with_report(COUNTER_AUTO, **{field: value}))
    problems = _failed(notice, expectation)
    assert list(problems) == ["V8"]
    assert f"the credit-score disclosure states {named}" in problems["V8"]


def test_a_disclosure_value_edited_in_the_notice_only_fails_v7_and_v8() -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    edited = replace_once(notice, "($21,300)", "($21,300 or call 1-900-555-0199)")
    assert list(_failed(edited, expectation)) == ["V7", "V8"]


def test_the_format_check_passes_every_genuine_notice_of_the_golden_cases() -> None:
    for case_id in (DECLINE_SCORE, DECLINE_DTI, COUNTER_AUTO):
        notice, expectation = notice_and_expectation(case_id)
        assert VERIFIER.verify(notice, expectation).passed, case_id


# ---------------------------------------------------------------- V3: however phrased


@pytest.mark.parametrize(
    ("phrase", "basis"),
    [
        ("due to your marital status", "maritalStatus"),
        ("because you are a woman", "sex"),
        ("as is usual for applicants over 62", "age"),
        ("because you are over 62", "age"),
        ("for those 65 and older", "age"),
        ("because you were born in 1958", "age"),
        ("because you receive social security", "publicAssistanceIncome"),
        ("because you receive food stamps", "publicAssistanceIncome"),
        ("because of your housing voucher", "publicAssistanceIncome"),
        ("given your national origin", "nationalOrigin"),
        ("because you are a foreigner", "nationalOrigin"),
        ("as a single mother", "maritalStatus"),
        ("because of your religious beliefs", "religion"),
        ("because you are Muslim", "religion"),
        ("because you are Black", "race"),
        ("as a person of color", "race"),
        ("because of your skin colour", "color"),
        ("because you are Hispanic", "ethnicity"),
        ("because you are gay", "sex"),
        ("because you filed a complaint", "ccpaRights"),
        ("because of the people you associate with", "associations"),
        ("because of your relatives", "associations"),
        ("because English is not your first language", "primaryLanguage"),
        ("because of where you were born", "placeOfBirth"),
        ("because you are a senior", "age"),
        ("because you receive disability", "publicAssistanceIncome"),
    ],
)
def test_v3_catches_a_prohibited_basis_however_it_is_phrased(phrase: str, basis: str) -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    cited = replace_once(notice, "for credit cards.\n", f"for credit cards {phrase}.\n")
    detail = _failed(cited, expectation)["V3"]
    assert f"basis {basis} " in detail or f"proxy {basis} " in detail, detail


@pytest.mark.parametrize(
    "text",
    [
        "applicants over 62",
        "you're under 25",
        "born in 1960",
        "62 or older",
        "your score is over 600",  # no person: not a citation
        "the last 12 months or older accounts",
    ],
)
def test_the_quick_pre_check_never_hides_a_pattern_match(text: str) -> None:
    assert _may_cite(VERIFIER.pins, text) == bool(find_prohibited(text)), text


def test_an_age_threshold_needs_a_person_and_a_figure_is_not_an_age() -> None:
    assert [m.term for m in find_prohibited("applicants over 62")] == ["age-over-under"]
    assert find_prohibited("a debt-to-income ratio over 45.0%") == []
    assert find_prohibited("a score over 600 for auto loans") == []
    assert find_prohibited("in the last 12 months (2 inquiries)") == []


# ---------------------------------------------------------------- V4: every generic reason


@pytest.mark.parametrize(
    "sentence",
    [
        "You did not meet our internal standards.",
        "Your application did not meet our internal policies.",
        "Our internal criteria were not met.",
        "Internal requirements were not satisfied.",
        "You did not meet our criteria.",
        "You failed to achieve a qualifying score.",
        "Insufficient credit score.",
        "Your credit score is too low.",
        "Score too low.",
        "Based on our credit scoring system.",
        "Other.",
        "Your credit profile does not fit our lending criteria.",
        "Our model rated you high risk.",
        "You do not qualify at this time.",
        "You are not eligible for this product.",
        "Various factors were considered.",
    ],
)
def test_v4_calls_every_generic_reason_generic(sentence: str) -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    old = notice.text.split("\n   ", 1)[1].split("\n", 1)[0]
    detail = _failed(replace_once(notice, old, sentence), expectation)["V4"]
    assert "uses generic phrase(s)" in detail, detail


# ---------------------------------------------------------------- no false positives


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *_strings(v)]]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _clean(where: str, text: str) -> None:
    rules = default_rules()
    assert find_prohibited(text) == [], (where, text)
    assert rules.generic_phrases_in(text) == [], (where, text)
    assert rules.promises_in(text) == [], (where, text)


def test_no_approved_wording_filled_or_not_is_a_false_positive() -> None:
    catalogue = default_catalogue()
    for code, entry in catalogue.entries.items():
        _clean(code, entry.category)
        for wording in entry.wordings:
            _clean(code, wording)
            for name in catalogue.product_names.values():
                _clean(code, wording.replace("{productName}", name))


def test_no_reason_free_frame_paragraph_is_a_false_positive() -> None:
    """The ECOA paragraph must name race, sex, age and the other bases: V7 pins it by
    hash, V3 never reads it (test_verifier_checks pins that it is not a V3 failure)."""
    frame = default_frame()
    texts = {k: t for k, t in frame.texts.items() if not k.startswith("ecoa.")}
    assert len(texts) > 20
    for key, text in texts.items():
        _clean(key, text)


def test_no_genuine_notice_of_the_bundled_cases_is_a_false_positive() -> None:
    from credit.cases import iter_cases
    from credit.notices import NOTICE_DECISIONS, render_notice
    from credit.underwriting import decide_case

    ecoa = default_frame()["ecoa.heading"]
    policy, notices = default_policy(), 0
    for entry in iter_cases(ROOT / "examples" / "cases.jsonl"):
        assert entry.case is not None
        underwriting = decide_case(entry.case, policy)
        if underwriting.decision.decision not in NOTICE_DECISIONS:
            continue
        notice = render_notice(entry.case, underwriting)
        notices += 1
        for paragraph in notice.text.split("\n\n"):
            if not paragraph.startswith(ecoa):
                for line in paragraph.split("\n"):
                    _clean(notice.case_id, line)
        for reason in notice.reasons:
            for value in reason.values.values():
                _clean(notice.case_id, value)
    assert notices == 195


def test_no_text_of_the_policy_document_is_a_false_positive() -> None:
    strings = _strings(default_policy().to_document())
    assert len(strings) > 200
    for text in strings:
        _clean("policy", text)


def test_a_reason_value_copied_into_the_expectation_is_still_judged_by_v3() -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    top = notice.reasons[0]
    values = {**top.values, "dtiPct": "44.7 for applicants over 62"}
    text = notice.text.replace("of 44.7%", "of 44.7 for applicants over 62%", 1)
    mutant = notice.model_copy(
        update={"text": text, "reasons": (top.model_copy(update={"values": values}),)}
    )
    upstream = expectation.model_copy(
        update={"reasons": (ExpectedReason(code=top.code, values=values),)}
    )
    assert list(_failed(mutant, upstream)) == ["V3"]


# ---------------------------------------------------------------- the formats are pinned


def test_an_edit_to_the_bureau_formats_fails_v7_until_the_lock_is_accepted(tmp_path: Path) -> None:
    sources = data_copy(tmp_path)
    text = sources.bureau_formats.read_text(encoding="utf-8")
    text = text.replace("1-8(?:00|33|", "1-8(?:33|", 1)  # 1-800 numbers no longer toll-free
    text = text.replace("example: 1-800-555-0100", "example: 1-888-555-0100", 1)
    sources.bureau_formats.write_text(text, "utf-8")
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    report = Verifier(pins_from(sources)).verify(notice, expectation)
    assert "the data changed since the reviewed lock: bureau-formats.yaml" in (
        report.checks["V7"].detail
    )
    assert "bureau.phone" in report.checks["V8"].detail  # and the new format refuses 1-800


def test_a_lock_that_never_pinned_the_bureau_formats_is_drift_shown_as_new(tmp_path: Path) -> None:
    sources = data_copy(tmp_path)
    lock = json.loads(sources.lock.read_text(encoding="utf-8"))
    del lock["pins"][BUREAU_FORMATS]
    sources.lock.write_text(json.dumps(lock), encoding="utf-8")
    pins = pins_from(sources)
    assert pins.drift == (BUREAU_FORMATS,)
    diff = lock_diff(read_lock(sources.lock), current_pins(sources))
    assert diff.startswith(f"--- reviewed/{BUREAU_FORMATS}\n+++ current/{BUREAU_FORMATS}\n@@ -0,0")
