"""The verifier, check by check (V1-V8), each on both sides: a genuine notice passes, the
defect the check exists for fails it with a readable detail."""

from __future__ import annotations

import ast
import configparser
from pathlib import Path

import pytest

from credit.fairness_terms import find_prohibited
from credit.guardrails import CHECK_IDS, CHECK_NAMES, VerificationReport, Verifier, verify
from credit.guardrails.lock import DataSources
from credit.notice_format import Notice, NoticeReason
from notice_helpers import (
    COUNTER_AUTO,
    COUNTER_CARD,
    DECLINE_DTI,
    DECLINE_SCORE,
    data_copy,
    notice_and_expectation,
    pins_from,
    replace_once,
    with_text,
)

ROOT = Path(__file__).resolve().parents[1]


def failed(notice: Notice, case_id: str, verifier: Verifier | None = None) -> dict[str, str]:
    _, expectation = notice_and_expectation(case_id)
    report = (verifier or Verifier()).verify(notice, expectation)
    return {k: report.checks[k].detail for k in report.failed}


def reasons(notice: Notice, *new: NoticeReason) -> Notice:
    return notice.model_copy(update={"reasons": tuple(new)})


# ---------------------------------------------------------------- the report


def test_a_genuine_notice_passes_all_eight_checks_and_the_report_is_bound_to_it() -> None:
    notice, expectation = notice_and_expectation(DECLINE_SCORE)
    report = verify(notice, expectation)
    assert report.passed
    assert tuple(report.checks) == CHECK_IDS == ("V1", "V2", "V3", "V4", "V5", "V6", "V7", "V8")
    assert [c.name for c in report.checks.values()] == list(CHECK_NAMES.values())
    assert report.notice_sha256 == notice.sha256
    assert report.expectation_sha256 == expectation.sha256
    assert all(c.detail for c in report.checks.values())


def test_the_report_is_immutable_and_its_passed_flag_cannot_disagree_with_its_checks() -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    report = verify(notice, expectation)
    with pytest.raises(ValueError):
        report.passed = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        report.checks["V1"] = report.checks["V2"]  # type: ignore[index]
    with pytest.raises(ValueError, match="passed must be true exactly when every check passed"):
        VerificationReport(**{**report.model_dump(), "passed": False})


def test_the_report_reads_back_from_its_wire_form() -> None:
    notice, expectation = notice_and_expectation(COUNTER_CARD)
    report = verify(with_text(notice, notice.text + "x"), expectation)
    assert VerificationReport.from_wire(report.to_wire()) == report
    assert report.to_wire()["checks"]["V7"]["passed"] is False


# ---------------------------------------------------------------- V1 reasons_match_derivation


def test_v1_alone_fails_when_two_reasons_are_reordered_in_text_and_fields() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    blocks = notice.text.split("\n1. ", 1)[1].split("\n\n", 1)[0].split("\n")
    first, second = blocks[0:2], blocks[2:4]
    text = notice.text.replace(
        "\n".join(["1. " + first[0], first[1], second[0], second[1]]),
        "\n".join(["1. " + second[0][3:], second[1], "2. " + first[0], first[1]]),
        1,
    )
    swapped = reasons(
        with_text(notice, text), notice.reasons[1], notice.reasons[0], *notice.reasons[2:]
    )
    problems = failed(swapped, DECLINE_SCORE)
    assert list(problems) == ["V1"]
    assert problems["V1"].startswith(
        "the notice's reason codes (KF_10, SCORE_BELOW_MINIMUM, KF_18, KF_13) differ in order"
    )


def test_reordering_only_the_machine_fields_is_caught_against_the_text_too() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    swapped = reasons(notice, notice.reasons[1], notice.reasons[0], *notice.reasons[2:])
    assert list(failed(swapped, DECLINE_SCORE)) == ["V1", "V4", "V6", "V8"]


def test_v1_fails_when_a_reason_is_missing_or_unknown() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    dropped = reasons(notice, *notice.reasons[:3])
    assert "differ in set" in failed(dropped, DECLINE_SCORE)["V1"]
    assert "the text states 4 reasons, the machine fields 3" in failed(dropped, DECLINE_SCORE)["V1"]
    unknown = reasons(
        notice, notice.reasons[0].model_copy(update={"code": "X_NEW"}), *notice.reasons[1:]
    )
    assert "X_NEW" in failed(unknown, DECLINE_SCORE)["V1"]


