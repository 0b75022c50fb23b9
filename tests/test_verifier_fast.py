"""The verifier's quick ways give the long way's answers.

The clear way (``verifier._clear_way``) reads a notice once for all eight checks and
gives a check's pass detail only where that check, run in full, passes with the same
detail; every other verdict is the check's own. Over genuine notices of every shape
with any defect planted in them (the mutation suite's mutators, text cut, doubled or
changed anywhere, machine fields and what the decision records changed), the report is
the report of the full checks, check by check and word for word.

The frame the plan derives (``verifier._frame_plan``) is the frame the template
substitution derives (written out below: the deliberate second implementation the
plan is checked against) for any values, and the smaller shortcuts (money, the
character scan, first lines, a paragraph's lines, the trusted report) give the plain
way's answers.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from credit import decide_case, default_policy, parse_case
from credit.catalogue import default_catalogue
from credit.examples import generate_cases
from credit.guardrails import CHECK_IDS, VerificationReport, Verifier, default_pins, promise_scan
from credit.guardrails import verifier as V
from credit.guardrails.expectation import expectation_for
from credit.guardrails.report import CHECK_NAMES, CheckResult
from credit.legal_frame import default_frame
from credit.notice_format import Expectation, KeyFactorFacts, Notice, NoticeReason
from credit.notices import NOTICE_DECISIONS, render_notice
from notice_helpers import (
    GOLDEN_IDS,
    data_copy,
    notice_and_expectation,
    pins_from,
    replace_once,
)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals.mutations import MUTATORS, Context  # noqa: E402

PINS = default_pins()
CONTEXT = Context(default_frame(), default_catalogue())


def _full(check: V.Check) -> V.Check:
    """The check itself, as a check the clear way does not stand in for."""
    return lambda subject: check(subject)


FULL = Verifier(checks={key: _full(check) for key, check in V._CHECKS.items()})


@cache
def genuine() -> tuple[tuple[Notice, Expectation], ...]:
    """The golden notices, and generated ones of every shape (decline and
    counteroffer, auto and card, one to four reasons, with and without key factors)."""
    pairs = [notice_and_expectation(case_id) for case_id in GOLDEN_IDS]
    policy = default_policy()
    for data in generate_cases(2031, 400):
        case = parse_case(data)
        underwriting = decide_case(case, policy)
        if underwriting.decision.decision in NOTICE_DECISIONS:
            pairs.append((render_notice(case, underwriting), expectation_for(case, underwriting)))
    return tuple(pairs)


# ---------------------------------------------------------------- planting defects

PIECES = [
    "",
    "\n",
    "\n\n",
    " ",
    "   ",
    "1. ",
    "5. Debt-to-income ratio\n   Your ratio is high.",
    "\n5. Credit score\n   because of your age",
    "Principal reasons for our decision:",
    "Action taken: ",
    "Your credit score and the consumer reporting agency:",
    "Scoring model: Example Score 9",
    "- Length of time accounts have been established (eight years)",
    "Consumer reporting agency: Someone Else, telephone 555",
    "we will approve your application",
    "guaranteed",
    "internal standards",
    "because of your age",
    "race",
    "46.2",
    "$1,000.00",
    "2026-12-01",
    "{caseId}",
    "\u200b",
    "caf\u00e9",
    "\t",
    '"',
]


def _cut(text: str, data: st.DataObject) -> str:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 40)))
    return text[:start] + data.draw(st.sampled_from(PIECES)) + text[end:]


def _in_a_sentence(text: str, data: st.DataObject) -> str:
    """A piece put into one reason's sentence, the rest of it as it was."""
    lines = text.split("\n")
    sentences = [i for i, line in enumerate(lines) if line.startswith("   ")]
    if not sentences:
        return text
    i = data.draw(st.sampled_from(sentences))
    at = data.draw(st.integers(3, len(lines[i])))
    piece = data.draw(st.sampled_from([" internal standards", " because of your race", *PIECES]))
    lines[i] = lines[i][:at] + piece + lines[i][at:]
    return "\n".join(lines)


def _paragraphs(text: str, data: st.DataObject) -> str:
    parts = text.split("\n\n")
    i = data.draw(st.integers(0, len(parts) - 1))
    how = data.draw(st.sampled_from(["drop", "double", "swap"]))
    if how == "drop":
        del parts[i]
    elif how == "double":
        parts.insert(i, parts[i])
    else:
        j = data.draw(st.integers(0, len(parts) - 1))
        parts[i], parts[j] = parts[j], parts[i]
    return "\n\n".join(parts)


