"""The HTTP API, route by route, on SQLite and on PostgreSQL (when configured)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from credit.canonical import loads
from credit.notice_format import Notice, parse_notice
from credit.service.auth import Role
from service_support import BACKENDS, Api, approvable, golden, held_case, service_api

DECLINE = "G-DECLINE-SCORE"
COUNTER = "G-COUNTER-CARD"


@pytest.fixture(scope="module", params=BACKENDS)
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with service_api(request.param, tmp_path_factory.mktemp(f"api-{request.param}")) as built:
        yield built


def error(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "field", "caseId"}
    detail: dict[str, Any] = body["error"]
    return detail


# ---------------------------------------------------------------------- intake


def test_a_case_taken_in_is_201_and_the_same_case_again_is_200_taking_nothing_in(
    api: Api,
) -> None:
    case = golden(DECLINE, "API-INTAKE-1")
    first = api.take_in(case)
    assert first.status_code == 201
    assert first.json()["caseId"] == "API-INTAKE-1" and first.json()["takenIn"] is True
    again = api.take_in(case)
    assert again.status_code == 200 and again.json()["takenIn"] is False
    kinds = [e.kind for e in api.store.entries("API-INTAKE-1")]
    assert kinds == ["intake.accepted"]


def test_a_bad_case_is_422_naming_the_field_and_nothing_is_stored(api: Api) -> None:
    case = golden(DECLINE, "API-BAD-INCOME")
    case["application"]["annualIncome"] = "-5.00"
    response = api.take_in(case)
    assert response.status_code == 422
    detail = error(response)
    assert detail["field"] == "application.annualIncome"
    assert detail["caseId"] == "API-BAD-INCOME"
    assert api.store.get_case("API-BAD-INCOME") is None


def test_an_unknown_field_is_422_naming_it(api: Api) -> None:
    case = golden(DECLINE, "API-UNKNOWN")
    case["application"]["favouriteColour"] = "teal"
    detail = error(api.take_in(case))
    assert detail["field"] == "application.favouriteColour"


def test_a_case_id_taken_in_before_with_other_content_is_409_naming_the_case(api: Api) -> None:
    case = golden(COUNTER, "API-CONFLICT")
    assert api.take_in(case).status_code == 201
    case["application"]["annualIncome"] = "99999.00"
    response = api.take_in(case)
    assert response.status_code == 409
    assert error(response)["caseId"] == "API-CONFLICT"
    assert error(response)["field"] == "caseId"


@pytest.mark.parametrize(
    ("body", "why"),
    [(b"", "empty"), (b"{not json", "not valid JSON"), (b"[1, 2]", "JSON object")],
)
def test_a_body_that_is_not_a_json_object_is_422_naming_the_body(
    api: Api, body: bytes, why: str
) -> None:
    response = api.client.post("/v1/cases", content=body, headers=api.headers(Role.INTAKE))
    assert response.status_code == 422
    assert why in error(response)["message"]


def test_a_body_over_the_size_limit_is_413_whether_declared_or_streamed(api: Api) -> None:
    limit = api.app.state.settings.max_body_bytes
    big = b"{" + b" " * limit + b"}"
    declared = api.client.post("/v1/cases", content=big, headers=api.headers(Role.INTAKE))
    assert declared.status_code == 413
    assert error(declared)["field"] == "body"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams in
        for _ in range(4):
            yield b" " * (limit // 2)

    streamed = api.client.post("/v1/cases", content=chunks(), headers=api.headers(Role.INTAKE))
    assert streamed.status_code == 413
    # A route with a declared body (FastAPI reads it) answers 413 too, not a 400.
    release = api.client.post(
        "/v1/cases/API-HELD-0/release", content=chunks(), headers=api.headers(Role.REVIEWER)
    )
    assert release.status_code == 413
    assert error(release)["field"] == "body"


# ---------------------------------------------------------------------- decide


def test_decide_runs_the_governed_turn_the_keystone_review_and_sends_the_notice_once(
    api: Api,
) -> None:
    body = api.decided(golden(DECLINE, "API-DECIDE-1"))
    assert body["state"] == "released" and body["decidedBy"] == "keystone"
    assert body["decision"]["decision"] == "decline"
    assert (body["notice"], body["life"], body["final"], body["item"]) == (
        "sent",
        "notified",
        True,
        None,
    )
    kinds = [e.kind for e in api.store.entries("API-DECIDE-1")]
    assert kinds.count("decision.recorded") == 1
    assert "underwriter.turn" in kinds and "keystone.released" in kinds
    assert kinds.count("notice.sent") == 1


def test_an_approval_is_decided_in_one_commit_and_a_decline_s_notice_in_a_second(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = api.app.state.store
    groups: list[tuple[str, ...]] = []
    real = store.group_commit

    def counted(case_ids: Any = ()) -> Any:
        groups.append(tuple(case_ids))
        return real(case_ids)

    monkeypatch.setattr(store, "group_commit", counted)
    for case, want in ((approvable("API-ONE-COMMIT"), 1), (golden(DECLINE, "API-TWO"), 2)):
        assert api.take_in(case).status_code == 201
        groups.clear()
        response = api.decide(case["caseId"])
        assert response.status_code == 201, response.text
        body = response.json()
        assert groups == [(case["caseId"],)] * want, body["decision"]["decision"]
    assert body["notice"] == "sent"  # the decline's, in its own commit after the release


def test_the_decide_answer_is_the_case_as_a_read_finds_it_afterwards(api: Api) -> None:
    # the answer is built from the life the decide's commits left, not read again
    for case in (approvable("API-SAME-1"), golden(DECLINE, "API-SAME-2")):
        body = api.decided(case)
        read = api.get(f"/v1/cases/{case['caseId']}", Role.UNDERWRITER)
        assert read.status_code == 200 and read.json() == body


def test_a_status_read_takes_the_product_and_date_from_the_journal_not_the_document(
    api: Api,
) -> None:
    from sqlalchemy import event

    case = golden(COUNTER, "API-READ-1")
    api.decided(case)
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    engine = api.store._engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        read = api.get("/v1/cases/API-READ-1", Role.UNDERWRITER)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert read.status_code == 200
    assert (read.json()["product"], read.json()["asOf"]) == ("card", case["asOf"])
    accepted = api.store.entries("API-READ-1", kinds=["intake.accepted"])[0].payload
    assert (accepted["product"], accepted["asOf"]) == ("card", case["asOf"])
    documents = re.compile(r"\bFROM\s+(\S+\.)?\"?cases\b")  # the case documents' table
    assert statements and not [s for s in statements if documents.search(s)], statements
    # the other side: never taken in is still a 404
    missing = api.get("/v1/cases/API-READ-NEVER", Role.UNDERWRITER)
    assert missing.status_code == 404 and error(missing)["caseId"] == "API-READ-NEVER"


def test_a_case_stored_without_its_intake_entry_is_read_from_its_document(api: Api) -> None:
    # behind the service's back (as a journal of an earlier form, or a test, leaves it):
    # no intake.accepted entry to say the product and date, so the document says them
    from conftest import auto_case
    from governance_support import record

    case = auto_case(case_id="API-READ-2")
    record(api.store, case)
    assert not api.store.entries("API-READ-2", kinds=["intake.accepted"])
    read = api.get("/v1/cases/API-READ-2", Role.UNDERWRITER)
    assert read.status_code == 200, read.text
    assert (read.json()["product"], read.json()["asOf"]) == ("auto", case["asOf"])


def test_a_second_decide_is_409_with_a_clear_message_and_changes_nothing(api: Api) -> None:
    api.decided(approvable("API-DECIDE-2"))
    before = api.store.entries()
    again = api.decide("API-DECIDE-2")
    assert again.status_code == 409
    detail = error(again)
    assert "already decided" in detail["message"] and "nothing was changed" in detail["message"]
    assert detail["caseId"] == "API-DECIDE-2"
    assert api.store.entries() == before


def test_a_request_the_policy_has_no_rule_for_is_422_at_decide_naming_the_field(
    api: Api,
) -> None:
    case = golden(DECLINE, "API-BAD-TERM")
    case["application"]["termMonths"] = 84
    assert api.take_in(case).status_code == 201
    response = api.decide("API-BAD-TERM")
    assert response.status_code == 422
    detail = error(response)
    assert detail["field"] == "application.termMonths" and "84" in detail["message"]
    assert api.store.decision_entry("API-BAD-TERM") is None


def test_decide_on_a_case_never_taken_in_is_404_naming_the_case(api: Api) -> None:
    response = api.decide("API-NOBODY")
    assert response.status_code == 404
    assert error(response)["caseId"] == "API-NOBODY"
    # the decide claims the case before it reads it: the 404 gave the claim up, so
    # the case, taken in later, is decided at once
    assert api.decided(approvable("API-NOBODY"))["decision"]["decision"] == "approve"


def test_a_path_case_id_outside_the_case_id_alphabet_is_422(api: Api) -> None:
    response = api.get("/v1/cases/bad%20id", Role.AUDITOR)
    assert response.status_code == 422
    assert error(response)["field"] == "case_id"


# ---------------------------------------------------------------------- reading


def test_a_case_view_before_deciding_says_not_recorded(api: Api) -> None:
    assert api.take_in(approvable("API-VIEW-1")).status_code == 201
    body = api.get("/v1/cases/API-VIEW-1", Role.INTAKE).json()
    assert body["state"] == "not-recorded" and body["decision"] is None
    assert body["product"] == "auto" and body["asOf"] == "2026-11-30"


def test_the_reviews_are_shown_to_the_reviewer_and_auditor_only(api: Api) -> None:
    api.decided(approvable("API-VIEW-2"))
    for role in (Role.REVIEWER, Role.AUDITOR):
        reviews = api.get("/v1/cases/API-VIEW-2", role).json()["reviews"]
        assert set(reviews) == {"backstop", "equipoise"}
    for role in (Role.INTAKE, Role.UNDERWRITER):
        assert "reviews" not in api.get("/v1/cases/API-VIEW-2", role).json()


def test_the_notice_sent_is_shown_with_its_report_and_the_hash_the_journal_holds(
    api: Api,
) -> None:
    api.decided(golden(COUNTER, "API-NOTICE-1"))
    before = api.store.entries()
    response = api.get("/v1/cases/API-NOTICE-1/notice", Role.REVIEWER)
    assert response.status_code == 200
    body = response.json()
    notice = parse_notice(loads(response.content)["notice"])
    assert body["verified"] is True and body["report"]["passed"] is True
    assert body["noticeSha256"] == notice.sha256 == body["report"]["noticeSha256"]
    assert body["delivery"] == "sent"
    assert "NOTICE OF ACTION TAKEN" in notice.text
    (sent,) = api.store.entries("API-NOTICE-1", kinds=["notice.sent"])
    assert sent.payload["noticeSha256"] == notice.sha256
    assert api.store.entries() == before  # reading journals nothing


def test_an_approval_takes_no_notice_404(api: Api) -> None:
    api.decided(approvable("API-NOTICE-2"))
    response = api.get("/v1/cases/API-NOTICE-2/notice", Role.AUDITOR)
    assert response.status_code == 404
    assert "takes no adverse-action notice" in error(response)["message"]


def test_a_notice_of_an_undecided_case_is_409(api: Api) -> None:
    assert api.take_in(golden(DECLINE, "API-NOTICE-3")).status_code == 201
    assert api.get("/v1/cases/API-NOTICE-3/notice", Role.AUDITOR).status_code == 409


def test_a_released_decline_is_sent_once_and_a_send_request_sends_nothing_more(
    api: Api,
) -> None:
    api.decided(golden(DECLINE, "API-SEND-1"))
    first = api.post("/v1/cases/API-SEND-1/notice/send", Role.UNDERWRITER)
    assert first.status_code == 200, first.text
    assert first.json()["delivery"] == "sent" and first.json()["sentNow"] is False
    again = api.post("/v1/cases/API-SEND-1/notice/send", Role.REVIEWER)
    assert again.status_code == 200 and again.json()["sentNow"] is False
    assert again.json()["noticeSha256"] == first.json()["noticeSha256"]
    assert len(api.store.entries("API-SEND-1", kinds=["notice.sent"])) == 1
    view = api.get("/v1/cases/API-SEND-1/notice", Role.AUDITOR).json()
    assert view["delivery"] == "sent" and view["noticeSha256"] == first.json()["noticeSha256"]
    sent = Path(api.app.state.settings.outbox) / "API-SEND-1.notice.json"
    assert sent.is_file()


def test_an_unverified_notice_is_refused_409_and_journaled_blocked_never_sent(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.casework
    from credit.notices.render import render_notice

    def tampered(case: Any, decided: Any, **kwargs: Any) -> Notice:
        notice = render_notice(case, decided, **kwargs)
        text = notice.text.replace("Principal reasons", "Some reasons")
        return notice.model_copy(update={"text": text})

    monkeypatch.setattr(credit.casework, "render_notice", tampered)
    body = api.decided(golden(DECLINE, "API-SEND-2"))
    assert (body["life"], body["item"]["kind"], body["item"]["role"]) == (
        "notice-blocked",
        "notice-blocked",
        "officer",
    )
    response = api.post("/v1/cases/API-SEND-2/notice/send", Role.REVIEWER)
    assert response.status_code == 409
    assert "not sent" in error(response)["message"]
    kinds = [e.kind for e in api.store.entries("API-SEND-2")]
    assert "notice.blocked" in kinds and "notice.sent" not in kinds
    assert not (Path(api.app.state.settings.outbox) / "API-SEND-2.notice.json").exists()


class _Killed(BaseException):
    """A worker dying mid-request (not an error the service could journal)."""


def test_a_decide_killed_before_its_review_commits_leaves_nothing_and_decides_once_later(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from credit.governance.keystone import Keystone

    def killed(self: Any, case_id: str, **kwargs: Any) -> Any:
        raise _Killed

    case = golden(DECLINE, "API-KILLED-1")
    assert api.take_in(case).status_code == 201
    before = [e.kind for e in api.store.entries("API-KILLED-1")]
    monkeypatch.setattr(Keystone, "run_review", killed)
    underwriter = api.app.state.keys.authenticate(api.keys[Role.UNDERWRITER])
    with pytest.raises(_Killed):  # in this thread: the dying worker is not the test client
        api.app.state.service.decide("API-KILLED-1", underwriter)
    # the turn and its review are one commit: nothing of the turn was kept
    assert [e.kind for e in api.store.entries("API-KILLED-1")] == before
    assert api.store.decision_entry("API-KILLED-1") is None
    monkeypatch.undo()
    again = api.decide("API-KILLED-1")  # the claim was given up: decided now, once
    assert again.status_code == 201, again.text
    kinds = [e.kind for e in api.store.entries("API-KILLED-1")]
    assert kinds.count("decision.recorded") == 1 and kinds.count("underwriter.turn") == 1
    assert "notice.sent" in kinds and again.json()["life"] == "notified"
    assert api.store.verify().ok


def test_the_same_case_posted_by_many_clients_at_once_is_taken_in_once(api: Api) -> None:
    case = approvable("API-INTAKE-RACE")
    meet = threading.Barrier(6, timeout=30)
    taken: list[bool] = []

    def post() -> None:
        meet.wait()
        taken.append(api.app.state.service.take_in(dict(case))["takenIn"])

    threads = [threading.Thread(target=post) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(taken) == [False] * 5 + [True]
    kinds = [e.kind for e in api.store.entries("API-INTAKE-RACE")]
    assert kinds.count("intake.accepted") == 1
    assert api.store.verify().ok


# ---------------------------------------------------------------------- the gate


def test_the_queue_lists_a_held_case_and_two_reviewers_release_it_four_eyes(
    api: Api,
) -> None:
    held_case(api, "API-HELD-1")
    queue = api.get("/v1/queue", Role.REVIEWER).json()
    item = next(i for i in queue if i["caseId"] == "API-HELD-1")
    assert set(item) == {"caseId", "kind", "role", "openedAt", "deadline", "daysLeft", "why"}
    assert (item["kind"], item["role"]) == ("held", "reviewer")
    assert item["why"][0].startswith("backstop.disagreement: ")
    first = api.post(
        "/v1/cases/API-HELD-1/release", Role.REVIEWER, {"reason": "checked the file by hand"}
    )
    assert first.status_code == 200, first.text
    assert (first.json()["state"], first.json()["approvedBy"]) == (
        "held",
        [api.names[Role.REVIEWER]],
    )
    again = api.post("/v1/cases/API-HELD-1/release", Role.REVIEWER, {"reason": "me again"})
    assert again.status_code == 409 and "a second person" in error(again)["message"]
    response = api.post_as(
        "/v1/cases/API-HELD-1/release", api.second_reviewer, {"reason": "agreed"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["state"] == "released"
    assert body["decidedBy"] == api.second_reviewer_name
    assert body["reason"] == "agreed"
    released = api.store.entries("API-HELD-1", kinds=["keystone.released"])[-1]
    assert released.payload["by"] == api.second_reviewer_name
    assert released.payload["approvedBy"][0]["by"] == api.names[Role.REVIEWER]
    queue = api.get("/v1/queue", Role.AUDITOR).json()
    (after,) = [i for i in queue if i["caseId"] == "API-HELD-1"]
    assert (after["kind"], after["role"]) == ("referral", "officer")


def test_a_reject_journals_the_reviewer_and_a_second_reject_is_409_changing_nothing(
    api: Api,
) -> None:
    held_case(api, "API-HELD-2")
    first = api.post("/v1/cases/API-HELD-2/reject", Role.REVIEWER, {"reason": "wrong decision"})
    assert first.status_code == 200 and first.json()["state"] == "rejected"
    before = api.store.entries()
    again = api.post("/v1/cases/API-HELD-2/reject", Role.REVIEWER, {"reason": "again"})
    assert again.status_code == 409
    assert "not held" in error(again)["message"]
    assert api.store.entries() == before


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}, {"why": "x"}])
def test_a_release_without_a_reason_is_422_naming_the_reason(
    api: Api, body: dict[str, str]
) -> None:
    response = api.post("/v1/cases/API-HELD-0/release", Role.REVIEWER, body)
    assert response.status_code == 422
    assert error(response)["field"] in ("reason", "why")


def test_releasing_a_case_the_gate_released_is_409(api: Api) -> None:
    api.decided(approvable("API-HELD-3"))
    response = api.post("/v1/cases/API-HELD-3/release", Role.REVIEWER, {"reason": "x"})
    assert response.status_code == 409
    assert "not held, it is approved" in error(response)["message"]


# ---------------------------------------------------------------------- the journal


def test_a_cases_journal_lists_its_entries_in_order_with_their_hashes(api: Api) -> None:
    api.decided(approvable("API-JOURNAL-1"))
    entries = api.get("/v1/cases/API-JOURNAL-1/journal", Role.AUDITOR).json()
    assert entries[0]["kind"] == "intake.accepted"
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in entries)
    stored = [e.to_wire() for e in api.store.entries("API-JOURNAL-1")]
    assert [e["hash"] for e in entries] == [e["hash"] for e in stored]


def test_verify_walks_the_whole_chain(api: Api) -> None:
    body = api.get("/v1/journal/verify", Role.AUDITOR).json()
    assert body["ok"] is True and body["firstBrokenSeq"] is None
    assert body["entries"] == len(api.store.entries())


def test_healthz_is_open_and_names_the_database(api: Api) -> None:
    body = api.client.get("/healthz").json()
    assert body["status"] == "ok" and body["database"] == api.store.dialect


def test_an_unknown_path_and_a_wrong_method_are_json_errors(api: Api) -> None:
    missing = api.client.get("/v1/nothing-here")
    assert missing.status_code == 404 and "no such path" in error(missing)["message"]
    wrong = api.client.delete("/v1/queue")
    assert wrong.status_code == 405 and "DELETE" in error(wrong)["message"]


def test_a_served_worker_freezes_its_start_up_objects_out_of_the_collector_and_a_test_app_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from fastapi.testclient import TestClient

    from credit.service.app import create_app, create_app_from_env

    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setenv("CREDIT_DATABASE_URL", f"sqlite:///{tmp_path / 'journal.db'}")
    monkeypatch.setenv("CREDIT_OUTBOX", str(tmp_path / "outbox"))
    monkeypatch.setenv("CREDIT_CHECKPOINTS", str(tmp_path / "checkpoints"))
    with TestClient(create_app()) as client:  # an app made here, as the tests make them
        assert client.get("/healthz").status_code == 200
    assert frozen == []
    with TestClient(create_app_from_env()) as client:  # what each credit serve worker runs
        assert client.get("/healthz").status_code == 200
        assert frozen == [True]  # once started, before the first request
    assert frozen == [True]
