"""The prohibited-terms data file, its strict loader, and the whole-word matcher."""

from __future__ import annotations

import hashlib
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from credit.catalogue import default_catalogue
from credit.errors import PolicyError
from credit.fairness_terms import (
    _RUN,
    REQUIRED_BASES,
    ProhibitedTerms,
    canonical_term,
    default_prohibited_terms,
    default_prohibited_terms_path,
    find_prohibited,
    load_prohibited_terms,
    normalise_key,
    normalise_text,
)
from credit.models import (
    Application,
    Bureau,
    Case,
    CreditReport,
    Decision,
    Derogatory,
    Dispute,
    KeyFactor,
    MonitoringData,
    Terms,
)
from credit.policy import default_policy
from reference_matcher import ReferenceMatcher

TERMS = default_prohibited_terms()


def names(text: str) -> list[str]:
    return [m.name for m in find_prohibited(text)]


# ---------------------------------------------------------------- the data file


def test_the_shipped_file_lists_every_ecoa_basis_and_ethnicity_with_a_reference() -> None:
    assert [e.name for e in TERMS.bases] == list(REQUIRED_BASES)
    for entry in TERMS.entries:
        assert entry.reference.strip()
        assert entry.terms and entry.keys


def test_the_shipped_file_is_versioned_dated_and_hashed() -> None:
    raw = default_prohibited_terms_path().read_bytes()
    assert TERMS.name == "prohibited-terms"
    assert TERMS.version == "2026.2"
    assert TERMS.effective_date.isoformat() == "2026-12-01"
    assert "1002.2(z)" in TERMS.reference
    assert TERMS.sha256 == hashlib.sha256(raw).hexdigest()


def test_every_proxy_names_its_bases_and_why() -> None:
    assert {e.name for e in TERMS.proxies} >= {
        "zipCode",
        "neighborhood",
        "firstName",
        "surname",
        "primaryLanguage",
        "placeOfBirth",
        "maidenName",
    }
    for proxy in TERMS.proxies:
        assert proxy.bases and set(proxy.bases) <= set(REQUIRED_BASES)
        assert proxy.reason


def test_every_monitoring_field_is_the_key_of_a_prohibited_basis() -> None:
    for name in MonitoringData.model_fields:
        entry = TERMS.entry_for_key(name)
        assert entry is not None and entry.kind == "basis", name


@pytest.mark.parametrize(
    "model", [Application, Bureau, CreditReport, Derogatory, Dispute, KeyFactor, Decision, Terms]
)
def test_no_key_is_a_field_the_underwriter_legitimately_reads_or_writes(model: Any) -> None:
    for name, info in model.model_fields.items():
        for spelling in (name, info.alias or name):
            assert TERMS.entry_for_key(spelling) is None, (model.__name__, spelling)


def test_no_key_is_a_field_of_the_case_itself_other_than_monitoring() -> None:
    for name in Case.model_fields:
        assert TERMS.entry_for_key(name) is None, name


def test_no_key_is_a_name_in_the_policy_document() -> None:
    document = default_policy().to_document()
    words = set(document) | {part for key in document["parameters"] for part in key.split(".")}
    for word in words:
        assert TERMS.entry_for_key(word) is None, word


def test_no_approved_reason_wording_cites_a_prohibited_basis() -> None:
    for code, entry in default_catalogue().entries.items():
        for wording in entry.wordings:
            assert find_prohibited(wording) == [], (code, wording)


# ---------------------------------------------------------------- the matcher


@pytest.mark.parametrize(
    "text",
    [
        "because of your age",
        "AGE",
        "Age-based pricing",
        "my_age",
        "ａｇｅ",  # full-width letters, NFKC-normalised
        "a\u200bge",  # a zero-width space inside the word
        "a\u00adge",  # a soft hyphen inside the word
    ],
)
def test_age_as_a_whole_word_in_any_form_cites_the_age_basis(text: str) -> None:
    assert names(text) == ["age"]


