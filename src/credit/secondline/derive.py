"""The methodology, derived a second time: :func:`derive`.

Under the headings of the policy text (shared/spec/reference-policy.md); every number
is read through :class:`~credit.policy.Policy` by its dotted key, every code and
wording through :class:`~credit.catalogue.Catalogue`.

- Entry: the policy must be in force on the case date, every bureau key factor must
  be catalogued and the request must be one the product offers; otherwise the same
  :class:`~credit.errors.NotInPolicyError`, naming the same field, as the underwriter.
- "Score bands": :func:`score_band`.
- "Capacity": :func:`capacity` (exact, :mod:`credit.secondline.exact`).
- "Decision, in this order": the facts of the case are established first
  (:class:`_Facts`), then each of the policy's ``steps`` is a condition on them, tried
  in the policy's order; a case none decides is an
  :class:`~credit.errors.UndecidedCaseError`.
- "Credit factors": the failed rules in ``factorOrder``, the bureau's key factors
  only where the score failed, at most ``maxReasons``; referral reasons for step 1
  and step 4; texts from the approved wordings.
- The confidence: docs/confidence.md.

Not formalised: which key factors the bureau reports, and their order (given).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import NamedTuple

from credit.catalogue import Catalogue, default_catalogue
from credit.errors import NotInPolicyError, UndecidedCaseError
from credit.models import Application, CreditReport, Terms
from credit.policy import BANDS, Policy
from credit.secondline.exact import (
    amortised_payment,
    card_payment,
    dti_pct,
    half_up_ratio,
    ltv_pct,
    to_decimal,
)
from credit.secondline.offer import Offer, find_offer

__all__ = ["Derivation", "DerivedFigures", "Reason", "capacity", "derive", "score_band"]

Reason = tuple[str, Mapping[str, str]]  # a reason code and the values its wording states

# docs/confidence.md: 1 - 0.5 / (1 + m), half-up to the hundredth.
_CONFIDENCE_QUANTUM = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class DerivedFigures:
    """The figures of the request as made ("Capacity"), as compared and stated."""

    product: str
    score: int | None
    band: str
    min_score: int
    apr: Decimal | None
    assessed_amount: Decimal | None  # auto: the amount requested
    assessed_line: Decimal | None  # card: the band's line capped at the line requested
    term_months: int | None
    new_payment: Decimal
    dti_pct: Decimal
    max_dti_pct: Decimal
    ltv_pct: Decimal | None
    max_ltv_pct: Decimal | None


@dataclass(frozen=True, slots=True)
class Derivation:
    """What the methodology gives a case, derived apart from the underwriter.

    ``reasons`` are (code, values) in the order stated; ``factors`` their texts in the
    first approved wording, ``wordings`` every approved wording of each (any of them
    states the same values). ``offer`` is the counteroffer's terms and figures."""

    case_id: str
    product: str
    decision: str
    step: str
    score_band: str
    dti_pct: Decimal
    ltv_pct: Decimal | None
    terms: Terms | None
    reasons: tuple[Reason, ...]
    factors: tuple[str, ...]
    wordings: tuple[tuple[str, ...], ...]
    confidence: Decimal
    figures: DerivedFigures
    offer: Offer | None = None

    @property
    def reason_codes(self) -> tuple[str, ...]:
        return tuple(code for code, _ in self.reasons)

    @property
    def offer_payment(self) -> Decimal | None:
        """The counteroffer's monthly payment (None unless a counteroffer)."""
        return self.offer.payment if self.offer is not None else None


# ---------------------------------------------------------------- entry