def _reason(reason: NoticeReason, data: st.DataObject) -> NoticeReason:
    how = data.draw(
        st.sampled_from(["value", "category", "code", "drop value", "add value", "odd field"])
    )
    values = dict(reason.values)
    if how == "odd field":  # a machine field with a character the text may not hold
        if data.draw(st.booleans()):
            return reason.model_copy(update={"category": reason.category + "\u00e9"})
        values[data.draw(st.sampled_from(["note\u200b", "note"]))] = "1\t"
    if how == "value" and values:
        name = data.draw(st.sampled_from(sorted(values)))
        values[name] = data.draw(st.sampled_from([values[name] + "1", "", "0.0", "race", "x"]))
    elif how == "drop value" and values:
        del values[data.draw(st.sampled_from(sorted(values)))]
    elif how == "add value":
        values["keyFactorValue"] = data.draw(st.sampled_from(["43%", "forty", ""]))
    elif how == "category":
        return reason.model_copy(update={"category": reason.category + "s"})
    else:
        code = data.draw(st.sampled_from(sorted(CONTEXT.catalogue.entries)))
        return reason.model_copy(update={"code": code})
    return reason.model_copy(update={"values": values})


def _expectation(e: Expectation, data: st.DataObject) -> Expectation:
    how = data.draw(
        st.sampled_from(
            ["reasons", "value", "decision", "product", "score", "factor", "bureau", "offer"]
        )
    )
    if how == "reasons":
        return e.model_copy(update={"reasons": e.reasons[1:]})
    if how == "value" and e.reasons:
        first = e.reasons[0]
        values = {k: v + "0" for k, v in first.values.items()}
        changed = first.model_copy(update={"values": values})
        return e.model_copy(update={"reasons": (changed, *e.reasons[1:])})
    if how == "decision":
        return e.model_copy(
            update={
                "decision": data.draw(
                    st.sampled_from(["approve", "decline", "counteroffer", "refer"])
                )
            }
        )
    if how == "product":
        return e.model_copy(update={"product": "card" if e.product == "auto" else "auto"})
    score = e.credit_score
    if how == "score" or score is None:
        return e.model_copy(update={"credit_score": None})
    if how == "factor" and score.key_factors:
        k = score.key_factors[0]
        odd = KeyFactorFacts(code=k.code, text=k.text, value=k.value + " or so")
        update = {"key_factors": (odd, *score.key_factors[1:])}
        return e.model_copy(update={"credit_score": score.model_copy(update=update)})
    if how == "bureau":
        update = {"bureau_phone": "call 1-900-555-0199", "score_model": None}
        return e.model_copy(update={"credit_score": score.model_copy(update=update)})
    if e.offer is None:
        return e
    return e.model_copy(update={"offer": e.offer.model_copy(update={"apr": Decimal("7.77")})})


def _planted(
    notice: Notice, expectation: Expectation, data: st.DataObject
) -> tuple[Notice, Expectation]:
    for _ in range(data.draw(st.integers(1, 3))):
        how = data.draw(
            st.sampled_from(
                [
                    "mutator",
                    "cut",
                    "paragraphs",
                    "reason",
                    "order",
                    "sentence",
                    "machine",
                    "fields",
                    "expectation",
                ]
            )
        )
        if how == "mutator":
            mutator = data.draw(st.sampled_from(MUTATORS))
            try:  # a mutator reads a notice as rendered; another defect may stop it
                mutant = mutator.mutate(notice, expectation, CONTEXT)
            except Exception:
                mutant = None
            if mutant is not None:
                notice, expectation = mutant
        elif how == "cut":
            notice = notice.model_copy(update={"text": _cut(notice.text, data)})
        elif how == "paragraphs":
            notice = notice.model_copy(update={"text": _paragraphs(notice.text, data)})
        elif how == "reason" and notice.reasons:
            i = data.draw(st.integers(0, len(notice.reasons) - 1))
            reasons = list(notice.reasons)
            reasons[i] = _reason(reasons[i], data)
            notice = notice.model_copy(update={"reasons": tuple(reasons)})
        elif how == "order":
            notice = notice.model_copy(update={"reasons": notice.reasons[::-1]})
        elif how == "sentence":
            notice = notice.model_copy(update={"text": _in_a_sentence(notice.text, data)})
        elif how == "machine":  # a machine reason more, stated nowhere in the text
            code = data.draw(st.sampled_from(sorted(CONTEXT.catalogue.entries)))
            entry = CONTEXT.catalogue.entries[code]
            values = {
                name: data.draw(st.sampled_from(["3", "race", "auto loans"]))
                for name in entry.states
            }
            extra = NoticeReason(code=code, category=entry.category, values=values)
            notice = notice.model_copy(update={"reasons": (*notice.reasons, extra)})
        elif how == "fields":
            field, value = data.draw(
                st.sampled_from(
                    [
                        ("case_id", "C-OTHER"),
                        ("notice_date", notice.notice_date + dt.timedelta(days=1)),
                        ("product", "card" if notice.product == "auto" else "auto"),
                        ("decision", "decline" if notice.decision != "decline" else "approve"),
                        ("frame_sha256", "0" * 64),
                        ("catalogue_sha256", "0" * 64),
                    ]
                )
            )
            notice = notice.model_copy(update={field: value})
        else:
            expectation = _expectation(expectation, data)
    return notice, expectation


