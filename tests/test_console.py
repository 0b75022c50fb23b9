"""The reviewer console over HTTP (TestClient): its pages, the role matrix, escaping and
the CSRF check, against the service app over a journal the governed pipeline seeded."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from console_support import HELD, PASSED, seed, service_app
from credit.governance.findings import KIND_REJECTED, KIND_RELEASED
from credit.journal import InMemoryStore
from credit.service.auth import SESSION_COOKIE
from credit.service.keys import MemoryKeyStore
from credit.service.roles import Role

DECLINE = "C-000108"  # an auto decline held by Backstop's confidence floor
COUNTER = "C-000165"  # an auto counteroffer held by Backstop's confidence floor
CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')
SECOND: dict[str, str] = {}  # a second reviewer's key (four eyes)


@dataclass
class Console:
    client: TestClient
    store: InMemoryStore
    keys: MemoryKeyStore
    key: dict[Role, str]

    def sign_in(self, role: Role) -> TestClient:
        response = self.client.post(
            "/console/login", data={"api_key": self.key[role]}, follow_redirects=False
        )
        assert response.status_code == 303, response.text
        assert response.headers["location"] == "/console/queue"
        return self.client

    def csrf(self, case_id: str = DECLINE) -> str:
        page = self.client.get(f"/console/cases/{case_id}")
        assert page.status_code == 200
        found = CSRF.search(page.text)
        assert found, "the page carries no CSRF token"
        return found.group(1)

    def kinds(self, case_id: str) -> list[str]:
        return [e.kind for e in self.store.entries(case_id)]


@pytest.fixture(scope="module")
def keys() -> tuple[MemoryKeyStore, dict[Role, str]]:
    """One key per role (scrypt-hashed, so made once for the module)."""
    store = MemoryKeyStore()
    keys = {role: store.create(role, f"{role.value}-1")[1] for role in Role}
    SECOND["reviewer-2"] = store.create(Role.REVIEWER, "reviewer-2")[1]
    return store, keys


@pytest.fixture
def console(tmp_path: Path, keys: tuple[MemoryKeyStore, dict[Role, str]]) -> Iterator[Console]:
    store = InMemoryStore()
    seed(store)
    key_store, key = keys
    app = service_app(tmp_path, store=store, keys=key_store)
    with TestClient(app) as client:
        yield Console(client, store, key_store, key)


def test_the_seeded_journal_holds_the_cases_the_tests_use(console: Console) -> None:
    from credit.governance.keystone import Keystone

    held = [s.case_id for s in Keystone(console.store).held_cases()]
    assert held == list(HELD)
    assert Keystone(console.store).status(PASSED).state == "released"


# ---------------------------------------------------------------------- signing in


def test_the_sign_in_page_renders_and_a_browser_not_signed_in_is_sent_to_it(
    console: Console,
) -> None:
    page = console.client.get("/console/login")
    assert page.status_code == 200
    assert 'action="/console/login"' in page.text
    assert 'name="api_key"' in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    for path in ("/console", "/console/held", f"/console/cases/{DECLINE}"):
        response = console.client.get(path, follow_redirects=False)
        assert response.status_code == 303, path
        assert response.headers["location"] == "/console/login"


def test_the_stylesheet_is_served(console: Console) -> None:
    css = console.client.get("/console/static/console.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")


def test_a_reviewer_signs_in_with_a_signed_session_cookie(console: Console) -> None:
    client = console.sign_in(Role.REVIEWER)
    cookie = client.cookies.get(SESSION_COOKIE)
    assert cookie and console.key[Role.REVIEWER] not in cookie
    page = client.get("/console/held")
    assert page.status_code == 200
    assert "reviewer-1" in page.text
    # signed in, the sign-in page forwards to the queue
    assert client.get("/console/login", follow_redirects=False).status_code == 303


def test_a_wrong_key_is_refused_and_sets_no_cookie(console: Console) -> None:
    for key in ("", "credit.0000000000000000.nope", "x" * 300):
        response = console.client.post("/console/login", data={"api_key": key})
        assert response.status_code in (401, 422), key
        assert SESSION_COOKIE not in response.cookies
    response = console.client.post("/console/login", data={"api_key": "credit.00.nope"})
    assert response.status_code == 401
    assert "not valid" in response.text


def test_a_sign_in_posted_from_another_origin_is_refused(console: Console) -> None:
    response = console.client.post(
        "/console/login",
        data={"api_key": console.key[Role.REVIEWER]},
        headers={"Origin": "https://evil.example"},
        follow_redirects=False,
    )
    assert response.status_code == 403
    assert "nothing was changed" in response.text
    assert SESSION_COOKIE not in response.cookies


def test_signing_out_clears_the_session(console: Console) -> None:
    client = console.sign_in(Role.REVIEWER)
    token = console.csrf()
    assert client.post("/console/logout", data={}, follow_redirects=False).status_code == 403
    out = client.post("/console/logout", data={"csrf_token": token}, follow_redirects=False)
    assert out.status_code == 303
    assert out.headers["location"] == "/console/login"
    assert SESSION_COOKIE not in client.cookies
    assert client.get("/console/held", follow_redirects=False).status_code == 303


# ---------------------------------------------------------------------- the role matrix


@pytest.mark.parametrize("role", [Role.INTAKE, Role.UNDERWRITER])
def test_other_roles_cannot_sign_in_or_open_any_console_page(console: Console, role: Role) -> None:
    response = console.client.post(
        "/console/login", data={"api_key": console.key[role]}, follow_redirects=False
    )
    assert response.status_code == 403
    assert f"The {role.value} role cannot open the console" in response.text
    assert SESSION_COOKIE not in response.cookies
    header = {"X-API-Key": console.key[role]}
    for path in ("/console", "/console/held", f"/console/cases/{DECLINE}"):
        page = console.client.get(path, headers=header, follow_redirects=False)
        assert page.status_code == 403, path
        assert page.headers["content-type"].startswith("text/html")
        assert "403" in page.text
    for verb in ("release", "reject"):
        post = console.client.post(
            f"/console/cases/{DECLINE}/{verb}",
            data={"reason": "no", "csrf_token": "0" * 64},
            headers=header,
        )
        assert post.status_code == 403
    assert console.kinds(DECLINE)[-1] != KIND_RELEASED


def test_the_auditor_reads_every_page_but_gets_no_forms_and_cannot_post(
    console: Console,
) -> None:
    client = console.sign_in(Role.AUDITOR)
    held = client.get("/console/held")
    assert held.status_code == 200
    for case_id in HELD:
        assert f'href="/console/cases/{case_id}"' in held.text
    page = client.get(f"/console/cases/{DECLINE}")
    assert page.status_code == 200
    assert "backstop.confidence_floor" in page.text
    assert "release-form" not in page.text and "reject-form" not in page.text
    token = CSRF.search(page.text)
    assert token is not None  # the sign-out form's
    before = console.kinds(DECLINE)
    for verb in ("release", "reject"):
        post = client.post(
            f"/console/cases/{DECLINE}/{verb}",
            data={"reason": "looks fine", "csrf_token": token.group(1)},
            follow_redirects=False,
        )
        assert post.status_code == 403
        assert "Only a reviewer may release or reject" in post.text
    assert console.kinds(DECLINE) == before


def test_the_reviewer_gets_the_release_and_reject_forms_on_a_held_case(
    console: Console,
) -> None:
    client = console.sign_in(Role.REVIEWER)
    page = client.get(f"/console/cases/{DECLINE}")
    assert 'id="release-form"' in page.text and 'id="reject-form"' in page.text
    # by API-key header alone (no session, so no form token) the page offers no forms
    client.cookies.clear()
    keyed = client.get(
        f"/console/cases/{DECLINE}", headers={"X-API-Key": console.key[Role.REVIEWER]}
    )
    assert keyed.status_code == 200
    assert "release-form" not in keyed.text and "sign-in page" in keyed.text
    passed = client.get(
        f"/console/cases/{PASSED}", headers={"X-API-Key": console.key[Role.REVIEWER]}
    )
    assert passed.status_code == 200
    assert "release-form" not in passed.text and "reject-form" not in passed.text
    assert "Released by" in passed.text and "keystone" in passed.text


def test_a_post_without_credentials_is_refused(console: Console) -> None:
    response = console.client.post(
        f"/console/cases/{DECLINE}/release", data={"reason": "ok", "csrf_token": "x"}
    )
    assert response.status_code == 401
    assert console.kinds(DECLINE)[-1] != KIND_RELEASED


# ---------------------------------------------------------------------- the pages


def test_the_held_page_lists_the_held_cases_with_why_and_their_clock(console: Console) -> None:
    page = console.sign_in(Role.REVIEWER).get("/console/held")
    text = page.text
    positions = [text.index(f">{case_id}</a>") for case_id in HELD]
    assert positions == sorted(positions)  # the same deadline: in the order opened
    assert f">{PASSED}</a>" not in text
    assert text.count("backstop.confidence_floor") == len(HELD)
    assert "3 open item(s)" in text
    assert text.count('<td class="nowrap">2026-12-30</td>') == len(HELD)


def test_the_work_queue_shows_every_open_item_with_its_role_and_days_left(
    console: Console,
) -> None:
    page = console.sign_in(Role.OFFICER).get("/console/queue")
    assert page.status_code == 200
    for case_id in HELD:
        assert f'id="item-{case_id}"' in page.text
    assert f'id="item-{PASSED}"' not in page.text  # approved: a final action
    today = re.search(r'id="today">([0-9-]{10})<', page.text)
    assert today is not None


def test_the_case_page_shows_decision_reviews_notice_and_journal(console: Console) -> None:
    page = console.sign_in(Role.REVIEWER).get(f"/console/cases/{DECLINE}")
    assert page.status_code == 200
    text = html.unescape(page.text)
    entry = console.store.decision_entry(DECLINE)
    assert entry is not None
    decision = entry.payload["decision"]
    assert decision["decision"] == "decline"
    for factor in decision["factors"]:
        assert factor in text
    for line in decision["policyBasis"]:
        assert line in text
    assert "Equipoise" in text and "Backstop" in text
    assert "a decline at confidence 0.55 is below the floor" in text
    # the notice, rendered and verified now: SHA-256 and V1-V8
    sha = re.search(r'id="notice-sha256">([0-9a-f]{64})<', page.text)
    assert sha is not None
    for check in ("V1", "V2", "V3", "V4", "V5", "V6", "V7", "V8"):
        assert f"<td>{check}</td>" in page.text
    assert "V1-V8 passed" in text
    assert "NOTICE OF ACTION TAKEN ON YOUR APPLICATION FOR CREDIT" in text
    # every journal entry of the case: seq, kind, hash
    for e in console.store.entries(DECLINE):
        assert f'id="entry-{e.seq}"' in page.text
        assert f'title="{e.hash}"' in page.text
        assert f"<code>{e.kind}</code>" in page.text


def test_the_counteroffer_page_shows_its_terms_and_notice(console: Console) -> None:
    page = console.sign_in(Role.AUDITOR).get(f"/console/cases/{COUNTER}")
    assert page.status_code == 200
    assert "counteroffer" in page.text
    assert "at 15.99% APR" in page.text
    assert "V1-V8 passed" in page.text


def test_an_unknown_or_malformed_case_is_a_404_page(console: Console) -> None:
    client = console.sign_in(Role.REVIEWER)
    for case_id in ("C-999999", "not%20a%20case", "x" * 70, "C-000108%0A"):
        page = client.get(f"/console/cases/{case_id}")
        assert page.status_code == 404, case_id
        assert page.headers["content-type"].startswith("text/html")
    # a malformed highlight is ignored, not an error
    for entry in ("x", "-1", "9" * 40):
        assert client.get(f"/console/cases/{DECLINE}?entry={entry}").status_code == 200


# ---------------------------------------------------------------------- release, reject


def test_a_release_by_two_reviewers_journals_who_and_why_and_shows_it_on_the_case(
    console: Console,
) -> None:
    client = console.sign_in(Role.REVIEWER)
    token = console.csrf()
    first = client.post(
        f"/console/cases/{DECLINE}/release",
        data={"reason": "income documented", "csrf_token": token},
        follow_redirects=False,
    )
    assert first.status_code == 303, first.text
    (approved,) = console.store.entries(DECLINE, kinds=["keystone.approved"])
    assert approved.payload["by"] == "reviewer-1"
    page = client.get(first.headers["location"])
    assert "Approved by <strong>reviewer-1</strong>" in page.text
    assert "Release (second reviewer)" in page.text
    again = client.post(
        f"/console/cases/{DECLINE}/release",
        data={"reason": "me again", "csrf_token": token},
        follow_redirects=False,
    )
    assert again.status_code == 409 and "a second person must release it" in again.text
    client.cookies.clear()
    assert client.post("/console/login", data={"api_key": SECOND["reviewer-2"]}).status_code == 200
    token = console.csrf()
    response = client.post(
        f"/console/cases/{DECLINE}/release",
        data={"reason": "  Thin margin but documented income; release.  ", "csrf_token": token},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    last = console.store.entries(DECLINE, kinds=[KIND_RELEASED])[-1]
    # a released decline's notice is sent at once, as with `credit review release`
    assert [e.kind for e in console.store.entries(DECLINE, kinds=["notice.sent"])] == [
        "notice.sent"
    ]
    assert last.payload["by"] == "reviewer-2"
    assert last.payload["reason"] == "Thin margin but documented income; release."
    assert response.headers["location"] == (
        f"/console/cases/{DECLINE}?entry={last.seq}#entry-{last.seq}"
    )
    page = client.get(response.headers["location"])
    assert f'id="entry-{last.seq}" class="kind-keystone-released new"' in page.text
    assert "Released by\n  <strong>reviewer-2</strong>" in page.text
    assert "The case is now notified" in page.text
    assert "release-form" not in page.text
    queue = client.get("/console/held").text
    assert f">{DECLINE}</a>" not in queue
    # a second release is refused: the case is no longer held
    again = client.post(
        f"/console/cases/{DECLINE}/release",
        data={"reason": "again", "csrf_token": token},
        follow_redirects=False,
    )
    assert again.status_code == 409
    assert "not held" in again.text
    assert console.kinds(DECLINE).count(KIND_RELEASED) == 1


def test_a_reject_journals_who_and_why(console: Console) -> None:
    client = console.sign_in(Role.REVIEWER)
    token = console.csrf(COUNTER)
    response = client.post(
        f"/console/cases/{COUNTER}/reject",
        data={"reason": "LTV evidence missing", "csrf_token": token},
        follow_redirects=False,
    )
    assert response.status_code == 303
    last = console.store.entries(COUNTER)[-1]
    assert last.kind == KIND_REJECTED
    assert (last.payload["by"], last.payload["reason"]) == ("reviewer-1", "LTV evidence missing")
    page = client.get(response.headers["location"])
    assert "keystone.rejected by reviewer-1. The case is now rejected" in page.text


@pytest.mark.parametrize("reason", ["", "   \n ", "x" * 2001])
def test_a_release_needs_a_reason(console: Console, reason: str) -> None:
    client = console.sign_in(Role.REVIEWER)
    before = console.kinds(DECLINE)
    response = client.post(
        f"/console/cases/{DECLINE}/release",
        data={"reason": reason, "csrf_token": console.csrf()},
        follow_redirects=False,
    )
    assert response.status_code == 400
    assert "reason" in response.text
    assert console.kinds(DECLINE) == before


# ---------------------------------------------------------------------- CSRF


def test_a_post_without_the_sessions_csrf_token_is_refused(console: Console) -> None:
    client = console.sign_in(Role.REVIEWER)
    good = console.csrf()
    before = console.kinds(DECLINE)
    for token in ("", "0" * 64, good[:-1] + ("0" if good[-1] != "0" else "1")):
        response = client.post(
            f"/console/cases/{DECLINE}/release",
            data={"reason": "ok", "csrf_token": token},
            follow_redirects=False,
        )
        assert response.status_code == 403, token
        assert "CSRF" in response.text
    assert console.kinds(DECLINE) == before


def test_a_csrf_token_is_bound_to_its_session(console: Console, tmp_path: Path) -> None:
    console.sign_in(Role.REVIEWER)
    stolen = console.csrf()
    # another reviewer's session cannot use the first session's token
    other_key = SECOND["reviewer-2"]
    with TestClient(console.client.app) as other:
        other.post("/console/login", data={"api_key": other_key})
        response = other.post(
            f"/console/cases/{DECLINE}/release",
            data={"reason": "ok", "csrf_token": stolen},
            follow_redirects=False,
        )
        assert response.status_code == 403
        # an API-key header (no session) has no token to match
        response = other.post(
            f"/console/cases/{DECLINE}/release",
            data={"reason": "ok", "csrf_token": stolen},
            headers={"X-API-Key": other_key},
            follow_redirects=False,
        )
        assert response.status_code == 403
    assert KIND_RELEASED not in console.kinds(DECLINE)


def test_a_cookie_post_from_another_origin_is_refused(console: Console) -> None:
    client = console.sign_in(Role.REVIEWER)
    response = client.post(
        f"/console/cases/{DECLINE}/release",
        data={"reason": "ok", "csrf_token": console.csrf()},
        headers={"Origin": "https://evil.example"},
        follow_redirects=False,
    )
    assert response.status_code in (401, 403)
    assert KIND_RELEASED not in console.kinds(DECLINE)


# ---------------------------------------------------------------------- escaping


def test_everything_shown_is_escaped(console: Console) -> None:
    name = '<img src=x onerror="alert(1)">'
    key = console.keys.create(Role.REVIEWER, name)[1]
    client = console.client
    assert client.post("/console/login", data={"api_key": key}).status_code == 200
    reason = "<script>alert('owned')</script> & \"quotes\""
    response = client.post(
        f"/console/cases/{DECLINE}/release",
        data={"reason": reason, "csrf_token": console.csrf()},
    )
    assert response.status_code == 200
    page = response.text
    assert "<script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(" in page
    assert "&lt;img src=x onerror=" in page
    last = console.store.entries(DECLINE, kinds=["keystone.approved"])[-1]
    assert (last.payload["by"], last.payload["reason"]) == (name, reason)
    # a reason shown again in its form (the post was refused) is escaped too
    refused = client.post(
        f"/console/cases/{COUNTER}/reject",
        data={
            "reason": "</textarea><script>x()</script>" + "x" * 2000,
            "csrf_token": console.csrf(),
        },
    )
    assert refused.status_code == 400
    assert "</textarea><script>" not in refused.text
    assert "&lt;/textarea&gt;&lt;script&gt;x()" in refused.text


def test_the_case_page_shows_why_the_case_was_decided_as_credit_why_does(
    console: Console,
) -> None:
    from credit.casework import CaseWork
    from credit.journal.why import explain
    from credit.notices.outbox import InMemoryOutbox

    client = console.sign_in(Role.AUDITOR)
    page = client.get(f"/console/cases/{DECLINE}")
    assert page.status_code == 200
    store = console.store
    doc = explain(DECLINE, store.entries(DECLINE), CaseWork(store, InMemoryOutbox()).life(DECLINE))
    section = page.text[page.text.index('id="why"') : page.text.index('id="journal"')]
    policy = doc["policy"]
    assert f"{policy['name']} v{policy['version']}" in section and policy["sha256"] in section
    assert all(f"<code>{r['code']}</code>" in section for r in doc["reasons"])
    assert doc["reasons"] and all(html.escape(r["sentence"]) in section for r in doc["reasons"])
    assert len(re.findall(r"<li><code>", section.split('id="why-reasons"')[0])) == len(doc["steps"])
    assert f'href="#entry-{doc["decision"]["seq"]}"' in section
