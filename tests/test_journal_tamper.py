"""Issue 12: someone with write access to the database (and the outbox), but not to
the lender's key, tampers with a journal written by ``credit run``; each way is caught
by ``credit journal verify`` with the checkpoints, and the pipeline refuses to act on
what was tampered with.

The journal: the first twelve example cases run through the pipeline (a case held at
the gate, C-000006; notified declines, C-000011 and C-000012, with monitoring data),
a signed checkpoint after the run. Each scenario tampers with a copy through plain SQL
or the file system, as an insider would, then verifies. The main ones run on
PostgreSQL too (CREDIT_TEST_DATABASE_URL).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from credit.canonical import dumps, loads
from credit.cli import app
from credit.errors import JournalIntegrityError
from credit.journal import SqlStore, entry_hash, open_store
from credit.journal.audit import load_checkpoints
from credit.journal.base import DecisionAlreadyRecordedError, Entry
from credit.journal.keys import keygen
from credit.journal.signer import JournalKey, load_journal_key
from credit.journal.verified import verify_since_mark
from credit.notices import DirectoryOutbox
from credit.pipeline import BatchLine, Pipeline
from test_journal_store import _engine_url, pg_schema

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "cases.jsonl"
HELD = "C-000006"
NOTIFIED = "C-000011"
OTHER = "C-000012"
BACKENDS = ("sqlite", "postgresql")


def example_batch(n: int = 12) -> list[BatchLine]:
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()[:n]
    return [BatchLine(i, loads(line)) for i, line in enumerate(lines, start=1)]


@dataclass
class Journal:
    url: str
    schema: str | None
    outbox: Path
    checkpoints: Path
    key: JournalKey

    def store(self, key: JournalKey | None = None) -> SqlStore:
        return open_store(self.url, schema=self.schema, create=False, key=key or self.key)

    def pipeline(self, store: SqlStore) -> Pipeline:
        return Pipeline(store, DirectoryOutbox(self.outbox), checkpoints=self.checkpoints)

    def audit(self, key: JournalKey | None = None) -> list[tuple[str, str]]:
        """(check, where) of each finding of the verify walk with the checkpoints."""
        store = self.store(key)
        try:
            kept, bad = load_checkpoints(self.checkpoints, self.key.verifier, origin=None)
            report = store.audit(kept)
        finally:
            store.close()
        return [
            (f.check, f.checkpoint or (f"entry {f.seq}" if f.seq else f"case {f.case_id}"))
            for f in (*bad, *report.findings)
        ]

    def sql(self, statement: str, **params: Any) -> None:
        engine = create_engine(_engine_url(self.url))
        try:
            with engine.begin() as conn:
                if self.schema is not None:
                    conn.exec_driver_sql(f'SET LOCAL search_path TO "{self.schema}"')
                conn.execute(text(statement), params)
        finally:
            engine.dispose()

    def rows(self) -> list[Entry]:
        store = self.store()
        try:
            return store.entries()
        finally:
            store.close()

    def rewrite(self, entries: list[Entry]) -> None:
        """Replace the whole journal with ``entries``, every hash recomputed and chained
        (the MACs cannot be: the insider has no key)."""
        self.sql("DELETE FROM decisions")
        self.sql("DELETE FROM journal_entries")
        prev = "0" * 64
        for seq, old in enumerate(entries, start=1):
            entry = old.model_copy(update={"seq": seq, "prev_hash": prev})
            digest = entry_hash(prev, entry.body())
            entry = entry.model_copy(update={"hash": digest})
            self.sql(
                "INSERT INTO journal_entries (seq, case_id, kind, payload, prev_hash, "
                "recorded_at, hash, mac, leaf_hash) VALUES (:seq, :case_id, :kind, :payload, "
                ":prev, :at, :hash, :mac, :leaf)",
                seq=seq,
                case_id=entry.case_id,
                kind=entry.kind,
                payload=dumps(entry.payload, sort_keys=True),
                prev=prev,
                at=entry.recorded_at,
                hash=digest,
                mac=old.mac,
                leaf=entry.leaf_hash().hex(),
            )
            if entry.kind == "decision.recorded":
                self.sql(
                    "INSERT INTO decisions (case_id, seq) VALUES (:c, :s)",
                    c=entry.case_id,
                    s=seq,
                )
            prev = digest

    def verify_cli(self) -> tuple[int, str]:
        args = ["journal", "verify", "--db", self.url, "--checkpoints", str(self.checkpoints)]
        if self.schema:
            args += ["--schema", self.schema]
        result = CliRunner().invoke(app, args)
        return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The journal of the first twelve example cases, on SQLite, with its outbox and
    checkpoints, run once and copied for each scenario."""
    root = tmp_path_factory.mktemp("tamper-template")
    key = load_journal_key()
    with open_store(f"sqlite:///{root / 'journal.db'}", key=key) as store:
        Pipeline(store, DirectoryOutbox(root / "outbox"), checkpoints=root / "checkpoints").run(
            example_batch()
        )
    return root