def test_v1_fails_when_the_text_reasons_are_malformed() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    broken = replace_once(notice, "1. Debt-to-income ratio\n", "Debt-to-income ratio\n")
    assert "is not '<n>. <category>'" in failed(broken, DECLINE_DTI)["V1"]


# ---------------------------------------------------------------- V2 reason_count


def test_v2_fails_on_a_decline_with_no_reasons() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    none = reasons(
        replace_once(notice, "\n1. Debt-to-income ratio\n   " + notice.text.split("\n   ")[1], ""),
    )
    problems = failed(none, DECLINE_DTI)
    assert "a decline states 1 to 4 reasons, the machine fields have 0" in problems["V2"]


def test_v2_fails_on_more_than_four_reasons() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    five = reasons(notice, *notice.reasons, notice.reasons[1].model_copy(update={"code": "KF_01"}))
    assert "the machine fields have 5" in failed(five, DECLINE_SCORE)["V2"]


def test_v2_fails_on_an_approval_with_any_reason() -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    approval = expectation.model_copy(update={"decision": "approve", "reasons": ()})
    report = verify(notice, approval)
    assert "a decision to approve states no reasons" in report.checks["V2"].detail
    assert not report.checks["V5"].passed


# ---------------------------------------------------------------- V3 no_prohibited_basis


def test_v3_fails_when_a_reason_cites_a_prohibited_basis() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    aged = replace_once(notice, "for credit cards.\n", "for credit cards because of your age.\n")
    assert "prohibited basis age" in failed(aged, DECLINE_DTI)["V3"]


def test_v3_fails_on_a_full_width_prohibited_term_after_nfkc() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    wide = replace_once(notice, "for credit cards.\n", "for credit cards (\uff41\uff47\uff45).\n")
    problems = failed(wide, DECLINE_DTI)
    assert "prohibited basis age" in problems["V3"]
    assert "U+FF41" in problems["V8"]


def test_v3_fails_when_a_reason_maps_to_an_excluded_attribute(tmp_path: Path) -> None:
    sources = data_copy(tmp_path)
    text = sources.catalogue.read_text(encoding="utf-8")
    marker = "  DTI_OVER_CAP:\n"
    head, tail = text.split(marker)
    tail = tail.replace("    excludedAttributes: []\n", "    excludedAttributes: [age]\n", 1)
    sources.catalogue.write_text(head + marker + tail, encoding="utf-8")
    notice, _ = notice_and_expectation(DECLINE_DTI)
    problems = failed(notice, DECLINE_DTI, Verifier(pins_from(sources)))
    assert "maps to the excluded attribute(s) age" in problems["V3"]


def test_the_ecoa_paragraph_naming_race_sex_and_age_is_not_a_v3_false_positive() -> None:
    notice, expectation = notice_and_expectation(DECLINE_SCORE)
    ecoa = notice.text.rstrip("\n").split("\n\n")[-1]
    cited = {m.name for m in find_prohibited(ecoa)}
    assert {"race", "sex", "age", "religion", "nationalOrigin"} <= cited
    report = verify(notice, expectation)
    assert report.checks["V3"].passed, report.checks["V3"].detail
    assert report.checks["V7"].passed


# ---------------------------------------------------------------- V4 specific_reasons


def test_v4_fails_on_a_generic_reason() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    sentence = notice.text.split("\n   ")[1].split("\n")[0]
    generic = replace_once(notice, sentence, "You did not meet our internal standards.")
    detail = failed(generic, DECLINE_DTI)["V4"]
    assert "uses generic phrase(s): did not meet, internal standards" in detail
    assert "does not state dtiPct" in detail


def test_a_number_changed_in_the_sentence_and_its_value_alike_fails_v6_alone_not_v4() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    top = notice.reasons[0]
    other = reasons(
        replace_once(notice, "44.7%", "41.7%"),
        top.model_copy(update={"values": {**top.values, "dtiPct": "41.7"}}),
    )
    problems = failed(other, DECLINE_DTI)
    assert list(problems) == ["V6"]
    assert "value dtiPct states the numbers [41.7], the decision [44.7]" in problems["V6"]
    assert "states the numbers [40.0 41.7], not [40.0 44.7]" in problems["V6"]


def test_v4_alone_fails_when_a_reason_names_another_product_than_the_one_applied_for() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    top = notice.reasons[0]
    other = reasons(
        replace_once(notice, "for credit cards.", "for auto loans."),
        top.model_copy(update={"values": {**top.values, "productName": "auto loans"}}),
    )
    problems = failed(other, DECLINE_DTI)
    assert list(problems) == ["V4"]
    assert "states productName='auto loans', not the applicant's 'credit cards'" in problems["V4"]
    assert (
        "names the product 'auto loans'; the application is for 'credit cards'" in (problems["V4"])
    )


