"""``credit review`` and ``credit fairness`` over a SQLite journal: thin adapters over
the Keystone gate and the portfolio report."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import auto_case
from credit.cli import app
from credit.governance.keystone import Keystone
from credit.journal import SqlStore, open_store
from credit.service.keys import SqlKeyStore
from credit.service.tables import ServiceDb
from governance_support import monitoring, record

runner = CliRunner()


KEYS: dict[str, str] = {}


@pytest.fixture
def database(tmp_path: Path) -> str:
    """A journal with one clean case (C1) and one tampered case (C2), both reviewed,
    and one case (C3) awaiting review; a key each for two reviewers and an officer
    (in KEYS, by name)."""
    url = f"sqlite:///{tmp_path / 'credit.db'}"
    store = open_store(url)
    try:
        record(store, auto_case(case_id="C1"), monitor=monitoring())
        record(store, auto_case(case_id="C2", score=560), changes={"decision": "refer"})
        record(store, auto_case(case_id="C3"), monitor=monitoring(race="Asian"))
        keystone = Keystone(store)
        keystone.review("C1")
        keystone.review("C2")
    finally:
        store.close()
    with ServiceDb(url) as db:
        keys = SqlKeyStore(db, scrypt_n=2**10)
        for role, name in (("reviewer", "Dana"), ("reviewer", "Lee"), ("officer", "Olga")):
            KEYS[name] = keys.create(role, name)[1]
    return url


def _store(url: str) -> SqlStore:
    return open_store(url, create=False)


def test_credit_review_lists_the_held_cases_as_a_table(database: str) -> None:
    result = runner.invoke(app, ["review", "--database", database])
    assert result.exit_code == 0, result.output
    assert "Held by the Keystone gate: 2 case(s)" in result.output
    assert "C2" in result.output and "C3" in result.output
    assert "C1" not in result.output


def test_credit_review_run_reviews_the_cases_awaiting_review(database: str) -> None:
    result = runner.invoke(app, ["review", "run", "--database", database])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "C3: released"


def test_credit_review_release_takes_two_reviewers_each_named_by_their_key(
    database: str, tmp_path: Path
) -> None:
    args = ["review", "release", "C2", "--reason", "file checked", "--database", database]
    outbox = ["--outbox", str(tmp_path / "outbox")]
    first = runner.invoke(app, [*args, *outbox, "--key", KEYS["Dana"]])
    assert first.exit_code == 0, first.output
    assert first.output.startswith("case C2 approved by Dana (journal entry ")
    assert "a second reviewer must release it (four eyes)" in first.output
    again = runner.invoke(app, [*args, *outbox, "--key", KEYS["Dana"]])
    assert again.exit_code == 1
    assert "a second person must release it" in again.output.replace("\n", " ")
    second = runner.invoke(app, [*args, *outbox], env={"CREDIT_API_KEY": KEYS["Lee"]})
    assert second.exit_code == 0, second.output
    assert second.output.startswith("case C2 released by Lee (journal entry ")
    assert "case C2: referred, a referral item for the officer" in second.output
    store = _store(database)
    try:
        entry = store.entries("C2", kinds=["keystone.released"])[-1]
        assert (entry.payload["by"], entry.payload["reason"]) == ("Lee", "file checked")
        assert entry.payload["approvedBy"][0]["by"] == "Dana"
    finally:
        store.close()
    third = runner.invoke(app, [*args, *outbox, "--key", KEYS["Lee"]])
    assert third.exit_code == 1
    assert "cannot release: case C2 is not held, it is referred" in third.output.replace("\n", "")


def test_a_persons_action_without_a_key_or_with_a_wrong_one_changes_nothing(
    database: str,
) -> None:
    store = _store(database)
    count = len(store.entries())
    store.close()
    args = ["review", "reject", "C3", "--reason", "no", "--database", database]
    missing = runner.invoke(app, args, env={"CREDIT_API_KEY": ""})
    assert missing.exit_code == 2
    assert "needs their key: --key KEY or $CREDIT_API_KEY" in missing.output
    wrong = runner.invoke(app, [*args, "--key", "credit.0000000000000000.nope"])
    assert wrong.exit_code == 2
    assert "the key is not valid" in wrong.output
    officer = runner.invoke(app, [*args, "--key", KEYS["Olga"]])
    assert officer.exit_code == 1
    assert "the officer role may not reject a held decision" in officer.output
    store = _store(database)
    assert len(store.entries()) == count
    store.close()


def test_credit_review_reject_journals_who_and_why(database: str) -> None:
    result = runner.invoke(
        app,
        ["review", "reject", "C3", "--reason", "withdrawn", "--database", database],
        env={"CREDIT_API_KEY": KEYS["Lee"]},
    )
    assert result.exit_code == 0, result.output
    store = _store(database)
    try:
        assert Keystone(store).status("C3").state == "rejected"
    finally:
        store.close()


def test_credit_review_show_prints_the_findings_that_hold_a_case(database: str) -> None:
    result = runner.invoke(app, ["review", "show", "C2", "--database", database])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("case C2: held, a held item for the reviewer\n")
    assert "case C2: held (refer by rules)" in result.output
    assert "HOLDS backstop.disagreement: decision: recorded refer" in result.output


def test_credit_fairness_prints_the_report_and_exits_zero(database: str) -> None:
    result = runner.invoke(app, ["fairness", "--database", database])
    assert result.exit_code == 0, result.output
    assert "3 recorded decision(s)" in result.output
    assert "no group below the watch line (0.90)" in result.output


def test_a_missing_journal_is_bad_input_not_created(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing.db'}"
    result = runner.invoke(app, ["review", "--database", url])
    assert result.exit_code == 2
    assert "error: no journal at" in result.output
    assert not (tmp_path / "missing.db").exists()
    assert runner.invoke(app, ["fairness", "--database", url]).exit_code == 2