@pytest.mark.parametrize(
    "text", ["percentage", "mortgage", "page", "agent", "agenda", "usage", "age21", "stage"]
)
def test_age_inside_another_word_is_not_a_citation(text: str) -> None:
    assert names(text) == []


@pytest.mark.parametrize("text", ["Essex", "Sussex", "sextant", "Middlesex"])
def test_sex_inside_another_word_is_not_a_citation(text: str) -> None:
    assert names(text) == []


def test_sex_as_a_whole_word_cites_the_sex_basis() -> None:
    assert names("Applicant sex: F") == ["sex"]


@pytest.mark.parametrize(
    "text",
    ["date of birth", "Date-of-Birth", "date_of_birth", "DATE  OF\tBIRTH", "dateOfBirth", "dob"],
)
def test_a_phrase_matches_across_any_separator_and_as_a_field_name(text: str) -> None:
    assert names(text) == ["age"]


def test_a_match_names_the_basis_the_listed_term_and_where_it_is() -> None:
    [match] = find_prohibited("Declined because of your Marital Status.")
    assert match.kind == "basis"
    assert match.name == "maritalStatus"
    assert match.bases == ("maritalStatus",)
    assert match.term == "marital status"
    norm = normalise_text("Declined because of your Marital Status.")
    assert norm[match.start : match.end] == match.text == "marital status"
    assert "1002.2(z)" in match.reference


def test_a_proxy_match_says_it_is_a_proxy_and_for_which_bases() -> None:
    [match] = find_prohibited("priced on zip code 90210")
    assert match.kind == "proxy"
    assert match.name == "zipCode"
    assert set(match.bases) == {"race", "nationalOrigin", "ethnicity"}
    assert match.describe().startswith("proxy zipCode")


def test_the_longest_listed_phrase_wins_where_phrases_overlap() -> None:
    assert names("your Christian name") == ["firstName"]
    assert names("a Christian charity") == ["religion"]


def test_every_citation_in_a_text_is_found_in_order() -> None:
    text = "age, then religion, then the applicant's surname"
    assert names(text) == ["age", "religion", "surname"]


def test_an_exempt_phrase_is_not_a_citation_but_the_word_elsewhere_is() -> None:
    assert names("Average age of accounts is too low") == []
    assert names("the vehicle age is 9 years") == []
    assert names("average age of accounts is low and so is your age") == ["age"]


def test_social_security_number_is_an_identifier_but_social_security_income_is_a_basis() -> None:
    assert names("verified the Social Security number") == []
    assert names("income from Social Security") == ["publicAssistanceIncome"]


def test_typographic_apostrophes_match_plain_ones() -> None:
    assert names("mother\u2019s maiden name") == ["maidenName"]


def test_a_key_is_recognised_in_any_spelling() -> None:
    age = TERMS.entry_for_key("Date_Of_Birth")
    assert age is not None and age.name == "age"
    zip_code = TERMS.entry_for_key("postalCode")
    assert zip_code is not None and zip_code.kind == "proxy"
    assert TERMS.entry_for_key("annualIncome") is None


def test_normalised_keys_keep_letters_and_digits_only() -> None:
    assert normalise_key("date_of-Birth ") == "dateofbirth"
    assert normalise_key("ＺＩＰ5") == "zip5"
    assert canonical_term("Date-of  Birth") == "date of birth"


_VOCAB = TERMS.vocabulary()
_EXEMPT_WORDS = {w for e in TERMS.entries for p in e.exempt for w in canonical_term(p).split()}
_unlisted = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=10).filter(
    lambda w: normalise_key(w) not in _VOCAB
)
_filler = _unlisted.filter(lambda w: normalise_key(w) not in _EXEMPT_WORDS)
_separators = st.sampled_from([" ", ", ", ". ", "-", "_", "; ", "\n", " (", ") "])


