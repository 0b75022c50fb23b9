"""Safety boundaries and the ethics pack (ADR-0001, docs/decisions/).

**Safety** is the universal floor: never swappable, fail-closed. Each helper below
evaluates one boundary into a :class:`~credit.governance.refusal.BoundaryResult`;
``runtime_checkable`` is True only when the helper was given the evidence to make a
real claim, and only a runtime-checkable violation refuses
(:func:`~credit.governance.refusal.build_refusal_surface`):

* :func:`prohibited_basis_reached_underwriter`: the data the underwriter saw carries
  a prohibited-basis field (by name, through the fair-lending guard's key list).
* :func:`decision_cites_prohibited_basis`: a decision's factors or policy basis cite
  a prohibited basis or a proxy (whole-word matcher over the prohibited-terms data).
* :func:`second_record_decision`: a ``record_decision`` for a case that already has
  its decision.
* :func:`unverified_notice_send`: a notice about to be sent whose exact bytes (its
  SHA-256) are not those of a passing verification report for the case.

:func:`govern_surface` applies the refusal contract: the surface becomes the typed
refusal on a runtime-checkable violation; the audited surface is kept unchanged.

**Ethics** is a per-deployment data pack (``data/ethics-pack.yaml``): commitments such
as plain-language reasons, no pressure selling on counteroffers and timely notices.
Each is evaluated into an :class:`EthicsFinding`, journaled as ``ethics.finding``
(:func:`journal_ethics`), and never refuses: :func:`govern_surface` takes the ethics
findings and by construction does not read them. Refusing on a swappable commitment
would let a pack edit silently change refusal behaviour.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from credit.errors import InputError, PolicyError
from credit.fairness_terms import ProhibitedTerms, default_prohibited_terms
from credit.governance.guard import FairLendingGuard, default_guard
from credit.governance.refusal import (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
    BOUNDARY_SECOND_RECORD_DECISION,
    BOUNDARY_UNVERIFIED_NOTICE_SEND,
    BoundaryResult,
    SafetyVerdict,
    build_refusal_surface,
    violated_runtime_checkable,
)
from credit.journal.base import Entry, Store
from credit.kept import read_only_fields
from credit.models import Decision, recorded_decision
from credit.policy import Param
from credit.yamldata import (
    expect_keys,
    load_yaml,
    read_int,
    read_source,
    read_str,
    versioned,
)

__all__ = [
    "ETHICS_CHECKS",
    "ETHICS_FINDING_KIND",
    "Commitment",
    "EthicsContext",
    "EthicsFinding",
    "EthicsPack",
    "GovernedSurface",
    "VerifiedNotice",
    "decision_cites_prohibited_basis",
    "default_ethics_pack",
    "default_ethics_pack_path",
    "ethics_context_from_journal",
    "evaluate_ethics",
    "govern_surface",
    "journal_ethics",
    "load_ethics_pack",
    "prohibited_basis_reached_underwriter",
    "safety_verdict",
    "second_record_decision",
    "unverified_notice_send",
]

ETHICS_FINDING_KIND = "ethics.finding"

# ================================================================ safety boundaries


def prohibited_basis_reached_underwriter(
    seen: Any, *, guard: FairLendingGuard | None = None
) -> BoundaryResult:
    """Did a prohibited-basis field reach the underwriter? ``seen`` is everything it
    was given (context and tool results, JSON-like); None means no evidence."""
    boundary = BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER
    if seen is None:
        return BoundaryResult(boundary_id=boundary, runtime_checkable=False, upheld=True)
    found = (guard or default_guard()).find_prohibited_keys(seen)
    if not found:
        return BoundaryResult(boundary_id=boundary, runtime_checkable=True, upheld=True)
    detail = "; ".join(f"{r.path} carries {r.kind} {r.basis}" for r in found)
    return BoundaryResult(boundary_id=boundary, runtime_checkable=True, upheld=False, detail=detail)


def decision_cites_prohibited_basis(
    decision: Decision | Mapping[str, Any] | None, *, terms: ProhibitedTerms | None = None
) -> BoundaryResult:
    """Does a decision's factors or policy basis cite a prohibited basis or a proxy?
    None (no decision submitted) is no evidence. A decision given as its wire form is
    read field by field, so even one that fails validation is checked."""
    boundary = BOUNDARY_DECISION_CITES_PROHIBITED_BASIS
    if decision is None:
        return BoundaryResult(boundary_id=boundary, runtime_checkable=False, upheld=True)
    terms = terms or default_prohibited_terms()
    texts: list[tuple[str, Any]] = []
    if isinstance(decision, Decision):
        texts = [("factors", decision.factors), ("policyBasis", decision.policy_basis)]
    else:
        texts = [("factors", decision.get("factors")), ("policyBasis", decision.get("policyBasis"))]
    hits: list[str] = []
    for name, values in texts:
        if isinstance(values, str) or not isinstance(values, Sequence):
            continue
        for i, text in enumerate(values):
            if isinstance(text, str):
                hits.extend(f"{name}[{i}]: {m.describe()}" for m in terms.find(text))
    return BoundaryResult(
        boundary_id=boundary, runtime_checkable=True, upheld=not hits, detail="; ".join(hits)
    )


def second_record_decision(store: Store, case_id: str) -> BoundaryResult:
    """Evaluated before a ``record_decision``: would it be the case's second?"""
    entry = store.decision_entry(case_id)
    if entry is None:
        return BoundaryResult(
            boundary_id=BOUNDARY_SECOND_RECORD_DECISION, runtime_checkable=True, upheld=True
        )
    return BoundaryResult(
        boundary_id=BOUNDARY_SECOND_RECORD_DECISION,
        runtime_checkable=True,
        upheld=False,
        detail=f"case {case_id} already has its decision (entry {entry.seq})",
    )


