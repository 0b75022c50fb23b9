"""Arbitrary text never crashes the verifier: whatever a notice holds, every check
reports, and unexpected Unicode (zero-width, bidi controls, homoglyphs, full-width
letters, control characters) fails V8. Arbitrary documents are bad input, not crashes."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from credit.errors import NoticeInputError
from credit.fairness_terms import default_prohibited_terms, find_prohibited
from credit.guardrails import CHECK_IDS, Verifier
from credit.guardrails.verifier import _may_cite
from credit.notice_format import NoticeReason, parse_expectation, parse_notice
from notice_helpers import DECLINE_DTI, DECLINE_SCORE, notice_and_expectation, with_text

VERIFIER = Verifier()
NOTICE, EXPECTATION = notice_and_expectation(DECLINE_SCORE)
SENTENCE = "Your credit score of 575 is below our minimum of 600 for auto loans."
NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e\n]")
EXAMPLES = settings(max_examples=150, deadline=None)


def _checked(notice: Any) -> dict[str, str]:
    report = VERIFIER.verify(notice, EXPECTATION)
    assert tuple(report.checks) == CHECK_IDS
    for check in report.checks.values():
        assert not check.detail.startswith("internal error"), check.detail
    assert report.notice_sha256 == notice.sha256
    return {k: report.checks[k].detail for k in report.failed}


@EXAMPLES
@given(st.text())
def test_any_text_gets_a_report_with_every_check(text: str) -> None:
    failed = _checked(with_text(NOTICE, text))
    assert failed, "arbitrary text passed every check"
    if NOT_PRINTABLE_ASCII.search(text):
        assert "V8" in failed


@EXAMPLES
@given(st.text(min_size=1))
def test_text_inserted_into_a_reason_is_caught(inserted: str) -> None:
    notice = with_text(
        NOTICE, NOTICE.text.replace(SENTENCE, SENTENCE[:20] + inserted + SENTENCE[20:])
    )
    failed = _checked(notice)
    assert failed
    if NOT_PRINTABLE_ASCII.search(inserted):
        assert "V8" in failed


@EXAMPLES
@given(
    st.characters(
        exclude_categories=["Cs"],
        exclude_characters="\n",
        min_codepoint=0,
    ).filter(lambda ch: not " " <= ch <= "~")
)
def test_any_non_ascii_or_control_character_anywhere_fails_v8(odd: str) -> None:
    for old in ("Springfield", "Your credit score of", "Key factors"):
        failed = _checked(with_text(NOTICE, NOTICE.text.replace(old, old[:3] + odd + old[3:], 1)))
        assert "V8" in failed


_values = st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=4)


@EXAMPLES
@given(st.lists(st.builds(NoticeReason, code=st.text(), category=st.text(), values=_values)))
def test_arbitrary_machine_reasons_get_a_report(reasons: list[NoticeReason]) -> None:
    _checked(NOTICE.model_copy(update={"reasons": tuple(reasons)}))


def test_a_full_width_prohibited_term_fails_v3_after_nfkc_and_v8() -> None:
    wide = "".join(chr(ord(c) - ord("a") + 0xFF41) for c in "race")
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    text = notice.text.replace("for credit cards.\n", f"for credit cards ({wide}).\n", 1)
    report = VERIFIER.verify(with_text(notice, text), expectation)
    assert "prohibited basis race" in report.checks["V3"].detail
    assert not report.checks["V8"].passed


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@EXAMPLES
@given(_json)
def test_an_arbitrary_document_is_a_notice_or_bad_input_never_a_crash(document: Any) -> None:
    for parse in (parse_notice, parse_expectation):
        try:
            parse(document)
        except NoticeInputError as err:
            assert str(err)


@EXAMPLES
@given(st.sampled_from(sorted(NOTICE.to_wire())), _json)
def test_a_notice_with_one_field_replaced_is_valid_or_bad_input_naming_a_field(
    key: str, value: Any
) -> None:
    wire = {**NOTICE.to_wire(), key: value}
    try:
        notice = parse_notice(wire)
    except NoticeInputError as err:
        assert err.field is not None
    else:
        _checked(notice)


_TERM_WORDS = sorted(
    {w for e in default_prohibited_terms().entries for t in e.terms for w in t.split(" ")}
)
# the patterns' listed words and what stands around them ("applicants over 62", "born
# in 1960"): the patterns are tried only where one of their words is in the text
_PATTERN_WORDS = sorted({w for _, p in default_prohibited_terms().patterns for w in p.words})
_AROUND_A_PATTERN = ["62", "25", "1960", "1980s", "600", "or", "and", "are", "who", "aged"]
_AROUND_A_PATTERN += ["the", "age", "of", "in", "before", "least", "yet", "than", "your", "at"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(_TERM_WORDS)
        | st.sampled_from(_PATTERN_WORDS + _AROUND_A_PATTERN)
        | st.from_regex(r"[A-Za-z0-9']{1,8}", fullmatch=True),
        max_size=10,
    ),
    st.lists(
        st.sampled_from([" ", "  ", "-", "_", ", ", ". ", "'", "/", "\n"]), min_size=10, max_size=10
    ),
)
def test_the_quick_pre_check_never_hides_a_prohibited_term(
    words: list[str], separators: list[str]
) -> None:
    text = "".join(w + s for w, s in zip(words, separators, strict=False))
    assert _may_cite(VERIFIER.pins, text) == bool(find_prohibited(text)), text


def test_each_patterns_own_example_passes_the_quick_pre_check_and_cites() -> None:
    for _, pattern in default_prohibited_terms().patterns:
        assert _may_cite(VERIFIER.pins, pattern.example), pattern.id
        assert any(m.pattern for m in find_prohibited(pattern.example)), pattern.id
        # and without its listed words the text can hold no citation of the pattern
        bare = " ".join(
            w
            for w in re.findall(r"[A-Za-z0-9']+", pattern.example)
            if w.lower() not in pattern.words
        )
        assert not any(m.term == pattern.id for m in find_prohibited(bare)), (pattern.id, bare)
