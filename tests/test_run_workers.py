"""The main job on several processes: ``credit run --workers N``.

Each worker takes the lines whose case id falls to it and runs them as a run does, on
the one journal, its groups' work done without the journal's write lock (deferred
group commits, ADR-0002). Whatever the workers, each case is taken in and decided
once, stands at a final action or as one open work item, every review can be done
again from the journal, and a worker killed half way loses at most the group it had
under way, which a rerun finishes. A group whose case another writer moved meanwhile
is done again, and counted once."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import credit.pipeline
from credit.casework import PENDING_MARK
from credit.cli import app
from credit.clock import FixedClock
from credit.errors import InputError
from credit.governance.equipoise import POOL_MARK
from credit.governance.onramp import intake
from credit.governance.replay import replay_reviews
from credit.journal import (
    CONFLICT_ATTEMPTS,
    GroupConflictError,
    InMemoryStore,
    JournalError,
    SqlStore,
    open_store,
)
from credit.journal.base import Store
from credit.journal.checkpoint import parse_checkpoint
from credit.journal.merkle import root
from credit.kinds import DECISION_RECORDED, INTAKE_ACCEPTED, NOTICE_SENT
from credit.notices import DirectoryOutbox
from credit.pipeline import (
    BatchLine,
    FailedCase,
    Pipeline,
    RunSummary,
    share_of,
)
from test_casework import TODAY
from test_journal_pages import _cases
from test_journal_signing import LeafCount
from test_journal_store import pg_schema

BACKENDS = ("sqlite", "postgresql")
CASES = 48
GROUP = 6  # small groups: many commits, the workers' interleaved


@contextmanager
def journal(backend: str, tmp_path: Path, name: str = "journal") -> Iterator[SqlStore]:
    """A fresh journal on the backend, opened."""
    if backend == "sqlite":
        with open_store(f"sqlite:///{tmp_path / name}.db", clock=FixedClock(TODAY)) as store:
            yield store
    else:
        with (
            pg_schema() as (url, schema),
            open_store(url, schema=schema, clock=FixedClock(TODAY)) as store,
        ):
            yield store


def lines(n: int = CASES, prefix: str = "W") -> list[BatchLine]:
    return [BatchLine(i, d) for i, d in enumerate(_cases(8080, n, prefix), start=1)]


def pipeline(store: Store, tmp_path: Path, checkpoints: Path | None = None) -> Pipeline:
    return Pipeline(
        store,
        DirectoryOutbox(tmp_path / "outbox"),
        clock=FixedClock(TODAY),
        group_size=GROUP,
        checkpoints=checkpoints,
    )


def kinds_per_case(store: Store, kind: str) -> Counter[str]:
    return Counter(str(e.case_id) for e in store.entries(kinds=[kind]))


def assert_each_case_once(store: Store, batch: Sequence[BatchLine]) -> None:
    ids = {line.raw["caseId"] for line in batch}
    for kind in (INTAKE_ACCEPTED, DECISION_RECORDED):
        counted = kinds_per_case(store, kind)
        assert set(counted) == ids and set(counted.values()) == {1}, kind
    assert set(kinds_per_case(store, NOTICE_SENT).values()) <= {1}


def decisions(store: Store) -> dict[str, Any]:
    return {str(e.case_id): e.payload["decision"] for e in store.entries(kinds=[DECISION_RECORDED])}


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_workers_decide_each_case_once_as_one_worker_decides_it(
    backend: str, tmp_path: Path
) -> None:
    batch = lines()
    with journal(backend, tmp_path, "one") as store:
        alone = pipeline(store, tmp_path / "a").run(batch)
        decided_alone = decisions(store)
    with journal(backend, tmp_path, "two") as store:
        shared = pipeline(store, tmp_path / "b", tmp_path / "checkpoints").run_workers(
            lambda: batch, 2, total=len(batch)
        )
        assert_each_case_once(store, batch)
        # the rules underwriter decides a case from the case alone: the same
        # decision, whichever worker took it and whatever it was compared with
        assert decisions(store) == decided_alone
        assert shared.cases == alone.cases == CASES
        assert shared.taken_in == shared.decided == CASES and shared.failures == []
        assert shared.outcomes == alone.outcomes
        assert shared.final + shared.open_items == CASES
        assert shared.chain is not None and shared.chain.ok
        assert shared.checkpoint is not None and shared.checkpoint.is_file()
        # every review the workers wrote is done again from the journal alike
        replayed = replay_reviews(store, sorted(decisions(store)))
        assert len(replayed) == 2 * CASES
        assert {r.status for r in replayed} == {"same"}
        # the run kept its marks: a rerun journals nothing more
        head = store.tree_head()[0]
        again = pipeline(store, tmp_path / "b").run_workers(lambda: batch, 2)
        assert store.tree_head()[0] == head
        assert again.resumed == CASES and again.taken_in == 0
        assert {PENDING_MARK, POOL_MARK} <= set(store.mark_names())


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_run_s_checkpoint_signs_the_whole_tree_the_workers_grew_without_reading_it_again(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = lines(24)
    with journal(backend, tmp_path) as store:
        count = LeafCount(store, monkeypatch)  # this process's reads, not the workers'
        run = pipeline(store, tmp_path, tmp_path / "checkpoints").run_workers(lambda: batch, 2)
        assert run.checkpoint is not None and run.chain is not None and run.chain.ok
        assert count.read == 0
        signed = parse_checkpoint(run.checkpoint.read_bytes())
        with open_store(store.url, schema=store.schema) as fresh:  # every leaf read again
            leaves = fresh.leaf_hashes()
        assert signed.size == len(leaves) == run.chain.entries
        assert signed.root_hash == root(leaves)


def test_both_workers_take_lines_and_each_case_goes_to_one() -> None:
    batch = lines()
    shares = Counter(share_of(line, 2) for line in batch)
    assert set(shares) == {0, 1} and min(shares.values()) >= CASES // 4


@given(st.text(min_size=1, max_size=40), st.integers(min_value=1, max_value=16))
def test_a_case_id_falls_to_one_worker_whichever_its_line(case_id: str, workers: int) -> None:
    one, two = BatchLine(1, {"caseId": case_id}), BatchLine(99, {"caseId": case_id, "x": 1})
    assert 0 <= share_of(one, workers) < workers
    assert share_of(one, workers) == share_of(two, workers)


def test_a_line_without_a_case_id_goes_to_the_first_worker() -> None:
    unreadable = BatchLine(3, None, InputError("not JSON", line=3))
    assert share_of(unreadable, 4) == 0
    assert share_of(BatchLine(4, {"caseId": 7}), 4) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_worker_killed_half_way_loses_only_its_group_and_a_rerun_finishes_the_batch(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = lines()
    real_worker = Pipeline._worker

    def dying(self: Pipeline, batch_: Any, worker: int, *rest: Any) -> None:
        if worker == 1:
            real_underwrite = self._underwrite
            calls = 0

            async def underwrite(case_ids: Sequence[str]) -> list[InputError]:
                nonlocal calls
                calls += 1
                if calls == 3:  # two groups committed, the third half done
                    await real_underwrite(case_ids[:2])
                    os.kill(os.getpid(), signal.SIGKILL)
                return await real_underwrite(case_ids)

            self._underwrite = underwrite  # type: ignore[method-assign]
        real_worker(self, batch_, worker, *rest)

    with journal(backend, tmp_path) as store:
        with monkeypatch.context() as patched:
            patched.setattr(Pipeline, "_worker", dying)
            with pytest.raises(JournalError, match=r"worker 2 of 2: .*exit code -9"):
                pipeline(store, tmp_path).run_workers(lambda: batch, 2)
        assert store.verify().ok
        taken = kinds_per_case(store, INTAKE_ACCEPTED)
        mine = [line.raw["caseId"] for line in batch if share_of(line, 2) == 1]
        assert sum(taken[c] for c in mine) == 2 * GROUP  # its third group left nothing
        assert set(taken.values()) == {1}
        # the rerun finishes the batch: nothing lost, nothing twice
        summary = pipeline(store, tmp_path).run_workers(lambda: batch, 2)
        assert summary.chain is not None and summary.chain.ok
        assert_each_case_once(store, batch)
        assert summary.taken_in == CASES - len(taken)
        assert summary.final + summary.open_items == CASES


def test_a_worker_that_dies_is_named_with_how_it_ended_even_if_reaped_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # its answer pipe closes before the process has ended: the run waits for it to
    # end, so the error says how (read too early, a loaded machine said "None")
    batch = lines()
    real_worker = Pipeline._worker

    def lingering(self: Pipeline, batch_: Any, worker: int, workers: int, *rest: Any) -> None:
        if worker == 1:
            send = rest[1]
            send.close()  # the parent reads end of file now
            time.sleep(0.5)
            os._exit(3)
        real_worker(self, batch_, worker, workers, *rest)

    with journal("sqlite", tmp_path) as store:
        with monkeypatch.context() as patched:
            patched.setattr(Pipeline, "_worker", lingering)
            with pytest.raises(JournalError, match=r"worker 2 of 2: it ended with exit code 3\."):
                pipeline(store, tmp_path).run_workers(lambda: batch, 2)
        assert store.verify().ok


def test_a_group_whose_case_another_writer_took_in_is_done_again_and_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = lines(12)
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    with open_store(url, clock=FixedClock(TODAY)) as store, open_store(url) as other:
        run = pipeline(store, tmp_path)
        real_underwrite = run._underwrite
        attempts: list[Sequence[str]] = []

        async def underwrite(case_ids: Sequence[str]) -> list[InputError]:
            attempts.append(list(case_ids))
            if len(attempts) == 1:  # another writer takes the group's third case in
                assert intake(batch[2].raw, other).taken_in
            return await real_underwrite(case_ids)

        monkeypatch.setattr(run, "_underwrite", underwrite)
        summary = run.run(batch)
        assert len(attempts) == 3  # the first group twice, then the second
        assert attempts[0] == attempts[1]
        assert summary.cases == 12 and summary.decided == 12
        assert (summary.taken_in, summary.resumed) == (11, 1)
        assert_each_case_once(store, batch)
        assert summary.chain is not None and summary.chain.ok


def test_a_group_whose_cases_keep_moving_stops_the_run_having_written_nothing_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = lines(4)
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    with open_store(url, clock=FixedClock(TODAY)) as store, open_store(url) as other:
        run = pipeline(store, tmp_path)
        real_underwrite = run._underwrite
        tries = 0

        async def underwrite(case_ids: Sequence[str]) -> list[InputError]:
            nonlocal tries
            tries += 1
            other.append(case_ids[0], "note.added", {"try": tries})
            return await real_underwrite(case_ids)

        monkeypatch.setattr(run, "_underwrite", underwrite)
        with pytest.raises(GroupConflictError) as raised:
            run.run(batch)
        assert tries == CONFLICT_ATTEMPTS
        assert raised.value.case_ids == (batch[0].raw["caseId"],)
        assert [e.kind for e in store.entries()] == ["note.added"] * CONFLICT_ATTEMPTS


def test_workers_need_a_journal_every_process_opens(tmp_path: Path) -> None:
    for store in (InMemoryStore(FixedClock(TODAY)), open_store("sqlite://")):
        with pytest.raises(JournalError, match="every process can open"):
            pipeline(store, tmp_path).run_workers(lambda: lines(2), 2)
        assert store.entries() == []
    with pytest.raises(ValueError, match="at least 1"):
        pipeline(InMemoryStore(), tmp_path).run_workers(lambda: lines(2), 0)
    one = pipeline(InMemoryStore(FixedClock(TODAY)), tmp_path).run_workers(lambda: lines(3), 1)
    assert one.decided == 3


def test_a_summary_absorbs_every_count_of_another() -> None:
    counts = [f.name for f in dataclasses.fields(RunSummary) if f.type in ("int", int)]
    assert sorted(counts) == sorted(credit.pipeline._COUNTS)
    first, second = RunSummary(), RunSummary()
    for at, name in enumerate(counts, 1):
        setattr(first, name, at)
        setattr(second, name, 100 * at)
    second.failures.append(InputError("bad", line=2))
    second.failed_cases.append(FailedCase("C", "turn", "broke", 3, None))
    second.outcomes[("auto", "prime", "approve")] += 2
    second.states["approved"] += 1
    second.items["referral"] += 1
    first.absorb(second)
    expected = [101 * at for at in range(1, 1 + len(counts))]
    assert [getattr(first, name) for name in counts] == expected
    assert len(first.failures) == 1 and len(first.failed_cases) == 1
    assert first.outcomes == second.outcomes and first.items == second.items
    assert first.states == second.states


def test_credit_run_with_two_workers_on_a_file(tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    import json

    batch.write_text(
        "".join(json.dumps(line.raw) + "\n" for line in lines(20)) + "not json\n",
        encoding="utf-8",
    )
    database = f"sqlite:///{tmp_path / 'run.db'}"
    result = CliRunner().invoke(
        app, ["run", str(batch), "--database", database, "--workers", "2"], catch_exceptions=False
    )
    assert result.exit_code == 2, result.output  # the bad line is named, the rest decided
    assert "line 21" in result.output
    assert "chain verified" in result.output
    with open_store(database) as store:
        assert isinstance(store, SqlStore)
        assert_each_case_once(store, lines(20))
    memory = CliRunner().invoke(
        app, ["run", str(batch), "--database", "sqlite://", "--workers", "2"]
    )
    assert memory.exit_code == 2 and "every process can open" in memory.output
