"""A recorded decision against its derivation, field by field: :func:`compare`.

Each :class:`Difference` names one field in the Decision's wire names and carries both
values, so a review can hold on it and say exactly what differs:

- ``product``, ``decision``, ``scoreBand``, ``dtiPct``, ``ltvPct``, ``confidence``;
- ``terms.amount``, ``terms.apr``, ``terms.termMonths``, ``terms.creditLine`` (absent
  terms compare as absent fields);
- with the recorded reason codes: ``reasonCodes`` (the codes in order), and for each
  position whose code agrees, ``reasons[i].values.<name>`` for every value its wording
  states;
- ``factors[i]``: the text at each position must be one of the approved wordings of
  the derived reason there, stating the derived values.

Numbers compare as numbers (45.0 is 45.00); stated values compare as the exact strings
a notice prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from credit.models import Decision, Terms
from credit.secondline.derive import Derivation

__all__ = ["Difference", "compare"]

_TERMS_FIELDS = (
    ("amount", "amount"),
    ("apr", "apr"),
    ("termMonths", "term_months"),
    ("creditLine", "credit_line"),
)


@dataclass(frozen=True, slots=True)
class Difference:
    """One field on which the recorded decision and the derivation disagree."""

    field: str
    recorded: Any
    derived: Any

    def describe(self) -> str:
        return f"{self.field}: recorded {self.recorded!r}, derived {self.derived!r}"


def _term(terms: Terms | None, name: str) -> Any:
    return getattr(terms, name) if terms is not None else None


def compare(
    decision: Decision,
    reasons: Sequence[tuple[str, Mapping[str, str]]] | None,
    derived: Derivation,
) -> list[Difference]:
    """Every difference between a recorded decision (and its reason codes with their
    values, or None when it carried none) and the derivation, in a stable order."""
    out: list[Difference] = []

    def check(field: str, recorded: Any, want: Any) -> None:
        if recorded != want:
            out.append(Difference(field, recorded, want))

    check("product", decision.product, derived.product)
    check("decision", decision.decision, derived.decision)
    for wire, name in _TERMS_FIELDS:
        check(f"terms.{wire}", _term(decision.terms, name), _term(derived.terms, name))
    check("scoreBand", decision.score_band, derived.score_band)
    check("dtiPct", decision.dti_pct, derived.dti_pct)
    check("ltvPct", decision.ltv_pct, derived.ltv_pct)
    if reasons is not None:
        codes = tuple(code for code, _ in reasons)
        check("reasonCodes", codes, derived.reason_codes)
        for i, ((code, values), (want_code, want_values)) in enumerate(
            zip(reasons, derived.reasons, strict=False)
        ):
            if code != want_code:
                continue
            for name in (*want_values, *(n for n in values if n not in want_values)):
                check(f"reasons[{i}].values.{name}", values.get(name), want_values.get(name))
    for i in range(max(len(decision.factors), len(derived.factors))):
        text = decision.factors[i] if i < len(decision.factors) else None
        accepted = derived.wordings[i] if i < len(derived.wordings) else ()
        if text is None or text not in accepted:
            out.append(Difference(f"factors[{i}]", text, derived.factors[i] if accepted else None))
    check("confidence", decision.confidence, derived.confidence)
    return out
