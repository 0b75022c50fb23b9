"""The journal's Merkle tree is RFC 6962's, to the byte: the published reference vectors
of transparency-dev/merkle reproduce, their corrupted probes all fail, and over random
trees every proof checks while any changed byte, index, size or root does not.

The vectors are copied from github.com/transparency-dev/merkle at commit
417fb0c314750d94e53942e9f92e79b6d35915db (Apache-2.0):

- ``testonly/constants.go``: ``LeafInputs``, ``NodeHashes``, ``RootHashes``,
  ``CompactTrees`` (the same values as certificate-transparency-go's RFC 6962 tests);
- ``cmd/proofgen/main.go``: ``inclusionProofs`` and ``consistencyProofs`` (leaf
  numbers there are 1-based), and the corruptions it derives from them, written out as
  that repository's ``testdata/inclusion`` and ``testdata/consistency`` probes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from credit.errors import InputError
from credit.journal import merkle
from credit.journal.merkle import (
    EMPTY_ROOT,
    MerkleLog,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    verify_consistency,
    verify_inclusion,
)

h = bytes.fromhex

LEAF_INPUTS = [
    h(""),
    h("00"),
    h("10"),
    h("2021"),
    h("3031"),
    h("40414243"),
    h("5051525354555657"),
    h("606162636465666768696a6b6c6d6e6f"),
]

# NodeHashes(): level 0 (the leaves), level 1, level 2, level 3.
NODE_HASHES = [
    [
        h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
        h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
        h("0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7"),
        h("07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7"),
        h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        h("4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658"),
        h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
        h("46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"),
    ],
    [
        h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
        h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
        h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
    ],
    [
        h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ],
    [h("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")],
]

# RootHashes(), indexed by tree size from the empty tree.
ROOT_HASHES = [
    h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
    h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
    h("aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77"),
    h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    h("4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4"),
    h("76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef"),
    h("ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c"),
    h("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"),
]

_N = NODE_HASHES
# CompactTrees(): the perfect-subtree roots of each size, largest first.
COMPACT_TREES: list[list[bytes]] = [
    [],
    [_N[0][0]],
    [_N[1][0]],
    [_N[1][0], _N[0][2]],
    [_N[2][0]],
    [_N[2][0], _N[0][4]],
    [_N[2][0], _N[1][2]],
    [_N[2][0], _N[1][2], _N[0][6]],
    [_N[3][0]],
]

# inclusionProofs, as (0-based leaf index, tree size, proof).
INCLUSION_PROOFS: list[tuple[int, int, list[bytes]]] = [
    (0, 1, []),
    (
        0,
        8,
        [
            h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
        ],
    ),
    (
        5,
        8,
        [
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
            h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
    (2, 3, [h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125")]),
    (
        1,
        5,
        [
            h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        ],
    ),
]

# consistencyProofs, as (old size, new size, proof).
CONSISTENCY_PROOFS: list[tuple[int, int, list[bytes]]] = [
    (1, 1, []),
    (
        1,
        8,
        [
            h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
        ],
    ),
    (
        6,
        8,
        [
            h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
            h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
    (
        2,
        5,
        [
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        ],
    ),
    (
        6,
        7,
        [
            h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
            h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
]

SOME_HASH = h("abacaba000000000000000000000000000000000000000000060061e00123456")
DONT_CARE_1 = b"don't care 1"
DONT_CARE_2 = b"don't care 2"
LEAF_HASHES = [leaf_hash(data) for data in LEAF_INPUTS]


# ------------------------------------------------------------------ hashing and roots


def test_the_empty_tree_hashes_to_sha256_of_nothing() -> None:
    assert EMPTY_ROOT == hashlib.sha256(b"").digest() == ROOT_HASHES[0]
    assert root([]) == EMPTY_ROOT == MerkleLog().root()


def test_the_eight_reference_leaves_hash_to_the_published_leaf_hashes() -> None:
    assert [leaf_hash(data) for data in LEAF_INPUTS] == NODE_HASHES[0]


def test_interior_nodes_hash_with_the_0x01_prefix_to_the_published_level_hashes() -> None:
    for level in range(1, 4):
        below = NODE_HASHES[level - 1]
        assert [node_hash(below[2 * i], below[2 * i + 1]) for i in range(len(below) // 2)] == (
            NODE_HASHES[level]
        )


@pytest.mark.parametrize("size", range(9))
def test_each_prefix_of_the_reference_leaves_has_its_published_root(size: int) -> None:
    assert root(LEAF_HASHES[:size]) == ROOT_HASHES[size]


def test_the_log_grown_one_leaf_at_a_time_has_the_published_root_and_frontier_at_each_size() -> (
    None
):
    log = MerkleLog()
    for size in range(9):
        assert (log.size, log.root(), list(log.frontier)) == (
            size,
            ROOT_HASHES[size],
            COMPACT_TREES[size],
        )
        if size < 8:
            log.append(LEAF_HASHES[size])


@pytest.mark.parametrize("size", range(9))
def test_a_log_resumed_from_its_frontier_reaches_the_same_roots(size: int) -> None:
    log = MerkleLog.from_frontier(size, COMPACT_TREES[size])
    assert log.root() == ROOT_HASHES[size]
    for more in range(size, 8):
        log.append(LEAF_HASHES[more])
    assert log.root() == ROOT_HASHES[8]


def test_a_frontier_with_one_hash_too_few_or_too_many_is_refused() -> None:
    with pytest.raises(InputError, match="a tree of size 7 has 3 frontier hashes, not 2") as err:
        MerkleLog.from_frontier(7, COMPACT_TREES[7][:2])
    assert err.value.field == "frontier"
    with pytest.raises(InputError, match="not 4"):
        MerkleLog.from_frontier(7, [*COMPACT_TREES[7], SOME_HASH])
    with pytest.raises(InputError, match="never negative"):
        MerkleLog.from_frontier(-1, [])


@pytest.mark.parametrize("value", [b"", b"\x00" * 31, b"\x00" * 33], ids=["0", "31", "33"])
def test_a_leaf_that_is_not_a_32_byte_hash_is_refused_and_leaves_the_log_as_it_was(
    value: bytes,
) -> None:
    log = MerkleLog.from_leaf_hashes(LEAF_HASHES[:3])
    with pytest.raises(InputError, match=f"not {len(value)}") as err:
        log.append(value)
    assert err.value.field == "leaf_hash"
    assert (log.size, log.root()) == (3, ROOT_HASHES[3])
    log.append(b"\x00" * 32)
    assert log.size == 4


def test_hashing_without_the_domain_prefixes_misses_the_published_roots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planted defect the vectors catch: a tree whose nodes are hashed without
    their 0x01 prefix (open to second preimages) has other roots."""
    monkeypatch.setattr(merkle, "node_hash", lambda a, b: hashlib.sha256(a + b).digest())
    assert root(LEAF_HASHES) != ROOT_HASHES[8]
    _, size, proof = INCLUSION_PROOFS[1]
    assert not verify_inclusion(LEAF_HASHES[0], 0, size, proof, ROOT_HASHES[size])