# ---------------------------------------------------------------- the clear way


def _same_verdicts(notice: Notice, expectation: Expectation) -> None:
    fast, full = Verifier().verify(notice, expectation), FULL.verify(notice, expectation)
    assert fast.to_wire() == full.to_wire()
    subject = V._read(notice, expectation, PINS)
    for key, cleared in zip(CHECK_IDS, V._clear_way(subject), strict=True):
        if cleared is not None:  # the clear way says only what the check says
            assert V._CHECKS[key](subject) == (True, cleared), key


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_a_notice_with_any_defect_gets_the_full_checks_report(data: st.DataObject) -> None:
    notice, expectation = data.draw(st.sampled_from(genuine()))
    _same_verdicts(*_planted(notice, expectation, data))


@pytest.mark.parametrize("mutator", MUTATORS, ids=[m.id for m in MUTATORS])
def test_each_mutant_of_each_golden_notice_gets_the_full_checks_report(mutator: Any) -> None:
    for case_id in GOLDEN_IDS:
        notice, expectation = notice_and_expectation(case_id)
        mutant = mutator.mutate(notice, expectation, CONTEXT)
        if mutant is not None:
            _same_verdicts(*mutant)


def test_the_clear_way_passes_every_check_of_a_genuine_notice() -> None:
    # so a genuine notice is never sent the long way (which would still be right)
    for notice, expectation in genuine():
        cleared = V._clear_way(V._read(notice, expectation, PINS))
        assert None not in cleared, (notice.case_id, cleared)
        assert Verifier().verify(notice, expectation) == FULL.verify(notice, expectation)


def test_a_replaced_check_is_run_though_the_clear_way_would_pass_it() -> None:
    notice, expectation = genuine()[0]
    for key in CHECK_IDS:
        off = Verifier(checks={key: lambda s: (False, "switched off")})
        report = off.verify(notice, expectation)
        assert report.failed == (key,)
        assert report.checks[key].detail == "switched off"


def test_the_report_of_a_passing_notice_is_the_validated_report() -> None:
    notice, expectation = genuine()[1]
    report = Verifier().verify(notice, expectation)
    validated = VerificationReport.of(
        case_id=report.case_id,
        notice_sha256=report.notice_sha256,
        expectation_sha256=report.expectation_sha256,
        checks=list(report.results),
    )
    for built in (report, VerificationReport.model_construct(**dict(validated))):
        assert built == validated
        assert vars(built) == vars(validated)
        assert built.__pydantic_fields_set__ == validated.__pydantic_fields_set__
        assert built.__pydantic_extra__ == validated.__pydantic_extra__
        assert built.__pydantic_private__ == validated.__pydantic_private__


def test_a_report_of_results_out_of_order_is_still_refused() -> None:
    results = [CheckResult(id=k, name=CHECK_NAMES[k], passed=True, detail="d") for k in CHECK_IDS]
    with pytest.raises(ValueError, match="in order"):
        VerificationReport.of(
            case_id="C-1", notice_sha256="a", expectation_sha256="b", checks=results[::-1]
        )


# ---------------------------------------------------------------- the frame


