"""The SQLite journal's writers queue on one lock per database file
(:mod:`credit.journal.writerlock`): a thread lock, then an ``flock`` beside the
database, so a waiting writer is woken when the one before it commits instead of
polling SQLite's lock on a back-off that climbs to 100 ms."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from credit.journal import open_store
from credit.journal.writerlock import LOCK_SUFFIX, writer_lock


def lock_is_free(lock_file: Path) -> bool:
    """Whether another open file description could take the lock now."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing drops a lock this descriptor took
    return True


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "journal.db"


def test_a_write_transaction_holds_the_database_files_writer_lock_and_lets_go_at_commit(
    db: Path,
) -> None:
    lock_file = db.with_name(db.name + LOCK_SUFFIX)
    with open_store(f"sqlite:///{db}") as store:
        with store.group_commit(["c1"]):
            store.append("c1", "note", {"n": 1})
            assert lock_file.exists()
            assert not lock_is_free(lock_file), "a writer in another process could begin now"
        assert lock_is_free(lock_file)
        store.append("c1", "note", {"n": 2})  # a single append takes it too, and lets go
        assert lock_is_free(lock_file)
        assert [e.payload["n"] for e in store.entries("c1")] == [1, 2]


def test_a_second_writer_waits_for_the_open_group_and_goes_on_when_it_commits(
    db: Path,
) -> None:
    with open_store(f"sqlite:///{db}") as store, open_store(f"sqlite:///{db}") as other:
        inside, done = threading.Event(), threading.Event()
        errors: list[BaseException] = []

        def second() -> None:
            inside.wait(10)
            try:
                other.append("c2", "note", {"who": "second"})
            except BaseException as err:  # pragma: no cover - reported below
                errors.append(err)
            done.set()

        racer = threading.Thread(target=second)
        racer.start()
        with store.group_commit(["c1"]):
            store.append("c1", "note", {"who": "first"})
            inside.set()
            assert not done.wait(0.3), "the second writer wrote inside the open group"
        racer.join(10)
        assert done.is_set() and not errors
        kinds = [(e.case_id, e.payload["who"]) for e in store.entries()]
        assert kinds == [("c1", "first"), ("c2", "second")]
        assert store.verify().ok


def test_the_lock_is_reentrant_in_one_thread_and_the_file_is_let_go_only_at_the_outermost_end(
    db: Path,
) -> None:
    lock = writer_lock(db)
    assert writer_lock(str(db)) is lock  # one per file, however it is named
    with lock.held():
        with lock.held():
            assert not lock_is_free(lock.path)
        assert not lock_is_free(lock.path)
    assert lock_is_free(lock.path)


def test_a_thread_waits_its_turn_for_the_lock_another_thread_holds(db: Path) -> None:
    lock = writer_lock(db)
    got = threading.Event()

    def take() -> None:
        with lock.held():
            got.set()

    with lock.held():
        taker = threading.Thread(target=take)
        taker.start()
        assert not got.wait(0.2)
    taker.join(10)
    assert got.is_set()


def test_a_child_forked_while_the_lock_is_held_does_not_keep_it_after_the_parent_lets_go(
    db: Path,
) -> None:
    lock = writer_lock(db)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    with lock.held():
        pid = os.fork()
        if pid == 0:  # the child: alive until the parent has looked
            try:
                os.close(ready_r)
                os.close(go_w)
                fresh = writer_lock(db) is not lock  # the parent's lock is forgotten
                os.write(ready_w, b"1" if fresh else b"0")
                os.read(go_r, 1)
            finally:
                os._exit(0)
        os.close(ready_w)
        os.close(go_r)
        assert os.read(ready_r, 1) == b"1"
    try:
        assert lock_is_free(lock.path), "the child's copy of the descriptor keeps the lock held"
    finally:
        os.write(go_w, b"x")
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(go_w)


def test_an_in_memory_journal_has_no_lock_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite://") as store:
        store.append("c1", "note", {})
    assert not list(tmp_path.glob(f"*{LOCK_SUFFIX}"))


