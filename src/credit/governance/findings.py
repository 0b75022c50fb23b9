"""What a review says about a case: findings, the review, and the journal kinds.

A :class:`Finding` either *holds* the decision (it needs a person before the decision
is committed) or is recorded for the reviewer's information only. A :class:`Review`
passes when none of its findings holds. Equipoise (fair lending) and Backstop (model
risk) both return a Review; the Keystone gate journals each one and releases the
decision only when both passed.

The journal kinds below are the only ones the gate writes or reads; the gate's state
for a case is derived from these entries alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from credit.kinds import (
    GATE_KINDS,
    KEYSTONE_HELD,
    KEYSTONE_REJECTED,
    KEYSTONE_RELEASED,
    REVIEW_BACKSTOP,
    REVIEW_EQUIPOISE,
    REVIEW_KINDS,
)

__all__ = [
    "GATE_KINDS",
    "KIND_BACKSTOP",
    "KIND_EQUIPOISE",
    "KIND_HELD",
    "KIND_REJECTED",
    "KIND_RELEASED",
    "REVIEW_KINDS",
    "Finding",
    "Review",
    "ReviewerName",
]

# The names are credit.kinds' (every journal kind is named there).
KIND_EQUIPOISE = REVIEW_EQUIPOISE
KIND_BACKSTOP = REVIEW_BACKSTOP
KIND_RELEASED = KEYSTONE_RELEASED
KIND_HELD = KEYSTONE_HELD
KIND_REJECTED = KEYSTONE_REJECTED

ReviewerName = Literal["equipoise", "backstop"]


class Finding(BaseModel):
    """One thing a review found.

    ``code`` is stable and dotted (``backstop.disagreement``); ``holds`` says whether
    it keeps the decision from being committed without a person; ``detail`` carries
    the figures (JSON-ready: text, integers, exact decimals, lists, mappings).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    holds: bool
    message: str
    detail: Mapping[str, Any] = Field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "holds": self.holds,
            "message": self.message,
            "detail": dict(self.detail),
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            code=str(data["code"]),
            holds=bool(data["holds"]),
            message=str(data["message"]),
            detail=dict(data.get("detail") or {}),
        )


class Review(BaseModel):
    """One reviewer's verdict on one recorded decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reviewer: ReviewerName
    case_id: str
    findings: tuple[Finding, ...] = ()
    basis: Mapping[str, Any] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when no finding holds the decision."""
        return not any(f.holds for f in self.findings)

    @property
    def holding(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.holds)

    @property
    def kind(self) -> str:
        return KIND_EQUIPOISE if self.reviewer == "equipoise" else KIND_BACKSTOP

    def to_payload(self) -> dict[str, Any]:
        """The journal payload of ``review.equipoise`` / ``review.backstop``."""
        return {
            "reviewer": self.reviewer,
            "passed": self.passed,
            "findings": [f.to_wire() for f in self.findings],
            "basis": dict(self.basis),
        }

    @classmethod
    def from_payload(cls, case_id: str, payload: Mapping[str, Any]) -> Review:
        reviewer = payload["reviewer"]
        if reviewer not in ("equipoise", "backstop"):
            raise ValueError(f"unknown reviewer {reviewer!r}")
        return cls(
            reviewer=reviewer,
            case_id=case_id,
            findings=tuple(Finding.from_wire(f) for f in payload.get("findings", ())),
            basis=dict(payload.get("basis") or {}),
        )