def test_v4_alone_fails_when_a_key_factor_value_names_another_unit_than_the_bureaus() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    assert notice.reasons[2].code == "KF_18"
    value = notice.reasons[2].values["keyFactorValue"]
    number = value.split(" ")[0]
    swapped = f"{number} delinquencies"
    mutant = reasons(
        replace_once(notice, f"delinquency ({value})", f"delinquency ({swapped})"),
        *notice.reasons[:2],
        notice.reasons[2].model_copy(update={"values": {"keyFactorValue": swapped}}),
        *notice.reasons[3:],
    )
    problems = failed(mutant, DECLINE_SCORE)
    assert f"states keyFactorValue='{swapped}', not the applicant's '{value}'" in problems["V4"]
    assert "V6" not in problems  # the number is the same
    assert "is not a whole count with its unit" in problems["V8"]  # and not the bureau's form


def test_v4_fails_when_a_machine_value_is_missing_or_extra() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    top = notice.reasons[0]
    fewer = {k: v for k, v in top.values.items() if k != "productName"}
    problems = failed(reasons(notice, top.model_copy(update={"values": fewer})), DECLINE_DTI)
    assert (
        "states the values dtiPct, maxDtiPct; it states dtiPct, maxDtiPct, productName"
        in (problems["V4"])
    )


def test_v4_fails_when_the_category_label_is_not_the_catalogues() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    top = notice.reasons[0]
    relabelled = reasons(
        replace_once(notice, "1. Debt-to-income ratio", "1. Credit score"),
        top.model_copy(update={"category": "Credit score"}),
    )
    assert (
        "the catalogue's category is 'Debt-to-income ratio'"
        in failed(relabelled, DECLINE_DTI)["V4"]
    )


# ---------------------------------------------------------------- V5 decision_consistent


def test_v5_fails_when_the_statement_says_approved() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    approved = replace_once(
        notice,
        "We are unable to approve your application for a credit card.",
        "Your application for a credit card has been approved.",
    )
    assert list(failed(approved, DECLINE_DTI)) == ["V5"]


def test_v5_fails_when_the_decision_field_disagrees() -> None:
    notice, _ = notice_and_expectation(COUNTER_AUTO)
    declined = notice.model_copy(update={"decision": "decline"})
    detail = failed(declined, COUNTER_AUTO)["V5"]
    assert detail == "the decision field says decline, the decision recorded is counteroffer"


def test_v5_fails_on_a_notice_for_another_case() -> None:
    notice, _ = notice_and_expectation(COUNTER_AUTO)
    other = notice.model_copy(update={"case_id": "G-OTHER"})
    assert "the caseId field is 'G-OTHER'" in failed(other, COUNTER_AUTO)["V5"]


# ---------------------------------------------------------------- V6 numbers_grounded


def test_v6_fails_when_a_stated_number_differs_from_the_approved_wording() -> None:
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    top = notice.reasons[0]
    changed = reasons(
        replace_once(notice, "score of 575 is", "score of 576 is"),
        top.model_copy(update={"values": {**top.values, "score": "576"}}),
        *notice.reasons[1:],
    )
    problems = failed(changed, DECLINE_SCORE)
    assert "states the numbers [576 600], not [575 600]" in problems["V6"]
    assert "V8" not in problems  # still an approved wording, filled with its own values


def test_v6_passes_an_approved_variant_that_states_the_numbers_in_another_order() -> None:
    notice, expectation = notice_and_expectation(DECLINE_SCORE)
    second = replace_once(
        notice,
        "Your credit score of 575 is below our minimum of 600 for auto loans.",
        "We require a credit score of at least 600 for auto loans; your credit score is 575.",
    )
    assert verify(second, expectation).passed


# ---------------------------------------------------------------- V7 legal_frame_intact


def test_v7_fails_when_the_ecoa_paragraph_is_removed() -> None:
    notice, _ = notice_and_expectation(COUNTER_CARD)
    paragraphs = notice.text.rstrip("\n").split("\n\n")
    removed = with_text(notice, "\n\n".join(paragraphs[:-1]) + "\n")
    detail = failed(removed, COUNTER_CARD)["V7"]
    assert "'Notice under the Equal Credit Opportunity Act:' is missing" in detail


