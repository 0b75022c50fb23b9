"""A decision is named by its content, not by its place in the chain (ADR-0002, step 1).

Scenarios: every entry about a decision names it by its ``decisionId``; a journal
written before (decisions named by ``decisionSeq``) folds, explains and feeds the
fair-lending review exactly as the same journal written now; an entry naming a decision
that is not the case's current one is about nothing, in either form; the examiner's
verify walk recomputes each name.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import auto_case
from credit.examples import generate_cases
from credit.governance.fair_lending import recorded_decisions
from credit.journal import Entry, InMemoryStore
from credit.journal.naming import (
    decision_id,
    decision_id_problem,
    decision_ref,
    named_decision,
    names_decision,
)
from credit.journal.why import explain
from credit.kinds import DECISION_KINDS, DECISION_RECORDED, KEYSTONE_REJECTED, OFFICER_DECIDED
from credit.lifecycle import CaseLife, fold, fold_all
from credit.policy import PolicyRegistry
from governance_support import DANA, LEE, OLGA, OMAR
from test_casework import World, backend_store, decline, thin_file

TODAY = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
REGISTRY = PolicyRegistry.bundled()


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Entry]]:
    """A journal with every kind of entry about a decision: a generated batch (approvals,
    notices sent, holds, referrals), and then people's actions: a release by four eyes,
    a rejection and an officer's decision after it, an officer's decision of a referral,
    a withdrawal."""
    from credit.clock import FixedClock

    tmp = tmp_path_factory.mktemp("naming")
    clock = FixedClock(TODAY)
    with backend_store("sqlite", tmp, clock) as store:
        world = World(store, tmp / "outbox", clock)
        world.run(
            *generate_cases(29, 60),
            auto_case(case_id="H-1", score=598),
            auto_case(case_id="J-1", score=598),
            thin_file("R-1"),
            thin_file("W-1"),
        )
        world.work.release("H-1", DANA, "the score is the bureau's; checked")
        world.work.release("H-1", LEE, "agreed")
        world.work.reject("J-1", DANA, "a person decides")
        world.work.officer_decide("J-1", OMAR, decline("SCORE_BELOW_MINIMUM"))
        world.work.officer_decide("R-1", OLGA, decline("LIMITED_CREDIT_HISTORY"))
        world.work.withdraw("W-1", OLGA, "the applicant called to withdraw")
        assert store.audit().ok
        yield store.entries()


def _references(value: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) of a decision reference anywhere in a payload."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in ("decisionId", "decisionSeq", "decisionEntry"):
                yield key, item
            yield from _references(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _references(item)


def test_every_entry_about_a_decision_names_it_by_its_content(journal: list[Entry]) -> None:
    decisions: dict[str, Entry] = {}
    numbers: dict[str | None, int] = {}
    named = 0
    for entry in journal:
        if entry.kind in DECISION_KINDS:
            numbers[entry.case_id] = numbers.get(entry.case_id, 0) + 1
            payload = entry.payload
            assert payload["decisionNumber"] == numbers[entry.case_id]
            assert payload["decisionId"] == decision_id(entry.case_id, entry.kind, payload)
            decisions[payload["decisionId"]] = entry
            continue
        for key, value in _references(entry.payload):
            assert key == "decisionId", (entry.kind, key)  # never a seq
            if value is None:  # a turn that recorded nothing, a withdrawal before any
                continue
            about = decisions[value]  # a decision recorded before it, of the same case
            assert about.case_id == entry.case_id and about.seq < entry.seq
            named += 1
    assert numbers["J-1"] == 2 and numbers["R-1"] == 2  # an officer's decision is the 2nd
    assert named > 5 * len(decisions)  # reviews, bases, the gate, notices, turns


def written_before(entries: Sequence[Entry]) -> list[Entry]:
    """The same journal as it was written before decisions were named: no decision
    names itself, and every entry names its decision by the decision entry's seq (a
    turn's by ``decisionEntry``)."""
    seqs = {e.payload["decisionId"]: e.seq for e in entries if e.kind in DECISION_KINDS}

    def old(value: Any, turn: bool) -> Any:
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                if key == "decisionId":
                    out["decisionEntry" if turn else "decisionSeq"] = seqs.get(item)
                else:
                    out[key] = old(item, False)
            return out
        if isinstance(value, (list, tuple)):
            return [old(item, False) for item in value]
        return value

    out = []
    for entry in entries:
        payload = dict(entry.payload)
        if entry.kind in DECISION_KINDS:
            del payload["decisionId"], payload["decisionNumber"]
        else:
            payload = old(payload, entry.kind == "underwriter.turn")
        out.append(entry.model_copy(update={"payload": payload}))
    return out


