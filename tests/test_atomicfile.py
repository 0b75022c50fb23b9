"""Files written whole, many at once, as one at a time would leave them.

:func:`credit.journal.atomicfile.write_all` flushes every file before any takes its
name and each folder once; what it leaves must be what writing each group's files one
after the other leaves (a group stops at its first failure, no group stops another).
The reference here is a plain model of the folder (a name's bytes), not the module's
own single write. Each holds for every way the module may take on a system: files
staged unnamed or under a temporary name, flushed one by one or by their file system
at once (``WAYS``).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from credit.journal import atomicfile
from credit.journal.atomicfile import OPEN_FILES, AtomicWrite, write_all, write_atomic

# (files staged unnamed, flushed by their file system at once)
WAYS = [(True, True), (True, False), (False, True), (False, False)]
WAY_IDS = ["unnamed-syncfs", "unnamed-fsync", "named-syncfs", "named-fsync"]


def file_system_flush(flushed: list[int] | None = None) -> Callable[[int], None]:
    """A stand-in for syncfs where the system has none (the module's logic is what is
    tested): the whole system flushed; each descriptor it is called with recorded."""

    def flush(fd: int) -> None:
        if flushed is not None:
            flushed.append(fd)
        os.sync()

    return flush


def take_way(monkeypatch: pytest.MonkeyPatch, unnamed: bool, syncfs: bool) -> None:
    if unnamed and not atomicfile._UNNAMED:
        pytest.skip("this system has no unnamed files (O_TMPFILE and /proc)")
    monkeypatch.setattr(atomicfile, "_UNNAMED", unnamed)
    real = atomicfile._syncfs() or file_system_flush()
    monkeypatch.setattr(atomicfile, "_syncfs", lambda: real if syncfs else None)
    monkeypatch.setattr(atomicfile, "SYNCFS_FILES", 2)  # the examples' few files too


NAMES = st.sampled_from([f"f{i}.json" for i in range(6)])
WRITE = st.tuples(NAMES, st.binary(max_size=40), st.booleans())
GROUPS = st.lists(st.lists(WRITE, min_size=1, max_size=3), max_size=8)
BEFORE = st.dictionaries(NAMES, st.binary(max_size=10), max_size=3)


def expected(
    before: dict[str, bytes], groups: list[list[tuple[str, bytes, bool]]]
) -> tuple[dict[str, bytes], list[bool]]:
    """The folder and each group's success, each file written in turn."""
    folder, ok = dict(before), []
    for group in groups:
        failed = False
        for name, data, replace in group:
            if name in folder and not replace:
                failed = True
                break
            folder[name] = data
        ok.append(not failed)
    return folder, ok


@pytest.mark.parametrize(("unnamed", "syncfs"), WAYS, ids=WAY_IDS)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=BEFORE, groups=GROUPS)
def test_writing_groups_together_leaves_what_writing_them_in_turn_leaves(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    unnamed: bool,
    syncfs: bool,
    before: dict[str, bytes],
    groups: list[list[tuple[str, bytes, bool]]],
) -> None:
    take_way(monkeypatch, unnamed, syncfs)
    folder = tmp_path_factory.mktemp("files")
    for name, data in before.items():
        (folder / name).write_bytes(data)
    problems = write_all(
        [[AtomicWrite(folder / n, d, 0o640, replace=r) for n, d, r in g] for g in groups]
    )
    want, ok = expected(before, groups)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == want  # no temporary file
    assert [p is None for p in problems] == ok
    assert all(p is None or isinstance(p, FileExistsError) for p in problems)
    for name in set(want) - set(before):
        assert (folder / name).stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("unnamed", [True, False], ids=["unnamed", "named"])
def test_more_files_than_are_held_open_at_once_are_written_in_chunks_each_flushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    """One by one: each file flushed, then the folder once a chunk."""
    take_way(monkeypatch, unnamed, syncfs=False)
    flushed: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(atomicfile.os, "fsync", fsync)
    groups = [
        [
            AtomicWrite(tmp_path / f"c{i}.report", b"r", 0o644),
            AtomicWrite(tmp_path / f"c{i}", b"n", 0o644),
        ]
        for i in range(OPEN_FILES)  # twice OPEN_FILES files
    ]
    assert write_all(groups) == [None] * OPEN_FILES
    assert len(list(tmp_path.iterdir())) == 2 * OPEN_FILES
    files = [f for f in flushed if f != str(tmp_path)]
    assert len(files) == 2 * OPEN_FILES  # each file flushed
    assert flushed.count(str(tmp_path)) == 2  # the folder once a chunk


@pytest.mark.parametrize("unnamed", [True, False], ids=["unnamed", "named"])
def test_a_chunk_s_files_are_flushed_by_their_file_system_once_where_it_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    """By the file system: one flush a chunk for each folder's files, before any file
    of the chunk takes its name, then each folder once; no file flushed alone."""
    take_way(monkeypatch, unnamed, syncfs=True)
    events: list[tuple[str, str, int]] = []  # (what, which folder, names in the folders)
    real_fsync = os.fsync
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()

    def named() -> int:  # (a temporary name is hidden)
        return sum(not n.startswith(".") for f in folders for n in os.listdir(f))

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), named()))
        real_fsync(fd)

    def syncfs(fd: int) -> None:
        events.append(("syncfs", str(Path(os.readlink(f"/proc/self/fd/{fd}")).parent), named()))
        os.sync()

    monkeypatch.setattr(atomicfile.os, "fsync", fsync)
    monkeypatch.setattr(atomicfile, "_syncfs", lambda: syncfs)
    groups = [
        [AtomicWrite(folders[i % 2] / f"c{i}.report", b"r", 0o644)] for i in range(OPEN_FILES + 2)
    ]  # two chunks: the first in both folders, the second in both
    assert write_all(groups) == [None] * len(groups)
    assert named() == len(groups)
    first, second = events[:4], events[4:]
    for chunk, before in ((first, 0), (second, OPEN_FILES)):
        assert sorted(e[:2] for e in chunk) == sorted(
            [("syncfs", str(f)) for f in folders] + [("fsync", str(f)) for f in folders]
        )
        assert [e[0] for e in chunk] == ["syncfs", "syncfs", "fsync", "fsync"]
        assert [e[2] for e in chunk[:2]] == [before, before]  # flushed before any is named
    assert len(events) == 4 + 4


