"""What the policy text says about a case, restated apart from the underwriter.

Each function here restates one paragraph of the reference policy (shared/spec/
reference-policy.md) and reads every number through :class:`~credit.policy.Policy`,
every reason code and wording through :class:`~credit.catalogue.Catalogue`. Nothing
here imports the underwriter (an import contract in .importlinter says so): the
graders compare any underwriter's Decision (the rules engine, or a model) with these
statements. The capacity arithmetic (payment, DTI, LTV and their half-up rounding,
which the policy defines by formula) is the second line's exact arithmetic,
:mod:`credit.secondline.exact`, never the underwriter's.

- "Score bands": :func:`band_of`.
- "Capacity": :func:`expected_figures`.
- "Decision, in this order": :func:`expected_outcome`, with :func:`counteroffer_exists`
  for step 3 (a counteroffer exists exactly when the smallest offer, on the easiest
  terms, passes every cap: payment, DTI and LTV all grow with the amount or line, and
  the payment falls as the term grows).
- Step 3's terms: :func:`counteroffer_failures` checks an offer is the one the policy
  describes (the largest passing amount or line, ties to the shortest term).
- "Credit factors": the reasons each outcome states (:attr:`Expectation.reasons`:
  the codes in order, the values each wording states, every approved wording), and
  :func:`factor_failures`, which checks the figures stated whatever the wording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal

from credit.catalogue import Catalogue, default_catalogue
from credit.models import Application, Case, Decision
from credit.policy import BANDS, Policy
from credit.secondline.exact import amortised_payment, card_payment, dti_pct, ltv_pct

__all__ = [
    "Expectation",
    "ExpectedFigures",
    "ExpectedReason",
    "band_of",
    "counteroffer_exists",
    "counteroffer_failures",
    "expected_figures",
    "expected_outcome",
    "factor_failures",
    "is_thin_file",
    "reason_failures",
    "states_value",
    "terms_failures",
]


@dataclass(frozen=True, slots=True)
class ExpectedFigures:
    """The figures the policy's "Capacity" paragraph gives a request as made."""

    band: str
    apr: Decimal | None
    assessed_line: Decimal | None  # card: the band's line capped at the line requested
    payment: Decimal
    dti_pct: Decimal
    ltv_pct: Decimal | None


@dataclass(frozen=True, slots=True)
class ExpectedReason:
    """A reason the policy text requires: its code, the values its wording states, and
    every approved wording filled with them (any one may be used)."""

    code: str
    values: Mapping[str, str]
    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Expectation:
    """The decisions the policy text allows, the text that says so, and the reasons
    that decision states, in order."""

    decisions: frozenset[str]
    rule: str
    reasons: tuple[ExpectedReason, ...] = field(default=())


def band_of(score: int | None, policy: Policy) -> str:
    """ "Score bands": the highest band whose minimum the score reaches; unscored with
    no score."""
    if score is None:
        return "unscored"
    for band in sorted(BANDS, key=lambda b: policy[f"scoreBands.{b}"].value, reverse=True):
        if score >= policy[f"scoreBands.{band}"].value:
            return band
    raise ValueError(f"score {score} is below every band's minimum")


def _money(policy: Policy) -> Decimal:
    value: Decimal = policy["rounding.money"].value
    return value


def _pct(policy: Policy) -> Decimal:
    value: Decimal = policy["rounding.percent"].value
    return value


def expected_figures(app: Application, score: int | None, policy: Policy) -> ExpectedFigures:
    """ "Capacity": the new payment at the band's APR (auto) or on the band's line capped
    at the line requested (card); none when unscored; DTI and LTV rounded half-up."""
    band = band_of(score, policy)
    apr: Decimal | None = None
    line: Decimal | None = None
    payment = Decimal("0.00")
    if band != "unscored":
        apr = policy[f"pricing.{app.product}.{band}.apr"].value
        assert apr is not None
        if app.product == "auto":
            assert app.requested_amount is not None and app.term_months is not None
            payment = amortised_payment(app.requested_amount, apr, app.term_months, _money(policy))
        else:
            assert app.requested_line is not None
            line = min(policy[f"pricing.card.{band}.line"].value, app.requested_line)
            assert line is not None
            pct = policy["products.card.paymentPctOfLine"].value
            payment = card_payment(line, pct, _money(policy))
    dti = dti_pct(app.monthly_debt_payments, payment, app.annual_income, _pct(policy))
    ltv: Decimal | None = None
    if app.product == "auto":
        assert app.requested_amount is not None and app.vehicle_value is not None
        ltv = ltv_pct(app.requested_amount, app.vehicle_value, _pct(policy))
    return ExpectedFigures(band, apr, line, payment, dti, ltv)


