"""Write a file whole or not at all, and never over another one unless asked.

The bytes go to a temporary file in the same folder, are flushed to disk, take their
mode, and only then get their name: by ``os.link`` when nothing may be replaced (the
link fails if the name exists, so two writers cannot both win), by ``os.replace``
when replacing is asked for. A crash leaves at most a hidden ``.NAME.tmp-*`` file,
never a half-written one under the real name. The folder is flushed after the name is
made, so the name outlives a power cut once the write returns.

Where the system allows it (Linux's ``O_TMPFILE``, with ``/proc`` mounted), a file
that may replace nothing is written without any name first: an unnamed file in the
folder, linked to its name through ``/proc/self/fd`` once flushed. The folder then
never holds a temporary name (nothing to create, nor to remove after, and nothing left
by a crash); the promise is the same. A file system that refuses unnamed files gets a
named temporary file, as a replacing write always does (an unnamed file can only be
linked to a name that is free).

Many files at once (:func:`write_all`, the outbox's notices of a run's group): every
file's bytes are written first, then flushed, then each takes its name, then each
folder is flushed once. The promise for each file is the same; the file system does
less. On Linux 5.8 and later the files are flushed by ``syncfs`` on each folder's file
system, once for all of them (one journal commit, where flushing each file commits
the journal once a file; from 5.8 ``syncfs`` reports a failure to write back, as
``fsync`` does, and a failure fails every group with a file on that file system);
elsewhere, and for fewer than :data:`SYNCFS_FILES` files (a service's one notice and
its report: ``syncfs`` would wait for whatever else is waiting on the file system too,
another program's writes), each file is flushed alone. Measured here (files of
2.5 KB, 60 a chunk): about 60 us of system CPU a file flushed alone against 3 so; in
``credit run`` on 2 workers (4,000 generated cases, two pairs alternating with the
files flushed one by one) 579-602 cases a second against 543-555, the system CPU a
case 0.13-0.19 ms against 0.27-0.29. ``syncfs`` flushes whatever else is waiting on
that file system too: an outbox on a volume of its own waits for nothing else.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["AtomicWrite", "write_all", "write_atomic"]

# Files held open at once by write_all (each a descriptor until it is flushed): a
# larger batch is written in chunks of this many.
OPEN_FILES: Final = 64

# A chunk of at least this many files is flushed by its file systems at once (syncfs,
# where it can be); fewer, each file alone. syncfs flushes whatever else waits on the
# file system too (another program's writes), which a few files (a service's one
# notice and its report) should not wait for; a run's group of notices gains from it.
SYNCFS_FILES: Final = 8

# Unnamed files: the flag, where the system has one, and /proc to name them through
# (read once: a process without /proc mounted writes named temporary files).
_TMPFILE: Final = getattr(os, "O_TMPFILE", 0)
_UNNAMED = bool(_TMPFILE) and os.path.isdir("/proc/self/fd")
# What opening an unnamed file raises on a file system that has none of them.
_NO_UNNAMED: Final = frozenset({errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL})


@dataclass(frozen=True, slots=True)
class AtomicWrite:
    """One file to write: its bytes, its permission bits, and whether it may replace a
    file of that name (else the write fails with FileExistsError if the name exists)."""

    path: Path
    data: bytes
    mode: int
    replace: bool = False


def write_atomic(path: Path, data: bytes, *, mode: int, replace: bool = False) -> None:
    """Write ``data`` at ``path`` with permission bits ``mode``.

    Raises :class:`FileExistsError` when ``path`` exists and ``replace`` is false.
    """
    problem = write_all([[AtomicWrite(path, data, mode, replace)]])[0]
    if problem is not None:
        raise problem


def write_all(groups: Sequence[Sequence[AtomicWrite]]) -> list[Exception | None]:
    """Each group's files written as :func:`write_atomic` writes each, one after the
    other: a group's file takes its name only once those before it in the group have
    theirs (a failure stops the group there); one group's failure never stops another.
    What stopped each group (None: every file of it written). When it returns, every
    file written is on disk under its name."""
    problems: list[Exception | None] = [None] * len(groups)
    at, chunk = 0, 0
    while at < len(groups):  # whole groups, about OPEN_FILES files at a time
        end = at
        while end < len(groups) and (end == at or chunk + len(groups[end]) <= OPEN_FILES):
            chunk += len(groups[end])
            end += 1
        problems[at:end] = _write_chunk(groups[at:end])
        at, chunk = end, 0
    return problems


class _Staged:
    """A file's bytes written under a temporary name (``temp``, until the file takes
    its own), or under none (``temp`` None from the start: an unnamed file, named by
    linking its descriptor, kept open until then)."""

    __slots__ = ("fd", "temp", "write")

    def __init__(self, write: AtomicWrite, fd: int, temp: Path | None) -> None:
        self.write, self.fd, self.temp = write, fd, temp


def _write_chunk(groups: Sequence[Sequence[AtomicWrite]]) -> list[Exception | None]:
    problems: list[Exception | None] = [None] * len(groups)
    staged: list[list[_Staged]] = [[] for _ in groups]
    flushed = [0] * len(groups)  # how many of each group's files are flushed to disk
    folders: dict[Path, list[int]] = {}  # the groups that named a file in each folder
    opened: dict[Path, int] = {}  # a descriptor of each folder an unnamed file is linked in
    try:
        for g, group in enumerate(groups):  # every file's bytes, under a temporary name
            for write in group:
                try:
                    staged[g].append(_stage(write))
                except Exception as err:
                    problems[g] = err
                    break
        syncfs = _syncfs() if sum(map(len, staged)) >= SYNCFS_FILES else None
        unflushed: dict[Path, Exception] = {}  # a folder whose file system failed its flush
        if syncfs is not None:  # each file system once, for all its files
            for folder, fd in {i.write.path.parent: i.fd for f in staged for i in f}.items():
                try:
                    syncfs(fd)
                except Exception as err:
                    unflushed[folder] = err
        for g, files in enumerate(staged):  # each flushed to disk
            for item in files:
                try:
                    if syncfs is None:
                        os.fsync(item.fd)
                    elif item.write.path.parent in unflushed:
                        raise unflushed[item.write.path.parent]
                    if item.temp is not None:  # a named one is done with its descriptor
                        fd, item.fd = item.fd, -1
                        os.close(fd)
                except Exception as err:
                    problems[g] = problems[g] or err
                    break
                flushed[g] += 1
        for g, files in enumerate(staged):  # then each takes its name, in order
            for item in files[: flushed[g]]:
                path = item.write.path
                try:
                    if item.temp is None:
                        at = opened.get(path.parent)
                        if at is None:
                            at = opened[path.parent] = os.open(path.parent, _FOLDER)
                        os.link(
                            f"/proc/self/fd/{item.fd}",
                            path.name,
                            dst_dir_fd=at,
                            follow_symlinks=True,
                        )
                    elif item.write.replace:
                        os.replace(item.temp, path)
                        item.temp = None  # the temporary name is gone with it
                    else:
                        os.link(item.temp, path)
                except Exception as err:
                    problems[g] = problems[g] or err
                    break
                folders.setdefault(path.parent, []).append(g)
    finally:
        for files in staged:
            for item in files:
                if item.fd >= 0:
                    os.close(item.fd)
                if item.temp is not None:
                    with contextlib.suppress(FileNotFoundError):
                        item.temp.unlink()
    try:
        for folder, named in folders.items():  # the names made durable, each folder once
            try:
                at = opened.get(folder)
                if at is None:
                    at = opened[folder] = os.open(folder, _FOLDER)
                os.fsync(at)
            except Exception as err:  # no name in it is durable: each such group failed
                for g in named:
                    problems[g] = problems[g] or err
    finally:
        for at in opened.values():
            os.close(at)
    return problems


_FOLDER: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


def _stage(write: AtomicWrite) -> _Staged:
    """The file's bytes and mode in its folder, unnamed where it can be, else under a
    temporary name (not flushed)."""
    fd = _unnamed(write)
    if fd is not None:
        staged = _Staged(write, fd, None)
    else:
        fd, temp = tempfile.mkstemp(dir=write.path.parent, prefix=f".{write.path.name}.tmp-")
        staged = _Staged(write, fd, Path(temp))
    try:
        os.fchmod(staged.fd, write.mode)  # (the mode the file was opened with is umasked)
        view = memoryview(write.data)
        while view:
            view = view[os.write(staged.fd, view) :]
    except BaseException:
        os.close(staged.fd)
        if staged.temp is not None:
            with contextlib.suppress(FileNotFoundError):
                staged.temp.unlink()
        raise
    return staged


@functools.cache
def _syncfs() -> Callable[[int], None] | None:
    """Linux's ``syncfs``: every file of the file system a descriptor is on flushed to
    disk at once (one journal commit for all), raising OSError when it failed; None where
    there is none, or where it cannot tell of a failure (Linux before 5.8 reported none)."""
    release = re.match(r"(\d+)\.(\d+)", os.uname().release) if sys.platform == "linux" else None
    if release is None or (int(release[1]), int(release[2])) < (5, 8):
        return None
    import ctypes  # (only for a write of several files: not at the command line's start)

    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):  # a C library without it
        return None
    call.argtypes, call.restype = [ctypes.c_int], ctypes.c_int

    def syncfs(fd: int) -> None:
        if call(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return syncfs


def _unnamed(write: AtomicWrite) -> int | None:
    """A descriptor of a new unnamed file in the write's folder; None when the write
    may replace a file (an unnamed file can only be linked to a free name) or the
    system or its file system has no unnamed files."""
    if write.replace or not _UNNAMED:
        return None
    try:
        return os.open(write.path.parent, _TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    except OSError as err:
        if err.errno in _NO_UNNAMED:
            return None
        raise