def _reference_frame(pins: Any, e: Expectation) -> list[str]:
    """The frame paragraphs by substituting the expectation's values into each template
    (the verifier's derivation before the plan; kept here only to check the plan)."""
    f = pins.frame
    common = {
        "caseId": e.case_id,
        "noticeDate": e.notice_date.isoformat(),
        "productName": f[f"products.{e.product}"],
    }
    subst = V._subst
    paras = [
        [f["creditor.name"], f["creditor.address"]],
        [
            f["header.title"],
            subst(f["header.date"], common),
            subst(f["header.application"], common),
        ],
    ]
    if e.decision == "counteroffer":
        offer = e.offer
        if offer is None:
            raise V._Missing("offer")
        if e.product == "auto":
            if offer.amount is None or offer.term_months is None:
                raise V._Missing("offer.amount")
            terms = subst(
                f["counteroffer.auto"],
                {
                    "amount": _reference_money(offer.amount),
                    "termMonths": str(offer.term_months),
                    "apr": str(offer.apr),
                    "payment": _reference_money(offer.payment),
                },
            )
        else:
            if offer.credit_line is None:
                raise V._Missing("offer.creditLine")
            terms = subst(
                f["counteroffer.card"],
                {
                    "creditLine": _reference_money(offer.credit_line),
                    "apr": str(offer.apr),
                    "payment": _reference_money(offer.payment),
                },
            )
        until = e.notice_date + dt.timedelta(days=f.offer_valid_days)
        standing = subst(
            f["counteroffer.standing"],
            {"validDays": str(f.offer_valid_days), "offerExpires": until.isoformat()},
        )
        paras.append([f["counteroffer.heading"], terms, standing])
    s = e.credit_score
    if s is not None:
        bureau = {
            "bureauName": s.bureau_name,
            "bureauAddress": s.bureau_address,
            "bureauPhone": s.bureau_phone,
        }
        score = {
            "score": str(s.score),
            "scoreLow": str(s.score_low),
            "scoreHigh": str(s.score_high),
            "scoreDate": s.score_date.isoformat(),
            "scoreModel": s.score_model or "",
            "bureauName": s.bureau_name,
        }
        lines = [
            f["creditScore.heading"],
            subst(f["creditScore.intro"], bureau),
            subst(f["creditScore.score"], score),
            subst(f["creditScore.range"], score),
            subst(f["creditScore.date"], score),
        ]
        if s.score_model is not None:
            lines.append(subst(f["creditScore.model"], score))
        lines.append(f["creditScore.keyFactorsHeading"])
        factors = [
            subst(
                f["creditScore.keyFactor"],
                {"keyFactorText": k.text, "keyFactorValue": k.value, "keyFactorCode": k.code},
            )
            for k in V._key_factors(pins, s.key_factors)
        ]
        lines += factors or [f["creditScore.noKeyFactors"]]
        lines += [
            subst(f[f"creditScore.{key}"], bureau)
            for key in ("agency", "notDecision", "freeReport", "dispute")
        ]
        paras.append(lines)
    agency = {"agencyName": f["ecoa.agencyName"], "agencyAddress": f["ecoa.agencyAddress"]}
    paras.append([f["ecoa.heading"], subst(f["ecoa.text"], agency)])
    out = ["\n".join(p) for p in paras]
    out[-1] += "\n"
    return out


def _reference_money(value: Decimal) -> str:
    """``$24,000.00`` by grouping the digits by hand (the verifier's way before)."""
    sign = "-" if value < 0 else ""
    whole, _, cents = f"{abs(value).quantize(Decimal('0.01')):f}".partition(".")
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    return f"{sign}${','.join(groups)}.{cents}"


ODD = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["{caseId}", "{0}", "}{", "a\n\nb", "{{x}}", "%s", "\\n"]),
)
MONEY = st.decimals(min_value=-(10**12), max_value=10**12, places=2) | st.decimals(
    min_value=0, max_value=10**6, places=4
)