class VerifiedNotice(Protocol):
    """What the boundary reads of a verification report
    (:class:`credit.guardrails.report.VerificationReport` has these)."""

    @property
    def case_id(self) -> str: ...

    @property
    def notice_sha256(self) -> str: ...

    @property
    def passed(self) -> bool: ...


def unverified_notice_send(
    notice_sha256: str | None, report: VerifiedNotice | None, *, case_id: str | None = None
) -> BoundaryResult:
    """Is the notice about to be sent exactly one that passed verification?

    ``notice_sha256`` is the SHA-256 of the exact bytes about to be sent (None: no
    notice is being sent, no evidence). The boundary holds only when a report is given,
    every check passed, its ``notice_sha256`` is the same, and (when ``case_id`` is
    given) it is this case's report.
    """
    boundary = BOUNDARY_UNVERIFIED_NOTICE_SEND
    if notice_sha256 is None:
        return BoundaryResult(boundary_id=boundary, runtime_checkable=False, upheld=True)
    problem = ""
    if report is None:
        problem = "no verification report"
    elif case_id is not None and report.case_id != case_id:
        problem = f"the report is for case {report.case_id}, not {case_id}"
    elif not report.passed:
        problem = "the verification report did not pass"
    elif report.notice_sha256 != notice_sha256:
        problem = (
            f"the notice's sha256 {notice_sha256[:12]}... is not the verified "
            f"{report.notice_sha256[:12]}... (stale or tampered)"
        )
    return BoundaryResult(
        boundary_id=boundary, runtime_checkable=True, upheld=not problem, detail=problem
    )


def safety_verdict(*results: BoundaryResult) -> SafetyVerdict:
    """One verdict from the boundary results of a turn."""
    return SafetyVerdict(results=tuple(results))


@dataclass(frozen=True, slots=True)
class GovernedSurface:
    """What a turn returns, and what is audited.

    ``surface`` is what the caller shows (the typed refusal when refused);
    ``audited_surface`` is what the underwriter produced, always unchanged;
    ``refused`` is the next-turn evidence flag (the last turn was a typed refusal);
    ``violated`` the lex-sorted ids of the runtime-checkable violated boundaries.
    """

    surface: str
    audited_surface: str
    refused: bool
    violated: tuple[str, ...]


def govern_surface(
    surface: str, verdict: SafetyVerdict | None, ethics: Sequence[EthicsFinding] = ()
) -> GovernedSurface:
    """The refusal contract. Only the safety verdict can refuse; ``ethics`` is accepted
    so that a caller hands over everything it has, and is deliberately not read (it is
    journaled by :func:`journal_ethics`, never refused on)."""
    del ethics  # audit-only: see the module docstring and ADR-0001
    refusal = build_refusal_surface(verdict)
    return GovernedSurface(
        surface=surface if refusal is None else refusal,
        audited_surface=surface,
        refused=refusal is not None,
        violated=violated_runtime_checkable(verdict),
    )


# ================================================================ the ethics pack


@dataclass(frozen=True, slots=True)
class Commitment:
    """One commitment of the pack: what is promised, where it comes from, how checked."""

    id: str
    statement: str
    reference: str
    check: str
    parameters: Mapping[str, Param]

    def __post_init__(self) -> None:
        read_only_fields(self, "parameters")

    def __getitem__(self, name: str) -> Any:
        return self.parameters[name].value


