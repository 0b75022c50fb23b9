"""Who acts on a case: the roles, and an actor (a named key holder with one role).

Every action a person takes (decide, release, reject, withdraw) is made with a key
(``credit keys create``); the journal records the key's id and its name, and two keys
cannot share a name, so each entry names exactly one person. The system's own steps
(the underwriter turn, the Keystone gate's automatic review, the notice step) are made
by :data:`SYSTEM`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

__all__ = ["SYSTEM", "Actor", "Role"]


class Role(StrEnum):
    """The roles. Every API key carries exactly one.

    ``intake`` takes cases in; ``underwriter`` decides them (the system's turn) and
    sends notices, and never receives monitoring data; ``reviewer`` (fair lending and
    model risk) reads the queue and releases (four eyes) or rejects held decisions;
    ``officer`` (a credit officer) decides the cases a person must decide (referrals,
    rejected, refused and failed turns, blocked notices) and records withdrawals;
    ``auditor`` only reads.
    """

    INTAKE = "intake"
    UNDERWRITER = "underwriter"
    REVIEWER = "reviewer"
    OFFICER = "officer"
    AUDITOR = "auditor"


@dataclass(frozen=True, slots=True)
class Actor:
    """An authenticated person (or the system): the key's name, its role and its id."""

    name: str
    role: Role
    key_id: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """How the journal names the actor: ``{"name", "keyId", "role"}``."""
        return {"name": self.name, "keyId": self.key_id, "role": self.role.value}


SYSTEM: Final = Actor("system", Role.UNDERWRITER, None)
