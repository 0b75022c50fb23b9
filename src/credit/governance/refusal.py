"""Typed refusal (ADR-0001, docs/decisions/): the deterministic response to a violated,
runtime-checkable safety boundary.

The refusal surface replaces the underwriter's response surface whenever a
SafetyVerdict reports at least one ``runtime_checkable=True, upheld=False`` result.
It is deliberately:

* **Deterministic.** The same set of violated boundaries gives the same bytes.
* **Typed.** A constant prefix plus the lex-sorted boundary ids; audit consumers
  detect a refusal by prefix, not by reading prose.
* **Safety-only.** Ethics commitments are a per-deployment data pack and are recorded,
  never refused on: refusing on swappable commitments would let a pack edit silently
  change refusal behaviour.

The audited surfaces (what the underwriter actually produced) are journaled unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

__all__ = [
    "BOUNDARY_DECISION_CITES_PROHIBITED_BASIS",
    "BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER",
    "BOUNDARY_SECOND_RECORD_DECISION",
    "BOUNDARY_UNVERIFIED_NOTICE_SEND",
    "SAFETY_BOUNDARIES",
    "TYPED_REFUSAL_PREFIX",
    "BoundaryResult",
    "SafetyVerdict",
    "build_refusal_surface",
    "is_typed_refusal",
    "violated_runtime_checkable",
]

TYPED_REFUSAL_PREFIX = "I cannot proceed — safety boundary violated: "

# The safety boundaries (never swappable, fail-closed). Ids are stable: audit tools and
# the journal refer to them.
BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER = "fair_lending.prohibited_basis_reached_underwriter"
BOUNDARY_DECISION_CITES_PROHIBITED_BASIS = "fair_lending.decision_cites_prohibited_basis"
BOUNDARY_SECOND_RECORD_DECISION = "commit.second_record_decision"
BOUNDARY_UNVERIFIED_NOTICE_SEND = "notice.unverified_send"
SAFETY_BOUNDARIES = (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
    BOUNDARY_SECOND_RECORD_DECISION,
    BOUNDARY_UNVERIFIED_NOTICE_SEND,
)


class BoundaryResult(BaseModel):
    """One safety boundary's result for one turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    boundary_id: str
    runtime_checkable: bool
    upheld: bool
    detail: str = ""


class SafetyVerdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    results: tuple[BoundaryResult, ...] = ()

    @property
    def violated(self) -> tuple[str, ...]:
        return violated_runtime_checkable(self)

    def merged(self, other: SafetyVerdict) -> SafetyVerdict:
        return SafetyVerdict(results=self.results + other.results)


def violated_runtime_checkable(verdict: SafetyVerdict | None) -> tuple[str, ...]:
    """The lex-sorted ids of runtime-checkable boundaries that were not upheld.

    A predicate reporting ``runtime_checkable=False`` lacked the evidence to make a
    real claim and never triggers a refusal.
    """
    if verdict is None:
        return ()
    return tuple(
        sorted(r.boundary_id for r in verdict.results if r.runtime_checkable and not r.upheld)
    )


def build_refusal_surface(verdict: SafetyVerdict | None) -> str | None:
    """The typed refusal string, or None when no runtime-checkable boundary was violated."""
    violated = violated_runtime_checkable(verdict)
    if not violated:
        return None
    return _format_refusal(violated)


def _format_refusal(boundary_ids: Iterable[str]) -> str:
    return TYPED_REFUSAL_PREFIX + ", ".join(boundary_ids)


def is_typed_refusal(surface: str | None) -> bool:
    """Audit helper: is this surface a typed refusal?"""
    return surface is not None and surface.startswith(TYPED_REFUSAL_PREFIX)
