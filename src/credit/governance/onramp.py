"""Intake (Onramp): a raw case in, the underwriter-visible case and the vault out.

Orchestration: "Fed by Onramp". The case format says the application carries no
prohibited-basis field, and that if one arrives anywhere in the case other than
``monitoring`` (a ``dateOfBirth`` inside ``application``, say) intake moves it out of
the underwriter's reach and records that it did. In order:

1. Everything but ``monitoring`` is walked by the fair-lending guard
   (:mod:`credit.governance.guard`): each prohibited-basis or proxy field, at any depth
   and under any spelling the guard knows, is taken out.
2. What is left, with ``monitoring``, is validated by :func:`credit.cases.check_case`
   (the case model, so an unknown field that is *not* prohibited is still an error
   naming the field; the limits of ``case-limits.yaml``; and, given the policy registry,
   a policy in force on ``asOf`` and the score on its scale). :func:`screen` is this
   step and the one before, for a caller that checks a case before taking it in.
3. The store receives the underwriter-visible document ``{caseId, asOf, application,
   creditReport}`` (``put_case``) and, apart, in the monitoring vault
   (``put_monitoring``, which only the fair-lending review reads): the case's
   monitoring data under the case id, in the MonitoringData wire form Equipoise reads,
   and, alongside it under :func:`moved_vault_key` (``<caseId>#moved``, a key no case
   id can take), the fields moved: ``{"caseId", "moved": [{path, key, basis, kind,
   value}, ...]}``. :func:`read_vault` reads both.
4. The journal gets ``intake.moved`` (the paths and bases moved, never the values) when
   anything was moved, then ``intake.accepted`` with the document's SHA-256. Nothing
   from the vault reaches the journal, not even its digest (monitoring values are few
   enough that a digest of them could be reversed by trying them all).

Intake is idempotent: a case already taken in with the same content is not taken
twice (nothing is stored or journaled again); the same case id with other content is an
:class:`~credit.errors.IntakeConflictError`.

Documents are stored in their JSON form (dates as ISO text, exact decimals), which is
what a SQL store gives back, so every store serves the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from credit.canonical import Normal, canonical_bytes, normal_form, sha256_hex
from credit.cases import CaseLimits, check_case, json_type
from credit.errors import InputError, IntakeConflictError
from credit.governance.guard import FairLendingGuard, Redaction, default_guard
from credit.journal.base import Store
from credit.models import Case, MonitoringData
from credit.policy import PolicyRegistry

__all__ = [
    "INTAKE_ACCEPTED",
    "INTAKE_MOVED",
    "IntakeResult",
    "MovedField",
    "Vault",
    "case_document",
    "intake",
    "moved_vault_key",
    "read_vault",
    "screen",
]

INTAKE_ACCEPTED = "intake.accepted"
INTAKE_MOVED = "intake.moved"


def case_document(case: Case) -> Normal:
    """The underwriter-visible case document (no monitoring, nothing prohibited) as it
    reads back from canonical JSON, and its canonical text (what its digest is taken
    over): :func:`credit.canonical.normal_form`.

    Optional fields are kept as ``null`` (an unscored report says ``"score": null``),
    so the document validates back into the same Application and CreditReport.
    """
    return normal_form(
        {
            "caseId": case.case_id,
            "asOf": case.as_of.isoformat(),
            "application": case.application.model_dump(mode="python", by_alias=True),
            "creditReport": case.credit_report.model_dump(mode="python", by_alias=True),
        }
    )


class MovedField(BaseModel):
    """A field intake moved out of the underwriter's reach, with its value (vault only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    key: str
    basis: str
    kind: Literal["basis", "proxy"]
    value: Any


class Vault(BaseModel):
    """The monitoring vault of one case: only the fair-lending review reads it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    monitoring: MonitoringData | None
    moved: tuple[MovedField, ...] = ()


def moved_vault_key(case_id: str) -> str:
    """Where the fields moved out of a case are kept beside its monitoring data. ``#``
    is not allowed in a case id, so no case's own key can collide with it."""
    return f"{case_id}#moved"


@dataclass(frozen=True, slots=True)
class IntakeResult:
    """What intake did with one case.

    ``taken_in`` is False when the case had already been taken in (a re-run), in which
    case nothing was stored or journaled this time. ``moved`` lists the fields taken
    out of reach (paths from the case root, e.g. ``application.dateOfBirth``).
    """

    case_id: str
    case: Case
    document: Mapping[str, Any]
    digest: str
    moved: tuple[Redaction, ...]
    taken_in: bool


def _accepted_digest(store: Store, case_id: str) -> str | None:
    for entry in store.entries(case_id, kinds=[INTAKE_ACCEPTED]):
        digest = entry.payload.get("digest")
        if isinstance(digest, str):
            return digest
    return None


