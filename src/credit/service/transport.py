"""Every connection the service accepts sends small writes at once (TCP_NODELAY).

With ``--workers N`` above one, uvicorn binds the listening socket itself with
``socket.socket(family)``, whose protocol number is 0 rather than ``IPPROTO_TCP``, and
asyncio sets ``TCP_NODELAY`` only on sockets that name ``IPPROTO_TCP``: the accepted
connections kept Nagle's algorithm, and a keep-alive client waited for the delayed ACK
(about 40 ms) on every response, even ``/healthz``. This protocol is uvicorn's h11 one
that sets the option on each accepted TCP connection first (``credit serve`` passes it
as ``http=``). ``tests/test_service_transport.py`` measures nothing; it checks the
option is set on a connection a two-worker server accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["NoDelayH11Protocol"]


class NoDelayH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with ``TCP_NODELAY`` on the connection."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):  # a transport that has already closed
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
