"""The one case reader: how lines are split and decoded, the spelling of numbers, and
the laws that hold over all inputs (nothing but InputError ever leaves it; every good
case of a mixed batch is read). Also each entry point that uses it: intake (given the
policy registry), the service's body, ``credit decide`` and ``main()``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import credit.cli as cli
import credit.cli.run as cli_run
import credit.underwriting as underwriting
from conftest import auto_case, card_case, with_changes
from credit.cases import check_case, iter_cases, read_case_bytes, read_document
from credit.errors import InputError
from credit.governance.onramp import intake
from credit.journal import InMemoryStore
from credit.models import parse_case
from credit.policy import PolicyRegistry, default_policy
from credit.service.auth import Role
from service_support import Api, service_api

POLICY = default_policy()


def dumped(case: dict[str, Any]) -> bytes:
    return json.dumps(case, ensure_ascii=False).encode("utf-8")


def batch(tmp_path: Path, data: bytes, name: str = "b.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- lines and bytes


def test_a_line_separator_inside_a_string_is_a_character_and_line_numbers_stay_right(
    tmp_path: Path,
) -> None:
    derogatory = [{"kind": "late30\u2028late\u008560", "monthsAgo": 3}]
    odd = with_changes(card_case(case_id="C-1"), "creditReport.derogatories", derogatory)
    bad = with_changes(auto_case(case_id="C-2"), "application.colour", "red")
    path = batch(tmp_path, dumped(odd) + b"\n" + dumped(bad) + b"\n")
    first, second = iter_cases(path)
    assert first.case is not None
    assert first.case.credit_report.derogatories[0].kind == "late30\u2028late\u008560"
    assert second.line == 2 and second.error is not None and second.error.line == 2


def test_a_crlf_file_reads_like_an_lf_file(tmp_path: Path) -> None:
    lines = [dumped(auto_case(case_id=f"C-{i}")) for i in range(3)]
    lf = [e.case for e in iter_cases(batch(tmp_path, b"\n".join(lines) + b"\n", "lf.jsonl"))]
    crlf = [e.case for e in iter_cases(batch(tmp_path, b"\r\n".join(lines) + b"\r\n"))]
    assert lf == crlf and None not in crlf


def test_a_byte_order_mark_is_dropped_at_the_start_of_the_file_only(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    one, two = dumped(auto_case(case_id="C-1")), dumped(auto_case(case_id="C-2"))
    first, second = iter_cases(batch(tmp_path, bom + one + b"\n" + bom + two + b"\n"))
    assert first.case is not None and first.case.case_id == "C-1"
    assert second.error is not None and "byte order mark" in second.error.message
    assert second.error.case_id == "C-2"
    (single,) = iter_cases(batch(tmp_path, bom + one, "case.json"))
    assert single.case is not None


def test_a_line_that_is_not_utf8_is_an_error_for_that_line_alone(tmp_path: Path) -> None:
    good = [dumped(auto_case(case_id=f"C-{i}")) for i in range(3)]
    data = good[0] + b"\n" + good[1].replace(b"Example", b"\xe9xample") + b"\n" + good[2] + b"\n"
    entries = list(iter_cases(batch(tmp_path, data)))
    assert [e.case.case_id if e.case else None for e in entries] == ["C-0", None, "C-2"]
    error = entries[1].error
    assert error is not None and error.line == 2 and error.case_id == "C-1"
    assert "not UTF-8: byte 0xe9" in error.message


def test_blank_and_whitespace_lines_are_skipped_and_still_counted(tmp_path: Path) -> None:
    one = dumped(auto_case(case_id="C-1"))
    entries = list(iter_cases(batch(tmp_path, b"\n  \t\n\r\n" + one + b"\n\n")))
    assert [e.line for e in entries] == [4]


def test_a_huge_line_is_refused_without_being_held_and_the_next_line_is_read(
    tmp_path: Path,
) -> None:
    huge = b'{"caseId": "C-BIG", "x": "' + b"z" * 50_000_000 + b'"}'
    path = batch(tmp_path, huge + b"\n" + dumped(auto_case(case_id="C-2")) + b"\n")
    big, after = iter_cases(path)
    assert big.error is not None and big.error.case_id == "C-BIG"
    assert "the line is 50,000," in big.error.message
    assert after.case is not None and after.line == 2


def test_a_single_case_file_over_the_limit_is_refused_naming_it(tmp_path: Path) -> None:
    path = batch(tmp_path, b'{"caseId": "C-J", "x": "' + b" " * 70_000 + b'"}', "big.json")
    (entry,) = iter_cases(path)
    assert entry.error is not None and entry.error.source == str(path)
    assert "the file is more than 65,536 bytes" in entry.error.message


def test_a_pretty_printed_single_case_file_is_one_case_and_its_errors_say_where(
    tmp_path: Path,
) -> None:
    (good,) = iter_cases(batch(tmp_path, json.dumps(auto_case(), indent=2).encode(), "c.json"))
    assert good.case is not None
    broken = json.dumps(auto_case(case_id="C-PP"), indent=2).replace('"product"', "product")
    (bad,) = iter_cases(batch(tmp_path, broken.encode(), "bad.json"))
    assert bad.error is not None and bad.error.case_id == "C-PP"
    assert "not valid JSON: Expecting property name enclosed in double quotes at line 5" in (
        bad.error.message
    )


def test_a_file_that_cannot_be_opened_is_one_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read") as caught:
        list(iter_cases(tmp_path / "missing.jsonl"))
    assert caught.value.source == str(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("spelling", "exact"),
    [
        ('"84000.00"', Decimal("84000.00")),
        ("84000.00", Decimal("84000.00")),
        ("84000", Decimal("84000")),
        ('"84000"', Decimal("84000")),
        ("0.5", Decimal("0.5")),
    ],
)
def test_money_is_a_plain_number_or_decimal_string_read_exactly(
    spelling: str, exact: Decimal
) -> None:
    text = dumped(with_changes(auto_case(), "application.monthlyDebtPayments", "@")).replace(
        b'"@"', spelling.encode()
    )
    case = check_case(read_document(text))
    assert case.application.monthly_debt_payments == exact
    assert str(case.application.monthly_debt_payments) == str(exact)


@pytest.mark.parametrize("value", [84000.5, True, None, [1], {"amount": "1.00"}])
def test_money_as_a_float_a_boolean_a_list_or_an_object_is_refused_naming_the_field(
    value: Any,
) -> None:
    with pytest.raises(InputError) as caught:
        parse_case(with_changes(auto_case(case_id="C-M"), "application.annualIncome", value))
    assert (caught.value.field, caught.value.case_id) == ("application.annualIncome", "C-M")


def test_a_percentage_follows_the_money_spelling() -> None:
    for good in ("34.0", "0", "100"):
        check_case(with_changes(auto_case(), "creditReport.utilisationPct", good))
    for bad in ("34%", "3_4", "+34", "３４", "34e0", " 34"):
        with pytest.raises(InputError) as caught:
            check_case(with_changes(auto_case(), "creditReport.utilisationPct", bad))
        assert caught.value.field == "creditReport.utilisationPct"


# ---------------------------------------------------------------- laws over all inputs

JSON_LIKE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.decimals(allow_nan=False, allow_infinity=False, places=3)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=25,
)
CASE_KEYS = ["caseId", "asOf", "application", "creditReport", "monitoring", "x"]


@st.composite
def case_like(draw: st.DrawFn) -> Any:
    """A good case with some fields replaced by arbitrary JSON-like values."""
    case = auto_case(case_id="C-H") if draw(st.booleans()) else card_case(case_id="C-H")
    for _ in range(draw(st.integers(0, 3))):
        section = draw(st.sampled_from(CASE_KEYS))
        if section in ("application", "creditReport") and isinstance(case.get(section), dict):
            key = draw(st.sampled_from([*case[section], "extra"]))
            case[section][key] = draw(JSON_LIKE)
        else:
            case[section] = draw(JSON_LIKE)
    return case if draw(st.integers(0, 9)) else draw(JSON_LIKE)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_a_document_or_an_input_error_and_nothing_else(data: bytes) -> None:
    try:
        read_case_bytes(data, policies=POLICY)
    except InputError as err:
        assert err.message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.sampled_from([b"{", b"[", b'{"caseId": "C-1", "a": ']))
def test_json_shaped_bytes_give_a_document_or_an_input_error_and_nothing_else(
    tail: bytes, head: bytes
) -> None:
    try:
        read_case_bytes(head + tail, policies=POLICY)
    except InputError as err:
        assert err.message


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case_like())
def test_arbitrary_json_like_values_give_a_case_or_an_input_error_and_nothing_else(
    value: Any,
) -> None:
    data = json.dumps(value, default=str).encode()
    for attempt in (lambda: check_case(value, policies=POLICY), lambda: read_case_bytes(data)):
        try:
            attempt()
        except InputError as err:
            assert err.message


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.one_of(st.just(None), case_like(), st.binary(max_size=40)), max_size=12))
def test_every_good_case_of_a_mixed_batch_is_read_in_order_with_its_line(
    tmp_path: Path, rows: list[Any]
) -> None:
    lines: list[bytes] = []
    good: list[tuple[int, str]] = []
    for row in rows:
        if row is None:  # a good case
            case_id = f"C-{len(lines)}"
            lines.append(dumped(auto_case(case_id=case_id)))
            good.append((len(lines), case_id))
        elif isinstance(row, bytes):
            lines.append(row.replace(b"\n", b" "))
        else:
            lines.append(json.dumps(row, default=str).encode())
    path = tmp_path / "h.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    read = [(e.line, e.case.case_id) for e in iter_cases(path, policies=POLICY) if e.case]
    assert [r for r in read if r[1].startswith("C-") and r[1] != "C-H"] == good


# ---------------------------------------------------------------- intake, given the policies


def test_intake_refuses_a_case_dated_before_any_policy_naming_the_field_and_stores_nothing() -> (
    None
):
    store = InMemoryStore()
    registry = PolicyRegistry([POLICY])
    with pytest.raises(InputError) as caught:
        intake(auto_case(case_id="C-OLD", as_of="2025-06-30"), store, registry=registry)
    assert (caught.value.case_id, caught.value.field) == ("C-OLD", "asOf")
    assert "no policy is in force on 2025-06-30" in caught.value.message
    assert store.get_case("C-OLD") is None and not store.entries("C-OLD")


def test_intake_refuses_a_score_off_the_policys_scale_and_stores_nothing() -> None:
    store = InMemoryStore()
    case = auto_case(case_id="C-900", score=900, score_range=(300, 990))
    with pytest.raises(InputError) as caught:
        intake(case, store, registry=PolicyRegistry([POLICY]))
    assert caught.value.field == "creditReport.score"
    assert store.get_case("C-900") is None
    assert intake(case, InMemoryStore()).taken_in  # no registry given: no policy check


def test_intake_refuses_a_figure_out_of_range_even_without_a_registry() -> None:
    store = InMemoryStore()
    case = with_changes(auto_case(case_id="C-BIG"), "application.requestedAmount", "1" + "0" * 15)
    with pytest.raises(InputError, match="above the most") as caught:
        intake(case, store)
    assert caught.value.field == "application.requestedAmount"
    assert store.get_case("C-BIG") is None


def test_intake_still_moves_a_prohibited_field_before_the_strict_checks() -> None:
    case = with_changes(auto_case(case_id="C-DOB"), "application.dateOfBirth", "1980-01-01")
    result = intake(case, InMemoryStore(), registry=PolicyRegistry([POLICY]))
    assert [r.path for r in result.moved] == ["application.dateOfBirth"]


# ---------------------------------------------------------------- the service's body


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with service_api("sqlite", tmp_path_factory.mktemp("reader-api")) as built:
        yield built


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        (dumped(auto_case(case_id="A-1"))[:-1] + b', "caseId": "A-1"}', "caseId", "duplicate"),
        (b"[" * 10_000 + b"]" * 10_000, "body", "nested 10,000 deep"),
        (
            dumped(with_changes(auto_case(case_id="A-3"), "application.annualIncome", "1_000")),
            "application.annualIncome",
            "decimal string",
        ),
        (
            dumped(with_changes(auto_case(case_id="A-4"), "creditReport.tradelines", 10**12)),
            "creditReport.tradelines",
            "above the most",
        ),
        (dumped(auto_case(case_id="A-5", as_of="2025-01-01")), "asOf", "no policy is in force"),
        (
            dumped(auto_case(case_id="A-6", score=860, score_range=(300, 900))),
            "creditReport.score",
            "off the scale",
        ),
        (b'{"caseId": "A-7", "x": NaN}', "x", "NaN"),
        (b'{"caseId": "\\ud800"}', "caseId", "lone surrogate"),
        (b'{"caseId": "A-9", "asOf": "2026-11-30"} {}', "body", "more after"),
        (b"\xff\xfe{}", "body", "not UTF-8"),
    ],
)
def test_a_malformed_or_out_of_range_body_is_422_naming_the_field_and_stores_nothing(
    api: Api, body: bytes, field: str, says: str
) -> None:
    response = api.client.post("/v1/cases", content=body, headers=api.headers(Role.INTAKE))
    assert response.status_code == 422, response.text
    detail = response.json()["error"]
    assert detail["field"] == field and says in detail["message"]
    if detail["caseId"] is not None:
        assert api.store.get_case(detail["caseId"]) is None


# ---------------------------------------------------------------- the command line


def test_a_case_dated_before_the_policy_is_named_by_credit_decide_and_the_rest_decided(
    tmp_path: Path,
) -> None:
    lines = [auto_case(case_id="C-1"), auto_case(case_id="C-OLD", as_of="2020-02-02"), card_case()]
    path = batch(tmp_path, b"\n".join(dumped(c) for c in lines) + b"\n")
    result = CliRunner().invoke(cli.app, ["decide", str(path)])
    assert result.exit_code == 2
    assert [json.loads(r)["caseId"] for r in result.stdout.splitlines()] == ["C-1", "C-CARD"]
    assert f"{path}, line 2, case C-OLD, field asOf: no policy is in force on 2020-02-02" in (
        result.stderr
    )
    assert "reference-2026.1.yaml" not in result.stderr  # the case is named, not the policy


def broken_decide(monkeypatch: pytest.MonkeyPatch, fail_on: str) -> None:
    """A planted defect: the underwriter breaks (not bad input) on one case."""
    real = underwriting.decide_case

    def decide_case(case: Any, policy: Any) -> Any:
        if case.case_id == fail_on:
            raise ZeroDivisionError("planted defect")
        return real(case, policy)

    monkeypatch.setattr(underwriting, "decide_case", decide_case)


def run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["credit", *args])
    monkeypatch.setattr(cli.STATE, "debug", False)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    return int(stopped.value.code or 0)


def test_an_internal_error_on_one_case_is_one_line_and_every_other_case_is_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken_decide(monkeypatch, "C-2")
    cases = [auto_case(case_id=f"C-{i}") for i in range(1, 4)]
    path = batch(tmp_path, b"\n".join(dumped(c) for c in cases) + b"\n")
    assert run_main(monkeypatch, "decide", str(path)) == 1
    out, err = capsys.readouterr()
    assert [json.loads(r)["caseId"] for r in out.splitlines()] == ["C-1", "C-3"]
    assert f"{path}, line 2, case C-2: internal error (ZeroDivisionError: planted defect)" in err
    assert "Traceback" not in err


def test_with_debug_the_traceback_of_an_internal_error_is_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken_decide(monkeypatch, "C-1")
    path = batch(tmp_path, dumped(auto_case(case_id="C-1")) + b"\n")
    assert run_main(monkeypatch, "--debug", "decide", str(path)) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError: planted defect" in err


def test_main_reports_an_unexpected_error_anywhere_in_one_line_and_with_debug_its_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(path: Any) -> Any:
        raise KeyError("planted")

    monkeypatch.setattr(cli_run, "_policy", boom)
    assert run_main(monkeypatch, "decide", "x.jsonl") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (KeyError: 'planted')" in err
    assert "--debug" in err and "Traceback" not in err
    assert run_main(monkeypatch, "--debug", "decide", "x.jsonl") == 1
    assert "Traceback" in capsys.readouterr().err


def test_main_reports_our_own_errors_in_one_line_with_exit_2_for_bad_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def bad(path: Any) -> Any:
        raise InputError("planted bad input", field="x")

    monkeypatch.setattr(cli_run, "_policy", bad)
    assert run_main(monkeypatch, "decide", "x.jsonl") == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: field x: planted bad input"
