"""The rules underwriter: the Spark methodology, steps 2-5, under a policy.

Each step cites the methodology step and the policy keys it reads. The decision steps
run in the policy's order (``steps``); each has its own condition, and a case that no
step decides raises :class:`~credit.errors.UndecidedCaseError`: nothing is approved or
declined by fallthrough.

Not formalised here: the choice of which key factors the bureau reports and their
order (taken as given, methodology step 5), and any judgement a human reviewer makes
on a referral.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from functools import partial

from credit.catalogue import Catalogue, default_catalogue
from credit.errors import NotInPolicyError, UndecidedCaseError
from credit.kept import KeptPer
from credit.models import Application, Case, CreditReport, Decision, Terms
from credit.policy import BANDS, BandPricing, Param, Policy, ProductPolicy
from credit.reason_facts import Facts, file_facts, stated_values
from credit.underwriting.capacity import (
    amortised_payment,
    card_payment,
    dti_pct,
    ltv_pct,
    payment_factor,
    round_half_up,
)

__all__ = [
    "Counteroffer",
    "Figures",
    "StatedReason",
    "Underwriting",
    "decide_case",
    "request_figures",
    "underwrite",
]

_ONE = Decimal(1)
_HALF = Decimal("0.5")
_HUNDRED = Decimal(100)
_TWELVE_HUNDRED = Decimal(1200)
_CONFIDENCE_QUANTUM = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class StatedReason:
    """A reason code with the exact values its sentence states, and the sentence."""

    code: str
    values: Mapping[str, str]
    text: str


@dataclass(frozen=True, slots=True)
class Counteroffer:
    amount: Decimal | None  # auto
    term_months: int | None  # auto
    credit_line: Decimal | None  # card
    apr: Decimal
    payment: Decimal
    dti_pct: Decimal
    ltv_pct: Decimal | None


@dataclass(frozen=True, slots=True)
class Figures:
    """Every figure the decision used (methodology step 3), as compared and stated."""

    product: str
    score: int | None
    band: str
    min_score: int
    apr: Decimal | None
    assessed_amount: Decimal | None  # auto: amount requested
    assessed_line: Decimal | None  # card: band line capped at the line requested
    term_months: int | None
    new_payment: Decimal
    dti_pct: Decimal
    max_dti_pct: Decimal
    ltv_pct: Decimal | None
    max_ltv_pct: Decimal | None


@dataclass(frozen=True, slots=True)
class Underwriting:
    """The outcome of underwriting one case: the Decision plus its grounding."""

    case_id: str
    decision: Decision
    reasons: tuple[StatedReason, ...]
    figures: Figures
    step: str
    counteroffer: Counteroffer | None = None

    @property
    def reason_codes(self) -> tuple[str, ...]:
        return tuple(r.code for r in self.reasons)

    def to_wire(self) -> dict[str, object]:
        return {
            "caseId": self.case_id,
            "decision": self.decision.to_wire(),
            "reasonCodes": list(self.reason_codes),
        }


@dataclass(slots=True)
class _Context:
    case_id: str
    application: Application
    report: CreditReport
    policy: Policy
    catalogue: Catalogue
    product: ProductPolicy
    lk: _Lookups
    figures: Figures
    basis: list[str] = field(default_factory=list)
    searched: bool = False  # the counteroffer search has run (its result is ``offer``)
    offer: Counteroffer | None = None
    # the margin rule's reasons and the basis lines it states (judged once a case)
    margin: tuple[tuple[StatedReason, ...], tuple[str, ...]] | None = None
    _facts: Facts | None = None

    @property
    def facts(self) -> Facts:
        """The file's facts that reasons state (built once, only when a reason is)."""
        if self._facts is None:
            f = self.figures
            self._facts = file_facts(
                self.application,
                self.report,
                self.policy,
                self.catalogue,
                dti_pct=f.dti_pct,
                ltv_pct=f.ltv_pct,
            )
        return self._facts

    @property
    def score_fails(self) -> bool:
        f = self.figures
        return f.score is not None and f.score < f.min_score

    @property
    def dti_fails(self) -> bool:
        return self.figures.dti_pct > self.figures.max_dti_pct

    @property
    def ltv_fails(self) -> bool:
        f = self.figures
        return f.ltv_pct is not None and f.max_ltv_pct is not None and f.ltv_pct > f.max_ltv_pct


