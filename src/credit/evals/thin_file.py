"""The thin-file cases: no usable score, so the policy refers rather than guessing.

Step 1 of "Decision, in this order" comes first: a thin file is referred even when
its DTI is over the cap or its score is under the minimum. Each case is a thin file
under the policy's own minimums (``thinFile.*``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from credit.errors import CreditError
from credit.evals.boundary import Unbuildable, comfortable
from credit.evals.cases import build_case
from credit.models import Case
from credit.policy import Policy

__all__ = ["ThinFileCase", "thin_file_cases"]


@dataclass(frozen=True, slots=True)
class ThinFileCase:
    name: str
    case: Case


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    score: int | None
    tradelines: int | None = None
    history_months: int | None = None
    dti_pct: Decimal | None = None


def thin_file_cases(policy: Policy) -> Iterator[ThinFileCase | Unbuildable]:
    """No score, too few tradelines, too short a history, no file at all; and thin files
    that would otherwise be declined (DTI over the cap, score under the minimum)."""
    min_tl: int = policy["thinFile.minTradelines"].value
    min_hist: int = policy["thinFile.minHistoryMonths"].value
    q: Decimal = policy["rounding.percent"].value
    counter = iter(range(1, 10_000))
    for product in ("auto", "card"):
        ok = comfortable(policy, product)
        p = f"products.{product}"
        over_cap = policy[f"{p}.maxDtiPct"].value + 10 * q
        under = policy[f"{p}.minScore"].value - 1
        specs = (
            _Spec(f"{product} no score", None),
            _Spec(f"{product} no score, existing debt over the DTI cap", None, dti_pct=over_cap),
            _Spec(f"{product} {min_tl - 1} tradelines (minimum {min_tl})", ok.score, min_tl - 1),
            _Spec(
                f"{product} {min_hist - 1} months of history (minimum {min_hist})",
                ok.score,
                history_months=min_hist - 1,
            ),
            _Spec(f"{product} no file: no score, tradelines or history", None, 0, 0),
            _Spec(
                f"{product} {min_tl - 1} tradelines, score {under} under the minimum",
                under,
                min_tl - 1,
            ),
        )
        for spec in specs:
            try:
                case = build_case(
                    f"EV-THIN-{next(counter):03d}",
                    policy,
                    product=product,
                    score=spec.score,
                    dti_raw=spec.dti_pct if spec.dti_pct is not None else ok.dti_pct,
                    ltv_raw=ok.ltv_pct,
                    tradelines=spec.tradelines,
                    history_months=spec.history_months,
                )
            except (CreditError, ValueError) as err:
                yield Unbuildable(spec.name, f"no case: {err}")
                continue
            yield ThinFileCase(spec.name, case)
