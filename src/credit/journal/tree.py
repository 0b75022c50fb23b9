"""The store's tree head, signed: checkpoints and inclusion proofs of the journal.

:func:`sign_head` is how every store writes a checkpoint: before the key signs a new
tree head, the newest checkpoint kept is read and verified, and the tree the store
holds must still have that checkpoint's root at that checkpoint's size; a shorter
tree (truncated) or another root there (a rewritten history) is refused, so the key
never signs over a tampered journal. (The checkpoint a store signed last, still there
byte for byte, is its own signature over those bytes: :class:`LastSigned`.)
:func:`inclusion` gives each entry's RFC 9162 audit path against a checkpoint.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from credit.errors import CreditError, JournalIntegrityError
from credit.journal.audit import KeptCheckpoint
from credit.journal.checkpoint import (
    Checkpoint,
    newest_file,
    parse_checkpoint,
    sign_checkpoint,
    verify_checkpoint,
    write_checkpoint,
)
from credit.journal.keys import VerifierKey
from credit.journal.merkle import inclusion_proof, verify_inclusion
from credit.journal.signer import JournalKey

__all__ = [
    "Inclusion",
    "LastSigned",
    "Signed",
    "covering_checkpoint",
    "inclusion",
    "newest_checkpoint",
    "sign_head",
]


@dataclass(frozen=True, slots=True)
class Signed:
    """A checkpoint as its signer wrote it: the file's name, the bytes, what they say."""

    name: str
    data: bytes
    checkpoint: Checkpoint
    verifier: VerifierKey


class LastSigned:
    """The checkpoint a store signed last (:func:`sign_head` keeps it here). When the
    folder's newest is still that file with those bytes, its signature is the store's
    own, made over exactly these bytes: it is taken as read, not verified again
    (about 0.15 ms a signature, most of it Ed25519). Any other file, or this one
    changed by a byte, is verified as ever."""

    def __init__(self) -> None:
        self.signed: Signed | None = None


def newest_checkpoint(
    directory: Path,
    verifier: VerifierKey,
    *,
    origin: str | None = None,
    pointer: bool = True,
    last: LastSigned | None = None,
) -> KeptCheckpoint | None:
    """The checkpoint of the largest tree size kept in ``directory``, its signature
    verified (JournalIntegrityError naming the file if it does not), or None.
    ``pointer``: found by the folder's pointer when it has one (signing), else by
    listing the folder (:func:`credit.journal.checkpoint.newest_file`). ``last``: the
    checkpoint the caller signed itself, taken as read while the file holds its bytes
    (:class:`LastSigned`; the caller's key is ``verifier``'s)."""
    newest = newest_file(directory, pointer=pointer)
    if newest is None:
        return None
    own = last.signed if last is not None else None
    if (
        own is not None
        and own.name == newest
        and own.verifier == verifier
        and (origin is None or own.checkpoint.origin == origin)
    ):
        path = directory / newest
        try:
            same = path.read_bytes() == own.data
        except OSError:
            same = False
        if same:
            return KeptCheckpoint(str(path), own.checkpoint)
    return _verified_file(directory, newest, verifier, origin)


def _verified_file(
    directory: Path, newest: str, verifier: VerifierKey, origin: str | None
) -> KeptCheckpoint:
    """The checkpoint kept in the file ``newest`` of ``directory``, its signature
    verified and its tree size the one its name gives."""
    path = directory / newest
    checkpoint = verify_checkpoint(path.read_bytes(), verifier, origin=origin, source=path)
    if checkpoint.size != int(newest[:20]):
        raise JournalIntegrityError(
            f"the file is named for another tree size than its checkpoint's {checkpoint.size}",
            check="file-name",
            checkpoint=str(path),
            tree_size=checkpoint.size,
        )
    return KeptCheckpoint(str(path), checkpoint)


def covering_checkpoint(directory: Path, key: JournalKey, size: int) -> Path | None:
    """The newest checkpoint kept in ``directory`` if it signs a tree of at least
    ``size`` entries, its signature verified with the key's own (None: there is none,
    or it is smaller, or it does not verify). A writer whose entries end at ``size``
    need not sign again: a head signed after them covers them (the journal only grows,
    so its first ``size`` entries are those). The folder's pointer finds it, as it does
    for a signature; a file that does not verify is never taken as cover, and the
    signature then made reads it again and refuses as it would have."""
    try:
        name = newest_file(directory)
        # A file is named by its tree size: one named for fewer entries cannot cover
        # them, and is not read (this writer signed it itself, most of the time).
        if name is None or int(name[:20]) < size:
            return None
        newest = _verified_file(directory, name, key.verifier, key.name)
    except (CreditError, OSError):  # not a checkpoint that verifies: sign instead
        return None
    if newest.size < size:
        return None
    return Path(newest.path)


def sign_head(
    key: JournalKey,
    directory: Path,
    size: int,
    root: bytes,
    root_at: Callable[[int], bytes],
    *,
    last: LastSigned | None = None,
) -> Path:
    """Sign the tree head (``size``, ``root``) in the C2SP checkpoint format, origin
    the key's name, and keep it in ``directory``: refused when the newest checkpoint
    kept is larger than the tree or ``root_at`` its size is not its root. ``last``:
    where the signer keeps the checkpoint it signed last (:class:`LastSigned`), for
    the next signature; always signed with ``key``."""
    newest = newest_checkpoint(directory, key.verifier, origin=key.name, last=last)
    if newest is not None:
        if newest.size > size:
            raise JournalIntegrityError(
                f"the journal holds {size} entries, fewer than the {newest.size} the newest "
                "checkpoint signed (entries were cut): not signed",
                check="truncated",
                checkpoint=newest.path,
                tree_size=newest.size,
            )
        if root_at(newest.size) != newest.checkpoint.root_hash:
            raise JournalIntegrityError(
                f"the journal's first {newest.size} entries no longer hash to the newest "
                "checkpoint's root (the history was rewritten): not signed",
                check="consistency",
                checkpoint=newest.path,
                tree_size=newest.size,
            )
    data = sign_checkpoint(key.name, size, root, key.signing)
    path = write_checkpoint(directory, data)
    if last is not None:
        last.signed = Signed(path.name, data, parse_checkpoint(data), key.verifier)
    return path


@dataclass(frozen=True, slots=True)
class Inclusion:
    """An entry's audit path in the tree of ``size`` leaves (RFC 9162 §2.1.3)."""

    seq: int
    leaf_hash: bytes
    size: int
    path: tuple[bytes, ...]

    def to_wire(self) -> dict[str, object]:
        return {
            "seq": self.seq,
            "leafIndex": self.seq - 1,
            "leafHash": self.leaf_hash.hex(),
            "treeSize": self.size,
            "path": [p.hex() for p in self.path],
        }

    def verifies(self, root: bytes) -> bool:
        return verify_inclusion(self.leaf_hash, self.seq - 1, self.size, list(self.path), root)


def inclusion(seqs: Sequence[int], size: int, leaf_hashes: Sequence[bytes]) -> list[Inclusion]:
    """The audit paths of the entries ``seqs`` (each at most ``size``) in the tree of
    the first ``size`` leaf hashes."""
    return [
        Inclusion(
            seq, leaf_hashes[seq - 1], size, tuple(inclusion_proof(seq - 1, size, leaf_hashes))
        )
        for seq in seqs
    ]


def root_b64(root: bytes) -> str:
    return base64.b64encode(root).decode("ascii")
