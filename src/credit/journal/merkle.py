"""RFC 6962 / RFC 9162 Merkle tree hashing over SHA-256, with inclusion and consistency
proofs, for the journal as a verifiable log.

The tree (RFC 9162 §2.1.1)::

    MTH({})       = SHA-256()                                  the empty tree
    MTH({d[0]})   = SHA-256(0x00 || d[0])                      a leaf
    MTH(D[n])     = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n]))
                    k the largest power of two smaller than n

Everything here works on *leaf hashes* (``leaf_hash(data)``), the way the journal will
keep them: :class:`MerkleLog` takes them one at a time and keeps only the roots of its
perfect subtrees (the compact range, one hash per set bit of the size), so its root at
any size costs O(log n) memory; proofs are generated from the list of leaf hashes with
O(n) hashing and O(log n) extra memory, and are verified with the algorithms of RFC
9162 §2.1.3.2 and §2.1.4.2 as written. Nothing recurses: a journal of millions of
entries is walked in loops.

Why not a library: of PyPI's Merkle packages, ``pymerkle`` (the best kept) ships no
type information, returns its own proof object (a path that starts with the leaf
itself, plus "rule" and "subset" lists) instead of RFC 9162's list of sibling hashes,
and couples the tree to its own storage; ``sigstore`` keeps its RFC 6962 code private
and does inclusion only; the others are unmaintained or not RFC 6962. The code below
is small, typed, and checked against the published vectors of transparency-dev/merkle
(tests/test_journal_merkle.py).

Ranges (RFC 9162 §2.1.3 and §2.1.4): an inclusion proof exists for
``0 <= index < size``; a consistency proof for ``0 < old_size <= new_size`` (equal
sizes take the empty proof). A tree of size 0 has no consistency proof: anything
extends it, and a verifier holding a size-0 checkpoint checks only that its root is
:data:`EMPTY_ROOT`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence

from credit.errors import InputError

__all__ = [
    "EMPTY_ROOT",
    "FRONTIERS_KEPT",
    "HASH_SIZE",
    "LEAF_PREFIX",
    "NODE_PREFIX",
    "KeptFrontiers",
    "MerkleLog",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "root",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    """The hash of one leaf: SHA-256(0x00 || data)."""
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def _checked_hash(value: bytes, field: str) -> bytes:
    if not isinstance(value, bytes) or len(value) != HASH_SIZE:
        shown = len(value) if isinstance(value, bytes) else type(value).__name__
        raise InputError(f"a {HASH_SIZE}-byte SHA-256 hash is needed, not {shown}", field=field)
    return value


class MerkleLog:
    """An append-only Merkle tree that keeps O(log n) state: the roots of its perfect
    subtrees, largest (leftmost) first, one for each set bit of its size (the compact
    range of RFC 9162 §2.1.1's tree over ``[0, size)``)."""

    __slots__ = ("_frontier", "_size")

    def __init__(self) -> None:
        self._size = 0
        self._frontier: list[bytes] = []

    @classmethod
    def from_leaf_hashes(cls, leaf_hashes: Iterable[bytes]) -> MerkleLog:
        """The log holding these leaf hashes, in order."""
        log = cls()
        for value in leaf_hashes:
            log.append(value)
        return log

    @classmethod
    def from_frontier(cls, size: int, frontier: Sequence[bytes]) -> MerkleLog:
        """The log of ``size`` leaves whose perfect-subtree roots are ``frontier`` (as
        :attr:`frontier` gave them), to resume appending without the leaves."""
        if size < 0:
            raise InputError(f"a tree size is never negative, not {size}", field="size")
        if len(frontier) != size.bit_count():
            raise InputError(
                f"a tree of size {size} has {size.bit_count()} frontier hashes, "
                f"not {len(frontier)}",
                field="frontier",
            )
        log = cls()
        log._size = size
        log._frontier = [_checked_hash(value, f"frontier[{i}]") for i, value in enumerate(frontier)]
        return log

    @property
    def size(self) -> int:
        """How many leaves the log holds."""
        return self._size

    @property
    def frontier(self) -> tuple[bytes, ...]:
        """The roots of the perfect subtrees, largest (leftmost) first."""
        return tuple(self._frontier)

    def append(self, leaf_hash: bytes) -> None:
        """Add one leaf hash at index :attr:`size`."""
        value = _checked_hash(leaf_hash, "leaf_hash")
        # Like carrying in a binary counter: each trailing set bit of the size is a
        # perfect subtree of the same height as the one being carried, so they merge.
        size = self._size
        while size & 1:
            value = node_hash(self._frontier.pop(), value)
            size >>= 1
        self._frontier.append(value)
        self._size += 1

    def root(self) -> bytes:
        """The Merkle tree hash of the leaves so far (:data:`EMPTY_ROOT` when empty)."""
        if not self._frontier:
            return EMPTY_ROOT
        value = self._frontier[-1]
        for left in reversed(self._frontier[:-1]):
            value = node_hash(left, value)
        return value


FRONTIERS_KEPT = 64


class KeptFrontiers:
    """The frontiers of the latest sizes a log was seen at (at most ``limit``, the
    oldest forgotten first), so that its root at an earlier size ``n`` costs the leaves
    after the largest kept size at most ``n``, not all ``n`` of them.

    A store checks, before it signs a tree head, that the journal still extends the
    newest checkpoint kept; with two writers (two service workers) that checkpoint is
    often one the other signed, at a size this one passed while it caught up. Each
    frontier kept is one the holder computed from the committed leaves (not thread
    safe: the holder locks)."""

    __slots__ = ("_kept", "_limit")

    def __init__(self, limit: int = FRONTIERS_KEPT) -> None:
        if limit < 1:
            raise InputError(f"at least one frontier is kept, not {limit}", field="limit")
        self._limit = limit
        self._kept: dict[int, tuple[bytes, ...]] = {}

    def keep(self, log: MerkleLog) -> None:
        """Remember ``log``'s frontier at its size (the newest kept last)."""
        self._kept.pop(log.size, None)
        self._kept[log.size] = log.frontier
        while len(self._kept) > self._limit:
            del self._kept[next(iter(self._kept))]

    def start(self, size: int) -> MerkleLog:
        """A new log at the largest kept size at most ``size`` (the empty log if none),
        to be grown with the leaves after it up to ``size``."""
        base = max((kept for kept in self._kept if kept <= size), default=None)
        if base is None:
            return MerkleLog()
        return MerkleLog.from_frontier(base, self._kept[base])


def root(leaf_hashes: Sequence[bytes]) -> bytes:
    """The Merkle tree hash of a list of leaf hashes (:data:`EMPTY_ROOT` for none)."""
    return MerkleLog.from_leaf_hashes(leaf_hashes).root()


def _range_root(leaf_hashes: Sequence[bytes], start: int, end: int) -> bytes:
    log = MerkleLog()
    for i in range(start, end):
        log.append(leaf_hashes[i])
    return log.root()


def _split(n: int) -> int:
    """The largest power of two strictly smaller than ``n`` (``n > 1``)."""
    return 1 << ((n - 1).bit_length() - 1)


def _check_tree(size: int, leaf_hashes: Sequence[bytes], field: str) -> None:
    if size > len(leaf_hashes):
        raise InputError(
            f"a tree of size {size} needs {size} leaf hashes, only {len(leaf_hashes)} given",
            field=field,
        )


def inclusion_proof(index: int, size: int, leaf_hashes: Sequence[bytes]) -> list[bytes]:
    """The audit path of leaf ``index`` in the tree of the first ``size`` leaf hashes
    (RFC 9162 §2.1.3.1), lowest sibling first."""
    if not 0 <= index < size:
        raise InputError(
            f"leaf index {index} is not in a tree of size {size} (0 <= index < size)",
            field="index",
        )
    _check_tree(size, leaf_hashes, "size")
    siblings: list[bytes] = []
    lo, hi = 0, size
    while hi - lo > 1:
        mid = lo + _split(hi - lo)
        if index < mid:
            siblings.append(_range_root(leaf_hashes, mid, hi))
            hi = mid
        else:
            siblings.append(_range_root(leaf_hashes, lo, mid))
            lo = mid
    siblings.reverse()
    return siblings


def consistency_proof(old_size: int, new_size: int, leaf_hashes: Sequence[bytes]) -> list[bytes]:
    """The proof that the tree of the first ``old_size`` leaf hashes is a prefix of the
    tree of the first ``new_size`` (RFC 9162 §2.1.4.1's ``PROOF(m, D[n])``)."""
    if not 0 < old_size <= new_size:
        raise InputError(
            f"no consistency proof from size {old_size} to size {new_size} "
            "(0 < old_size <= new_size)",
            field="old_size",
        )
    _check_tree(new_size, leaf_hashes, "new_size")
    # SUBPROOF(m, D[lo:hi], whole): walk down to the subtree that is exactly the old
    # tree's last part, collecting the hashes that the recursive definition appends.
    appended: list[bytes] = []
    lo, hi, m, whole = 0, new_size, old_size, True
    while m != hi - lo:
        k = _split(hi - lo)
        if m <= k:
            appended.append(_range_root(leaf_hashes, lo + k, hi))
            hi = lo + k
        else:
            appended.append(_range_root(leaf_hashes, lo, lo + k))
            lo, m, whole = lo + k, m - k, False
    proof = [] if whole else [_range_root(leaf_hashes, lo, hi)]
    proof.extend(reversed(appended))
    return proof


def _is_hash(value: object) -> bool:
    return isinstance(value, bytes) and len(value) == HASH_SIZE


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """Whether ``proof`` shows the leaf hash at ``index`` in the tree of ``size`` leaves
    whose hash is ``root`` (RFC 9162 §2.1.3.2). Any value that is not a 32-byte hash,
    an index outside ``[0, size)`` or a proof of the wrong length is a failure.

    A proof binds the leaf to the root, not to the size alone: the same path can check
    for two sizes against one root (the leftmost leaf of trees of 3 and 4 leaves takes
    two siblings either way). The size and the root come together from one signed
    checkpoint, which is what makes the claim about a size."""
    if not (_is_hash(leaf_hash) and _is_hash(root) and all(_is_hash(p) for p in proof)):
        return False
    if not 0 <= index < size:
        return False
    fn, sn = index, size - 1
    value = leaf_hash
    for sibling in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            value = node_hash(sibling, value)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            value = node_hash(value, sibling)
        fn >>= 1
        sn >>= 1
    return sn == 0 and hmac.compare_digest(value, root)


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Whether ``proof`` shows the tree of ``old_size`` leaves with hash ``old_root`` to
    be a prefix of the tree of ``new_size`` leaves with hash ``new_root`` (RFC 9162
    §2.1.4.2). Equal sizes take the empty proof and equal roots; an ``old_size`` of 0
    has no proof (see the module docstring) and is a failure."""
    if not (_is_hash(old_root) and _is_hash(new_root) and all(_is_hash(p) for p in proof)):
        return False
    if not 0 < old_size <= new_size:
        return False
    if old_size == new_size:
        return not proof and hmac.compare_digest(old_root, new_root)
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and hmac.compare_digest(fr, old_root) and hmac.compare_digest(sr, new_root)
