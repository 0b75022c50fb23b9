"""``credit why``'s account, unit by unit: a model's turn shows its transcript, a
methodology line is split into its rule, policy value and finding, and nothing of the
line is lost."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from credit.casework import CaseWork
from credit.journal import InMemoryStore
from credit.journal.why import explain, methodology_steps, why_text
from credit.notices.outbox import InMemoryOutbox


def test_a_model_turn_shows_its_transcript_file_and_hash() -> None:
    store = InMemoryStore()
    store.append("M-1", "intake.accepted", {"asOf": "2026-11-30", "product": "card"})
    turn = store.append(
        "M-1",
        "underwriter.turn",
        {
            "toolCalls": ["get_application"],
            "transcriptSha256": "ab" * 32,
            "transcript": "M-1.turn-1.jsonl",
            "underwriter": "claude",
        },
    )
    entries = store.entries("M-1")
    doc = explain("M-1", entries, CaseWork(store, InMemoryOutbox()).life("M-1"))
    assert doc["turns"] == [
        {
            "seq": turn.seq,
            "at": turn.recorded_at,
            "toolCalls": ["get_application"],
            "decisionEntry": None,
            "refused": None,
            "transcriptSha256": "ab" * 32,
            "transcript": "M-1.turn-1.jsonl",
        }
    ]
    text = why_text(doc)
    assert f"transcript M-1.turn-1.jsonl sha256 {'ab' * 32} [#{turn.seq}]" in text
    assert "(no decision recorded yet)" in text


def test_a_turn_without_a_transcript_shows_none() -> None:
    store = InMemoryStore()
    store.append("R-1", "underwriter.turn", {"toolCalls": []})
    doc = explain("R-1", store.entries("R-1"), CaseWork(store, InMemoryOutbox()).life("R-1"))
    assert "transcriptSha256" not in doc["turns"][0]
    assert "transcript" not in why_text(doc)


def test_a_methodology_line_is_split_into_rule_policy_value_and_finding() -> None:
    (step,) = methodology_steps(["products.auto.maxDtiPct=45.0: DTI 36.9% passes"])
    assert (step["rule"], step["policyValue"], step["applied"]) == (
        "products.auto.maxDtiPct",
        "45.0",
        "DTI 36.9% passes",
    )
    (plain,) = methodology_steps(["disputes: 0 unresolved on the file"])
    assert (plain["rule"], plain["policyValue"]) == ("disputes", None)


@given(st.lists(st.text(), max_size=5))
def test_every_methodology_line_is_kept_whole(lines: list[str]) -> None:
    steps = methodology_steps(lines)
    assert [s["line"] for s in steps] == lines
    for step in steps:
        head = step["rule"] + ("=" + step["policyValue"] if step["policyValue"] is not None else "")
        rebuilt = head + (": " + step["applied"] if ": " in step["line"] else "")
        assert rebuilt == step["line"]
