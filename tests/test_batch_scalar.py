"""The scalar underwriter's per-policy lookups (read once per policy object, for
speed): each policy decides by its own numbers, and a policy's lookups go with it."""

from __future__ import annotations

import gc
from pathlib import Path

from batch_support import policy_with
from conftest import POLICY, auto_case
from credit import reason_facts
from credit.models import parse_case
from credit.underwriting import decide_case, engine


def test_two_policies_decide_one_case_each_by_its_own_numbers(tmp_path: Path) -> None:
    case = parse_case(auto_case(debt="3800.00"))  # DTI about 43: under 45, over 40
    lower = policy_with({"products.auto.maxDtiPct": "40.0"}, tmp_path, "lower")
    for _ in range(2):  # and again, with both policies' lookups built
        a, b = decide_case(case, POLICY), decide_case(case, lower)
        assert a.decision.decision == "approve"
        assert b.decision.decision == "counteroffer"
        assert a.decision.policy_basis[0].endswith(POLICY.sha256)
        assert b.decision.policy_basis[0].endswith(lower.sha256)
        assert "products.auto.maxDtiPct=40.0: DTI" in " ".join(b.decision.policy_basis)


def test_a_policys_lookups_are_dropped_with_the_policy(tmp_path: Path) -> None:
    policy = policy_with({"margins.scorePoints": 5}, tmp_path, "short-lived")
    referred = decide_case(parse_case(auto_case(tradelines=1)), policy)  # a reason stated
    assert referred.reasons
    key = id(policy)
    assert key in engine._lookups._kept
    assert key in reason_facts._figures._kept
    del policy
    gc.collect()
    assert key not in engine._lookups._kept
    assert key not in reason_facts._figures._kept


def test_a_reason_states_the_figures_of_the_policy_that_decided(tmp_path: Path) -> None:
    # what every file shares is written once per policy; each policy states its own
    case = parse_case(auto_case(tradelines=3, history_months=20))
    stricter = policy_with(
        {"thinFile.minTradelines": 5, "thinFile.minHistoryMonths": 36}, tmp_path, "stricter"
    )
    for _ in range(2):  # and again, with both policies' figures written
        ours, theirs = decide_case(case, POLICY), decide_case(case, stricter)
        by_code = {r.code: r.values for r in theirs.reasons}
        assert by_code["REFER_FEW_TRADELINES"]["minTradelines"] == "5"
        assert by_code["REFER_SHORT_HISTORY"]["minHistoryMonths"] == "36"
        assert all(
            r.values.get("minTradelines") in (None, str(POLICY["thinFile.minTradelines"].value))
            for r in ours.reasons
        )
