"""The service's HTTP protocol: uvicorn's httptools one, sending small writes at once.

``credit serve`` runs uvicorn on uvloop's event loop with the httptools protocol (the
llhttp parser, in C) rather than asyncio's loop and the pure-Python h11 parser (what
``uvicorn[standard]`` installs). Measured in the worker processes with one client,
1,000 requests a round, the two alternating: ``/healthz`` took 0.64-0.92 ms of the
server's CPU a request on h11 and asyncio, 0.55-0.70 ms here; a case's standing
1.95-2.33 ms either way (its route's own work, and this machine's noise, hide it).

With ``--workers N`` above one, uvicorn binds the listening socket itself with
``socket.socket(family)``, whose protocol number is 0 rather than ``IPPROTO_TCP``, and
asyncio sets ``TCP_NODELAY`` only on sockets that name ``IPPROTO_TCP``: the accepted
connections kept Nagle's algorithm, and a keep-alive client waited for the delayed ACK
(about 40 ms) on every response, even ``/healthz``. This protocol is uvicorn's
httptools one that sets the option on each accepted TCP connection first (``credit
serve`` passes it as ``http=``; uvloop sets it too, asyncio's loop does not).
``tests/test_service_transport.py`` measures nothing; it checks the option is set on a
connection accepted on such a socket, on either loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["NoDelayHttpToolsProtocol"]


class NoDelayHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with ``TCP_NODELAY`` on the connection."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):  # a transport that has already closed
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