@dataclass(frozen=True, slots=True)
class _Outcome:
    decision: str
    reasons: tuple[StatedReason, ...]
    terms: Terms | None = None
    counteroffer: Counteroffer | None = None


# ---------------------------------------------------------------- the policy, read once


class _Lookups:
    """What the steps read from one policy, built once per policy object: the product
    and band pricing views and the bands by floor. (A Policy is immutable, so these
    never go stale; they are the same objects ``policy.product()`` and
    ``policy.pricing()`` would build on every call.)"""

    def __init__(self, policy: Policy) -> None:
        self.products = {p: policy.product(p) for p in ("auto", "card")}
        self.pricing = {(p, b): policy.pricing(p, b) for p in ("auto", "card") for b in BANDS}
        self.bands: tuple[tuple[str, Param], ...] = tuple(
            (b, policy[f"scoreBands.{b}"])
            for b in sorted(BANDS, key=lambda b: policy[f"scoreBands.{b}"].value, reverse=True)
        )
        self.head = (
            f"policy={policy.name} v{policy.version} effective {policy.effective_date} "
            f"sha256:{policy.sha256}"
        )
        self.cites = {key: param.cite() for key, param in policy.params.items()}  # by key
        self.money_q: Decimal = policy["rounding.money"].value
        self.pct_q: Decimal = policy["rounding.percent"].value
        self.factor_order: tuple[str, ...] = tuple(policy["factorOrder"].value)
        self.max_reasons: Param = policy["maxReasons"]
        self.min_tradelines: Param = policy["thinFile.minTradelines"]
        self.min_history: Param = policy["thinFile.minHistoryMonths"]
        self.score_margin: Param = policy["margins.scorePoints"]
        self.dti_margin: Param = policy["margins.dtiPct"]
        self.ltv_margin: Param = policy["margins.ltvPct"]
        self.steps: Param = policy["steps"]


_lookups: KeptPer[Policy, _Lookups] = KeptPer(_Lookups)


# ---------------------------------------------------------------- step 2: band the score


def _band(score: int | None, lk: _Lookups, basis: list[str], case_id: str) -> str:
    """Methodology step 2: prime / near-prime / subprime; unscored with no score."""
    if score is None:
        basis.append("scoreBands: no score returned by the bureau, band unscored")
        return "unscored"
    for band, floor in lk.bands:
        if score >= floor.value:
            basis.append(f"{lk.cites[floor.key]}: score {score} is in band {band}")
            return band
    raise UndecidedCaseError(
        f"score {score} is below every band's minimum", case_id=case_id, rule="scoreBands"
    )


# ---------------------------------------------------------------- step 3: capacity


def _check_request(app: Application, product: ProductPolicy, case_id: str) -> None:
    """The request must be one the product offers; otherwise no rule could decide it."""
    if app.product == "auto":
        assert product.terms_allowed and product.min_amount
        if app.term_months not in product.terms_allowed.value:
            allowed = ", ".join(str(t) for t in product.terms_allowed.value)
            raise NotInPolicyError(
                f"term of {app.term_months} months is not offered (allowed: {allowed})",
                case_id=case_id,
                field="application.termMonths",
            )
        assert app.requested_amount is not None
        if app.requested_amount < product.min_amount.value:
            raise NotInPolicyError(
                f"amount {app.requested_amount} is below the product minimum "
                f"{product.min_amount.value}",
                case_id=case_id,
                field="application.requestedAmount",
            )
    else:
        assert product.min_line and app.requested_line is not None
        if app.requested_line < product.min_line.value:
            raise NotInPolicyError(
                f"line {app.requested_line} is below the product minimum {product.min_line.value}",
                case_id=case_id,
                field="application.requestedLine",
            )


