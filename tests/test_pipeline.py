"""The main job, governed end to end: intake, the underwriter through the tools, the
Keystone hold and both reviews, release, notice, verify, send, each step journaled;
resumable after a SIGKILL with nothing lost or doubled."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from credit.canonical import dumps, loads
from credit.governance.refusal import (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_UNVERIFIED_NOTICE_SEND,
    TYPED_REFUSAL_PREFIX,
    is_typed_refusal,
)
from credit.guardrails.verifier import Verifier
from credit.journal import DECISION_KIND, InMemoryStore, open_store
from credit.journal.base import Store
from credit.kinds import REVIEW_KINDS
from credit.notices import DirectoryOutbox, InMemoryOutbox
from credit.pipeline import (
    NOTICE_BLOCKED,
    NOTICE_SENT,
    NOTICE_VERIFIED,
    BatchLine,
    Pipeline,
    read_batch,
)
from credit.tools.governed import CaseTools
from credit.underwriters.runtime import SAFETY_REFUSAL, TurnContext
from test_journal_store import pg_schema

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "cases.jsonl"
CREDIT = Path(sys.executable).with_name("credit")


def example_lines(n: int, *, start: int = 0) -> list[str]:
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()
    return lines[start : start + n]


def batch(n: int, *, start: int = 0) -> list[BatchLine]:
    return [BatchLine(i, loads(text)) for i, text in enumerate(example_lines(n, start=start), 1)]


def notice_cases(store: Store, case_ids: list[str]) -> list[str]:
    """Cases whose recorded decision is a decline or counteroffer."""
    found = []
    for case_id in case_ids:
        entry = store.decision_entry(case_id)
        if entry is not None and entry.payload["decision"]["decision"] in (
            "decline",
            "counteroffer",
        ):
            found.append(case_id)
    return found


@pytest.fixture
def memory_run() -> Iterator[tuple[InMemoryStore, InMemoryOutbox, Any]]:
    store = InMemoryStore()
    outbox = InMemoryOutbox()
    pipeline = Pipeline(store, outbox)
    lines = batch(40)
    summary = pipeline.run(lines, source="examples")
    yield store, outbox, summary


def test_a_governed_run_decides_every_case_once_and_its_journal_verifies(
    memory_run: tuple[InMemoryStore, InMemoryOutbox, Any],
) -> None:
    store, _, summary = memory_run
    decisions = Counter(e.case_id for e in store.entries(kinds=[DECISION_KIND]))
    assert len(decisions) == 40 and set(decisions.values()) == {1}
    assert summary.decided == 40 and summary.failures == []
    assert summary.chain is not None and summary.chain.ok
    assert store.verify().ok


def test_the_reviewers_of_a_run_read_each_recorded_decision_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Backstop, Equipoise (its review and its comparison pool) and the ethics review
    # each read the recorded decision: one parse of the entry serves them all
    from credit import models
    from credit.kept import KeptPer

    parsed: Counter[str | None] = Counter()
    real = models.parse_decision

    def counted(entry: Any) -> Any:
        parsed[entry.case_id] += 1
        return real(entry.payload.get("decision"), case_id=entry.case_id)

    monkeypatch.setattr(models, "_recorded", KeptPer(counted))
    with open_store(f"sqlite:///{tmp_path / 'run.db'}") as store:
        summary = Pipeline(store, DirectoryOutbox(tmp_path / "outbox")).run(batch(30))
        assert summary.decided == 30 and summary.failures == []
        reviewed = {e.case_id for e in store.entries(kinds=list(REVIEW_KINDS))}
    assert len(reviewed) == 30
    assert set(parsed) == reviewed and set(parsed.values()) == {1}


def test_every_step_of_a_released_decline_is_journaled_in_order(
    memory_run: tuple[InMemoryStore, InMemoryOutbox, Any],
) -> None:
    store, outbox, _ = memory_run
    sent = {s.case_id for s in outbox.sent()}
    assert sent, "the first 40 bundled cases include released declines or counteroffers"
    case_id = sorted(sent)[0]
    kinds = [e.kind for e in store.entries(case_id)]
    expected_order = [
        "intake.accepted",
        DECISION_KIND,
        "underwriter.turn",
        "review.equipoise",
        "review.backstop",
        "keystone.released",
        NOTICE_VERIFIED,
        NOTICE_SENT,
    ]
    positions = [kinds.index(kind) for kind in expected_order]
    assert positions == sorted(positions), kinds


def test_only_released_declines_and_counteroffers_get_a_notice_and_each_exactly_one(
    memory_run: tuple[InMemoryStore, InMemoryOutbox, Any],
) -> None:
    store, outbox, summary = memory_run
    case_ids = store.case_ids()
    sent = Counter(s.case_id for s in outbox.sent())
    assert set(sent.values()) <= {1}
    for case_id in notice_cases(store, case_ids):
        released = bool(store.entries(case_id, kinds=["keystone.released"]))
        assert (case_id in sent) == released, case_id
    assert summary.notices_sent == len(sent) == summary.notices_verified
    assert summary.held + summary.released + summary.rejected == summary.decided


def test_a_second_run_over_the_same_batch_changes_nothing() -> None:
    store = InMemoryStore()
    outbox = InMemoryOutbox()
    lines = batch(25)
    Pipeline(store, outbox).run(lines)
    before = store.entries()
    again = Pipeline(store, outbox).run(lines)
    assert store.entries() == before
    assert again.resumed == 25 and again.taken_in == 0
    assert len(outbox.sent()) == again.notices_sent


def test_bad_lines_are_listed_with_their_line_and_field_and_the_rest_are_decided() -> None:
    good = example_lines(3)
    unknown = json.loads(good[1])
    unknown["caseId"] = "C-BAD-FIELD"
    unknown["application"]["downPayment"] = "1000.00"
    texts = [good[0], "{not json", json.dumps(unknown), good[2]]
    lines = [
        BatchLine(i, loads(t)) if t.startswith('{"') else BatchLine(i, None, None)
        for i, t in enumerate(texts, 1)
    ]
    from credit.errors import InputError

    lines[1] = BatchLine(2, None, InputError("not valid JSON", line=2, source="b.jsonl"))
    store = InMemoryStore()
    summary = Pipeline(store, InMemoryOutbox()).run(lines, source="b.jsonl")
    assert summary.decided == 2
    messages = [str(f) for f in summary.failures]
    assert "b.jsonl, line 2: not valid JSON" in messages[0]
    assert "line 3, case C-BAD-FIELD, field application.downPayment" in messages[1]
    assert store.entries(case_id="C-BAD-FIELD") == []


def test_a_prohibited_field_in_the_application_is_moved_out_of_reach_and_the_case_decided() -> None:
    raw = loads(example_lines(1)[0])
    raw["application"]["dateOfBirth"] = "1961-04-02"
    store = InMemoryStore()
    summary = Pipeline(store, InMemoryOutbox()).run([BatchLine(1, raw)])
    case_id = raw["caseId"]
    assert summary.decided == 1
    moved = store.entries(case_id, kinds=["intake.moved"])
    assert moved and "application.dateOfBirth" in dumps(moved[0].payload)
    assert "1961-04-02" not in dumps([e.to_wire() for e in store.entries()])
    assert "dateOfBirth" not in dumps(store.get_case(case_id))


class CitesAge:
    """An underwriter that records a decision citing a prohibited basis."""

    name = "cites-age"

    async def run(self, tools: CaseTools, context: TurnContext) -> str:
        from credit.models import parse_case
        from credit.policy import default_policy
        from credit.tools.server import open_session
        from credit.underwriting import decide_case

        document = tools.store.get_case(context.case_id)
        assert document is not None
        decision = decide_case(parse_case(dict(document)), default_policy()).decision
        wire = decision.to_wire()
        wire["factors"] = [*wire["factors"], "Declined because of your age."]
        async with open_session(tools) as session:
            result = await session.call("record_decision", {"decision": json.loads(dumps(wire))})
        return str(result)


def test_a_decision_citing_a_prohibited_basis_is_refused_typed_and_not_decided_again() -> None:
    store = InMemoryStore()
    lines = batch(1)
    summary = Pipeline(store, InMemoryOutbox(), underwriter=CitesAge()).run(lines)
    case_id = lines[0].raw["caseId"]
    assert summary.decided == 0 and summary.refused == 1
    refusal = store.entries(case_id, kinds=[SAFETY_REFUSAL])[0]
    assert refusal.payload["surface"] == TYPED_REFUSAL_PREFIX + (
        BOUNDARY_DECISION_CITES_PROHIBITED_BASIS
    )
    turn = store.entries(case_id, kinds=["underwriter.turn"])[0]
    assert not is_typed_refusal(turn.payload["surface"])  # the audited surface is unchanged
    entries = len(store.entries())
    Pipeline(store, InMemoryOutbox(), underwriter=CitesAge()).run(lines)
    assert len(store.entries()) == entries


def test_a_notice_that_fails_verification_is_blocked_with_a_typed_refusal_never_sent() -> None:

    def always_fails(subject: Any) -> tuple[bool, str]:
        return False, "forced failure for the test"

    broken = Verifier(checks={"V5": always_fails})
    store = InMemoryStore()
    outbox = InMemoryOutbox()
    summary = Pipeline(store, outbox, verifier=broken).run(batch(40))
    assert outbox.sent() == ()
    assert summary.notices_blocked > 0 and summary.notices_sent == 0
    blocked = store.entries(kinds=[NOTICE_BLOCKED])[0]
    refusal = store.entries(blocked.case_id, kinds=[SAFETY_REFUSAL])[0]
    assert refusal.payload["surface"] == TYPED_REFUSAL_PREFIX + BOUNDARY_UNVERIFIED_NOTICE_SEND


# ---------------------------------------------------------------- crash safety


def _count(db: Path, sql: str) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute(sql).fetchone()[0])
    except sqlite3.Error:
        return 0


def _run_cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(CREDIT), "run", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("stage", "query", "threshold"),
    [
        ("underwriting", "SELECT count(*) FROM decisions", 8),
        ("sending notices", "SELECT count(*) FROM journal_entries WHERE kind='notice.sent'", 1),
    ],
)
def test_a_run_killed_with_sigkill_and_started_again_finishes_the_batch(
    tmp_path: Path, stage: str, query: str, threshold: int
) -> None:
    n = 45
    cases = tmp_path / "batch.jsonl"
    cases.write_text("\n".join(example_lines(n)) + "\n", encoding="utf-8")
    db = tmp_path / "journal.db"
    env = {**os.environ, "CREDIT_DATABASE_URL": f"sqlite:///{db}"}
    # Groups of 4: the kill lands after some groups are durable and before the last.
    args = [str(cases), "--outbox", str(tmp_path / "outbox"), "--group-size", "4"]
    proc = _run_cli(args, env, tmp_path)
    deadline = time.monotonic() + 120
    while _count(db, query) < threshold:
        assert proc.poll() is None, f"the run ended before it reached {stage}"
        assert time.monotonic() < deadline, f"the run never reached {stage}"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    decided_before = _count(db, "SELECT count(*) FROM decisions")
    assert decided_before < n or stage == "sending notices"

    again = subprocess.run(
        [str(CREDIT), "run", *args], cwd=tmp_path, env=env, capture_output=True, timeout=300
    )
    assert again.returncode == 0, again.stderr.decode()

    with open_store(f"sqlite:///{db}", create=False) as store:
        assert store.verify().ok
        decisions = Counter(e.case_id for e in store.entries(kinds=[DECISION_KIND]))
        ids = [json.loads(line)["caseId"] for line in example_lines(n)]
        assert sorted(decisions) == sorted(ids)  # no decided case lost
        assert set(decisions.values()) == {1}  # none decided twice
        sent = Counter(e.case_id for e in store.entries(kinds=[NOTICE_SENT]))
        assert set(sent.values()) <= {1}
        for case_id in notice_cases(store, ids):
            if store.entries(case_id, kinds=["keystone.released"]):
                assert sent[case_id] == 1, case_id
    outbox_files = sorted(p.name for p in (tmp_path / "outbox").glob("*.notice.json"))
    assert outbox_files == sorted(f"{c}.notice.json" for c in sent)


# ---------------------------------------------------------------- PostgreSQL


def test_the_governed_run_works_the_same_on_postgresql(tmp_path: Path) -> None:
    with pg_schema() as (url, schema), open_store(url, schema=schema) as store:
        summary = Pipeline(store, DirectoryOutbox(tmp_path / "outbox")).run(batch(20))
        assert summary.decided == 20 and summary.chain is not None and summary.chain.ok
        decisions = Counter(e.case_id for e in store.entries(kinds=[DECISION_KIND]))
        assert set(decisions.values()) == {1}


def test_read_batch_reads_exact_decimals_and_names_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text(example_lines(1)[0] + "\n\n{oops\n", encoding="utf-8")
    lines = read_batch(path)
    assert [item.line for item in lines] == [1, 3]
    assert lines[0].error is None and lines[1].error is not None
    assert f"{path}, line 3: not valid JSON" in str(lines[1].error)
