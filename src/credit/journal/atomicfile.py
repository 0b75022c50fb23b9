"""Write a file whole or not at all, and never over another one unless asked.

The bytes go to a temporary file in the same folder, are flushed to disk, take their
mode, and only then get their name: by ``os.link`` when nothing may be replaced (the
link fails if the name exists, so two writers cannot both win), by ``os.replace``
when replacing is asked for. A crash leaves at most a hidden ``.NAME.tmp-*`` file,
never a half-written one under the real name.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, mode: int, replace: bool = False) -> None:
    """Write ``data`` at ``path`` with permission bits ``mode``.

    Raises :class:`FileExistsError` when ``path`` exists and ``replace`` is false.
    """
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _fsync_directory(path.parent)