def _standing(life: CaseLife) -> tuple[Any, ...]:
    gate = life.gate
    item = life.item
    return (
        life.state,
        life.decision.seq if life.decision else None,
        life.decision.number if life.decision else None,
        sorted((name, r.passed) for name, r in gate.reviews.items()),
        gate.held.seq if gate.held else None,
        [a.seq for a in gate.approvals],
        gate.released.seq if gate.released else None,
        gate.rejected.seq if gate.rejected else None,
        *(e.seq if e else None for e in (life.verified, life.sent, life.blocked)),
        None if item is None else (item.kind, item.role, item.deadline, item.opened_seq),
    )


def test_a_journal_of_either_form_folds_and_explains_alike(journal: list[Entry]) -> None:
    before = written_before(journal)
    assert not any(k == "decisionId" for e in before for k, _ in _references(e.payload))
    now, then = fold_all(journal, REGISTRY), fold_all(before, REGISTRY)
    assert now.keys() == then.keys() and len(now) == 64
    for case_id, life in now.items():
        assert _standing(life) == _standing(then[case_id]), case_id
        entries = [e for e in journal if e.case_id == case_id]
        old = [e for e in before if e.case_id == case_id]
        told, told_before = explain(case_id, entries, life), explain(case_id, old, then[case_id])
        assert told["decision"] is None or told["decision"].pop("id") == life.decision.id  # type: ignore[union-attr]
        if told_before["decision"] is not None:
            assert told_before["decision"].pop("id") is None
        for review in (*told["reviews"].values(), *told_before["reviews"].values()):
            for key in ("decisionId", "decisionSeq"):  # the basis as journaled, in its form
                (review["basis"] or {}).pop(key, None)
        assert told == told_before, case_id
    states = {life.state for life in now.values()}
    assert {"approved", "notified", "held", "referred", "withdrawn"} <= states


def test_the_fair_lending_review_reads_either_form_alike(journal: list[Entry]) -> None:
    stores = []
    for entries in (journal, written_before(journal)):
        store = InMemoryStore()
        for e in entries:
            if e.kind == DECISION_RECORDED:
                store.record_decision(str(e.case_id), e.payload)
            else:
                store.append(e.case_id, e.kind, e.payload)
        stores.append(store)
    now, before = (recorded_decisions(s) for s in stores)
    assert now == before
    assert "J-1" in {d.case_id for d in now[0]}  # the officer's decision after the rejection


def _entry(seq: int, case_id: str, kind: str, payload: dict[str, Any]) -> Entry:
    return Entry(
        seq=seq,
        case_id=case_id,
        kind=kind,
        payload=payload,
        prev_hash="0" * 64,
        recorded_at="2026-12-01T09:00:00Z",
        hash="0" * 64,
    )


@pytest.mark.parametrize("form", ["decisionId", "decisionSeq"])
def test_an_entry_naming_a_decision_that_is_not_the_current_one_is_about_nothing(
    form: str,
) -> None:
    first = named_decision("N-1", DECISION_RECORDED, {"decision": {"decision": "approve"}}, 1)
    second = named_decision("N-1", OFFICER_DECIDED, {"decision": {"decision": "decline"}}, 2)
    if form == "decisionSeq":  # written before decisions were named
        first = {k: v for k, v in first.items() if k not in ("decisionId", "decisionNumber")}
        second = {k: v for k, v in second.items() if k not in ("decisionId", "decisionNumber")}
    one = _entry(1, "N-1", DECISION_RECORDED, first)
    two = _entry(3, "N-1", OFFICER_DECIDED, second)
    stale = _entry(4, "N-1", KEYSTONE_REJECTED, decision_ref(one.seq, one.payload))
    assert list(stale.payload) == [form]
    rejected_first = _entry(2, "N-1", KEYSTONE_REJECTED, decision_ref(one.seq, one.payload))
    life = fold("N-1", [one, rejected_first, two, stale], REGISTRY)
    assert life.decision is not None and life.decision.seq == 3 and life.decision.number == 2
    assert life.gate.rejected is None  # the rejection of decision 1 is not about decision 2
    current = _entry(5, "N-1", KEYSTONE_REJECTED, decision_ref(two.seq, two.payload))
    life = fold("N-1", [one, rejected_first, two, stale, current], REGISTRY)
    assert life.gate.rejected == current and life.state == "rejected"


def test_what_a_payload_names_in_each_form() -> None:
    named = "a" * 64
    assert names_decision({"decisionId": named}, 7, named) is True
    assert names_decision({"decisionId": named}, 7, "b" * 64) is False
    assert names_decision({"decisionId": named}, 7, None) is False  # a decision without a name
    assert names_decision({"decisionSeq": 7}, 7, named) is True  # written before
    assert names_decision({"decisionSeq": 6}, 7, named) is False
    assert names_decision({"decisionSeq": True}, 1, None) is None  # not a seq: names nothing
    assert names_decision({"decisionId": 7, "decisionSeq": 7}, 7, named) is True
    assert names_decision({}, 7, named) is None  # about the only decision there was
    assert decision_ref(7, {"decisionId": named}) == {"decisionId": named}
    assert decision_ref(7, {}) == {"decisionSeq": 7}