def test_the_services_own_writes_to_the_same_file_queue_with_the_journals(db: Path) -> None:
    from sqlalchemy import event

    from credit.service.claims import SqlClaims
    from credit.service.keys import SqlKeyStore
    from credit.service.tables import ServiceDb

    lock_file = db.with_name(db.name + LOCK_SUFFIX)
    with open_store(f"sqlite:///{db}") as store, ServiceDb(f"sqlite:///{db}") as service_db:
        writes: list[bool] = []  # for each write statement: was the writer lock held?

        def seen(_conn: object, _cursor: object, statement: str, *_: object) -> None:
            if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
                writes.append(not lock_is_free(lock_file))

        event.listen(service_db.engine, "before_cursor_execute", seen)
        claims = SqlClaims(service_db)
        assert claims.claim("decide:c1", "h1", stale_after_s=60)
        claims.release("decide:c1", "h1")
        SqlKeyStore(service_db, scrypt_n=2**10).create("auditor", "ann")
        assert writes and all(writes), writes

        # and a claim made while a journal group is open waits for it, then goes on
        done = threading.Event()
        racer = threading.Thread(
            target=lambda: (claims.claim("decide:c2", "h2", stale_after_s=60), done.set())
        )
        with store.group_commit(["c1"]):
            store.append("c1", "note", {})
            racer.start()
            assert not done.wait(0.3)
        racer.join(10)
        assert done.is_set()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_writers_waiting_for_the_lock_hold_no_pooled_connection_and_readers_go_on(
    backend: str, tmp_path: Path
) -> None:
    from test_journal_store import sql_backend

    with sql_backend(backend, tmp_path) as (store, _, _):
        store.append("c0", "note", {})
        pool = store._engine.pool
        done: list[int] = []
        with store.group_commit(["c1"]):
            store.append("c1", "note", {})
            writers = [
                threading.Thread(
                    target=lambda i=i: (store.append(f"w{i}", "note", {}), done.append(i))
                )
                for i in range(8)
            ]
            for writer in writers:
                writer.start()
            assert not threading.Event().wait(0.3) and not done
            held = pool.checkedout()  # type: ignore[attr-defined]
            assert held <= 2, f"{held} connections held (the group's, and one writer's)"
            read: list[int] = []
            reader = threading.Thread(target=lambda: read.append(len(store.entries("c0"))))
            reader.start()
            reader.join(10)
            assert read == [1]  # a read goes on while the writers wait
        for writer in writers:
            writer.join(20)
        assert sorted(done) == list(range(8))
        assert store.verify().ok


def test_the_thread_lock_is_handed_on_in_the_order_the_waiters_came() -> None:
    from credit.journal.writerlock import FifoLock

    lock = FifoLock()
    order: list[int] = []

    def wait_turn(i: int) -> None:
        with lock:
            order.append(i)

    lock.acquire()
    threads = []
    for i in range(6):
        thread = threading.Thread(target=wait_turn, args=(i,))
        thread.start()
        deadline = threading.Event()
        while len(lock._waiters) < i + 1 and not deadline.wait(0.005):
            pass  # the next waiter comes only once this one is queued
        threads.append(thread)
    with lock:  # re-entrant for its holder
        assert not order
    lock.release()
    for thread in threads:
        thread.join(10)
    assert order == list(range(6))
    with pytest.raises(RuntimeError):
        lock.release()  # not held by this thread


def test_a_holder_that_asks_again_at_once_waits_behind_the_thread_already_waiting() -> None:
    from credit.journal.writerlock import FifoLock

    lock = FifoLock()
    ran: list[str] = []

    def waiter() -> None:
        with lock:
            ran.append("waiter")

    lock.acquire()
    thread = threading.Thread(target=waiter)
    thread.start()
    while not lock._waiters:
        threading.Event().wait(0.005)
    lock.release()
    lock.acquire()  # a plain lock lets its releaser take it straight back
    try:
        assert ran == ["waiter"]
    finally:
        lock.release()
        thread.join(10)
