"""The main job a group at a time: each group of cases is taken in, underwritten and
reviewed in one durable commit; its notices are sent only once that commit stands; its
ethics findings follow in one more. Grouping changes how often the journal commits,
never what it records; an interruption loses at most the group under way, and the next
run does that group again with nothing doubled."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from credit.clock import FixedClock
from credit.journal import DECISION_KIND, InMemoryStore, open_store
from credit.journal.base import Store
from credit.notices import DirectoryOutbox
from credit.pipeline import NOTICE_SENT, BatchLine, Pipeline, read_batch, stream_batch
from credit.tools.server import ToolSession
from credit.underwriters.rules import RulesUnderwriter
from test_pipeline import batch, example_lines


def per_case(store: Store) -> dict[str, list[tuple[str, Any]]]:
    """Each case's entries in order, without what differs by design from run to run
    (turn ids, times), a reference to another entry (``decisionSeq``, ``decisionEntry``) given as
    that entry's case and place rather than its seq, which depends on how cases
    interleave; and a decision's content name (``decisionId``, which covers its turn's id)
    given as its decision entry's case and place."""
    entries = store.entries()
    where: dict[int, tuple[str | None, int]] = {}
    counts: Counter[str | None] = Counter()
    named: dict[str, tuple[str | None, int]] = {}
    for entry in entries:
        where[entry.seq] = (entry.case_id, counts[entry.case_id])
        if isinstance(entry.payload.get("decisionNumber"), int):  # a decision entry
            named[entry.payload["decisionId"]] = where[entry.seq]
        counts[entry.case_id] += 1

    def scrub(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: scrub(v, k) for k, v in value.items() if k not in ("turn", "recordedAt")}
        if isinstance(value, list):
            return [scrub(v, key) for v in value]
        if key.lower().endswith(("seq", "seqs", "entry")) and isinstance(value, int):
            return where.get(value, ("not an entry", value))
        if key == "decisionId" and isinstance(value, str):
            return named.get(value, ("not a decision", value))
        return value

    cases: dict[str, list[tuple[str, Any]]] = {}
    for entry in entries:
        if entry.case_id is not None:
            cases.setdefault(entry.case_id, []).append((entry.kind, scrub(entry.payload)))
    return cases


def _run(path: Path, lines: list[BatchLine], group_size: int) -> tuple[Any, Any]:
    with open_store(f"sqlite:///{path}.db") as store:
        summary = Pipeline(store, DirectoryOutbox(path), group_size=group_size).run(lines)
        assert store.verify().ok
        return summary, per_case(store)


@pytest.mark.parametrize("group_size", [1, 7, 40])
def test_grouping_changes_when_the_journal_commits_never_what_it_records(
    tmp_path: Path, group_size: int
) -> None:
    lines = batch(40)
    whole, whole_cases = _run(tmp_path / "whole", lines, 1000)
    grouped, grouped_cases = _run(tmp_path / f"groups-of-{group_size}", lines, group_size)
    assert whole_cases == grouped_cases  # every case's entries, in order, the same
    for counted in ("cases", "decided", "released", "held", "notices_sent", "ethics_findings"):
        assert getattr(grouped, counted) == getattr(whole, counted), counted
    assert grouped.states == whole.states and grouped.outcomes == whole.outcomes
    assert whole.decided == 40 and whole.notices_sent > 0  # the batch exercises notices


class Interrupted(BaseException):
    """The process going away mid-group (KeyboardInterrupt's kind: not an Exception,
    so no turn records it as a failure)."""


class StopsAt(RulesUnderwriter):
    """The rules underwriter, until the process dies as its n-th turn starts (turns
    come in the batch's order)."""

    def __init__(self, turn: int) -> None:
        super().__init__()
        self.turns_left = turn

    async def drive(self, session: ToolSession) -> str:
        self.turns_left -= 1
        if self.turns_left == 0:
            raise Interrupted
        return await super().drive(session)


def test_an_interruption_loses_only_the_group_under_way_and_the_next_run_does_it_again(
    tmp_path: Path,
) -> None:
    lines = batch(12)
    ids = [line.raw["caseId"] for line in lines]
    outbox = DirectoryOutbox(tmp_path / "outbox")
    with open_store(f"sqlite:///{tmp_path / 'journal'}.db") as store:
        with pytest.raises(Interrupted):
            Pipeline(store, outbox, underwriter=StopsAt(8), group_size=3).run(lines)
        # Groups 1 and 2 (six cases) stand, decided, reviewed and notified; of group 3,
        # under way when the process died, nothing was recorded: not even its intake.
        assert sorted(store.case_ids()) == sorted(ids[:6])
        decided = {e.case_id for e in store.entries(kinds=[DECISION_KIND])}
        assert decided == set(ids[:6])
        assert store.verify().ok
        sent_before = {e.case_id for e in store.entries(kinds=[NOTICE_SENT])}

        again = Pipeline(store, outbox, group_size=3).run(lines)
        assert again.decided == 12 and not again.failures and not again.failed_cases
        assert again.resumed == 6 and again.taken_in == 6
        decisions = Counter(e.case_id for e in store.entries(kinds=[DECISION_KIND]))
        assert sorted(decisions) == sorted(ids) and set(decisions.values()) == {1}
        sent = Counter(e.case_id for e in store.entries(kinds=[NOTICE_SENT]))
        assert set(sent.values()) <= {1} and sent_before <= set(sent)
        assert store.verify().ok
        interrupted = per_case(store)
    with open_store(f"sqlite:///{tmp_path / 'reference'}.db") as reference:
        Pipeline(reference, DirectoryOutbox(tmp_path / "reference")).run(lines)
        assert interrupted == per_case(reference)  # as if it had never been interrupted


