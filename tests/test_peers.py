"""The zen-engine peer (benchmarks/peers/): its JDM graph is generated from the policy
and fresh, and zen-engine's decisions agree with ours on every modelled figure.

The agreement tests need zen-engine (the ``peers`` extra, installed by ``make bench``
only); without it they skip. The freshness and input-mapping tests always run.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from credit import Policy, default_policy, parse_case
from credit.examples import generate_cases
from credit.policy import load_policy
from credit.underwriting import Underwriting, decide_case

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.peers import jdm, zen_peer  # noqa: E402

POLICY = default_policy()
CASES = ROOT / "examples" / "cases.jsonl"


def _ours(docs: list[dict[str, Any]], policy: Policy) -> list[Underwriting]:
    return [decide_case(parse_case(doc), policy) for doc in docs]


def _variant(edit: Callable[[str], str]) -> Policy:
    source = Path(POLICY.source)
    text = edit(source.read_text(encoding="utf-8"))
    assert text != source.read_text(encoding="utf-8"), "the edit changed nothing"
    return load_policy(source, text)


def test_committed_jdm_is_generated_from_the_policy() -> None:
    """The committed graph is exactly what the generator makes of the shipped policy
    (regenerate with ``python -m benchmarks.peers.jdm``)."""
    assert jdm.JDM_PATH.read_text(encoding="utf-8") == jdm.render(POLICY)


def test_jdm_cites_the_policy_and_orders_the_steps_as_the_policy_does() -> None:
    graph = jdm.build_jdm(POLICY)
    assert graph["metadata"]["sha256"] == POLICY.sha256
    decide = next(n for n in graph["nodes"] if n["id"] == "decide")
    steps = [rule["_id"].removeprefix("decide.") for rule in decide["content"]["rules"]]
    assert steps == list(POLICY["steps"].value)
    # Every node is reached, in a chain from the input to the output.
    ids = [n["id"] for n in graph["nodes"]]
    edges = [(e["sourceId"], e["targetId"]) for e in graph["edges"]]
    assert edges == list(itertools.pairwise(ids))


def test_jdm_follows_a_threshold_change_without_code_change() -> None:
    moved = _variant(lambda t: t.replace('value: "45.0"', 'value: "43.5"', 1))
    text = jdm.render(moved)
    assert "43.5" in text and text != jdm.render(POLICY)


def test_zen_context_is_exact_cents() -> None:
    doc = {
        "application": {
            "product": "auto",
            "annualIncome": "61234.56",
            "monthlyDebtPayments": "0.10",
            "requestedAmount": "25000.00",
            "termMonths": 60,
            "vehicleValue": "23999.99",
        },
        "creditReport": {
            "score": None,
            "tradelines": 4,
            "historyMonths": 30,
            "disputes": [
                {"tradelineId": "T1", "resolved": True},
                {"tradelineId": "T2", "resolved": False},
            ],
        },
    }
    assert zen_peer.zen_context(doc) == {
        "product": "auto",
        "score": None,
        "tradelines": 4,
        "historyMonths": 30,
        "unresolvedDisputes": 1,
        "annualIncomeCents": 6123456,
        "monthlyDebtCents": 10,
        "requestedAmountCents": 2500000,
        "termMonths": 60,
        "vehicleValueCents": 2399999,
    }


# ---------------------------------------------------------------- with zen-engine


@pytest.fixture(scope="module")
def peer() -> zen_peer.ZenPeer:
    pytest.importorskip("zen", reason="zen-engine is the optional 'peers' extra (make bench)")
    return zen_peer.ZenPeer(jdm.JDM_PATH)


def _agree(peer: zen_peer.ZenPeer, docs: list[dict[str, Any]], policy: Policy) -> list[str]:
    ours = _ours(docs, policy)
    theirs = peer.decide(zen_peer.zen_context(doc) for doc in docs)
    return [str(d) for d in zen_peer.compare(ours, theirs)]


def test_zen_agrees_on_the_bundled_and_generated_cases(peer: zen_peer.ZenPeer) -> None:
    from credit.canonical import loads

    bundled = [loads(line) for line in CASES.read_text("utf-8").splitlines() if line.strip()]
    generated = generate_cases(7, 3000)
    docs = bundled + generated
    assert _agree(peer, docs, POLICY) == []
    decisions = {u.decision.decision for u in _ours(bundled, POLICY)}
    assert decisions == {"approve", "decline", "counteroffer", "refer"}


def test_zen_agrees_one_case_at_a_time(peer: zen_peer.ZenPeer) -> None:
    docs = generate_cases(11, 200)
    theirs = [peer.decide_one(zen_peer.zen_context(doc)) for doc in docs]
    assert zen_peer.compare(_ours(docs, POLICY), theirs) == []


@pytest.mark.parametrize(
    ("label", "edit"),
    [
        (
            "counteroffer before the hard decline (an order the methodology allows)",
            lambda t: t.replace(
                "declineHardFailure, counteroffer, referWithinMargin",
                "counteroffer, declineHardFailure, referWithinMargin",
            ),
        ),
        ("auto DTI cap 41.5", lambda t: t.replace('value: "45.0"', 'value: "41.5"', 1)),
        ("card payment 2.5% of the line", lambda t: t.replace('value: "3.0"', 'value: "2.5"', 1)),
        ("auto step $250", lambda t: t.replace('value: "100.00"', 'value: "250.00"', 1)),
    ],
)
def test_zen_agrees_under_another_policy(
    label: str, edit: Callable[[str], str], peer: zen_peer.ZenPeer
) -> None:
    """The graph is regenerated from a changed policy, and still agrees: the thresholds
    and the step order come from the policy, not from the generator."""
    policy = _variant(edit)
    other = zen_peer.ZenPeer(jdm.build_jdm(policy))
    docs = generate_cases(2026, 1500, policy=policy)
    assert _agree(other, docs, policy) == [], label


def test_zen_agrees_with_the_columnar_batch_on_stress_rows(peer: zen_peer.ZenPeer) -> None:
    """The batch's stress rows aim at every cap, margin and rounding half; zen decides
    them from the same flat rows as the columnar underwriter (rows the policy has no
    rule for are errors there, and the peer does not validate: left out)."""
    pytest.importorskip("polars", reason="the columnar underwriter is the 'batch' extra")
    from credit.batch import decide_frame
    from credit.batch.generate import generate_frame

    frame = generate_frame(2026, 6000, examples=0)
    decided = decide_frame(frame, POLICY)
    valid = decided["errorKind"].is_null()
    rows = decided.filter(valid).to_dicts()
    contexts = [zen_peer.zen_context_of_row(r) for r in frame.filter(valid).to_dicts()]
    assert len(rows) > 5000
    assert zen_peer.compare_rows(rows, peer.decide(contexts)) == []
