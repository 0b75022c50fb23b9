"""``credit serve --workers N``: N uvicorn servers, each on a listening socket of its own.

uvicorn's own ``--workers`` binds one socket in the supervisor and hands it to every
worker. Each worker's event loop accepts every connection waiting when it wakes, so a
burst of new connections (32 clients opening keep-alive connections at once) is taken
by whichever worker woke first, and stays there: measured here, one worker served the
whole benchmark while the other idled, and its first request, long after start-up,
paid the cold start of the underwriter's tool server (about a second).

Here every worker binds its own socket to the same address with ``SO_REUSEPORT``, and
the kernel spreads new connections across the listening sockets by a hash of each
connection's addresses. The supervisor holds the port (a socket bound with
``SO_REUSEPORT`` that never listens, so it is handed no connection: ``--port 0`` picks
one port for all), starts each worker (``spawn``), starts a new one in place of a
worker that dies, and on SIGTERM or SIGINT stops them all (SIGTERM: uvicorn's graceful
shutdown, which closes each worker's journal), then the rest after a grace period.

A worker that exits with an error status within :data:`FAST_EXIT_S` of its start is
not restarted: the server stops with that status (an app that cannot start fails every
worker the same way). One killed by a signal, or ended later, is replaced. Where the
system has no ``SO_REUSEPORT`` (or does not spread connections over it: only Linux is
trusted to), :func:`supports` is false and ``credit serve`` uses uvicorn's shared
socket.
"""

from __future__ import annotations

import multiprocessing
import signal
import socket
import sys
import time
from collections.abc import Mapping
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any, Final

__all__ = ["FAST_EXIT_S", "listening_socket", "run_workers", "supports"]

FAST_EXIT_S: Final = 10.0  # a worker dead this soon after its start is not restarted
STOP_GRACE_S: Final = 20.0  # then SIGKILL
BACKLOG: Final = 2048  # uvicorn's default


def supports() -> bool:
    """Whether this system spreads connections across ``SO_REUSEPORT`` sockets."""
    return hasattr(socket, "SO_REUSEPORT") and sys.platform.startswith("linux")


def listening_socket(host: str, port: int, *, listen: bool = True) -> socket.socket:
    """A TCP socket on ``host:port`` with ``SO_REUSEPORT`` (and listening, unless
    ``listen`` is false: the supervisor's, which only holds the port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        if listen:
            sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _serve(options: Mapping[str, Any], host: str, port: int) -> None:
    """One worker (in a spawned child): its own socket, then uvicorn on it."""
    import uvicorn

    sock = listening_socket(host, port)
    config = uvicorn.Config(**options, host=host, port=port)
    uvicorn.Server(config).run(sockets=[sock])


def run_workers(options: Mapping[str, Any], *, host: str, port: int, workers: int) -> int:
    """Serve ``uvicorn.Config(**options)`` on ``host:port`` with ``workers`` processes
    until SIGTERM or SIGINT; returns the exit status (0, or that of a worker that died
    at start-up)."""
    held = listening_socket(host, port, listen=False)
    port = held.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    stopping = False

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}

    def start() -> tuple[BaseProcess, float]:
        process = context.Process(target=_serve, args=(dict(options), host, port))
        process.start()
        return process, time.monotonic()

    status = 0
    running = [start() for _ in range(workers)]
    try:
        while not stopping:
            wait([p.sentinel for p, _ in running], timeout=0.5)
            for i, (process, started) in enumerate(running):
                if stopping or process.is_alive():
                    continue
                code = process.exitcode or 0
                if code > 0 and time.monotonic() - started < FAST_EXIT_S:
                    status = code  # it failed on its own at start-up: so would another
                    stopping = True
                    break
                running[i] = start()  # died in service: a new worker takes its place
    finally:
        for process, _ in running:
            if process.is_alive():
                process.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for process, _ in running:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
        held.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status