def _check_entry(
    app: Application,
    report: CreditReport,
    policy: Policy,
    catalogue: Catalogue,
    case_id: str,
    as_of: dt.date,
) -> None:
    """A case the policy has no rule for is refused, naming the field, before any step."""
    if as_of < policy.effective_date:
        raise NotInPolicyError(
            f"the case date {as_of} is before {policy.label} takes effect "
            f"({policy.effective_date})",
            case_id=case_id,
            field="asOf",
        )
    unknown = [
        i for i, kf in enumerate(report.key_factors) if kf.code not in catalogue.by_bureau_code
    ]
    if unknown:
        i = unknown[0]
        raise NotInPolicyError(
            f"key-factor code {report.key_factors[i].code!r} has no entry in {catalogue.name} "
            f"v{catalogue.version}",
            case_id=case_id,
            field=f"creditReport.keyFactors[{i}].code",
        )
    p = f"products.{app.product}"
    if app.product == "card":
        assert app.requested_line is not None
        if app.requested_line < policy[f"{p}.minLine"].value:
            raise NotInPolicyError(
                f"a line of {app.requested_line} is under {policy[f'{p}.minLine'].cite()}",
                case_id=case_id,
                field="application.requestedLine",
            )
        return
    terms = policy[f"{p}.termsAllowed"]
    if app.term_months not in terms.value:
        raise NotInPolicyError(
            f"{app.term_months} months is not among {terms.cite()}",
            case_id=case_id,
            field="application.termMonths",
        )
    assert app.requested_amount is not None
    if app.requested_amount < policy[f"{p}.minAmount"].value:
        raise NotInPolicyError(
            f"an amount of {app.requested_amount} is under {policy[f'{p}.minAmount'].cite()}",
            case_id=case_id,
            field="application.requestedAmount",
        )


# ---------------------------------------------------------------- "Score bands"


def score_band(score: int | None, policy: Policy, *, case_id: str | None = None) -> str:
    """The band with the highest floor the score reaches; ``unscored`` with no score."""
    if score is None:
        return "unscored"
    reached = [(policy[f"scoreBands.{b}"].value, b) for b in BANDS]
    reached = [(floor, b) for floor, b in reached if score >= floor]
    if not reached:
        raise UndecidedCaseError(
            f"score {score} reaches no band's floor", case_id=case_id, rule="scoreBands"
        )
    return max(reached)[1]


# ---------------------------------------------------------------- "Capacity"


def capacity(app: Application, score: int | None, band: str, policy: Policy) -> DerivedFigures:
    """The new payment at the band's APR (auto) or on the band's line capped at the
    line requested (card), none when unscored; the DTI and LTV of the request."""
    p = f"products.{app.product}"
    money: Decimal = policy["rounding.money"].value
    pct: Decimal = policy["rounding.percent"].value
    apr: Decimal | None = None
    line: Decimal | None = None
    payment = to_decimal(0, money)
    if band != "unscored":
        apr = policy[f"pricing.{app.product}.{band}.apr"].value
        assert apr is not None
        if app.product == "auto":
            assert app.requested_amount is not None and app.term_months is not None
            payment = amortised_payment(app.requested_amount, apr, app.term_months, money)
        else:
            assert app.requested_line is not None
            band_line: Decimal = policy[f"pricing.card.{band}.line"].value
            line = band_line if band_line <= app.requested_line else app.requested_line
            payment = card_payment(line, policy[f"{p}.paymentPctOfLine"].value, money)
    ltv: Decimal | None = None
    max_ltv: Decimal | None = None
    if app.product == "auto":
        assert app.requested_amount is not None and app.vehicle_value is not None
        ltv = ltv_pct(app.requested_amount, app.vehicle_value, pct)
        max_ltv = policy[f"{p}.maxLtvPct"].value
    return DerivedFigures(
        product=app.product,
        score=score,
        band=band,
        min_score=policy[f"{p}.minScore"].value,
        apr=apr,
        assessed_amount=app.requested_amount,
        assessed_line=line,
        term_months=app.term_months,
        new_payment=payment,
        dti_pct=dti_pct(app.monthly_debt_payments, payment, app.annual_income, pct),
        max_dti_pct=policy[f"{p}.maxDtiPct"].value,
        ltv_pct=ltv,
        max_ltv_pct=max_ltv,
    )


# ---------------------------------------------------------------- the facts of a case