def _frames_agree(e: Expectation) -> None:
    subject = V._read(Notice.model_construct(text=""), e, PINS)
    try:
        want = _reference_frame(PINS, e)
    except V._Missing as missing:
        with pytest.raises(V._Missing) as raised:
            V._expected_frame(subject)
        assert raised.value.name == missing.name
        return
    plan, values = V._expected_frame(subject)
    assert [p.fill(values) for p in plan.paragraphs] == want
    assert plan.whole.fill(values) == "\n\n".join(want)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_frame_plan_derives_the_frame_the_templates_give_for_any_values(
    data: st.DataObject,
) -> None:
    _, e = data.draw(st.sampled_from(genuine()))
    e = e.model_copy(
        update={
            "case_id": data.draw(ODD),
            "notice_date": data.draw(st.dates(dt.date(2000, 1, 1), dt.date(2099, 1, 1))),
            "decision": data.draw(st.sampled_from(["decline", "counteroffer", "approve"])),
            "product": data.draw(st.sampled_from(["auto", "card"])),
        }
    )
    s = e.credit_score
    if s is not None:
        factors = tuple(
            KeyFactorFacts(
                code=data.draw(st.sampled_from(["08", "10", "14", "x"])),
                text=data.draw(ODD),
                value=data.draw(ODD),
            )
            for _ in range(data.draw(st.integers(0, 6)))
        )
        s = s.model_copy(
            update={
                "bureau_name": data.draw(ODD),
                "bureau_phone": data.draw(ODD),
                "score_model": data.draw(st.none() | ODD),
                "key_factors": factors,
            }
        )
        e = e.model_copy(update={"credit_score": data.draw(st.none() | st.just(s))})
    if e.offer is not None or data.draw(st.booleans()):
        offer = e.offer or notice_and_expectation(GOLDEN_IDS[2])[1].offer
        assert offer is not None
        offer = offer.model_copy(
            update={
                "amount": data.draw(st.none() | MONEY),
                "payment": data.draw(MONEY),
                "credit_line": data.draw(st.none() | MONEY),
                "term_months": data.draw(st.none() | st.integers(1, 999)),
            }
        )
        e = e.model_copy(update={"offer": data.draw(st.none() | st.just(offer))})
    _frames_agree(e)


def test_the_golden_frames_are_the_frames_the_templates_give() -> None:
    for _, expectation in genuine():
        _frames_agree(expectation)


# ---------------------------------------------------------------- the smaller shortcuts


@settings(max_examples=500)
@given(st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**15), max_value=10**15))
def test_money_is_grouped_as_the_digits_grouped_by_hand(value: Decimal) -> None:
    assert V._money(value) == _reference_money(value)


TEXTS = st.text(
    alphabet=st.sampled_from([*"ab .\n\t\x00\x7f\x1f~ ", "\u00e9", "\u200b", "\u2028"]), max_size=40
)


@settings(max_examples=500)
@given(TEXTS, st.booleans())
def test_the_character_scan_finds_what_the_pattern_finds(text: str, newline_ok: bool) -> None:
    pattern = re.compile(r"[^\x20-\x7e\n]" if newline_ok else r"[^\x20-\x7e]")
    want = [(m.start(), m.group()) for m in pattern.finditer(text)]
    assert V._bad_characters(text, newline_ok=newline_ok) == want


PARTS = st.lists(st.sampled_from(["Heading", "Heading\nx", "x", "", "\n", "Head", "ing"]))


@settings(max_examples=300)
@given(PARTS, st.sampled_from(["Heading", "Head", "x", "a\nb", ""]))
def test_first_lines_are_the_paragraphs_whose_first_line_is_the_line(
    paragraphs: list[str], line: str
) -> None:
    want = [i for i, p in enumerate(paragraphs) if p.split("\n", 1)[0] == line]
    assert V._first_lines(paragraphs, line) == want
    assert V._starting(paragraphs, line) == [
        i for i, p in enumerate(paragraphs) if p.startswith(line)
    ]


@settings(max_examples=300)
@given(st.text(alphabet="ab\n", max_size=30))
def test_a_paragraphs_lines_are_its_own_lines_cut_from_the_texts(text: str) -> None:
    notice = Notice.model_construct(text=text)
    subject = V._Subject(notice, Notice.model_construct(), PINS, text.split("\n\n"), [], None, [])  # type: ignore[arg-type]
    for at, paragraph in enumerate(subject.paragraphs):
        assert subject.paragraph_lines(at) == paragraph.split("\n")


def test_the_promise_scan_reads_the_lines_it_is_given_as_its_own() -> None:
    scan = PINS.promise_scan
    for notice, _ in genuine()[:20]:
        for text in (notice.text, notice.text + "\nWe guarantee approval."):
            assert scan.promises_in(text, lines=text.split("\n")) == scan.promises_in(text)


# ---------------------------------------------------------------- the disclosure's bureau lines

