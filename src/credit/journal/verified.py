"""How far a run verified the chain and grew the tree, kept so the next run starts there.

A run ends by walking the chain and signing a checkpoint of the tree. Done from the
first entry every time, both cost in proportion to the whole journal, not to the run:
on a journal of 100,000 cases (740,552 entries), about 6 s a run, which a lender's
daily batch of a few thousand cases pays again every day. So each keeps a mark
(:meth:`~credit.journal.base.Store.put_mark`: sealed with the lender's key and bound to
the hash of the entry it was made on, refused if either changes):

* :data:`CHAIN_MARK`: the chain was verified through entry ``seq`` (by the walk that
  kept the mark and the walks before it, back to a whole one), whose hash was
  ``hash``. The next run's walk (:func:`verify_since_mark`) first finds that entry
  still holding that hash, then walks only the entries after it
  (:meth:`~credit.journal.base.Store.verify` with ``since``). An entry edited up to it
  and the chain rewritten after the edit changes that entry's hash: the walk reports
  the chain broken there. An entry edited up to it without the chain rewritten is
  what this walk does not read again: ``credit journal verify`` and ``credit journal
  audit`` walk the whole journal, as an examiner does.
* :data:`TREE_MARK`: the frontier of the journal's Merkle tree at ``seq`` leaves, as
  the run grew it from the committed leaves; the next run takes it
  (:func:`resume_kept_tree`, :meth:`~credit.journal.base.Store.resume_tree`) and reads
  only the leaf hashes after it.

Like every mark, each is a cache: without it (``credit journal marks --drop``) a run
walks the whole chain and grows the tree from the first leaf, and keeps new ones. A
chain that does not verify moves neither mark.
"""

from __future__ import annotations

from typing import Final

from credit.errors import JournalIntegrityError
from credit.journal.base import GENESIS_HASH, ChainReport, Store

__all__ = ["CHAIN_MARK", "TREE_MARK", "keep_tree", "resume_kept_tree", "verify_since_mark"]

CHAIN_MARK: Final = "journal.verified"
TREE_MARK: Final = "journal.tree"
# The form of what each mark holds: bump it when that changes, so an older one is unused.
MARK_FORMAT: Final = 1


def verify_since_mark(store: Store) -> ChainReport:
    """The chain walked from the entry the last walk reached (:data:`CHAIN_MARK`), or
    whole without a mark of this form; if it verifies, the mark moved to the entry this
    walk reached. A mark that is refused (its seal is not the key's, or the entry it
    was made on no longer holds its hash) is a broken chain at that entry."""
    since, since_hash = 0, GENESIS_HASH
    try:
        mark = store.mark(CHAIN_MARK)
    except JournalIntegrityError as err:
        detail = f"the mark of the chain verified before is refused: {err}"
        return ChainReport.broken(err.seq, detail, entries=err.seq or 0, head=GENESIS_HASH)
    if mark is not None and mark.data.get("format") == MARK_FORMAT:
        kept = mark.data.get("hash")
        if isinstance(kept, str) and mark.seq > 0:
            since, since_hash = mark.seq, kept
    report = store.verify(since, since_hash)
    if report.ok and report.entries > since:
        store.put_mark(CHAIN_MARK, report.entries, {"format": MARK_FORMAT, "hash": report.head})
    return report


def keep_tree(store: Store) -> bool:
    """Keep the tree as this store last grew it from committed leaves
    (:data:`TREE_MARK`); whether one was kept (nothing before the store has grown it)."""
    size, frontier = store.tree_frontier()
    if not size:
        return False
    store.put_mark(
        TREE_MARK, size, {"format": MARK_FORMAT, "frontier": [leaf.hex() for leaf in frontier]}
    )
    return True


def resume_kept_tree(store: Store) -> bool:
    """Take the tree kept under :data:`TREE_MARK`, if one of this form is, so the
    store's next tree head reads only the leaf hashes after it; whether one was taken.
    A mark that is refused raises, as every mark does (JournalIntegrityError, check
    ``mark``); one whose frontier is not a tree's of its size is not taken."""
    mark = store.mark(TREE_MARK)
    if mark is None or mark.data.get("format") != MARK_FORMAT:
        return False
    kept = mark.data.get("frontier")
    if not isinstance(kept, list) or not all(isinstance(h, str) for h in kept):
        return False
    try:
        frontier = [bytes.fromhex(h) for h in kept]
        store.resume_tree(mark.seq, frontier)
    except ValueError:  # not hex, or not a frontier of its size (InputError)
        return False
    return True
