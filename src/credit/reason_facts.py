"""The figures a reason states, taken from the case file: one implementation for every
way a reason comes to be stated.

A catalogue entry lists the fields its approved wordings state (``states``:
``dtiPct``, ``tradelines``, ``keyFactorValue``, ...). :func:`file_facts` computes every
such field from the case file and the figures the decision used, written exactly as a
notice states it, and :func:`stated_values` picks an entry's fields from them. The
rules underwriter, the commit seam (a model records reason codes; the catalogue and
these facts supply the wording and the figures) and a credit officer's decision all
state reasons through here, so a figure stated to an applicant is the file's.

A field a file does not have (a bankruptcy on a file that shows none, a key factor the
bureau did not report) cannot be stated: :class:`~credit.errors.ReasonNotGroundedError`
names the code and the field, and the reason cannot be cited.

How fields are written: scores and counts as integers; percentages with the policy's
quantum (``46.2``); money as ``$84,000.00``; a list of tradeline ids joined by ``, ``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from credit.catalogue import Catalogue, ReasonEntry
from credit.errors import ReasonNotGroundedError
from credit.kept import KeptPer
from credit.models import Application, CreditReport
from credit.policy import Policy

__all__ = ["Facts", "file_facts", "format_money", "stated_values"]


def format_money(value: Decimal) -> str:
    """``$24,000.00``: dollars with thousands separators and cents."""
    return f"${value:,.2f}"


@dataclass(frozen=True, slots=True)
class Facts:
    """Every field a reason can state, for one case and decision."""

    values: Mapping[str, str]
    key_factors: Mapping[str, str]  # bureau code -> the value the bureau reported
    derogatories: tuple[tuple[str, int], ...]  # (kind, months ago), as reported
    product: str
    missing: Mapping[str, str] = field(default_factory=dict)  # field -> why the file lacks it


def _policy_figures(policy: Policy) -> dict[str, dict[str, str]]:
    """By product, the figures a policy states the same for every file (written once
    per policy object: :data:`_figures`); the top of the score margin is stated only
    for a file with a score."""
    figures = {}
    for product in ("auto", "card"):
        p = f"products.{product}"
        min_score, max_dti = policy[f"{p}.minScore"].value, policy[f"{p}.maxDtiPct"].value
        shared = {
            "minScore": str(min_score),
            "maxDtiPct": str(max_dti),
            "minTradelines": str(policy["thinFile.minTradelines"].value),
            "minHistoryMonths": str(policy["thinFile.minHistoryMonths"].value),
            "marginLowDtiPct": str(max_dti - policy["margins.dtiPct"].value),
            "marginTopScore": str(min_score + policy["margins.scorePoints"].value),
        }
        if product == "auto":
            max_ltv = policy["products.auto.maxLtvPct"].value
            shared["maxLtvPct"] = str(max_ltv)
            shared["marginLowLtvPct"] = str(max_ltv - policy["margins.ltvPct"].value)
        figures[product] = shared
    return figures


_figures: KeptPer[Policy, dict[str, dict[str, str]]] = KeptPer(_policy_figures)
_NO_VEHICLE = "a card application has no vehicle"
_NO_SCORE = "the bureau returned no score"


def file_facts(
    application: Application,
    report: CreditReport,
    policy: Policy,
    catalogue: Catalogue,
    *,
    dti_pct: Decimal,
    ltv_pct: Decimal | None,
) -> Facts:
    """The facts of one case file under a policy; ``dti_pct``/``ltv_pct`` are the
    figures the decision states (the request's, as the policy computes them)."""
    product = application.product
    values: dict[str, str] = {
        "productName": catalogue.product_names[product],
        **_figures(policy)[product],
        "dtiPct": str(dti_pct),
        "tradelines": str(report.tradelines),
        "historyMonths": str(report.history_months),
        "bureauName": report.bureau.name,
        "annualIncome": format_money(application.annual_income),
        "monthlyDebtPayments": format_money(application.monthly_debt_payments),
    }
    missing: dict[str, str] = {}
    if report.score is not None:
        values["score"] = str(report.score)
    else:
        del values["marginTopScore"]
        missing["score"] = _NO_SCORE
        missing["marginTopScore"] = _NO_SCORE
    if product == "auto":
        assert application.vehicle_value is not None and application.requested_amount is not None
        values["vehicleValue"] = format_money(application.vehicle_value)
        values["requestedAmount"] = format_money(application.requested_amount)
        if ltv_pct is not None:
            values["ltvPct"] = str(ltv_pct)
    else:
        for name in ("vehicleValue", "requestedAmount", "ltvPct", "maxLtvPct"):
            missing[name] = _NO_VEHICLE
    disputed = [d.tradeline_id for d in report.unresolved_disputes]
    if disputed:
        values["disputedTradelines"] = ", ".join(disputed)
    else:
        missing["disputedTradelines"] = "the file has no unresolved dispute"
    return Facts(
        values=values,
        key_factors={k.code: k.value for k in report.key_factors},
        derogatories=tuple((d.kind, d.months_ago) for d in report.derogatories),
        product=product,
        missing=missing,
    )


def stated_values(entry: ReasonEntry, facts: Facts) -> dict[str, str]:
    """The values ``entry``'s wordings state, from the file's facts; raises
    ReasonNotGroundedError when the file has no such figure."""
    if facts.product not in entry.products:
        raise ReasonNotGroundedError(
            f"{entry.code} does not describe a {facts.product} application "
            f"(it is for {', '.join(entry.products)})",
            code=entry.code,
            missing="product",
        )
    out: dict[str, str] = {}
    for name in entry.states:
        value = _one(entry, name, facts)
        out[name] = value
    rule = entry.holds_when
    if rule is not None:
        figure, bound = Decimal(out[rule.field]), Decimal(out[rule.than])
        holds = figure < bound if rule.relation == "below" else figure > bound
        if not holds:
            raise ReasonNotGroundedError(
                f"{entry.code} is not true of this file: {rule.field} {out[rule.field]} is "
                f"not {rule.relation} {rule.than} {out[rule.than]}",
                code=entry.code,
                missing=rule.field,
            )
    return out


def _one(entry: ReasonEntry, name: str, facts: Facts) -> str:
    if name == "keyFactorValue":
        if entry.bureau_code is None or entry.bureau_code not in facts.key_factors:
            raise ReasonNotGroundedError(
                f"the bureau reported no key factor {entry.bureau_code} on this file",
                code=entry.code,
                missing=name,
            )
        return facts.key_factors[entry.bureau_code]
    if name in ("derogatoryCount", "lastDerogatoryMonthsAgo"):
        found = [months for kind, months in facts.derogatories if kind in entry.derogatory_kinds]
        if not found:
            raise ReasonNotGroundedError(
                f"the credit file shows no {' or '.join(entry.derogatory_kinds)} entry",
                code=entry.code,
                missing=name,
            )
        return str(len(found)) if name == "derogatoryCount" else str(min(found))
    if name in facts.values:
        return facts.values[name]
    why = facts.missing.get(name, "the file has no such figure")
    raise ReasonNotGroundedError(
        f"{entry.code} states {name}, and {why}", code=entry.code, missing=name
    )
