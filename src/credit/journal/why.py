"""Why a case was decided as it was, for a person, from its journal entries alone.

:func:`explain` folds a case's entries (each one's MAC verified first, as the pipeline
does) into one document: the policy the decision cites (name, version, SHA-256); each
methodology step the underwriter applied, with the rule, the policy value and the
applicant's values it used; the decision and its terms; the reasons with their codes,
values and sentences; the notice's hash and the verifier's V1-V8; both reviews'
findings; who held, approved, released, rejected or decided, and when, with their
key id and name; and the underwriter's turns (a model's transcript hash and file,
when recorded). Every item carries the journal sequence number it came from.
:func:`why_text` prints it for a person; ``credit why CASE --json`` is the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from credit.catalogue import Catalogue, default_catalogue
from credit.journal.base import Entry
from credit.journal.naming import decision_id_of, names_decision
from credit.kinds import (
    CASE_WITHDRAWN,
    DECISION_KINDS,
    INTAKE_ACCEPTED,
    KEYSTONE_APPROVED,
    KEYSTONE_HELD,
    KEYSTONE_REJECTED,
    KEYSTONE_RELEASED,
    NOTICE_BLOCKED,
    NOTICE_SENT,
    NOTICE_VERIFIED,
    REVIEW_KINDS,
)
from credit.lifecycle import CaseLife

__all__ = ["explain", "methodology_steps", "why_text"]

UNDERWRITER_TURN = "underwriter.turn"
_PEOPLE_KINDS = (KEYSTONE_HELD, KEYSTONE_APPROVED, KEYSTONE_RELEASED, KEYSTONE_REJECTED)


def _turn_decision(payload: Mapping[str, Any], decided: Mapping[str, int]) -> int | None:
    """The seq of the decision a turn recorded: named by its ``decisionId`` (by its seq
    in ``decisionEntry``, in journals written before)."""
    named = decision_id_of(payload)
    if named is not None:
        return decided.get(named)
    seq = payload.get("decisionEntry")
    return seq if type(seq) is int else None


def methodology_steps(policy_basis: Sequence[Any]) -> list[dict[str, Any]]:
    """Each ``policyBasis`` line (``rule=policy value: what it found``) as a step."""
    steps = []
    for line in policy_basis:
        text = str(line)
        head, sep, applied = text.partition(": ")
        rule, eq, value = head.partition("=")
        steps.append(
            {
                "rule": rule,
                "policyValue": value if eq else None,
                "applied": applied if sep else "",
                "line": text,
            }
        )
    return steps


def _sentence(catalogue: Catalogue, code: str, values: Mapping[str, str]) -> str | None:
    if code not in catalogue:
        return None
    try:
        return catalogue[code].render(values)
    except (KeyError, IndexError, ValueError):
        return None


def _who(entry: Entry) -> dict[str, Any]:
    payload = entry.payload
    person = payload.get("officer") if isinstance(payload.get("officer"), Mapping) else None
    source: Mapping[str, Any] = person if person is not None else payload
    return {
        "seq": entry.seq,
        "kind": entry.kind,
        "at": entry.recorded_at,
        "by": source.get("name") or source.get("by") or payload.get("by"),
        "keyId": source.get("keyId") or payload.get("keyId"),
        "reason": payload.get("reason") or payload.get("why"),
    }


def explain(
    case_id: str,
    entries: Sequence[Entry],
    life: CaseLife,
    *,
    catalogue: Catalogue | None = None,
) -> dict[str, Any]:
    """The case's explanation as one JSON-ready document (see the module docs)."""
    catalogue = catalogue or default_catalogue()
    accepted = next((e for e in entries if e.kind == INTAKE_ACCEPTED), None)
    document: dict[str, Any] = {
        "caseId": case_id,
        "state": life.state,
        "final": life.final,
        "intake": None
        if accepted is None
        else {
            "seq": accepted.seq,
            "at": accepted.recorded_at,
            "digest": accepted.payload.get("digest"),
            "asOf": accepted.payload.get("asOf"),
            "product": accepted.payload.get("product"),
        },
        "policy": None,
        "steps": [],
        "decision": None,
        "reasons": [],
        "reviews": {},
        "people": [],
        "notice": None,
        "turns": [],
        "entries": [{"seq": e.seq, "kind": e.kind, "at": e.recorded_at} for e in entries],
    }
    decision = life.decision
    if decision is not None:
        payload = decision.entry.payload
        policy = payload.get("policy")
        if isinstance(policy, Mapping):
            document["policy"] = {**dict(policy), "seq": decision.seq}
        wire = dict(decision.wire)
        document["steps"] = methodology_steps(wire.get("policyBasis") or [])
        document["decision"] = {
            "seq": decision.seq,
            "id": decision.id,
            "kind": decision.entry.kind,
            "at": decision.entry.recorded_at,
            "decision": decision.decision,
            "product": decision.product,
            "scoreBand": wire.get("scoreBand"),
            "terms": wire.get("terms"),
            "offer": dict(decision.offer) if decision.offer is not None else None,
            "confidence": wire.get("confidence"),
            "dtiPct": wire.get("dtiPct"),
            "ltvPct": wire.get("ltvPct"),
            "by": decision.by or "underwriter",
            "keyId": decision.key_id,
            "why": payload.get("why"),
        }
        factors = decision.factors
        for i, (code, values) in enumerate(decision.reasons or ()):
            sentence = _sentence(catalogue, code, values)
            if sentence is None and i < len(factors):
                sentence = factors[i]
            document["reasons"].append(
                {"code": code, "values": dict(values), "sentence": sentence, "seq": decision.seq}
            )
        if decision.reasons is None:
            document["reasons"] = [
                {"code": None, "values": {}, "sentence": f, "seq": decision.seq} for f in factors
            ]
        about = [
            e
            for e in entries
            if e.kind not in DECISION_KINDS
            and names_decision(e.payload, decision.seq, decision.id) is True
        ]
        for entry in about:
            if entry.kind in REVIEW_KINDS:
                name = str(entry.payload.get("reviewer") or entry.kind.rpartition(".")[2])
                document["reviews"][name] = {
                    "seq": entry.seq,
                    "passed": entry.payload.get("passed"),
                    "findings": list(entry.payload.get("findings") or []),
                    "basis": entry.payload.get("basis"),
                }
            elif entry.kind in _PEOPLE_KINDS:
                document["people"].append(_who(entry))
        if decision.by_officer:
            document["people"].insert(0, _who(decision.entry))
        verified = next((e for e in reversed(about) if e.kind == NOTICE_VERIFIED), None)
        sent = next((e for e in about if e.kind == NOTICE_SENT), None)
        blocked = next((e for e in reversed(about) if e.kind == NOTICE_BLOCKED), None)
        if verified is not None or sent is not None or blocked is not None:
            report = verified.payload.get("report") if verified is not None else None
            checks = report.get("checks") if isinstance(report, Mapping) else None
            latest = sent or verified or blocked
            dated = sent or verified
            document["notice"] = {
                "sha256": latest.payload.get("noticeSha256") if latest is not None else None,
                "date": dated.payload.get("noticeDate") if dated is not None else None,
                "verifiedSeq": verified.seq if verified is not None else None,
                "passed": verified.payload.get("passed") if verified is not None else None,
                "checks": dict(checks) if isinstance(checks, Mapping) else {},
                "sentSeq": sent.seq if sent is not None else None,
                "blocked": None
                if blocked is None or sent is not None
                else {"seq": blocked.seq, "reason": blocked.payload.get("reason")},
            }
    decided = {  # each decision's seq, by the decisionId a turn names it by
        e.payload["decisionId"]: e.seq
        for e in entries
        if e.kind in DECISION_KINDS and decision_id_of(e.payload) is not None
    }
    for entry in entries:
        if entry.kind == UNDERWRITER_TURN:
            turn: dict[str, Any] = {
                "seq": entry.seq,
                "at": entry.recorded_at,
                "toolCalls": list(entry.payload.get("toolCalls") or []),
                "decisionEntry": _turn_decision(entry.payload, decided),
                "refused": entry.payload.get("refused"),
            }
            for field in ("transcriptSha256", "transcript", "model"):
                if field in entry.payload:
                    turn[field] = entry.payload[field]
            document["turns"].append(turn)
        elif entry.kind == CASE_WITHDRAWN:
            document["people"].append(_who(entry))
    return document


