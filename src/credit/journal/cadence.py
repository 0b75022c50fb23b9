"""When a writer's entries are signed: after every write, or at an interval.

A long-running writer (a service worker) tells its :class:`CheckpointCadence` after
each commit (:meth:`CheckpointCadence.wrote`). With an interval of 0 the tree head is
signed there and then, before the write's answer, as every writer did before; with an
interval, a thread of the cadence's own signs the head at most once an interval while
entries arrive, as Tessera and Trillian do (their checkpoint interval; the log's merge
delay): every entry is under a signed checkpoint within about one interval of its
commit, and one signature covers every write of the interval instead of one each.

What the interval changes, and what it does not (docs/decisions/ADR-0003): an entry is
in the journal, chained and MACed, when its commit returns, as ever; only the signed
head that lets an examiner check it without the database may come up to an interval
later. A signature the store refuses (the journal cut or rewritten below the newest
checkpoint) or cannot keep (the folder full or gone) is not a request's failure any
more: it is kept as the cadence's :attr:`CadenceStatus.error`, logged, tried again an
interval later, and :meth:`CheckpointCadence.refusal` answers every writer until a
signature succeeds, so nothing more is recorded over a head that cannot be signed.
Stopping (:meth:`CheckpointCadence.close`) signs what remains; a process killed before
it leaves entries unsigned until the next writer's start signs them
(:meth:`CheckpointCadence.flush`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, NamedTuple

from credit.journal.base import Store

__all__ = [
    "DEFAULT_CHECKPOINT_INTERVAL_S",
    "CadenceStatus",
    "CheckpointCadence",
    "failure_summary",
]

_log = logging.getLogger(__name__)

# A service worker's signing interval (docs/decisions/ADR-0003): every entry is under a
# signed checkpoint about a quarter of a second after its commit, and at 150 writes a
# second a signature covers about 37 of them (one each cost 2.2-2.4 ms of CPU and 3.5 ms
# of wall time, measured at 32 clients, docs/service.md).
DEFAULT_CHECKPOINT_INTERVAL_S: Final = 0.25


class CadenceStatus(NamedTuple):
    """What the cadence has signed and what waits (for ``GET /healthz``)."""

    interval_s: float
    signed: int  # the journal's size under this writer's newest signature (or cover)
    waiting: int  # entries this writer committed that no checkpoint covers yet
    waiting_for_s: float  # how long the oldest of them has waited (0.0 if none)
    error: str | None  # what failed the latest signature (failure_summary); None once one succeeds


def failure_summary(err: Exception) -> str:
    """What failed a signature, said without the paths or values in its message (the
    open ``GET /healthz`` carries it; the log has the whole message): the error's
    type, and for a journal that failed verification, the check it failed."""
    check = getattr(err, "check", None)
    return type(err).__name__ + (f" ({check})" if isinstance(check, str) else "")


class CheckpointCadence:
    """Signs ``store``'s tree head into ``directory`` after each write (``interval_s``
    0) or at most once every ``interval_s`` seconds while writes arrive (thread-safe;
    one per writer process). A head another writer already signed is not signed again
    (:meth:`credit.journal.base.Store.covered`)."""

    def __init__(
        self,
        store: Store,
        directory: Path,
        *,
        interval_s: float = DEFAULT_CHECKPOINT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s < 0:
            raise ValueError(f"a signing interval is 0 or more seconds, not {interval_s}")
        self.store = store
        self.directory = directory
        self.interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()  # the fields below
        self._signing = threading.Lock()  # one signature at a time (thread, flush)
        self._wanted = 0  # the size a signature must cover: the largest commit told of
        self._signed = 0  # the size the latest signature (or cover) covered
        self._waiting_since: float | None = None  # when the oldest unsigned commit came
        self._last_attempt = float("-inf")
        self._error: Exception | None = None
        self._due = threading.Condition(self._lock)
        self._stopped = False
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ writers

    def wrote(self) -> None:
        """After a commit, in the thread that committed: its entries are to be signed,
        now (interval 0: a failure raises, as the signature is the write's) or by the
        cadence's thread within an interval."""
        size = self.store.committed_size()
        if size is not None and self._want(size) and self.interval_s == 0:
            self.flush()

    def _want(self, size: int) -> bool:
        """The journal's first ``size`` entries are to be signed; False if a signature
        already wanted or made covers them. Wakes the signing thread."""
        with self._lock:
            if size <= max(self._wanted, self._signed):
                return False
            self._wanted = size
            if self._waiting_since is None:
                self._waiting_since = self._clock()
            self._due.notify()
            return True

    def cover_journal(self) -> Path | None:
        """At a writer's start: sign the journal's head as it stands, unless a
        checkpoint covers it (a writer killed before its signature leaves its last
        entries waiting for one). A failure is raised (and kept, see :meth:`refusal`)."""
        self._want(self.store.tree_head()[0])
        return self.flush()

    def refusal(self) -> Exception | None:
        """Why nothing more may be written (the latest signature failed and entries
        wait for one), else None."""
        with self._lock:
            return self._error if self._wanted > self._signed else None

    def status(self) -> CadenceStatus:
        with self._lock:
            since = self._waiting_since
            return CadenceStatus(
                self.interval_s,
                self._signed,
                max(0, self._wanted - self._signed),
                0.0 if since is None else max(0.0, self._clock() - since),
                None if self._error is None else failure_summary(self._error),
            )

    # ------------------------------------------------------------------ signing

    def flush(self) -> Path | None:
        """Sign now whatever this writer committed that no checkpoint covers (its thread
        and a start-up use it); the checkpoint that covers it, None if nothing waited.
        A failure is kept as the cadence's error (see :meth:`refusal`) and raised."""
        with self._signing:
            with self._lock:
                wanted = self._wanted
                if wanted <= self._signed:
                    return None
                self._last_attempt = self._clock()
            try:
                path = self.store.checkpoint(self.directory, covering=True, size=wanted)
            except Exception as err:  # any failure (the database's too) is kept
                with self._lock:
                    self._error = err
                raise
            with self._lock:
                self._error = None
                self._signed = max(self._signed, wanted)
                if self._wanted <= self._signed:
                    self._waiting_since = None
                else:  # commits came while it signed: they wait from now
                    self._waiting_since = self._last_attempt
            return path

    def start(self) -> None:
        """Start the signing thread (with an interval; nothing to start without)."""
        if self.interval_s == 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="checkpoint-cadence", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread and sign what remains (a failure is logged: the entries are
        kept, and the next writer's start signs them)."""
        with self._lock:
            self._stopped = True
            self._due.notify()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        try:
            self.flush()
        except Exception as err:  # kept and logged: the entries stay, a start signs them
            _log.error("the journal's tree head was not signed at close: %s", err)

    def _run(self) -> None:
        while True:
            with self._lock:
                # Wait for a commit to sign, then for the interval since the latest
                # attempt to pass (a stop ends either wait: close signs what remains).
                while not self._stopped and self._wanted <= self._signed:
                    self._due.wait()
                while not self._stopped:
                    delay = self._last_attempt + self.interval_s - self._clock()
                    if delay <= 0:
                        break
                    self._due.wait(delay)
                if self._stopped:
                    return
            try:
                self.flush()
            except Exception as err:  # kept by flush and refused on; the thread goes on
                _log.error(
                    "the journal's tree head was not signed (tried again in %ss): %s",
                    self.interval_s,
                    err,
                )