def _reason(code: str, **values: str) -> Reason:
    return code, MappingProxyType(values)


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the steps decide on, established once."""

    report: CreditReport
    policy: Policy
    catalogue: Catalogue
    fig: DerivedFigures
    unusable: tuple[Reason, ...]  # step 1: no usable score, a dispute
    score_fails: bool
    dti_fails: bool
    ltv_fails: bool
    offer: Offer | None  # step 3, sought only where the score passes and a cap fails
    within_margin: tuple[Reason, ...]  # step 4, judged on the request as made

    @property
    def cap_fails(self) -> bool:
        return self.dti_fails or self.ltv_fails


def _unusable(report: CreditReport, policy: Policy) -> tuple[Reason, ...]:
    """Step 1: no score, fewer tradelines or less history than the thin-file minimums,
    any unresolved dispute."""
    found: list[Reason] = []
    if report.score is None:
        found.append(_reason("REFER_NO_SCORE"))
    tl, hist = policy["thinFile.minTradelines"].value, policy["thinFile.minHistoryMonths"].value
    if report.tradelines < tl:
        found.append(
            _reason(
                "REFER_FEW_TRADELINES", tradelines=str(report.tradelines), minTradelines=str(tl)
            )
        )
    if report.history_months < hist:
        found.append(
            _reason(
                "REFER_SHORT_HISTORY",
                historyMonths=str(report.history_months),
                minHistoryMonths=str(hist),
            )
        )
    disputed = [d.tradeline_id for d in report.disputes if not d.resolved]
    if disputed:
        found.append(_reason("REFER_UNRESOLVED_DISPUTE", disputedTradelines=", ".join(disputed)))
    return tuple(found)


def _within_margin(fig: DerivedFigures, policy: Policy) -> tuple[Reason, ...]:
    """Step 4: score min..min + scorePoints, DTI cap - dtiPct..cap, LTV cap - ltvPct..cap,
    edges inclusive."""
    found: list[Reason] = []
    if fig.score is None:
        return ()
    top = fig.min_score + policy["margins.scorePoints"].value
    if fig.min_score <= fig.score <= top:
        found.append(
            _reason(
                "REFER_SCORE_MARGIN",
                score=str(fig.score),
                minScore=str(fig.min_score),
                marginTopScore=str(top),
            )
        )
    caps = [("Dti", fig.dti_pct, fig.max_dti_pct)]
    if fig.ltv_pct is not None and fig.max_ltv_pct is not None:
        caps.append(("Ltv", fig.ltv_pct, fig.max_ltv_pct))
    for name, value, cap in caps:  # REFER_DTI_MARGIN, REFER_LTV_MARGIN
        low = cap - policy[f"margins.{name.lower()}Pct"].value
        if low <= value <= cap:
            stated = {
                f"{name.lower()}Pct": str(value),
                f"marginLow{name}Pct": str(low),
                f"max{name}Pct": str(cap),
            }
            found.append((f"REFER_{name.upper()}_MARGIN", MappingProxyType(stated)))
    return tuple(found)


def _facts(
    app: Application,
    report: CreditReport,
    policy: Policy,
    catalogue: Catalogue,
    fig: DerivedFigures,
    case_id: str,
) -> _Facts:
    score_fails = fig.score is not None and fig.score < fig.min_score
    dti_fails = fig.dti_pct > fig.max_dti_pct
    ltv_fails = (
        fig.ltv_pct is not None and fig.max_ltv_pct is not None and fig.ltv_pct > fig.max_ltv_pct
    )
    offer = None
    if fig.apr is not None and not score_fails and (dti_fails or ltv_fails):
        offer = find_offer(app, policy, fig.apr, fig.assessed_line, case_id=case_id)
    return _Facts(
        report=report,
        policy=policy,
        catalogue=catalogue,
        fig=fig,
        unusable=_unusable(report, policy),
        score_fails=score_fails,
        dti_fails=dti_fails,
        ltv_fails=ltv_fails,
        offer=offer,
        within_margin=_within_margin(fig, policy),
    )


# ---------------------------------------------------------------- "Credit factors"


def _principal_reasons(f: _Facts) -> tuple[Reason, ...]:
    """The failed rules in ``factorOrder``; the bureau's key factors, in its order, only
    where the score was a principal reason; the first ``maxReasons``."""
    fig = f.fig
    product_name = f.catalogue.product_names[fig.product]
    kinds: dict[str, list[Reason]] = {
        "scoreBelowMinimum": [],
        "dtiOverCap": [],
        "ltvOverCap": [],
        "bureauKeyFactors": [],
    }
    if f.score_fails:
        kinds["scoreBelowMinimum"].append(
            _reason(
                "SCORE_BELOW_MINIMUM",
                score=str(fig.score),
                minScore=str(fig.min_score),
                productName=product_name,
            )
        )
        kinds["bureauKeyFactors"] = [
            _reason(f.catalogue.by_bureau_code[kf.code], keyFactorValue=kf.value)
            for kf in f.report.key_factors
        ]
    if f.dti_fails:
        kinds["dtiOverCap"].append(
            _reason(
                "DTI_OVER_CAP",
                dtiPct=str(fig.dti_pct),
                maxDtiPct=str(fig.max_dti_pct),
                productName=product_name,
            )
        )
    if f.ltv_fails:
        kinds["ltvOverCap"].append(
            _reason("LTV_OVER_CAP", ltvPct=str(fig.ltv_pct), maxLtvPct=str(fig.max_ltv_pct))
        )
    stated = [r for kind in f.policy["factorOrder"].value for r in kinds[kind]]
    return tuple(stated[: f.policy["maxReasons"].value])


# ---------------------------------------------------------------- "Decision, in this order"

_Outcome = tuple[str, tuple[Reason, ...], Terms | None]


def _refer_unusable_file(f: _Facts) -> _Outcome | None:
    return ("refer", f.unusable, None) if f.unusable else None


def _decline_hard_failure(f: _Facts) -> _Outcome | None:
    if f.fig.score is None:
        return None
    if f.score_fails or (f.cap_fails and f.offer is None):
        return "decline", _principal_reasons(f), None
    return None


def _counteroffer(f: _Facts) -> _Outcome | None:
    if f.fig.score is None or f.score_fails or f.offer is None:
        return None
    return "counteroffer", _principal_reasons(f), f.offer.terms


def _refer_within_margin(f: _Facts) -> _Outcome | None:
    if f.fig.score is None or f.score_fails or f.cap_fails or not f.within_margin:
        return None
    return "refer", f.within_margin, None


def _approve(f: _Facts) -> _Outcome | None:
    fig = f.fig
    if fig.score is None or f.score_fails or f.cap_fails or f.within_margin:
        return None
    if fig.product == "auto":
        return (
            "approve",
            (),
            Terms(apr=fig.apr, amount=fig.assessed_amount, term_months=fig.term_months),
        )
    return "approve", (), Terms(apr=fig.apr, credit_line=fig.assessed_line)


_STEPS: dict[str, Callable[[_Facts], _Outcome | None]] = {
    "referUnusableFile": _refer_unusable_file,
    "declineHardFailure": _decline_hard_failure,
    "counteroffer": _counteroffer,
    "referWithinMargin": _refer_within_margin,
    "approve": _approve,
}


# ---------------------------------------------------------------- the confidence


def _headroom(value: Decimal | int, edge: Decimal | int, width: Decimal | int) -> tuple[int, int]:
    """|value - edge| in units of ``width``, exactly, as (numerator, denominator)."""
    v_num, v_den = value.as_integer_ratio()
    e_num, e_den = edge.as_integer_ratio()
    w_num, w_den = width.as_integer_ratio()
    return abs(v_num * e_den - e_num * v_den) * w_den, v_den * e_den * w_num


def _confidence(f: _Facts, step: str) -> Decimal:
    """docs/confidence.md: 1 - 0.5 / (1 + m), m the least headroom in margin widths (score:
    scorePoints + 1 points; DTI, LTV: their margins); m = 0 for an unusable file."""
    a, b = 0, 1  # m = a / b
    if step != "referUnusableFile":
        fig, pol = f.fig, f.policy
        widths = [_headroom(fig.dti_pct, fig.max_dti_pct, pol["margins.dtiPct"].value)]
        if fig.score is not None:
            points: int = pol["margins.scorePoints"].value
            widths.append(_headroom(fig.score, fig.min_score, points + 1))
        if fig.ltv_pct is not None and fig.max_ltv_pct is not None:
            widths.append(_headroom(fig.ltv_pct, fig.max_ltv_pct, pol["margins.ltvPct"].value))
        a, b = min(widths, key=lambda r: Fraction(*r))
    # 1 - 1 / (2 (1 + a/b)) is (b + 2a) / (2b + 2a): one exact ratio, rounded once
    return half_up_ratio(b + 2 * a, 2 * b + 2 * a, _CONFIDENCE_QUANTUM)


# ---------------------------------------------------------------- derive


# Derivations shared within a block (shared_derivations): the Keystone review asks
# for a case's derivation twice, with the same file and policy (Backstop re-derives
# the decision; Equipoise weighs the decision against the policy's own derivation),
# and the second is given the first's Derivation (frozen, its values read-only) once
# the policy and catalogue are the same objects and the application and report are
# equal. Outside such a block every call derives.
class _Shared(NamedTuple):
    """A derivation made inside :func:`shared_derivations`, with what it was made of."""

    application: Application
    report: CreditReport
    policy: Policy
    catalogue: Catalogue
    derived: Derivation


_SHARED: ContextVar[dict[tuple[str, dt.date], _Shared] | None] = ContextVar(
    "credit_shared_derivations", default=None
)


@contextmanager
def shared_derivations() -> Iterator[None]:
    """Within the block, a case derived again with the same file, policy and
    catalogue gets the Derivation derived first (what one review of a case asks)."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def derive(
    application: Application,
    report: CreditReport,
    policy: Policy,
    *,
    case_id: str,
    as_of: dt.date,
    catalogue: Catalogue | None = None,
) -> Derivation:
    """The decision the methodology gives a case, from the same tool data the
    underwriter is served (application, credit report, policy); inside
    :func:`shared_derivations`, derived once for the same file and policy."""
    catalogue = catalogue or default_catalogue()
    shared = _SHARED.get()
    if shared is None:
        return _derive(application, report, policy, case_id, as_of, catalogue)
    kept = shared.get((case_id, as_of))
    if (
        kept is not None
        and kept.policy is policy
        and kept.catalogue is catalogue
        and kept.application == application
        and kept.report == report
    ):
        return kept.derived
    derived = _derive(application, report, policy, case_id, as_of, catalogue)
    shared[(case_id, as_of)] = _Shared(application, report, policy, catalogue, derived)
    return derived


