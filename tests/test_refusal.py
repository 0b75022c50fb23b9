"""The typed refusal contract (ADR-0001), exactly as the seed states it: a constant
prefix plus the lex-sorted ids of the runtime-checkable violated boundaries; the same
verdict gives the same bytes; only runtime-checkable violations refuse."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from credit.governance.refusal import (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
    BOUNDARY_SECOND_RECORD_DECISION,
    BOUNDARY_UNVERIFIED_NOTICE_SEND,
    SAFETY_BOUNDARIES,
    TYPED_REFUSAL_PREFIX,
    BoundaryResult,
    SafetyVerdict,
    build_refusal_surface,
    is_typed_refusal,
    violated_runtime_checkable,
)

ADR = Path(__file__).resolve().parents[1] / "docs" / "decisions" / "ADR-0001-typed-refusal.md"


def result(boundary: str, *, checkable: bool = True, upheld: bool = False) -> BoundaryResult:
    return BoundaryResult(boundary_id=boundary, runtime_checkable=checkable, upheld=upheld)


def seed_build_refusal_surface(verdict: Any) -> str | None:
    """The seed's algorithm, ported line for line (chat/refusal.py, ADR-0036)."""
    if verdict is None:
        violated: tuple[str, ...] = ()
    else:
        boundary_ids: list[str] = []
        for r in getattr(verdict, "results", ()) or ():
            if getattr(r, "runtime_checkable", False) and not getattr(r, "upheld", True):
                boundary_ids.append(str(r.boundary_id))
        violated = tuple(sorted(boundary_ids))
    if not violated:
        return None
    return "I cannot proceed — safety boundary violated: " + ", ".join(violated)


def test_the_prefix_is_the_seeds_constant() -> None:
    assert TYPED_REFUSAL_PREFIX == "I cannot proceed — safety boundary violated: "


def test_no_verdict_and_a_verdict_with_nothing_violated_do_not_refuse() -> None:
    assert build_refusal_surface(None) is None
    assert build_refusal_surface(SafetyVerdict()) is None
    upheld = SafetyVerdict(results=tuple(result(b, upheld=True) for b in SAFETY_BOUNDARIES))
    assert build_refusal_surface(upheld) is None


def test_one_runtime_checkable_violation_refuses_with_the_prefix_and_its_id() -> None:
    verdict = SafetyVerdict(results=(result(BOUNDARY_SECOND_RECORD_DECISION),))
    assert build_refusal_surface(verdict) == (
        "I cannot proceed — safety boundary violated: commit.second_record_decision"
    )


def test_several_violations_are_named_lex_sorted_whatever_order_they_were_reported_in() -> None:
    ids = [
        BOUNDARY_UNVERIFIED_NOTICE_SEND,
        BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
        BOUNDARY_SECOND_RECORD_DECISION,
    ]
    forward = SafetyVerdict(results=tuple(result(b) for b in ids))
    backward = SafetyVerdict(results=tuple(result(b) for b in reversed(ids)))
    expected = TYPED_REFUSAL_PREFIX + (
        "commit.second_record_decision, "
        "fair_lending.prohibited_basis_reached_underwriter, "
        "notice.unverified_send"
    )
    assert build_refusal_surface(forward) == build_refusal_surface(backward) == expected


def test_the_same_verdict_always_gives_the_same_bytes() -> None:
    verdict = SafetyVerdict(
        results=(result(BOUNDARY_DECISION_CITES_PROHIBITED_BASIS), result("z.custom"))
    )
    surfaces = {build_refusal_surface(verdict) for _ in range(5)}
    assert len(surfaces) == 1
    surface = surfaces.pop()
    assert surface is not None
    assert surface.encode("utf-8") == (
        b"I cannot proceed \xe2\x80\x94 safety boundary violated: "
        b"fair_lending.decision_cites_prohibited_basis, z.custom"
    )


def test_a_violation_without_runtime_evidence_never_refuses() -> None:
    verdict = SafetyVerdict(
        results=(
            result(BOUNDARY_UNVERIFIED_NOTICE_SEND, checkable=False),
            result(BOUNDARY_SECOND_RECORD_DECISION, checkable=False, upheld=True),
        )
    )
    assert violated_runtime_checkable(verdict) == ()
    assert build_refusal_surface(verdict) is None


def test_only_the_runtime_checkable_violations_are_named() -> None:
    verdict = SafetyVerdict(
        results=(
            result(BOUNDARY_UNVERIFIED_NOTICE_SEND, checkable=False),
            result(BOUNDARY_DECISION_CITES_PROHIBITED_BASIS),
            result(BOUNDARY_SECOND_RECORD_DECISION, upheld=True),
        )
    )
    assert verdict.violated == (BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,)
    assert build_refusal_surface(verdict) == (
        TYPED_REFUSAL_PREFIX + BOUNDARY_DECISION_CITES_PROHIBITED_BASIS
    )


def test_is_typed_refusal_detects_a_refusal_by_its_prefix_alone() -> None:
    refusal = build_refusal_surface(SafetyVerdict(results=(result("a.b"),)))
    assert refusal is not None and is_typed_refusal(refusal)
    assert not is_typed_refusal("Decision recorded: approve.")
    assert not is_typed_refusal("")
    assert not is_typed_refusal(None)
    assert not is_typed_refusal(" " + refusal)


def test_merged_verdicts_refuse_on_the_union_of_their_violations() -> None:
    first = SafetyVerdict(results=(result(BOUNDARY_UNVERIFIED_NOTICE_SEND),))
    second = SafetyVerdict(results=(result(BOUNDARY_SECOND_RECORD_DECISION),))
    assert first.merged(second).violated == (
        BOUNDARY_SECOND_RECORD_DECISION,
        BOUNDARY_UNVERIFIED_NOTICE_SEND,
    )


_results = st.builds(
    BoundaryResult,
    boundary_id=st.sampled_from([*SAFETY_BOUNDARIES, "a", "b.c", "Z.upper"]),
    runtime_checkable=st.booleans(),
    upheld=st.booleans(),
)


@given(st.lists(_results, max_size=8))
def test_the_refusal_is_byte_for_byte_the_seeds_for_any_verdict(
    results: list[BoundaryResult],
) -> None:
    verdict = SafetyVerdict(results=tuple(results))
    assert build_refusal_surface(verdict) == seed_build_refusal_surface(verdict)
    refusal = build_refusal_surface(verdict)
    assert (refusal is not None) == any(r.runtime_checkable and not r.upheld for r in results)
    assert refusal is None or is_typed_refusal(refusal)


def test_the_boundary_ids_are_stable() -> None:
    assert sorted(SAFETY_BOUNDARIES) == [
        "commit.second_record_decision",
        "fair_lending.decision_cites_prohibited_basis",
        "fair_lending.prohibited_basis_reached_underwriter",
        "notice.unverified_send",
    ]


def test_the_decision_record_lists_every_boundary_and_the_contract() -> None:
    text = ADR.read_text(encoding="utf-8")
    table_ids = re.findall(r"^\| `([a-z_.]+)` \|", text, flags=re.MULTILINE)
    assert table_ids == sorted(SAFETY_BOUNDARIES)  # every boundary, lex-sorted
    assert f"`{TYPED_REFUSAL_PREFIX}`" in text
    for phrase in (
        "Safety-only",
        "lex-sorted",
        "Audited surfaces unchanged",
        "Next-turn evidence flag",
        "Symmetric paths",
        "Ethics is audit-only",
    ):
        assert phrase in text, phrase
