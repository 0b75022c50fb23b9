"""The policy-boundary points: every threshold and margin, on both sides of its edge.

Every edge is read from the policy (the product minimum score and the score margin,
the band floors, the DTI and LTV caps and their margins, the thin-file minimums, the
percent quantum), so the points follow a policy change. Each point's case is built so
that the rounded figure the policy states is exactly the edge (cases.build_case); the
point carries what the policy text says of it (oracle.expected_outcome), computed
without the underwriter.

Points, for auto and card unless noted:
- score: minimum - 1, minimum, minimum + margin, minimum + margin + 1;
- band floors: near-prime floor - 1 and floor, prime floor - 1 and floor (the band,
  and the band's APR and line on approval);
- DTI: cap - margin - quantum, cap - margin, cap, cap + quantum; and the rounding
  edge: half a quantum over the cap less a cent of debt states the cap, half a
  quantum over states cap + quantum;
- LTV (auto): the same four, and the same rounding edge;
- thin file: tradelines minimum - 1 and minimum, history minimum - 1 and minimum;
- card: a line requested below the band's line is the line assessed;
- reasons: a score under the minimum with more bureau key factors than a notice may
  state (the reasons, their order and the ``maxReasons`` cut); auto DTI and LTV both
  over their caps (two reasons in the policy's factor order);
- money rounding (auto): a payment whose exact value is half a cent or more over a
  whole cent, and one under half a cent over, each on the DTI rounding edge, so
  that the payment's half-up rounding decides the DTI stated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from credit.errors import CreditError
from credit.evals.cases import KEY_FACTORS, build_case
from credit.evals.graders import BoundaryPoint
from credit.evals.oracle import band_of, expected_figures, expected_outcome
from credit.policy import BANDS, Policy
from credit.secondline.exact import exact_payment

__all__ = ["Unbuildable", "boundary_points", "comfortable"]


@dataclass(frozen=True, slots=True)
class Unbuildable:
    """A point the policy leaves no case for, or that construction missed: a failure."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Comfortable:
    """Values well clear of every edge, so a point moves one figure at a time."""

    score: int
    dti_pct: Decimal
    ltv_pct: Decimal


def comfortable(policy: Policy, product: str) -> Comfortable:
    """A score in the top band and past the score margin; DTI and LTV at half the lower
    edge of their margins (rounded to the percent quantum)."""
    p = f"products.{product}"
    q: Decimal = policy["rounding.percent"].value
    score = max(
        policy["scoreBands.prime"].value,
        policy[f"{p}.minScore"].value + policy["margins.scorePoints"].value + 1,
    )
    dti = ((policy[f"{p}.maxDtiPct"].value - policy["margins.dtiPct"].value) / 2).quantize(q)
    ltv_edge = policy["products.auto.maxLtvPct"].value - policy["margins.ltvPct"].value
    return Comfortable(score, dti, (ltv_edge / 2).quantize(q))


