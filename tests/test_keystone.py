"""The Keystone gate: every recorded decision is held until Equipoise and Backstop both
pass, or a person releases or rejects it; the gate's state comes from the journal."""

from __future__ import annotations

import pytest

from conftest import auto_case, card_case, decide
from credit.errors import AccessError, CaseNotHeldError, GovernanceError
from credit.governance.findings import KIND_EQUIPOISE, Review
from credit.governance.keystone import GATE, Keystone
from credit.journal import InMemoryStore
from credit.roles import Actor, Role
from governance_support import DANA, KIM, LEE, kinds, monitoring, plant_disparity, record


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


def test_a_recorded_decision_is_held_awaiting_review_before_the_gate_runs(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K1"), monitor=monitoring())
    keystone = Keystone(store)
    status = keystone.status("K1")
    assert status.state == "awaiting-review"
    assert status.held
    assert [s.case_id for s in keystone.held_cases()] == ["K1"]
    assert status.decision == "approve" and status.underwriter == "rules"


def test_a_clean_rules_decision_is_released_by_the_gate_when_both_reviews_pass(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K1"), monitor=monitoring())
    status = Keystone(store).review("K1")
    assert status.state == "released"
    assert status.decided_by == GATE
    assert status.passed is True
    assert kinds(store, "K1") == [
        "decision.recorded",
        "review.equipoise",
        "review.backstop",
        "keystone.released",
    ]
    released = store.entries("K1", kinds=["keystone.released"])[0]
    assert released.payload["by"] == "keystone"
    assert released.payload["reviews"] == {"backstop": True, "equipoise": True}
    assert Keystone(store).held_cases() == []


def test_a_tampered_decision_is_held_with_the_backstop_disagreement_for_a_person(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    status = Keystone(store).review("K2")
    assert status.state == "held"
    assert status.reviews["equipoise"].passed
    assert not status.reviews["backstop"].passed
    codes = [f.code for f in status.holding_findings]
    assert codes == ["backstop.disagreement"]
    assert status.holding_findings[0].detail["field"] == "decision"
    held = store.entries("K2", kinds=["keystone.held"])[0]
    assert [f["code"] for f in held.payload["findings"]] == codes
    assert [s.case_id for s in Keystone(store).held_cases()] == ["K2"]


def test_a_decision_citing_a_prohibited_basis_is_held_by_equipoise_alone(
    store: InMemoryStore,
) -> None:
    case = card_case(case_id="K3")
    basis = [*decide(case).decision.policy_basis, "applicant zip code 94110 reviewed"]
    record(store, case, monitor=monitoring(), changes={"policyBasis": basis})
    status = Keystone(store).review("K3")
    assert status.state == "held"
    assert status.reviews["backstop"].passed
    assert not status.reviews["equipoise"].passed
    assert [f.code for f in status.holding_findings] == ["equipoise.prohibited_basis_cited"]


def test_reviewing_a_case_already_reviewed_journals_nothing_more(store: InMemoryStore) -> None:
    record(store, auto_case(case_id="K1"), monitor=monitoring())
    record(store, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    keystone = Keystone(store)
    first = [keystone.review("K1"), keystone.review("K2")]
    count = len(store.entries())
    again = [keystone.review("K1"), Keystone(store).review("K2")]
    assert len(store.entries()) == count
    assert [s.state for s in again] == [s.state for s in first] == ["released", "held"]


def test_run_review_gates_the_case_as_review_does_and_reads_nothing_back(
    store: InMemoryStore,
) -> None:
    """For a caller that reads the case afterwards anyway (the system's own work):
    the same entries as review, no status when it reviewed, the standing it found when
    there was nothing left to do."""
    other = InMemoryStore()
    for each in (store, other):  # the same two cases in each: one to release, one to hold
        record(each, auto_case(case_id="K1"), monitor=monitoring())
        record(each, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    keystone, reference = Keystone(store), Keystone(other)
    assert [keystone.run_review(c) for c in ("K1", "K2")] == [None, None]
    assert [reference.review(c).state for c in ("K1", "K2")] == ["released", "held"]
    for case_id in ("K1", "K2"):
        assert kinds(store, case_id) == kinds(other, case_id)
    again = [keystone.run_review(c) for c in ("K1", "K2")]
    assert [s.state if s else None for s in again] == ["released", "held"]


def test_run_review_handed_the_life_just_read_gates_as_it_does_reading_it_itself(
    store: InMemoryStore,
) -> None:
    """The system's own work reads a case's life from its authentic entries just before
    the review: handed that life, the gate journals what it journals when it reads the
    life itself, without reading it again."""
    from credit.lifecycle import fold

    other = InMemoryStore()
    for each in (store, other):  # the same two cases in each: one to release, one to hold
        record(each, auto_case(case_id="K1"), monitor=monitoring())
        record(each, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    keystone, reference = Keystone(store), Keystone(other)
    lives = {c: fold(c, store.authentic_entries(c), keystone.registry) for c in ("K1", "K2")}

    def unread(case_id: str) -> None:
        raise AssertionError(f"the gate read {case_id}'s life again")

    keystone.life = unread  # type: ignore[method-assign]
    assert [keystone.run_review(c, life=lives[c]) for c in ("K1", "K2")] == [None, None]
    assert [reference.run_review(c) for c in ("K1", "K2")] == [None, None]
    for case_id in ("K1", "K2"):
        assert kinds(store, case_id) == kinds(other, case_id)
    assert [Keystone(store).status(c).state for c in ("K1", "K2")] == ["released", "held"]


def test_a_review_interrupted_after_equipoise_is_completed_without_running_it_twice(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K1"), monitor=monitoring())
    keystone = Keystone(store)
    store.append("K1", KIND_EQUIPOISE, keystone.equipoise.review("K1").to_payload())
    assert keystone.status("K1").state == "awaiting-review"
    status = keystone.review("K1")
    assert status.state == "released"
    assert kinds(store, "K1").count("review.equipoise") == 1
    assert kinds(store, "K1").count("review.backstop") == 1


def test_a_held_decision_is_approved_by_one_reviewer_and_released_by_a_second(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    keystone = Keystone(store)
    keystone.review("K2")
    first = keystone.release("K2", DANA, "  referral is appropriate; file checked ")
    assert (first.outcome, first.entry.kind) == ("approved", "keystone.approved")
    assert first.entry.payload["by"] == "Dana Reviewer"
    assert first.entry.payload["keyId"] == "k-dana"
    assert first.entry.payload["reason"] == "referral is appropriate; file checked"
    assert [f["code"] for f in first.entry.payload["findings"]] == ["backstop.disagreement"]
    status = keystone.status("K2")
    assert (status.state, status.approved_by) == ("held", ("Dana Reviewer",))
    second = keystone.release("K2", LEE, "agreed")
    assert (second.outcome, second.entry.kind) == ("released", "keystone.released")
    assert second.entry.payload["approvedBy"] == [
        {"by": "Dana Reviewer", "keyId": "k-dana", "seq": first.entry.seq}
    ]
    status = keystone.status("K2")
    assert (status.state, status.decided_by) == ("released", "Lee Reviewer")
    assert keystone.held_cases() == []


def test_the_reviewer_who_approved_cannot_release_it_too_four_eyes(store: InMemoryStore) -> None:
    record(store, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    keystone = Keystone(store)
    keystone.review("K2")
    keystone.release("K2", DANA, "checked")
    count = len(store.entries())
    with pytest.raises(CaseNotHeldError, match="a second person must release it") as caught:
        keystone.release("K2", DANA, "again, me")
    assert caught.value.state == "held"
    same_name = Actor("Dana Reviewer", Role.REVIEWER, "k-other")
    with pytest.raises(CaseNotHeldError, match="approved this decision already"):
        keystone.release("K2", same_name, "a second key of mine")
    assert len(store.entries()) == count


def test_a_second_release_of_a_released_case_is_refused_naming_the_case(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    keystone = Keystone(store)
    keystone.review("K2")
    keystone.release("K2", DANA, "checked")
    keystone.release("K2", LEE, "checked too")
    count = len(store.entries())
    with pytest.raises(CaseNotHeldError) as caught:
        keystone.release("K2", KIM, "again")
    assert caught.value.case_id == "K2"
    assert caught.value.state == "referred"
    assert str(caught.value) == (
        "case K2, keystone: cannot release: case K2 is not held, it is referred (its "
        f"decision was released by Lee Reviewer, entry {count})"
    )
    assert len(store.entries()) == count


def test_a_persons_reject_journals_who_and_why_and_a_later_release_is_refused(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K2", score=560), changes={"decision": "approve"})
    keystone = Keystone(store)
    keystone.review("K2")
    entry = keystone.reject("K2", DANA, "the file supports a decline, not an approval")
    assert (entry.kind, entry.payload["by"]) == ("keystone.rejected", "Dana Reviewer")
    assert entry.payload["keyId"] == "k-dana"
    assert keystone.status("K2").state == "rejected"
    with pytest.raises(CaseNotHeldError, match="rejected by Dana Reviewer") as caught:
        keystone.release("K2", LEE, "override")
    assert caught.value.state == "rejected"
    with pytest.raises(CaseNotHeldError):
        keystone.reject("K2", LEE, "twice")


def test_a_case_the_gate_released_cannot_be_released_or_rejected_by_a_person(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K1"), monitor=monitoring())
    keystone = Keystone(store)
    keystone.review("K1")
    with pytest.raises(CaseNotHeldError, match="released by the Keystone gate"):
        keystone.reject("K1", DANA, "late")


def test_a_case_with_no_recorded_decision_cannot_be_reviewed_released_or_rejected(
    store: InMemoryStore,
) -> None:
    keystone = Keystone(store)
    assert keystone.status("NOPE").state == "not-recorded"
    with pytest.raises(GovernanceError, match="case NOPE, keystone: no decision is recorded"):
        keystone.review("NOPE")
    with pytest.raises(CaseNotHeldError, match="no decision is recorded for case NOPE") as caught:
        keystone.release("NOPE", DANA, "why not")
    assert caught.value.state == "received"


def test_a_release_before_the_reviews_ran_is_refused_but_a_reject_is_allowed(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="K1"), monitor=monitoring())
    record(store, auto_case(case_id="K9"), monitor=monitoring())
    keystone = Keystone(store)
    with pytest.raises(GovernanceError, match="have not reviewed it yet") as caught:
        keystone.release("K1", DANA, "looks fine")
    assert not isinstance(caught.value, CaseNotHeldError)
    assert keystone.reject("K9", DANA, "withdrawn by the applicant").kind == "keystone.rejected"


@pytest.mark.parametrize("reason", ["", "  "])
def test_a_persons_decision_must_give_a_reason(store: InMemoryStore, reason: str) -> None:
    record(store, auto_case(case_id="K1"), monitor=monitoring())
    with pytest.raises(GovernanceError, match=r"must give a reason"):
        Keystone(store).reject("K1", DANA, reason)


@pytest.mark.parametrize("role", [Role.OFFICER, Role.UNDERWRITER, Role.AUDITOR, Role.INTAKE])
def test_only_a_reviewer_releases_or_rejects_a_held_decision(
    store: InMemoryStore, role: Role
) -> None:
    record(store, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    keystone = Keystone(store)
    keystone.review("K2")
    count = len(store.entries())
    someone = Actor("Someone", role, "k-someone")
    with pytest.raises(AccessError) as caught:
        keystone.release("K2", someone, "mine")
    assert caught.value.status == 403
    with pytest.raises(AccessError):
        keystone.reject("K2", someone, "mine")
    assert len(store.entries()) == count


def test_the_gate_state_is_derived_from_the_journal_alone(store: InMemoryStore) -> None:
    record(store, auto_case(case_id="K1"), monitor=monitoring())
    record(store, auto_case(case_id="K2", score=560), changes={"decision": "refer"})
    record(store, card_case(case_id="K3"), monitor=monitoring())
    first = Keystone(store)
    first.review("K1")
    first.review("K2")
    fresh = Keystone(store)
    assert [(s.case_id, s.state) for s in fresh.held_cases()] == [
        ("K2", "held"),
        ("K3", "awaiting-review"),
    ]
    reviews = fresh.status("K2").reviews
    assert set(reviews) == {"equipoise", "backstop"}
    assert all(isinstance(r, Review) for r in reviews.values())


def test_a_comparative_disparity_holds_the_decision_for_a_person(store: InMemoryStore) -> None:
    plant_disparity(store)
    status = Keystone(store).review("B")
    assert status.state == "held"
    assert "equipoise.comparative_disparity" in [f.code for f in status.holding_findings]


def test_reviewing_every_pending_case_at_once_matches_reviewing_them_one_by_one() -> None:
    def build() -> InMemoryStore:
        store = InMemoryStore()
        record(store, auto_case(case_id="A", score=650), monitor=monitoring(race="White"))
        record(store, auto_case(case_id="B", score=590), monitor=monitoring(race="Asian"))
        record(store, auto_case(case_id="C", score=560), changes={"decision": "refer"})
        return store

    one_by_one = build()
    keystone = Keystone(one_by_one)
    singles = [keystone.review(c) for c in ("A", "B", "C")]
    batch = Keystone(build()).review_pending()
    assert [(s.case_id, s.state, s.findings) for s in batch] == [
        (s.case_id, s.state, s.findings) for s in singles
    ]
    assert Keystone(one_by_one).review_pending() == []
