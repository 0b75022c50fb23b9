"""Run the reference policy's JDM graph on GoRules zen-engine, and check it against ours.

``zen_context(case)`` flattens a case document (the case format: money as decimal
strings) into the peer's input: money in integer cents, so every figure zen computes
starts from exact integers; ``zen_context_of_row(row)`` takes a row of the batch's flat
case schema, which has the same names. ``ZenPeer.decide(contexts)`` evaluates them with
``ZenEngine.evaluate_batch``, zen's batch API (one call, the decision loaded and
compiled once). ``compare(ours, theirs)`` lists every disagreement on the modelled
figures: decision, step, band, DTI, LTV, and the terms offered (APR, amount, term,
line), plus the graph's own check that its closed-form counteroffer search found the
largest passing offer; ``compare_rows`` does the same against the columnar
underwriter's decision rows.

zen-engine is the optional ``peers`` extra: importing this module works without it;
``ZenPeer`` raises ``ModuleNotFoundError`` when it is missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from credit.underwriting import Underwriting

__all__ = [
    "DECISION_KEY",
    "ROW_COLUMNS",
    "Disagreement",
    "ZenPeer",
    "compare",
    "compare_rows",
    "zen_context",
    "zen_context_of_row",
]

DECISION_KEY = "reference-policy"
_HUNDRED = Decimal(100)


def _cents(text: Any) -> int:
    value = Decimal(str(text)) * _HUNDRED
    if value != value.to_integral_value():
        raise ValueError(f"{text} is not a whole number of cents")
    return int(value)


def zen_context(case: Mapping[str, Any]) -> dict[str, Any]:
    """The peer's flat input for one case document."""
    app, report = case["application"], case["creditReport"]
    ctx: dict[str, Any] = {
        "product": app["product"],
        "score": report.get("score"),
        "tradelines": report["tradelines"],
        "historyMonths": report["historyMonths"],
        "unresolvedDisputes": sum(1 for d in report.get("disputes", ()) if not d["resolved"]),
        "annualIncomeCents": _cents(app["annualIncome"]),
        "monthlyDebtCents": _cents(app["monthlyDebtPayments"]),
    }
    if app["product"] == "auto":
        ctx["requestedAmountCents"] = _cents(app["requestedAmount"])
        ctx["termMonths"] = app["termMonths"]
        ctx["vehicleValueCents"] = _cents(app["vehicleValue"])
    else:
        ctx["requestedLineCents"] = _cents(app["requestedLine"])
    return ctx


# The flat case schema's columns the peer reads (credit.batch.schema: the same names).
ROW_COLUMNS = (
    "product",
    "score",
    "tradelines",
    "historyMonths",
    "unresolvedDisputes",
    "annualIncomeCents",
    "monthlyDebtCents",
    "requestedAmountCents",
    "termMonths",
    "vehicleValueCents",
    "requestedLineCents",
)


