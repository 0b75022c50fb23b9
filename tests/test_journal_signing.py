"""Signing tree heads when two writers share one journal (two service workers).

Before a store signs its tree head it checks that the journal still extends the newest
checkpoint kept, whose root it needs. That checkpoint is often the other writer's, at a
size this store only passed while catching up; the store keeps the frontiers of the
latest sizes it saw (``KeptFrontiers``), so the root there costs the leaves after the
nearest one, not the whole journal on every write (it did: 41 ms a signature at 20,000
entries, growing with the journal).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from credit.errors import InputError, JournalIntegrityError
from credit.journal import InMemoryStore, SqlStore, open_store
from credit.journal.audit import load_checkpoints
from credit.journal.checkpoint import CHECKPOINT_SUFFIX, newest_file
from credit.journal.merkle import KeptFrontiers, MerkleLog, leaf_hash, root
from credit.journal.writerlock import LOCK_SUFFIX, SIGNER_LOCK
from test_journal_store import sql_backend
from test_journal_writerlock import lock_is_free


@pytest.fixture(params=("sqlite", "postgresql"))
def two(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SqlStore, SqlStore]]:
    """Two stores, as two worker processes would open them, on one journal."""
    with (
        sql_backend(request.param, tmp_path) as (first, url, schema),
        open_store(url, schema=schema) as second,
    ):
        yield first, second


def appended(store: SqlStore, count: int) -> None:
    """``count`` entries, one each for cases C-0, C-1, ..."""
    for i in range(count):
        store.append(f"C-{i}", "step.done", {"i": i})


class LeafCount:
    """Counts the stored leaf hashes a store reads (its ``_stored_leaves``)."""

    def __init__(self, store: SqlStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read = 0
        stored = store._stored_leaves

        def counted(*args: Any, **kwargs: Any) -> Iterator[bytes]:
            for leaf in stored(*args, **kwargs):
                self.read += 1
                yield leaf

        monkeypatch.setattr(store, "_stored_leaves", counted)


def test_writers_signing_in_turn_read_only_the_leaves_the_other_appended(
    two: tuple[SqlStore, SqlStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two
    folder = tmp_path / "checkpoints"
    appended(first, 300)
    first.checkpoint(folder)
    counts = {id(s): LeafCount(s, monkeypatch) for s in (first, second)}
    second.append("C-second", "step.done", {})  # reads the journal once: it is new
    assert counts[id(second)].read == 300
    for turn in range(6):
        writer = (second, first)[turn % 2]
        count = counts[id(writer)]
        before = count.read
        writer.append(f"T-{turn}", "step.done", {"turn": turn})
        writer.checkpoint(folder)  # over the other's newest checkpoint
        assert count.read - before <= 2, f"turn {turn} read {count.read - before} leaves"
    size = len(first.entries())
    kept, findings = load_checkpoints(folder, first.key.verifier, origin=first.key.name)
    assert findings == [] and kept[-1].checkpoint.size == size
    assert [k.checkpoint.size for k in kept] == [300, *range(size - 5, size + 1)]  # 302 on
    assert first.audit(kept).ok and second.audit(kept).ok


def test_a_store_that_never_saw_the_newest_size_still_checks_it_from_the_leaves(
    two: tuple[SqlStore, SqlStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two
    folder = tmp_path / "checkpoints"
    second.append("A", "step.done", {})
    second.tree_head()  # the second store knows the journal at 1 entry
    appended(first, 40)
    first.checkpoint(folder)  # at 41, a size the second store never held
    count = LeafCount(second, monkeypatch)
    second.checkpoint(folder)
    assert count.read == 40  # the leaves after the 1 it kept: to 41, then no more
    kept, findings = load_checkpoints(folder, first.key.verifier, origin=first.key.name)
    assert findings == [] and [k.checkpoint.size for k in kept] == [41]


def test_a_store_opened_after_the_history_was_rewritten_refuses_to_sign(
    two: tuple[SqlStore, SqlStore], tmp_path: Path
) -> None:
    first, second = two
    folder = tmp_path / "checkpoints"
    appended(first, 5)
    first.checkpoint(folder)
    with first._engine.begin() as conn:  # a leaf of the signed tree edited in place
        table = first._entries
        conn.execute(
            table.update().where(table.c.seq == 2).values(leaf_hash=leaf_hash(b"forged").hex())
        )
    second.append("C-5", "step.done", {})  # a store new to the journal reads every leaf
    with pytest.raises(JournalIntegrityError, match="no longer hash") as refused:
        second.checkpoint(folder)
    assert refused.value.check == "consistency"


def test_the_in_memory_store_signs_over_its_own_checkpoints_from_the_frontier_kept(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    folder = tmp_path / "checkpoints"
    for i in range(5):
        for j in range(i + 1):
            store.append(f"C-{i}", "step.done", {"j": j})
        store.checkpoint(folder)
    kept, findings = load_checkpoints(folder, store.key.verifier, origin=store.key.name)
    assert findings == [] and [k.checkpoint.size for k in kept] == [1, 3, 6, 10, 15]
    assert store.audit(kept).ok


# ------------------------------------------------------------------ a tree handed over


def test_a_store_given_another_writers_tree_reads_only_the_leaves_after_it(
    two: tuple[SqlStore, SqlStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run's workers hand the tree they grew to the process that signs the checkpoint
    first, second = two
    appended(first, 40)
    first.tree_head()
    second.resume_tree(*first.tree_frontier())
    first.append("C-40", "step.done", {})
    count = LeafCount(second, monkeypatch)
    size, head = second.tree_head()
    assert count.read == 1 and size == 41
    assert head == root(first.leaf_hashes()) == first.tree_head()[1]


def test_a_store_not_given_a_tree_reads_every_leaf(
    two: tuple[SqlStore, SqlStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two
    appended(first, 41)
    count = LeafCount(second, monkeypatch)
    assert second.tree_head() == first.tree_head() and count.read == 41


def test_a_tree_larger_than_the_journal_is_not_taken(
    two: tuple[SqlStore, SqlStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two
    appended(first, 5)
    foreign = MerkleLog.from_leaf_hashes(LEAVES[:6])  # six leaves of another journal
    second.resume_tree(foreign.size, foreign.frontier)
    appended(first, 3)  # the journal grows past it: the foreign tree would now be used
    count = LeafCount(second, monkeypatch)
    assert second.tree_head() == first.tree_head() == (8, root(first.leaf_hashes()))
    assert count.read == 8


def test_a_smaller_tree_handed_over_leaves_the_store_s_own(
    two: tuple[SqlStore, SqlStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two
    appended(first, 6)
    smaller = MerkleLog.from_leaf_hashes(first.leaf_hashes(2))
    second.tree_head()  # grown to 6
    second.resume_tree(smaller.size, smaller.frontier)
    count = LeafCount(second, monkeypatch)
    assert second.tree_head() == first.tree_head() and count.read == 0


def test_a_frontier_of_the_wrong_length_is_refused_by_every_store(
    two: tuple[SqlStore, SqlStore],
) -> None:
    first, _ = two
    appended(first, 3)
    for store in (first, InMemoryStore()):
        with pytest.raises(InputError, match="frontier"):
            store.resume_tree(3, [LEAVES[0]])


def test_the_in_memory_store_hands_over_its_whole_tree() -> None:
    store = InMemoryStore()
    for i in range(5):
        store.append(f"C-{i}", "step.done", {})
    size, frontier = store.tree_frontier()
    assert size == 5 and MerkleLog.from_frontier(size, frontier).root() == store.tree_head()[1]
    store.resume_tree(size, frontier)  # its own tree is always whole: nothing changes
    assert store.tree_head() == (5, root(store.leaf_hashes()))


# ------------------------------------------------------------------ the kept frontiers


LEAVES = [leaf_hash(bytes([i])) for i in range(70)]


@given(
    kept=st.lists(st.integers(0, 70), max_size=12),
    limit=st.integers(1, 8),
    size=st.integers(0, 70),
)
def test_a_log_grown_from_any_kept_frontier_has_the_root_of_the_whole_prefix(
    kept: list[int], limit: int, size: int
) -> None:
    frontiers = KeptFrontiers(limit)
    for n in kept:
        frontiers.keep(MerkleLog.from_leaf_hashes(LEAVES[:n]))
    log = frontiers.start(size)
    remembered = [n for n in dict.fromkeys(reversed(kept))][:limit]  # the newest, once each
    assert log.size == max((n for n in remembered if n <= size), default=0)
    for leaf in LEAVES[log.size : size]:
        log.append(leaf)
    assert log.size == size and log.root() == root(LEAVES[:size])


def test_the_oldest_frontier_is_forgotten_first_and_a_size_kept_again_is_newest() -> None:
    frontiers = KeptFrontiers(2)
    for n in (3, 5, 3, 9):  # 3 again is the newest of 3 and 5; then 9 pushes 5 out
        frontiers.keep(MerkleLog.from_leaf_hashes(LEAVES[:n]))
    assert frontiers.start(8).size == 3
    assert frontiers.start(9).size == 9
    assert frontiers.start(2).size == 0


def test_keeping_no_frontier_at_all_is_refused() -> None:
    with pytest.raises(InputError, match="at least one"):
        KeptFrontiers(0)


def test_signing_finds_the_newest_checkpoint_by_the_folder_s_pointer_not_a_listing(
    two: tuple[SqlStore, SqlStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    first, second = two
    folder = tmp_path / "checkpoints"
    listings: list[str] = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda d: listings.append(d) or real_listdir(d))
    at_first = 0
    for turn in range(20):  # the folder gains a file with every signature
        writer = (first, second)[turn % 2]
        writer.append(f"T-{turn}", "step.done", {"turn": turn})
        writer.checkpoint(folder)
        at_first = at_first or len(listings)
    assert at_first and len(listings) == at_first  # only the first signature's: a new folder
    kept, findings = load_checkpoints(folder, first.key.verifier, origin=first.key.name)
    assert findings == [] and [k.checkpoint.size for k in kept] == list(range(1, 21))


def test_a_writer_whose_entries_a_newer_checkpoint_covers_need_not_sign_again(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}"
    folder = tmp_path / "checkpoints"
    with open_store(url) as first, open_store(url) as second:
        assert first.covered(folder) is None  # nothing committed by this writer yet
        first.append("A", "note", {})
        assert first.covered(folder) is None  # nothing signed yet
        second.append("B", "note", {})
        signed = second.checkpoint(folder)  # size 2: covers the first writer's entry
        assert first.covered(folder) == signed
        first.append("A", "note", {})  # entry 3: not covered any more
        assert first.covered(folder) is None
        newest = first.checkpoint(folder)
        assert newest.name.startswith(f"{3:020d}")
        assert second.covered(folder) == newest
        # a newest checkpoint that does not verify is never taken as cover
        newest.write_bytes(b"not a checkpoint\n")
        assert second.covered(folder) is None


def test_a_writer_asking_for_cover_reads_no_checkpoint_named_for_fewer_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common case of one writer: the newest checkpoint is its own, named for fewer
    entries than it has since committed; its name says so, and it is not read or
    verified. One named for enough entries is verified before it is taken as cover,
    and one whose name claims more than it signs is never taken."""
    import credit.journal.tree as tree

    verified: list[str] = []
    real = tree.verify_checkpoint

    def counting(data: bytes, *args: Any, **kwargs: Any) -> Any:
        verified.append(str(kwargs.get("source")))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(tree, "verify_checkpoint", counting)
    folder = tmp_path / "checkpoints"
    with open_store(f"sqlite:///{tmp_path / 'j.db'}") as store:
        store.append("A", "note", {})
        signed = store.checkpoint(folder)  # size 1
        verified.clear()
        store.append("A", "note", {})  # size 2: the newest checkpoint is named for 1
        assert store.covered(folder) is None and verified == []
        second = store.checkpoint(folder)  # size 2
        verified.clear()
        assert store.covered(folder) == second and verified == [str(second)]
        store.append("A", "note", {})  # size 3; a copy of the size-2 head named for 3
        (folder / f"{3:020d}{signed.name[20:]}").write_bytes(second.read_bytes())
        (folder / ".newest").write_text(f"{3:020d}{signed.name[20:]}\n")
        assert store.covered(folder) is None  # read, and refused: it signs 2 entries