ODD_BUREAU = {  # each out of its format alone, several made to run into the line's text
    "bureau_name": ["Example Credit Bureau, PO Box 1", "example bureau", ""],
    "bureau_address": ["PO Box 1000, Springfield, ST 00000, telephone 1-800-555-0100", "x"],
    "bureau_phone": ["call 1-900-555-0199", "1-800-555-0100.", "1-800-555-0100\n"],
    "score_model": ["Example Score 8, telephone", "score 8"],
}
ODD_FACTOR_VALUES = ["5 accounts or so", "$1,000.00", "43", "4 accounts)", ""]
ODD_FACTOR_TEXTS = ["Too many accounts (forty)\n- Accounts", "Balances (high)", ""]


def _scored() -> list[tuple[Notice, Expectation]]:
    return [(n, e) for n, e in genuine() if e.credit_score and e.credit_score.key_factors]


def _with_disclosure(notice: Notice, expectation: Expectation) -> V._Subject:
    """The notice with its credit-score disclosure written as the plan writes it for the
    expectation's values (so the disclosure is the expected one, whatever they are)."""
    subject = V._read(notice, expectation, PINS)
    plan, values = subject.frame()
    assert plan.disclosure is not None and plan.disclosure.paragraph is not None
    heading = PINS.frame["creditScore.heading"]
    paragraphs = [
        plan.disclosure.paragraph.fill(values) if p.split("\n", 1)[0] == heading else p
        for p in notice.text.split("\n\n")
    ]
    written = notice.model_copy(update={"text": "\n\n".join(paragraphs)})
    return V._read(written, expectation, PINS)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_disclosure_is_clear_only_where_its_check_finds_nothing(data: st.DataObject) -> None:
    notice, expectation = data.draw(st.sampled_from(_scored()))
    score = expectation.credit_score
    assert score is not None
    update: dict[str, Any] = {}
    for field, odd in ODD_BUREAU.items():
        if data.draw(st.booleans()):
            update[field] = data.draw(st.sampled_from(odd))
    factors = list(score.key_factors)
    for k, factor in enumerate(factors):
        if data.draw(st.booleans()):
            value = data.draw(st.sampled_from([*ODD_FACTOR_VALUES, *(f.value for f in factors)]))
            factors[k] = factor.model_copy(update={"value": value})
        if data.draw(st.booleans()):
            text = data.draw(st.sampled_from(ODD_FACTOR_TEXTS))
            factors[k] = factors[k].model_copy(update={"text": text})
    update["key_factors"] = tuple(factors)
    changed = expectation.model_copy(update={"credit_score": score.model_copy(update=update)})
    subject = _with_disclosure(notice, changed)
    problems = V._disclosure_problems(subject)
    if V._disclosure_clear(subject):
        assert problems == []
    elif not problems:  # in form, though not decided from its values: only a value that
        # runs into the text around it can be read so
        assert update.keys() - {"key_factors"} or factors != list(score.key_factors)


def test_a_bureau_value_out_of_form_in_notice_and_expectation_alike_fails_v8() -> None:
    # the frame (V7) is intact, since the expectation states the same value; the
    # bureau's format is what V8 holds the disclosure to
    notice, expectation = _scored()[0]
    score = expectation.credit_score
    assert score is not None
    for update in ({"bureau_phone": "call 1-900-555-0199"}, {"score_model": "score 8"}):
        changed = expectation.model_copy(update={"credit_score": score.model_copy(update=update)})
        subject = _with_disclosure(notice, changed)
        assert V._v7_legal_frame_intact(subject)[0]
        assert not V._disclosure_clear(subject)
        assert V._disclosure_problems(subject)
        report = Verifier().verify(subject.notice, changed)
        assert report.failed == ("V8",)
        assert report == FULL.verify(subject.notice, changed)
        assert "in a form the bureau never uses" in report.checks["V8"].detail
    # and the same notice with the values in form is clear
    subject = _with_disclosure(notice, expectation)
    assert V._disclosure_clear(subject) and not V._disclosure_problems(subject)


def test_a_disclosure_that_is_not_the_expected_one_is_left_to_the_check() -> None:
    # the notice alone states the telephone out of form: the expectation's values are
    # all in form, but they are not what the disclosure says
    notice, expectation = _scored()[0]
    score = expectation.credit_score
    assert score is not None
    phone = f"telephone {score.bureau_phone}"
    odd = replace_once(notice, phone, "telephone 1-900-555-0199")
    subject = V._read(odd, expectation, PINS)
    assert not V._disclosure_clear(subject)
    assert V._disclosure_problems(subject)
    report = Verifier().verify(odd, expectation)
    assert report.failed == ("V7", "V8") and report == FULL.verify(odd, expectation)


