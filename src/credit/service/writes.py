"""The requests that write the journal: a few at a time in each worker process, the
work on cases already taken in before new cases.

A worker serves each request on a thread of its pool (40 by default). Under load, as
many writes as there are clients would run at once in one process, sharing one
interpreter lock: each takes several times its own CPU time to finish, holding the
journal's write lock meanwhile, and the other worker waits for it. So every route that
writes the journal holds one of its worker's :class:`WriteSlots`
(``concurrent_writes`` of them, :class:`~credit.service.settings.ServiceSettings`,
default 1) while its function runs; the others wait their turn on the event loop,
holding no thread. Reads take no slot.

When a slot comes free it goes to a request about a case already taken in (a decide, a
notice's send, a person's release, rejection, decision or withdrawal: the routes that
depend on :data:`JOURNAL_WRITE`) before any new case (intake, :data:`NEW_CASE_WRITE`),
each kind in the order it came. That is admission control: when a worker is saturated,
the cases it holds are carried on (their Regulation B clock runs from intake) and a new
case waits at the door, instead of every request waiting behind every other. It moves
the queueing to intake; it does not remove it: a saturated server's clients still wait
as long in all (Little's law), and ``bench_service`` prints intake's latency beside
decide's. Work on held cases comes only from cases taken in, so it cannot keep a new
case waiting for ever: once the cases taken in are carried on, intake goes on.
``docs/service.md``, "Writes at once", has the measurements.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator

from fastapi import Depends, Request

__all__ = ["JOURNAL_WRITE", "NEW_CASE_WRITE", "WriteSlots"]


class WriteSlots:
    """``slots`` slots, shared by one event loop's requests: :meth:`acquire` waits for
    one (work on a case already taken in first, then new cases, each kind first come
    first served), :meth:`release` gives it back or on. Not thread-safe: only the
    event loop's own coroutines call it."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, not {slots}")
        self._free = slots
        # Waiters for work on a case taken in, then waiters with a new case.
        self._waiting: tuple[deque[asyncio.Future[None]], deque[asyncio.Future[None]]] = (
            deque(),
            deque(),
        )

    @property
    def free(self) -> int:
        return self._free

    def waiting(self, *, new_case: bool) -> int:
        """How many requests of the kind wait for a slot."""
        return sum(not w.done() for w in self._waiting[1 if new_case else 0])

    async def acquire(self, *, new_case: bool) -> None:
        """Take a slot, waiting for one if none is free. A waiter cancelled (its client
        went away) takes none; one cancelled as it was handed a slot hands it on."""
        if self._free:  # a free slot means no one waits: take it
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._waiting[1 if new_case else 0]
        queue.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot it will not use: on to the next
            else:
                with contextlib.suppress(ValueError):  # release() may have dropped it
                    queue.remove(waiter)
            raise

    def release(self) -> None:
        """Give a slot back: to the first waiter about a case taken in, else to the
        first with a new case, else to the free slots."""
        for queue in self._waiting:
            while queue:
                waiter = queue.popleft()
                if not waiter.done():  # a cancelled waiter is passed over
                    waiter.set_result(None)
                    return
        self._free += 1


@contextlib.asynccontextmanager
async def _held(request: Request, *, new_case: bool) -> AsyncIterator[None]:
    """Hold one of the worker's write slots while the route's function runs."""
    writes: WriteSlots | None = getattr(request.app.state, "writes", None)
    if writes is None:  # an app whose lifespan has not run: nothing to share
        _signable(request)
        yield
        return
    await writes.acquire(new_case=new_case)
    try:
        _signable(request)
        yield
    finally:
        writes.release()


def _signable(request: Request) -> None:
    """Nothing more is recorded over a tree head that cannot be signed (ADR-0003):
    the 503 names why, and ``GET /healthz`` says it too."""
    refused = request.app.state.service.write_refusal()
    if refused is not None:
        raise refused


async def _case_write(request: Request) -> AsyncIterator[None]:
    async with _held(request, new_case=False):
        yield


async def _new_case_write(request: Request) -> AsyncIterator[None]:
    async with _held(request, new_case=True):
        yield


# Around the route's function (scope "function"): the slot is given back when the
# function returns, before the answer is sent.
JOURNAL_WRITE = Depends(_case_write, scope="function")
"""A write about a case already taken in (decide, send, a person's action)."""
NEW_CASE_WRITE = Depends(_new_case_write, scope="function")
"""A write that takes a new case in: it waits while work on cases taken in waits."""
