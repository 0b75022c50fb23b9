"""The second line's reviews are done again from the journal alone (ADR-0002, step 4).

Scenarios: every Backstop and Equipoise review of a run is done again alike; an
Equipoise review is done again with the pool as it held it (the journal up to the later
of its decision and the ``poolChanged`` its basis names), so a comparable rejected after
the review still counts, as it did, and one rejected before it does not;
a journaled review that does not say what the review says is found, field by field; a
review journaled before the mark, or under another configuration, is reported as not
replayable, never as the same.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import auto_case
from credit.cli import app
from credit.clock import FixedClock
from credit.examples import generate_cases
from credit.governance.equipoise import ComparisonPool, Equipoise
from credit.governance.keystone import Keystone
from credit.governance.replay import replay_reviews
from credit.journal import InMemoryStore, open_store
from credit.journal.naming import decision_ref
from credit.kinds import GUARD_REDACTED, KEYSTONE_REJECTED, REVIEW_BACKSTOP, REVIEW_EQUIPOISE
from governance_support import monitoring, plant_disparity, record
from test_casework import World

TODAY = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)


def disparity() -> InMemoryStore:
    """A approved (White); B declined though its file is stronger (Asian)."""
    store = InMemoryStore()
    plant_disparity(store)
    return store


def planted() -> InMemoryStore:
    """A approved (White), B declined though its file is stronger (Asian), a third case
    after them; reviewed as a batch. B's comparative review names A."""
    store = disparity()
    record(store, auto_case(case_id="C", score=720), monitor=monitoring(race="White"))
    Keystone(store).review_pending()
    return store


def _review(store: InMemoryStore, case_id: str, kind: str) -> Any:
    (entry,) = store.entries(case_id, kinds=[kind])
    return entry


def test_every_review_is_done_again_alike_the_comparative_finding_too() -> None:
    store = planted()
    replays = replay_reviews(store, ["A", "B", "C"])
    assert [(r.case_id, r.reviewer, r.status) for r in replays] == [
        (c, reviewer, "same") for c in "ABC" for reviewer in ("equipoise", "backstop")
    ]
    b = _review(store, "B", REVIEW_EQUIPOISE)
    assert "equipoise.comparative_disparity" in [f["code"] for f in b.payload["findings"]]
    decided = store.decision_entry("B")
    assert decided is not None
    assert b.payload["basis"]["poolChanged"] == 0  # nothing had left the pool
    # recorded by hand without a name (as before decisions were named): named by seq
    assert b.payload["basis"]["decisionSeq"] == decided.seq


def test_a_comparable_rejected_after_the_review_still_counts_when_it_is_done_again() -> None:
    store = planted()
    a = store.decision_entry("A")
    assert a is not None
    store.append("A", KEYSTONE_REJECTED, {**decision_ref(a.seq, a.payload), "by": "Dana"})
    (b,) = [r for r in replay_reviews(store, ["B"]) if r.reviewer == "equipoise"]
    assert b.status == "same"  # with the decisions it had read: A among them
    # The other side: reviewed again now, with the journal as it stands, A is gone.
    decided = store.decision_entry("B")
    assert decided is not None
    now = Equipoise(store).review("B", entry=decided)
    assert "equipoise.comparative_disparity" not in [f.code for f in now.findings]


def test_a_comparable_rejected_before_the_review_is_left_out_when_it_is_done_again() -> None:
    store = disparity()
    a = store.decision_entry("A")
    assert a is not None
    rejected = store.append("A", KEYSTONE_REJECTED, decision_ref(a.seq, a.payload))
    Keystone(store).review_pending()  # B is reviewed after A was taken out
    b = _review(store, "B", REVIEW_EQUIPOISE)
    assert "equipoise.comparative_disparity" not in [f["code"] for f in b.payload["findings"]]
    assert b.payload["basis"]["poolChanged"] == rejected.seq
    (again,) = [r for r in replay_reviews(store, ["B"]) if r.reviewer == "equipoise"]
    assert again.status == "same"
    # The other side: a pool read only up to B's decision still holds A.
    decided = store.decision_entry("B")
    assert decided is not None
    short = ComparisonPool(Equipoise(store), through=decided.seq)
    redone = Equipoise(store).review("B", pool=short, entry=decided)
    assert "equipoise.comparative_disparity" in [f.code for f in redone.findings]


