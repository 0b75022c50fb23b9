"""The main job: the governed pipeline over a batch of cases.

Orchestration (spec, "Orchestration"), each step journaled:

1. **Intake (Onramp)** validates each case, keeps monitoring data apart and moves any
   prohibited-basis field out of the underwriter's reach.
2. **The underwriter (Spark)** decides each case through the governed MCP tools; the
   commit seam records the decision as *held* (or refuses it with a typed refusal).
3. **The Keystone gate** runs Equipoise (fair lending) and Backstop (model risk) on
   every held decision and releases it, or keeps it held for a person.
4. **Notices.** Each released decline or counteroffer gets its notice rendered,
   verified (V1-V8) and sent; one that is not exactly the verified notice is blocked
   with a typed refusal (``notice.unverified_send``).
5. **Ethics** commitments are evaluated and recorded, never refused on.

Resumable: every step first reads the journal, so a run killed at any point and
started again finishes the batch without deciding any case twice or losing one that
was decided. The pipeline holds no domain logic of its own: it sequences the core.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio

from credit.cases import iter_documents
from credit.errors import InputError, SendRefusedError
from credit.governance.keystone import Keystone, KeystoneStatus
from credit.governance.onramp import intake
from credit.governance.refusal import build_refusal_surface
from credit.governance.safety import (
    ethics_context_from_journal,
    evaluate_ethics,
    journal_ethics,
    safety_verdict,
    unverified_notice_send,
)
from credit.guardrails.expectation import expectation_for
from credit.guardrails.verifier import Verifier
from credit.journal.base import DECISION_KIND, ChainReport, Store
from credit.models import Decision, parse_case, parse_decision
from credit.notices.outbox import Outbox
from credit.notices.render import NOTICE_DECISIONS, render_notice
from credit.policy import PolicyRegistry
from credit.underwriters.runtime import SAFETY_REFUSAL, SparkRuntime, Underwriter
from credit.underwriting import decide_case

__all__ = [
    "NOTICE_BLOCKED",
    "NOTICE_SENT",
    "NOTICE_VERIFIED",
    "BatchLine",
    "Pipeline",
    "RunSummary",
    "read_batch",
]

NOTICE_VERIFIED: Final = "notice.verified"
NOTICE_SENT: Final = "notice.sent"
NOTICE_BLOCKED: Final = "notice.blocked"
ETHICS_FINDING: Final = "ethics.finding"

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass(frozen=True, slots=True)
class BatchLine:
    """One line of a batch: the raw case, or why it could not be read as JSON."""

    line: int
    raw: Any
    error: InputError | None = None


def read_batch(path: Path | str) -> list[BatchLine]:
    """Read a ``.jsonl`` batch (or one ``.json`` case) as raw documents, exact decimals,
    with the one case reader (:func:`credit.cases.iter_documents`): a line it refuses
    (not UTF-8, not strict JSON, too long or too deep) is a BatchLine with its error,
    and every other line is still read."""
    return [BatchLine(d.line, d.raw, d.error) for d in iter_documents(path)]


@dataclass(slots=True)
class RunSummary:
    """What a run did, counted from the journal for the batch's cases."""

    cases: int = 0
    taken_in: int = 0
    resumed: int = 0
    failures: list[InputError] = field(default_factory=list)
    outcomes: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    decided: int = 0
    refused: int = 0
    held: int = 0
    released: int = 0
    rejected: int = 0
    notices_verified: int = 0
    notices_sent: int = 0
    notices_blocked: int = 0
    ethics_findings: int = 0
    chain: ChainReport | None = None