def _journal(backend: str, tmp_path: Path, template: Path) -> Iterator[Journal]:
    key = load_journal_key()
    if backend == "sqlite":
        for name in ("outbox", "checkpoints"):
            shutil.copytree(template / name, tmp_path / name)
        shutil.copy(template / "journal.db", tmp_path / "journal.db")
        yield Journal(
            f"sqlite:///{tmp_path / 'journal.db'}",
            None,
            tmp_path / "outbox",
            tmp_path / "checkpoints",
            key,
        )
        return
    with pg_schema() as (url, schema):
        journal = Journal(url, schema, tmp_path / "outbox", tmp_path / "checkpoints", key)
        with open_store(url, schema=schema, key=key) as store:
            journal.pipeline(store).run(example_batch())
        yield journal


@pytest.fixture
def journal(tmp_path: Path, template: Path) -> Iterator[Journal]:
    """A copy of the template journal on SQLite."""
    yield from _journal("sqlite", tmp_path, template)


@pytest.fixture(params=BACKENDS)
def either(request: pytest.FixtureRequest, tmp_path: Path, template: Path) -> Iterator[Journal]:
    """The journal on SQLite, and on PostgreSQL when the test server is set."""
    yield from _journal(request.param, tmp_path, template)


# ---------------------------------------------------------------------- untouched


def test_an_untouched_journal_verifies_with_every_entry_covered_by_a_checkpoint(
    either: Journal,
) -> None:
    assert either.audit() == []
    code, stdout = either.verify_cli()
    assert code == 0, stdout
    entries = len(either.rows())
    assert stdout.startswith(f"ok: {entries} entries")
    assert f"newest of size {entries}" in stdout  # the run signed its last entry


# ---------------------------------------------------------------------- the chain's blind spots


def test_truncating_the_newest_entries_passes_the_chain_but_not_the_checkpoint(
    either: Journal,
) -> None:
    size = len(either.rows())
    either.sql("DELETE FROM journal_entries WHERE seq > :keep", keep=size - 3)
    store = either.store()
    try:
        assert store.verify().ok  # the chain alone: a shorter chain is a valid chain
        with pytest.raises(JournalIntegrityError) as refused:
            store.checkpoint(either.checkpoints)  # and the key signs nothing over it
        assert refused.value.check == "truncated"
    finally:
        store.close()
    checkpoint = str(either.checkpoints / f"{size:020d}.checkpoint")
    assert either.audit() == [("truncated", checkpoint)]
    code, stdout = either.verify_cli()
    assert code == 1
    assert f"checkpoint {checkpoint}: truncated" in stdout


def test_an_entry_edited_and_the_chain_recomputed_fails_the_checkpoint_and_its_mac(
    either: Journal,
) -> None:
    entries = either.rows()
    target = next(e for e in entries if e.case_id == HELD and e.kind == "decision.recorded")
    forged_payload = {**target.payload, "decision": {**target.payload["decision"], "x": 1}}
    forged = [
        e.model_copy(update={"payload": forged_payload}) if e.seq == target.seq else e
        for e in entries
    ]
    either.rewrite(forged)
    store = either.store()
    try:
        assert store.verify().ok  # every hash was recomputed: the chain holds
        # but the next run's walk begins at the entry the last run's walk reached, whose
        # hash is not the one it was verified with: the chain is broken there
        walked = verify_since_mark(store)
        assert not walked.ok and walked.first_broken_seq == len(entries)
        assert "refused" in walked.detail
    finally:
        store.close()
    found = either.audit()
    assert ("consistency", str(either.checkpoints / f"{len(entries):020d}.checkpoint")) in found
    # Every entry from the edit on was re-hashed; the key vouched only for the old hashes.
    assert ("entry-mac", f"entry {target.seq}") in found
    # and the edited decision no longer hashes to the decisionId its reviews name it by
    assert ("decision-id", f"entry {target.seq}") in found
    assert {c for c, _ in found} == {"consistency", "entry-mac", "decision-id"}


