"""Every connection the service accepts has TCP_NODELAY, however its socket was bound.

With several workers uvicorn binds the listening socket as ``socket.socket(family)``
(protocol number 0), and asyncio then leaves Nagle's algorithm on for the connections
it accepts: a keep-alive client waited about 40 ms (the delayed ACK) for every answer.
``credit serve`` runs :class:`credit.service.transport.NoDelayHttpToolsProtocol`, which
sets the option itself, on uvloop's loop, which sets it too. These tests accept a real
loopback connection on a socket bound that way and read the option back from the
accepted socket (no timing).
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from credit.service.transport import NoDelayHttpToolsProtocol


async def _app(scope: Any, receive: Any, send: Any) -> None:  # never reached: no request
    raise AssertionError("no request is sent")


def _nodelay_of_accepted(protocol: type[HttpToolsProtocol], *, loop: str = "asyncio") -> int:
    """TCP_NODELAY on the server side of one connection accepted by ``protocol`` on a
    listening socket bound the way uvicorn binds it for several workers, on ``loop``
    (asyncio's or uvloop's)."""

    async def main() -> int:
        config = uvicorn.Config(app=_app, lifespan="off", log_level="warning")
        config.load()
        state = ServerState()
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(protocol):  # type: ignore[misc, valid-type]
            def connection_made(self, transport: asyncio.Transport) -> None:
                super().connection_made(transport)
                sock = transport.get_extra_info("socket")
                accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        listener = socket.socket(family=socket.AF_INET)  # protocol 0, as uvicorn binds it
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert listener.proto == 0
        server = await asyncio.get_running_loop().create_server(
            lambda: Probe(config=config, server_state=state, app_state={}), sock=listener
        )
        try:
            _, writer = await asyncio.open_connection(*listener.getsockname())
            try:
                return await asyncio.wait_for(accepted, timeout=10)
            finally:
                writer.close()
        finally:
            server.close()
            for connection in list(state.connections):
                connection.transport.close()
            await server.wait_closed()

    if loop == "uvloop":
        return uvloop.run(main())
    return asyncio.run(main())


def test_a_connection_the_service_accepts_sends_at_once() -> None:
    assert _nodelay_of_accepted(NoDelayHttpToolsProtocol) != 0
    assert _nodelay_of_accepted(NoDelayHttpToolsProtocol, loop="uvloop") != 0


def test_uvicorns_own_protocol_leaves_nagle_on_for_such_a_socket() -> None:
    # the defect the service's protocol exists for; if uvicorn ever sets the option
    # itself, this fails and the workaround can go
    assert _nodelay_of_accepted(HttpToolsProtocol) == 0


def test_credit_serve_runs_uvicorn_with_the_nodelay_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from credit.cli import app

    ran: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kwargs: ran.update(kwargs))
    monkeypatch.setenv("CREDIT_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.delenv("CREDIT_SIGNING_KEY", raising=False)  # one is made here
    for name in ("CREDIT_DATABASE_URL", "CREDIT_DATABASE_SCHEMA", "CREDIT_OUTBOX"):
        monkeypatch.setenv(name, "")  # `serve` sets them for its workers: put back after
    monkeypatch.setenv("CREDIT_SESSION_SECRET", "a session secret for this test only")
    monkeypatch.chdir(tmp_path)
    database = f"sqlite:///{tmp_path / 'served.db'}"
    done = CliRunner().invoke(app, ["serve", "--workers", "1", "--database", database])
    assert done.exit_code == 0, done.output
    assert ran["http"] == "credit.service.transport:NoDelayHttpToolsProtocol"
    assert ran["loop"] == "uvloop"
    assert ran["workers"] == 1
    # several workers, each on its own socket (credit.service.workers): the same protocol
    spread: dict[str, Any] = {}

    def run_workers(options: dict[str, Any], **where: Any) -> int:
        spread.update(options, **where)
        return 0

    monkeypatch.setattr("credit.service.workers.run_workers", run_workers)
    done = CliRunner().invoke(app, ["serve", "--workers", "2", "--database", database])
    assert done.exit_code == 0, done.output
    assert spread["http"] == "credit.service.transport:NoDelayHttpToolsProtocol"
    assert spread["loop"] == "uvloop"
    assert spread["app"] == "credit.service.app:create_app_from_env" and spread["factory"]
    assert spread["workers"] == 2