def _capacity(
    app: Application,
    score: int | None,
    band: str,
    lk: _Lookups,
    product: ProductPolicy,
    basis: list[str],
) -> Figures:
    money_q, pct_q = lk.money_q, lk.pct_q
    apr: Decimal | None = None
    payment = Decimal("0.00")
    line: Decimal | None = None
    if band != "unscored":
        pricing: BandPricing = lk.pricing[(app.product, band)]
        apr = pricing.apr.value
        if app.product == "auto":
            assert app.requested_amount is not None and app.term_months is not None
            payment = amortised_payment(app.requested_amount, apr, app.term_months, money_q)
            basis.append(
                f"{lk.cites[pricing.apr.key]}: payment {payment} on {app.requested_amount} "
                f"over {app.term_months} months"
            )
        else:
            assert pricing.line is not None and app.requested_line is not None
            assert product.payment_pct_of_line is not None
            line = min(pricing.line.value, app.requested_line)
            payment = card_payment(line, product.payment_pct_of_line.value, money_q)
            basis.append(
                f"{lk.cites[pricing.line.key]}: line assessed {line} "
                f"(capped at {app.requested_line} requested)"
            )
            basis.append(
                f"{lk.cites[product.payment_pct_of_line.key]}: payment {payment} on line {line}; "
                f"{lk.cites[pricing.apr.key]}"
            )
    else:
        basis.append("capacity: unscored, no band rate or line, DTI counts existing debt only")
    dti = dti_pct(app.monthly_debt_payments, payment, app.annual_income, pct_q)
    ltv: Decimal | None = None
    if app.product == "auto":
        assert app.requested_amount is not None and app.vehicle_value is not None
        ltv = ltv_pct(app.requested_amount, app.vehicle_value, pct_q)
    return Figures(
        product=app.product,
        score=score,
        band=band,
        min_score=product.min_score.value,
        apr=apr,
        assessed_amount=app.requested_amount,
        assessed_line=line,
        term_months=app.term_months,
        new_payment=payment,
        dti_pct=dti,
        max_dti_pct=product.max_dti_pct.value,
        ltv_pct=ltv,
        max_ltv_pct=product.max_ltv_pct.value if product.max_ltv_pct else None,
    )


def _cite_caps(ctx: _Context) -> None:
    f, p = ctx.figures, ctx.product
    if f.score is not None:
        verdict = "passes" if f.score >= f.min_score else "is below the minimum"
        ctx.basis.append(f"{ctx.lk.cites[p.min_score.key]}: score {f.score} {verdict}")
    verdict = "passes" if f.dti_pct <= f.max_dti_pct else "is over the cap"
    ctx.basis.append(f"{ctx.lk.cites[p.max_dti_pct.key]}: DTI {f.dti_pct}% {verdict}")
    if f.ltv_pct is not None and p.max_ltv_pct is not None:
        verdict = "passes" if not ctx.ltv_fails else "is over the cap"
        ctx.basis.append(f"{ctx.lk.cites[p.max_ltv_pct.key]}: LTV {f.ltv_pct}% {verdict}")


# ---------------------------------------------------------------- reasons (step 5)


def _stated(ctx: _Context, code: str) -> StatedReason:
    """A reason with the figures the file gives it (credit.reason_facts)."""
    entry = ctx.catalogue[code]
    values = stated_values(entry, ctx.facts)
    return StatedReason(code, values, entry.render(values))


def _adverse_reasons(ctx: _Context, *, score_principal: bool) -> tuple[StatedReason, ...]:
    """Principal reasons in the policy's factor order, at most ``maxReasons``."""
    order = ctx.lk.factor_order
    groups: dict[str, list[StatedReason]] = {kind: [] for kind in order}
    if ctx.score_fails:
        groups["scoreBelowMinimum"].append(_stated(ctx, "SCORE_BELOW_MINIMUM"))
    if ctx.dti_fails:
        groups["dtiOverCap"].append(_stated(ctx, "DTI_OVER_CAP"))
    if ctx.ltv_fails:
        groups["ltvOverCap"].append(_stated(ctx, "LTV_OVER_CAP"))
    if score_principal:
        for kf in ctx.report.key_factors:
            code = ctx.catalogue.key_factor_code(kf.code)
            assert code is not None  # checked on entry to underwrite()
            groups["bureauKeyFactors"].append(_stated(ctx, code))
    ordered = [r for kind in order for r in groups[kind]]
    cap = ctx.lk.max_reasons
    if len(ordered) > cap.value:
        ctx.basis.append(
            f"{ctx.lk.cites[cap.key]}: {len(ordered)} reasons found, the first {cap.value} kept"
        )
    return tuple(ordered[: cap.value])


# ---------------------------------------------------------------- step 4: decide