# ------------------------------------------------------------------ published proofs


@pytest.mark.parametrize(
    ("index", "size", "proof"), INCLUSION_PROOFS, ids=[f"{i}@{s}" for i, s, _ in INCLUSION_PROOFS]
)
def test_the_published_inclusion_proofs_are_generated_and_verify(
    index: int, size: int, proof: list[bytes]
) -> None:
    assert inclusion_proof(index, size, LEAF_HASHES) == proof
    assert verify_inclusion(LEAF_HASHES[index], index, size, proof, ROOT_HASHES[size])


@pytest.mark.parametrize(
    ("old", "new", "proof"), CONSISTENCY_PROOFS, ids=[f"{m}-{n}" for m, n, _ in CONSISTENCY_PROOFS]
)
def test_the_published_consistency_proofs_are_generated_and_verify(
    old: int, new: int, proof: list[bytes]
) -> None:
    assert consistency_proof(old, new, LEAF_HASHES) == proof
    assert verify_consistency(old, new, ROOT_HASHES[old], ROOT_HASHES[new], proof)


# ------------------------------------------------------------------ the corrupted probes


@dataclass(frozen=True)
class InclusionProbe:
    desc: str
    index: int
    size: int
    leaf: bytes
    proof: list[bytes]
    root: bytes


