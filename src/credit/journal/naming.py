"""How an entry names the decision it is about: by the decision's content, not its seq.

A decision entry (``decision.recorded``, ``officer.decided``) carries two fields that
name it:

- ``decisionNumber``: its place among the case's decisions (1 for the first, each
  officer's decision after it one more);
- ``decisionId``: the SHA-256 (64 lowercase hex digits) of the canonical bytes of
  ``{"caseId": ..., "kind": ..., "payload": ...}``, the payload being the entry's own
  without ``decisionId`` (its number included, so two decisions of one case that say
  the same thing still have two names).

Every entry about a decision (a reviewer's review and its basis, the gate's hold,
approval, release or rejection, a notice verified, sent or blocked, a work item, a
turn's end) names it by ``decisionId``. An entry's seq and hash are known only once its
place in the chain is, under the journal's write lock; a content name is known as soon
as the decision is made, so what a group writes about its own decision does not depend
on where the group lands in the chain (ADR-0002, step 1).

Journals written before name decisions by ``decisionSeq``, the decision entry's seq; a
decision recorded without ``decisionId`` is still named that way by what is written
about it now (:func:`decision_ref`). :func:`names_decision` reads both forms, and is the
one place that decides whether a payload is about a given decision (the lifecycle fold,
the fair-lending and comparative reviews' pools and ``credit why`` all ask it).
``credit journal verify`` and ``credit verify-bundle`` recompute every ``decisionId``
from its entry and count each ``decisionNumber`` (:func:`decision_id_problem`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from credit.canonical import canonical_bytes, sha256_hex

__all__ = [
    "DECISION_ID",
    "DECISION_NUMBER",
    "DECISION_SEQ",
    "decision_id",
    "decision_id_of",
    "decision_id_problem",
    "decision_ref",
    "named_decision",
    "names_decision",
]

DECISION_ID: Final = "decisionId"
DECISION_NUMBER: Final = "decisionNumber"
DECISION_SEQ: Final = "decisionSeq"  # the form of journals written before decisionId


def decision_id(case_id: str | None, kind: str, payload: Mapping[str, Any]) -> str:
    """The content name of a decision entry: SHA-256 of its case, kind and payload
    (the payload without its own ``decisionId``)."""
    body = {k: v for k, v in payload.items() if k != DECISION_ID}
    return sha256_hex(canonical_bytes({"caseId": case_id, "kind": kind, "payload": body}))


def named_decision(
    case_id: str, kind: str, payload: Mapping[str, Any], number: int
) -> dict[str, Any]:
    """A decision entry's payload with its number and its content name, for the case's
    ``number``-th decision."""
    if type(number) is not int or number < 1:
        raise ValueError(f"a decision's number is a whole number from 1, not {number!r}")
    named = {**payload, DECISION_NUMBER: number}
    named[DECISION_ID] = decision_id(case_id, kind, named)
    return named


def decision_id_of(payload: Mapping[str, Any]) -> str | None:
    """The ``decisionId`` a payload states (None: it states none)."""
    value = payload.get(DECISION_ID)
    return value if isinstance(value, str) else None


def _stated_seq(payload: Mapping[str, Any]) -> int | None:
    value = payload.get(DECISION_SEQ)
    return value if type(value) is int else None


def decision_ref(seq: int, payload: Mapping[str, Any]) -> dict[str, Any]:
    """How an entry written now names the decision entry at ``seq`` with ``payload``:
    by its ``decisionId``, or by its seq when it was recorded without one."""
    named = decision_id_of(payload)
    return {DECISION_ID: named} if named is not None else {DECISION_SEQ: seq}


def names_decision(payload: Mapping[str, Any], seq: int, decision: str | None) -> bool | None:
    """Whether an entry's ``payload`` is about the decision entry at ``seq`` whose
    ``decisionId`` is ``decision`` (None: recorded without one). None when the payload
    names no decision at all (entries written before decisions were named, which are
    about the only decision there was)."""
    named = decision_id_of(payload)
    if named is not None:
        return named == decision
    stated = _stated_seq(payload)
    if stated is not None:
        return stated == seq
    return None


def decision_id_problem(
    case_id: str | None, kind: str, payload: Mapping[str, Any], number: int
) -> str | None:
    """What is wrong with how a decision entry names itself, as the case's
    ``number``-th decision: a ``decisionId`` that is not its content's, or a
    ``decisionNumber`` that is not its place (None: nothing, or it names itself not at
    all, as entries written before do not)."""
    if DECISION_ID not in payload:
        return None
    stated = payload[DECISION_ID]
    if not isinstance(stated, str):
        return f"its decisionId is not a string ({type(stated).__name__})"
    stated_number = payload.get(DECISION_NUMBER)
    if type(stated_number) is not int or stated_number < 1:
        return f"it names itself ({stated[:12]}...) without a decisionNumber from 1"
    derived = decision_id(case_id, kind, payload)
    if stated != derived:
        return (
            f"its decisionId {stated[:12]}... is not the SHA-256 of its case, kind and "
            f"payload ({derived[:12]}...)"
        )
    if stated_number != number:
        return f"it says it is decision {stated_number} of its case, but it is decision {number}"
    return None
