"""The Spark runtime and the rules underwriter: the rules underwriter decides through the
MCP tools exactly as the engine does, every decision is held, and a violated safety
boundary replaces the surface with the typed refusal while the audit keeps the
underwriter's own output."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import anyio

from conftest import auto_case, card_case
from credit.canonical import dumps, loads
from credit.errors import PolicyError, UndecidedCaseError
from credit.examples import generate_cases
from credit.governance.guard import FairLendingGuard, Redacted
from credit.governance.onramp import intake
from credit.governance.refusal import (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
    BOUNDARY_SECOND_RECORD_DECISION,
    TYPED_REFUSAL_PREFIX,
    is_typed_refusal,
)
from credit.journal import InMemoryStore
from credit.lifecycle import fold
from credit.models import parse_case
from credit.policy import PolicyRegistry, default_policy, load_policy
from credit.tools import TOOL_NAMES, CaseTools, ToolSession, jsonable, open_session
from credit.underwriters import (
    SAFETY_REFUSAL,
    TURN_FAILED,
    UNDERWRITER_TURN,
    RulesUnderwriter,
    SparkRuntime,
    TurnContext,
    Underwriter,
)
from credit.underwriting import decide_case

POLICY = default_policy()


def engine_wire(case: dict[str, Any]) -> dict[str, Any]:
    return decide_case(parse_case(case), POLICY).decision.to_wire()


class CitingUnderwriter:
    """An underwriter that reads like the rules one but cites a prohibited basis."""

    name = "citing"

    def __init__(self, factor: str = "Applicant age") -> None:
        self.factor = factor

    async def run(self, tools: CaseTools, context: TurnContext) -> str:
        async with open_session(tools) as session:
            for tool in TOOL_NAMES[:3]:
                await session.call(tool)
            case = {
                "caseId": context.case_id,
                "asOf": context.as_of,
                **{k: v for k, v in (tools.store.get_case(context.case_id) or {}).items()},
            }
            wire = jsonable(decide_case(parse_case(case), POLICY).decision.to_wire())
            wire["factors"] = [*wire["factors"], self.factor]
            await session.call("record_decision", {"decision": wire})
            return dumps(wire)


def test_the_rules_underwriter_decides_through_the_tools_as_the_engine_does() -> None:
    store = InMemoryStore()
    runtime = SparkRuntime(store)
    cases = generate_cases(11, 40)
    for case in cases:
        intake(case, store)
        result = runtime.run_turn(case["caseId"], RulesUnderwriter())
        assert not result.refused and result.started
        assert result.decision_entry is not None
        assert result.decision_entry.payload["decision"] == engine_wire(case)
        assert result.decision_entry.payload["status"] == "held"
        assert loads(result.surface) == loads(dumps(engine_wire(case)))
        assert result.surface == result.audited_surface
    assert store.verify().ok


def test_a_turn_uses_every_tool_once_and_is_journaled_with_its_verdict() -> None:
    store = InMemoryStore()
    intake(card_case(case_id="C-TURN"), store)
    result = SparkRuntime(store).run_turn("C-TURN", RulesUnderwriter())

    (turn,) = store.entries("C-TURN", kinds=[UNDERWRITER_TURN])
    assert turn.payload["toolCalls"] == list(TOOL_NAMES)
    assert turn.payload["surface"] == result.audited_surface
    assert turn.payload["refused"] is False
    assert turn.payload["underwriter"] == "rules"
    decided = result.decision_entry
    assert decided is not None
    assert turn.payload["decisionId"] == decided.payload["decisionId"]  # by content, not seq
    assert {v["boundary"] for v in turn.payload["verdict"]} == {
        BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
        BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
        BOUNDARY_SECOND_RECORD_DECISION,
    }
    assert store.entries("C-TURN", kinds=[SAFETY_REFUSAL]) == []
    assert result.decision_entry.payload["turn"] == result.turn  # type: ignore[union-attr]


def test_a_second_turn_on_a_decided_case_is_refused_with_the_typed_surface() -> None:
    store = InMemoryStore()
    case = auto_case(case_id="C-AGAIN")
    intake(case, store)
    runtime = SparkRuntime(store)
    first = runtime.run_turn("C-AGAIN", RulesUnderwriter())
    assert runtime.last_refusal_was_typed is False

    second = runtime.run_turn("C-AGAIN", RulesUnderwriter())

    assert second.refused
    assert second.surface == TYPED_REFUSAL_PREFIX + "commit.second_record_decision"
    assert is_typed_refusal(second.surface)
    assert second.audited_surface == first.audited_surface  # the underwriter's own output
    assert second.decision_entry is None
    assert store.decision_entry("C-AGAIN") == first.decision_entry
    assert runtime.last_refusal_was_typed is True
    (refusal,) = store.entries("C-AGAIN", kinds=[SAFETY_REFUSAL])
    assert refusal.payload["boundaries"] == [BOUNDARY_SECOND_RECORD_DECISION]
    assert refusal.payload["surface"] == second.surface
    turns = store.entries("C-AGAIN", kinds=[UNDERWRITER_TURN])
    assert turns[-1].payload["surface"] == second.audited_surface
    assert turns[-1].payload["refused"] is True

    intake(card_case(case_id="C-NEXT"), store)
    assert not runtime.run_turn("C-NEXT", RulesUnderwriter()).refused
    assert runtime.last_refusal_was_typed is False


def test_a_decision_citing_age_is_refused_with_the_typed_prefix_and_not_committed() -> None:
    store = InMemoryStore()
    intake(auto_case(case_id="C-AGE"), store)
    runtime = SparkRuntime(store)

    result = runtime.run_turn("C-AGE", CitingUnderwriter("Applicant age"))

    assert result.refused
    assert result.surface == TYPED_REFUSAL_PREFIX + BOUNDARY_DECISION_CITES_PROHIBITED_BASIS
    assert "Applicant age" in result.audited_surface
    assert store.decision_entry("C-AGE") is None
    assert result.decision_entry is None
    assert runtime.last_refusal_was_typed


def test_a_case_planted_past_intake_is_refused_at_the_context_seam_before_the_turn() -> None:
    store = InMemoryStore()
    case = auto_case(case_id="C-PLANTED")
    store.put_case(
        "C-PLANTED",
        {
            "caseId": "C-PLANTED",
            "asOf": case["asOf"],
            "application": {**case["application"], "dateOfBirth": "1961-04-02"},
            "creditReport": case["creditReport"],
        },
    )
    underwriter = RulesUnderwriter()

    result = SparkRuntime(store).run_turn("C-PLANTED", underwriter)

    assert not result.started
    assert underwriter.last is None
    assert result.refused
    assert result.surface == TYPED_REFUSAL_PREFIX + BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER
    assert result.audited_surface == ""
    assert store.decision_entry("C-PLANTED") is None


def test_a_broken_guard_fails_closed_and_the_turn_is_refused() -> None:
    class LeakyGuard(FairLendingGuard):
        def redact(self, value: Any, *, path: str = "") -> Redacted:
            return Redacted(value, [])

    store = InMemoryStore()
    case = auto_case(case_id="C-LEAKY")
    store.put_case(
        "C-LEAKY",
        {
            "caseId": "C-LEAKY",
            "asOf": case["asOf"],
            "application": case["application"],
            "creditReport": {**case["creditReport"], "bureau": {"name": "B", "gender": "F"}},
        },
    )
    runtime = SparkRuntime(store, guard=LeakyGuard())
    # The context seam sees it first; the tool seam is the second line when it is skipped.
    result = runtime.run_turn("C-LEAKY", RulesUnderwriter())
    assert result.refused and not result.started

    async def read_directly() -> Any:
        from credit.governance.governor import Governor

        governor = Governor(store, "C-LEAKY", underwriter="rules", guard=LeakyGuard())
        async with open_session(CaseTools(store, "C-LEAKY", governor)) as session:
            return await session.call("get_credit_report"), governor

    report, governor = anyio.run(read_directly)
    assert not report.ok and "withheld" in report.text
    assert governor.verdict().violated == (BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,)


def test_an_underwriter_that_raises_is_journaled_once_as_a_failed_turn_for_a_person() -> None:
    class Failing:
        name = "failing"

        async def run(self, tools: CaseTools, context: TurnContext) -> str:
            raise UndecidedCaseError(
                "no decision step applies", case_id=context.case_id, rule="steps"
            )

    store = InMemoryStore()
    intake(auto_case(case_id="C-FAIL"), store)
    result = SparkRuntime(store).run_turn("C-FAIL", Failing())
    assert isinstance(result.error, UndecidedCaseError)
    assert result.failed and result.decision_entry is None
    (turn,) = store.entries("C-FAIL", kinds=[UNDERWRITER_TURN])
    assert turn.payload["error"].startswith("UndecidedCaseError")
    (failed,) = store.entries("C-FAIL", kinds=[TURN_FAILED])
    assert failed.payload["stage"] == "underwriter"
    assert failed.payload["errorType"] == "UndecidedCaseError"
    assert failed.payload["rule"] == "steps"
    life = fold("C-FAIL", store.entries("C-FAIL"), PolicyRegistry.bundled())
    assert (life.state, life.item and life.item.kind, life.item and life.item.role) == (
        "failed",
        "failed",
        "officer",
    )


def test_an_underwriter_that_ends_without_recording_a_decision_is_a_failed_turn() -> None:
    class Silent:
        name = "silent"

        async def run(self, tools: CaseTools, context: TurnContext) -> str:
            tools.get_application()
            return "I looked at it."

    store = InMemoryStore()
    intake(auto_case(case_id="C-QUIET"), store)
    result = SparkRuntime(store).run_turn("C-QUIET", Silent())
    assert result.failure == "the underwriter ended its turn without recording a decision"
    (failed,) = store.entries("C-QUIET", kinds=[TURN_FAILED])
    assert failed.payload["errorType"] == "NoDecisionRecorded"
    assert failed.payload["toolCalls"] == ["get_application"]


def test_the_rules_underwriter_refuses_a_policy_its_registry_does_not_hold(tmp_path: Path) -> None:
    text = Path(POLICY.source).read_text(encoding="utf-8")
    other = load_policy(tmp_path / "other.yaml", text.replace("2026-01-01", "2025-01-01"))
    store = InMemoryStore()
    intake(auto_case(case_id="C-POL"), store)
    runtime = SparkRuntime(store, registry=PolicyRegistry([other]))
    result = runtime.run_turn("C-POL", RulesUnderwriter(PolicyRegistry([POLICY])))
    assert isinstance(result.error, PolicyError)
    assert "registry does not hold" in str(result.error)
    assert store.decision_entry("C-POL") is None
    assert [e.kind for e in store.entries("C-POL", kinds=[TURN_FAILED])] == [TURN_FAILED]


def test_the_rules_underwriter_and_a_scripted_underwriter_are_refused_alike() -> None:
    store = InMemoryStore()
    for case_id in ("C-SYM-1", "C-SYM-2"):
        intake(auto_case(case_id=case_id), store)
    runtime = SparkRuntime(store)
    underwriters: list[Underwriter] = [RulesUnderwriter(), CitingUnderwriter("Too young")]
    for case_id, underwriter in zip(("C-SYM-1", "C-SYM-2"), underwriters, strict=True):
        runtime.run_turn(case_id, underwriter)
    again = [
        runtime.run_turn(c, u) for c, u in zip(("C-SYM-1", "C-SYM-1"), underwriters, strict=True)
    ]
    assert [r.surface for r in again] == [
        TYPED_REFUSAL_PREFIX + BOUNDARY_SECOND_RECORD_DECISION
    ] * 2


def test_the_turn_context_tells_the_underwriter_its_case_and_date_only() -> None:
    store = InMemoryStore()
    intake(auto_case(case_id="C-CTX"), store)
    seen: list[TurnContext] = []

    class Recording:
        name = "recording"

        async def run(self, tools: CaseTools, context: TurnContext) -> str:
            seen.append(context)
            async with open_session(tools) as session:
                return (await session.call("get_policy")).text

    result = SparkRuntime(store).run_turn("C-CTX", Recording())
    (context,) = seen
    assert context.case_id == "C-CTX"
    assert dt.date.fromisoformat(context.as_of) == dt.date(2026, 11, 30)
    assert "C-CTX" in context.prompt() and "exactly once" in context.prompt()
    assert "get_application" in context.methodology
    assert not result.refused and result.decision_entry is None
    assert isinstance(Recording(), Underwriter)


def test_the_rules_underwriter_drives_any_tool_session() -> None:
    store = InMemoryStore()
    case = card_case(case_id="C-DRIVE")
    intake(case, store)
    from credit.governance.governor import Governor

    tools = CaseTools(store, "C-DRIVE", Governor(store, "C-DRIVE", underwriter="rules"))
    underwriter = RulesUnderwriter()

    async def main() -> str:
        async with open_session(tools) as session:
            assert isinstance(session, ToolSession)
            return await underwriter.drive(session)

    surface = anyio.run(main)
    assert loads(surface) == loads(dumps(engine_wire(case)))
    assert underwriter.last is not None and underwriter.last.case_id == "C-DRIVE"


def test_the_runtimes_protocol_guards_answer_as_isinstance_does() -> None:
    """The runtime asks which optional protocols an underwriter follows with one
    attribute lookup each; the answer is isinstance's for a class with the method, one
    without, the method set on an instance, and no for a non-callable attribute of that
    name (which isinstance lets through, and a call would then fail on). Each protocol
    has exactly the one method its guard asks."""
    import typing

    from credit.underwriters.claude import ClaudeUnderwriter
    from credit.underwriters.runtime import (
        DrivesSession,
        Transcribed,
        WritesMethodology,
        drives_session,
        transcribed,
        writes_methodology,
    )

    guards = (
        (DrivesSession, drives_session, "drive"),
        (WritesMethodology, writes_methodology, "methodology_for"),
        (Transcribed, transcribed, "take_transcript"),
    )

    class Bare:
        pass

    def with_attribute(name: str, value: Any) -> Bare:
        obj = Bare()
        setattr(obj, name, value)
        return obj

    for protocol, guard, method in guards:
        assert typing._get_protocol_attrs(protocol) == {method}  # type: ignore[attr-defined]
        candidates: list[object] = [
            RulesUnderwriter(),
            ClaudeUnderwriter.__new__(ClaudeUnderwriter),
            Bare(),
            with_attribute(method, lambda *a: None),
            with_attribute(method, "not callable"),
        ]
        for obj in candidates:
            expected = isinstance(obj, protocol) and callable(getattr(obj, method, None))
            assert guard(obj) == expected, (protocol.__name__, type(obj).__name__)
        assert guard(with_attribute(method, lambda *a: None))
        assert not guard(Bare())