def _refer_unusable_file(ctx: _Context) -> _Outcome | None:
    """Refer (never guess): no score, a thin file, or an unresolved dispute."""
    r = ctx.report
    reasons: list[StatedReason] = []
    if r.score is None:
        reasons.append(_stated(ctx, "REFER_NO_SCORE"))
    min_tl, min_hist = ctx.lk.min_tradelines, ctx.lk.min_history
    thin_tl = r.tradelines < min_tl.value
    thin_hist = r.history_months < min_hist.value
    ctx.basis.append(
        f"{ctx.lk.cites[min_tl.key]}: {r.tradelines} tradelines "
        f"{'is a thin file' if thin_tl else 'pass'}"
    )
    ctx.basis.append(
        f"{ctx.lk.cites[min_hist.key]}: {r.history_months} months of history "
        f"{'is a thin file' if thin_hist else 'pass'}"
    )
    if thin_tl:
        reasons.append(_stated(ctx, "REFER_FEW_TRADELINES"))
    if thin_hist:
        reasons.append(_stated(ctx, "REFER_SHORT_HISTORY"))
    unresolved = r.unresolved_disputes
    ctx.basis.append(f"disputes: {len(unresolved)} unresolved on the file")
    if unresolved:
        reasons.append(_stated(ctx, "REFER_UNRESOLVED_DISPUTE"))
    if not reasons:
        return None
    return _Outcome("refer", tuple(reasons))


def _search_auto(ctx: _Context) -> Counteroffer | None:
    """Largest multiple of the step, <= requested, >= product minimum, passing every cap,
    among allowed terms no shorter than requested; ties go to the shortest term."""
    app, p, f = ctx.application, ctx.product, ctx.figures
    assert p.terms_allowed and p.min_amount and p.max_ltv_pct and f.apr is not None
    assert app.requested_amount is not None and app.vehicle_value is not None
    money_q, pct_q = ctx.lk.money_q, ctx.lk.pct_q
    step = p.counteroffer_step.value
    lo = _ceil_steps(p.min_amount.value, step)
    hi = _floor_steps(app.requested_amount, step)
    apr, value, debt, income = (
        f.apr,
        app.vehicle_value,
        app.monthly_debt_payments,
        app.annual_income,
    )

    def passes(k: Decimal, term: int) -> tuple[bool, Decimal, Decimal, Decimal]:
        amount = k * step
        payment = amortised_payment(amount, apr, term, money_q)
        dti = dti_pct(debt, payment, income, pct_q)
        ltv = ltv_pct(amount, value, pct_q)
        return dti <= p.max_dti_pct.value and ltv <= p.max_ltv_pct.value, payment, dti, ltv  # type: ignore[union-attr]

    best: Counteroffer | None = None
    assert app.term_months is not None
    # Closed-form starting points: the payment the DTI cap leaves room for, and the
    # amount the LTV cap allows (rounding makes them approximate; the search is exact).
    room = p.max_dti_pct.value * income / _TWELVE_HUNDRED - debt
    ltv_room = p.max_ltv_pct.value * value / _HUNDRED
    for term in (t for t in p.terms_allowed.value if t >= app.term_months):
        limit = min(room / payment_factor(apr, term), ltv_room)
        guess = _guess_steps(limit, step)
        k = _largest_passing(lo, hi, partial(_first, passes, term), guess)
        if k is None:
            continue
        _, payment, dti, ltv = passes(k, term)
        amount = k * step
        if best is None or (best.amount is not None and amount > best.amount):
            best = Counteroffer(amount, term, None, apr, payment, dti, ltv)
    return best


def _search_card(ctx: _Context) -> Counteroffer | None:
    """Largest multiple of the step, >= the minimum line, below the line that would have
    been granted, passing the DTI cap."""
    app, p, f = ctx.application, ctx.product, ctx.figures
    assert p.min_line and p.payment_pct_of_line and f.assessed_line is not None
    assert f.apr is not None
    money_q, pct_q = ctx.lk.money_q, ctx.lk.pct_q
    step = p.counteroffer_step.value
    lo = _ceil_steps(p.min_line.value, step)
    hi = _ceil_steps(f.assessed_line, step) - 1  # strictly below the assessed line
    pct, debt, income = p.payment_pct_of_line.value, app.monthly_debt_payments, app.annual_income

    def dti_of(k: Decimal) -> tuple[Decimal, Decimal]:
        payment = card_payment(k * step, pct, money_q)
        return dti_pct(debt, payment, income, pct_q), payment

    room = p.max_dti_pct.value * income / _TWELVE_HUNDRED - debt
    guess = _guess_steps(room * _HUNDRED / pct, step) if pct > 0 else None
    k = _largest_passing(lo, hi, lambda k: dti_of(k)[0] <= p.max_dti_pct.value, guess)
    if k is None:
        return None
    dti, payment = dti_of(k)
    return Counteroffer(None, None, k * step, f.apr, payment, dti, None)


