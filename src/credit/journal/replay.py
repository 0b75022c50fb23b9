"""Replay: re-derive a recorded decision from the journal alone and compare bit for bit.

Each decision entry is re-derived from the case document the journal's
``intake.accepted`` digest binds and from the policy version the decision cites, found
by its SHA-256 in a :class:`~credit.policy.PolicyRegistry` (the bundled policies,
plus any given), and nothing else:

- ``decision.recorded`` by the rules underwriter: :func:`credit.underwriting.decide_case`
  then :func:`credit.decision_record.complete`, exactly the path the governed tools take;
- ``officer.decided``: :func:`credit.governance.officer.build_officer_decision` with the
  recorded request (decision, reason codes, terms, why) and the officer's key;
- a decision by a model (``underwriter`` other than ``rules``): compared with the
  policy's own derivation, and any difference reported as that, not as a failure; a
  model's decision is not expected to replay bit for bit.

Compared, in canonical JSON: the Decision, the reasons (codes and stated values) and
the counteroffer's payment. A difference names the case and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from credit.canonical import canonical_bytes, read_back, sha256_hex
from credit.catalogue import Catalogue, default_catalogue
from credit.decision_record import CompletedDecision, complete
from credit.errors import CreditError
from credit.journal.base import Entry
from credit.kinds import DECISION_RECORDED, INTAKE_ACCEPTED, OFFICER_DECIDED
from credit.models import Case, parse_case
from credit.policy import Policy, PolicyRegistry

__all__ = ["Difference", "Replay", "replay_case", "replay_entry"]

RULES = "rules"


@dataclass(frozen=True, slots=True)
class Difference:
    """One field whose replayed value is not the recorded one."""

    field: str
    recorded: Any
    replayed: Any

    def to_wire(self) -> dict[str, Any]:
        return {"field": self.field, "recorded": self.recorded, "replayed": self.replayed}


@dataclass(frozen=True, slots=True)
class Replay:
    """The replay of one decision entry. ``expected`` is False for a model's decision
    (differences are reported, not failures); ``error`` when it could not be replayed."""

    case_id: str
    seq: int
    kind: str
    by: str
    expected: bool
    differences: tuple[Difference, ...] = ()
    error: str | None = None
    policy: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """Replayed bit for bit (or a model's decision, whose differences are noted)."""
        return self.error is None and (not self.differences or not self.expected)

    def to_wire(self) -> dict[str, Any]:
        return {
            "caseId": self.case_id,
            "seq": self.seq,
            "kind": self.kind,
            "by": self.by,
            "bitForBit": self.expected,
            "ok": self.ok,
            "policy": self.policy,
            "differences": [d.to_wire() for d in self.differences],
            "error": self.error,
            "notes": list(self.notes),
        }


def _json(value: Any) -> Any:
    """The canonical JSON form (exact decimals), for a bit-for-bit comparison."""
    return read_back(value, sort_keys=True)


def _compare(recorded: Mapping[str, Any], replayed: CompletedDecision) -> list[Difference]:
    mine = {
        "decision": _json(replayed.decision.to_wire()),
        **_json(replayed.payload()),
    }
    theirs = {
        "decision": _json(recorded.get("decision")),
        "reasons": _json(recorded.get("reasons")),
    }
    if "offer" in recorded or "offer" in mine:
        theirs["offer"] = _json(recorded.get("offer"))
        mine.setdefault("offer", None)
    if "submittedFactors" in recorded or "submittedFactors" in mine:
        theirs["submittedFactors"] = _json(recorded.get("submittedFactors"))
        mine.setdefault("submittedFactors", None)
    differences: list[Difference] = []
    _diff("", theirs, mine, differences)
    return differences


def _diff(path: str, recorded: Any, replayed: Any, out: list[Difference]) -> None:
    if isinstance(recorded, Mapping) and isinstance(replayed, Mapping):
        for key in sorted(set(recorded) | set(replayed)):
            _diff(f"{path}.{key}" if path else str(key), recorded.get(key), replayed.get(key), out)
        return
    if isinstance(recorded, list) and isinstance(replayed, list) and len(recorded) == len(replayed):
        for i, (a, b) in enumerate(zip(recorded, replayed, strict=True)):
            _diff(f"{path}[{i}]", a, b, out)
        return
    if canonical_bytes(recorded) != canonical_bytes(replayed):
        out.append(Difference(path, recorded, replayed))


def _policy(registry: PolicyRegistry, cited: Any) -> Policy:
    if not isinstance(cited, Mapping) or not isinstance(cited.get("sha256"), str):
        raise LookupError("the decision cites no policy SHA-256")
    for policy in registry.policies:
        if policy.sha256 == cited["sha256"]:
            return policy
    raise LookupError(
        f"no policy with sha256 {str(cited['sha256'])[:12]}... ({cited.get('name')} "
        f"v{cited.get('version')}) is at hand: give its file with --policy"
    )


def _officer_request(payload: Mapping[str, Any]) -> Any:
    from credit.governance.officer import OfficerDecision

    decision = payload.get("decision") or {}
    terms = decision.get("terms") or {}

    def dec(value: Any) -> Decimal | None:
        return None if value is None else Decimal(str(value))

    return OfficerDecision(
        decision=cast(Any, decision.get("decision")),
        reason_codes=tuple(str(r.get("code")) for r in payload.get("reasons") or ()),
        why=str(payload.get("why") or ""),
        amount=dec(terms.get("amount")),
        term_months=terms.get("termMonths"),
        credit_line=dec(terms.get("creditLine")),
        apr=dec(terms.get("apr")),
    )


def replay_entry(
    entry: Entry,
    case: Case,
    registry: PolicyRegistry,
    *,
    catalogue: Catalogue | None = None,
) -> Replay:
    """Replay one ``decision.recorded`` or ``officer.decided`` entry on its case."""
    from credit.governance.officer import build_officer_decision
    from credit.roles import Actor, Role
    from credit.underwriting import decide_case

    catalogue = catalogue or default_catalogue()
    payload = entry.payload
    officer = entry.kind == OFFICER_DECIDED
    by = str(payload.get("underwriter") or ("officer" if officer else RULES))
    case_id = case.case_id
    try:
        policy = _policy(registry, payload.get("policy"))
    except LookupError as e:
        return Replay(case_id, entry.seq, entry.kind, by, True, error=str(e))
    label = f"{policy.name} v{policy.version} sha256:{policy.sha256}"
    try:
        if officer:
            person = payload.get("officer") or {}
            actor = Actor(
                name=str(person.get("name")), key_id=str(person.get("keyId")), role=Role.OFFICER
            )
            item = payload.get("item") or {}
            replayed = build_officer_decision(
                case,
                _officer_request(payload),
                policy=policy,
                catalogue=catalogue,
                actor=actor,
                item_kind=str(item.get("kind")),
            )
        else:
            derived = decide_case(case, policy, catalogue)
            replayed = complete(
                derived.decision,
                derived.reason_codes,
                application=case.application,
                report=case.credit_report,
                policy=policy,
                catalogue=catalogue,
                case_id=case_id,
            )
    except (CreditError, ValueError, TypeError) as e:
        return Replay(case_id, entry.seq, entry.kind, by, True, error=str(e), policy=label)
    differences = tuple(_compare(payload, replayed))
    expected = officer or by == RULES
    notes: tuple[str, ...] = ()
    if not expected:
        notes = (
            f"decided by the model underwriter {by!r}: compared with the policy's own "
            "derivation; a model's decision is not expected to replay bit for bit",
        )
    return Replay(case_id, entry.seq, entry.kind, by, expected, differences, None, label, notes)


def replay_case(
    case_id: str,
    entries: Sequence[Entry],
    document: Mapping[str, Any] | None,
    registry: PolicyRegistry,
    *,
    catalogue: Catalogue | None = None,
) -> list[Replay]:
    """Replay every decision entry of the case, from the document its intake.accepted
    entry binds (a document that does not hash to that digest is not replayed)."""
    decisions = [e for e in entries if e.kind in (DECISION_RECORDED, OFFICER_DECIDED)]
    if not decisions:
        return []
    accepted = next((e for e in entries if e.kind == INTAKE_ACCEPTED), None)
    problem = None
    if document is None:
        problem = "the case document is not stored"
    elif accepted is not None and sha256_hex(
        canonical_bytes(dict(document))
    ) != accepted.payload.get("digest"):
        problem = "the case document does not hash to its intake.accepted digest"
    if problem is not None:
        return [Replay(case_id, e.seq, e.kind, "?", True, error=problem) for e in decisions]
    assert document is not None
    case = parse_case(dict(document))
    return [replay_entry(e, case, registry, catalogue=catalogue) for e in decisions]
