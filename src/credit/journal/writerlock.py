"""The SQLite journal's writers, queued: one lock per database file, within a process
and across processes.

SQLite serialises writers itself (``BEGIN IMMEDIATE``), but a writer that finds the
database locked does not wait for it: its busy handler sleeps and tries again, on a
schedule that climbs to 100 ms between tries. Under contention (the service's workers,
each with many request threads) the lock is then often free while every waiter
sleeps, and a write waits for the next try, not for the writer before it: throughput
falls and the tail of the latency grows with the number of waiters.

So a store on a SQLite file takes :func:`writer_lock` for its database before it
begins a write transaction: a thread lock shared by every store of the process on that
file (handed on in the order the threads came: :class:`FifoLock`), then an exclusive
``flock`` on ``<database>-writer.lock`` beside it. Both wake a
waiter as soon as the holder lets go, so ``BEGIN IMMEDIATE`` then finds the database
free. The lock adds no guarantee of its own: SQLite's lock (and the busy timeout, for a
writer that does not take this lock) is still what keeps the chain from forking; this
only queues the writers that do take it. The kernel drops an ``flock`` when its holder
dies. The file is opened anew for each hold, and a forked child closes its copy of a
held one at once, so a child never keeps its parent's lock. The thread lock is
re-entrant: a thread that already holds it (a second store on the same file, written
inside the first's transaction) goes on to SQLite as before, whose busy timeout then
ends the wait.

The same queue, on a lock file of its own, serialises the signers of a checkpoints
folder (:func:`signer_lock`): a checkpoint is signed from the committed head, read
without the journal's write lock, so signing (a signature and a durable file, a few
milliseconds) never holds the journal's writers up.

Where ``fcntl`` is missing (not a POSIX system), only the thread lock is taken.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Final

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_SUFFIX", "SIGNER_LOCK", "FifoLock", "WriterLock", "signer_lock", "writer_lock"]

LOCK_SUFFIX: Final = "-writer.lock"
SIGNER_LOCK: Final = ".signing.lock"  # hidden: the checkpoint readers skip it


class FifoLock:
    """A re-entrant lock handed to its waiters in the order they came.

    ``threading.RLock`` wakes a waiter on release, but a thread that asks again at once
    (the next request on a busy worker) often takes the lock before the woken one
    runs: under contention some writers wait many turns, and the tail of the latency
    grows. Here the holder's release hands the lock to the longest waiter directly.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._waiters: collections.deque[tuple[int, threading.Event]] = collections.deque()

    def acquire(self) -> None:
        me = threading.get_ident()
        with self._guard:
            if self._owner == me:
                self._depth += 1
                return
            if self._owner is None:
                self._owner, self._depth = me, 1
                return
            turn = threading.Event()
            self._waiters.append((me, turn))
        try:
            turn.wait()  # the releaser made this thread the owner before setting it
        except BaseException:  # interrupted while waiting: leave the queue, or pass on
            with self._guard:
                if self._owner == me:
                    self._pass_on()
                else:
                    self._waiters.remove((me, turn))
            raise

    def release(self) -> None:
        with self._guard:
            if self._owner != threading.get_ident():
                raise RuntimeError("cannot release a lock this thread does not hold")
            self._depth -= 1
            if not self._depth:
                self._pass_on()

    def _pass_on(self) -> None:
        """Hand the lock to the longest waiter, or free it (the guard held)."""
        if self._waiters:
            self._owner, turn = self._waiters.popleft()
            self._depth = 1
            turn.set()
        else:
            self._owner, self._depth = None, 0

    def __enter__(self) -> FifoLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class WriterLock:
    """A queue of writers on one lock file, ``path`` (see the module docs): a SQLite
    database file's writers (:func:`writer_lock`) or a checkpoints folder's signers
    (:func:`signer_lock`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread = FifoLock()
        self._fd: int | None = None  # the lock file, open while a thread holds the lock

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the block: the thread lock, then the file's ``flock``."""
        with self._thread:
            outermost = self._fd is None  # else this thread holds it already
            if outermost and fcntl is not None:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)  # blocks, GIL released, until free
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
            try:
                yield
            finally:
                if outermost and self._fd is not None:
                    fd, self._fd = self._fd, None
                    os.close(fd)  # closing the only descriptor releases the flock


_LOCKS: dict[str, WriterLock] = {}
_LOCKS_GUARD = threading.Lock()


def _forget_in_child() -> None:
    """A forked child starts with no writer locks: a parent's thread may hold one (its
    thread lock would never be let go in the child), and the child's copy of a held
    lock file's descriptor would keep the parent's ``flock`` held after the parent
    lets go, so the child closes it."""
    global _LOCKS_GUARD
    for lock in _LOCKS.values():
        if lock._fd is not None:
            with contextlib.suppress(OSError):
                os.close(lock._fd)
    _LOCKS.clear()
    _LOCKS_GUARD = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _lock_on(path: Path) -> WriterLock:
    """The process's lock on the lock file ``path`` (one per resolved path)."""
    key = str(path)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = WriterLock(path)
        return lock


def writer_lock(database: Path | str) -> WriterLock:
    """The process's writer lock for a SQLite database file (one per resolved path):
    its lock file is ``<database>-writer.lock`` beside it."""
    path = Path(os.path.realpath(database))
    return _lock_on(path.with_name(path.name + LOCK_SUFFIX))


def signer_lock(directory: Path | str) -> WriterLock:
    """The process's lock for signing into a checkpoints folder (one per resolved path;
    the folder is made if missing): its lock file is ``.signing.lock`` inside it."""
    path = Path(os.path.realpath(directory))
    path.mkdir(parents=True, exist_ok=True)
    return _lock_on(path / SIGNER_LOCK)