def test_a_notice_is_sent_only_after_its_release_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.casework

    lines = batch(20)
    db = tmp_path / "journal.db"
    with open_store(f"sqlite:///{db}") as store:
        durable: list[bool] = []
        real = credit.casework.CaseWork._verify_notice

        def notify(self: Any, life: Any) -> Any:
            # Another connection (another process, after a crash) already sees the
            # release the notice is sent on.
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as other:
                (released,) = other.execute(
                    "SELECT count(*) FROM journal_entries WHERE case_id = ? AND kind = ?",
                    (life.case_id, "keystone.released"),
                ).fetchone()
            durable.append(released == 1)
            return real(self, life)

        monkeypatch.setattr(credit.casework.CaseWork, "_verify_notice", notify)
        summary = Pipeline(store, DirectoryOutbox(tmp_path / "outbox"), group_size=5).run(lines)
    assert summary.notices_sent > 0 and len(durable) == summary.notices_sent
    assert all(durable)


def counted_commits(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The store's group commits, one item each, from now on."""
    commits: list[int] = []
    real = store.group_commit

    @contextmanager
    def counted(case_ids: Any = (), *, deferred: bool = False) -> Iterator[None]:
        commits.append(1)
        with real(case_ids, deferred=deferred):
            yield

    monkeypatch.setattr(store, "group_commit", counted)
    return commits


def test_a_groups_notices_take_two_commits_not_one_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per group: its intake and turns; their reviews; its notices' verifications;
    their sendings; its ethics findings. Five commits, however many notices it
    sends."""
    lines = batch(30)
    with open_store(f"sqlite:///{tmp_path / 'journal'}.db") as store:
        commits = counted_commits(store, monkeypatch)
        pipeline = Pipeline(store, DirectoryOutbox(tmp_path / "outbox"), group_size=15)
        summary = pipeline.run(lines)
    assert summary.notices_sent > 4  # both groups send several
    assert len(commits) == 2 * 5
    # no notice owed, no commit for notices (then one, to read the cases, when none of
    # them owes a notice: nothing to send, nothing to journal as sent)
    with open_store(f"sqlite:///{tmp_path / 'journal'}.db") as again:
        commits = counted_commits(again, monkeypatch)
        work = Pipeline(again, DirectoryOutbox(tmp_path / "outbox")).work
        work.send_notices([])
        assert commits == []
        work.send_notices([line.raw["caseId"] for line in lines])  # all notified already
        assert len(commits) == 1


class Crash(BaseException):
    """The process going away between two steps of the notices (not an Exception, so
    no step records it as a failure)."""


def crashed_at(step: str, store: Store, outbox: DirectoryOutbox, **options: Any) -> None:
    """A run of 20 cases whose process dies as the notices reach ``step`` (a method
    of CaseWork)."""
    import credit.casework

    with pytest.MonkeyPatch.context() as patch:

        def crash(*args: Any) -> Any:
            raise Crash

        patch.setattr(credit.casework.CaseWork, step, crash)
        with pytest.raises(Crash):
            Pipeline(store, outbox, **options).run(batch(20))


def outbox_files(outbox: DirectoryOutbox) -> dict[str, bytes]:
    return {
        p.name.removesuffix(".notice.json"): p.read_bytes()
        for p in outbox.root.glob("*.notice.json")
    }


def test_notices_a_crash_left_in_the_outbox_unjournaled_are_journaled_sent_once_a_later_day(
    tmp_path: Path,
) -> None:
    lines = batch(20)
    outbox = DirectoryOutbox(tmp_path / "outbox")
    clock = FixedClock(dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC))
    with open_store(f"sqlite:///{tmp_path / 'journal'}.db") as store:
        crashed_at("_journal_delivery", store, outbox, clock=clock)
        verified = store.entries(kinds=["notice.verified"])
        files = outbox_files(outbox)
        assert verified and not store.entries(kinds=[NOTICE_SENT])
        assert set(files) == {e.case_id for e in verified}  # in the outbox, not journaled

        clock.advance(days=3)  # a notice rendered today would differ from the one sent
        again = Pipeline(store, outbox, clock=clock).run(lines)
        assert again.notices_sent == len(verified) and not again.failed_cases
        sent = store.entries(kinds=[NOTICE_SENT])
        assert Counter(e.case_id for e in sent) == Counter(e.case_id for e in verified)
        assert store.entries(kinds=["notice.verified"]) == verified  # none rendered again
        by_case = {e.case_id: e for e in verified}
        for entry in sent:
            assert entry.payload["noticeSha256"] == by_case[entry.case_id].payload["noticeSha256"]
            assert entry.payload["noticeDate"] == "2026-12-01"
        assert outbox_files(outbox) == files  # exactly the bytes verified and sent, untouched
        assert store.verify().ok


def test_a_crash_before_the_verified_notices_reach_the_outbox_sends_each_on_the_next_run(
    tmp_path: Path,
) -> None:
    lines = batch(20)
    outbox = DirectoryOutbox(tmp_path / "outbox")
    with open_store(f"sqlite:///{tmp_path / 'journal'}.db") as store:
        crashed_at("_deliver_all", store, outbox)
        first = store.entries(kinds=["notice.verified"])
        assert first and not outbox_files(outbox)

        again = Pipeline(store, outbox).run(lines)
        sent = Counter(e.case_id for e in store.entries(kinds=[NOTICE_SENT]))
        assert set(sent) == {e.case_id for e in first} and set(sent.values()) == {1}
        assert set(outbox_files(outbox)) == set(sent) and again.notices_sent == len(sent)
        assert store.verify().ok


def test_an_outbox_that_fails_whole_fails_each_notice_of_the_group_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outbox itself failing (not one notice refused) fails each notice it was
    given, each journaled as a failed notice step and each a person's work item; the
    run goes on."""

    def gone(self: DirectoryOutbox, notices: Any) -> Any:
        raise OSError("the outbox's disk is gone")

    lines = batch(20)
    outbox = DirectoryOutbox(tmp_path / "outbox")
    with open_store(f"sqlite:///{tmp_path / 'journal'}.db") as store:
        with monkeypatch.context() as patch:
            patch.setattr(DirectoryOutbox, "send_all", gone)
            summary = Pipeline(store, outbox).run(lines)
        assert summary.decided == 20
        verified = {e.case_id for e in store.entries(kinds=["notice.verified"])}
        failed = [
            e
            for e in store.entries(kinds=["turn.failed"])
            if "the outbox's disk is gone" in str(e.payload)
        ]
        assert verified and {e.case_id for e in failed} == verified
        assert not store.entries(kinds=[NOTICE_SENT]) and not outbox_files(outbox)

        work = Pipeline(store, outbox).work
        for case_id in verified:  # each a person's work item, on the clock
            item = work.life(case_id).item
            assert item is not None and item.deadline is not None
        assert store.verify().ok


def test_a_streamed_batch_reads_the_same_lines_as_it_goes_and_counts_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "batch.jsonl"
    text = "\n".join([*example_lines(5), "{not json", "", *example_lines(2, start=5)])
    path.write_text(text, encoding="utf-8")  # no newline after the last line
    lines, total = stream_batch(path)
    assert total == 9  # every line, the blank and the unterminated last one too
    assert not isinstance(lines, list)  # read as it is needed
    assert [(x.line, x.raw, str(x.error)) for x in lines] == [
        (x.line, x.raw, str(x.error)) for x in read_batch(path)
    ]
    path.write_text(text + "\n", encoding="utf-8")
    assert stream_batch(path)[1] == 9


def test_a_batch_that_cannot_be_opened_is_named_before_anything_runs(tmp_path: Path) -> None:
    from credit.errors import InputError

    missing = tmp_path / "missing.jsonl"
    with pytest.raises(InputError, match=r"missing\.jsonl") as caught:
        stream_batch(missing)
    assert "cannot read" in str(caught.value)


@pytest.mark.parametrize("size", [0, -1])
def test_a_group_must_hold_at_least_one_case(size: int, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="group_size must be at least 1"):
        Pipeline(InMemoryStore(), DirectoryOutbox(tmp_path / "outbox"), group_size=size)


def test_a_run_tunes_the_garbage_collector_while_it_works_and_restores_it_after(
    tmp_path: Path,
) -> None:
    import gc

    from credit.pipeline import YOUNG_COLLECTION

    seen: list[tuple[tuple[int, int, int], int]] = []

    class Watching(RulesUnderwriter):
        async def drive(self, session: ToolSession) -> str:
            seen.append((gc.get_threshold(), gc.get_freeze_count()))
            return await super().drive(session)

    before = gc.get_threshold()
    store = InMemoryStore()
    Pipeline(store, DirectoryOutbox(tmp_path / "a"), underwriter=Watching()).run(batch(3))
    assert seen and all(t == (YOUNG_COLLECTION, *before[1:]) and f > 0 for t, f in seen)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    with pytest.raises(Interrupted):
        Pipeline(store, DirectoryOutbox(tmp_path / "b"), underwriter=StopsAt(2)).run(
            batch(3, start=3)
        )
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
