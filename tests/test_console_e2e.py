"""The console end to end: the real server (uvicorn on a free 127.0.0.1 port over a
temporary SQLite journal seeded by the governed pipeline) driven by headless Chromium
through Playwright: two reviewers release a held decision (four eyes), a credit officer
decides a referral, and a revoked key's session is refused.

The browser is Debian's ``chromium`` at /usr/bin/chromium (``make test`` installs it
when it is missing); Playwright never downloads one. Without it these tests skip.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from typer.testing import CliRunner

from console_support import HELD, REFERRAL, seed, settings
from credit.cli import app
from credit.governance.findings import KIND_RELEASED
from credit.journal import SqlStore, open_store
from credit.service.app import create_app
from credit.service.roles import Role

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REVIEWER = "Rita Reviewer"
SECOND_REVIEWER = "Ravi Reviewer"
OFFICER = "Olga Officer"
CASE = "C-000108"  # an auto decline held by Backstop's confidence floor

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (make test installs Debian's chromium)"
)
playwright_sync = pytest.importorskip("playwright.sync_api")


@dataclass(frozen=True)
class Server:
    url: str
    database_url: str
    keys: dict[Role, str]
    second_reviewer: str


def _create_key(database_url: str, role: Role, name: str) -> str:
    """``credit keys create --role R --name N``: the key is printed once, on stdout."""
    result = CliRunner().invoke(
        app, ["keys", "create", "--role", role.value, "--name", name, "--database", database_url]
    )
    assert result.exit_code == 0, result.output
    key = result.stdout.strip()
    assert key.startswith("credit."), result.output
    return key


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("console-e2e")
    config = settings(tmp)
    store = open_store(config.database_url)
    assert isinstance(store, SqlStore)
    try:
        seed(store)
    finally:
        store.close()
    keys = {
        Role.REVIEWER: _create_key(config.database_url, Role.REVIEWER, REVIEWER),
        Role.UNDERWRITER: _create_key(config.database_url, Role.UNDERWRITER, "Uma Underwriter"),
        Role.OFFICER: _create_key(config.database_url, Role.OFFICER, OFFICER),
    }
    second = _create_key(config.database_url, Role.REVIEWER, SECOND_REVIEWER)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(
        uvicorn.Config(
            create_app(config, checkpoints=tmp / "checkpoints"),
            log_level="warning",
            lifespan="on",
            ws="none",
            access_log=False,
        )
    )
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while not uv.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        yield Server(f"http://127.0.0.1:{port}", config.database_url, keys, second)
    finally:
        uv.should_exit = True
        thread.join(timeout=15)
        sock.close()
    assert not thread.is_alive(), "the server did not stop"


@pytest.fixture(scope="module")
def browser() -> Iterator[playwright_sync.Browser]:
    with playwright_sync.sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: playwright_sync.Browser) -> Iterator[playwright_sync.Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


def _sign_in(page: playwright_sync.Page, server: Server, key: str, name: str) -> None:
    expect = playwright_sync.expect
    page.goto(f"{server.url}/console/login")
    page.fill("#api_key", key)
    page.click("button:has-text('Sign in')")
    expect(page).to_have_url(f"{server.url}/console/queue")
    expect(page.locator("header")).to_contain_text(f"Signed in as {name}")


def test_two_reviewers_release_a_held_case_four_eyes(
    server: Server, browser: playwright_sync.Browser, tmp_path: Path
) -> None:
    expect = playwright_sync.expect
    first = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = first.new_page()
        page.goto(f"{server.url}/console/held")
        expect(page).to_have_url(f"{server.url}/console/login")  # not signed in yet
        _sign_in(page, server, server.keys[Role.REVIEWER], REVIEWER)
        page.click("a:text-is('Held')")
        rows = page.locator("#queue tbody tr")
        expect(rows).to_have_count(len(HELD))
        expect(rows.first).to_contain_text("backstop.confidence_floor")
        expect(rows.first).to_contain_text("reviewer")

        page.click(f"#queue a:text-is('{CASE}')")
        expect(page).to_have_url(f"{server.url}/console/cases/{CASE}")
        expect(page.locator("#gate-state")).to_have_text("held")
        expect(page.locator("#work-item")).to_contain_text("held for the reviewer")
        expect(page.locator("#decision")).to_contain_text("decline")
        expect(page.locator("#review-backstop")).to_contain_text("backstop.confidence_floor")
        expect(page.locator("#review-equipoise")).to_contain_text("passed")
        expect(page.locator("#checks tbody tr")).to_have_count(8)
        expect(page.locator("#notice-sha256")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
        expect(page.locator("#notice-text")).to_contain_text("NOTICE OF ACTION TAKEN")
        page.screenshot(path=str(tmp_path / "case-held.png"), full_page=True)

        page.fill("#release-reason", "Income and LTV verified by phone.")
        page.click("#release-form button[type=submit]")
        expect(page).to_have_url(re.compile(rf"/console/cases/{CASE}\?entry=\d+#entry-\d+$"))
        expect(page.locator("tr.kind-keystone-approved")).to_have_count(1)
        expect(page.locator("#approvals")).to_contain_text(f"Approved by {REVIEWER}")
        expect(page.locator("#gate-state")).to_have_text("held")
    finally:
        first.close()

    second = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = second.new_page()
        _sign_in(page, server, server.second_reviewer, SECOND_REVIEWER)
        page.goto(f"{server.url}/console/cases/{CASE}")
        reason = "Score one point under the floor; agreed, income documented."
        page.fill("#release-reason", reason)
        page.click("#release-form button[type=submit]")
        released = page.locator("tr.kind-keystone-released")
        expect(released).to_have_count(1)
        expect(released).to_contain_text(f"by={SECOND_REVIEWER}")
        expect(released).to_contain_text(reason)
        expect(page.locator("#gate-state")).to_have_text("released")
        expect(page.locator("#life-state")).to_have_text("notified")
        expect(page.locator("#release-form")).to_have_count(0)
        page.screenshot(path=str(tmp_path / "case-released.png"), full_page=True)
        page.click("a:text-is('Held')")
        expect(page.locator("#queue tbody tr")).to_have_count(len(HELD) - 1)
    finally:
        second.close()

    store = open_store(server.database_url)
    try:
        last = store.entries(CASE, kinds=[KIND_RELEASED])[-1]
        assert [e.kind for e in store.entries(CASE, kinds=["notice.sent"])] == ["notice.sent"]
        assert (last.payload["by"], last.payload["reason"]) == (SECOND_REVIEWER, reason)
        assert last.payload["approvedBy"][0]["by"] == REVIEWER
        assert store.verify().ok
    finally:
        store.close()


def test_an_officer_decides_a_referral_in_the_console_and_its_notice_is_sent(
    server: Server, page: playwright_sync.Page, tmp_path: Path
) -> None:
    expect = playwright_sync.expect
    _sign_in(page, server, server.keys[Role.OFFICER], OFFICER)
    item = page.locator(f"#item-{REFERRAL}")
    expect(item).to_contain_text("referral")
    expect(item).to_contain_text("officer")
    page.click(f"#queue a:text-is('{REFERRAL}')")
    expect(page.locator("#life-state")).to_have_text("referred")
    expect(page.locator("#work-item")).to_contain_text("referral for the officer")
    page.select_option("#decision-select", "decline")
    page.check("#reason-NO_CREDIT_FILE")
    page.check("#reason-LIMITED_CREDIT_HISTORY")
    page.fill("#why", "No score and a thin file; the applicant could not add references.")
    page.screenshot(path=str(tmp_path / "officer-form.png"), full_page=True)
    page.click("#decide-submit")
    expect(page).to_have_url(re.compile(rf"/console/cases/{REFERRAL}\?entry=\d+#entry-\d+$"))
    expect(page.locator("tr.kind-officer-decided")).to_have_count(1)
    expect(page.locator("#decided-by")).to_have_text(OFFICER)
    expect(page.locator("#life-state")).to_have_text("notified")
    expect(page.locator("#work-item")).to_contain_text("At a final action: notified")
    text = page.locator("#notice-text")
    expect(text).to_contain_text("returned no credit score for you")
    expect(text).not_to_contain_text("YOUR CREDIT SCORE")
    expect(page.locator("#checks tbody tr.pass")).to_have_count(8)
    page.screenshot(path=str(tmp_path / "officer-decided.png"), full_page=True)
    page.goto(f"{server.url}/console/queue")
    expect(page.locator(f"#item-{REFERRAL}")).to_have_count(0)
    store = open_store(server.database_url)
    try:
        (decided,) = store.entries(REFERRAL, kinds=["officer.decided"])
        assert decided.payload["officer"]["name"] == OFFICER
        assert [r["code"] for r in decided.payload["reasons"]] == [
            "NO_CREDIT_FILE",
            "LIMITED_CREDIT_HISTORY",
        ]
        assert [e.kind for e in store.entries(REFERRAL, kinds=["notice.sent"])] == ["notice.sent"]
    finally:
        store.close()


def test_a_revoked_keys_console_session_is_refused_on_its_next_request(
    server: Server, page: playwright_sync.Page
) -> None:
    expect = playwright_sync.expect
    key = _create_key(server.database_url, Role.AUDITOR, "Ada Auditor")
    _sign_in(page, server, key, "Ada Auditor")
    page.goto(f"{server.url}/console/cases/{CASE}")
    expect(page.locator("#case-id")).to_have_text(CASE)
    key_id = key.split(".")[1]
    result = CliRunner().invoke(app, ["keys", "revoke", key_id, "--database", server.database_url])
    assert result.exit_code == 0, result.output
    response = page.goto(f"{server.url}/console/cases/{CASE}")
    assert response is not None
    expect(page).to_have_url(f"{server.url}/console/login")


def test_an_underwriter_key_cannot_open_the_console(
    server: Server, browser: playwright_sync.Browser
) -> None:
    expect = playwright_sync.expect
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{server.url}/console/login")
        page.fill("#api_key", server.keys[Role.UNDERWRITER])
        page.click("button:has-text('Sign in')")
        expect(page.locator("h1")).to_contain_text("403")
        expect(page.locator("main")).to_contain_text("The underwriter role cannot open the console")
        assert not [c for c in context.cookies() if c.get("name") == "credit_session"]
        response = page.goto(f"{server.url}/console/held")
        assert response is not None
        expect(page).to_have_url(f"{server.url}/console/login")
    finally:
        context.close()
    keyed = browser.new_context(extra_http_headers={"X-API-Key": server.keys[Role.UNDERWRITER]})
    try:
        page = keyed.new_page()
        for path in ("/console/held", f"/console/cases/{CASE}"):
            response = page.goto(f"{server.url}{path}")
            assert response is not None and response.status == 403, path
            expect(page.locator("main")).to_contain_text("cannot open the console")
    finally:
        keyed.close()
