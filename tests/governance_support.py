"""Builders for the governance tests (Keystone, Equipoise, Backstop, safety).

A journal is built in an InMemoryStore the way the runtime builds it: the
underwriter-visible case document (``put_case``), the monitoring data apart
(``put_monitoring``), and the decision recorded held (``record_decision``). Decisions
come from the rules underwriter; a test that needs a wrong decision tampers with the
rules decision's wire form.
"""

from __future__ import annotations

from typing import Any

from conftest import POLICY, auto_case, decide
from credit.journal import Store
from credit.policy import Policy
from credit.roles import Actor, Role
from credit.underwriting import Underwriting

CASE_FIELDS = ("caseId", "asOf", "application", "creditReport")

# People, each named by a key (the journal records the key's id and name).
DANA = Actor("Dana Reviewer", Role.REVIEWER, "k-dana")
LEE = Actor("Lee Reviewer", Role.REVIEWER, "k-lee")
KIM = Actor("Kim Reviewer", Role.REVIEWER, "k-kim")
OLGA = Actor("Olga Officer", Role.OFFICER, "k-olga")
OMAR = Actor("Omar Officer", Role.OFFICER, "k-omar")


def monitoring(
    *,
    race: str | None = "White",
    ethnicity: str | None = "Not Hispanic or Latino",
    sex: str | None = "Female",
    age: int | None = 41,
    **more: Any,
) -> dict[str, Any]:
    data: dict[str, Any] = {"race": race, "ethnicity": ethnicity, "sex": sex, "age": age}
    data.update(more)
    return {k: v for k, v in data.items() if v is not None}


def record(
    store: Store,
    case: dict[str, Any],
    *,
    monitor: dict[str, Any] | None = None,
    changes: dict[str, Any] | None = None,
    underwriter: str = "rules",
    policy: Policy = POLICY,
) -> Underwriting:
    """Put the case (and its monitoring data) in the store and record its rules
    decision held, with ``changes`` applied to the decision's wire form."""
    underwriting = decide(case, policy)
    store.put_case(case["caseId"], {k: case[k] for k in CASE_FIELDS})
    if monitor is not None:
        store.put_monitoring(case["caseId"], monitor)
    wire = underwriting.decision.to_wire()
    wire.update(changes or {})
    reasons = [{"code": r.code, "values": dict(r.values)} for r in underwriting.reasons]
    payload: dict[str, Any] = {
        "decision": wire,
        "reasons": reasons,
        "status": "held",
        "underwriter": underwriter,
    }
    if underwriting.counteroffer is not None:
        payload["offer"] = {"payment": underwriting.counteroffer.payment}
    store.record_decision(case["caseId"], payload)
    return underwriting


def plant_disparity(store: Store) -> None:
    """A approved (White); B declined though its file is stronger (Asian): Equipoise's
    comparative review of B names A."""
    record(store, auto_case(case_id="A", score=650), monitor=monitoring(race="White"))
    record(
        store,
        auto_case(case_id="B", score=700),
        monitor=monitoring(race="Asian"),
        changes={"decision": "decline", "terms": None},
    )


def kinds(store: Store, case_id: str) -> list[str]:
    return [e.kind for e in store.entries(case_id)]