class Pipeline:
    """Intake, underwriter, Keystone, notices and ethics over one store."""

    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        *,
        registry: PolicyRegistry | None = None,
        underwriter: Underwriter | None = None,
        keystone: Keystone | None = None,
        verifier: Verifier | None = None,
        progress: Progress | None = None,
    ) -> None:
        from credit.underwriters.rules import RulesUnderwriter

        self.store = store
        self.outbox = outbox
        self.registry = registry or PolicyRegistry.bundled()
        self.underwriter: Underwriter = underwriter or RulesUnderwriter(self.registry)
        self.runtime = SparkRuntime(store, registry=self.registry)
        self.keystone = keystone or Keystone(store, registry=self.registry)
        self.verifier = verifier or Verifier()
        self._progress = progress

    def _tick(self, phase: str, done: int, total: int) -> None:
        if self._progress is not None:
            self._progress(phase, done, total)

    # ------------------------------------------------------------------ the stages

    def take_in(
        self, lines: Sequence[BatchLine], source: str | None
    ) -> tuple[dict[str, int], RunSummary]:
        """Stage 1: intake. Bad cases are listed and skipped; nothing recorded changes.
        Returns the batch's case ids, in order, with their line numbers."""
        summary = RunSummary(cases=len(lines))
        case_ids: dict[str, int] = {}
        for done, item in enumerate(lines, start=1):
            self._tick("intake", done, len(lines))
            if item.error is not None:
                summary.failures.append(item.error)
                continue
            try:
                result = intake(item.raw, self.store)
            except InputError as err:
                summary.failures.append(err.located(line=item.line, source=source))
                continue
            if result.case_id in case_ids:
                summary.failures.append(
                    InputError(
                        "the same case id appears twice in the batch",
                        case_id=result.case_id,
                        field="caseId",
                        line=item.line,
                        source=source,
                    )
                )
                continue
            case_ids[result.case_id] = item.line
            if result.taken_in:
                summary.taken_in += 1
            else:
                summary.resumed += 1
        return case_ids, summary

    def underwrite(self, case_ids: Sequence[str]) -> list[InputError]:
        """Stage 2: one governed underwriter turn per case not yet decided or refused.

        A case the policy cannot decide as asked (a term it does not offer, say) is bad
        input: its turn is journaled with the error, it stays undecided, and the error
        is returned so the caller can name it; the other cases go on."""
        pending = [c for c in case_ids if not self._turn_done(c)]
        errors: list[InputError] = []

        async def turns() -> None:
            for done, case_id in enumerate(pending, start=1):
                self._tick("underwrite", done, len(pending))
                try:
                    await self.runtime.turn(case_id, self.underwriter)
                except InputError as err:
                    errors.append(err)

        if pending:
            anyio.run(turns)
        return errors

    def _turn_done(self, case_id: str) -> bool:
        if self.store.decision_entry(case_id) is not None:
            return True
        return bool(self.store.entries(case_id, kinds=[SAFETY_REFUSAL]))

    def review(self) -> list[KeystoneStatus]:
        """Stage 3: the Keystone gate reviews every decision awaiting review."""
        self._tick("review", 0, 1)
        statuses = self.keystone.review_pending()
        self._tick("review", 1, 1)
        return statuses

    def notify(self, case_ids: Sequence[str]) -> None:
        """Stage 4: render, verify and send the notice of each released decline or
        counteroffer that has none yet."""
        for done, case_id in enumerate(case_ids, start=1):
            self._tick("notices", done, len(case_ids))
            self.notify_case(case_id)

    def notify_case(self, case_id: str) -> str | None:
        """The notice step for one case; returns the journal kind it ended with (or None
        when the case takes no notice now)."""
        if self.keystone.status(case_id).state != "released":
            return None
        entry = self.store.decision_entry(case_id)
        if entry is None:
            return None
        recorded = parse_decision(entry.payload.get("decision"), case_id=case_id)
        if recorded.decision not in NOTICE_DECISIONS:
            return None
        done = self.store.entries(case_id, kinds=[NOTICE_SENT, NOTICE_BLOCKED])
        if done:
            return done[-1].kind
        document = self.store.get_case(case_id)
        if document is None:
            raise InputError("the case document is missing from the store", case_id=case_id)
        case = parse_case(dict(document))
        underwriting = decide_case(case, self.registry.in_force(case.as_of))
        if underwriting.decision.to_wire() != recorded.to_wire():
            return self._block(
                case_id,
                None,
                "the recorded decision is not the one the policy derives, so its reasons "
                "cannot be stated from the catalogue: a person must write this notice",
            )
        notice = render_notice(case, underwriting)
        report = self.verifier.verify(notice, expectation_for(case, underwriting))
        self.store.append(
            case_id,
            NOTICE_VERIFIED,
            {
                "noticeSha256": report.notice_sha256,
                "passed": report.passed,
                "failed": list(report.failed),
                "report": report.to_wire(),
            },
        )
        boundary = unverified_notice_send(notice.sha256, report, case_id=case_id)
        verdict = safety_verdict(boundary)
        refusal = build_refusal_surface(verdict)
        if refusal is not None:
            return self._block(
                case_id, notice.sha256, boundary.detail, refusal=(refusal, verdict.violated)
            )
        try:
            sent = self.outbox.send(notice, report)
        except SendRefusedError as err:
            return self._block(case_id, notice.sha256, err.message)
        self.store.append(
            case_id,
            NOTICE_SENT,
            {"noticeSha256": sent.notice_sha256, "decision": recorded.decision},
        )
        return NOTICE_SENT

    def _block(
        self,
        case_id: str,
        sha256: str | None,
        why: str,
        *,
        refusal: tuple[str, tuple[str, ...]] | None = None,
    ) -> str:
        """Journal a blocked notice (and the typed refusal, when a boundary refused it)."""
        self.store.append(case_id, NOTICE_BLOCKED, {"noticeSha256": sha256, "reason": why})
        if refusal is not None:
            surface, boundaries = refusal
            self.store.append(
                case_id,
                SAFETY_REFUSAL,
                {"stage": "notice", "boundaries": list(boundaries), "surface": surface},
            )
        return NOTICE_BLOCKED

    def record_ethics(self, case_ids: Sequence[str]) -> None:
        """Stage 5: evaluate the ethics pack on each decided case once; recorded only."""
        today = dt.datetime.now(dt.UTC).date()
        for done, case_id in enumerate(case_ids, start=1):
            self._tick("ethics", done, len(case_ids))
            if self.store.decision_entry(case_id) is None:
                continue
            if self.store.entries(case_id, kinds=[ETHICS_FINDING]):
                continue
            sent = self.store.entries(case_id, kinds=[NOTICE_SENT])
            context = ethics_context_from_journal(
                self.store,
                case_id,
                notice_text=None,
                notified_on=today if sent else None,
            )
            journal_ethics(self.store, evaluate_ethics(context))

    # ------------------------------------------------------------------ the job

    def run(self, lines: Sequence[BatchLine], *, source: str | None = None) -> RunSummary:
        lines_of, summary = self.take_in(lines, source)
        case_ids = list(lines_of)
        for err in self.underwrite(case_ids):
            line = lines_of.get(err.case_id or "")
            summary.failures.append(err.located(line=line, source=source))
        self.review()
        self.notify(case_ids)
        self.record_ethics(case_ids)
        self.summarise(case_ids, summary)
        summary.chain = self.store.verify()
        return summary

    def summarise(self, case_ids: Iterable[str], summary: RunSummary) -> RunSummary:
        """Count the batch's cases by their standing in the journal."""
        kinds = [
            DECISION_KIND,
            SAFETY_REFUSAL,
            NOTICE_VERIFIED,
            NOTICE_SENT,
            NOTICE_BLOCKED,
            ETHICS_FINDING,
        ]
        for case_id in case_ids:
            entries = self.store.entries(case_id, kinds=kinds)
            by_kind = Counter(e.kind for e in entries)
            decision_entry = next((e for e in entries if e.kind == DECISION_KIND), None)
            if decision_entry is not None:
                decision: Decision = parse_decision(
                    decision_entry.payload.get("decision"), case_id=case_id
                )
                summary.decided += 1
                summary.outcomes[(decision.product, decision.score_band, decision.decision)] += 1
                state = self.keystone.status(case_id).state
                summary.held += state in ("held", "awaiting-review")
                summary.released += state == "released"
                summary.rejected += state == "rejected"
            summary.refused += by_kind[SAFETY_REFUSAL] > 0
            summary.notices_verified += any(
                e.kind == NOTICE_VERIFIED and e.payload.get("passed") is True for e in entries
            )
            summary.notices_sent += by_kind[NOTICE_SENT] > 0
            summary.notices_blocked += by_kind[NOTICE_BLOCKED] > 0
            summary.ethics_findings += by_kind[ETHICS_FINDING]
        return summary
