"""Files written whole, many at once, as one at a time would leave them.

:func:`credit.journal.atomicfile.write_all` flushes every file before any takes its
name and each folder once; what it leaves must be what writing each group's files one
after the other leaves (a group stops at its first failure, no group stops another).
The reference here is a plain model of the folder (a name's bytes), not the module's
own single write.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from credit.journal.atomicfile import OPEN_FILES, AtomicWrite, write_all, write_atomic

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


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=BEFORE, groups=GROUPS)
def test_writing_groups_together_leaves_what_writing_them_in_turn_leaves(
    tmp_path_factory: pytest.TempPathFactory,
    before: dict[str, bytes],
    groups: list[list[tuple[str, bytes, bool]]],
) -> None:
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


def test_more_files_than_are_held_open_at_once_are_written_in_chunks_each_flushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from credit.journal import atomicfile

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
