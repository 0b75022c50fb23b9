"""The fair-lending guard: every prohibited basis and synonym is redacted by field name,
at any depth, under any spelling that normalises to a listed key."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import auto_case
from credit.fairness_terms import default_prohibited_terms
from credit.governance.guard import (
    REDACTED_VALUE,
    FairLendingGuard,
    Redaction,
    default_guard,
    find_prohibited_keys,
    normalise_key,
    opens_json,
    redact,
)
from credit.policy import default_policy

TERMS = default_prohibited_terms()
ENUMERATED_BASES = (
    "race",
    "ethnicity",
    "color",
    "religion",
    "nationalOrigin",
    "sex",
    "maritalStatus",
    "age",
    "publicAssistanceIncome",
)
EVERY_KEY = [(entry.name, key) for entry in TERMS.entries for key in entry.keys]


def spellings(key: str) -> list[str]:
    """Spellings of a normalised key that must normalise back to it."""
    return [
        key,
        key.upper(),
        key.capitalize(),
        "_".join(key),  # d_o_b
        "-".join(key).upper(),  # D-O-B
        f"{key[: len(key) // 2]} {key[len(key) // 2 :].upper()}",
        f"{key[:1].upper()}{key[1:]}_",
    ]


def nested(key: str, value: Any = "x") -> dict[str, Any]:
    """``key`` three levels down, inside a list, beside an innocuous field."""
    return {"outer": {"items": [{"keep": 1}, {"inner": {key: value, "keep": 2}}]}}


def test_the_guard_covers_every_enumerated_ecoa_basis_from_the_data_file() -> None:
    covered = {basis for basis, _ in EVERY_KEY}
    assert set(ENUMERATED_BASES) <= covered
    for basis in ENUMERATED_BASES:
        assert TERMS[basis].keys, f"{basis} lists no field names"


@pytest.mark.parametrize(("basis", "key"), EVERY_KEY, ids=[f"{b}-{k}" for b, k in EVERY_KEY])
def test_every_listed_key_is_redacted_at_depth_inside_a_list_under_every_spelling(
    basis: str, key: str
) -> None:
    for spelling in spellings(key):
        assert normalise_key(spelling) == key
        cleaned, found = redact(nested(spelling))
        assert cleaned == {"outer": {"items": [{"keep": 1}, {"inner": {"keep": 2}}]}}
        assert found == [
            Redaction(
                f"outer.items[1].inner.{spelling}",
                spelling,
                basis,
                TERMS[basis].kind,
            )
        ]


@pytest.mark.parametrize(
    ("key", "basis"),
    [
        ("Date_Of-Birth", "age"),
        ("dateOfBirth", "age"),
        ("DATE_OF_BIRTH", "age"),
        ("dob", "age"),
        ("birthDate", "age"),
        ("gender", "sex"),
        ("spouse", "maritalStatus"),
        ("citizenship", "nationalOrigin"),
        ("Race", "race"),
        ("ethnicity", "ethnicity"),
        ("skinColor", "color"),
        ("religion", "religion"),
        ("national_origin", "nationalOrigin"),
        ("marital-status", "maritalStatus"),
        ("publicAssistanceIncome", "publicAssistanceIncome"),
        ("food_stamps", "publicAssistanceIncome"),
    ],
)
def test_common_synonyms_are_redacted_with_their_basis(key: str, basis: str) -> None:
    cleaned, found = redact({"application": {key: "?", "product": "auto"}})
    assert cleaned == {"application": {"product": "auto"}}
    assert [(r.path, r.basis) for r in found] == [(f"application.{key}", basis)]


def test_a_prohibited_field_is_redacted_in_every_item_of_a_list_with_its_index() -> None:
    value = {"people": [{"age": 30}, {"name": "n"}, {"AGE": 40}, [{"gender": "f"}]]}
    cleaned, found = redact(value)
    assert cleaned == {"people": [{}, {"name": "n"}, {}, [{}]]}
    assert [r.path for r in found] == ["people[0].age", "people[2].AGE", "people[3][0].gender"]


def test_names_that_merely_contain_a_basis_are_kept() -> None:
    value = {
        "ageOfOldestAccount": 120,
        "averageAccountAge": 60,
        "percentage": "34.0",
        "mortgage": True,
        "usage": 1,
        "Essex": "county",
        "raceway": "no",
    }
    cleaned, found = redact(value)
    assert cleaned == value
    assert found == []


def test_a_real_case_document_and_the_policy_carry_nothing_to_redact() -> None:
    case = auto_case()
    assert find_prohibited_keys(case) == []
    assert find_prohibited_keys(default_policy().to_document()) == []


def test_redaction_never_changes_its_input_and_keeps_tuples_as_tuples() -> None:
    value = {"a": ({"dob": "1980-01-01", "b": [1, {"sex": "F"}]},), "c": "d"}
    before = copy.deepcopy(value)
    cleaned, found = redact(value)
    assert value == before
    assert cleaned == {"a": ({"b": [1, {}]},), "c": "d"}
    assert isinstance(cleaned["a"], tuple)
    assert len(found) == 2


def test_a_prohibited_field_is_removed_with_everything_under_it() -> None:
    cleaned, found = redact({"monitoringCopy": {"spouse": {"age": 40, "gender": "m"}}})
    assert cleaned == {"monitoringCopy": {}}
    assert [r.path for r in found] == ["monitoringCopy.spouse"]


def test_the_post_check_finds_what_redaction_removes_and_nothing_after_it() -> None:
    value = nested("maritalStatus") | {"zip": "00000"}
    found = find_prohibited_keys(value)
    assert [(r.path, r.basis, r.kind) for r in found] == [
        ("outer.items[1].inner.maritalStatus", "maritalStatus", "basis"),
        ("zip", "zipCode", "proxy"),
    ]
    cleaned, _ = redact(value)
    assert find_prohibited_keys(cleaned) == []


def test_proxies_are_redacted_by_default_and_kept_when_the_guard_is_told_to() -> None:
    value = {"zipCode": "00000", "surname": "S", "dob": "x"}
    assert redact(value).value == {}
    basis_only = FairLendingGuard(include_proxies=False)
    assert basis_only.redact(value).value == {"zipCode": "00000", "surname": "S"}


def test_extract_hands_back_each_removed_value_for_the_vault() -> None:
    cleaned, pairs = default_guard().extract({"a": {"DOB": "1980-01-01"}, "b": 1})
    assert cleaned == {"a": {}, "b": 1}
    assert [(r.path, v) for r, v in pairs] == [("a.DOB", "1980-01-01")]


def test_a_redaction_has_a_wire_form_without_the_value() -> None:
    (found,) = redact({"dob": "1980-01-01"}).redactions
    assert found.to_wire() == {
        "path": "dob",
        "key": "dob",
        "basis": "age",
        "kind": "basis",
        "match": "key",
    }


# ------------------------------------------------------------------ property

PROHIBITED_SPELLINGS = sorted({s for _, key in EVERY_KEY for s in spellings(key)})
INNOCUOUS = ["product", "score", "items", "name", "value", "ageOfAccounts", "x_y", "Percent"]
# Free-text keys leave out the path punctuation, so a path names one field only.
free_keys = st.text(alphabet=st.characters(exclude_characters=".[]"), max_size=12)
keys = st.one_of(st.sampled_from(PROHIBITED_SPELLINGS), st.sampled_from(INNOCUOUS), free_keys)
leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))


def trees(leaf: st.SearchStrategy[Any], key: st.SearchStrategy[str], **size: int) -> Any:
    """JSON-like values of lists and objects (keys drawn from ``key``) over ``leaf``."""
    return st.recursive(
        leaf,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(key, children, max_size=size["max_keys"]),
        ),
        max_leaves=size["max_leaves"],
    )


json_values = trees(leaves, keys, max_keys=5, max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_no_redacted_value_ever_keeps_a_prohibited_key_and_every_removal_is_listed(
    value: Any,
) -> None:
    cleaned, found = redact(value)
    assert find_prohibited_keys(cleaned) == []  # no prohibited key, no value citing one
    # The fields removed are exactly the outermost prohibited fields of the input.
    everything = [r.path for r in find_prohibited_keys(value, values=False)]
    outermost = [
        p
        for p in everything
        if not any(p.startswith(q + ".") or p.startswith(q + "[") for q in everything if q != p)
    ]
    assert sorted(r.path for r in found if r.match == "key") == sorted(outermost)
    # A value is redacted only where its field was kept.
    for r in found:
        if r.match == "value":
            assert not any(r.path == q or r.path.startswith((q + ".", q + "[")) for q in outermost)


def _at(value: Any, path: str) -> Any:
    """What a redaction's path names in ``value`` (``a.b[0][1].c``; "" is the value)."""
    for part in [p for p in path.replace("[", ".[").split(".") if p]:
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return value


