"""Tampering behind the store's back is caught, and ``credit journal`` reports it.

Each journal holds five entries (C-1 intake, C-2 intake, C-1 review, C-1 decision,
C-2 review); the tests edit, delete or reorder rows with plain SQL, as someone with
database access would, then walk the chain.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from credit.canonical import dumps, loads
from credit.cli import app
from credit.journal import Entry, SqlStore, entry_hash
from test_journal_store import DECISION, raw_sql, sql_backend

Journal = tuple[SqlStore, str, str | None, list[Entry]]


@pytest.fixture(params=("sqlite", "postgresql"))
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Journal]:
    with sql_backend(request.param, tmp_path) as (store, url, schema):
        store.append("C-1", "intake.accepted", {"income": "120000.00"})
        store.append("C-2", "intake.accepted", {"income": "64000.00"})
        store.append("C-1", "review.passed", {"checks": ["fair-lending"]})
        store.record_decision("C-1", DECISION)
        store.append("C-2", "review.passed", {"checks": []})
        yield store, url, schema, store.entries()


def cli_args(url: str, schema: str | None) -> list[str]:
    return ["--db", url, *(["--schema", schema] if schema else [])]


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


# ------------------------------------------------------------------ the chain walk


def test_an_untouched_journal_verifies_whole(journal: Journal) -> None:
    store, _, _, entries = journal
    report = store.verify()
    assert (report.ok, report.entries, report.head) == (True, 5, entries[-1].hash)


def test_an_entry_edited_in_the_database_is_named_as_the_first_broken_link(
    journal: Journal,
) -> None:
    store, url, schema, entries = journal
    raw_sql(
        url, schema, """UPDATE journal_entries SET payload = '{"income":"12.00"}' WHERE seq = 2"""
    )
    report = store.verify()
    assert (report.ok, report.first_broken_seq, report.entries) == (False, 2, 2)
    assert report.detail == "entry 2's content does not match its hash (it was edited)"
    assert report.head == entries[0].hash


def test_an_edit_with_a_recomputed_hash_is_caught_at_the_next_entrys_link(
    journal: Journal,
) -> None:
    store, url, schema, entries = journal
    forged = entries[1].model_copy(update={"payload": {"income": "12.00"}})
    forged_hash = entry_hash(forged.prev_hash, forged.body())
    raw_sql(
        url,
        schema,
        f"UPDATE journal_entries SET payload = '{dumps(forged.payload, sort_keys=True)}', "
        f"hash = '{forged_hash}' WHERE seq = 2",
    )
    report = store.verify()
    assert (report.ok, report.first_broken_seq) == (False, 3)
    assert report.detail == (
        "entry 3 does not link to the entry before it "
        "(an entry before it was deleted, reordered or edited)"
    )


def test_a_deleted_entry_is_named_by_the_entry_now_standing_in_its_place(
    journal: Journal,
) -> None:
    store, url, schema, _ = journal
    raw_sql(url, schema, "DELETE FROM journal_entries WHERE seq = 3")
    report = store.verify()
    assert (report.ok, report.first_broken_seq) == (False, 4)
    assert report.detail == (
        "entry 4 stands where entry 3 should (an entry was deleted or reordered)"
    )


def test_two_entries_swapped_in_the_database_are_caught_at_the_first_of_them(
    journal: Journal,
) -> None:
    store, url, schema, entries = journal
    raw_sql(
        url,
        schema,
        "UPDATE journal_entries SET seq = -1 WHERE seq = 2",
        "UPDATE journal_entries SET seq = 2 WHERE seq = 3",
        "UPDATE journal_entries SET seq = 3 WHERE seq = -1",
    )
    assert [e.kind for e in store.entries()][1:3] == ["review.passed", "intake.accepted"]
    report = store.verify()
    assert (report.ok, report.first_broken_seq) == (False, 2)
    assert report.detail.startswith("entry 2 does not link to the entry before it")
    assert report.head == entries[0].hash


# ------------------------------------------------------------------ credit journal


def test_credit_journal_verify_confirms_a_whole_chain_with_exit_0(journal: Journal) -> None:
    _, url, schema, entries = journal
    code, stdout, _ = run_cli("journal", "verify", *cli_args(url, schema))
    assert code == 0
    assert stdout.splitlines()[0] == f"ok: 5 entries, head {entries[-1].hash}"


def test_credit_journal_verify_names_the_edited_entry_with_exit_1(journal: Journal) -> None:
    _, url, schema, _ = journal
    raw_sql(url, schema, """UPDATE journal_entries SET kind = 'review.failed' WHERE seq = 3""")
    code, stdout, _ = run_cli("journal", "verify", *cli_args(url, schema))
    assert code == 1
    lines = stdout.splitlines()
    assert lines[0] == (
        "BROKEN at entry 3: entry 3's content does not match its hash (it was edited)"
    )


def test_credit_journal_verify_reads_the_database_from_credit_database_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sql_backend("sqlite", tmp_path) as (store, url, _):
        store.append("C-1", "intake.accepted", {})
    monkeypatch.setenv("CREDIT_DATABASE_URL", url)
    code, stdout, _ = run_cli("journal", "verify")
    assert code == 0
    assert stdout.startswith("ok: 1 entry, head ")


def test_credit_journal_verify_of_a_missing_database_is_bad_input_and_creates_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "nowhere.db"
    code, stdout, stderr = run_cli("journal", "verify", "--db", f"sqlite:///{path}")
    assert (code, stdout) == (2, "")
    assert stderr == f"error: no journal at sqlite:///{path} (no such file '{path}')\n"
    assert not path.exists()


def test_credit_journal_verify_of_an_unreachable_server_exits_2() -> None:
    code, _, stderr = run_cli("journal", "verify", "--db", "postgresql://postgres@127.0.0.1:1/x")
    assert code == 2
    assert stderr.startswith(
        "error: the journal store postgresql+psycopg://postgres@127.0.0.1:1/x failed: "
    )


def test_credit_journal_show_prints_one_cases_entries_as_json_lines(journal: Journal) -> None:
    _, url, schema, entries = journal
    code, stdout, _ = run_cli("journal", "show", "--case", "C-1", *cli_args(url, schema))
    assert code == 0
    lines = [loads(line) for line in stdout.splitlines()]
    assert [line["seq"] for line in lines] == [1, 3, 4]
    assert lines[2] == loads(dumps(entries[3].to_wire()))


def test_credit_journal_show_filters_by_kind(journal: Journal) -> None:
    _, url, schema, _ = journal
    args = ["--kind", "review.passed", "--kind", "decision.recorded", *cli_args(url, schema)]
    code, stdout, _ = run_cli("journal", "show", *args)
    assert code == 0
    assert [loads(line)["seq"] for line in stdout.splitlines()] == [3, 4, 5]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("'{\"income\":'", "Expecting value: line 1 column 11 (char 10)"),
        ("'[1,2]'", "1 validation error for Entry"),
        ("'{\"x\":NaN}'", "NaN is not a number"),
    ],
)
def test_an_entry_no_longer_readable_is_named_as_broken_rather_than_crashing(
    journal: Journal, payload: str, reason: str
) -> None:
    store, url, schema, entries = journal
    raw_sql(url, schema, f"UPDATE journal_entries SET payload = {payload} WHERE seq = 3")
    report = store.verify()
    assert (report.ok, report.first_broken_seq, report.entries) == (False, 3, 3)
    assert report.detail == f"entry 3 is unreadable ({reason})"
    assert report.head == entries[1].hash


def test_a_row_whose_text_is_not_as_written_is_judged_from_its_parsed_body(
    journal: Journal,
) -> None:
    """The walk hashes a row's stored text without parsing it; a row whose text no
    longer hashes to its hash is parsed: the same body written another way (spaces, key
    order) still links, a changed value does not, and a previous hash that is not hex
    (not even ASCII) is named as a broken link rather than crashing the walk."""
    store, url, schema, _ = journal
    raw_sql(
        url,
        schema,
        'UPDATE journal_entries SET payload = \'{ "checks" : [ "fair-lending" ] }\' WHERE seq = 3',
    )
    assert store.verify().ok
    raw_sql(url, schema, "UPDATE journal_entries SET payload = '{\"checks\":[]}' WHERE seq = 3")
    report = store.verify()
    assert (report.ok, report.first_broken_seq) == (False, 3)
    assert "hash" in (report.detail or "")
    raw_sql(
        url,
        schema,
        'UPDATE journal_entries SET payload = \'{"checks":["fair-lending"]}\', '
        f"prev_hash = '{'é' * 64}' WHERE seq = 3",
    )
    report = store.verify()
    assert (report.ok, report.first_broken_seq) == (False, 3)
    assert "does not link" in (report.detail or "")


def test_an_entry_relinked_with_a_hash_that_matches_its_new_content_is_a_broken_link(
    journal: Journal,
) -> None:
    """Someone rewrites entry 3 to hang from another previous hash and recomputes its
    own hash over what it now says: the entry hashes right, in its place, but does not
    link to entry 2 (the walk decides the common link at once; this is not one)."""
    store, url, schema, entries = journal
    third = entries[2]
    other = "f" * 64
    forged = entry_hash(other, third.model_copy(update={"prev_hash": other}).body())
    raw_sql(
        url,
        schema,
        f"UPDATE journal_entries SET prev_hash = '{other}', hash = '{forged}' WHERE seq = 3",
    )
    report = store.verify()
    assert (report.ok, report.first_broken_seq, report.entries) == (False, 3, 3)
    assert "does not link to the entry before it" in (report.detail or "")
    assert report.head == entries[1].hash
