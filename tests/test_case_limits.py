"""The limits of the case format as versioned data (case-limits.yaml): both sides of
every edge, the policy's scale and dates, and the strict loader's refusals."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import auto_case, card_case, with_changes
from credit.cases import (
    check_case,
    check_policy,
    default_case_limits,
    default_case_limits_path,
    load_case_limits,
    read_document,
)
from credit.errors import InputError, PolicyError
from credit.policy import PolicyRegistry, default_policy, load_policy
from credit.yamldata import read_source

LIMITS = default_case_limits()
POLICY = default_policy()

# (limit key, a case that carries the field, the field's path in it, the step one past)
MONEY = Decimal("0.01")
RANGES: list[tuple[str, str, str, Any]] = [
    ("application.annualIncome", "auto", "application.annualIncome", MONEY),
    ("application.monthlyDebtPayments", "auto", "application.monthlyDebtPayments", MONEY),
    ("application.requestedAmount", "auto", "application.requestedAmount", MONEY),
    ("application.vehicleValue", "auto", "application.vehicleValue", MONEY),
    ("application.requestedLine", "card", "application.requestedLine", MONEY),
    ("application.termMonths", "auto", "application.termMonths", 1),
    ("creditReport.tradelines", "auto", "creditReport.tradelines", 1),
    ("creditReport.historyMonths", "auto", "creditReport.historyMonths", 1),
    ("creditReport.inquiries12m", "auto", "creditReport.inquiries12m", 1),
    ("creditReport.utilisationPct", "auto", "creditReport.utilisationPct", Decimal("0.1")),
    ("monitoring.age", "auto", "monitoring.age", 1),
]


def base(product: str) -> dict[str, Any]:
    case = auto_case(case_id="L-1") if product == "auto" else card_case(case_id="L-1")
    case["monitoring"] = {"age": 41}
    case["creditReport"]["derogatories"] = [{"kind": "late30", "monthsAgo": 12}]
    return case


def wire(value: Any, step: Any) -> Any:
    return str(value) if isinstance(step, Decimal) else value


def test_every_range_of_the_limits_file_is_tested_here() -> None:
    ranged = {k.rsplit(".", 1)[0] for k in LIMITS.params if k.endswith((".min", ".max"))}
    assert ranged == {r[0] for r in RANGES} | {"creditReport.derogatories.monthsAgo"}


@pytest.mark.parametrize(("key", "product", "path", "step"), RANGES, ids=[r[0] for r in RANGES])
def test_a_figure_exactly_at_either_bound_is_read_and_one_step_past_it_is_refused(
    key: str, product: str, path: str, step: Any
) -> None:
    low, high = LIMITS.value(f"{key}.min"), LIMITS.value(f"{key}.max")
    for ok in (low, high):
        check_case(with_changes(base(product), path, wire(ok, step)))
    # Below the least: the limit, or first the model's own floor where it is the same
    # (a figure is never negative, income, value and term are positive), or a minus
    # sign the decimal spelling refuses.
    below = ("below the least", "greater than", "no sign")
    for bad, sides in ((low - step, below), (high + step, ("above the most",))):
        with pytest.raises(InputError) as caught:
            check_case(with_changes(base(product), path, wire(bad, step)))
        assert caught.value.field == path and caught.value.case_id == "L-1"
        assert any(side in caught.value.message for side in sides), caught.value.message


def test_a_derogatory_months_ago_is_bounded_in_every_entry_of_the_list() -> None:
    most = LIMITS.value("creditReport.derogatories.monthsAgo.max")
    case = base("auto")
    case["creditReport"]["derogatories"] = [
        {"kind": "late30", "monthsAgo": most},
        {"kind": "late60", "monthsAgo": most + 1},
    ]
    with pytest.raises(InputError) as caught:
        check_case(case)
    assert caught.value.field == "creditReport.derogatories[1].monthsAgo"
    case["creditReport"]["derogatories"][1]["monthsAgo"] = most
    check_case(case)


@pytest.mark.parametrize(
    ("field", "item"),
    [
        ("derogatories", {"kind": "late30", "monthsAgo": 3}),
        ("disputes", {"tradelineId": "T1", "resolved": True}),
        ("keyFactors", {"code": "10", "text": "Balances too high", "value": "34%"}),
    ],
)
def test_a_list_at_its_most_entries_is_read_and_one_more_is_refused(
    field: str, item: dict[str, Any]
) -> None:
    most = LIMITS.value(f"creditReport.{field}.maxItems")
    path = f"creditReport.{field}"
    check_case(with_changes(base("auto"), path, [item] * most))
    with pytest.raises(InputError) as caught:
        check_case(with_changes(base("auto"), path, [item] * (most + 1)))
    assert caught.value.field == path
    assert f"{most + 1} entries; the case format allows at most {most}" in caught.value.message


def padded(length: int) -> bytes:
    """A case line of exactly ``length`` bytes (JSON whitespace after the object)."""
    data = json.dumps(auto_case(case_id="P-1")).encode()
    return data + b" " * (length - len(data))


def test_a_line_exactly_at_the_byte_limit_is_read_and_one_byte_more_is_refused() -> None:
    most = LIMITS.line_bytes
    assert read_document(padded(most))["caseId"] == "P-1"
    with pytest.raises(InputError) as caught:
        read_document(padded(most + 1))
    assert caught.value.case_id == "P-1"
    assert f"{most + 1:,} bytes; the case format allows at most {most:,}" in caught.value.message


def nested(depth: int) -> bytes:
    return b'{"caseId": "P-2", "x": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def test_nesting_exactly_at_the_depth_limit_is_read_and_one_level_more_is_refused() -> None:
    most = LIMITS.nesting_depth
    read_document(nested(most))
    with pytest.raises(InputError, match=f"nested {most + 1} deep") as caught:
        read_document(nested(most + 1))
    assert caught.value.case_id == "P-2"


def test_brackets_inside_strings_are_not_nesting() -> None:
    text = '{"caseId": "P-3", "x": "' + "[{" * 300 + '\\"]"}'
    assert read_document(text.encode())["caseId"] == "P-3"


def test_a_string_exactly_at_the_length_limit_is_read_and_one_character_more_is_refused() -> None:
    most = LIMITS.string_chars
    ok = json.dumps({"caseId": "P-4", "x": "é" * most}).encode()
    assert read_document(ok)["x"] == "é" * most
    with pytest.raises(InputError) as caught:
        read_document(json.dumps({"caseId": "P-4", "x": "é" * (most + 1)}).encode())
    assert (caught.value.field, caught.value.case_id) == ("x", "P-4")
    key = json.dumps({"caseId": "P-4", "k" * (most + 1): 1}).encode()
    with pytest.raises(InputError, match="a key of"):
        read_document(key)


def test_a_number_exactly_at_the_digit_limit_is_read_and_one_digit_more_is_refused() -> None:
    most = LIMITS.number_digits
    assert read_document(b'{"n": ' + b"9" * most + b"}")["n"] == int("9" * most)
    assert read_document(b'{"n": 1.' + b"5" * (most - 1) + b"}")["n"] == Decimal(
        "1." + "5" * (most - 1)
    )
    for text in (b"9" * (most + 1), b"1." + b"5" * most):
        with pytest.raises(InputError, match=f"at most {most}") as caught:
            read_document(b'{"n": ' + text + b"}")
        assert caught.value.field == "n"


def test_a_negative_zero_is_read_as_zero() -> None:
    assert str(read_document(b'{"x": -0.00}')["x"]) == "0.00"


# ---------------------------------------------------------------- the policy


@pytest.mark.parametrize("product", ["auto", "card"])
def test_a_score_on_the_policys_scale_ends_is_read_and_one_point_off_it_is_refused(
    product: str,
) -> None:
    low, high = POLICY["scoreScale.min"].value, POLICY["scoreScale.max"].value
    wide = (low - 100, high + 100)
    for score in (low, high):
        case = with_changes(base(product), "creditReport.scoreRange", list(wide))
        check_case(with_changes(case, "creditReport.score", score), policies=POLICY)
    for score in (low - 1, high + 1):
        case = with_changes(base(product), "creditReport.scoreRange", list(wide))
        with pytest.raises(InputError) as caught:
            check_case(with_changes(case, "creditReport.score", score), policies=POLICY)
        assert caught.value.field == "creditReport.score"
        assert f"off the scale {low}-{high}" in caught.value.message


def test_an_unscored_report_needs_no_scale() -> None:
    check_case(with_changes(base("auto"), "creditReport.score", None), policies=POLICY)


def test_a_case_dated_the_day_a_policy_takes_effect_is_read_and_the_day_before_is_refused() -> None:
    effective = POLICY.effective_date
    registry = PolicyRegistry([POLICY])
    for policies in (POLICY, registry):
        check_case(with_changes(base("auto"), "asOf", effective.isoformat()), policies=policies)
        day_before = effective.fromordinal(effective.toordinal() - 1).isoformat()
        with pytest.raises(InputError) as caught:
            check_case(with_changes(base("auto"), "asOf", day_before), policies=policies)
        assert (caught.value.field, caught.value.case_id) == ("asOf", "L-1")
        assert f"no policy is in force on {day_before}" in caught.value.message
        assert not isinstance(caught.value, PolicyError)


def test_the_policy_in_force_is_the_registrys_choice_and_its_scale_is_the_one_applied(
    tmp_path: Path,
) -> None:
    text, _ = read_source(POLICY.source)
    later_text = text.replace("effectiveDate: 2026-01-01", "effectiveDate: 2026-07-01").replace(
        "    value: 850\n", "    value: 900\n", 1
    )
    later = load_policy(tmp_path / "later.yaml", later_text)
    assert later["scoreScale.max"].value == 900
    registry = PolicyRegistry([POLICY, later])
    case = with_changes(base("auto"), "creditReport.scoreRange", [300, 900])
    scored = with_changes(case, "creditReport.score", 880)
    assert check_policy(check_case(scored), registry) is later
    early = with_changes(scored, "asOf", "2026-03-01")
    with pytest.raises(InputError, match="off the scale 300-850"):
        check_case(early, policies=registry)


# ---------------------------------------------------------------- the loader


def limits_text() -> str:
    return default_case_limits_path().read_text(encoding="utf-8")


def test_the_bundled_limits_load_with_a_version_a_date_and_a_reference_on_every_limit() -> None:
    assert LIMITS.label == "case-limits v2026.1"
    assert LIMITS.sha256 == load_case_limits(default_case_limits_path()).sha256
    assert all(p.reference and p.unit for p in LIMITS.params.values())
    assert LIMITS["creditReport.keyFactors.maxItems"].reference.startswith("15 U.S.C. 1681g(f)")


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        (
            ("  lineBytes:\n", "  lineBytes:\n    colour: red\n"),
            "document.lineBytes.colour",
            "unknown",
        ),
        (("name: case-limits\n", "name: case-limits\nname: again\n"), "name", "duplicate"),
        (("    value: 65536\n", '    value: "lots"\n'), "document.lineBytes.value", "integer"),
        (("    value: 65536\n", "    value: 0\n"), "document.lineBytes", "at least 1"),
        (("      value: 600\n", "      value: -1\n"), "application.termMonths.max.value", "never"),
        (("      value: 600\n", "      value: 0\n"), "application.termMonths", "above max"),
        (
            ("      reference: 15 U.S.C. 1681g(f)(1)(C) and 1681g(f)(9)\n", ""),
            "creditReport.keyFactors.maxItems.reference",
            "missing",
        ),
        (("effectiveDate: 2026-01-01\n", "effectiveDate: 2026-13-01\n"), "effectiveDate", "bad"),
    ],
)
def test_a_broken_limits_file_is_refused_naming_the_key(
    tmp_path: Path, change: tuple[str, str], key: str, says: str
) -> None:
    text = limits_text()
    assert change[0] in text
    with pytest.raises(PolicyError) as caught:
        load_case_limits(tmp_path / "limits.yaml", text.replace(change[0], change[1], 1))
    assert caught.value.key == key
    assert says in caught.value.message


def test_a_limit_changed_in_the_data_moves_the_edge_the_reader_applies(tmp_path: Path) -> None:
    text = limits_text().replace("      value: 1000\n", "      value: 7\n", 1)
    tight = load_case_limits(tmp_path / "limits.yaml", text)
    assert tight.value("creditReport.tradelines.max") == 7
    check_case(with_changes(base("auto"), "creditReport.tradelines", 7), limits=tight)
    with pytest.raises(InputError, match="above the most"):
        check_case(with_changes(base("auto"), "creditReport.tradelines", 8), limits=tight)
    check_case(with_changes(base("auto"), "creditReport.tradelines", 8))


def test_a_raised_minimum_in_the_data_refuses_a_figure_below_it(tmp_path: Path) -> None:
    text = limits_text().replace('      value: "0.01"\n', '      value: "1000.00"\n', 1)
    tight = load_case_limits(tmp_path / "limits.yaml", text)
    check_case(with_changes(base("auto"), "application.annualIncome", "1000.00"), limits=tight)
    with pytest.raises(InputError, match=r"below the least the case format allows, 1000\.00 USD"):
        check_case(with_changes(base("auto"), "application.annualIncome", "999.99"), limits=tight)


# ---------------------------------------------------------------- the flat batch rows


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_a_flat_batch_row_outside_the_limits_is_named_and_the_rows_at_the_edge_are_kept(
    tmp_path: Path, fmt: str
) -> None:
    from credit.batch.io import read_case_chunks, read_cases, write_cases
    from credit.batch.schema import cases_to_frame

    most = int(LIMITS.value("application.annualIncome.max") * 100)
    frame = cases_to_frame(check_case(auto_case(case_id=f"F-{i}")) for i in range(4))
    frame = frame.with_columns(
        pl.Series("annualIncomeCents", [most, most + 1, 12_000_000, 12_000_000]),
        pl.Series("score", [750, 750, 850, 851], dtype=pl.Int32),
    )
    path = tmp_path / f"flat.{fmt}"
    write_cases(frame, path)
    kept, problems = read_cases(path)  # flat rows unbounded unless limits are given
    assert kept["caseId"].to_list() == ["F-0", "F-1", "F-2", "F-3"] and not problems
    chunks = list(read_case_chunks(path, limits=LIMITS))
    assert [c for chunk in chunks for c in chunk.frame["caseId"]] == ["F-0", "F-2", "F-3"]
    (problem,) = [p for chunk in chunks for p in chunk.problems]
    assert (problem.case_id, problem.field) == ("F-1", "annualIncomeCents")
    assert f"above the most, {most}" in problem.message
    chunks = list(read_case_chunks(path, policy=POLICY, limits=LIMITS))
    assert [c for chunk in chunks for c in chunk.frame["caseId"]] == ["F-0", "F-2"]
    named = {(p.case_id, p.field) for chunk in chunks for p in chunk.problems}
    assert named == {("F-1", "annualIncomeCents"), ("F-3", "score")}


# ---------------------------------------------------------------- the walk to a field


def _reference_values(node: Any, parts: list[str], path: str) -> list[tuple[str, Any]]:
    """A second, deliberately plain walk to a dotted path (each value with its place
    written as it goes), to check the one ``check_limits`` uses against."""
    if not parts:
        return [] if node is None else [(path, node)]
    if isinstance(node, (list, tuple)):
        return [
            found
            for i, item in enumerate(node)
            for found in _reference_values(item, parts, f"{path}[{i}]")
        ]
    if isinstance(node, dict) and parts[0] in node:
        step = f"{path}.{parts[0]}" if path else parts[0]
        return _reference_values(node[parts[0]], parts[1:], step)
    return []


_KEYS = st.sampled_from(["a", "b", "c"])
_TREES = st.recursive(
    st.none() | st.integers(-3, 3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(_KEYS, inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_TREES, st.lists(_KEYS, min_size=1, max_size=3))
def test_the_walk_to_a_limited_field_finds_each_value_at_its_place(
    tree: Any, parts: list[str]
) -> None:
    """Every value at a path, through lists at any depth (nested ones too), in order,
    each named by its place: what the plain walk finds, though the place is written
    only for a value out of bounds."""
    from credit.cases import _place, _values

    found = [(_place(tuple(parts), trail), value) for trail, value in _values(tree, tuple(parts))]
    assert found == _reference_values(tree, parts, "")