def test_fewer_files_than_syncfs_files_are_each_flushed_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One file, or a few (a service's one notice and its report): each its own flush,
    so they never wait for what else waits on the file system; SYNCFS_FILES or more:
    the file system's flush, once."""
    used: list[int] = []
    monkeypatch.setattr(atomicfile, "_syncfs", lambda: file_system_flush(used))
    write_atomic(tmp_path / "one", b"1", mode=0o644)
    few = atomicfile.SYNCFS_FILES - 1
    write_all([[AtomicWrite(tmp_path / f"few{i}", b"2", 0o644) for i in range(few)]])
    assert used == []
    many = atomicfile.SYNCFS_FILES
    write_all([[AtomicWrite(tmp_path / f"many{i}", b"3", 0o644)] for i in range(many)])
    assert len(used) == 1
    assert len(list(tmp_path.iterdir())) == 1 + few + many


def test_a_file_system_that_fails_its_flush_fails_every_group_with_a_file_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed flush names no file of that folder's groups; another folder's groups,
    flushed, are written."""
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.mkdir()
    good.mkdir()

    def syncfs(fd: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{fd}")).parent == bad:
            raise OSError(errno.EIO, "the disk failed")
        os.sync()

    monkeypatch.setattr(atomicfile, "_syncfs", lambda: syncfs)
    monkeypatch.setattr(atomicfile, "SYNCFS_FILES", 2)
    problems = write_all(
        [
            [AtomicWrite(good / "g1", b"1", 0o644), AtomicWrite(bad / "b1", b"1", 0o644)],
            [AtomicWrite(bad / "b2", b"2", 0o644)],
            [AtomicWrite(good / "g2", b"2", 0o644)],
        ]
    )
    assert isinstance(problems[0], OSError) and problems[0].errno == errno.EIO
    assert isinstance(problems[1], OSError) and problems[1].errno == errno.EIO
    assert problems[2] is None
    # the first group's file before its failure is named, as one at a time would leave it
    assert sorted(p.name for p in good.iterdir()) == ["g1", "g2"]
    assert list(bad.iterdir()) == []  # nothing named, no temporary file left


def test_a_file_system_without_unnamed_files_gets_named_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where opening an unnamed file is refused (a file system without them), the file
    is written under a temporary name instead, and nothing of it is left."""
    refused: list[str] = []
    real_open = os.open

    def open_(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        if atomicfile._TMPFILE and flags & atomicfile._TMPFILE == atomicfile._TMPFILE:
            refused.append(str(path))
            raise OSError(errno.EOPNOTSUPP, "not on this file system")
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(atomicfile.os, "open", open_)
    monkeypatch.setattr(atomicfile, "_UNNAMED", True)
    write_all(
        [[AtomicWrite(tmp_path / "a", b"a", 0o640), AtomicWrite(tmp_path / "b", b"b", 0o600)]]
    )
    assert refused == [str(tmp_path), str(tmp_path)]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {"a": b"a", "b": b"b"}
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o640


def test_the_system_s_syncfs_flushes_and_names_a_failure() -> None:
    """Linux 5.8 and later: syncfs is taken, and a failure reaches the caller as an
    OSError with its errno."""
    syncfs = atomicfile._syncfs()
    if syncfs is None:
        pytest.skip("no syncfs that reports failures on this system")
    fd = os.open(".", os.O_RDONLY)
    try:
        syncfs(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError) as info:
        syncfs(fd)  # closed
    assert info.value.errno == errno.EBADF


def test_a_file_that_cannot_be_written_fails_its_group_alone(tmp_path: Path) -> None:
    (tmp_path / "taken").write_bytes(b"first")
    problems = write_all(
        [
            [
                AtomicWrite(tmp_path / "a", b"a", 0o644),
                AtomicWrite(tmp_path / "missing" / "b", b"b", 0o644),
            ],
            [AtomicWrite(tmp_path / "c", b"c", 0o644)],
            [
                AtomicWrite(tmp_path / "taken", b"second", 0o644),
                AtomicWrite(tmp_path / "d", b"d", 0o644),
            ],
        ]
    )
    assert isinstance(problems[0], FileNotFoundError)  # no such folder
    assert problems[1] is None
    assert isinstance(problems[2], FileExistsError)
    # a group's files before its failure are written, as one at a time; none after
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "c", "taken"]
    assert (tmp_path / "taken").read_bytes() == b"first"
    with pytest.raises(FileExistsError):
        write_atomic(tmp_path / "c", b"again", mode=0o644)
    write_atomic(tmp_path / "c", b"again", mode=0o644, replace=True)
    assert (tmp_path / "c").read_bytes() == b"again"