def _derive(
    application: Application,
    report: CreditReport,
    policy: Policy,
    case_id: str,
    as_of: dt.date,
    catalogue: Catalogue,
) -> Derivation:
    _check_entry(application, report, policy, catalogue, case_id, as_of)
    band = score_band(report.score, policy, case_id=case_id)
    fig = capacity(application, report.score, band, policy)
    facts = _facts(application, report, policy, catalogue, fig, case_id)
    for step in policy["steps"].value:
        outcome = _STEPS[step](facts)
        if outcome is None:
            continue
        decision, reasons, terms = outcome
        wordings = tuple(
            tuple(w.format_map(dict(values)) for w in catalogue[code].wordings)
            for code, values in reasons
        )
        return Derivation(
            case_id=case_id,
            product=application.product,
            decision=decision,
            step=step,
            score_band=band,
            dti_pct=fig.dti_pct,
            ltv_pct=fig.ltv_pct,
            terms=terms,
            reasons=reasons,
            factors=tuple(texts[0] for texts in wordings),
            wordings=wordings,
            confidence=_confidence(facts, step),
            figures=fig,
            offer=facts.offer if decision == "counteroffer" else None,
        )
    raise UndecidedCaseError(
        "no step of the policy decides the case", case_id=case_id, rule="steps"
    )