@dataclass(frozen=True)
class EthicsPack:
    name: str
    version: str
    effective_date: dt.date
    deployment: str
    reference: str
    source: str
    sha256: str
    commitments: tuple[Commitment, ...]

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


@dataclass(frozen=True, slots=True)
class EthicsContext:
    """What the commitments are judged on; anything absent makes a check not evaluable.

    ``decided_on`` / ``notified_on`` are the dates of the decision and of the notice.
    """

    case_id: str
    decision: Decision | None = None
    notice_text: str | None = None
    decided_on: dt.date | None = None
    notified_on: dt.date | None = None


@dataclass(frozen=True, slots=True)
class EthicsFinding:
    """One commitment's result on one case. Recorded, never refused on.

    ``evaluable`` is False when the context lacked what the check needs (or the
    commitment does not apply, e.g. no-pressure on an approval); then ``upheld`` is True.
    """

    case_id: str
    pack: str
    commitment: str
    check: str
    evaluable: bool
    upheld: bool
    detail: str
    reference: str

    def to_payload(self) -> dict[str, Any]:
        return {
            "pack": self.pack,
            "commitment": self.commitment,
            "check": self.check,
            "evaluable": self.evaluable,
            "upheld": self.upheld,
            "detail": self.detail,
            "reference": self.reference,
        }


_Result = tuple[bool, bool, str]  # evaluable, upheld, detail


def _phrase_re(phrases: Sequence[str]) -> re.Pattern[str]:
    body = "|".join(
        r"\s+".join(re.escape(w) for w in p.casefold().split())
        for p in sorted(phrases, key=len, reverse=True)
    )
    return re.compile(rf"(?<![\w])(?:{body})(?![\w])")


def _plain_language(c: Commitment, ctx: EthicsContext) -> _Result:
    d = ctx.decision
    if d is None:
        return False, True, "no decision to judge"
    if d.decision not in ("decline", "counteroffer"):
        return False, True, f"a {d.decision} states no adverse-action reasons"
    max_words: int = c["maxWords"]
    jargon = _phrase_re(c["jargon"])
    problems: list[str] = []
    for i, reason in enumerate(d.factors):
        words = len(reason.split())
        if words > max_words:
            problems.append(f"factors[{i}] has {words} words (at most {max_words})")
        used = sorted({m.group() for m in jargon.finditer(reason.casefold())})
        if used:
            problems.append(f"factors[{i}] uses jargon: {', '.join(used)}")
    return True, not problems, "; ".join(problems) or "every reason is in plain language"


def _no_pressure(c: Commitment, ctx: EthicsContext) -> _Result:
    d = ctx.decision
    if d is None or d.decision != "counteroffer":
        return False, True, "applies to a counteroffer's notice only"
    if ctx.notice_text is None:
        return False, True, "no notice text to judge"
    used = sorted(
        {m.group() for m in _phrase_re(c["phrases"]).finditer(ctx.notice_text.casefold())}
    )
    if used:
        return True, False, f"pressure language: {', '.join(repr(u) for u in used)}"
    return True, True, "no pressure language"


def _timely(c: Commitment, ctx: EthicsContext) -> _Result:
    if ctx.decision is not None and ctx.decision.decision == "refer":
        return False, True, "a referral sends no notice until a person decides"
    if ctx.decided_on is None or ctx.notified_on is None:
        return False, True, "the decision and notice dates are needed"
    max_days: int = c["maxDays"]
    days = (ctx.notified_on - ctx.decided_on).days
    if days > max_days:
        return True, False, f"notified {days} days after the decision (at most {max_days})"
    return True, True, f"notified {days} day(s) after the decision"


# The checks the code knows, each with the parameters (and their kinds) it reads.
_Evaluator = Callable[[Commitment, EthicsContext], _Result]
ETHICS_CHECKS: Mapping[str, tuple[_Evaluator, Mapping[str, str]]] = {
    "plain-language": (_plain_language, {"maxWords": "int", "jargon": "str-list"}),
    "no-pressure": (_no_pressure, {"phrases": "str-list"}),
    "timely-notice": (_timely, {"maxDays": "int"}),
}


def _read_parameter(kind: str, value: Any, *, file: str, key: str) -> Any:
    if kind == "int":
        number = read_int(value, file=file, key=key)
        if number < 0:
            raise PolicyError("must not be negative", file=file, key=key)
        return number
    if not isinstance(value, list) or not value:
        raise PolicyError("expected a non-empty list", file=file, key=key)
    return tuple(read_str(v, file=file, key=f"{key}[{i}]") for i, v in enumerate(value))