@settings(max_examples=300)
@given(st.lists(st.tuples(_unlisted, _separators), max_size=25))
def test_text_made_only_of_unlisted_words_never_matches(parts: list[tuple[str, str]]) -> None:
    text = "".join(word + sep for word, sep in parts)
    assert find_prohibited(text) == []


_all_terms = [(e.name, t) for e in TERMS.entries for t in e.terms]


@settings(max_examples=300)
@given(
    st.sampled_from(_all_terms),
    st.lists(_filler, max_size=4),
    st.lists(_filler, max_size=4),
    st.booleans(),
)
def test_every_listed_term_between_unlisted_words_is_found(
    listed: tuple[str, str], before: list[str], after: list[str], upper: bool
) -> None:
    name, term = listed
    text = " ".join([*before, term.upper() if upper else term, *after])
    assert [(m.name, m.term) for m in find_prohibited(text)] == [(name, term)]


# The matcher against a second implementation (tests/reference_matcher.py: one regular
# expression alternating every term), over texts built from the file's own terms,
# exempt phrases, keys, pattern words and pieces of them, joined by every kind of
# separator, in any case, with typographic apostrophes and full-width letters.
_REFERENCE = ReferenceMatcher(TERMS)
_pieces = sorted(
    {t for e in TERMS.entries for t in (*e.terms, *e.exempt, *e.keys)}
    | {w for e in TERMS.entries for t in (*e.terms, *e.exempt) for w in t.split()}
    | {w for _, p in TERMS.patterns for w in p.words}
    | {"62", "1950", "or", "over", "the", "age", "of", "in", "1960s", "x", "’s", "age2"}
)
_joins = st.sampled_from(
    [" ", "  ", "-", "_", "\u2013", " - ", ", ", ".", "'", "’", "", "\n", "\u200b", " (", "/"]
)


def _variant(word: str, how: int) -> str:
    if how == 1:
        return word.upper()
    if how == 2:
        return "".join(chr(ord(c) + 0xFEE0) if "a" <= c <= "z" else c for c in word)
    return word


@settings(max_examples=600, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_pieces), st.integers(0, 2), _joins), min_size=1, max_size=14
    )
)
def test_the_matcher_finds_what_one_alternating_regular_expression_finds(
    parts: list[tuple[str, int, str]],
) -> None:
    text = "".join(_variant(word, how) + join for word, how, join in parts)
    assert TERMS.find(text) == _REFERENCE.find(text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_pieces), st.integers(0, 2), _joins), min_size=1, max_size=8)
)
def test_the_answer_kept_for_a_text_is_the_one_the_matcher_gives_and_a_list_of_its_own(
    parts: list[tuple[str, int, str]],
) -> None:
    text = "".join(_variant(word, how) + join for word, how, join in parts)
    first = TERMS.find(text)
    assert first == TERMS._find(text)  # computed now
    first.append(first[0] if first else _REFERENCE.find("age")[0])  # the caller's to change
    again = TERMS.find(text)  # kept
    assert again == TERMS._find(text) == _REFERENCE.find(text)


def test_a_text_without_every_word_of_a_phrase_is_not_searched_for_it() -> None:
    # "on" begins "on disability" and "on unemployment": a policy line with "on" and
    # neither of the others cannot hold them, and the phrase index is not walked.
    index = TERMS._index
    line = "pricing.auto.prime.apr=6.49: payment 411.39 on 24480.00 over 72 months"
    runs = set(_RUN.findall(normalise_text(line)))
    assert "on" in runs and not index.may_match(runs)
    assert TERMS._find(line) == [] == _REFERENCE.find(line)
    # Every word present is not yet a match: the words must stand one after the other.
    scattered = "disability was noted on the file"
    assert index.may_match(set(_RUN.findall(normalise_text(scattered))))
    assert TERMS._find(scattered) == _REFERENCE.find(scattered)
    together = "the applicant is on disability"
    assert [m.term for m in TERMS._find(together)] == [m.term for m in _REFERENCE.find(together)]
    assert TERMS._find(together)


