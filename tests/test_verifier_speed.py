"""The verifier's shortcuts give the answers of the long way, and what they keep is
kept for the data it came from.

The promise scan (check V8) against the rules' own matcher over the whole text; the
grouped generic-phrase pattern (check V4) against the plain alternation; the notice's
and expectation's bytes (the canonical encoder's) read back and hashed as they are; the report built
without re-validation against the validated one; and answers kept per pinned data: a
catalogue, a legal frame or rules of the same shape, edited, get their own answers,
before and after the packaged data is used again.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from credit.canonical import canonical_bytes
from credit.guardrails import VerificationReport, Verifier, default_pins
from credit.guardrails.lock import current_pins, write_lock
from credit.guardrails.promise_scan import PromiseScan, required_literals, separators
from credit.guardrails.rules import VerifierRules, default_rules, load_rules, normalise
from credit.notice_format import Notice
from notice_helpers import (
    COUNTER_AUTO,
    DECLINE_DTI,
    DECLINE_SCORE,
    GOLDEN_IDS,
    data_copy,
    notice_and_expectation,
    pins_from,
    replace_once,
    with_text,
)

RULES = default_rules()
SCAN = PromiseScan(RULES)
FRAME_LINES = sorted(
    {line for case in GOLDEN_IDS for line in notice_and_expectation(case)[0].text.split("\n")}
)
PROMISES = [
    "we will approve",
    "We   can\n  give",
    "we would\nsurely approve",
    "we will\napprove",
    "guaranteed",
    "GUARANTEE",
    "pre-approved",
    "preapproved",
    "if you\nreapply",
    "if you apply again",
    "sure to be approved",
    "certain of approval",
    "will be\n\napproved",
    "would surely be accepted",
]
PIECES = [
    *FRAME_LINES,
    *PROMISES,
    "approve",
    "accept it",
    "unable to approve.",
    "grant",
    "extend",
    "(",
    ")",
    ".",
    ",",
    ":",
    "-",
    "'",
    "$",
    "%",
    "\n",
    "\n\n",
    " ",
    "\t",
    "we",
    "will",
    "be",
    "you",
    "caf\u00e9",
    "\u00a0",
]


def _scan_agrees(scan: PromiseScan, rules: VerifierRules, text: str) -> None:
    assert scan.promises_in(text) == rules.promises_in(text), repr(text)


# ---------------------------------------------------------------- the promise scan


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.lists(st.sampled_from(" \n")))
def test_the_promise_scan_answers_as_the_rules_do_for_any_text(
    pieces: list[str], glue: list[str]
) -> None:
    text = "".join(p + (glue[i] if i < len(glue) else "") for i, p in enumerate(pieces))
    _scan_agrees(SCAN, RULES, text)
    for line in text.split("\n"):
        _scan_agrees(SCAN, RULES, line)


@pytest.mark.parametrize("case_id", GOLDEN_IDS)
def test_the_promise_scan_finds_no_promise_in_a_genuine_notice_and_one_planted_in_it(
    case_id: str,
) -> None:
    notice, _ = notice_and_expectation(case_id)
    assert SCAN.promises_in(notice.text) == RULES.promises_in(notice.text) == []
    for promise in PROMISES:
        planted = notice.text.replace("\n\nNotice under", f"\n\n{promise}.\n\nNotice under")
        found = SCAN.promises_in(planted)
        assert found and found == RULES.promises_in(planted), promise


def test_a_promise_split_over_two_lines_is_found_as_in_the_whole_text() -> None:
    text = "Action taken: nothing yet; we will\napprove your application."
    assert SCAN.promises_in(text) == RULES.promises_in(text) == ["we-will-approve"]
    assert SCAN.promises_in("we will") == SCAN.promises_in("approve your application.") == []


def test_the_packaged_rules_take_the_scan_with_separators_and_required_literals() -> None:
    assert SCAN.cuts and SCAN.literals
    assert "." in SCAN.cuts and "-" not in SCAN.cuts  # "pre-approved" holds a hyphen
    assert "approv" in SCAN.literals and "guarantee" in SCAN.literals


def test_required_literals_are_what_every_match_holds() -> None:
    assert required_literals(re.compile(r"\bguarantee(?:d|s)?\b", re.I)) == {"guarantee"}
    assert required_literals(re.compile(r"\bpre-?(?:approved|qualified)\b")) == {
        "approved",
        "qualified",
    }
    assert required_literals(re.compile(r"\w+\s+\d")) is None  # no literal to require
    assert required_literals(re.compile(r"(?:x)*y")) == {"y"}  # x may be absent


def test_separators_are_the_characters_no_part_of_a_pattern_can_match() -> None:
    assert separators(re.compile(r"\bwe\s+will\b")) >= {".", ",", ":", "-"}
    assert "-" not in separators(re.compile(r"pre-?approved"))
    assert "." not in separators(re.compile(r"we\.will"))
    assert separators(re.compile(r"we.will")) == frozenset()  # "." matches any of them
    assert separators(re.compile(r"(?<!not )approve")) == frozenset()  # looks behind
    assert separators(re.compile(r"^approve")) == frozenset()  # an anchor
    assert separators(re.compile(r"(a)\1")) == frozenset()  # a back-reference


def _rules_with(tmp_path: Path, patterns: list[tuple[str, str]]) -> VerifierRules:
    """The packaged rules with these promise patterns in place of their own."""
    source = data_copy(tmp_path).rules
    text = source.read_text(encoding="utf-8")
    head = text[: text.index("  patterns:\n")] + "  patterns:\n"
    body = "".join(
        f"    - id: {pid}\n      description: a test pattern\n      pattern: '{pattern}'\n"
        for pid, pattern in patterns
    )
    source.write_text(head + body, encoding="utf-8")
    return load_rules(source)


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("^approve", "we are unable to\napprove it.", []),  # a line start, not the text's
        ("^approve", "approve it.", ["p"]),
        ("(?<!to )approve", "unable to\napprove.", []),  # the line alone has no "to "
        ("(?<!to )approve", "unable, approve.", ["p"]),
        ("approve.your", "approve. your", []),  # "." may match a separator: no scan
        ("approve.your", "approve your", ["p"]),
    ],
)
def test_rules_that_look_outside_a_match_take_the_plain_path_and_agree(
    tmp_path: Path, pattern: str, text: str, found: list[str]
) -> None:
    rules = _rules_with(tmp_path, [("p", pattern)])
    scan = PromiseScan(rules)
    assert scan.cuts == ""
    assert scan.promises_in(text) == rules.promises_in(text) == found


def test_rules_with_other_patterns_get_their_own_scan_and_answers(tmp_path: Path) -> None:
    rules = _rules_with(tmp_path, [("agency", r"\breporting\s+agency\b")])
    scan = PromiseScan(rules)
    notice, _ = notice_and_expectation(DECLINE_SCORE)
    assert scan.cuts and scan.literals == ("reporting",)  # the longer word
    assert scan.promises_in(notice.text) == rules.promises_in(notice.text) == ["agency"]
    assert SCAN.promises_in(notice.text) == []  # the packaged scan kept its own answer


# ---------------------------------------------------------------- the generic phrases


def _plain_generic(rules: VerifierRules) -> re.Pattern[str]:
    """The generic-phrase pattern as one alternation of every phrase, longest first."""
    body = "|".join(
        r"\s+".join(re.escape(w) for w in p.split(" "))
        for p in sorted(rules.generic_phrases, key=lambda p: (-len(p), p))
    )
    return re.compile(rf"(?<![^\W_])(?:{body})(?![^\W_])")


GENERIC_WORDS = sorted({w for p in RULES.generic_phrases for w in p.split(" ")})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*GENERIC_WORDS, "the", "a", "_", "-", ".", "x"]), max_size=12))
def test_the_grouped_generic_pattern_finds_what_the_plain_alternation_finds(
    words: list[str],
) -> None:
    sentence = normalise(" ".join(words))
    plain = _plain_generic(RULES)
    assert [m.span() for m in RULES.generic_pattern.finditer(sentence)] == [
        m.span() for m in plain.finditer(sentence)
    ], sentence


def test_a_generic_phrase_is_found_whole_and_an_ordinary_sentence_has_none() -> None:
    assert RULES.generic_phrases_in("It does not meet our lending criteria.") == [
        "does not meet",
        "our lending criteria",
    ]
    assert RULES.generic_phrases_in("Your debt-to-income ratio is 52.1%.") == []


# ---------------------------------------------------------------- canonical bytes


TRICKY = [
    'a "quoted" word',
    "a back\\slash",
    "tab\tand\rreturn",
    "\x00\x1f\x7f control",
    "caf\u00e9 \u2028 \u2029 \U0001f600",
    "\u200b zero width",
]


@pytest.mark.parametrize("odd", TRICKY)
def test_a_notice_with_any_character_reads_back_from_the_bytes_its_hash_is_of(odd: str) -> None:
    import hashlib
    import json

    notice, _ = notice_and_expectation(DECLINE_DTI)
    edited = with_text(notice, notice.text + odd)
    data = edited.canonical_bytes()
    assert json.loads(data)["text"] == edited.text
    assert edited.sha256 == hashlib.sha256(data).hexdigest() != notice.sha256


def test_an_expectation_copied_with_a_change_has_the_hash_of_the_copy() -> None:
    from credit.canonical import sha256_hex

    _, expectation = notice_and_expectation(COUNTER_AUTO)
    before = expectation.sha256
    for change in ({"case_id": "C-OTHER"}, {"offer": None}, {"credit_score": None}):
        edited = expectation.model_copy(update=change)
        assert edited.sha256 == sha256_hex(canonical_bytes(edited.to_wire()))
        assert edited.sha256 != before, change
    assert expectation.sha256 == before


def test_a_notice_with_a_lone_surrogate_has_no_bytes() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    broken = Notice.model_construct(**{**dict(notice), "text": "a \ud800 b"})
    with pytest.raises(UnicodeEncodeError):
        broken.canonical_bytes()


# ---------------------------------------------------------------- the report


@pytest.mark.parametrize("case_id", GOLDEN_IDS)
def test_the_report_is_the_validated_report_of_the_same_results(case_id: str) -> None:
    notice, expectation = notice_and_expectation(case_id)
    for checked in (notice, replace_once(notice, "Springfield", "Shelbyville")):
        report = Verifier().verify(checked, expectation)
        again = VerificationReport.of(
            case_id=report.case_id,
            notice_sha256=checked.sha256,
            expectation_sha256=expectation.sha256,
            checks=list(report.results),
        )
        assert report == again
        assert report.to_wire() == again.to_wire()
    assert not Verifier().verify(checked, expectation).passed


def test_a_replaced_check_that_returns_no_bool_is_still_validated() -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    odd = Verifier(checks={"V2": lambda s: (None, "no answer")})  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="passed"):
        odd.verify(notice, expectation)


# ---------------------------------------------------------------- kept per data


def _accepted(tmp_path: Path, edit: str, old: str, new: str) -> Verifier:
    """A verifier over a copy of the packaged data with one file edited (same shape)
    and the edit accepted into the lock."""
    sources = data_copy(tmp_path)
    path = getattr(sources, edit)
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    write_lock(
        sources.lock,
        current_pins(sources),
        accepted_by="a reviewer",
        accepted_on=dt.date(2026, 12, 1),
    )
    pins = pins_from(sources)
    assert pins.drift == ()
    return Verifier(pins)


def test_an_edited_catalogue_wording_gets_its_own_answer_not_the_packaged_one(
    tmp_path: Path,
) -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    packaged = Verifier()
    assert packaged.verify(notice, expectation).passed
    edited = _accepted(tmp_path, "catalogue", "is above our maximum", "is over our maximum")
    report = edited.verify(notice, expectation)
    assert "is not an approved wording" in report.checks["V8"].detail
    assert packaged.verify(notice, expectation).passed  # and the packaged answer stands
    assert Verifier(default_pins()).verify(notice, expectation).passed


def test_an_edited_legal_frame_gets_its_own_frame_not_the_packaged_one(tmp_path: Path) -> None:
    notice, expectation = notice_and_expectation(COUNTER_AUTO)
    edited = _accepted(tmp_path, "frame", "Washington, DC 20580", "Washington, DC 20581")
    report = edited.verify(notice, expectation)
    assert not report.checks["V7"].passed
    assert "do not hash to the pinned frame" in report.checks["V7"].detail
    assert Verifier().verify(notice, expectation).passed


def test_edited_rules_get_their_own_promise_answers_not_the_packaged_ones(
    tmp_path: Path,
) -> None:
    notice, expectation = notice_and_expectation(DECLINE_SCORE)
    edited = _accepted(
        tmp_path, "rules", "pattern: '\\bguarantee(?:d|s)?\\b'", "pattern: '\\bfree\\s+copy\\b'"
    )
    assert "makes a promise (guarantee)" in edited.verify(notice, expectation).checks["V8"].detail
    assert Verifier().verify(notice, expectation).passed
    assert "makes a promise (guarantee)" in edited.verify(notice, expectation).checks["V8"].detail
