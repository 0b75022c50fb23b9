"""The governor: the runtime governance layer at the three seams of an underwriter turn.

Governance seams (spec, "Sandboxed tools"):

1. **Context.** Before an underwriter starts, the structured context it is given (the
   application, the credit report and the policy, beside the methodology text) is
   checked for any prohibited-basis attribute, by field name through the fair-lending
   guard. The methodology text itself is not searched for words: it legitimately
   speaks of "prohibited-basis" data. A hit is boundary
   :data:`~credit.governance.refusal.BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER` and
   the underwriter is not started.
2. **Tool results.** Every ``get_*`` result passes through the guard before it reaches
   the model; each redaction is journaled (``guard.redacted``: tool, path, basis, never
   the value). A post-check then confirms no prohibited field remains; if one does,
   the result is withheld and the same boundary is violated (fail-closed).
3. **Commit.** ``record_decision`` validates the Decision
   (:func:`~credit.models.parse_decision`), refuses one whose factors or policy basis
   cite a prohibited basis or a proxy (whole-word matcher over the prohibited-terms
   data; boundary
   :data:`~credit.governance.refusal.BOUNDARY_DECISION_CITES_PROHIBITED_BASIS`, journaled
   as ``decision.refused``, nothing committed), and records the decision **held**
   pending the Keystone gate (``status: "held"``). A second ``record_decision`` for the
   case is boundary :data:`~credit.governance.refusal.BOUNDARY_SECOND_RECORD_DECISION`
   and changes nothing, not even the journal.

The governor collects one :class:`~credit.governance.refusal.BoundaryResult` per
boundary into the turn's :class:`~credit.governance.refusal.SafetyVerdict`. A boundary
the turn gave no evidence on (no decision was submitted) is reported with
``runtime_checkable=False`` and never refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

from credit.canonical import dumps, is_mapping, loads, read_back
from credit.decision_record import CompletedDecision
from credit.errors import SafetyBoundaryError
from credit.fairness_terms import Match, ProhibitedTerms, default_prohibited_terms
from credit.governance.guard import FairLendingGuard, Redaction, default_guard, opens_json
from credit.governance.refusal import (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
    BOUNDARY_SECOND_RECORD_DECISION,
    BoundaryResult,
    SafetyVerdict,
)
from credit.journal.base import DecisionAlreadyRecordedError, Entry, Store
from credit.journal.naming import named_decision
from credit.kinds import DECISION_KINDS, DECISION_RECORDED
from credit.models import Decision, parse_decision

__all__ = [
    "CONTEXT_VIOLATION",
    "DECISION_REFUSED",
    "GUARD_POST_CHECK_FAILED",
    "GUARD_REDACTED",
    "HELD",
    "Governor",
    "decision_citations",
]

GUARD_REDACTED = "guard.redacted"
GUARD_POST_CHECK_FAILED = "guard.post_check_failed"
CONTEXT_VIOLATION = "governor.context_violation"
DECISION_REFUSED = "decision.refused"
HELD = "held"


def decision_citations(
    decision: Decision, terms: ProhibitedTerms | None = None
) -> list[tuple[str, Match]]:
    """Every citation of a prohibited basis or proxy in a decision's factors and policy
    basis, as (``factors[i]`` / ``policyBasis[i]``, match)."""
    terms = terms or default_prohibited_terms()
    found: list[tuple[str, Match]] = []
    for field, texts in (("factors", decision.factors), ("policyBasis", decision.policy_basis)):
        for i, text in enumerate(texts):
            found.extend((f"{field}[{i}]", match) for match in terms.find(text))
    return found


class _Boundary:
    """The evidence one boundary gathered in this turn."""

    def __init__(self, boundary_id: str, *, checked: bool) -> None:
        self.boundary_id = boundary_id
        self.checked = checked
        self.violations: list[str] = []

    def result(self) -> BoundaryResult:
        if self.violations:
            detail = "; ".join(self.violations)
        elif self.checked:
            detail = "upheld"
        else:
            detail = "no evidence this turn"
        return BoundaryResult(
            boundary_id=self.boundary_id,
            runtime_checkable=self.checked or bool(self.violations),
            upheld=not self.violations,
            detail=detail,
        )


class Governor:
    """The governance layer of one underwriter turn on one case.

    ``underwriter`` names who is deciding (it is written into the held decision);
    ``policy`` is filled in by the tools with the policy they served, so the held
    decision says which policy version it was taken under.
    """

    def __init__(
        self,
        store: Store,
        case_id: str,
        *,
        underwriter: str,
        guard: FairLendingGuard | None = None,
        terms: ProhibitedTerms | None = None,
        turn: str | None = None,
    ) -> None:
        self.store = store
        self.case_id = case_id
        self.underwriter = underwriter
        self.guard = guard or default_guard()
        self.terms = terms or self.guard.terms
        self.turn = turn
        self.policy: Mapping[str, Any] | None = None
        self.redactions: list[tuple[str, Redaction]] = []
        self.committed: Entry | None = None
        self._reached = _Boundary(BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER, checked=True)
        self._cites = _Boundary(BOUNDARY_DECISION_CITES_PROHIBITED_BASIS, checked=False)
        self._second = _Boundary(BOUNDARY_SECOND_RECORD_DECISION, checked=False)

    # ------------------------------------------------------------ seam 1: context

    def _context_keys(self, name: str, part: Any, policy_sha256: str | None) -> list[Redaction]:
        """The prohibited field names in one part of the context (the policy's reading
        remembered by its SHA-256)."""
        guard = self.guard
        hit = guard.basis_of(name)
        here = [Redaction(name, name, hit[0], hit[1])] if hit is not None else []
        if name == "policy" and policy_sha256 is not None:
            return here + guard.remembered(
                ("context keys", policy_sha256),
                lambda: guard.find_prohibited_keys(part, path=name, values=False),
            )
        return here + guard.find_prohibited_keys(part, path=name, values=False)

    def check_context(
        self, context: Mapping[str, Any], *, policy_sha256: str | None = None
    ) -> BoundaryResult:
        """Check the structured context an underwriter is about to be given.

        Field names are checked at every depth (a hit violates the boundary: the
        underwriter is not started). Text values of the case data (application, credit
        report, policy) are read too: a value citing a basis is journaled as a value
        redaction (``layer: context``; the tools redact it again before the underwriter
        reads it, and Equipoise holds the case). The methodology text is not read: it
        legitimately names the prohibited bases it keeps out. ``policy_sha256``: the
        SHA-256 of the policy document in the context, whose reading is remembered.
        """
        guard = self.guard
        found: list[Redaction] = []
        read: dict[str, list[Redaction]] = {}  # the case's own parts, walked once each
        for name, part in context.items():
            if name in ("application", "creditReport"):
                # One walk finds both: its key hits are exactly a key-only walk's, in
                # the same order (reading values only adds the value hits).
                named = guard.basis_of(name)
                if named is not None:
                    found.append(Redaction(name, name, named[0], named[1]))
                read[name] = guard.find_prohibited_keys(part, path=name)
                found += [h for h in read[name] if h.match == "key"]
            else:
                found += self._context_keys(name, part, policy_sha256)
        if "policy" in context:
            policy = context["policy"]

            def scan() -> list[Redaction]:
                return guard.find_prohibited_keys(policy, path="policy")

            read["policy"] = (
                guard.remembered(("context values", policy_sha256), scan)
                if policy_sha256 is not None
                else scan()
            )
        for name in ("application", "creditReport", "policy"):
            if name in read:
                for hit in read[name]:
                    if hit.match == "value":
                        self._journal_redaction("context", hit, "context")
        if found:
            self._reached.violations.append(
                "context carries " + ", ".join(f"{r.path} ({r.basis})" for r in found)
            )
            self.store.append(
                self.case_id,
                CONTEXT_VIOLATION,
                {
                    "boundary": BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
                    "underwriter": self.underwriter,
                    "found": [{"path": r.path, "basis": r.basis, "kind": r.kind} for r in found],
                },
            )
        return BoundaryResult(
            boundary_id=BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
            runtime_checkable=True,
            upheld=not found,
            detail="; ".join(self._reached.violations) or "context carries no prohibited basis",
        )

    @property
    def context_upheld(self) -> bool:
        return not self._reached.violations

    # ------------------------------------------------------------ seam 2: tool results

    def guard_result(
        self, tool: str, result: Any, *, layer: str = "tool", same_as: Hashable | None = None
    ) -> Any:
        """Redact a tool result, journal each redaction, post-check it, and return it.

        ``layer`` says which layer redacted (``tool``: the seam itself; ``hook``: a
        second layer such as the LLM adapter's PostToolUse hook). Text that is itself
        JSON (an MCP text block) is parsed and guarded too. Raises
        :class:`~credit.errors.SafetyBoundaryError` (and withholds the result) when a
        prohibited field survives the redaction.

        ``same_as``: a name for a result that is always the same data (the policy
        document, by its SHA-256): the guard's reading of it is remembered, and each
        call still journals every redaction and refuses on a post-check hit. The
        cleaned result is then shared: callers never modify a result.
        """

        def read() -> tuple[Any, tuple[Redaction, ...], tuple[Redaction, ...]]:
            cleaned, found, plain = self._redact_embedded(result, "")
            # the post-check: the same walk over the cleaned value (and the JSON in its
            # text, unless the redaction found none to parse)
            remaining = self._find_embedded(cleaned, "", plain=plain)
            return cleaned, tuple(found), tuple(remaining)

        if same_as is None:
            cleaned, found, remaining = read()
        else:
            cleaned, found, remaining = self.guard.remembered(("result", same_as), read)
        for redaction in found:
            self.redactions.append((tool, redaction))
            self._journal_redaction(tool, redaction, layer)
        if remaining:
            paths = [r.path for r in remaining]
            self._reached.violations.append(f"{tool} result still carries {', '.join(paths)}")
            self.store.append(
                self.case_id,
                GUARD_POST_CHECK_FAILED,
                {
                    "boundary": BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
                    "tool": tool,
                    "paths": paths,
                    "layer": layer,
                    "underwriter": self.underwriter,
                },
            )
            raise SafetyBoundaryError(
                "a prohibited-basis field survived redaction; the result is withheld",
                boundary_id=BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
                case_id=self.case_id,
                tool=tool,
            )
        return cleaned

    def _journal_redaction(self, tool: str, redaction: Redaction, layer: str) -> None:
        self.store.append(
            self.case_id,
            GUARD_REDACTED,
            {
                "tool": tool,
                "path": redaction.path,
                "key": redaction.key,
                "basis": redaction.basis,
                "kind": redaction.kind,
                "match": redaction.match,
                "layer": layer,
                "underwriter": self.underwriter,
            },
        )

    def _redact_embedded(self, value: Any, path: str) -> _Redacted:
        """The guard's redaction, also inside strings that hold a JSON object or array;
        and whether the value held no such string (``plain``: the cleaned value is the
        guard's redaction alone)."""
        cleaned, found = self.guard.redact(value, path=path)
        if not _may_hold_json(cleaned):  # no string to parse: the walk would copy it
            return _Redacted(cleaned, found, True)
        return _Redacted(self._embedded(cleaned, path, found), found, False)

    def _embedded(self, value: Any, path: str, found: list[Redaction]) -> Any:
        if isinstance(value, str):
            parsed = _json_container(value)
            if parsed is None:
                return value
            inner, more, _ = self._redact_embedded(parsed, path)
            if not more:
                return value
            found.extend(more)
            return dumps(inner)
        if isinstance(value, dict):
            return {
                k: self._embedded(v, f"{path}.{k}" if path else k, found) for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            items = [self._embedded(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
            return tuple(items) if isinstance(value, tuple) else items
        return value

    def _find_embedded(self, value: Any, path: str, *, plain: bool = False) -> list[Redaction]:
        """Every prohibited field or value in ``value``, also inside its strings that
        hold JSON (``plain``: it is known to hold none)."""
        found = self.guard.find_prohibited_keys(value, path=path)
        if plain or not _may_hold_json(value):
            return found
        for where, text in _strings(value, path):
            parsed = _json_container(text)
            if parsed is not None:
                found.extend(self._find_embedded(parsed, where))
        return found

    # ------------------------------------------------------------ seam 3: commit

    def commit(
        self,
        decision: Any,
        reason_codes: Sequence[str] | None = None,
        *,
        completer: Callable[[Decision, Sequence[str] | None], CompletedDecision] | None = None,
    ) -> Entry:
        """Validate, fairness-check, complete and record the decision, held for the
        Keystone gate.

        ``completer`` completes the submitted decision for the record (its reasons'
        figures and wordings from the file, the policy citation, a counteroffer's
        payment: :func:`credit.decision_record.complete`); the fairness check reads the
        decision as submitted, before anything is replaced. Raises
        :class:`~credit.errors.InputError` for a malformed or incomplete decision
        (nothing is recorded; the underwriter may correct it) and
        :class:`~credit.errors.SafetyBoundaryError` at a violated boundary.
        """
        self._second.checked = True
        if self.committed is not None or self.store.decision_entry(self.case_id) is not None:
            return self._second_record()
        if self._cites.violations:
            raise SafetyBoundaryError(
                "this turn's decision was refused; nothing more is recorded in this turn",
                boundary_id=BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
                case_id=self.case_id,
                tool="record_decision",
            )
        parsed = parse_decision(_json_value(decision), case_id=self.case_id)
        self._cites.checked = True
        citations = decision_citations(parsed, self.terms)
        if citations:
            described = [f"{where}: {m.describe()}" for where, m in citations]
            self._cites.violations.append("; ".join(described))
            self.store.append(
                self.case_id,
                DECISION_REFUSED,
                {
                    "boundary": BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
                    "underwriter": self.underwriter,
                    "citations": [
                        {"field": where, "kind": m.kind, "name": m.name, "term": m.term}
                        for where, m in citations
                    ],
                    "decision": parsed.to_wire(),
                },
            )
            raise SafetyBoundaryError(
                "the decision cites " + "; ".join(described) + "; it is not recorded",
                boundary_id=BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
                case_id=self.case_id,
                tool="record_decision",
            )
        completed = (
            completer(parsed, reason_codes)
            if completer is not None
            else CompletedDecision(parsed, (), None, None)
        )
        payload: dict[str, Any] = {
            "decision": completed.decision.to_wire(),
            **completed.payload(),
            "status": HELD,
            "heldFor": "keystone",
            "underwriter": self.underwriter,
        }
        if self.policy is not None:
            payload["policy"] = dict(self.policy)
        if self.turn is not None:
            payload["turn"] = self.turn
        earlier = self.store.entries(self.case_id, kinds=list(DECISION_KINDS))  # an officer's
        payload = named_decision(self.case_id, DECISION_RECORDED, payload, len(earlier) + 1)
        try:
            entry = self.store.record_decision(self.case_id, payload)
        except DecisionAlreadyRecordedError:
            return self._second_record()
        self.committed = entry
        return entry

    def _second_record(self) -> Entry:
        self._second.violations.append("record_decision was called again for this case")
        raise SafetyBoundaryError(
            "a decision is already recorded for this case; nothing was changed",
            boundary_id=BOUNDARY_SECOND_RECORD_DECISION,
            case_id=self.case_id,
            tool="record_decision",
        )

    # ------------------------------------------------------------ the verdict

    def verdict(self) -> SafetyVerdict:
        """One result per boundary, in boundary-id order (deterministic)."""
        results = sorted(
            (b.result() for b in (self._reached, self._cites, self._second)),
            key=lambda r: r.boundary_id,
        )
        return SafetyVerdict(results=tuple(results))


def _json_value(value: Any) -> Any:
    """The value as JSON reads it back: a float the model sent becomes the exact decimal
    it prints as (0.85, not 0.84999...). A value JSON cannot hold is left as it is (the
    decision's validation then says what is wrong with it)."""
    try:
        return read_back(value)
    except (TypeError, ValueError):
        return value


def _json_container(text: str) -> Any:
    if not opens_json(text):  # the only texts parsed
        return None
    try:
        parsed = loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


class _Redacted(NamedTuple):
    """The guard's redaction of a value, also inside its JSON text, and whether it held
    no text that could be JSON (``plain``)."""

    value: Any
    redactions: list[Redaction]
    plain: bool


def _may_hold_json(value: Any) -> bool:
    """Whether any string in a JSON-like value could be a JSON object or array (its
    first character after white space is ``{`` or ``[``:
    :func:`~credit.governance.guard.opens_json`): only such a string is parsed by
    :func:`_json_container`, so without one the embedded walks have nothing to do."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if opens_json(item):
                return True
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif is_mapping(item):
            stack.extend(item.values())
    return False


def _strings(value: Any, path: str) -> list[tuple[str, str]]:
    """Every string in a JSON-like value, with its path."""
    if isinstance(value, str):
        return [(path, value)]
    out: list[tuple[str, str]] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            out.extend(_strings(v, f"{path}.{k}" if path else str(k)))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out.extend(_strings(v, f"{path}[{i}]"))
    return out