def test_the_kept_answers_are_bounded() -> None:
    from credit.fairness_terms import _FOUND_KEPT

    terms = default_prohibited_terms()
    for i in range(_FOUND_KEPT + 10):
        terms.find(f"applicant number {i}")
    assert 0 < len(terms._found) <= _FOUND_KEPT
    assert terms.find("because of your age") == _REFERENCE.find("because of your age")


def test_the_matcher_agrees_with_the_reference_on_the_notices_words() -> None:
    texts = [w for e in default_catalogue().entries.values() for w in e.wordings]
    texts += [e.category for e in default_catalogue().entries.values()]
    texts += [
        "because of your age and marital status; applicants over 62 and people born in 1950",
        "the average age of accounts, not your age; social security number vs social security",
    ]
    for text in texts:
        assert TERMS.find(text) == _REFERENCE.find(text), text


# ---------------------------------------------------------------- the loader


def _document(terms: ProhibitedTerms = TERMS) -> dict[str, Any]:
    """The shipped file as a plain document, to change one thing at a time."""
    bases: dict[str, Any] = {}
    proxies: dict[str, Any] = {}
    for e in terms.entries:
        body: dict[str, Any] = {"label": e.label, "reference": e.reference}
        if e.kind == "proxy":
            body["proxyFor"] = list(e.bases)
            body["reason"] = e.reason
        body["terms"] = list(e.terms)
        body["keys"] = list(e.keys)
        if e.exempt:
            body["exempt"] = list(e.exempt)
        if e.patterns:
            body["patterns"] = [
                {
                    "id": p.id,
                    "description": p.description,
                    "words": list(p.words),
                    "pattern": p.pattern,
                    "example": p.example,
                }
                for p in e.patterns
            ]
        (bases if e.kind == "basis" else proxies)[e.name] = body
    return {
        "name": terms.name,
        "version": terms.version,
        "effectiveDate": terms.effective_date.isoformat(),
        "reference": terms.reference,
        "bases": bases,
        "proxies": proxies,
    }


def _write(tmp_path: Path, doc: dict[str, Any], extra: str = "") -> Path:
    path = tmp_path / "prohibited-terms.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True) + extra, "utf-8")
    return path


def _error(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load_prohibited_terms(path)
    return info.value


def test_a_document_rebuilt_from_the_shipped_file_loads_the_same(tmp_path: Path) -> None:
    loaded = load_prohibited_terms(_write(tmp_path, _document()))
    assert loaded.entries == TERMS.entries


def test_an_unknown_top_level_key_is_an_error_naming_file_and_key(tmp_path: Path) -> None:
    doc = _document()
    doc["owner"] = "someone"
    path = _write(tmp_path, doc)
    err = _error(path)
    assert (err.file, err.key, err.message) == (str(path), "owner", "unknown key")


def test_an_unknown_key_inside_a_basis_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["age"]["synonyms"] = ["elderly"]
    path = _write(tmp_path, doc)
    err = _error(path)
    assert (err.file, err.key, err.message) == (str(path), "bases.age.synonyms", "unknown key")


def test_an_unknown_basis_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["height"] = dict(doc["bases"]["color"])
    err = _error(_write(tmp_path, doc))
    assert (err.key, err.message) == ("bases.height", "unknown key")


def test_a_missing_basis_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    del doc["bases"]["ethnicity"]
    err = _error(_write(tmp_path, doc))
    assert (err.key, err.message) == ("bases.ethnicity", "missing key")


def test_a_basis_without_a_reference_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    del doc["bases"]["color"]["reference"]
    path = _write(tmp_path, doc)
    err = _error(path)
    assert (err.file, err.key, err.message) == (str(path), "bases.color.reference", "missing key")


def test_a_proxy_without_a_reference_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    del doc["proxies"]["zipCode"]["reference"]
    err = _error(_write(tmp_path, doc))
    assert (err.key, err.message) == ("proxies.zipCode.reference", "missing key")


def test_an_empty_reference_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["age"]["reference"] = "  "
    err = _error(_write(tmp_path, doc))
    assert err.key == "bases.age.reference"


def test_a_duplicate_yaml_key_is_an_error_naming_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _document(), extra="name: prohibited-terms-again\n")
    lines = path.read_text("utf-8").splitlines()
    err = _error(path)
    assert (err.file, err.key) == (str(path), "name")
    assert err.message == f"duplicate key on line {len(lines)}"