def is_thin_file(case: Case, policy: Policy) -> list[str]:
    """Step 1's "no usable score": why the file is unusable (empty when it is usable)."""
    report = case.credit_report
    why: list[str] = []
    if report.score is None:
        why.append("the bureau returned no score")
    min_tl = policy["thinFile.minTradelines"]
    if report.tradelines < min_tl.value:
        why.append(f"{report.tradelines} tradelines, fewer than {min_tl.cite()}")
    min_hist = policy["thinFile.minHistoryMonths"]
    if report.history_months < min_hist.value:
        why.append(f"{report.history_months} months of history, under {min_hist.cite()}")
    return why


def _offer_passes(
    app: Application, amount_or_line: Decimal, term: int | None, apr: Decimal, policy: Policy
) -> bool:
    """Whether adjusted terms pass every cap of the product (DTI; auto also LTV)."""
    p = f"products.{app.product}"
    if app.product == "auto":
        assert term is not None and app.vehicle_value is not None
        payment = amortised_payment(amount_or_line, apr, term, _money(policy))
        ltv = ltv_pct(amount_or_line, app.vehicle_value, _pct(policy))
        if ltv > policy[f"{p}.maxLtvPct"].value:
            return False
    else:
        payment = card_payment(
            amount_or_line, policy["products.card.paymentPctOfLine"].value, _money(policy)
        )
    dti = dti_pct(app.monthly_debt_payments, payment, app.annual_income, _pct(policy))
    return bool(dti <= policy[f"{p}.maxDtiPct"].value)


def _ceil_to(value: Decimal, step: Decimal) -> Decimal:
    """The smallest multiple of ``step`` not below ``value`` (Decimal's ``//`` truncates
    toward zero, so it is not used for a ceiling)."""
    return (value / step).quantize(Decimal(1), rounding=ROUND_CEILING) * step


def _terms_from(app: Application, policy: Policy) -> list[int]:
    assert app.term_months is not None
    return [t for t in policy["products.auto.termsAllowed"].value if t >= app.term_months]


def counteroffer_exists(app: Application, figures: ExpectedFigures, policy: Policy) -> bool:
    """Step 3: some adjusted terms pass every cap. Auto: the smallest amount offered (a
    multiple of the step, at least the product minimum, at most the amount requested)
    over the longest allowed term. Card: the smallest line offered (a multiple of the
    step, at least the minimum line) below the line that would have been granted."""
    if figures.apr is None:
        return False
    p = f"products.{app.product}"
    step = policy[f"{p}.counterofferStep"].value
    if app.product == "auto":
        assert app.requested_amount is not None
        smallest = _ceil_to(policy["products.auto.minAmount"].value, step)
        terms = _terms_from(app, policy)
        if smallest > app.requested_amount or not terms:
            return False
        return _offer_passes(app, smallest, max(terms), figures.apr, policy)
    assert figures.assessed_line is not None
    smallest = _ceil_to(policy["products.card.minLine"].value, step)
    if smallest >= figures.assessed_line:
        return False
    return _offer_passes(app, smallest, None, figures.apr, policy)


def _reason(catalogue: Catalogue, code: str, values: Mapping[str, str]) -> ExpectedReason:
    wordings = catalogue[code].wordings
    return ExpectedReason(code, dict(values), tuple(w.format_map(dict(values)) for w in wordings))