def boundary_points(policy: Policy) -> Iterator[BoundaryPoint | Unbuildable]:
    """Every boundary point of the policy, in a stable order."""
    q: Decimal = policy["rounding.percent"].value
    half = q / 2
    counter = iter(range(1, 10_000))

    def point(
        name: str,
        aim: str,
        product: str,
        *,
        score: int | None = None,
        dti: Decimal | None = None,
        ltv: Decimal | None = None,
        stated_dti: Decimal | None = None,
        stated_ltv: Decimal | None = None,
        dti_cents_below: int = 0,
        ltv_cents_below: int = 0,
        tradelines: int | None = None,
        history_months: int | None = None,
        line_requested: Decimal | None = None,
        key_factors: tuple[tuple[str, str, str], ...] = (),
    ) -> BoundaryPoint | Unbuildable:
        ok = comfortable(policy, product)
        score = ok.score if score is None else score
        dti = ok.dti_pct if dti is None else dti
        ltv_raw = (ok.ltv_pct if ltv is None else ltv) if product == "auto" else None
        want_dti = dti if stated_dti is None else stated_dti
        want_ltv = (ltv_raw if stated_ltv is None else stated_ltv) if product == "auto" else None
        try:
            case = build_case(
                f"EV-BND-{next(counter):03d}",
                policy,
                product=product,
                score=score,
                dti_raw=dti,
                ltv_raw=ltv_raw,
                dti_cents_below=dti_cents_below,
                ltv_cents_below=ltv_cents_below,
                tradelines=tradelines,
                history_months=history_months,
                line_requested=line_requested,
                key_factors=key_factors,
            )
            band = band_of(score, policy)
            figures = expected_figures(case.application, score, policy)
        except (CreditError, ValueError) as err:
            return Unbuildable(name, f"no case at this point: {err}")
        if figures.dti_pct != want_dti or figures.ltv_pct != want_ltv:
            return Unbuildable(
                name,
                f"construction missed the edge: DTI {figures.dti_pct} (wanted {want_dti}), "
                f"LTV {figures.ltv_pct} (wanted {want_ltv})",
            )
        return BoundaryPoint(
            name=name,
            aim=aim,
            case=case,
            expectation=expected_outcome(case, policy),
            band=band,
            dti_pct=figures.dti_pct,
            ltv_pct=figures.ltv_pct,
        )

    for product in ("auto", "card"):
        p = f"products.{product}"
        min_score = policy[f"{p}.minScore"]
        pts: int = policy["margins.scorePoints"].value
        for offset, label in (
            (-1, "min-1"),
            (0, "min"),
            (pts, f"min+{pts}"),
            (pts + 1, f"min+{pts + 1}"),
        ):
            s = min_score.value + offset
            yield point(
                f"{product} score {label} = {s}",
                f"score {s} vs {min_score.cite()}",
                product,
                score=s,
            )
        for band in ("near-prime", "prime"):
            floor = policy[f"scoreBands.{band}"]
            for offset, label in ((-1, "floor-1"), (0, "floor")):
                s = floor.value + offset
                yield point(
                    f"{product} band {band} {label} = {s}",
                    f"score {s} vs {floor.cite()}",
                    product,
                    score=s,
                )
        cap = policy[f"{p}.maxDtiPct"]
        margin = policy["margins.dtiPct"].value
        for raw, label in (
            (cap.value - margin - q, f"cap-{margin + q}"),
            (cap.value - margin, f"cap-{margin}"),
            (cap.value, "cap"),
            (cap.value + q, f"cap+{q}"),
        ):
            yield point(
                f"{product} DTI {label} = {raw}", f"DTI {raw} vs {cap.cite()}", product, dti=raw
            )
        yield point(
            f"{product} DTI cap+{half} less a cent states {cap.value}",
            f"DTI just under {cap.value + half} rounds half-up to the cap {cap.value}",
            product,
            dti=cap.value + half,
            dti_cents_below=1,
            stated_dti=cap.value,
        )
        yield point(
            f"{product} DTI cap+{half} states {cap.value + q}",
            f"DTI {cap.value + half} rounds half-up to {cap.value + q}, over {cap.cite()}",
            product,
            dti=cap.value + half,
            stated_dti=cap.value + q,
        )
        for name, key, unit in (
            ("tradelines", "thinFile.minTradelines", ""),
            ("history", "thinFile.minHistoryMonths", " months"),
        ):
            minimum = policy[key]
            for offset, label in ((-1, "min-1"), (0, "min")):
                n = minimum.value + offset
                yield point(
                    f"{product} {name} {label} = {n}{unit}",
                    f"{name} {n} vs {minimum.cite()}",
                    product,
                    tradelines=n if name == "tradelines" else None,
                    history_months=n if name == "history" else None,
                )
    cap = policy["products.auto.maxLtvPct"]
    margin = policy["margins.ltvPct"].value
    for raw, label in (
        (cap.value - margin - q, f"cap-{margin + q}"),
        (cap.value - margin, f"cap-{margin}"),
        (cap.value, "cap"),
        (cap.value + q, f"cap+{q}"),
    ):
        yield point(f"auto LTV {label} = {raw}", f"LTV {raw} vs {cap.cite()}", "auto", ltv=raw)
    yield point(
        f"auto LTV cap+{half} less a cent states {cap.value}",
        f"LTV just under {cap.value + half} rounds half-up to the cap {cap.value}",
        "auto",
        ltv=cap.value + half,
        ltv_cents_below=1,
        stated_ltv=cap.value,
    )
    yield point(
        f"auto LTV cap+{half} states {cap.value + q}",
        f"LTV {cap.value + half} rounds half-up to {cap.value + q}, over {cap.cite()}",
        "auto",
        ltv=cap.value + half,
        stated_ltv=cap.value + q,
    )
    top = max(BANDS, key=lambda b: policy[f"scoreBands.{b}"].value)
    top_line = policy[f"pricing.card.{top}.line"]
    below = top_line.value - policy["products.card.counterofferStep"].value
    yield point(
        f"card line requested {below} under the {top} line",
        f"line requested {below} vs {top_line.cite()} (capped at the line requested)",
        "card",
        line_requested=below,
    )
    for product in ("auto", "card"):
        min_score = policy[f"products.{product}.minScore"]
        cap_reasons = policy["maxReasons"]
        yield point(
            f"{product} score min-1 with {len(KEY_FACTORS)} bureau key factors states "
            f"{cap_reasons.value} reasons",
            f"score {min_score.value - 1} vs {min_score.cite()}, key factors in the bureau's "
            f"order, {cap_reasons.cite()}",
            product,
            score=min_score.value - 1,
            key_factors=KEY_FACTORS,
        )
    dti_cap, ltv_cap = policy["products.auto.maxDtiPct"], policy["products.auto.maxLtvPct"]
    dti_over = dti_cap.value + policy["margins.dtiPct"].value
    ltv_over = ltv_cap.value + policy["margins.ltvPct"].value
    yield point(
        f"auto DTI {dti_over} and LTV {ltv_over} both over their caps",
        f"DTI {dti_over} vs {dti_cap.cite()} and LTV {ltv_over} vs {ltv_cap.cite()}, "
        "reasons in the policy's factorOrder",
        "auto",
        dti=dti_over,
        ltv=ltv_over,
    )
    for rounds_up in (True, False):
        yield _payment_rounding_point(policy, point, rounds_up=rounds_up)