CITING = ["the applicant is married", "account opened at age 19", "receives welfare"]
PLAIN_TEXT = ["late30", "Number of accounts with delinquency", "34%", "2026-01-31"]
texts = st.sampled_from(CITING + PLAIN_TEXT)
plain_keys = st.sampled_from(["kind", "note", "items", "detail", "lines", "x"])
text_trees = trees(texts, plain_keys, max_keys=4, max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(text_trees, st.sampled_from(["", "creditReport"]))
def test_each_value_redaction_names_the_path_of_the_text_it_redacted(value: Any, root: str) -> None:
    """Wherever a citing text stands (a field's value, an item of a list, a list in a
    list, the value itself), its redaction's path leads to it, and every citing text
    has one: the path is written only for a hit, so this checks the writing."""
    cleaned, found = FairLendingGuard().redact(value, path=root)
    hits = [r for r in found if r.match == "value"]
    assert [r for r in found if r.match == "key"] == []

    def citing(item: Any) -> int:
        if isinstance(item, str):
            return int(item in CITING)
        items = item.values() if isinstance(item, dict) else item
        return sum(citing(i) for i in items)

    assert len({r.path for r in hits}) == citing(value)
    for r in hits:
        relative = r.path[len(root) :].lstrip(".") if root else r.path
        assert r.path.startswith(root)
        assert _at(value, relative) in CITING
        assert _at(cleaned, relative) == REDACTED_VALUE


# ------------------------------------------------------------------ embedded JSON


@pytest.mark.parametrize(
    ("text", "opens"),
    [
        ('{"sex": "F"}', True),
        ("[1, 2]", True),
        (' \n\t{"sex": "F"}', True),  # white space first, then a brace
        ("\u2003[1]", True),  # any white space str.isspace knows
        ("", False),
        ("   ", False),
        ('x {"sex": "F"}', False),  # a word first: text, read as text
        ("married", False),
        (" married", False),
    ],
)
def test_a_text_opens_json_only_where_its_first_character_after_white_space_is_a_bracket(
    text: str, opens: bool
) -> None:
    assert opens_json(text) is opens


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(' \t\n\u2003{[x]}"a'), max_size=6))
def test_opening_json_is_what_the_text_stripped_of_white_space_begins_with(text: str) -> None:
    assert opens_json(text) == (text.lstrip()[:1] in ("{", "["))


def test_a_value_that_opens_json_is_left_for_the_governor_and_one_that_does_not_is_read() -> None:
    guard = FairLendingGuard()
    embedded, found = guard.redact({"note": ' {"sex": "F"}'})
    assert embedded == {"note": ' {"sex": "F"}'} and found == []  # the governor parses it
    read, found = guard.redact({"note": 'x {"sex": "F"} female applicant'})
    assert read == {"note": REDACTED_VALUE} and [r.basis for r in found] == ["sex"]