def _first(
    fn: Callable[[Decimal, int], tuple[bool, Decimal, Decimal, Decimal]], term: int, k: Decimal
) -> bool:
    return fn(k, term)[0]


def _ceil_steps(value: Decimal, step: Decimal) -> Decimal:
    """The fewest whole steps reaching at least ``value``. (Decimal's ``//`` truncates
    toward zero, so ``-(-a // b)`` is not a ceiling for Decimals.)"""
    return (value / step).quantize(_ONE, rounding=ROUND_CEILING)


def _floor_steps(value: Decimal, step: Decimal) -> Decimal:
    """The most whole steps not exceeding ``value``."""
    return (value / step).quantize(_ONE, rounding=ROUND_FLOOR)


def _largest_passing(
    lo: Decimal, hi: Decimal, ok: Callable[[Decimal], bool], guess: Decimal | None = None
) -> Decimal | None:
    """Largest integer k in [lo, hi] with ok(k), for ok monotone (true then false).

    Exact whatever the guess: it only says where to start. From the guess the search
    gallops (1, 2, 4, ... steps) to bracket the edge, then bisects the bracket; with a
    closed-form guess near the edge that is a handful of evaluations."""
    if hi < lo:
        return None
    k = min(max(guess if guess is not None else lo, lo), hi)
    if ok(k):
        good, d = k, Decimal(1)
        while good + d <= hi and ok(good + d):
            good += d
            d *= 2
        bad = min(good + d, hi + 1)  # fails, or lies past hi
    else:
        bad, d = k, Decimal(1)
        while bad - d >= lo and not ok(bad - d):
            bad -= d
            d *= 2
        if bad - d >= lo:
            good = bad - d  # passes
        elif bad > lo and ok(lo):
            good = lo
        else:
            return None
    while bad - good > 1:
        mid = (good + bad) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def _guess_steps(limit: Decimal, step: Decimal) -> Decimal:
    """Whole steps under a closed-form limit (a starting point only; may be negative)."""
    return (limit / step).quantize(_ONE, rounding=ROUND_FLOOR) if limit > 0 else Decimal(0)


def _search(ctx: _Context) -> Counteroffer | None:
    """The counteroffer search, run at most once a case (the decline and the
    counteroffer steps both ask; the answer depends only on the case and policy)."""
    if ctx.figures.band == "unscored":
        return None
    if not ctx.searched:
        ctx.offer = _search_auto(ctx) if ctx.figures.product == "auto" else _search_card(ctx)
        ctx.searched = True
    return ctx.offer


def _offer_terms(offer: Counteroffer) -> Terms:
    if offer.credit_line is not None:
        return Terms(apr=offer.apr, credit_line=offer.credit_line)
    return Terms(apr=offer.apr, amount=offer.amount, term_months=offer.term_months)


def _decline_hard_failure(ctx: _Context) -> _Outcome | None:
    """Decline: score below the minimum, or DTI / LTV over the cap with no counteroffer."""
    if ctx.figures.score is None:
        return None
    if ctx.score_fails:
        return _Outcome("decline", _adverse_reasons(ctx, score_principal=True))
    if (ctx.dti_fails or ctx.ltv_fails) and _search(ctx) is None:
        ctx.basis.append("counteroffer: no adjusted terms pass every cap")
        return _Outcome("decline", _adverse_reasons(ctx, score_principal=False))
    return None