def _referral_reasons(
    case: Case, policy: Policy, catalogue: Catalogue
) -> tuple[ExpectedReason, ...]:
    """Step 1 "records why it was referred": each of no score, too few tradelines, too
    short a history and the unresolved disputes' tradelines that holds."""
    r = case.credit_report
    tl, hist = policy["thinFile.minTradelines"].value, policy["thinFile.minHistoryMonths"].value
    disputed = ", ".join(d.tradeline_id for d in r.unresolved_disputes)
    table: tuple[tuple[bool, str, dict[str, str]], ...] = (
        (r.score is None, "REFER_NO_SCORE", {}),
        (
            r.tradelines < tl,
            "REFER_FEW_TRADELINES",
            {"tradelines": str(r.tradelines), "minTradelines": str(tl)},
        ),
        (
            r.history_months < hist,
            "REFER_SHORT_HISTORY",
            {"historyMonths": str(r.history_months), "minHistoryMonths": str(hist)},
        ),
        (bool(disputed), "REFER_UNRESOLVED_DISPUTE", {"disputedTradelines": disputed}),
    )
    return tuple(_reason(catalogue, code, values) for holds, code, values in table if holds)


def _principal_reasons(
    case: Case, figures: ExpectedFigures, policy: Policy, catalogue: Catalogue, failed: set[str]
) -> tuple[ExpectedReason, ...]:
    """ "Credit factors": the failed rules (``failed``, factor kinds) in the policy's
    factor order, then the bureau's key factors in its order only where the score was a
    principal reason; at most ``maxReasons``."""
    app, report = case.application, case.credit_report
    p = f"products.{app.product}"
    name = catalogue.product_names[app.product]
    stated: dict[str, list[tuple[str, dict[str, str]]]] = {
        "scoreBelowMinimum": [
            (
                "SCORE_BELOW_MINIMUM",
                {
                    "score": str(report.score),
                    "minScore": str(policy[f"{p}.minScore"].value),
                    "productName": name,
                },
            )
        ],
        "dtiOverCap": [
            (
                "DTI_OVER_CAP",
                {
                    "dtiPct": str(figures.dti_pct),
                    "maxDtiPct": str(policy[f"{p}.maxDtiPct"].value),
                    "productName": name,
                },
            )
        ],
        "ltvOverCap": [
            (
                "LTV_OVER_CAP",
                {
                    "ltvPct": str(figures.ltv_pct),
                    "maxLtvPct": str(policy["products.auto.maxLtvPct"].value),
                },
            )
        ],
        "bureauKeyFactors": [
            (str(catalogue.key_factor_code(kf.code)), {"keyFactorValue": kf.value})
            for kf in report.key_factors
        ],
    }
    if "scoreBelowMinimum" in failed:
        failed = failed | {"bureauKeyFactors"}
    ordered = [
        _reason(catalogue, code, values)
        for kind in policy["factorOrder"].value
        if kind in failed
        for code, values in stated[kind]
    ]
    return tuple(ordered[: policy["maxReasons"].value])