def test_a_case_erased_and_the_chain_recomputed_fails_the_checkpoint(either: Journal) -> None:
    entries = either.rows()
    either.rewrite([e for e in entries if e.case_id != OTHER])
    either.sql("DELETE FROM cases WHERE case_id = :c", c=OTHER)
    either.sql("DELETE FROM monitoring WHERE case_id = :c", c=OTHER)
    found = either.audit()
    assert ("truncated", str(either.checkpoints / f"{len(entries):020d}.checkpoint")) in found
    first_erased = next(e.seq for e in entries if e.case_id == OTHER)
    assert ("entry-mac", f"entry {first_erased}") in found


def test_a_forged_release_with_a_correct_hash_is_named_and_never_acted_on(
    either: Journal,
) -> None:
    entries = either.rows()
    held = [e for e in entries if e.case_id == HELD]
    decision = next(e for e in held if e.kind == "decision.recorded")
    released = next(e for e in entries if e.kind == "keystone.released")
    payload = {**released.payload, "decisionSeq": decision.seq}
    seq, prev = len(entries) + 1, entries[-1].hash
    body = {
        "seq": seq,
        "caseId": HELD,
        "kind": "keystone.released",
        "payload": payload,
        "prevHash": prev,
        "recordedAt": entries[-1].recorded_at,
    }
    digest = entry_hash(prev, body)
    either.sql(
        "INSERT INTO journal_entries (seq, case_id, kind, payload, prev_hash, recorded_at, "
        "hash) VALUES (:seq, :c, 'keystone.released', :p, :prev, :at, :h)",
        seq=seq,
        c=HELD,
        p=dumps(payload, sort_keys=True),
        prev=prev,
        at=entries[-1].recorded_at,
        h=digest,
    )
    assert either.audit() == [("entry-mac", f"entry {seq}")]
    # The next run refuses to act on it: no notice goes out for the held case.
    store = either.store()
    try:
        assert store.verify().ok  # the hash is right: the chain alone would honour it
        with pytest.raises(JournalIntegrityError) as refused:
            either.pipeline(store).run(example_batch())
        assert (refused.value.check, refused.value.seq) == ("entry-mac", seq)
    finally:
        store.close()
    assert not (either.outbox / f"{HELD}.notice.json").exists()


def test_a_journal_verified_with_another_key_fails_naming_the_first_entry(
    journal: Journal, tmp_path: Path
) -> None:
    other = JournalKey(keygen(tmp_path / "other.key", "credit.test/journal"))
    assert journal.audit(other)[0] == ("entry-mac", "entry 1")
    assert journal.audit() == []


# ---------------------------------------------------------------------- edits the chain alone shows


def test_an_entry_edited_in_place_is_the_first_broken_link(journal: Journal) -> None:
    journal.sql("UPDATE journal_entries SET kind = 'keystone.released' WHERE seq = 4")
    assert journal.audit()[0] == ("chain", "entry 4")
    store = journal.store()
    try:
        with pytest.raises(JournalIntegrityError) as refused:
            journal.pipeline(store).work.lives()
        assert (refused.value.check, refused.value.seq) == ("chain", 4)
    finally:
        store.close()


def test_an_entry_deleted_from_the_middle_breaks_the_chain_and_the_checkpoint(
    journal: Journal,
) -> None:
    journal.sql("DELETE FROM journal_entries WHERE seq = 7")
    found = journal.audit()
    assert found[0] == ("chain", "entry 8")
    assert "consistency" in {c for c, _ in found} or "truncated" in {c for c, _ in found}


