"""The methodology prompt is built from the data the model must apply: the catalogue's
codes (kind, category, wording, bureau code, source), the policy's steps, factor order
and parameter keys, the Decision schema and the prohibited-terms data. A change to the
data changes the prompt; a step or kind the prose has no words for is refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from credit.catalogue import ReasonEntry, default_catalogue
from credit.errors import PolicyError
from credit.fairness_terms import default_prohibited_terms
from credit.models import Decision
from credit.policy import (
    DECISION_STEPS,
    FACTOR_KINDS,
    default_policy,
    default_policy_path,
    load_policy,
)
from credit.tools.governed import TOOL_NAMES
from credit.underwriters.prompt import (
    FACTOR_INSTRUCTIONS,
    REASON_CODES_ARGUMENT,
    STEP_INSTRUCTIONS,
    SUPPLIED_BY_TOOLS,
    cited_policy_keys,
    decision_format,
    methodology_prompt,
)

POLICY = default_policy()
CATALOGUE = default_catalogue()
PROMPT = methodology_prompt(POLICY)


def test_the_prompt_keeps_the_methodology_steps_the_four_tools_and_the_fairness_rule() -> None:
    for step in ("1. Pull", "2. Band", "3. Assess capacity", "4. Decide", "5. Record"):
        assert f"\n{step}" in PROMPT
    for tool in TOOL_NAMES:
        assert tool in PROMPT
    assert "exactly once" in PROMPT
    assert f"record_decision(decision={{...}}, {REASON_CODES_ARGUMENT}=[...])" in PROMPT
    assert "Never consider or cite a prohibited basis" in PROMPT
    assert PROMPT.isascii()


def test_every_catalogue_code_appears_once_with_its_wording_and_under_its_kind() -> None:
    adverse_at = PROMPT.index("Adverse-action reasons")
    referral_at = PROMPT.index("Referral reasons")
    for code, entry in CATALOGUE.entries.items():
        lines = [line for line in PROMPT.splitlines() if line.startswith(f"  - {code}: ")]
        assert len(lines) == 1, code
        (line,) = lines
        assert f'"{entry.wordings[0]}"' in line and entry.reg_b in line
        assert f"  {entry.category}:" in PROMPT
        at = PROMPT.index(line)
        assert (adverse_at < at < referral_at) is (entry.kind == "adverse"), code
        if entry.bureau_code is not None:
            assert f"key factor code '{entry.bureau_code}'" in line


def test_the_steps_and_factor_kinds_are_given_in_the_policys_order() -> None:
    steps = re.findall(r"^   \d\. (\w+): ", PROMPT, flags=re.MULTILINE)
    assert steps == [*POLICY["steps"].value, *POLICY["factorOrder"].value]


def test_every_policy_parameter_is_listed_by_key_and_unit_and_no_value_is_given() -> None:
    listing = PROMPT[PROMPT.index("Its parameters, by key") :]
    for key, param in POLICY.params.items():
        assert f"\n  {key} ({param.unit})" in listing
    assert "6.49" not in PROMPT and "45.0" not in PROMPT  # values come from get_policy


def test_every_policy_key_the_prose_cites_is_a_key_of_the_policy() -> None:
    cited = cited_policy_keys(PROMPT)
    assert "thinFile.minTradelines" in cited and "products.<product>.minScore" in cited
    keys = set(POLICY.params)
    for key in cited:
        pattern = re.escape(key).replace("<product>", r"[\w-]+").replace("<band>", r"[\w-]+")
        assert any(re.fullmatch(pattern + r"(\..+)?", k) for k in keys), key


def test_the_decision_format_is_the_schema_less_what_the_tools_supply() -> None:
    lines = decision_format()
    schema = Decision.model_json_schema(by_alias=True)
    names = [line.split(":", 1)[0].rstrip("?") for line in lines]
    assert names == [n for n in schema["properties"] if n not in SUPPLIED_BY_TOOLS]
    assert 'decision: "approve" | "decline" | "counteroffer" | "refer"' in lines
    assert "terms?: {apr?, creditLine?, amount?, termMonths?} | null" in lines
    assert [n for n in names if n in ("factors", "policyBasis")] == []
    everything = decision_format(supplied=())
    assert "factors: [string]" in everything and "policyBasis: [string]" in everything


def test_the_prohibited_bases_and_proxies_named_are_the_prohibited_terms_data() -> None:
    terms = default_prohibited_terms()
    rule = next(line for line in PROMPT.splitlines() if "prohibited basis" in line)
    for entry in terms.entries:
        assert entry.label in rule, entry.name


def test_the_prose_has_words_for_every_step_and_factor_kind_of_the_policy_format() -> None:
    assert set(STEP_INSTRUCTIONS) == set(DECISION_STEPS)
    assert set(FACTOR_INSTRUCTIONS) == set(FACTOR_KINDS)


# ------------------------------------------------------------------ from data, not lists


def test_a_code_added_to_the_catalogue_is_in_the_prompt_and_a_removed_one_is_not() -> None:
    added = ReasonEntry(
        code="KF_99",
        kind="adverse",
        reg_b="Length of employment",
        category="Credit score key factor",
        states=("keyFactorValue",),
        excluded_attributes=(),
        reference="a test",
        wordings=("Key factor in your credit score: a test reason ({keyFactorValue}).",),
        bureau_code="99",
    )
    entries = {k: v for k, v in CATALOGUE.entries.items() if k != "KF_38"}
    changed = CATALOGUE.model_copy(update={"entries": {**entries, "KF_99": added}})
    prompt = methodology_prompt(POLICY, changed)
    assert "  - KF_99: " in prompt and "key factor code '99'" in prompt
    assert "KF_38" not in prompt and "KF_38" in PROMPT


def test_a_policy_with_its_own_descriptions_and_order_gives_its_own_prompt(tmp_path: Path) -> None:
    text = default_policy_path().read_text(encoding="utf-8")
    text = text.replace(
        "value: [scoreBelowMinimum, dtiOverCap, ltvOverCap, bureauKeyFactors]",
        "value: [dtiOverCap, ltvOverCap, scoreBelowMinimum, bureauKeyFactors]",
    ).replace("Smallest amount financed the product offers.", "The floor of the amount.")
    path = tmp_path / "lender.yaml"
    path.write_text(text, encoding="utf-8")
    lender = load_policy(path)
    prompt = methodology_prompt(lender)
    kinds = re.findall(r"^   \d\. (\w+): ", prompt, flags=re.MULTILINE)[len(DECISION_STEPS) :]
    assert kinds == ["dtiOverCap", "ltvOverCap", "scoreBelowMinimum", "bureauKeyFactors"]
    assert "products.auto.minAmount (USD): The floor of the amount." in prompt


def test_a_step_the_methodology_has_no_words_for_is_refused_naming_it() -> None:
    steps = POLICY["steps"]
    odd = steps.model_copy(update={"value": ("referUnusableFile", "auction", "approve")})
    planted = POLICY.model_copy(update={"params": {**POLICY.params, "steps": odd}})
    with pytest.raises(PolicyError) as caught:
        methodology_prompt(planted)
    assert caught.value.key == "steps" and "'auction'" in caught.value.message


def test_a_policy_without_a_key_the_prose_cites_is_refused_naming_the_key() -> None:
    params = {k: v for k, v in POLICY.params.items() if k != "thinFile.minHistoryMonths"}
    planted = POLICY.model_copy(update={"params": params})
    with pytest.raises(PolicyError) as caught:
        methodology_prompt(planted)
    assert "thinFile.minHistoryMonths" in caught.value.message and caught.value.key == "steps"
