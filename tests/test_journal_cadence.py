"""When a writer's entries are signed (credit.journal.cadence, ADR-0003).

After every write with an interval of 0 (the signature is the write's: it is there
before the writer goes on, and its failure is the writer's); at an interval otherwise,
one signature covering every write of the interval, a head another writer signed not
signed again, a failed signature kept and refused on until one succeeds, and whatever
waits signed at close and at the next writer's start.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from credit.errors import JournalIntegrityError
from credit.journal import SqlStore
from credit.journal.audit import load_checkpoints
from credit.journal.base import InMemoryStore, Store
from credit.journal.cadence import CheckpointCadence
from credit.journal.signer import ephemeral_key

LONG = 3600.0  # an interval no test outlasts: nothing is signed by the thread


def write(store: Store, case_id: str = "C-1") -> int:
    """One entry for ``case_id``; the journal's size after it."""
    store.append(case_id, "intake.accepted", {"n": case_id})
    size = store.committed_size()
    assert size is not None
    return size


def sizes(folder: Path) -> list[int]:
    """The tree sizes of the checkpoints kept in ``folder`` (every file counts)."""
    if not folder.exists():
        return []
    return sorted(int(p.name[:20]) for p in folder.glob("*.checkpoint"))


def eventually(condition: Callable[[], bool], what: str) -> None:
    """Wait for the cadence's thread (no figure of time is asserted: only that it comes)."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.005)


def test_with_an_interval_of_0_each_write_is_signed_before_the_writer_goes_on(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    cadence = CheckpointCadence(store, tmp_path, interval_s=0)
    for n in range(1, 4):
        size = write(store, f"C-{n}")
        cadence.wrote()
        assert sizes(tmp_path)[-1] == size  # before the answer, as every write did
    assert cadence.status().waiting == 0


def test_with_an_interval_a_write_waits_for_the_cadence_and_many_share_one_signature(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    cadence = CheckpointCadence(store, tmp_path, interval_s=LONG)
    cadence.start()
    try:
        first = write(store)
        cadence.wrote()
        # the first write of an interval is signed at once by the thread ...
        eventually(lambda: sizes(tmp_path) == [first], "the first write signed")
        # ... the next ones wait for the interval: the answers go on unsigned
        for n in range(2, 12):
            write(store, f"C-{n}")
            cadence.wrote()
        status = cadence.status()
        assert sizes(tmp_path) == [first]
        assert (status.signed, status.waiting, status.error) == (first, 10, None)
        assert status.waiting_for_s >= 0.0
    finally:
        cadence.close()  # signs what waits: one signature for the ten
    assert sizes(tmp_path) == [first, first + 10]
    assert cadence.status().waiting == 0


def test_a_short_interval_signs_each_later_write_without_being_asked_again(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    cadence = CheckpointCadence(store, tmp_path, interval_s=0.01)
    cadence.start()
    try:
        for n in range(1, 4):
            size = write(store, f"C-{n}")
            cadence.wrote()
            eventually(
                lambda s=size: bool(sizes(tmp_path)) and sizes(tmp_path)[-1] == s,
                f"entry {size} signed",
            )
    finally:
        cadence.close()
    assert cadence.status() == (0.01, 3, 0, 0.0, None)


def test_nothing_written_nothing_signed(tmp_path: Path) -> None:
    store = InMemoryStore()
    cadence = CheckpointCadence(store, tmp_path, interval_s=0)
    cadence.wrote()  # a writer that committed nothing
    assert cadence.flush() is None and cadence.cover_journal() is None
    cadence.close()
    assert sizes(tmp_path) == []


def test_a_head_another_writer_signed_after_these_entries_is_not_signed_again(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}"
    key = ephemeral_key()
    folder = tmp_path / "checkpoints"
    with SqlStore(url, key=key) as ours, SqlStore(url, key=key) as theirs:
        cadence = CheckpointCadence(ours, folder, interval_s=LONG)
        mine = write(ours, "C-1")
        cadence.wrote()
        write(theirs, "C-2")
        signed_by_them = theirs.checkpoint(folder)  # their head holds ours too
        assert cadence.flush() == signed_by_them
        assert sizes(folder) == [mine + 1]


def test_a_writers_start_signs_what_a_killed_writer_left_unsigned(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}"
    key = ephemeral_key()
    folder = tmp_path / "checkpoints"
    with SqlStore(url, key=key) as killed:
        left = write(killed, "C-1")  # committed, never signed
    with SqlStore(url, key=key) as started:
        cadence = CheckpointCadence(started, folder, interval_s=LONG)
        assert cadence.cover_journal() is not None
        assert sizes(folder) == [left]
        assert cadence.cover_journal() is None  # covered: nothing signed again
        assert sizes(folder) == [left]


def test_a_journal_rewritten_below_the_newest_checkpoint_is_refused_and_refused_on(
    tmp_path: Path,
) -> None:
    key = ephemeral_key()
    whole = InMemoryStore(key=key)
    for n in range(1, 4):
        write(whole, f"C-{n}")
    whole.checkpoint(tmp_path)  # the examiner holds a head of 3
    rewritten = InMemoryStore(key=key)  # the same journal, its history written anew
    for n in range(1, 5):
        write(rewritten, f"X-{n}")
    cadence = CheckpointCadence(rewritten, tmp_path, interval_s=LONG)
    assert cadence.refusal() is None
    cadence.wrote()
    with pytest.raises(JournalIntegrityError) as raised:
        cadence.flush()
    assert raised.value.check == "consistency"
    assert cadence.refusal() is raised.value  # every writer is told, until one succeeds
    status = cadence.status()
    assert (status.waiting, status.error) == (4, "JournalIntegrityError (consistency)")
    assert sizes(tmp_path) == [3]  # the key signed nothing over it
    # with an interval of 0 the writer itself gets the refusal, as before
    now = CheckpointCadence(rewritten, tmp_path, interval_s=0)
    write(rewritten, "X-5")
    with pytest.raises(JournalIntegrityError):
        now.wrote()


def test_a_failed_signature_is_tried_again_and_its_refusal_ends_when_one_succeeds(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    folder = tmp_path / "checkpoints"
    folder.write_text("not a folder")  # the checkpoints cannot be kept
    cadence = CheckpointCadence(store, folder, interval_s=0.01)
    cadence.start()
    try:
        write(store)
        cadence.wrote()
        eventually(lambda: cadence.refusal() is not None, "the failure kept")
        assert isinstance(cadence.refusal(), OSError)
        error = cadence.status().error  # its type, not its message (no path in it)
        assert error is not None and error.endswith("Error") and str(folder) not in error
        folder.unlink()  # mended: the thread's next attempt signs
        eventually(lambda: cadence.refusal() is None, "the refusal ended")
        assert cadence.status().error is None and cadence.status().waiting == 0
        assert sizes(folder) == [1]
    finally:
        cadence.close()


def test_close_logs_a_signature_it_cannot_make_and_keeps_the_entries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = InMemoryStore()
    folder = tmp_path / "checkpoints"
    cadence = CheckpointCadence(store, folder, interval_s=LONG)
    write(store)
    cadence.wrote()
    folder.write_text("not a folder")
    cadence.close()  # no raise: a stopping worker stops
    assert "not signed at close" in caplog.text
    assert len(store.entries()) == 1 and cadence.status().waiting == 1


def test_a_negative_interval_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="0 or more"):
        CheckpointCadence(InMemoryStore(), tmp_path, interval_s=-1)


def test_the_kept_checkpoints_verify(tmp_path: Path) -> None:
    key = ephemeral_key()
    store = InMemoryStore(key=key)
    cadence = CheckpointCadence(store, tmp_path, interval_s=LONG)
    write(store)
    cadence.wrote()
    cadence.close()
    kept, bad = load_checkpoints(tmp_path, key.verifier, origin=key.name)
    assert [k.checkpoint.size for k in kept] == [1] and bad == []


def test_writers_on_many_threads_are_all_covered_and_share_signatures(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}"
    folder = tmp_path / "checkpoints"
    with SqlStore(url, key=ephemeral_key()) as store:
        cadence = CheckpointCadence(store, folder, interval_s=0.005)
        cadence.start()

        def writer(n: int) -> None:
            for i in range(15):
                write(store, f"T{n}-{i}")
                cadence.wrote()  # each thread tells of its own commits

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        cadence.close()
        entries = len(store.entries())
        assert entries == 90 and sizes(folder)[-1] == entries
        assert len(sizes(folder)) < entries  # signatures shared between writes
        assert cadence.status() == (0.005, entries, 0, 0.0, None)


class _Flaky(InMemoryStore):
    """A store whose database fails the next ``failures`` signatures (not a CreditError)."""

    failures = 1

    def checkpoint(
        self, directory: Path, *, covering: bool = False, size: int | None = None
    ) -> Path:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the database went away")
        return super().checkpoint(directory, covering=covering, size=size)


def test_any_failure_of_the_thread_is_kept_and_the_thread_goes_on(tmp_path: Path) -> None:
    store = _Flaky()
    cadence = CheckpointCadence(store, tmp_path, interval_s=0.01)
    cadence.start()
    try:
        write(store)
        cadence.wrote()
        eventually(lambda: sizes(tmp_path) == [1], "signed once the database is back")
        assert store.failures == 0 and cadence.refusal() is None
        write(store, "C-2")  # the thread is still there to sign the next one
        cadence.wrote()
        eventually(lambda: sizes(tmp_path) == [1, 2], "the next write signed")
    finally:
        cadence.close()