@dataclass(frozen=True)
class ConsistencyProbe:
    desc: str
    old: int
    new: int
    old_root: bytes
    new_root: bytes
    proof: list[bytes]


def _flip(proof: list[bytes], i: int, bit: int) -> list[bytes]:
    changed = list(proof)
    changed[i] = bytes([changed[i][0] ^ bit]) + changed[i][1:]
    return changed


def _corrupted_inclusion(
    index: int, size: int, proof: list[bytes], root_hash: bytes, leaf: bytes
) -> list[InclusionProbe]:
    """cmd/proofgen's invalidInclusionProof, and a wrong leaf that is a real hash (its
    9-byte "WrongLeaf" fails for its length alone)."""
    probes = [
        InclusionProbe("leafIdx sub 1", index - 1, size, leaf, proof, root_hash),
        InclusionProbe("leafIdx plus 1", index + 1, size, leaf, proof, root_hash),
        InclusionProbe("leafIdx XOR 2", index ^ 2, size, leaf, proof, root_hash),
        InclusionProbe("treeSize mul 2", index, size * 2, leaf, proof, root_hash),
        InclusionProbe("treeSize div 2", index, size // 2, leaf, proof, root_hash),
        InclusionProbe("wrong leaf", index, size, b"WrongLeaf", proof, root_hash),
        InclusionProbe("wrong leaf, a real hash", index, size, SOME_HASH, proof, root_hash),
        InclusionProbe("empty root", index, size, leaf, proof, EMPTY_ROOT),
        InclusionProbe("random root", index, size, leaf, proof, SOME_HASH),
        InclusionProbe("trailing garbage", index, size, leaf, [*proof, b""], root_hash),
        InclusionProbe("trailing root", index, size, leaf, [*proof, root_hash], root_hash),
        InclusionProbe("preceding garbage", index, size, leaf, [b"", *proof], root_hash),
        InclusionProbe("preceding root", index, size, leaf, [root_hash, *proof], root_hash),
    ]
    probes += [
        InclusionProbe(
            f"modified proof[{i}] bit 3", index, size, leaf, _flip(proof, i, 8), root_hash
        )
        for i in range(len(proof))
    ]
    if proof:
        probes.append(InclusionProbe("removed component", index, size, leaf, proof[:-1], root_hash))
    if len(proof) > 1:
        inserted = [proof[0], SOME_HASH, *proof[1:]]
        probes.append(InclusionProbe("inserted component", index, size, leaf, inserted, root_hash))
    return probes


def _inclusion_probes() -> list[InclusionProbe]:
    probes: list[InclusionProbe] = []
    for index, size, proof in INCLUSION_PROOFS:
        probes += [
            InclusionProbe(f"{index}@{size} {p.desc}", p.index, p.size, p.leaf, p.proof, p.root)
            for p in _corrupted_inclusion(index, size, proof, ROOT_HASHES[size], LEAF_HASHES[index])
        ]
    # staticInclusionProbes: nothing is in an empty tree, or past a tree's end.
    for index, size in [(0, 0), (0, 1), (1, 0), (2, 1)]:
        probes += [
            InclusionProbe(f"{index}@{size} random leaf", index, size, SOME_HASH, [], b""),
            InclusionProbe(f"{index}@{size} empty root", index, size, b"", [], EMPTY_ROOT),
            InclusionProbe(
                f"{index}@{size} empty root and random leaf", index, size, SOME_HASH, [], EMPTY_ROOT
            ),
        ]
    # singleEntryInclusionProbes: the leaf of a one-leaf tree is its root.
    data = leaf_hash(b"data")
    probes += [
        InclusionProbe("single entry, empty leaf", 0, 1, b"", [], data),
        InclusionProbe("single entry, empty root", 0, 1, data, [], b""),
        InclusionProbe("single entry, empty root and leaf", 0, 1, b"", [], b""),
    ]
    return probes


INCLUSION_PROBES = _inclusion_probes()


@pytest.mark.parametrize("probe", INCLUSION_PROBES, ids=[p.desc for p in INCLUSION_PROBES])
def test_a_corrupted_inclusion_probe_fails(probe: InclusionProbe) -> None:
    assert not verify_inclusion(probe.leaf, probe.index, probe.size, probe.proof, probe.root)


def test_the_leaf_of_a_one_leaf_tree_is_its_own_root_with_an_empty_proof() -> None:
    data = leaf_hash(b"data")
    assert verify_inclusion(data, 0, 1, [], data)
    assert inclusion_proof(0, 1, [data]) == []


def _corrupted_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]
) -> list[ConsistencyProbe]:
    """cmd/proofgen's invalidConsistencyProof, and wrong roots that are real hashes (its
    9-byte "WrongRoot" fails for its length alone)."""
    wrong = b"WrongRoot"
    probes = [
        ConsistencyProbe("size1 sub 1", old - 1, new, old_root, new_root, proof),
        ConsistencyProbe("size1 plus 1", old + 1, new, old_root, new_root, proof),
        ConsistencyProbe("size1 XOR 2", old ^ 2, new, old_root, new_root, proof),
        ConsistencyProbe("size2 mul 2", old, new * 2, old_root, new_root, proof),
        ConsistencyProbe("size2 div 2", old, new // 2, old_root, new_root, proof),
        ConsistencyProbe("wrong root1", old, new, wrong, new_root, proof),
        ConsistencyProbe("wrong root2", old, new, old_root, wrong, proof),
        ConsistencyProbe("wrong root1, a real hash", old, new, SOME_HASH, new_root, proof),
        ConsistencyProbe("wrong root2, a real hash", old, new, old_root, SOME_HASH, proof),
        ConsistencyProbe("swapped roots", old, new, new_root, old_root, proof),
        ConsistencyProbe("empty proof", old, new, old_root, new_root, []),
        ConsistencyProbe("trailing garbage", old, new, old_root, new_root, [*proof, b""]),
        ConsistencyProbe("trailing root1", old, new, old_root, new_root, [*proof, old_root]),
        ConsistencyProbe("trailing root2", old, new, old_root, new_root, [*proof, new_root]),
        ConsistencyProbe("preceding garbage", old, new, old_root, new_root, [b"", *proof]),
        ConsistencyProbe("preceding root1", old, new, old_root, new_root, [old_root, *proof]),
        ConsistencyProbe("preceding root2", old, new, old_root, new_root, [new_root, *proof]),
        ConsistencyProbe("preceding proof 0", old, new, old_root, new_root, [proof[0], *proof]),
        ConsistencyProbe("truncated proof", old, new, old_root, new_root, proof[:-1]),
    ]
    probes += [
        ConsistencyProbe(
            f"modified proof {i} bit 4", old, new, old_root, new_root, _flip(proof, i, 16)
        )
        for i in range(len(proof))
    ]
    return probes


def _consistency_probes() -> list[ConsistencyProbe]:
    probes: list[ConsistencyProbe] = []
    for old, new, proof in CONSISTENCY_PROOFS:
        if not proof:
            continue
        probes += [
            ConsistencyProbe(f"{old}-{new} {p.desc}", p.old, p.new, p.old_root, p.new_root, p.proof)
            for p in _corrupted_consistency(old, new, ROOT_HASHES[old], ROOT_HASHES[new], proof)
        ]
    # staticConsistencyProbes, all but the one accepted (see the test below).
    d1, d2, e = DONT_CARE_1, DONT_CARE_2, EMPTY_ROOT
    probes += [
        ConsistencyProbe("sizes are equal (zero) but roots are not", 0, 0, d1, d2, []),
        ConsistencyProbe("sizes are equal (one) but roots are not", 1, 1, d1, d2, []),
        ConsistencyProbe("sizes are equal (zero) and proof is empty", 0, 0, d1, d1, []),
        ConsistencyProbe("size1 is zero and does not equal size2", 0, 1, d1, d2, []),
        ConsistencyProbe("size1 is greater than size2", 1, 0, d1, d2, []),
        ConsistencyProbe("size1 is greater than size2 again", 2, 1, d1, d2, []),
        ConsistencyProbe("sizes do not match and proof is empty", 1, 2, d1, d2, []),
        ConsistencyProbe("roots do not match and sizes are zero", 0, 0, e, d2, []),
        ConsistencyProbe("roots do not match and sizes are one", 1, 1, e, d2, []),
        ConsistencyProbe("proof is not empty and sizes are zero", 0, 0, e, e, [e]),
        ConsistencyProbe("proof is not empty and sizes are one", 1, 1, e, e, [e]),
        ConsistencyProbe("size1 is zero and size2 is not zero", 0, 1, e, d2, []),
        ConsistencyProbe("consistency from the empty tree", 0, 1, e, e, [e]),
    ]
    # Time travel with real roots: the proof from 6 to 8, read backwards.
    r6, r8, six_to_eight = ROOT_HASHES[6], ROOT_HASHES[8], CONSISTENCY_PROOFS[2][2]
    probes += [
        ConsistencyProbe("from 8 back to 6", 8, 6, r8, r6, six_to_eight),
        ConsistencyProbe("from 8 back to 6, roots swapped", 8, 6, r6, r8, six_to_eight),
        ConsistencyProbe("from 8 back to 0", 8, 0, r8, EMPTY_ROOT, six_to_eight),
    ]
    return probes


CONSISTENCY_PROBES = _consistency_probes()


@pytest.mark.parametrize("probe", CONSISTENCY_PROBES, ids=[p.desc for p in CONSISTENCY_PROBES])
def test_a_corrupted_consistency_probe_fails(probe: ConsistencyProbe) -> None:
    assert not verify_consistency(probe.old, probe.new, probe.old_root, probe.new_root, probe.proof)


def test_equal_sizes_take_the_empty_proof_but_only_real_hashes_count_as_roots() -> None:
    """transparency-dev accepts the static probe "sizes are equal (one) and proof is
    empty" with the 12-byte roots "don't care 2"; this verifier is stricter there: a
    value that is not a 32-byte SHA-256 hash is never a root."""
    assert not verify_consistency(1, 1, DONT_CARE_2, DONT_CARE_2, [])
    assert verify_consistency(1, 1, ROOT_HASHES[1], ROOT_HASHES[1], [])
    assert verify_consistency(8, 8, ROOT_HASHES[8], ROOT_HASHES[8], [])
    assert consistency_proof(8, 8, LEAF_HASHES) == []


def test_the_empty_tree_has_no_consistency_proof_to_ask_for() -> None:
    with pytest.raises(InputError, match=r"no consistency proof from size 0 to size 8") as err:
        consistency_proof(0, 8, LEAF_HASHES)
    assert err.value.field == "old_size"
    assert consistency_proof(1, 8, LEAF_HASHES) == CONSISTENCY_PROOFS[1][2]


def test_an_inclusion_proof_binds_the_leaf_to_a_root_and_the_checkpoint_binds_the_size() -> None:
    """The leftmost leaf's path in a tree of 3 checks for a claimed size of 4 against
    the root of 3, since both shapes take two siblings; it never checks against the
    root of 4. A checkpoint signs the size and the root together."""
    proof = inclusion_proof(0, 3, LEAF_HASHES)
    assert verify_inclusion(LEAF_HASHES[0], 0, 4, proof, ROOT_HASHES[3])
    assert not verify_inclusion(LEAF_HASHES[0], 0, 4, proof, ROOT_HASHES[4])
    assert verify_inclusion(
        LEAF_HASHES[0], 0, 4, inclusion_proof(0, 4, LEAF_HASHES), ROOT_HASHES[4]
    )


# ------------------------------------------------------------------ bad requests


def test_an_inclusion_proof_is_asked_for_a_leaf_inside_the_tree() -> None:
    assert len(inclusion_proof(7, 8, LEAF_HASHES)) == 3
    with pytest.raises(InputError, match=r"leaf index 8 is not in a tree of size 8") as err:
        inclusion_proof(8, 8, LEAF_HASHES)
    assert err.value.field == "index"
    with pytest.raises(InputError, match="leaf index -1"):
        inclusion_proof(-1, 8, LEAF_HASHES)


def test_a_proof_is_not_made_for_a_tree_larger_than_the_leaves_given() -> None:
    assert inclusion_proof(0, 8, LEAF_HASHES) == INCLUSION_PROOFS[1][2]
    with pytest.raises(InputError, match="a tree of size 9 needs 9 leaf hashes, only 8") as err:
        inclusion_proof(0, 9, LEAF_HASHES)
    assert err.value.field == "size"
    with pytest.raises(InputError, match="size 9 needs 9") as err:
        consistency_proof(2, 9, LEAF_HASHES)
    assert err.value.field == "new_size"


def test_proofs_of_a_smaller_tree_are_made_from_a_longer_list_of_leaves() -> None:
    assert inclusion_proof(1, 5, LEAF_HASHES) == INCLUSION_PROOFS[4][2]
    assert consistency_proof(2, 5, LEAF_HASHES) == CONSISTENCY_PROOFS[3][2]


# ------------------------------------------------------------------ properties


def reference_root(leaves: Sequence[bytes]) -> bytes:
    """RFC 9162 §2.1.1's MTH, straight from its recursive definition."""
    if not leaves:
        return EMPTY_ROOT
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(
        b"\x01" + reference_root(leaves[:k]) + reference_root(leaves[k:])
    ).digest()


trees = st.lists(st.binary(max_size=12), min_size=1, max_size=70, unique=True).map(
    lambda items: [leaf_hash(item) for item in items]
)


@given(leaves=st.lists(st.binary(min_size=32, max_size=32), max_size=140))
def test_the_incremental_root_is_the_rfc_definition_at_every_size(leaves: list[bytes]) -> None:
    log = MerkleLog()
    for size, value in enumerate(leaves, start=1):
        log.append(value)
        assert log.root() == reference_root(leaves[:size])
        assert len(log.frontier) == size.bit_count()
    assert root(leaves) == reference_root(leaves)


def _flip_one_bit(parts: list[bytes], part: int, where: st.DataObject) -> list[bytes]:
    """The parts with one bit of one 32-byte part flipped, at a drawn place."""
    byte = where.draw(st.integers(0, 31))
    bit = where.draw(st.integers(0, 7))
    changed = list(parts)
    value = changed[part]
    changed[part] = value[:byte] + bytes([value[byte] ^ (1 << bit)]) + value[byte + 1 :]
    return changed


@st.composite
def tree_and_leaf(draw: st.DrawFn) -> tuple[list[bytes], int, int]:
    leaves = draw(trees)
    size = draw(st.integers(1, len(leaves)))
    return leaves, draw(st.integers(0, size - 1)), size


@given(case=tree_and_leaf(), where=st.data())
def test_every_inclusion_proof_verifies_and_any_changed_byte_fails(
    case: tuple[list[bytes], int, int], where: st.DataObject
) -> None:
    leaves, index, size = case
    proof = inclusion_proof(index, size, leaves)
    tree_root = reference_root(leaves[:size])
    assert verify_inclusion(leaves[index], index, size, proof, tree_root)

    parts = [leaves[index], tree_root, *proof]
    for part in range(len(parts)):
        changed = _flip_one_bit(parts, part, where)
        assert not verify_inclusion(changed[0], index, size, changed[2:], changed[1])


@given(case=tree_and_leaf(), where=st.data())
def test_an_inclusion_proof_fails_for_any_other_index_or_size_with_its_true_root(
    case: tuple[list[bytes], int, int], where: st.DataObject
) -> None:
    leaves, index, size = case
    proof = inclusion_proof(index, size, leaves)
    other_index = where.draw(st.integers(-2, size + 2).filter(lambda i: i != index))
    assert not verify_inclusion(
        leaves[index], other_index, size, proof, reference_root(leaves[:size])
    )
    if 0 <= other_index < size:
        assert not verify_inclusion(
            leaves[other_index], other_index, size, proof, reference_root(leaves[:size])
        )
    other_size = where.draw(st.integers(index + 1, len(leaves)))
    if other_size != size:
        assert not verify_inclusion(
            leaves[index], index, other_size, proof, reference_root(leaves[:other_size])
        )
    assert not verify_inclusion(leaves[index], index, size, proof, SOME_HASH)


@st.composite
def tree_and_sizes(draw: st.DrawFn) -> tuple[list[bytes], int, int]:
    leaves = draw(trees)
    new = draw(st.integers(1, len(leaves)))
    return leaves, draw(st.integers(1, new)), new


@given(case=tree_and_sizes(), where=st.data())
def test_every_consistency_proof_verifies_and_any_changed_byte_fails(
    case: tuple[list[bytes], int, int], where: st.DataObject
) -> None:
    leaves, old, new = case
    proof = consistency_proof(old, new, leaves)
    old_root, new_root = reference_root(leaves[:old]), reference_root(leaves[:new])
    assert verify_consistency(old, new, old_root, new_root, proof)

    parts = [old_root, new_root, *proof]
    for part in range(len(parts)):
        changed = _flip_one_bit(parts, part, where)
        assert not verify_consistency(old, new, changed[0], changed[1], changed[2:])


@given(case=tree_and_sizes(), where=st.data())
def test_a_consistency_proof_checks_other_sizes_only_where_it_is_their_proof(
    case: tuple[list[bytes], int, int], where: st.DataObject
) -> None:
    """With the true roots of other sizes, a proof verifies only if it is the proof of
    those sizes (the empty proof of two equal sizes, say), never otherwise."""
    leaves, old, new = case
    proof = consistency_proof(old, new, leaves)
    other_new = where.draw(st.integers(1, len(leaves)))
    other_old = where.draw(st.integers(1, other_new))
    if (other_old, other_new) == (old, new):
        return
    passes = verify_consistency(
        other_old,
        other_new,
        reference_root(leaves[:other_old]),
        reference_root(leaves[:other_new]),
        proof,
    )
    assert passes == (consistency_proof(other_old, other_new, leaves) == proof)


@settings(max_examples=25)
@given(leaves=trees, where=st.data())
def test_consistency_proofs_chain_across_three_checkpoints(
    leaves: list[bytes], where: st.DataObject
) -> None:
    """Checkpoints a <= b <= c: a to b and b to c check, and so does a to c."""
    a, b, c = sorted(where.draw(st.lists(st.integers(1, len(leaves)), min_size=3, max_size=3)))
    roots = {size: root(leaves[:size]) for size in (a, b, c)}
    for old, new in ((a, b), (b, c), (a, c)):
        assert verify_consistency(
            old, new, roots[old], roots[new], consistency_proof(old, new, leaves)
        )


def _timed_log(count: int) -> tuple[list[bytes], MerkleLog]:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(count)]
    return leaves, MerkleLog.from_leaf_hashes(leaves)


def test_a_log_of_a_hundred_thousand_leaves_proves_its_middle_and_its_growth() -> None:
    """Loops, not recursion: a tree deeper than any test tree above, with an odd size
    so every proof takes both inner and border steps."""
    leaves, log = _timed_log(100_003)
    tree_root = log.root()
    proof = inclusion_proof(54_321, log.size, leaves)
    assert len(proof) == 17
    assert verify_inclusion(leaves[54_321], 54_321, log.size, proof, tree_root)
    growth = consistency_proof(65_537, log.size, leaves)
    assert verify_consistency(65_537, log.size, root(leaves[:65_537]), tree_root, growth)