def _commitment(cid: str, body: Any, file: str) -> Commitment:
    prefix = f"commitments.{cid}"
    data = expect_keys(
        body,
        required={"statement", "reference", "check", "parameters"},
        file=file,
        key=prefix,
    )
    check = read_str(data["check"], file=file, key=f"{prefix}.check")
    if check not in ETHICS_CHECKS:
        raise PolicyError(
            f"unknown check {check!r} (known: {', '.join(ETHICS_CHECKS)})",
            file=file,
            key=f"{prefix}.check",
        )
    schema = ETHICS_CHECKS[check][1]
    raw = expect_keys(
        data["parameters"], required=set(schema), file=file, key=f"{prefix}.parameters"
    )
    params: dict[str, Param] = {}
    for name, kind in schema.items():
        key = f"{prefix}.parameters.{name}"
        entry = expect_keys(
            raw[name],
            required={"value", "unit", "reference"},
            optional={"description"},
            file=file,
            key=key,
        )
        params[name] = Param(
            key=key,
            value=_read_parameter(kind, entry["value"], file=file, key=f"{key}.value"),
            unit=read_str(entry["unit"], file=file, key=f"{key}.unit"),
            reference=read_str(entry["reference"], file=file, key=f"{key}.reference"),
            description=entry.get("description"),
        )
    return Commitment(
        id=cid,
        statement=read_str(data["statement"], file=file, key=f"{prefix}.statement"),
        reference=read_str(data["reference"], file=file, key=f"{prefix}.reference"),
        check=check,
        parameters=params,
    )


def load_ethics_pack(path: Path | str, text: str | None = None) -> EthicsPack:
    """Load and validate an ethics pack (strict: unknown checks and keys are errors)."""
    path = Path(path)
    file = str(path)
    text, raw = read_source(path, text)
    doc = expect_keys(
        load_yaml(path, text),
        required={"name", "version", "effectiveDate", "deployment", "reference", "commitments"},
        optional={"description"},
        file=file,
        key="",
    )
    body = doc["commitments"]
    if not isinstance(body, dict) or not body:
        raise PolicyError("expected a non-empty mapping", file=file, key="commitments")
    return EthicsPack(
        **versioned(doc, "name", file=file, raw=raw),
        deployment=read_str(doc["deployment"], file=file, key="deployment"),
        commitments=tuple(_commitment(str(cid), b, file) for cid, b in body.items()),
    )


def default_ethics_pack_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "ethics-pack.yaml"))


_DEFAULT: dict[str, EthicsPack] = {}


def default_ethics_pack() -> EthicsPack:
    """The reference deployment's pack (loaded once)."""
    if "p" not in _DEFAULT:
        _DEFAULT["p"] = load_ethics_pack(default_ethics_pack_path())
    return _DEFAULT["p"]


def evaluate_ethics(context: EthicsContext, pack: EthicsPack | None = None) -> list[EthicsFinding]:
    """Judge every commitment of the pack on the context, in the pack's order."""
    pack = pack or default_ethics_pack()
    findings: list[EthicsFinding] = []
    for commitment in pack.commitments:
        evaluator = ETHICS_CHECKS[commitment.check][0]
        evaluable, upheld, detail = evaluator(commitment, context)
        findings.append(
            EthicsFinding(
                case_id=context.case_id,
                pack=pack.label,
                commitment=commitment.id,
                check=commitment.check,
                evaluable=evaluable,
                upheld=upheld,
                detail=detail,
                reference=commitment.reference,
            )
        )
    return findings


def journal_ethics(store: Store, findings: Sequence[EthicsFinding]) -> list[Entry]:
    """Journal each evaluable finding as ``ethics.finding`` (upheld or not). Nothing
    else happens: no refusal, no change to any surface or decision."""
    return [
        store.append(f.case_id, ETHICS_FINDING_KIND, f.to_payload())
        for f in findings
        if f.evaluable
    ]


def ethics_context_from_journal(
    store: Store,
    case_id: str,
    *,
    notice_text: str | None = None,
    notified_on: dt.date | None = None,
) -> EthicsContext:
    """An EthicsContext for a recorded case: its decision, and the day it was recorded
    (from the ``decision.recorded`` entry) as the decision date."""
    entry = store.decision_entry(case_id)
    if entry is None:
        return EthicsContext(case_id=case_id, notice_text=notice_text, notified_on=notified_on)
    try:
        decision: Decision | None = recorded_decision(entry)
    except InputError:
        decision = None
    return EthicsContext(
        case_id=case_id,
        decision=decision,
        notice_text=notice_text,
        decided_on=dt.datetime.fromisoformat(entry.recorded_at).date(),
        notified_on=notified_on,
    )