def zen_context_of_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The peer's input for one row of the batch's flat case schema (docs/batch.md),
    which already holds money in integer cents under the same names."""
    return {k: row[k] for k in ROW_COLUMNS if row.get(k) is not None or k == "score"}


class ZenPeer:
    """One zen engine holding the JDM graph (loaded from the file, or given)."""

    def __init__(self, jdm: Path | Mapping[str, Any]) -> None:
        import zen  # the optional `peers` extra

        content = json.loads(jdm.read_text("utf-8")) if isinstance(jdm, Path) else dict(jdm)
        self.engine = zen.ZenEngine(
            {"loader": {"type": "static", "content": {DECISION_KEY: content}}}
        )
        self.decision = self.engine.get_decision(DECISION_KEY)
        self.decision.validate()

    def requests(self, contexts: Iterable[Mapping[str, Any]]) -> list[Any]:
        return [{"key": DECISION_KEY, "context": ctx} for ctx in contexts]

    def evaluate_batch(self, requests: list[Any]) -> list[dict[str, Any]]:
        """zen's batch API over prepared requests; the result objects, in order.
        A failed evaluation raises, naming the request's position."""
        out: list[dict[str, Any]] = []
        for i, item in enumerate(self.engine.evaluate_batch(requests)):
            if not item.get("success"):
                raise RuntimeError(f"zen-engine failed on request {i}: {item.get('error')}")
            out.append(item["data"]["result"])
        return out

    def decide(self, contexts: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return self.evaluate_batch(self.requests(contexts))

    def decide_one(self, context: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.decision.evaluate(dict(context))["result"]
        return result


@dataclass(frozen=True, slots=True)
class Disagreement:
    case_id: str
    field: str
    ours: object
    theirs: object

    def __str__(self) -> str:
        return f"{self.case_id} {self.field}: ours {self.ours!r}, zen {self.theirs!r}"


def _dec(value: Any) -> Decimal | None:
    """zen returns numbers as floats; its exact digits are the shortest repr."""
    return None if value is None else Decimal(repr(value)).normalize()


def _norm(value: Decimal | int | None) -> Decimal | None:
    return None if value is None else Decimal(value).normalize()


def _in_cents(value: Decimal | None) -> Decimal | None:
    return None if value is None else _norm(value * _HUNDRED)


def _ours(u: Underwriting) -> dict[str, object]:
    d = u.decision
    terms = d.terms
    return {
        "decision": d.decision,
        "step": u.step,
        "band": d.score_band,
        "dtiPct": _norm(d.dti_pct),
        "ltvPct": _norm(d.ltv_pct),
        "apr": _norm(terms.apr) if terms else None,
        "amountCents": _in_cents(terms.amount) if terms else None,
        "termMonths": _norm(terms.term_months) if terms else None,
        "lineCents": _in_cents(terms.credit_line) if terms else None,
    }


def _theirs(result: Mapping[str, Any]) -> dict[str, object]:
    return {
        "decision": result.get("decision"),
        "step": result.get("step"),
        "band": result.get("band"),
        **{
            key: _dec(result.get(key))
            for key in ("dtiPct", "ltvPct", "apr", "amountCents", "termMonths", "lineCents")
        },
    }


def compare(
    ours: Sequence[Underwriting], theirs: Sequence[Mapping[str, Any]]
) -> list[Disagreement]:
    """Every modelled figure on which the two engines differ, case by case."""
    if len(ours) != len(theirs):
        raise ValueError(f"{len(ours)} decisions of ours against {len(theirs)} of zen's")
    found: list[Disagreement] = []
    for u, result in zip(ours, theirs, strict=True):
        mine, peer = _ours(u), _theirs(result)
        found += [
            Disagreement(u.case_id, key, mine[key], peer[key])
            for key in mine
            if mine[key] != peer[key]
        ]
        if result.get("offerVerified") is not True:
            found.append(
                Disagreement(u.case_id, "offerVerified", True, result.get("offerVerified"))
            )
    return found


def _row_figures(row: Mapping[str, Any]) -> dict[str, object]:
    """A columnar decision row (credit.batch.decision_schema) in the compared form."""
    offered = row["decision"] in ("approve", "counteroffer")
    return {
        "decision": row["decision"],
        "step": row["step"],
        "band": row["scoreBand"],
        "dtiPct": _norm(row["dtiPct"]),
        "ltvPct": _norm(row["ltvPct"]),
        "apr": _norm(row["apr"]),
        "amountCents": _in_cents(row["amount"]),
        "termMonths": _norm(row["termMonths"]) if offered else None,
        "lineCents": _in_cents(row["creditLine"]),
    }


def compare_rows(
    rows: Sequence[Mapping[str, Any]], theirs: Sequence[Mapping[str, Any]]
) -> list[Disagreement]:
    """As :func:`compare`, for the columnar underwriter's decision rows (rows that
    carry an error are the caller's to leave out: the peer does not validate)."""
    if len(rows) != len(theirs):
        raise ValueError(f"{len(rows)} decision rows of ours against {len(theirs)} of zen's")
    found: list[Disagreement] = []
    for row, result in zip(rows, theirs, strict=True):
        mine, peer = _row_figures(row), _theirs(result)
        case_id = str(row["caseId"])
        found += [
            Disagreement(case_id, key, mine[key], peer[key])
            for key in mine
            if mine[key] != peer[key]
        ]
        if result.get("offerVerified") is not True:
            found.append(Disagreement(case_id, "offerVerified", True, result.get("offerVerified")))
    return found