def test_a_key_factor_value_out_of_its_codes_form_is_not_clear() -> None:
    notice, expectation = _scored()[0]
    score = expectation.credit_score
    assert score is not None
    first, *rest = score.key_factors
    odd = first.model_copy(update={"value": first.value + " or so"})
    changed = expectation.model_copy(
        update={"credit_score": score.model_copy(update={"key_factors": (odd, *rest)})}
    )
    subject = _with_disclosure(notice, changed)
    assert not V._disclosure_clear(subject)
    assert any(f"key factor {first.code}" in p for p in V._disclosure_problems(subject))


def _plan_of(pins: Any) -> Any:
    return V._frame_plan(pins, False, "auto", True, True, 2)


def test_a_line_that_may_be_a_bureau_line_by_its_values_leaves_the_disclosure_to_the_check(
    tmp_path: Path,
) -> None:
    assert _plan_of(PINS).disclosure is not None
    sources = data_copy(tmp_path)
    text = sources.frame.read_text(encoding="utf-8")
    intro = next(line for line in text.splitlines() if line.lstrip().startswith("intro:"))
    head, words = intro.split("intro: ", 1)
    # a line of text alone that begins as a key factor's line does is decided as it is
    sources.frame.write_text(text.replace(intro, f"{head}intro: '- {words}'"), encoding="utf-8")
    assert _plan_of(pins_from(sources)).disclosure is not None
    # with a value in it, whether it is one depends on the value, so the plan cannot say
    edited_intro = f"{head}intro: '- {{bureauName}} {words}'"
    sources.frame.write_text(text.replace(intro, edited_intro), encoding="utf-8")
    edited = pins_from(sources)
    assert edited.bureau_values_compose
    assert _plan_of(edited).disclosure is None


def test_a_bureau_format_that_looks_past_its_value_leaves_the_disclosure_to_the_check(
    tmp_path: Path,
) -> None:
    sources = data_copy(tmp_path)
    raw = yaml.safe_load(sources.bureau_formats.read_text(encoding="utf-8"))
    phone = raw["fields"]["bureau.phone"]
    phone["pattern"] = phone["pattern"] + r"\b"  # a word boundary reads past the value
    sources.bureau_formats.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    edited = pins_from(sources)
    assert not edited.bureau_values_compose
    assert _plan_of(edited).disclosure is None


@pytest.mark.parametrize(
    ("pattern", "composes"),
    [
        (r"PO Box [0-9]{1,6}", True),
        (r"(?:[A-Z][a-z]+)(?: [A-Z][a-z]+){0,3}", True),
        (r"(?i:toll)-free", True),
        (r"[0-9]+\b", False),
        (r"^[0-9]+", False),
        (r"[0-9]+(?=%)", False),
        (r"(?>[0-9]+)", False),
        (r"[0-9]++", False),
        (r"([0-9])\1", False),
    ],
)
def test_a_pattern_composes_only_if_it_reads_nothing_past_its_match(
    pattern: str, composes: bool
) -> None:
    assert promise_scan.composes(re.compile(pattern)) is composes


def test_a_plan_line_holding_a_newline_leaves_the_disclosure_to_the_check() -> None:
    texts, _ = V._template(PINS.frame["creditScore.agency"])
    agency: list[Any] = [texts[0]]
    for at, text in zip((13, 14, 15), texts[1:], strict=True):
        agency += [at, text]
    made = [(None, None), ("creditScore.agency", None)]
    lines = [[PINS.frame["creditScore.heading"]], agency]
    plan = V._disclosure_plan(PINS, lines, made, V._Filling.of(V._joined_pieces(lines, "\n")))
    assert plan is not None and [slot.kind.key for slot in plan.slots] == ["creditScore.agency"]
    # a literal newline would make two lines of the text of one line of the plan: here
    # a key factor's line, out of form, after the intro's
    intro = [PINS.frame["creditScore.intro"] + "\n- Accounts (forty)"]
    lines = [[PINS.frame["creditScore.heading"]], intro, agency]
    made = [(None, None), ("creditScore.intro", None), ("creditScore.agency", None)]
    assert (
        V._disclosure_plan(PINS, lines, made, V._Filling.of(V._joined_pieces(lines, "\n"))) is None
    )