def test_a_stored_leaf_hash_edited_is_named(journal: Journal) -> None:
    journal.sql("UPDATE journal_entries SET leaf_hash = :h WHERE seq = 2", h="ab" * 32)
    assert journal.audit() == [("leaf-hash", "entry 2")]


# ---------------------------------------------------------------------- the side tables


def test_a_deleted_decision_row_is_named_and_no_second_decision_is_recorded(
    either: Journal,
) -> None:
    either.sql("DELETE FROM decisions WHERE case_id = :c", c=NOTIFIED)
    assert either.audit() == [("decision-row", f"case {NOTIFIED}")]
    store = either.store()
    try:
        with pytest.raises(JournalIntegrityError) as refused:
            store.decision_entry(NOTIFIED)  # the pipeline never reads the row unchecked
        assert refused.value.check == "decision-row"
        with pytest.raises(DecisionAlreadyRecordedError):
            store.record_decision(NOTIFIED, {"decision": {"decision": "approve"}})
    finally:
        store.close()


def test_a_decision_row_pointed_at_another_entry_is_named(journal: Journal) -> None:
    journal.sql("DELETE FROM decisions WHERE case_id = :o", o=OTHER)
    other = next(
        e.seq for e in journal.rows() if e.case_id == OTHER and e.kind == "decision.recorded"
    )
    journal.sql("UPDATE decisions SET seq = :s WHERE case_id = :c", s=other, c=NOTIFIED)
    found = journal.audit()
    assert ("decision-row", f"case {NOTIFIED}") in found
    assert ("decision-row", f"case {OTHER}") in found


def _stored_document(journal: Journal) -> dict[str, Any]:
    store = journal.store()
    try:
        return dict(store.get_case(NOTIFIED) or {})
    finally:
        store.close()


def test_an_edited_case_document_is_named_and_never_served(either: Journal) -> None:
    document = _stored_document(either)
    document["asOf"] = "2026-01-02"
    either.sql(
        "UPDATE cases SET document = :d WHERE case_id = :c",
        d=dumps(document, sort_keys=True),
        c=NOTIFIED,
    )
    assert either.audit() == [("case-document", f"case {NOTIFIED}")]
    store = either.store()
    try:  # not by a plain read, a batch read or a group's read
        for read in (
            lambda: store.get_case(NOTIFIED),
            lambda: store.case_files([NOTIFIED]),
            lambda: store.case_standing(NOTIFIED),
            lambda: store.group_commit([NOTIFIED]).__enter__(),
        ):
            with pytest.raises(JournalIntegrityError) as refused:
                read()
            assert refused.value.check == "case-document"
    finally:
        store.close()


def test_the_same_case_document_stored_in_other_bytes_is_still_served(either: Journal) -> None:
    """A stored document's own bytes hashing to the intake digest is the quick proof;
    bytes that differ (keys unsorted, spaces) but hold the same document still pass
    the full check, by a group's read as by a plain one: only an edit is refused."""
    document = _stored_document(either)
    reordered = dumps(dict(reversed(list(document.items()))))
    spaced = " " + reordered + "\n"
    assert spaced != dumps(document, sort_keys=True) and loads(spaced) == document
    either.sql("UPDATE cases SET document = :d WHERE case_id = :c", d=spaced, c=NOTIFIED)
    assert either.audit() == []
    store = either.store()
    try:
        assert store.get_case(NOTIFIED) == document
        with store.group_commit([NOTIFIED]):
            assert store.get_case(NOTIFIED) == document
        assert store.case_files([NOTIFIED])[NOTIFIED].document == document
        assert store.case_standing(NOTIFIED)[0] == document
    finally:
        store.close()


