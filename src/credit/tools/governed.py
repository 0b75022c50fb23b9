"""The four sandboxed tools of one case, governed at every call.

Spec, "Sandboxed tools": the only ground truth is the tools, and there are exactly four:

=================  ======  ==============================================================
get_application    read    the credit-relevant fields; no prohibited-basis data
get_credit_report  read    the bureau file: score, utilisation, derogatories
get_policy         read    the policy: score bands, max DTI, auto max LTV, pricing by band
record_decision    commit  the decision with terms and factors; exactly once per case
=================  ======  ==============================================================

A :class:`CaseTools` is bound to one case at construction, so no tool takes a case id
and no call can reach another case's data. Every read result passes through the
governor's guard (:meth:`~credit.governance.governor.Governor.guard_result`); the
commit goes through :meth:`~credit.governance.governor.Governor.commit`. The MCP
server (:mod:`credit.tools.server`) and the LLM adapter's in-process tools both call
these same functions.

Results are JSON-safe: exact decimals are written as decimal strings (``"84000.00"``,
``"45.0"``), as the case format allows, so no figure ever passes through a float.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from credit.catalogue import Catalogue, default_catalogue
from credit.decision_record import CompletedDecision, complete
from credit.errors import InputError
from credit.governance.governor import Governor
from credit.journal.base import Store
from credit.models import Decision, stored_case
from credit.policy import Policy, PolicyRegistry

__all__ = [
    "READ_TOOLS",
    "TOOL_DESCRIPTIONS",
    "TOOL_NAMES",
    "CaseTools",
    "jsonable",
    "policy_document",
]

TOOL_NAMES: Final = ("get_application", "get_credit_report", "get_policy", "record_decision")
READ_TOOLS: Final = TOOL_NAMES[:3]

TOOL_DESCRIPTIONS: Final = {
    "get_application": (
        "Read the case's credit application: the credit-relevant fields only (product, "
        "income, monthly debt payments, the amount, term and vehicle value asked for, or "
        "the credit line asked for). No prohibited-basis data is exposed. Returns "
        "{caseId, asOf, application}."
    ),
    "get_credit_report": (
        "Read the case's bureau credit file: score (null when unscored), score range, "
        "tradelines, history, utilisation, inquiries, derogatories, disputes and the "
        "bureau's key factors. Returns {caseId, creditReport}."
    ),
    "get_policy": (
        "Read the credit policy in force on the case date: score bands, maximum DTI, "
        "auto maximum LTV, pricing by band, margins, with each parameter's source. "
        "Returns the policy document, including its sha256."
    ),
    "record_decision": (
        "Commit the credit decision for this case. Called exactly once; a second call is "
        "refused. The argument `decision` is {product, decision (approve | decline | "
        "counteroffer | refer), terms? {apr?, creditLine?, amount?, termMonths?}, "
        "scoreBand (prime | near-prime | subprime | unscored), dtiPct, ltvPct (auto; null "
        "for card), policyBasis [the policy rules applied], factors [the specific credit "
        "factors, in plain language], confidence (0..1)}; `reasonCodes` lists the reason "
        "codes of the catalogue, in order: 1 to 4 adverse codes for a decline or "
        "counteroffer, at least one referral code for a referral, none for an approval. "
        "The catalogue supplies each reason's approved wording and the figures from the "
        "file, and policyBasis[0] cites the policy served. Numbers may be decimal strings. "
        "The decision is held for the fair-lending and model-risk checks before it takes "
        "effect."
    ),
}


def jsonable(value: Any) -> Any:
    """A JSON-safe copy: Decimals as exact decimal strings, dates as ISO text, tuples as
    lists."""
    kind = type(value)  # the commonest kinds first, without the ABC check of Mapping
    if kind is str or kind is int or value is None:
        return value
    if kind is dict:
        return {str(k): jsonable(v) for k, v in value.items()}
    if kind is list:
        return [jsonable(v) for v in value]
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


_POLICY_DOCUMENTS: dict[str, dict[str, Any]] = {}


def policy_document(policy: Policy) -> dict[str, Any]:
    """The policy as ``get_policy`` serves it, JSON-safe (made once per policy, by its
    SHA-256: a policy never changes). Shared: never modify it."""
    document = _POLICY_DOCUMENTS.get(policy.sha256)
    if document is None:
        document = jsonable(policy.to_document())
        _POLICY_DOCUMENTS[policy.sha256] = document
    return document


class CaseTools:
    """The governed tools of one case. ``registry`` picks the policy in force on the
    case date (default: the bundled reference policy)."""

    def __init__(
        self,
        store: Store,
        case_id: str,
        governor: Governor,
        registry: PolicyRegistry | None = None,
        *,
        catalogue: Catalogue | None = None,
    ) -> None:
        if governor.case_id != case_id:
            raise ValueError(f"governor is for case {governor.case_id}, not {case_id}")
        self.store = store
        self.case_id = case_id
        self.governor = governor
        self.registry = registry or PolicyRegistry.bundled()
        self.catalogue = catalogue or default_catalogue()
        self.calls: list[str] = []
        self._read_document: Mapping[str, Any] | None = None

    def _document(self) -> Mapping[str, Any]:
        """The case's document, read from the store once for these tools (the store
        checks it against its intake digest as it reads it; a case's document never
        changes once taken in): each tool, the case date and the completion use it.
        Shared: never modified (each result is a copy, by :func:`jsonable`)."""
        if self._read_document is None:
            document = self.store.get_case(self.case_id)
            if document is None:
                raise InputError("no case with this id has been taken in", case_id=self.case_id)
            self._read_document = document
        return self._read_document

    @property
    def as_of(self) -> dt.date:
        return dt.date.fromisoformat(str(self._document()["asOf"]))

    def policy(self) -> Policy:
        """The policy in force on the case date."""
        return self.registry.in_force(self.as_of)

    def _read(self, tool: str, result: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(tool)
        cleaned: dict[str, Any] = self.governor.guard_result(tool, jsonable(result))
        return cleaned

    def get_application(self) -> dict[str, Any]:
        document = self._document()
        return self._read(
            "get_application",
            {
                "caseId": self.case_id,
                "asOf": document["asOf"],
                "application": document["application"],
            },
        )

    def get_credit_report(self) -> dict[str, Any]:
        document = self._document()
        return self._read(
            "get_credit_report",
            {"caseId": self.case_id, "creditReport": document["creditReport"]},
        )

    def _note_policy(self, policy: Policy) -> None:
        """Tell the governor which policy the decision is taken under (it is written
        into the held decision)."""
        self.governor.policy = {
            "name": policy.name,
            "version": policy.version,
            "sha256": policy.sha256,
        }

    def get_policy(self) -> dict[str, Any]:
        policy = self.policy()
        self._note_policy(policy)
        self.calls.append("get_policy")
        # The same policy is the same document: the guard's reading of it is
        # remembered by its SHA-256 (each call still journals every redaction).
        cleaned: dict[str, Any] = self.governor.guard_result(
            "get_policy", policy_document(policy), same_as=("policy", policy.sha256)
        )
        return cleaned

    def _complete(self, decision: Decision, codes: Sequence[str] | None) -> CompletedDecision:
        """Complete a submitted decision from the catalogue and this case's file."""
        case = stored_case(self._document())
        return complete(
            decision,
            codes,
            application=case.application,
            report=case.credit_report,
            policy=self.policy(),
            catalogue=self.catalogue,
            case_id=self.case_id,
        )

    def record_decision(
        self, decision: Any, reason_codes: Sequence[str] | None = None
    ) -> dict[str, Any]:
        self.calls.append("record_decision")
        if self.governor.policy is None:  # recorded without reading it: the one in force
            self._note_policy(self.policy())
        if reason_codes is not None and (
            isinstance(reason_codes, str)
            or not isinstance(reason_codes, Sequence)
            or not all(isinstance(c, str) for c in reason_codes)
        ):
            raise InputError(
                "reasonCodes is a list of reason codes", case_id=self.case_id, field="reasonCodes"
            )
        entry = self.governor.commit(decision, reason_codes, completer=self._complete)
        return {
            "recorded": True,
            "caseId": self.case_id,
            "status": entry.payload.get("status"),
            "decisionId": entry.payload.get("decisionId"),
        }

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Dispatch one tool call by name (the four tools only)."""
        arguments = dict(arguments or {})
        if name == "record_decision":
            if "decision" not in arguments or not set(arguments) <= {"decision", "reasonCodes"}:
                raise InputError(
                    "record_decision takes `decision` and `reasonCodes`",
                    case_id=self.case_id,
                    field="decision",
                )
            return self.record_decision(arguments["decision"], arguments.get("reasonCodes"))
        if name not in READ_TOOLS:
            raise InputError(f"there is no tool {name!r}", case_id=self.case_id)
        if arguments:
            raise InputError(
                f"{name} takes no arguments (the tools are bound to one case)",
                case_id=self.case_id,
                field=sorted(arguments)[0],
            )
        result: dict[str, Any] = getattr(self, name)()
        return result