def screen(
    raw: Any,
    *,
    registry: PolicyRegistry | None = None,
    limits: CaseLimits | None = None,
    guard: FairLendingGuard | None = None,
) -> tuple[Case, list[tuple[Redaction, Any]]]:
    """Steps 1 and 2 of intake, storing nothing: the validated case and the fields the
    guard took out of the underwriter's reach (with their values). A malformed case is
    an :class:`~credit.errors.InputError` naming the case and the field; with
    ``registry``, so is a case date no policy covers (field ``asOf``) and a score off
    the policy's scale (``creditReport.score``)."""
    if not isinstance(raw, Mapping):
        raise InputError(f"a case must be a JSON object, got {json_type(raw)}")
    guard = guard or default_guard()
    reachable = {k: v for k, v in raw.items() if k != "monitoring"}
    cleaned, extracted = guard.extract(reachable)
    candidate = dict(cleaned)
    if "monitoring" in raw:
        candidate["monitoring"] = raw["monitoring"]
    return check_case(candidate, limits=limits, policies=registry), extracted


def intake(
    raw: Mapping[str, Any],
    store: Store,
    *,
    guard: FairLendingGuard | None = None,
    registry: PolicyRegistry | None = None,
    limits: CaseLimits | None = None,
) -> IntakeResult:
    """Take one raw case (as read with :func:`credit.cases.read_document`) into the
    store.

    Raises :class:`~credit.errors.InputError` naming the field when the case is
    malformed or, given ``registry``, dated when no policy is in force or scored off
    the policy's scale (nothing is stored), and
    :class:`~credit.errors.IntakeConflictError` when the case id was taken in before
    with other content.
    """
    case, extracted = screen(raw, registry=registry, limits=limits, guard=guard)
    case_id = case.case_id
    normal = case_document(case)
    document, text = normal
    digest = sha256_hex(text.encode("utf-8"))
    moved = tuple(r for r, _ in extracted)
    result = IntakeResult(case_id, case, document, digest, moved, taken_in=True)

    existing = _accepted_digest(store, case_id)
    if existing is not None:
        return _already_taken_in(result, existing)
    stored = store.get_case(case_id)
    moved_wire = {
        "caseId": case_id,
        "moved": [
            MovedField(path=r.path, key=r.key, basis=r.basis, kind=r.kind, value=v).model_dump(
                mode="python"
            )
            for r, v in extracted
        ],
    }
    # each row as stored (each moved value read back with it): its text not written again
    vault: dict[str, Normal] = {}
    if case.monitoring is not None:
        vault[case_id] = normal_form(case.monitoring.to_wire())
    if moved:
        vault[moved_vault_key(case_id)] = normal_form(moved_wire)
    if stored is None:
        for name, row in vault.items():
            store.put_monitoring(name, row)
        if not store.put_case(case_id, normal):  # another intake stored it first
            stored = store.get_case(case_id)
    if stored is not None:
        # Stored but not (yet) journaled: an interrupted intake, or one running beside
        # this one. The same document is finished; other content is never replaced.
        _already_taken_in(result, sha256_hex(canonical_bytes(stored)))
        if _accepted_digest(store, case_id) is not None:
            return _already_taken_in(result, digest)
    if moved:
        store.append(
            case_id,
            INTAKE_MOVED,
            {
                "paths": [r.path for r in moved],
                "moved": [{"path": r.path, "basis": r.basis, "kind": r.kind} for r in moved],
                "to": "monitoring vault",
            },
        )
    store.append(
        case_id,
        INTAKE_ACCEPTED,
        {
            "digest": digest,
            "product": case.application.product,
            "asOf": case.as_of.isoformat(),
            "hasMonitoring": case.monitoring is not None,
            "movedCount": len(moved),
            # Each vault row bound by an HMAC under the lender's key: checkable by
            # the key's holder, never reversible by trying values (issue 12).
            "vaultSeals": _seals(store, vault),
        },
    )
    return result


def _seals(store: Store, vault: Mapping[str, Any]) -> dict[str, str]:
    """The seal of each vault row as stored (an interrupted intake's rows stay)."""
    seals = {}
    for name in vault:
        row = store.get_monitoring(name)
        if row is not None:
            seals[name] = store.seal(name, row)
    return seals


def _already_taken_in(result: IntakeResult, existing: str) -> IntakeResult:
    if existing != result.digest:
        raise IntakeConflictError(
            "this case id was already taken in with other content "
            f"(sha256 {existing[:12]}..., now {result.digest[:12]}...); "
            "a case taken in is never replaced",
            case_id=result.case_id,
            digest=result.digest,
            existing_digest=existing,
        )
    return IntakeResult(
        result.case_id,
        result.case,
        result.document,
        result.digest,
        result.moved,
        taken_in=False,
    )


def read_vault(store: Store, case_id: str) -> Vault | None:
    """The monitoring vault of a case (fair-lending review only), or None if empty."""
    monitoring = store.get_monitoring(case_id)
    moved = store.get_monitoring(moved_vault_key(case_id))
    if monitoring is None and moved is None:
        return None
    return Vault(
        monitoring=None if monitoring is None else MonitoringData.model_validate(dict(monitoring)),
        moved=tuple(MovedField.model_validate(m) for m in (moved or {}).get("moved", ())),
    )