def test_an_untouched_case_document_is_proven_by_its_stored_bytes_alone(
    journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's reads hash the stored text; the canonical form is written again only
    when those bytes are not the ones intake hashed (the test above)."""
    from credit.journal import audit

    def refused(_: Any) -> bytes:
        raise AssertionError("the canonical form was written again")

    monkeypatch.setattr(audit, "canonical_bytes", refused)
    store = journal.store()
    try:
        assert store.get_case(NOTIFIED) is not None
        assert store.case_files([NOTIFIED])[NOTIFIED].document is not None
        with store.group_commit([NOTIFIED]):
            assert store.get_case(NOTIFIED) is not None
    finally:
        store.close()


def test_a_deleted_case_document_is_named(journal: Journal) -> None:
    journal.sql("DELETE FROM cases WHERE case_id = :c", c=NOTIFIED)
    assert journal.audit() == [("case-document", f"case {NOTIFIED}")]


def test_an_edited_monitoring_row_is_named_and_never_read(either: Journal) -> None:
    store = either.store()
    try:
        data = dict(store.get_monitoring(NOTIFIED) or {})
    finally:
        store.close()
    assert data, "the example case carries monitoring data"
    changed = {**data, next(iter(data)): "changed"}
    either.sql(
        "UPDATE monitoring SET data = :d WHERE case_id = :c",
        d=dumps(changed, sort_keys=True),
        c=NOTIFIED,
    )
    assert either.audit() == [("vault", f"case {NOTIFIED}")]
    store = either.store()
    try:
        with pytest.raises(JournalIntegrityError) as refused:
            store.get_monitoring(NOTIFIED)
        assert refused.value.check == "vault"
    finally:
        store.close()


def test_monitoring_rows_swapped_between_two_cases_are_named_for_both(journal: Journal) -> None:
    journal.sql("UPDATE monitoring SET case_id = 'swap' WHERE case_id = :c", c=NOTIFIED)
    journal.sql("UPDATE monitoring SET case_id = :n WHERE case_id = :o", n=NOTIFIED, o=OTHER)
    journal.sql("UPDATE monitoring SET case_id = :o WHERE case_id = 'swap'", o=OTHER)
    found = journal.audit()
    assert ("vault", f"case {NOTIFIED}") in found and ("vault", f"case {OTHER}") in found


def test_the_journal_holds_no_monitoring_value_only_a_keyed_seal(journal: Journal) -> None:
    store = journal.store()
    try:
        data = store.get_monitoring(NOTIFIED) or {}
        accepted = store.entries(NOTIFIED, kinds=["intake.accepted"])[0]
    finally:
        store.close()
    seal = accepted.payload["vaultSeals"][NOTIFIED]
    assert seal == journal.key.seal(NOTIFIED, data)
    text = dumps(accepted.payload)
    assert all(str(v) not in text for v in data.values() if isinstance(v, str) and len(v) > 3)


# ---------------------------------------------------------------------- the checkpoints


def test_a_checkpoint_file_replaced_by_a_forgery_is_named(journal: Journal) -> None:
    (path,) = sorted(journal.checkpoints.glob("*.checkpoint"))
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[2] = "A" * 43 + "="  # another root, same signature
    path.write_text("\n".join(lines), encoding="utf-8")
    assert journal.audit() == [("signature", str(path))]


# ---------------------------------------------------------------------- the outbox


def outbox_verify(journal: Journal) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["outbox", "verify", "--outbox", str(journal.outbox), "--db", journal.url]
    )
    return result.exit_code, result.stdout


def test_an_untouched_outbox_verifies(journal: Journal) -> None:
    code, stdout = outbox_verify(journal)
    assert code == 0 and stdout.startswith("ok: ")


def test_a_sent_notice_file_edited_afterwards_is_listed_and_never_read(journal: Journal) -> None:
    path = journal.outbox / f"{NOTIFIED}.notice.json"
    path.write_bytes(path.read_bytes().replace(b"notice", b"n0tice", 1))
    code, stdout = outbox_verify(journal)
    assert code == 1
    assert f"case {NOTIFIED}" in stdout and "the file was changed" in stdout
    store = journal.store()
    try:
        sent = store.entries(NOTIFIED, kinds=["notice.sent"])[0]
    finally:
        store.close()
    with pytest.raises(JournalIntegrityError) as refused:
        DirectoryOutbox(journal.outbox).read(NOTIFIED, sent.payload["noticeSha256"])
    assert refused.value.check == "notice-file"


def test_a_sent_notice_file_deleted_afterwards_is_listed(journal: Journal) -> None:
    (journal.outbox / f"{OTHER}.notice.json").unlink()
    code, stdout = outbox_verify(journal)
    assert code == 1
    assert f"case {OTHER}" in stdout and "missing" in stdout