def expected_outcome(case: Case, policy: Policy, catalogue: Catalogue | None = None) -> Expectation:
    """ "Decision, in this order", applied to the request as made, with the reasons
    that decision states."""
    catalogue = catalogue or default_catalogue()
    app, report = case.application, case.credit_report
    figures = expected_figures(app, report.score, policy)
    unusable = is_thin_file(case, policy)
    if unusable:
        return Expectation(
            frozenset({"refer"}),
            f"step 1, no usable score ({'; '.join(unusable)}): refer",
            _referral_reasons(case, policy, catalogue),
        )
    if report.unresolved_disputes:
        return Expectation(
            frozenset({"refer"}),
            "step 1, an unresolved dispute: refer",
            _referral_reasons(case, policy, catalogue),
        )
    assert report.score is not None
    p = f"products.{app.product}"
    min_score, max_dti = policy[f"{p}.minScore"], policy[f"{p}.maxDtiPct"]
    over: list[str] = []
    failed: set[str] = set()
    if figures.dti_pct > max_dti.value:
        over.append(f"DTI {figures.dti_pct} over {max_dti.cite()}")
        failed.add("dtiOverCap")
    if figures.ltv_pct is not None:
        max_ltv = policy["products.auto.maxLtvPct"]
        if figures.ltv_pct > max_ltv.value:
            over.append(f"LTV {figures.ltv_pct} over {max_ltv.cite()}")
            failed.add("ltvOverCap")
    if report.score < min_score.value:
        return Expectation(
            frozenset({"decline"}),
            f"step 2, score {report.score} below {min_score.cite()} is a hard failure: decline",
            _principal_reasons(case, figures, policy, catalogue, failed | {"scoreBelowMinimum"}),
        )
    if over:
        reasons = _principal_reasons(case, figures, policy, catalogue, failed)
        if counteroffer_exists(app, figures, policy):
            return Expectation(
                frozenset({"counteroffer"}),
                f"step 3, {' and '.join(over)}, and adjusted terms pass every cap: "
                "counteroffer (never approve or refer)",
                reasons,
            )
        return Expectation(
            frozenset({"decline"}),
            f"step 2, {' and '.join(over)}, and no adjusted terms pass every cap: "
            "decline (never approve or refer)",
            reasons,
        )
    within: list[str] = []
    margin_reasons: list[ExpectedReason] = []
    pts = policy["margins.scorePoints"]
    top = min_score.value + pts.value
    if report.score <= top:
        within.append(f"score {report.score} in {min_score.value}..{top}")
        margin_reasons.append(
            _reason(
                catalogue,
                "REFER_SCORE_MARGIN",
                {
                    "score": str(report.score),
                    "minScore": str(min_score.value),
                    "marginTopScore": str(top),
                },
            )
        )
    edges: list[tuple[str, str, Decimal, Decimal]] = [
        ("DTI", "Dti", figures.dti_pct, max_dti.value)
    ]
    if figures.ltv_pct is not None:
        edges.append(("LTV", "Ltv", figures.ltv_pct, policy["products.auto.maxLtvPct"].value))
    for label, name, value, cap in edges:
        low = cap - policy[f"margins.{name.lower()}Pct"].value
        if value >= low:
            within.append(f"{label} {value} in {low}..{cap}")
            stated = {
                f"{name.lower()}Pct": str(value),
                f"marginLow{name}Pct": str(low),
                f"max{name}Pct": str(cap),
            }
            margin_reasons.append(_reason(catalogue, f"REFER_{label}_MARGIN", stated))
    if within:
        return Expectation(
            frozenset({"refer"}),
            f"step 4, within margin, edges inclusive ({'; '.join(within)}): refer",
            tuple(margin_reasons),
        )
    return Expectation(
        frozenset({"approve"}),
        f"step 5, every cap passes outside the margins: approve at the {figures.band} "
        f"band's {'rate' if app.product == 'auto' else 'rate and line'}",
    )


def terms_failures(case: Case, decision: Decision, figures: ExpectedFigures) -> list[str]:
    """Step 5: an approval is at the band's APR, for the amount and term requested (auto)
    or the band's line capped at the line requested (card)."""
    app, terms = case.application, decision.terms
    if terms is None:
        return ["an approval carries no terms"]
    failures: list[str] = []
    if terms.apr != figures.apr:
        failures.append(f"APR {terms.apr} is not the {figures.band} band's {figures.apr}")
    if app.product == "auto":
        if terms.amount != app.requested_amount or terms.term_months != app.term_months:
            failures.append(
                f"terms {terms.amount} over {terms.term_months} months are not the "
                f"{app.requested_amount} over {app.term_months} months requested"
            )
    elif terms.credit_line != figures.assessed_line:
        failures.append(
            f"line {terms.credit_line} is not the band's line capped at the line requested, "
            f"{figures.assessed_line}"
        )
    return failures