def test_a_service_write_signs_only_when_no_newer_head_covers_it(tmp_path: Path) -> None:
    store = InMemoryStore()
    folder = tmp_path / "checkpoints"
    store.append("A", "note", {})
    assert store.covered(folder) is None
    path = store.checkpoint(folder)
    assert store.covered(folder) == path
    store.append("A", "note", {})
    assert store.covered(folder) is None


def test_a_store_takes_its_own_last_checkpoint_as_read_while_the_folder_holds_its_bytes(
    two: tuple[SqlStore, SqlStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signing checks the journal against the newest checkpoint kept. When that is the
    one this store signed last, byte for byte, its signature is the store's own over
    those bytes and is not verified again; the other writer's is verified, and so is
    the store's own once a byte of it changed: a forgery is refused."""
    import credit.journal.tree as tree

    verified: list[str] = []
    real = tree.verify_checkpoint

    def counting(data: bytes, *args: Any, **kwargs: Any) -> Any:
        verified.append(Path(str(kwargs.get("source"))).name)
        return real(data, *args, **kwargs)

    monkeypatch.setattr(tree, "verify_checkpoint", counting)
    first, second = two
    folder = tmp_path / "checkpoints"
    first.append("A", "step.done", {})
    first.checkpoint(folder)  # size 1
    verified.clear()
    first.append("A", "step.done", {})
    first.checkpoint(folder)  # size 2, over its own size 1
    assert verified == []
    second.append("B", "step.done", {})
    second.checkpoint(folder)  # size 3, over the first store's size 2
    assert verified == [f"{2:020d}.checkpoint"]
    first.append("A", "step.done", {})
    first.checkpoint(folder)  # size 4, over the second store's size 3
    verified.clear()
    own = folder / f"{4:020d}.checkpoint"
    lines = own.read_text(encoding="utf-8").split("\n")
    lines[2] = "A" * 43 + "="  # another root under the same signature
    own.write_text("\n".join(lines), encoding="utf-8")
    first.append("A", "step.done", {})
    with pytest.raises(JournalIntegrityError) as refused:
        first.checkpoint(folder)
    assert refused.value.check == "signature" and verified == [own.name]


def test_a_checkpoint_signed_last_is_taken_as_read_only_for_the_key_that_signed_it(
    tmp_path: Path,
) -> None:
    from credit.journal.signer import ephemeral_key
    from credit.journal.tree import LastSigned, newest_checkpoint, sign_head

    signer, other = ephemeral_key(), ephemeral_key()
    last = LastSigned()
    leaves = [leaf_hash(b"entry")]
    sign_head(signer, tmp_path, 1, root(leaves), lambda n: root(leaves[:n]), last=last)
    kept = newest_checkpoint(tmp_path, signer.verifier, origin=signer.name, last=last)
    assert kept is not None and kept.checkpoint.size == 1
    with pytest.raises(JournalIntegrityError) as unknown:
        newest_checkpoint(tmp_path, other.verifier, last=last)
    assert unknown.value.check == "unknown-key"


# ---------------------------------------------------------------- signing beside writers
#
# A checkpoint signs the committed head, read without the journal's write lock: the
# folder's signers queue on a lock of their own (writerlock.signer_lock), so signing (a
# signature and a durable file) never holds the journal's writers up. Under load the
# service's requests spent about a quarter of their time under the write lock signing.


def test_a_checkpoint_is_signed_under_the_folders_signer_lock_not_the_journals_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.journal.sql as sql

    db, folder = tmp_path / "j.db", tmp_path / "checkpoints"
    seen: list[tuple[bool, bool]] = []
    real = sql.sign_head

    def watched(*args: Any, **kwargs: Any) -> Path:
        seen.append(
            (lock_is_free(db.with_name(db.name + LOCK_SUFFIX)), lock_is_free(folder / SIGNER_LOCK))
        )
        return real(*args, **kwargs)

    monkeypatch.setattr(sql, "sign_head", watched)
    with open_store(f"sqlite:///{db}") as store:
        store.append("A", "note", {})
        store.checkpoint(folder)
    assert seen == [(True, False)], "while signing: (write lock free?, signer lock free?)"
    assert lock_is_free(folder / SIGNER_LOCK)  # let go after
    assert newest_file(folder) == f"{1:020d}{CHECKPOINT_SUFFIX}"  # the lock file is hidden


def test_a_writer_commits_while_another_store_is_signing_and_the_next_checkpoint_covers_it(
    two: tuple[SqlStore, SqlStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.journal.sql as sql

    first, second = two
    folder = tmp_path / "checkpoints"
    first.append("A", "step.done", {})
    signing, committed = threading.Event(), threading.Event()
    went_on: list[bool] = []
    real = sql.sign_head

    def paused(*args: Any, **kwargs: Any) -> Path:
        signing.set()
        went_on.append(committed.wait(30))  # the other writer commits meanwhile
        return real(*args, **kwargs)

    monkeypatch.setattr(sql, "sign_head", paused)
    signed: list[Path] = []
    signer = threading.Thread(target=lambda: signed.append(first.checkpoint(folder)))
    signer.start()
    assert signing.wait(30)
    second.append("B", "step.done", {})  # would wait for the signature under the write lock
    committed.set()
    signer.join(60)
    assert went_on == [True] and signed[0].name == f"{1:020d}{CHECKPOINT_SUFFIX}"
    assert second.covered(folder) is None  # the head signed was read before B's entry
    monkeypatch.setattr(sql, "sign_head", real)
    newest = second.checkpoint(folder, covering=True)
    assert newest.name == f"{2:020d}{CHECKPOINT_SUFFIX}" and first.covered(folder) == newest
    kept, findings = load_checkpoints(folder, first.key.verifier, origin=first.key.name)
    assert findings == [] and [k.checkpoint.size for k in kept] == [1, 2]


def test_a_signer_waits_for_the_one_signing_so_no_head_it_read_is_older_than_the_newest_kept(
    two: tuple[SqlStore, SqlStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first store has read its head (one entry) and is about to sign it; the second
    appends and signs its own, larger head. Were they not queued on the folder's lock,
    the second's checkpoint (two entries) would be kept first and the first's head,
    smaller than the newest checkpoint, refused as a truncated journal. Queued, the
    second waits (here up to a second and a half, in vain) and signs after."""
    import credit.journal.sql as sql

    first, second = two
    folder = tmp_path / "checkpoints"
    first.append("A", "step.done", {})
    reading, other_signed = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    real = sql.sign_head

    def slow(*args: Any, **kwargs: Any) -> Path:
        if threading.current_thread().name == "first":
            reading.set()
            other_signed.wait(1.5)  # set only if the second store could sign meanwhile
        return real(*args, **kwargs)

    def sign(store: SqlStore, then: threading.Event | None) -> None:
        try:
            store.checkpoint(folder)
        except BaseException as err:  # reported below
            errors.append(err)
        if then is not None:
            then.set()

    monkeypatch.setattr(sql, "sign_head", slow)
    signer = threading.Thread(target=sign, args=(first, None), name="first")
    signer.start()
    assert reading.wait(30)
    second.append("B", "step.done", {})
    other = threading.Thread(target=sign, args=(second, other_signed))
    other.start()
    for thread in (signer, other):
        thread.join(60)
    assert errors == []
    kept, findings = load_checkpoints(folder, first.key.verifier, origin=first.key.name)
    assert findings == [] and [k.checkpoint.size for k in kept] == [1, 2]
    assert newest_file(folder) == newest_file(folder, pointer=False) == f"{2:020d}.checkpoint"
    assert first.audit(kept).ok


def test_asking_for_cover_takes_a_newer_checkpoint_kept_and_signs_only_when_there_is_none(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "checkpoints"
    url = f"sqlite:///{tmp_path / 'j.db'}"
    with open_store(url) as first, open_store(url) as second:
        first.append("A", "note", {})
        second.append("B", "note", {})
        by_second = second.checkpoint(folder)  # size 2: covers the first's entry
        second.append("B", "note", {})  # entry 3, the second's: the head moved on
        assert first.checkpoint(folder, covering=True) == by_second  # nothing signed
        assert sorted(p.name for p in folder.glob("*.checkpoint")) == [by_second.name]
        first.append("A", "note", {})  # entry 4: no checkpoint covers it
        signed = first.checkpoint(folder, covering=True)
        assert signed.name == f"{4:020d}.checkpoint"
        assert len(list(folder.glob("*.checkpoint"))) == 2
        assert first.checkpoint(folder).name == signed.name  # without cover: the head


def test_the_in_memory_store_asked_for_cover_signs_nothing_while_its_head_is_signed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.journal.base as base

    folder = tmp_path / "checkpoints"
    signed: list[int] = []
    real = base.sign_head

    def counted(key: Any, directory: Path, size: int, *args: Any, **kwargs: Any) -> Path:
        signed.append(size)
        return real(key, directory, size, *args, **kwargs)

    monkeypatch.setattr(base, "sign_head", counted)
    store = InMemoryStore()
    store.append("A", "note", {})
    path = store.checkpoint(folder, covering=True)
    assert store.checkpoint(folder, covering=True) == path and signed == [1]
    assert store.checkpoint(folder) == path and signed == [1, 1]  # signed again: same file
    store.append("A", "note", {})
    assert store.checkpoint(folder, covering=True).name == f"{2:020d}.checkpoint"
    assert signed == [1, 1, 2]