def _counteroffer(ctx: _Context) -> _Outcome | None:
    """Counteroffer: the request fails only on DTI and/or LTV and adjusted terms pass."""
    if ctx.figures.score is None or ctx.score_fails or not (ctx.dti_fails or ctx.ltv_fails):
        return None
    offer = _search(ctx)
    if offer is None:
        return None
    p = ctx.product
    if offer.credit_line is not None:
        ctx.basis.append(
            f"{ctx.lk.cites[p.counteroffer_step.key]}: counteroffer line {offer.credit_line} at "
            f"{offer.apr}% APR, DTI {offer.dti_pct}% passes {ctx.lk.cites[p.max_dti_pct.key]}"
        )
    else:
        assert p.terms_allowed is not None
        ctx.basis.append(
            f"{ctx.lk.cites[p.terms_allowed.key]}; {ctx.lk.cites[p.counteroffer_step.key]}: "
            f"counteroffer {offer.amount} over {offer.term_months} months at {offer.apr}% APR, DTI "
            f"{offer.dti_pct}% and LTV {offer.ltv_pct}% pass every cap"
        )
    return _Outcome(
        "counteroffer",
        _adverse_reasons(ctx, score_principal=False),
        _offer_terms(offer),
        offer,
    )


def _refer_within_margin(ctx: _Context) -> _Outcome | None:
    """Refer a within-margin result, judged on the request as made."""
    f = ctx.figures
    if f.score is None or ctx.score_fails or ctx.dti_fails or ctx.ltv_fails:
        return None
    reasons, lines = _margins(ctx)
    ctx.basis += lines
    return _Outcome("refer", reasons) if reasons else None


def _margins(ctx: _Context) -> tuple[tuple[StatedReason, ...], tuple[str, ...]]:
    """The margin rule's reasons and the basis lines that state it, judged once a case
    (the referral step states them; the approval step asks whether there are any)."""
    if ctx.margin is None:
        basis: list[str] = []
        ctx.margin = (_margin_reasons(ctx, basis), tuple(basis))
    return ctx.margin


def _margin_reasons(ctx: _Context, basis: list[str]) -> tuple[StatedReason, ...]:
    """Margin rules (step 4): score min..min+points, DTI cap-margin..cap, LTV likewise."""
    f, lk = ctx.figures, ctx.lk
    assert f.score is not None
    reasons: list[StatedReason] = []
    pts = lk.score_margin
    top = f.min_score + pts.value
    in_score = f.min_score <= f.score <= top
    basis.append(
        f"{ctx.lk.cites[pts.key]}: score {f.score} {'within' if in_score else 'outside'} margin "
        f"{f.min_score}..{top}"
    )
    if in_score:
        reasons.append(_stated(ctx, "REFER_SCORE_MARGIN"))
    dm = lk.dti_margin
    low = f.max_dti_pct - dm.value
    in_dti = low <= f.dti_pct <= f.max_dti_pct
    basis.append(
        f"{ctx.lk.cites[dm.key]}: DTI {f.dti_pct}% {'within' if in_dti else 'outside'} margin "
        f"{low}..{f.max_dti_pct}"
    )
    if in_dti:
        reasons.append(_stated(ctx, "REFER_DTI_MARGIN"))
    if f.ltv_pct is not None and f.max_ltv_pct is not None:
        lm = lk.ltv_margin
        low_ltv = f.max_ltv_pct - lm.value
        in_ltv = low_ltv <= f.ltv_pct <= f.max_ltv_pct
        basis.append(
            f"{ctx.lk.cites[lm.key]}: LTV {f.ltv_pct}% {'within' if in_ltv else 'outside'} margin "
            f"{low_ltv}..{f.max_ltv_pct}"
        )
        if in_ltv:
            reasons.append(_stated(ctx, "REFER_LTV_MARGIN"))
    return tuple(reasons)


def _approve(ctx: _Context) -> _Outcome | None:
    """Approve within policy at the band's rate (auto) or line (card)."""
    f = ctx.figures
    if f.score is None or ctx.score_fails or ctx.dti_fails or ctx.ltv_fails:
        return None
    if _margins(ctx)[0]:
        return None
    assert f.apr is not None
    if f.product == "auto":
        terms = Terms(apr=f.apr, amount=f.assessed_amount, term_months=f.term_months)
    else:
        terms = Terms(apr=f.apr, credit_line=f.assessed_line)
    return _Outcome("approve", (), terms)


_STEPS: dict[str, Callable[[_Context], _Outcome | None]] = {
    "referUnusableFile": _refer_unusable_file,
    "declineHardFailure": _decline_hard_failure,
    "counteroffer": _counteroffer,
    "referWithinMargin": _refer_within_margin,
    "approve": _approve,
}