def test_v7_fails_when_a_frame_word_is_edited_and_says_where() -> None:
    notice, _ = notice_and_expectation(COUNTER_AUTO)
    edited = replace_once(notice, "within 60 days", "within 90 days")
    detail = failed(edited, COUNTER_AUTO)["V7"]
    assert "reads 'ency if you request it within 90 days" in detail


def test_v7_fails_when_the_offered_terms_in_the_text_are_not_the_decisions() -> None:
    notice, _ = notice_and_expectation(COUNTER_AUTO)
    richer = replace_once(notice, "$24,400.00", "$25,400.00")
    assert list(failed(richer, COUNTER_AUTO)) == ["V7"]


def test_v7_fails_on_every_notice_once_the_frame_data_is_edited_until_the_lock_is_accepted(
    tmp_path: Path,
) -> None:
    sources = data_copy(tmp_path)
    frame = sources.frame.read_text(encoding="utf-8")
    sources.frame.write_text(frame.replace("validDays: 30", "validDays: 45"), encoding="utf-8")
    notice, _ = notice_and_expectation(DECLINE_DTI)
    detail = failed(notice, DECLINE_DTI, Verifier(pins_from(sources)))["V7"]
    assert "the data changed since the reviewed lock: legal-frame.yaml" in detail


def test_v7_fails_closed_without_a_usable_lock(tmp_path: Path) -> None:
    sources = data_copy(tmp_path)
    sources.lock.write_text("{}", encoding="utf-8")
    notice, _ = notice_and_expectation(DECLINE_DTI)
    detail = failed(notice, DECLINE_DTI, Verifier(pins_from(sources)))["V7"]
    assert detail.startswith("the data changed since the reviewed lock: lock unusable:")


def test_v7_fails_on_a_notice_rendered_from_another_frame() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    stale = notice.model_copy(update={"frame_sha256": "0" * 64})
    assert "rendered from frame 000000000000" in failed(stale, DECLINE_DTI)["V7"]


# ---------------------------------------------------------------- V8 approved_wording


@pytest.mark.parametrize(
    ("inserted", "codepoint"),
    [
        ("\u200b", "U+200B"),  # zero-width space
        ("\u202e", "U+202E"),  # right-to-left override (bidi control)
        ("\u0430", "U+0430"),  # Cyrillic a, a homoglyph of Latin a
        ("\uff21", "U+FF21"),  # full-width A
        ("\x07", "U+0007"),  # a control character
    ],
)
def test_v8_fails_on_unexpected_characters(inserted: str, codepoint: str) -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    odd = replace_once(notice, "Your debt", f"Your{inserted} debt")
    assert codepoint in failed(odd, DECLINE_DTI)["V8"]


def test_v8_fails_on_unexpected_characters_in_the_frame_too() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    odd = replace_once(notice, "Springfield", "Spr\u200bingfield")
    assert "U+200B" in failed(odd, DECLINE_DTI)["V8"]


def test_v8_fails_on_a_promise_anywhere_in_the_notice() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    promised = replace_once(
        notice,
        "\n\nYour credit score and",
        "\n\nIf you reapply with a co-signer we will approve your application."
        "\n\nYour credit score and",
    )
    detail = failed(promised, DECLINE_DTI)["V8"]
    assert "makes a promise (we-will-approve, reapply-condition)" in detail


def test_v8_fails_on_a_negated_reason() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    negated = replace_once(notice, "is above our maximum", "is not above our maximum")
    assert list(failed(negated, DECLINE_DTI)) == ["V8"]


# ---------------------------------------------------------------- independence


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_verifier_imports_nothing_from_the_renderer() -> None:
    guardrails = ROOT / "src" / "credit" / "guardrails"
    for path in guardrails.glob("*.py"):
        assert not any(n.startswith("credit.notices") for n in _imports(path)), path.name


def test_an_import_contract_enforces_the_verifiers_independence() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    forbidden = [
        section
        for section in config.sections()
        if config[section].get("type") == "forbidden"
        and "credit.guardrails" in config[section].get("source_modules", "").split()
        and "credit.notices" in config[section].get("forbidden_modules", "").split()
    ]
    assert forbidden, "no import-linter contract keeps credit.guardrails from credit.notices"


def test_the_pinned_data_is_loaded_from_the_package_by_default() -> None:
    sources = DataSources.default()
    assert sources.frame.name == "legal-frame.yaml" and sources.lock.name == "notice.lock.json"
    assert Verifier().pins.drift == ()
