"""The policy as versioned data: the bundled file says what the reference policy says,
and the loader refuses to guess (errors name the file and the key)."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import auto_case, card_case, debt_for_dti, decide
from credit import InputError, PolicyError, default_policy, load_policy
from credit.cli import app
from credit.policy import default_policy_path

D = Decimal
SOURCE = default_policy_path().read_text(encoding="utf-8")
AUTO_MAX_DTI = (
    "    maxDtiPct:\n"
    "      description: Maximum back-end debt-to-income ratio.\n"
    '      reference: reference-policy.md, "Products"\n'
    "      unit: percent\n"
    '      value: "45.0"\n'
)
STEPS = (
    "  value: [referUnusableFile, declineHardFailure, counteroffer, referWithinMargin, approve]\n"
)


def edited(old: str, new: str) -> str:
    assert SOURCE.count(old) == 1, f"anchor not unique: {old!r}"
    return SOURCE.replace(old, new)


def write(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(tmp_path: Path, text: str) -> PolicyError:
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    err = info.value
    assert err.file == str(path)
    assert str(path) in str(err)
    if err.key:
        assert f"key {err.key}" in str(err)
    return err


# ----------------------------------------------------------------------------- the bundled file


REFERENCE_POLICY = {
    # reference-policy.md, "Products"
    "products.auto.minScore": 600,
    "products.card.minScore": 640,
    "products.auto.maxDtiPct": D("45.0"),
    "products.card.maxDtiPct": D("40.0"),
    "products.auto.maxLtvPct": D("120.0"),
    "products.auto.minAmount": D("5000.00"),
    "products.card.minLine": D("500.00"),
    "products.auto.termsAllowed": (36, 48, 60, 72),
    # "Score bands"
    "scoreBands.prime": 720,
    "scoreBands.near-prime": 660,
    "scoreBands.subprime": 300,
    # "Pricing by band"
    "pricing.auto.prime.apr": D("6.49"),
    "pricing.auto.near-prime.apr": D("9.99"),
    "pricing.auto.subprime.apr": D("15.99"),
    "pricing.card.prime.apr": D("19.99"),
    "pricing.card.near-prime.apr": D("24.99"),
    "pricing.card.subprime.apr": D("29.99"),
    "pricing.card.prime.line": D("10000.00"),
    "pricing.card.near-prime.line": D("5000.00"),
    "pricing.card.subprime.line": D("1500.00"),
    # "Capacity"
    "products.card.paymentPctOfLine": D("3.0"),
    "rounding.money": D("0.01"),
    "rounding.percent": D("0.1"),
    # "Decision, in this order"
    "thinFile.minTradelines": 3,
    "thinFile.minHistoryMonths": 12,
    "margins.scorePoints": 9,
    "margins.dtiPct": D("1.0"),
    "margins.ltvPct": D("2.0"),
    "products.auto.counterofferStep": D("100.00"),
    "products.card.counterofferStep": D("100.00"),
    "steps": (
        "referUnusableFile",
        "declineHardFailure",
        "counteroffer",
        "referWithinMargin",
        "approve",
    ),
    # "Credit factors"
    "factorOrder": ("scoreBelowMinimum", "dtiOverCap", "ltvOverCap", "bureauKeyFactors"),
    "maxReasons": 4,
}


@pytest.mark.parametrize(("key", "expected"), list(REFERENCE_POLICY.items()))
def test_the_bundled_policy_holds_the_reference_policys_numbers(key: str, expected: Any) -> None:
    param = default_policy()[key]
    assert param.value == expected
    assert type(param.value) is type(expected)
    assert param.reference and param.unit


def test_the_bundled_policy_loads_with_its_version_date_and_the_hash_of_its_bytes() -> None:
    policy = default_policy()
    assert (policy.name, policy.version) == ("reference-credit-policy", "2026.1")
    assert policy.effective_date.isoformat() == "2026-01-01"
    assert policy.sha256 == hashlib.sha256(default_policy_path().read_bytes()).hexdigest()


def test_every_decimal_in_the_bundled_policy_keeps_the_digits_written_in_the_file() -> None:
    policy = default_policy()
    for key, param in policy.params.items():
        if isinstance(param.value, Decimal):
            assert re.search(rf'value: "?{re.escape(str(param.value))}"?\n', SOURCE), key


# ----------------------------------------------------------------------------- strict loader


def test_an_unknown_top_level_key_is_an_error_naming_it(tmp_path: Path) -> None:
    err = load_error(tmp_path, SOURCE + "\nmaxLoanToValue: 3\n")
    assert (err.key, err.message) == ("maxLoanToValue", "unknown key")


def test_an_unknown_key_in_a_group_is_an_error_naming_its_dotted_path(tmp_path: Path) -> None:
    text = edited(
        "products:\n  auto:\n",
        "products:\n  auto:\n    maxAge:\n      value: 80\n      unit: years\n"
        "      reference: nowhere\n",
    )
    err = load_error(tmp_path, text)
    assert (err.key, err.message) == ("products.auto.maxAge", "unknown key")


def test_an_unknown_key_in_a_parameter_is_an_error_naming_its_dotted_path(tmp_path: Path) -> None:
    text = edited(AUTO_MAX_DTI, AUTO_MAX_DTI + "      colour: red\n")
    err = load_error(tmp_path, text)
    assert (err.key, err.message) == ("products.auto.maxDtiPct.colour", "unknown key")


def test_a_missing_top_level_parameter_is_an_error_naming_it(tmp_path: Path) -> None:
    block = re.search(r"\nmaxReasons:\n(?:  .*\n)+", SOURCE)
    assert block is not None
    err = load_error(tmp_path, SOURCE.replace(block.group(0), "\n"))
    assert (err.key, err.message) == ("maxReasons", "missing key")


def test_a_missing_nested_parameter_is_an_error_naming_its_dotted_path(tmp_path: Path) -> None:
    block = re.search(r"    minLine:\n(?:      .*\n)+", SOURCE)
    assert block is not None
    err = load_error(tmp_path, SOURCE.replace(block.group(0), ""))
    assert (err.key, err.message) == ("products.card.minLine", "missing key")


def test_a_missing_header_key_is_an_error_naming_it(tmp_path: Path) -> None:
    err = load_error(tmp_path, edited("effectiveDate: 2026-01-01\n", ""))
    assert (err.key, err.message) == ("effectiveDate", "missing key")


def test_a_parameter_without_its_reference_is_an_error(tmp_path: Path) -> None:
    text = edited(
        AUTO_MAX_DTI, AUTO_MAX_DTI.replace('      reference: reference-policy.md, "Products"\n', "")
    )
    err = load_error(tmp_path, text)
    assert (err.key, err.message) == ("products.auto.maxDtiPct.reference", "missing key")


def test_a_parameter_with_an_empty_reference_is_an_error(tmp_path: Path) -> None:
    text = edited(
        AUTO_MAX_DTI,
        AUTO_MAX_DTI.replace('reference: reference-policy.md, "Products"', 'reference: ""'),
    )
    err = load_error(tmp_path, text)
    assert err.key == "products.auto.maxDtiPct.reference"


def test_a_duplicate_top_level_key_is_an_error_naming_it_and_its_line(tmp_path: Path) -> None:
    text = edited('version: "2026.1"\n', 'version: "2026.1"\nversion: "2026.2"\n')
    err = load_error(tmp_path, text)
    assert err.key == "version"
    assert err.message == "duplicate key on line 7"


def test_a_duplicate_key_inside_a_parameter_is_an_error(tmp_path: Path) -> None:
    text = edited(AUTO_MAX_DTI, AUTO_MAX_DTI + '      value: "50.0"\n')
    err = load_error(tmp_path, text)
    line = text[: text.index('      value: "50.0"')].count("\n") + 1
    assert err.key == "value"
    assert err.message == f"duplicate key on line {line}"


@pytest.mark.parametrize("bad", ["2026-13-01", "2026-02-30", "2026-1-1", "01/01/2026", "tomorrow"])
def test_a_bad_effective_date_is_an_error_naming_the_key(tmp_path: Path, bad: str) -> None:
    err = load_error(tmp_path, edited("effectiveDate: 2026-01-01\n", f"effectiveDate: {bad}\n"))
    assert err.key == "effectiveDate"
    assert bad in err.message


def test_an_unquoted_decimal_stays_exact_and_is_never_a_float(tmp_path: Path) -> None:
    text = edited(AUTO_MAX_DTI, AUTO_MAX_DTI.replace('value: "45.0"', "value: 45.10"))
    text = text.replace(
        '    unit: percent\n    value: "0.1"\n', "    unit: percent\n    value: 0.1\n"
    )
    policy = load_policy(write(tmp_path, text))
    assert policy["products.auto.maxDtiPct"].value == D("45.10")
    assert str(policy["products.auto.maxDtiPct"].value) == "45.10"
    assert policy["rounding.percent"].value == D("0.1")
    assert policy["rounding.percent"].value != D(0.1)  # the float 0.1 is not 1/10


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('value: "45.0"', "value: 4.5e1", "products.auto.maxDtiPct.value"),
        ('value: "45.0"', "value: .inf", "products.auto.maxDtiPct.value"),
        ('value: "45.0"', "value: true", "products.auto.maxDtiPct.value"),
        ('value: "45.0"', "value: forty-five", "products.auto.maxDtiPct.value"),
    ],
)
def test_a_decimal_parameter_must_be_a_plain_decimal(
    tmp_path: Path, old: str, new: str, key: str
) -> None:
    err = load_error(tmp_path, edited(AUTO_MAX_DTI, AUTO_MAX_DTI.replace(old, new)))
    assert err.key == key
    assert "expected a decimal number" in err.message


def test_an_integer_parameter_written_as_a_decimal_is_an_error(tmp_path: Path) -> None:
    text = SOURCE.replace(
        "      unit: score\n      value: 600\n", "      unit: score\n      value: 600.0\n"
    )
    assert text != SOURCE
    err = load_error(tmp_path, text)
    assert err.key == "products.auto.minScore.value"
    assert "expected an integer" in err.message


@pytest.mark.parametrize(
    "steps",
    [
        "[referUnusableFile, declineHardFailure, counteroffer, counteroffer, approve]",
        "[referUnusableFile, declineHardFailure, counteroffer, approve]",
        "[referUnusableFile, declineHardFailure, counteroffer, referWithinMargin, approve,"
        " approve]",
        "[referUnusableFile, declineHardFailure, counteroffer, referWithinMargin, guess]",
        "[]",
    ],
)
def test_steps_that_are_not_a_permutation_of_the_decision_steps_are_an_error(
    tmp_path: Path, steps: str
) -> None:
    err = load_error(tmp_path, edited(STEPS, f"  value: {steps}\n"))
    assert err.key == "steps.value"


def test_approve_must_be_the_last_step(tmp_path: Path) -> None:
    order = "[approve, referUnusableFile, declineHardFailure, counteroffer, referWithinMargin]"
    err = load_error(tmp_path, edited(STEPS, f"  value: {order}\n"))
    assert (err.key, err.message) == ("steps.value", "approve must be the last step")


@pytest.mark.parametrize(
    ("order", "first", "then"),
    [
        # a thin file declined instead of referred
        (
            "[declineHardFailure, referUnusableFile, counteroffer, referWithinMargin, approve]",
            "referUnusableFile",
            "declineHardFailure",
        ),
        # a thin file offered adjusted terms
        (
            "[counteroffer, referUnusableFile, declineHardFailure, referWithinMargin, approve]",
            "referUnusableFile",
            "counteroffer",
        ),
        # a within-margin score referred although the DTI is over the cap
        (
            "[referUnusableFile, declineHardFailure, referWithinMargin, counteroffer, approve]",
            "counteroffer",
            "referWithinMargin",
        ),
        (
            "[referUnusableFile, referWithinMargin, declineHardFailure, counteroffer, approve]",
            "declineHardFailure",
            "referWithinMargin",
        ),
    ],
)
def test_a_step_order_that_breaks_the_methodology_is_refused_naming_the_key(
    tmp_path: Path, order: str, first: str, then: str
) -> None:
    err = load_error(tmp_path, edited(STEPS, f"  value: {order}\n"))
    assert err.key == "steps.value"
    assert f"{then} comes before {first}" in err.message
    assert "reference-policy.md" in err.message and str(tmp_path) in str(err)


def test_decline_and_counteroffer_commute_so_either_order_loads(tmp_path: Path) -> None:
    order = "[referUnusableFile, counteroffer, declineHardFailure, referWithinMargin, approve]"
    path = tmp_path / "policy.yaml"
    path.write_text(edited(STEPS, f"  value: {order}\n"), encoding="utf-8")
    assert load_policy(path)["steps"].value == tuple(order.strip("[]").split(", "))


def test_a_factor_order_missing_a_kind_is_an_error(tmp_path: Path) -> None:
    old = "  value: [scoreBelowMinimum, dtiOverCap, ltvOverCap, bureauKeyFactors]\n"
    err = load_error(
        tmp_path, edited(old, "  value: [scoreBelowMinimum, dtiOverCap, ltvOverCap]\n")
    )
    assert err.key == "factorOrder.value"


def test_terms_that_are_not_ascending_are_an_error(tmp_path: Path) -> None:
    err = load_error(tmp_path, edited("value: [36, 48, 60, 72]", "value: [36, 60, 48, 72]"))
    assert err.key == "products.auto.termsAllowed.value"


def test_band_minimums_that_do_not_descend_are_an_error(tmp_path: Path) -> None:
    text = SOURCE.replace("    unit: score\n    value: 660\n", "    unit: score\n    value: 730\n")
    assert text != SOURCE
    err = load_error(tmp_path, text)
    assert err.key == "scoreBands"


def test_a_file_that_is_not_yaml_is_an_error_naming_the_file(tmp_path: Path) -> None:
    err = load_error(tmp_path, "policy: [unclosed\n")
    assert "not valid YAML" in err.message


# ----------------------------------------------------------------------------- policy in use


def test_the_policy_hash_is_cited_in_every_decisions_policy_basis() -> None:
    policy = default_policy()
    cases = [
        auto_case(),  # approve
        auto_case(score=500),  # decline
        auto_case(amount="12500.00", value="10000.00"),  # counteroffer
        auto_case(score=None),  # refer
        card_case(score=645),  # refer
        card_case(debt="5000.00"),  # decline
    ]
    kinds = set()
    for case in cases:
        decision = decide(case).decision
        kinds.add(decision.decision)
        assert f"sha256:{policy.sha256}" in decision.policy_basis[0]
        assert "reference-credit-policy v2026.1" in decision.policy_basis[0]
    assert kinds == {"approve", "decline", "counteroffer", "refer"}


def test_a_case_dated_before_the_policys_effective_date_is_an_error(tmp_path: Path) -> None:
    later = load_policy(
        write(tmp_path, edited("effectiveDate: 2026-01-01\n", "effectiveDate: 2027-01-01\n"))
    )
    with pytest.raises(InputError) as info:
        decide(auto_case(as_of="2026-12-31"), later)
    assert info.value.field == "asOf"
    assert "takes effect 2027-01-01" in str(info.value)
    assert decide(auto_case(as_of="2027-01-01"), later).decision.decision == "approve"


def _decide_cli(tmp_path: Path, case: dict[str, Any], *extra: str) -> dict[str, Any]:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case), encoding="utf-8")
    result = CliRunner().invoke(app, ["decide", str(path), *extra])
    assert result.exit_code == 0, result.output
    line: dict[str, Any] = json.loads(result.stdout)
    return line


def test_policy_option_selects_another_policy_and_the_decision_follows_it(tmp_path: Path) -> None:
    """A lender's copy of the policy with the auto DTI cap raised to 50.0: the same case
    at DTI 47.0 is a counteroffer under the reference policy and an approval under it."""
    lender = write(
        tmp_path, edited(AUTO_MAX_DTI, AUTO_MAX_DTI.replace('"45.0"', '"50.0"')), "lender.yaml"
    )
    sha = hashlib.sha256(lender.read_bytes()).hexdigest()
    case = auto_case(debt=debt_for_dti("47.0", "auto"))
    reference = _decide_cli(tmp_path, case)
    chosen = _decide_cli(tmp_path, case, "--policy", str(lender))
    assert reference["decision"]["decision"] == "counteroffer"
    assert chosen["decision"]["decision"] == "approve"
    assert chosen["decision"]["dtiPct"] == 47.0
    assert f"sha256:{sha}" in chosen["decision"]["policyBasis"][0]
    assert f"sha256:{default_policy().sha256}" in reference["decision"]["policyBasis"][0]
    assert any("products.auto.maxDtiPct=50.0" in b for b in chosen["decision"]["policyBasis"])


def test_a_bad_policy_file_on_the_command_line_is_bad_input_naming_file_and_key(
    tmp_path: Path,
) -> None:
    bad = write(tmp_path, edited("effectiveDate: 2026-01-01\n", "effectiveDate: 2026-13-01\n"))
    case = tmp_path / "case.json"
    case.write_text(json.dumps(auto_case()), encoding="utf-8")
    result = CliRunner().invoke(app, ["decide", str(case), "--policy", str(bad)])
    assert result.exit_code == 2
    assert str(bad) in result.stderr and "key effectiveDate" in result.stderr
    assert result.stdout == ""


def test_a_case_before_the_effective_date_is_bad_input_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(auto_case(case_id="C-EARLY", as_of="2025-12-31")), encoding="utf-8")
    result = CliRunner().invoke(app, ["decide", str(path)])
    assert result.exit_code == 2
    assert "case C-EARLY" in result.stderr and "field asOf" in result.stderr


# ---------------------------------------------------------------- read-only parameters
#
# What is derived from a loaded policy is kept by the policy object (the underwriter's
# lookups, the figures a reason states, a batch plan); a parameter changed in place
# would leave those behind the policy they came from.


@pytest.mark.parametrize(
    "change",
    [
        lambda params: params.__setitem__("maxReasons", params["maxReasons"]),
        lambda params: params.__delitem__("maxReasons"),
        lambda params: params.update({"maxReasons": params["maxReasons"]}),
        lambda params: params.pop("maxReasons"),
        lambda params: params.popitem(),
        lambda params: params.setdefault("new", None),
        lambda params: params.clear(),
        lambda params: params.__ior__({}),
    ],
    ids=["set", "delete", "update", "pop", "popitem", "setdefault", "clear", "merge"],
)
def test_a_loaded_policys_parameters_cannot_be_changed_in_place(change: Any) -> None:
    policy = load_policy(default_policy_path())
    before = dict(policy.params)
    with pytest.raises(TypeError, match="read-only"):
        change(policy.params)
    assert dict(policy.params) == before


def test_a_policy_with_other_values_is_another_policy_built_from_a_copy() -> None:
    policy = default_policy()
    params = {**policy.params}
    cap = params["maxReasons"]
    params["maxReasons"] = cap.model_copy(update={"value": cap.value - 1})
    other = policy.model_validate({**policy.model_dump(), "params": params})
    assert other["maxReasons"].value == cap.value - 1
    assert policy["maxReasons"].value == cap.value
    with pytest.raises(TypeError, match="read-only"):
        other.params["maxReasons"] = cap


def test_a_policy_pickled_to_another_process_keeps_its_parameters_read_only() -> None:
    policy = default_policy()
    copy = pickle.loads(pickle.dumps(policy))
    assert copy == policy
    assert dict(copy.params) == dict(policy.params)
    with pytest.raises(TypeError, match="read-only"):
        copy.params["maxReasons"] = policy["maxReasons"]
