"""Run ``credit serve`` as a child process on a free loopback port (tests, benchmarks).

``served(url, schema, folder)`` starts the server, waits until ``/healthz`` answers,
yields its base URL, and stops it afterwards (SIGTERM, then SIGKILL). Its output goes
to ``serve-<port>.log`` in ``folder``; sent notices to ``folder/outbox``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["free_port", "served"]

CREDIT = Path(sys.executable).with_name("credit")  # the console script beside python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def served(
    url: str,
    schema: str | None,
    folder: Path,
    *,
    workers: int = 2,
    startup_timeout_s: float = 90.0,
) -> Iterator[str]:
    """``credit serve --workers N`` on 127.0.0.1 and a free port; yields the base URL. Its
    signed checkpoints go to ``folder/checkpoints`` unless $CREDIT_CHECKPOINTS is set."""
    port = free_port()
    command = [
        str(CREDIT),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--database",
        url,
        "--outbox",
        str(folder / "outbox"),
        "--log-level",
        "warning",
    ]
    if schema:
        command += ["--schema", schema]
    log_path = folder / f"serve-{port}.log"
    base = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        # Checkpoints are per journal: this server's go beside its outbox unless the
        # caller chose a folder.
        env = {"CREDIT_CHECKPOINTS": str(folder / "checkpoints"), **os.environ}
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + startup_timeout_s
            while not _healthy(base):
                if process.poll() is not None:
                    raise RuntimeError(
                        f"credit serve exited {process.returncode}: "
                        + log_path.read_text(errors="replace")
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError(f"credit serve did not answer in {startup_timeout_s} s")
                time.sleep(0.2)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