def _seq(value: Any) -> str:
    return f"[#{value}]" if value is not None else ""


def why_text(doc: Mapping[str, Any]) -> str:
    """The explanation for a person: one section each, every line with its entry."""
    lines = [f"Case {doc['caseId']}: {doc['state']}{' (final)' if doc['final'] else ''}"]
    intake = doc.get("intake")
    if intake:
        lines.append(
            f"  taken in {intake['at']} {_seq(intake['seq'])}: {intake['product']} "
            f"application as of {intake['asOf']}, document sha256 {intake['digest']}"
        )
    policy = doc.get("policy")
    lines.append("Policy")
    if policy:
        lines.append(
            f"  {policy.get('name')} v{policy.get('version')} sha256 {policy.get('sha256')} "
            f"{_seq(policy.get('seq'))}"
        )
    else:
        lines.append("  (no decision recorded yet)")
    if doc.get("steps"):
        lines.append("Methodology")
        for n, step in enumerate(doc["steps"], start=1):
            rule = step["rule"] + (f" = {step['policyValue']}" if step["policyValue"] else "")
            lines.append(f"  {n}. {rule}: {step['applied']}")
    decision = doc.get("decision")
    if decision:
        lines.append("Decision")
        terms = decision.get("terms")
        described = (
            f"  {decision['decision']} ({decision['product']}, band {decision['scoreBand']})"
        )
        if terms:
            described += " terms " + ", ".join(f"{k} {v}" for k, v in sorted(terms.items()))
        if decision.get("offer"):
            described += f", payment {decision['offer'].get('payment')}"
        lines.append(f"{described} {_seq(decision['seq'])}")
        lines.append(
            f"  by {decision['by']}{' key ' + str(decision['keyId']) if decision['keyId'] else ''}"
            f" at {decision['at']}"
        )
        if decision.get("why"):
            lines.append(f"  why: {decision['why']}")
    if doc.get("reasons"):
        lines.append("Reasons")
        for reason in doc["reasons"]:
            values = ", ".join(f"{k}={v}" for k, v in sorted(reason["values"].items()))
            lines.append(f"  {reason['code']} ({values}) {_seq(reason['seq'])}")
            if reason.get("sentence"):
                lines.append(f"    {reason['sentence']}")
    if doc.get("reviews"):
        lines.append("Reviews")
        for name, review in sorted(doc["reviews"].items()):
            verdict = "passed" if review["passed"] else "FAILED"
            lines.append(f"  {name}: {verdict} {_seq(review['seq'])}")
            for finding in review["findings"]:
                if isinstance(finding, Mapping):
                    code = finding.get("code") or finding.get("check") or ""
                    text = finding.get("detail") or finding.get("message") or ""
                    lines.append(f"    - {code}: {text}")
                else:
                    lines.append(f"    - {finding}")
    if doc.get("people"):
        lines.append("Who acted")
        for act in doc["people"]:
            key = f" key {act['keyId']}" if act.get("keyId") else ""
            reason = f": {act['reason']}" if act.get("reason") else ""
            lines.append(
                f"  {act['kind']} by {act['by']}{key} at {act['at']}{reason} {_seq(act['seq'])}"
            )
    notice = doc.get("notice")
    if notice:
        lines.append("Notice")
        lines.append(f"  sha256 {notice['sha256']} dated {notice['date']}")
        if notice.get("verifiedSeq") is not None:
            lines.append(
                f"  verified {'pass' if notice['passed'] else 'FAIL'} {_seq(notice['verifiedSeq'])}"
            )
            for name, check in sorted(notice["checks"].items()):
                mark = "pass" if check.get("passed") else "FAIL"
                lines.append(f"    {name} {mark}: {check.get('detail')}")
        if notice.get("sentSeq") is not None:
            lines.append(f"  sent {_seq(notice['sentSeq'])}")
        if notice.get("blocked"):
            lines.append(
                f"  blocked: {notice['blocked']['reason']} {_seq(notice['blocked']['seq'])}"
            )
    if doc.get("turns"):
        lines.append("Underwriter turns")
        for turn in doc["turns"]:
            extra = ""
            if "transcriptSha256" in turn:
                extra = f", transcript {turn.get('transcript')} sha256 {turn['transcriptSha256']}"
            lines.append(
                f"  tools {', '.join(turn['toolCalls']) or '(none)'}{extra} {_seq(turn['seq'])}"
            )
    return "\n".join(lines) + "\n"
