"""The rules underwriter (the Spark methodology under a policy)."""

from credit.underwriting.capacity import amortised_payment, card_payment, dti_pct, ltv_pct
from credit.underwriting.engine import (
    Counteroffer,
    Figures,
    StatedReason,
    Underwriting,
    decide_case,
    request_figures,
    underwrite,
)

__all__ = [
    "Counteroffer",
    "Figures",
    "StatedReason",
    "Underwriting",
    "amortised_payment",
    "card_payment",
    "decide_case",
    "dti_pct",
    "ltv_pct",
    "request_figures",
    "underwrite",
]