def counteroffer_failures(
    case: Case, decision: Decision, figures: ExpectedFigures, policy: Policy
) -> list[str]:
    """Step 3's terms, checked against the policy text (not against any search)."""
    app, terms = case.application, decision.terms
    if terms is None:
        return ["a counteroffer carries no terms"]
    if figures.apr is None:
        return ["an unscored case has no counteroffer"]
    failures: list[str] = []
    if terms.apr != figures.apr:
        failures.append(f"APR {terms.apr} is not the {figures.band} band's {figures.apr}")
    p = f"products.{app.product}"
    step = policy[f"{p}.counterofferStep"].value
    if app.product == "auto":
        amount, term = terms.amount, terms.term_months
        if amount is None or term is None:
            return [*failures, "an auto counteroffer states an amount and a term"]
        assert app.requested_amount is not None
        allowed = _terms_from(app, policy)
        if amount % step != 0:
            failures.append(f"amount {amount} is not a multiple of {step}")
        if not policy["products.auto.minAmount"].value <= amount <= app.requested_amount:
            failures.append(f"amount {amount} is outside minimum..requested")
        if term not in allowed:
            failures.append(f"term {term} is not an allowed term no shorter than requested")
        if failures:
            return failures
        if not _offer_passes(app, amount, term, figures.apr, policy):
            failures.append(f"{amount} over {term} months does not pass every cap")
        larger = amount + step
        if larger <= app.requested_amount:
            passing = [t for t in allowed if _offer_passes(app, larger, t, figures.apr, policy)]
            if passing:
                failures.append(f"a larger amount, {larger} over {passing[0]} months, passes")
        shorter = [
            t for t in allowed if t < term and _offer_passes(app, amount, t, figures.apr, policy)
        ]
        if shorter:
            failures.append(f"the same amount over a shorter term ({shorter[0]}) passes")
        return failures
    line = terms.credit_line
    if line is None:
        return [*failures, "a card counteroffer states a line"]
    assert figures.assessed_line is not None
    if line % step != 0:
        failures.append(f"line {line} is not a multiple of {step}")
    if line < policy["products.card.minLine"].value:
        failures.append(f"line {line} is below the minimum line")
    if line >= figures.assessed_line:
        failures.append(f"line {line} is not below the line assessed, {figures.assessed_line}")
    if failures:
        return failures
    if not _offer_passes(app, line, None, figures.apr, policy):
        failures.append(f"line {line} does not pass the DTI cap")
    larger = line + step
    if larger < figures.assessed_line and _offer_passes(app, larger, None, figures.apr, policy):
        failures.append(f"a larger line, {larger}, passes the DTI cap")
    return failures


def states_value(text: str, value: object) -> bool:
    """Whether a sentence states a figure exactly (599, 45.1), not as part of another."""
    return re.search(rf"(?<![\d.]){re.escape(str(value))}(?![\d]|\.\d)", text) is not None


def factor_failures(
    case: Case, decision: Decision, figures: ExpectedFigures, policy: Policy
) -> list[str]:
    """ "Credit factors": an approval has none; a referral records why; a decline or
    counteroffer has 1..maxReasons, each failed rule stating the actual value and the
    limit."""
    factors = decision.factors
    if decision.decision == "approve":
        return [f"an approval states adverse-action reasons: {list(factors)}"] if factors else []
    if decision.decision == "refer":
        return [] if factors else ["a referral records no reason for the reviewer"]
    cap = policy["maxReasons"]
    failures: list[str] = []
    if not 1 <= len(factors) <= cap.value:
        failures.append(f"{len(factors)} reasons; {cap.cite()} and at least one")
    app, score = case.application, case.credit_report.score
    p = f"products.{app.product}"
    stated: list[tuple[str, object, object]] = []
    if score is not None and score < policy[f"{p}.minScore"].value:
        stated.append(("score", score, policy[f"{p}.minScore"].value))
    if figures.dti_pct > policy[f"{p}.maxDtiPct"].value:
        stated.append(("DTI", figures.dti_pct, policy[f"{p}.maxDtiPct"].value))
    if figures.ltv_pct is not None and figures.ltv_pct > policy["products.auto.maxLtvPct"].value:
        stated.append(("LTV", figures.ltv_pct, policy["products.auto.maxLtvPct"].value))
    for what, actual, limit in stated:
        if not any(states_value(f, actual) and states_value(f, limit) for f in factors):
            failures.append(f"no reason states the {what} {actual} and the limit {limit}")
    return failures


def reason_failures(decision: Decision, expect: Expectation) -> list[str]:
    """ "Credit factors", exactly: the decision states the reasons the policy gives its
    outcome, no more and no fewer, in the policy's order, each in one of its approved
    wordings stating the values the decision used."""
    want, got = expect.reasons, decision.factors
    failures: list[str] = []
    if len(got) != len(want):
        codes = ", ".join(r.code for r in want) or "none"
        failures.append(f"{len(got)} reason(s) stated; the policy states {len(want)} ({codes})")
    for i, (text, reason) in enumerate(zip(got, want, strict=False)):
        if text not in reason.texts:
            values = ", ".join(f"{k}={v}" for k, v in reason.values.items())
            failures.append(
                f"factors[{i}] is not {reason.code} ({values}) in an approved wording: {text!r}"
            )
    return failures