_PAYLOADS = st.dictionaries(
    st.text(min_size=1, max_size=8).filter(lambda k: k not in ("decisionId", "decisionNumber")),
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
    max_size=6,
)


@given(payload=_PAYLOADS, n=st.integers(1, 50), m=st.integers(1, 50))
def test_a_decisions_name_is_its_content_and_its_place(
    payload: dict[str, Any], n: int, m: int
) -> None:
    one = named_decision("C-1", DECISION_RECORDED, payload, n)
    assert one["decisionId"] == decision_id("C-1", DECISION_RECORDED, one)  # not itself
    assert decision_id_problem("C-1", DECISION_RECORDED, one, n) is None
    reordered = dict(reversed(list(one.items())))
    assert decision_id("C-1", DECISION_RECORDED, reordered) == one["decisionId"]
    other = named_decision("C-1", DECISION_RECORDED, payload, m)
    assert (other["decisionId"] == one["decisionId"]) is (n == m)
    assert named_decision("C-2", DECISION_RECORDED, payload, n)["decisionId"] != one["decisionId"]
    assert named_decision("C-1", OFFICER_DECIDED, payload, n)["decisionId"] != one["decisionId"]


@pytest.mark.parametrize("number", [0, -1, True, 1.0, "1"])
def test_a_decisions_number_is_a_whole_number_from_one(number: Any) -> None:
    with pytest.raises(ValueError, match="whole number from 1"):
        named_decision("C-1", DECISION_RECORDED, {}, number)


def _audited(*payloads: dict[str, Any]) -> list[tuple[str, int | None]]:
    store = InMemoryStore()
    store.record_decision("V-1", payloads[0])
    for payload in payloads[1:]:
        store.append("V-1", OFFICER_DECIDED, payload)
    return [(f.check, f.seq) for f in store.audit().findings]


def test_the_verify_walk_recomputes_each_decisions_name() -> None:
    first = named_decision("V-1", DECISION_RECORDED, {"decision": "approve"}, 1)
    second = named_decision("V-1", OFFICER_DECIDED, {"decision": "decline"}, 2)
    assert _audited(first, second) == []
    assert _audited({"decision": "approve"}, {"decision": "decline"}) == []  # written before
    edited = {**second, "decision": "approve"}  # what it says changed, its name did not
    assert _audited(first, edited) == [("decision-id", 2)]
    renumbered = named_decision("V-1", OFFICER_DECIDED, {"decision": "decline"}, 1)
    assert _audited(first, renumbered) == [("decision-id", 2)]  # a second decision 1
    unnumbered = {**first}
    del unnumbered["decisionNumber"]
    assert _audited(unnumbered) == [("decision-id", 1)]
    assert _audited({**first, "decisionId": 5}) == [("decision-id", 1)]


def test_a_turn_and_the_tool_answer_with_the_decisions_name(tmp_path: Path) -> None:
    from credit.governance.onramp import intake
    from credit.underwriters.rules import RulesUnderwriter
    from credit.underwriters.runtime import SparkRuntime

    store = InMemoryStore()
    intake(auto_case(case_id="T-1"), store)
    result = SparkRuntime(store).run_turn("T-1", RulesUnderwriter())
    decided = result.decision_entry
    assert decided is not None and decided.payload["decisionNumber"] == 1
    (turn,) = store.entries("T-1", kinds=["underwriter.turn"])
    assert turn.payload["decisionId"] == decided.payload["decisionId"]
    assert "decisionEntry" not in turn.payload
    life = fold("T-1", store.entries("T-1"), REGISTRY)
    told = explain("T-1", store.entries("T-1"), life)
    assert told["turns"][0]["decisionEntry"] == decided.seq  # explained by its place
    assert told["decision"]["id"] == decided.payload["decisionId"]


@pytest.mark.parametrize("form", ["decisionId", "decisionSeq"])
@pytest.mark.parametrize("names", ["the current decision", "the one before"])
def test_the_fair_lending_pool_leaves_out_only_a_rejected_current_decision(
    form: str, names: str
) -> None:
    from conftest import decide

    wire = decide(auto_case(case_id="P-1")).decision.to_wire()
    store = InMemoryStore()
    payloads = [{"decision": wire}, {"decision": wire, "officer": {"name": "Olga"}}]
    if form == "decisionId":
        payloads = [
            named_decision("P-1", kind, payload, number)
            for number, (kind, payload) in enumerate(
                zip((DECISION_RECORDED, OFFICER_DECIDED), payloads, strict=True), start=1
            )
        ]
    first = store.record_decision("P-1", payloads[0])
    second = store.append("P-1", OFFICER_DECIDED, payloads[1])
    about = second if names == "the current decision" else first
    store.append("P-1", KEYSTONE_REJECTED, decision_ref(about.seq, about.payload))
    kept, rejected, _ = recorded_decisions(store)
    assert [d.case_id for d in kept] == ([] if about is second else ["P-1"])
    assert rejected == (1 if about is second else 0)