# ---------------------------------------------------------------- confidence


def confidence(ctx: _Context, decision: str, step: str) -> Decimal:
    """1 - 0.5 / (1 + m), to the hundredth, where m is the headroom of the threshold the
    case sits nearest, in units of that threshold's review margin (score: margin + 1
    points; DTI and LTV: their margin in percentage points). A case on an edge scores
    0.50; one margin-width away 0.75; four widths 0.90. A referral for an unusable file
    (no score, thin file, dispute) made no automated judgement: m = 0, 0.50.
    See docs/confidence.md."""
    if step == "referUnusableFile":
        m = Decimal(0)
    else:
        f, lk = ctx.figures, ctx.lk
        headrooms: list[Decimal] = []
        if f.score is not None:
            width = Decimal(lk.score_margin.value + 1)
            headrooms.append(abs(Decimal(f.score - f.min_score)) / width)
        headrooms.append(abs(f.dti_pct - f.max_dti_pct) / lk.dti_margin.value)
        if f.ltv_pct is not None and f.max_ltv_pct is not None:
            headrooms.append(abs(f.ltv_pct - f.max_ltv_pct) / lk.ltv_margin.value)
        m = min(headrooms)
    return round_half_up(_ONE - _HALF / (_ONE + m), _CONFIDENCE_QUANTUM)


# ---------------------------------------------------------------- the underwriter


def underwrite(
    application: Application,
    report: CreditReport,
    policy: Policy,
    *,
    case_id: str,
    as_of: dt.date,
    catalogue: Catalogue | None = None,
) -> Underwriting:
    """Decide one case from the tool data (application, credit report, policy)."""
    catalogue = catalogue or default_catalogue()
    if not policy.in_force_on(as_of):
        raise NotInPolicyError(
            f"policy {policy.label} takes effect {policy.effective_date}, after the case date "
            f"{as_of}",
            case_id=case_id,
            field="asOf",
        )
    for i, kf in enumerate(report.key_factors):
        if catalogue.key_factor_code(kf.code) is None:
            raise NotInPolicyError(
                f"bureau key-factor code {kf.code!r} is not in the reason catalogue "
                f"{catalogue.name} v{catalogue.version}",
                case_id=case_id,
                field=f"creditReport.keyFactors[{i}].code",
            )
    lk = _lookups(policy)
    product = lk.products[application.product]
    _check_request(application, product, case_id)
    basis = [lk.head]
    band = _band(report.score, lk, basis, case_id)
    figures = _capacity(application, report.score, band, lk, product, basis)
    ctx = _Context(case_id, application, report, policy, catalogue, product, lk, figures, basis)
    _cite_caps(ctx)
    steps = lk.steps
    for step in steps.value:
        outcome = _STEPS[step](ctx)
        if outcome is None:
            continue
        basis.append(f"{lk.cites[steps.key]}: decided by {step}")
        decision = Decision(
            product=figures.product,
            decision=outcome.decision,
            terms=outcome.terms,
            score_band=band,
            dti_pct=figures.dti_pct,
            ltv_pct=figures.ltv_pct,
            policy_basis=tuple(basis),
            factors=tuple(r.text for r in outcome.reasons),
            confidence=confidence(ctx, outcome.decision, step),
        )
        return Underwriting(case_id, decision, outcome.reasons, figures, step, outcome.counteroffer)
    raise UndecidedCaseError("no decision step applies", case_id=case_id, rule=lk.cites[steps.key])


def request_figures(
    application: Application, report: CreditReport, policy: Policy, *, case_id: str
) -> Figures:
    """Methodology steps 2 and 3 alone: the band, the payment, DTI and LTV of the
    request as made, whether or not the policy offers what it asks (a person deciding a
    case by hand states these figures, as the policy computes them)."""
    lk = _lookups(policy)
    product = lk.products[application.product]
    basis: list[str] = []
    band = _band(report.score, lk, basis, case_id)
    return _capacity(application, report.score, band, lk, product, basis)


def decide_case(case: Case, policy: Policy, catalogue: Catalogue | None = None) -> Underwriting:
    """Underwrite a validated case. Monitoring data is never passed on."""
    return underwrite(
        case.application,
        case.credit_report,
        policy,
        case_id=case.case_id,
        as_of=case.as_of,
        catalogue=catalogue,
    )