def test_a_term_listed_under_two_bases_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["age"]["terms"].append("religion")
    err = _error(_write(tmp_path, doc))
    n = len(doc["bases"]["age"]["terms"]) - 1
    assert err.key == f"bases.age.terms[{n}]"
    assert err.message == "term 'religion' is already listed at bases.religion.terms[0]"


def test_the_same_phrase_with_another_separator_is_the_same_term(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["age"]["terms"].append("date-of-birth")
    err = _error(_write(tmp_path, doc))
    assert "already listed" in err.message


def test_a_key_listed_twice_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["proxies"]["surname"]["keys"].append("dob")
    err = _error(_write(tmp_path, doc))
    assert err.key == f"proxies.surname.keys[{len(doc['proxies']['surname']['keys']) - 1}]"
    assert "already listed at bases.age.keys" in err.message


def test_a_term_not_written_normalised_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["age"]["terms"][0] = "Age"
    err = _error(_write(tmp_path, doc))
    assert err.key == "bases.age.terms[0]"
    assert err.message == "term 'Age' must be written normalised, as 'age'"


def test_a_key_not_written_normalised_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["age"]["keys"][0] = "dateOfBirth"
    err = _error(_write(tmp_path, doc))
    assert err.key == "bases.age.keys[0]"
    assert "as 'dateofbirth'" in err.message


def test_an_exempt_phrase_must_contain_a_term_of_its_basis(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["age"]["exempt"].append("length of credit history")
    err = _error(_write(tmp_path, doc))
    assert err.key == f"bases.age.exempt[{len(doc['bases']['age']['exempt']) - 1}]"
    assert "contains none of the terms of age" in err.message


def test_a_proxy_for_an_unknown_basis_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["proxies"]["zipCode"]["proxyFor"] = ["race", "height"]
    err = _error(_write(tmp_path, doc))
    assert err.key == "proxies.zipCode.proxyFor[1]"


def test_a_key_that_spells_another_entrys_term_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["proxies"]["surname"]["keys"].append("mosque")
    err = _error(_write(tmp_path, doc))
    assert err.key == f"proxies.surname.keys[{len(doc['proxies']['surname']['keys']) - 1}]"
    assert "spells a term of religion" in err.message


def test_an_empty_term_list_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["color"]["terms"] = []
    err = _error(_write(tmp_path, doc))
    assert (err.key, err.message) == ("bases.color.terms", "expected a non-empty list")


def test_a_bad_effective_date_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["effectiveDate"] = "2026-13-01"
    err = _error(_write(tmp_path, doc))
    assert err.key == "effectiveDate"


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    err = _error(tmp_path / "absent.yaml")
    assert err.file == str(tmp_path / "absent.yaml")


# ---------------------------------------------------------------- patterns


def test_a_pattern_match_names_its_basis_and_pattern_and_is_found_in_order() -> None:
    found = find_prohibited("declined for applicants over 62 and because of your sex")
    assert [(m.name, m.term, m.pattern) for m in found] == [
        ("age", "age-over-under", True),
        ("sex", "sex", False),
    ]
    assert (
        found[0].describe() == "prohibited basis age (pattern age-over-under: 'applicants over 62')"
    )
    assert found[0].text == "applicants over 62"


def test_every_shipped_pattern_matches_its_example_and_lists_its_words() -> None:
    assert TERMS.patterns, "the shipped file has no pattern"
    for entry, pattern in TERMS.patterns:
        assert [m.term for m in find_prohibited(pattern.example)][:1] == [pattern.id], pattern
        assert set(pattern.words) <= TERMS.vocabulary()
        assert entry.kind == "basis"


def _patterned(tmp_path: Path, **pattern: Any) -> Path:
    doc = _document()
    doc["bases"]["age"]["patterns"] = [
        {
            "id": "widget-age",
            "description": "a test pattern",
            "words": ["foo"],
            "pattern": "(?:foo|bar) [0-9]+",
            "example": "foo 12",
            **pattern,
        }
    ]
    return _write(tmp_path, doc)


def test_a_pattern_match_counts_only_where_it_holds_one_of_its_words(tmp_path: Path) -> None:
    terms = load_prohibited_terms(_patterned(tmp_path))
    assert [m.term for m in terms.find("a foo 12 here")] == ["widget-age"]
    assert terms.find("a bar 12 here") == []  # the pattern matches, but without a listed word
    assert terms.find("afoo 12") == []  # whole words only


def test_a_pattern_inside_an_exempt_phrase_of_its_basis_is_not_a_citation(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["age"]["patterns"] = [
        {
            "id": "age-of-n",
            "description": "an age of n",
            "words": ["age"],
            "pattern": "age of [0-9]+",
            "example": "an age of 62",
        }
    ]
    doc["bases"]["age"]["exempt"].append("age of 12 accounts")
    terms = load_prohibited_terms(_write(tmp_path, doc))
    assert terms.find("the age of 12 accounts") == []
    assert [m.term for m in terms.find("an age of 62")] == ["age", "age-of-n"]


def test_past_an_exempt_phrase_a_term_beginning_inside_it_is_still_found(tmp_path: Path) -> None:
    # "alpha beta" (age) lies in an exempt phrase of age; the search goes on from its
    # second word, where "beta gamma" (race) begins: that one is a citation
    doc = _document()
    doc["bases"]["age"]["terms"].append("alpha beta")
    doc["bases"]["age"]["exempt"].append("alpha beta gamma")
    doc["bases"]["race"]["terms"].append("beta gamma")
    terms = load_prohibited_terms(_write(tmp_path, doc))
    found = terms.find("alpha beta gamma")
    assert [(m.name, m.term, m.start) for m in found] == [("race", "beta gamma", 6)]
    assert found == ReferenceMatcher(terms).find("alpha beta gamma")


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        ({"pattern": "(foo) [0-9]+"}, "pattern", "may not have capturing groups"),
        ({"pattern": "foo **"}, "pattern", "not a valid pattern"),
        ({"example": "bar 12"}, "example", "does not match its example 'bar 12' with one of its"),
        ({"example": "foo twelve"}, "example", "does not match its example"),
        ({"words": ["Foo"]}, "words[0]", "a listed word is lower-case letters or digits"),
        ({"words": []}, "words", "expected a non-empty list"),
    ],
)
def test_a_bad_pattern_is_an_error_naming_its_key(
    tmp_path: Path, change: dict[str, Any], key: str, message: str
) -> None:
    err = _error(_patterned(tmp_path, **change))
    assert err.key == f"bases.age.patterns[0].{key}"
    assert message in err.message


def test_a_pattern_id_listed_twice_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    doc["bases"]["ethnicity"]["patterns"] = [dict(doc["bases"]["age"]["patterns"][0])]
    err = _error(_write(tmp_path, doc))
    assert err.key == "bases.ethnicity.patterns[0].id"
    assert "pattern id 'age-over-under' is listed twice" in err.message


def test_a_pattern_missing_its_example_is_an_error(tmp_path: Path) -> None:
    doc = _document()
    del doc["bases"]["age"]["patterns"][0]["example"]
    err = _error(_write(tmp_path, doc))
    assert (err.key, err.message) == ("bases.age.patterns[0].example", "missing key")
