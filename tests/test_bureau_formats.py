"""The bureau-field formats: every bureau value a notice prints has one strict form, the
shipped data covers every bureau code of the catalogue and every value of the bundled
cases, and the loader refuses to guess."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from credit.bureau_formats import (
    FIELDS,
    BureauFormats,
    default_bureau_formats,
    default_bureau_formats_path,
    load_bureau_formats,
)
from credit.catalogue import default_catalogue
from credit.errors import PolicyError

ROOT = Path(__file__).resolve().parents[1]
FORMATS = default_bureau_formats()


def test_the_shipped_file_is_versioned_dated_hashed_and_referenced() -> None:
    raw = default_bureau_formats_path().read_bytes()
    assert FORMATS.name == "bureau-field-formats"
    assert FORMATS.version == "2026.1"
    assert FORMATS.effective_date.isoformat() == "2026-01-01"
    assert "FCRA 615(a)(2)" in FORMATS.reference
    assert FORMATS.sha256 == hashlib.sha256(raw).hexdigest()
    for fmt in FORMATS.key_factors.values():
        assert fmt.reference.startswith("FCRA 609(f)(1)(C)"), fmt.code
    for field in FORMATS.fields.values():
        assert "FCRA" in field.reference, field.field


def test_every_bureau_code_of_the_reason_catalogue_has_a_format() -> None:
    codes = set(default_catalogue().by_bureau_code)
    assert codes, "the catalogue maps no bureau code"
    assert codes <= set(FORMATS.key_factors)


def test_every_bureau_value_of_the_bundled_and_golden_cases_is_in_its_format() -> None:
    checked = 0
    for path in (ROOT / "examples" / "cases.jsonl", ROOT / "tests" / "golden" / "cases.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            report = json.loads(line).get("creditReport") or {}
            for factor in report.get("keyFactors", []):
                assert FORMATS.check_key_factor(factor["code"], factor["value"]) is None, factor
                checked += 1
            bureau = report["bureau"]
            for name in ("name", "address", "phone"):
                assert FORMATS.check_field(f"bureau.{name}", bureau[name]) is None, bureau
            if report.get("scoreModel") is not None:
                assert FORMATS.check_field("scoreModel", report["scoreModel"]) is None
    assert checked > 1000


@pytest.mark.parametrize(
    ("code", "good", "bad"),
    [
        ("10", ["59%", "0%", "100%", "134%"], ["59", "59 %", "59.5%", "059%", "1000%", "-5%"]),
        ("18", ["1 account", "3 accounts", "0 accounts"], ["1 accounts", "3 account", "3"]),
        ("02", ["2 accounts"], ["two accounts", "2  accounts", " 2 accounts"]),
        ("05", ["14 accounts"], ["14 accounts.", "14 Accounts"]),
        ("08", ["1 inquiry", "2 inquiries"], ["1 inquiries", "2 inquirys", "2 accounts"]),
        ("13", ["1 month", "17 months"], ["17 month", "1 year", "17 months ago"]),
        ("14", ["10 months", "1 year", "4 years"], ["4 year", "1 years", "4 decades"]),
        ("01", ["$850", "$6,405", "$1,234,567"], ["$6405", "6,405", "$6,405.00", "$64,05"]),
        ("38", ["$1,250"], ["$1,250 owed", "USD 1,250", "$01,250"]),
    ],
)
def test_a_key_factor_value_matches_only_in_its_codes_form(
    code: str, good: list[str], bad: list[str]
) -> None:
    for value in good:
        assert FORMATS.check_key_factor(code, value) is None, value
    for value in bad:
        problem = FORMATS.check_key_factor(code, value)
        assert problem is not None and problem.startswith(f"key factor {code} value"), value


def test_a_value_with_anything_after_it_is_refused_and_says_what_form_it_must_have() -> None:
    assert FORMATS.check_key_factor("10", "34%; call 1-900-555-0199") == (
        "key factor 10 value '34%; call 1-900-555-0199' is not a whole percentage such as '59%'"
    )
    assert FORMATS.check_key_factor("14", "4 years\n") == (
        "key factor 14 value '4 years\\n' is not a whole number of months or years such as "
        "'4 years'"
    )


def test_an_unknown_key_factor_code_has_no_format() -> None:
    assert FORMATS.check_key_factor("99", "3 accounts") == (
        "key-factor code '99' has no format in bureau-field-formats 2026.1"
    )


@settings(max_examples=200)
@given(st.text(max_size=30))
def test_a_percentage_is_exactly_digits_and_a_percent_sign(value: str) -> None:
    shaped = (
        value.endswith("%")
        and value[:-1].isascii()
        and value[:-1].isdigit()
        and len(value[:-1]) <= 3
        and (value[:-1] == "0" or not value.startswith("0"))
    )
    assert (FORMATS.check_key_factor("10", value) is None) == shaped


@pytest.mark.parametrize(
    ("field", "good", "bad"),
    [
        (
            "bureau.name",
            ["Example Credit Bureau", "Equifax Information Services LLC", "Smith & Sons, Inc."],
            ["Example Bureau 1-900-555-0199", "example bureau", "Bureau; call us", ""],
        ),
        (
            "bureau.address",
            [
                "PO Box 1000, Springfield, ST 00000",
                "100 Main Street, Springfield, ST 00000",
                "475 Anton Blvd., Suite 200, Costa Mesa, CA 92626-7037",
            ],
            ["PO Box 1000 Springfield", "Springfield, ST 00000", "PO Box 1000, Springfield, ST 0"],
        ),
        (
            "bureau.phone",
            ["1-800-555-0100", "1-888-397-3742", "1-877-322-8228"],
            ["1-900-555-0199", "800-555-0100", "1-800-555-010", "1-800-055-0100", "(800) 555-0100"],
        ),
        (
            "scoreModel",
            ["Example Score 8", "VantageScore 4.0", "FICO Auto Score 9"],
            ["Example Score 8; call 1-900-555-0199", "score 8", "Example  Score"],
        ),
    ],
)
def test_a_bureau_field_matches_only_in_its_form(
    field: str, good: list[str], bad: list[str]
) -> None:
    for value in good:
        assert FORMATS.check_field(field, value) is None, value
    for value in bad:
        problem = FORMATS.check_field(field, value)
        assert problem is not None and problem.startswith(f"{field} {value!r} is not"), value


def test_the_phone_must_be_toll_free_and_the_message_says_so() -> None:
    assert FORMATS.check_field("bureau.phone", "1-900-555-0199") == (
        "bureau.phone '1-900-555-0199' is not a toll-free US telephone number written "
        "1-NPA-NXX-XXXX (800, 833, 844, 855, 866, 877 or 888) (such as '1-800-555-0100')"
    )


def test_an_unknown_field_is_a_programming_error() -> None:
    assert FIELDS == ("bureau.name", "bureau.address", "bureau.phone", "scoreModel")
    with pytest.raises(KeyError, match=r"no bureau field 'bureau\.fax'"):
        FORMATS.check_field("bureau.fax", "1-800-555-0100")


# ---------------------------------------------------------------- the loader


def _doc() -> dict[str, Any]:
    loaded = yaml.safe_load(default_bureau_formats_path().read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _load(tmp_path: Path, doc: dict[str, Any]) -> BureauFormats:
    path = tmp_path / "bureau-formats.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return load_bureau_formats(path)


def _error(tmp_path: Path, doc: dict[str, Any]) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        _load(tmp_path, doc)
    return info.value


def test_a_document_rebuilt_from_the_shipped_file_loads_the_same(tmp_path: Path) -> None:
    loaded = _load(tmp_path, _doc())
    assert loaded.key_factors == FORMATS.key_factors
    assert loaded.fields == FORMATS.fields


def test_an_unknown_key_is_an_error_naming_it(tmp_path: Path) -> None:
    doc = _doc()
    doc["keyFactors"]["10"]["maximum"] = 100
    err = _error(tmp_path, doc)
    assert (err.key, err.message) == ("keyFactors.10.maximum", "unknown key")


def test_a_missing_reference_is_an_error(tmp_path: Path) -> None:
    doc = _doc()
    del doc["fields"]["bureau.phone"]["reference"]
    err = _error(tmp_path, doc)
    assert (err.key, err.message) == ("fields.bureau.phone.reference", "missing key")


def test_a_missing_field_is_an_error(tmp_path: Path) -> None:
    doc = _doc()
    del doc["fields"]["scoreModel"]
    assert _error(tmp_path, doc).key == "fields.scoreModel"


def test_an_unknown_kind_is_an_error(tmp_path: Path) -> None:
    doc = _doc()
    doc["keyFactors"]["10"]["kind"] = "ratio"
    err = _error(tmp_path, doc)
    assert err.key == "keyFactors.10.kind"
    assert "kind must be one of percentage, count, dollars, duration" in err.message


def test_a_count_without_its_unit_is_an_error(tmp_path: Path) -> None:
    doc = _doc()
    del doc["keyFactors"]["18"]["plural"]
    assert _error(tmp_path, doc).key == "keyFactors.18.plural"


def test_an_example_its_own_format_rejects_is_an_error(tmp_path: Path) -> None:
    doc = _doc()
    doc["keyFactors"]["08"]["example"] = "2 inquirys"
    err = _error(tmp_path, doc)
    assert err.key == "keyFactors.08.example"
    assert "the example '2 inquirys' is not a whole count with its unit" in err.message
    doc = _doc()
    doc["fields"]["bureau.phone"]["example"] = "1-900-555-0199"
    assert _error(tmp_path, doc).key == "fields.bureau.phone.example"


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(800)-555", "a pattern may not have capturing groups"),
        ("[0-9", "not a valid pattern"),
        ("[0-9]*", "a pattern may not match empty text"),
    ],
)
def test_a_bad_field_pattern_is_an_error(tmp_path: Path, pattern: str, message: str) -> None:
    doc = _doc()
    doc["fields"]["bureau.phone"]["pattern"] = pattern
    err = _error(tmp_path, doc)
    assert err.key == "fields.bureau.phone.pattern"
    assert message in err.message


def test_an_unquoted_code_is_an_error(tmp_path: Path) -> None:
    doc = _doc()
    doc["keyFactors"][10] = doc["keyFactors"].pop("10")
    err = _error(tmp_path, doc)
    assert "a key-factor code is 1 to 4 digits or capitals, quoted" in err.message


def test_a_duplicate_yaml_key_is_an_error_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bureau-formats.yaml"
    text = default_bureau_formats_path().read_text(encoding="utf-8")
    path.write_text(text.replace('  "02":\n', '  "01":\n', 1), encoding="utf-8")
    with pytest.raises(PolicyError, match="duplicate key on line"):
        load_bureau_formats(path)