def _payment_rounding_point(
    policy: Policy, point: Callable[..., BoundaryPoint | Unbuildable], *, rounds_up: bool
) -> BoundaryPoint | Unbuildable:
    """An auto request on the DTI rounding edge (raw DTI exactly cap + half a quantum with
    the payment rounded half-up) whose exact payment is half a cent or more over a whole
    cent (``rounds_up``) or less than half over: a payment rounded any other way states
    another DTI. The amount is moved a cent at a time until its payment is such a one."""
    q: Decimal = policy["rounding.percent"].value
    money = Fraction(policy["rounding.money"].value)
    cap = policy["products.auto.maxDtiPct"]
    ok = comfortable(policy, "auto")
    side = "half a cent or more" if rounds_up else "under half a cent"
    name = f"auto payment {side} over a cent: DTI cap+{q / 2} states {cap.value + q}"
    apr = policy[f"pricing.auto.{band_of(ok.score, policy)}.apr"].value
    for cents in range(int(1 / money)):
        case = build_case(
            "EV-BND-PAY",
            policy,
            product="auto",
            score=ok.score,
            dti_raw=cap.value + q / 2,
            ltv_raw=ok.ltv_pct,
            ltv_cents_below=cents,
        )
        app = case.application
        assert app.requested_amount is not None and app.term_months is not None
        over = exact_payment(app.requested_amount, apr, app.term_months) / money % 1
        if (over >= Fraction(1, 2)) if rounds_up else (0 < over < Fraction(1, 2)):
            return point(
                name,
                f"payment on {app.requested_amount} over {app.term_months} months is {side} "
                f"over a whole cent, rounded half-up; DTI {cap.value + q / 2} vs {cap.cite()}",
                "auto",
                dti=cap.value + q / 2,
                ltv_cents_below=cents,
                stated_dti=cap.value + q,
            )
    return Unbuildable(name, "no amount within a dollar of the edge has such a payment")