def test_a_journaled_review_that_says_otherwise_is_found_field_by_field() -> None:
    store = planted()
    b = _review(store, "B", REVIEW_EQUIPOISE)
    forged = {**b.payload, "passed": True, "findings": []}  # a disparity left out
    store.append("B", REVIEW_EQUIPOISE, forged)
    backstop = _review(store, "A", REVIEW_BACKSTOP)
    basis = {**backstop.payload["basis"], "decisionSeq": 999}  # about another decision
    store.append("A", REVIEW_BACKSTOP, {**backstop.payload, "basis": basis})
    found = {(r.case_id, r.reviewer, r.seq): r for r in replay_reviews(store, ["A", "B"])}
    odd = [r for r in found.values() if not r.ok]
    assert sorted((r.case_id, r.reviewer) for r in odd) == [("A", "backstop"), ("B", "equipoise")]
    by_case = {r.case_id: r for r in odd}
    assert [name for name, _, _ in by_case["B"].differences] == ["passed", "findings"]
    assert [name for name, _, _ in by_case["A"].differences] == ["basis.decisionSeq"]


@pytest.mark.parametrize("change", ["no mark", "another configuration"])
def test_a_review_that_cannot_be_done_again_says_why_and_is_not_the_same(change: str) -> None:
    store = planted()
    b = _review(store, "B", REVIEW_EQUIPOISE)
    basis = dict(b.payload["basis"])
    if change == "no mark":  # journaled before reviews named their pool's mark
        del basis["poolChanged"]
    else:
        basis["configSha256"] = "0" * 64
    store.append("B", REVIEW_EQUIPOISE, {**b.payload, "basis": basis})
    last = replay_reviews(store, ["B"])[-1]
    assert (last.status, last.ok) == ("not-replayable", True)
    assert last.why is not None
    assert ("poolChanged" in last.why) is (change == "no mark")


def test_credit_replay_does_every_review_again_and_names_a_difference(tmp_path: Path) -> None:
    clock = FixedClock(TODAY)
    db = tmp_path / "j.db"
    with open_store(f"sqlite:///{db}", clock=clock) as store:
        World(store, tmp_path / "outbox", clock).run(*generate_cases(31, 40))
    runner = CliRunner()
    env = {"CREDIT_DATABASE_URL": f"sqlite:///{db}"}
    result = runner.invoke(app, ["replay", "--all"], env=env)
    assert result.exit_code == 0, result.output
    assert "ok: 80 review(s) done again, 80 the same, 0 different, 0 not replayable" in (
        result.stdout
    )
    with open_store(f"sqlite:///{db}", clock=clock) as store:
        review = store.entries("C-000003", kinds=[REVIEW_EQUIPOISE])[0]
        store.append("C-000003", REVIEW_EQUIPOISE, {**review.payload, "passed": False})
    result = runner.invoke(app, ["replay", "C-000003"], env=env)
    assert result.exit_code == 1
    assert "case C-000003 entry" in result.stdout and "passed: DIFFERS" in result.stdout


def test_a_redaction_journaled_after_the_review_is_not_read_when_it_is_done_again() -> None:
    store = planted()
    store.append(
        "B",
        GUARD_REDACTED,
        {"match": "value", "tool": "get_credit_report", "path": "x", "basis": "race"},
    )
    (b,) = [r for r in replay_reviews(store, ["B"]) if r.reviewer == "equipoise"]
    assert b.status == "same"  # it read the redactions up to the review, none
    decided = store.decision_entry("B")
    assert decided is not None
    now = Equipoise(store).review("B", entry=decided)  # the other side: all of them
    assert "equipoise.prohibited_basis_in_data" in [f.code for f in now.findings]


def test_a_review_that_names_no_decision_is_done_again_on_the_latest_before_it() -> None:
    """Written before decisions were named at all: about the only decision there was."""
    store = planted()
    b = _review(store, "B", REVIEW_EQUIPOISE)
    bare = {k: v for k, v in b.payload.items() if k not in ("decisionId", "decisionSeq")}
    store.append("B", REVIEW_EQUIPOISE, bare)
    last = replay_reviews(store, ["B"])[-1]
    decided = store.decision_entry("B")
    assert decided is not None
    assert (last.status, last.decision_seq) == ("same", decided.seq)
