"""Every case reaches a final action: scenarios for each kind of work item's way to one,
on SQLite and on PostgreSQL.

A case that is not at a final action (an approval committed, a decline or counteroffer
whose verified notice was sent, a withdrawal) is exactly one open work item with the
role that works it and its Regulation B deadline; a person (a reviewer, a credit
officer) moves it on with their key; the system finishes its own work (a review, a
notice) and dates a notice the day it is sent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from conftest import auto_case, card_case, key_factor
from credit.clock import FixedClock
from credit.errors import AccessError, CaseStateError, InputError, ReasonNotGroundedError
from credit.governance.officer import OfficerDecision
from credit.governance.onramp import intake
from credit.journal import SqlStore, Store, open_store
from credit.lifecycle import ITEM_KINDS, STATES
from credit.models import parse_case
from credit.notice_format import parse_notice
from credit.notices.outbox import DirectoryOutbox
from credit.pipeline import BatchLine, Pipeline
from credit.roles import Actor, Role
from credit.tools import CaseTools
from credit.underwriters.runtime import SparkRuntime, TurnContext
from governance_support import DANA, LEE, OLGA, OMAR, monitoring
from test_journal_store import pg_schema

BACKENDS = ("sqlite", "postgresql")
TODAY = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)


@contextmanager
def backend_store(backend: str, tmp: Path, clock: FixedClock) -> Iterator[SqlStore]:
    if backend == "sqlite":
        store = open_store(f"sqlite:///{tmp / 'work.db'}", clock=clock)
        try:
            yield store
        finally:
            store.close()
    else:
        with pg_schema() as (url, schema):
            store = open_store(url, schema=schema, clock=clock)
            try:
                yield store
            finally:
                store.close()


class World:
    """A journal, an outbox folder, the clock, the pipeline and the case work."""

    def __init__(self, store: Store, outbox: Path, clock: FixedClock) -> None:
        self.store = store
        self.outbox = DirectoryOutbox(outbox)
        self.clock = clock
        self.pipeline = Pipeline(store, self.outbox, clock=clock)
        self.work = self.pipeline.work

    def run(self, *cases: dict[str, Any]) -> None:
        lines = [BatchLine(i, case) for i, case in enumerate(cases, start=1)]
        summary = self.pipeline.run(lines)
        assert summary.chain is not None and summary.chain.ok

    def state(self, case_id: str) -> str:
        return self.work.life(case_id).state

    def item(self, case_id: str) -> tuple[str, str] | None:
        item = self.work.life(case_id).item
        return None if item is None else (item.kind, item.role)

    def sent_notice(self, case_id: str) -> Any:
        path = self.outbox.root / f"{case_id}.notice.json"
        from credit.canonical import loads

        return parse_notice(loads(path.read_bytes()))


@pytest.fixture(params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    clock = FixedClock(TODAY)
    with backend_store(request.param, tmp_path, clock) as store:
        yield World(store, tmp_path / "outbox", clock)


def thin_file(case_id: str) -> dict[str, Any]:
    """An auto application with a two-tradeline file (a thin file: referred)."""
    return auto_case(case_id=case_id, tradelines=2, history_months=9)


def declined_on_dti(case_id: str) -> dict[str, Any]:
    """A prime auto application declined on DTI (no counteroffer passes the caps)."""
    return auto_case(case_id=case_id, debt="4800.00")


def decline(*codes: str, why: str = "checked the file by hand") -> OfficerDecision:
    return OfficerDecision(decision="decline", reason_codes=codes, why=why)


# ---------------------------------------------------------------------- the queue


def test_every_state_that_is_not_final_is_an_item_with_an_owner_or_the_systems_work() -> None:
    for state, info in STATES.items():
        if info.final:
            assert info.item is None and info.role is None, state
        elif info.item is None:
            assert info.role == "system", state  # finished by the system, never a person
        else:
            assert info.item in ITEM_KINDS and info.role in ("officer", "reviewer", "underwriter")


def test_a_referral_is_an_officers_item_on_the_regulation_b_clock(world: World) -> None:
    world.run(thin_file("R-1"))
    life = world.work.life("R-1")
    assert life.state == "referred"
    item = life.item
    assert item is not None
    assert (item.kind, item.role, item.deadline) == ("referral", "officer", dt.date(2026, 12, 30))
    assert item.days_left(TODAY.date()) == 29
    wire = item.to_wire(TODAY.date())
    assert list(wire) == ["caseId", "kind", "role", "openedAt", "deadline", "daysLeft", "why"]
    assert wire["why"] == [
        "Referred for review: the credit file has 2 tradelines, fewer than the 3 needed to "
        "decide automatically.",
        "Referred for review: the credit history is 9 months, under the 12 months needed to "
        "decide automatically.",
    ]
    world.clock.advance(days=30)
    assert item.days_left(world.work.today()) == -1 and item.overdue(world.work.today())
    assert [i.case_id for i in world.work.queue()] == ["R-1"]


def test_an_approval_and_a_sent_notice_are_final_and_leave_no_item(world: World) -> None:
    world.run(auto_case(case_id="A-1"), declined_on_dti("D-1"))
    assert (world.state("A-1"), world.item("A-1")) == ("approved", None)
    assert (world.state("D-1"), world.item("D-1")) == ("notified", None)
    assert world.work.queue() == []


# ---------------------------------------------------------------------- a referral


def test_an_officer_declines_a_thin_file_referral_and_its_notice_is_verified_and_sent(
    world: World,
) -> None:
    world.run(thin_file("R-2"))
    life = world.work.officer_decide(
        "R-2", OLGA, decline("LIMITED_CREDIT_HISTORY", why="two tradelines, nine months")
    )
    assert (life.state, life.item) == ("notified", None)
    decided = life.decision
    assert decided is not None and decided.by_officer
    assert decided.entry.payload["officer"] == {
        "name": "Olga Officer",
        "keyId": "k-olga",
        "role": "officer",
    }
    assert decided.entry.payload["why"] == "two tradelines, nine months"
    assert decided.entry.payload["item"]["kind"] == "referral"
    assert decided.reasons == (
        ("LIMITED_CREDIT_HISTORY", {"tradelines": "2", "historyMonths": "9"}),
    )
    notice = world.sent_notice("R-2")
    assert notice.decision == "decline" and notice.reason_codes == ("LIMITED_CREDIT_HISTORY",)
    assert "The number of accounts on your credit file (2)" in notice.text
    assert notice.notice_date == TODAY.date()  # dated the day it is sent
    (verified,) = world.store.entries("R-2", kinds=["notice.verified"])
    assert verified.payload["passed"] is True
    assert verified.payload["noticeSha256"] == notice.sha256
    assert world.work.queue() == []


def test_a_notice_for_a_file_with_no_score_carries_no_score_disclosure(world: World) -> None:
    world.run(auto_case(case_id="R-3", score=None, tradelines=1, history_months=5))
    assert world.state("R-3") == "referred"
    world.work.officer_decide("R-3", OLGA, decline("NO_CREDIT_FILE", "LIMITED_CREDIT_HISTORY"))
    notice = world.sent_notice("R-3")
    assert "returned no credit score for you" in notice.text
    assert "credit score" not in notice.text.split("Principal reasons")[0].lower()
    assert "Your credit score" not in notice.text and "key factors" not in notice.text.lower()


def test_a_counteroffer_notice_is_dated_when_sent_and_its_window_runs_from_then(
    world: World,
) -> None:
    world.run(thin_file("R-4"))
    world.clock.advance(days=20)
    request = OfficerDecision(
        decision="counteroffer",
        reason_codes=("LIMITED_CREDIT_HISTORY",),
        why="a smaller loan on a thin file",
        amount=Decimal("15000.00"),
        term_months=60,
    )
    life = world.work.officer_decide("R-4", OLGA, request)
    assert life.state == "notified"
    notice = world.sent_notice("R-4")
    assert notice.notice_date == dt.date(2026, 12, 21)
    assert "This offer stands for 30 days, until 2027-01-20." in notice.text
    assert "an auto loan of $15,000.00 for 60 months at an annual percentage rate of 6.49%" in (
        notice.text
    )


# ---------------------------------------------------------------------- a held decision


def test_a_held_decline_is_released_by_two_different_people_and_its_notice_sent(
    world: World,
) -> None:
    # A decline near the edge: Backstop's confidence floor holds it for a person.
    world.run(auto_case(case_id="H-1", score=598))
    assert world.item("H-1") == ("held", "reviewer")
    action, life = world.work.release("H-1", DANA, "the score is the bureau's; checked")
    assert (action.outcome, life.state, life.item and life.item.kind) == (
        "approved",
        "held",
        "held",
    )
    with pytest.raises(CaseStateError, match="a second person must release it"):
        world.work.release("H-1", DANA, "me again")
    action, life = world.work.release("H-1", LEE, "agreed")
    assert (action.outcome, life.state) == ("released", "notified")
    assert world.sent_notice("H-1").decision == "decline"


def test_a_rejected_decision_goes_to_an_officer_who_decides_the_case(world: World) -> None:
    world.run(auto_case(case_id="J-1", score=598))
    life = world.work.reject("J-1", DANA, "the floor says a person decides; I do not agree")
    assert (life.state, world.item("J-1")) == ("rejected", ("rejected", "officer"))
    assert life.item is not None and "rejected by Dana Reviewer" in life.item.why[0]
    life = world.work.officer_decide("J-1", OMAR, decline("SCORE_BELOW_MINIMUM"))
    assert life.state == "notified"
    assert world.sent_notice("J-1").reason_codes == ("SCORE_BELOW_MINIMUM",)


# ---------------------------------------------------------------------- refused, failed


class CitesAge:
    """An underwriter whose decision cites a prohibited basis: a typed refusal."""

    name = "cites-age"

    async def run(self, tools: CaseTools, context: TurnContext) -> str:
        tools.get_application()
        wire = {
            "product": "auto",
            "decision": "decline",
            "scoreBand": "prime",
            "dtiPct": "10.0",
            "ltvPct": "80.0",
            "policyBasis": ["policy"],
            "factors": ["Applicant age is outside our preferred range"],
            "confidence": "0.9",
        }
        with suppress(Exception):  # the refusal is the runtime's to journal
            tools.record_decision(wire, ["DTI_OVER_CAP"])
        return "declined"


class Broken:
    name = "broken"

    async def run(self, tools: CaseTools, context: TurnContext) -> str:
        raise RuntimeError("the model endpoint answered 500")


def test_a_refused_turn_is_an_officers_item_and_the_officer_decides_it(world: World) -> None:
    intake(auto_case(case_id="F-1"), world.store)
    SparkRuntime(world.store).run_turn("F-1", CitesAge())
    life = world.work.life("F-1")
    assert (life.state, world.item("F-1")) == ("refused", ("refused", "officer"))
    assert life.item is not None
    assert "fair_lending.decision_cites_prohibited_basis" in life.item.why[0]
    life = world.work.officer_decide(
        "F-1", OLGA, OfficerDecision(decision="approve", reason_codes=(), why="a clean file")
    )
    assert life.state == "approved"


def test_a_failed_turn_is_an_officers_item_not_retried_by_the_system(world: World) -> None:
    intake(declined_on_dti("F-2"), world.store)
    SparkRuntime(world.store).run_turn("F-2", Broken())
    assert world.item("F-2") == ("failed", "officer")
    before = world.store.entries("F-2")
    world.run(declined_on_dti("F-2"))  # a re-run does not retry it, nor add to it
    assert world.store.entries("F-2") == before
    life = world.work.officer_decide("F-2", OLGA, decline("DTI_OVER_CAP"))
    assert life.state == "notified"
    assert "is above our maximum of 45.0%" in world.sent_notice("F-2").text


def test_a_blocked_notice_is_an_officers_item_and_a_new_decision_is_sent(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.casework
    from credit.notices.render import render_notice

    def unapproved(case: Any, decided: Any, **kwargs: Any) -> Any:
        notice = render_notice(case, decided, **kwargs)
        return notice.model_copy(update={"text": notice.text.replace("above", "ab\u200bove")})

    monkeypatch.setattr(credit.casework, "render_notice", unapproved)
    world.run(declined_on_dti("B-1"))
    assert world.item("B-1") == ("notice-blocked", "officer")
    monkeypatch.undo()
    life = world.work.officer_decide("B-1", OLGA, decline("DTI_OVER_CAP", why="re-issue"))
    assert life.state == "notified"
    assert len(world.store.entries("B-1", kinds=["notice.sent"])) == 1


def test_an_officer_records_a_withdrawal_a_final_action(world: World) -> None:
    world.run(thin_file("W-1"))
    life = world.work.withdraw("W-1", OLGA, "the applicant called to withdraw")
    assert (life.state, life.final, life.item) == ("withdrawn", True, None)
    with pytest.raises(CaseStateError, match="already at a final action"):
        world.work.withdraw("W-1", OLGA, "again")


# ---------------------------------------------------------------------- policy exceptions


def test_an_officer_decision_less_favourable_than_the_policy_is_held_for_four_eyes(
    world: World,
) -> None:
    world.run(declined_on_dti("X-1"))
    # The policy declines on DTI; the case is notified. A clean approvable file instead:
    world.run(auto_case(case_id="X-2", score=598))
    world.work.reject("X-2", DANA, "a person decides")
    # The policy derives a decline for X-2 (score under 600); an approval is outside it.
    life = world.work.officer_decide(
        "X-2", OLGA, OfficerDecision(decision="approve", reason_codes=(), why="known customer")
    )
    assert life.state == "held"
    codes = [f.code for f in life.gate.holding_findings]
    assert "backstop.policy_exception" in codes
    assert any("below the product minimum" in f.message for f in life.gate.holding_findings)
    world.work.release("X-2", DANA, "exception approved")
    _, life = world.work.release("X-2", LEE, "exception approved, second")
    assert life.state == "approved"


def test_an_officer_decision_as_favourable_as_the_policy_is_no_exception(world: World) -> None:
    world.run(auto_case(case_id="X-3", score=598))
    world.work.reject("X-3", DANA, "a person decides")
    life = world.work.officer_decide("X-3", OLGA, decline("SCORE_BELOW_MINIMUM"))
    assert life.state == "notified"  # the policy declines it too: no exception


def test_a_decline_of_a_within_margin_referral_is_a_persons_call_not_an_exception(
    world: World,
) -> None:
    world.run(auto_case(case_id="X-4", debt="4058.77"))  # DTI 44.5: within the margin
    assert world.state("X-4") == "referred"
    with pytest.raises(ReasonNotGroundedError, match="DTI_OVER_CAP is not true of this file"):
        world.work.officer_decide("X-4", OLGA, decline("DTI_OVER_CAP"))
    life = world.work.officer_decide("X-4", OLGA, decline("EXCESSIVE_OBLIGATIONS"))
    assert life.state == "notified"
    assert "$4,058.77 are too high in relation to your annual income of $120,000.00" in (
        world.sent_notice("X-4").text
    )


def test_an_officer_decline_of_a_file_the_policy_approves_is_held_for_four_eyes(
    world: World,
) -> None:
    world.run(auto_case(case_id="X-5", score=598))
    world.work.reject("X-5", DANA, "a person decides")
    # Intake the same file as a clean approval: the policy approves X-6, so an
    # officer's decline (after a rejection) is less favourable than the policy.
    world.run(auto_case(case_id="X-6"))
    assert world.state("X-6") == "approved"
    world.run(auto_case(case_id="X-7", tradelines=2))  # referred (thin)
    life = world.work.officer_decide("X-7", OLGA, decline("LIMITED_CREDIT_HISTORY"))
    assert life.state == "notified"  # a referral: the policy derives no outcome to beat


# ---------------------------------------------------------------------- bad input


def test_a_reason_a_person_may_not_cite_or_the_file_cannot_ground_is_refused(
    world: World,
) -> None:
    world.run(thin_file("E-1"))
    before = world.store.entries("E-1")
    with pytest.raises(ReasonNotGroundedError, match="not a reason a person may cite") as caught:
        world.work.officer_decide("E-1", OLGA, decline("KF_10"))
    assert caught.value.code == "KF_10" and caught.value.field == "reasonCodes[0]"
    with pytest.raises(ReasonNotGroundedError, match="not a reason code of the catalogue"):
        world.work.officer_decide("E-1", OLGA, decline("MADE_UP"))
    with pytest.raises(ReasonNotGroundedError, match="shows no bankruptcy"):
        world.work.officer_decide("E-1", OLGA, decline("BANKRUPTCY"))
    with pytest.raises(InputError, match="1 to 4 catalogued reasons"):
        world.work.officer_decide("E-1", OLGA, decline())
    with pytest.raises(InputError, match="says why"):
        world.work.officer_decide("E-1", OLGA, decline("LIMITED_CREDIT_HISTORY", why=" "))
    assert world.store.entries("E-1") == before


def test_an_officer_action_on_a_case_not_at_a_persons_item_is_refused_naming_the_state(
    world: World,
) -> None:
    world.run(auto_case(case_id="E-2"))
    before = world.store.entries("E-2")
    with pytest.raises(CaseStateError) as caught:
        world.work.officer_decide("E-2", OLGA, decline("DTI_OVER_CAP"))
    assert caught.value.state == "approved"
    assert "case E-2 is approved" in caught.value.message
    assert world.store.entries("E-2") == before


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.UNDERWRITER, Role.AUDITOR, Role.INTAKE])
def test_only_an_officer_decides_or_withdraws(world: World, role: Role) -> None:
    world.run(thin_file("E-3"))
    someone = Actor("Someone Else", role, "k-else")
    with pytest.raises(AccessError) as caught:
        world.work.officer_decide("E-3", someone, decline("LIMITED_CREDIT_HISTORY"))
    assert caught.value.status == 403
    with pytest.raises(AccessError):
        world.work.withdraw("E-3", someone, "no")
    assert world.state("E-3") == "referred"


# ---------------------------------------------------------------------- the system's work


def test_a_decision_left_awaiting_review_by_a_crash_is_finished_by_the_system(
    world: World,
) -> None:
    intake(auto_case(case_id="K-1"), world.store)
    SparkRuntime(world.store).run_turn("K-1", world.pipeline.underwriter)  # then "killed"
    assert world.work.life("K-1").state == "awaiting-review"
    # any read of the case through the queue finishes it
    assert world.work.queue() == []
    assert world.state("K-1") == "approved"


def test_a_released_decline_whose_notice_a_crash_left_unsent_is_sent_on_the_next_run(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.casework

    def crash(self: Any, life: Any) -> Any:
        raise KeyboardInterrupt  # the process dies between the release and the send

    monkeypatch.setattr(credit.casework.CaseWork, "_verify_notice", crash)
    with pytest.raises(KeyboardInterrupt):
        world.run(declined_on_dti("K-2"))
    assert world.state("K-2") == "notice-pending"
    monkeypatch.undo()
    world.run(declined_on_dti("K-2"))
    assert world.state("K-2") == "notified"
    assert len(world.store.entries("K-2", kinds=["notice.sent"])) == 1


def test_two_people_acting_on_one_case_at_once_land_once(world: World) -> None:
    world.run(thin_file("C-1"))
    stale = world.work.life("C-1")
    world.work.officer_decide("C-1", OLGA, decline("LIMITED_CREDIT_HISTORY"))
    from credit.journal.base import StaleCaseError

    with pytest.raises(StaleCaseError):
        world.store.append("C-1", "case.withdrawn", {"by": "x"}, after=stale.last_seq)
    with pytest.raises(CaseStateError):
        world.work.officer_decide("C-1", OMAR, decline("LIMITED_CREDIT_HISTORY"))
    assert len(world.store.entries("C-1", kinds=["officer.decided"])) == 1


def test_card_cases_take_the_same_way(world: World) -> None:
    world.run(card_case(case_id="CC-1", tradelines=1, key_factors=[key_factor("10", "59%")]))
    assert world.item("CC-1") == ("referral", "officer")
    life = world.work.officer_decide(
        "CC-1",
        OLGA,
        OfficerDecision(
            decision="counteroffer",
            reason_codes=("LIMITED_CREDIT_HISTORY",),
            why="a starter line",
            credit_line=Decimal("1000.00"),
        ),
    )
    assert life.state == "notified"
    assert "$1,000.00" in world.sent_notice("CC-1").text


def test_intake_with_monitoring_and_the_queue_never_show_monitoring_data(world: World) -> None:
    case = thin_file("M-1")
    case["monitoring"] = monitoring(race="Zyxian")
    world.run(case)
    for item in world.work.queue():
        assert "Zyxian" not in str(item.to_wire(world.work.today()))
    assert parse_case(case).monitoring is not None
