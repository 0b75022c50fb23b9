"""The requests that write the journal, a few at a time in each worker process.

A worker serves each request on a thread of its pool (40 by default). Under load, as
many decides as there are clients then run at once in one process, and share one
interpreter lock: each takes several times its own CPU time to finish, holding the
journal's write lock meanwhile, and the other worker waits for it. Every route that
writes the journal (intake, decide, a send, a person's action, in the API and the
console) depends on :data:`JOURNAL_WRITE`, which lets ``concurrent_writes`` of them
(:class:`~credit.service.settings.ServiceSettings`, default 4) run at once; the others
wait their turn on the event loop, holding no thread. Reads are not limited.
``docs/service.md``, "Writes at once", has the measurements.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from fastapi import Depends, Request

__all__ = ["JOURNAL_WRITE"]


async def _one_of_the_writes(request: Request) -> AsyncIterator[None]:
    """Hold one of the worker's write slots while the route's function runs."""
    writes: anyio.CapacityLimiter | None = getattr(request.app.state, "writes", None)
    if writes is None:  # an app whose lifespan has not run: nothing to share
        yield
        return
    async with writes:
        yield


# Around the route's function (scope "function"): the slot is given back when the
# function returns, before the answer is sent.
JOURNAL_WRITE = Depends(_one_of_the_writes, scope="function")
