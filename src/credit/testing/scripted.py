"""Scripted models for the Messages API stand-in (:mod:`credit.testing.standin`).

Each model is a small class whose instances are scripts: called with each request
the CLI sends, they read the conversation so far (the tool calls made and the results
sent back) and give the next assistant turn. None keeps state between requests: what
to do next is read from the request, as a model would.

:class:`Underwrites` is the faithful one: it reads the application, the credit report
and the policy through the tools and records the decision the case file calls for. It
computes that decision from the tool results alone (the policy document's parameters,
the catalogue's approved wordings), by its own small reasoning over the reference
policy text: it imports nothing from the rules underwriter (``credit.underwriting``),
so a turn it records is a decision the Backstop review re-derives independently.
Exact rational arithmetic (:class:`fractions.Fraction`) for the payment, one half-up
rounding to the policy's quantum, and a plain downward search for a counteroffer.

The others misbehave in one way each. Some break the session:
:class:`FailsWithApiError`, :class:`NeverRecords`, :class:`RecordsTwice`,
:class:`CallsUnknownTool`, :class:`HangsAfterReading`. Some record a decision the
evals and the reviews must catch, each wrong in one way only and faithful otherwise:

- :class:`CitesFactor` adds a factor of its own (e.g. a prohibited basis), on every
  decision or only on those it names; :class:`CitesMaritalStatus` cites the
  applicant's marital status on every adverse decision (the fairness guard);
- :class:`GuessesOnThinFile` never refers an unusable file: it decides on what there
  is, taking a missing score as the lowest that clears the minimum and its margin
  (the thin-file eval);
- :class:`IgnoresDtiMargin` never refers a DTI within the review margin: it approves
  up to the cap (the DTI-margin edges of the policy-boundary eval);
- :class:`ByCase` follows one script per case (a batch with a bad model on some
  cases only);
- :class:`InventsFigure` states a DTI of its own on every adverse decision, the file's
  plus a few points, so its reasons state the invented figure (the stated-DTI checks
  of the policy-boundary eval, and Backstop).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Final

from credit.canonical import dumps
from credit.catalogue import Catalogue, default_catalogue
from credit.testing.standin import (
    Answer,
    ApiError,
    Hang,
    ModelRequest,
    Reply,
    Text,
    ToolCall,
    ToolResult,
)

__all__ = [
    "READS",
    "RECORD",
    "ByCase",
    "CallsUnknownTool",
    "CitesFactor",
    "CitesMaritalStatus",
    "FailsWithApiError",
    "GuessesOnThinFile",
    "HangsAfterReading",
    "IgnoresDtiMargin",
    "InventsFigure",
    "NeverRecords",
    "RecordsTwice",
    "Underwrites",
    "decide_from_tools",
    "decide_with_codes",
]

READS: Final = ("get_application", "get_credit_report", "get_policy")
RECORD: Final = "record_decision"

_HALF: Final = Fraction(1, 2)
_CONFIDENCE_QUANTUM: Final = Fraction(1, 100)  # docs/confidence.md: to the hundredth
# The principal-reason kinds of the policy's ``factorOrder``, and their codes.
_ADVERSE_CODES: Final = {
    "scoreBelowMinimum": "SCORE_BELOW_MINIMUM",
    "dtiOverCap": "DTI_OVER_CAP",
    "ltvOverCap": "LTV_OVER_CAP",
}


class ScriptError(RuntimeError):
    """The script cannot go on with this conversation (the stand-in answers 500)."""


# ------------------------------------------------------------------ reading the tools


def _short(name: str) -> str:
    return name.rsplit("__", 1)[-1]


def _results(request: ModelRequest) -> dict[str, ToolResult]:
    """The latest result of each tool, by its short name."""
    return {_short(r.name): r for r in request.tool_results()}


def _parse(text: str) -> Any:
    return json.loads(text, parse_float=Decimal)


def _tool(request: ModelRequest, short: str) -> str:
    name = request.tool(short)
    if name is None:
        raise ScriptError(f"the request offers no {short} tool: {request.tool_names}")
    return name


# ------------------------------------------------------------------ the reasoning


def _frac(value: Any) -> Fraction:
    return Fraction(str(value))


def _half_up(value: Fraction, quantum: Fraction) -> Fraction:
    steps = value / quantum
    whole = steps.numerator // steps.denominator
    if steps - whole >= _HALF:
        whole += 1
    return whole * quantum


def _text(value: Fraction, quantum: Fraction) -> str:
    """A figure written with the decimals of its quantum (``45.0``, ``312.50``)."""
    places = 0
    while (quantum * 10**places).denominator != 1:
        places += 1
    scaled = value * 10**places
    if scaled.denominator != 1:
        raise ScriptError(f"{value} is not a multiple of {quantum}")
    digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
    sign = "-" if scaled < 0 else ""
    return sign + (f"{digits[:-places]}.{digits[-places:]}" if places else digits)


@dataclass(frozen=True)
class _Figures:
    product: str
    score: int | None
    band: str
    min_score: int
    apr: str | None
    payment: Fraction
    line: Fraction | None
    dti: Fraction
    max_dti: Fraction
    ltv: Fraction | None
    max_ltv: Fraction | None


class _Reasoning:
    """The reference policy text, applied to what the tools returned."""

    def __init__(
        self,
        application: Mapping[str, Any],
        report: Mapping[str, Any],
        policy: Mapping[str, Any],
        catalogue: Catalogue,
    ) -> None:
        self.app = application
        self.report = report
        self.doc = policy
        self.params: Mapping[str, Any] = policy["parameters"]
        self.catalogue = catalogue
        self.money_q = _frac(self.value("rounding.money"))
        self.pct_q = _frac(self.value("rounding.percent"))
        self.product = str(application["product"])
        self.basis = [
            f"policy={policy['policy']} v{policy['version']} effective "
            f"{policy['effectiveDate']} sha256:{policy['sha256']}"
        ]

    def value(self, key: str) -> Any:
        return self.params[key]["value"]

    def pp(self, key: str) -> Any:
        return self.value(f"products.{self.product}.{key}")

    # -------------------------------------------------------------- figures

    def band(self) -> str:
        score = self.report.get("score")
        if score is None:
            return "unscored"
        floors = sorted(
            (
                (int(self.params[k]["value"]), k.split(".", 1)[1])
                for k in self.params
                if k.startswith("scoreBands.")
            ),
            reverse=True,
        )
        for floor, band in floors:
            if score >= floor:
                self.basis.append(f"scoreBands.{band}={floor}: score {score} is in band {band}")
                return band
        raise ScriptError(f"score {score} is below every band")

    def payment(self, amount: Fraction, apr: str, term: int) -> Fraction:
        r = _frac(apr) / 1200
        exact = amount / term if r == 0 else amount * r / (1 - (1 + r) ** -term)
        return _half_up(exact, self.money_q)

    def card_payment(self, line: Fraction) -> Fraction:
        return _half_up(line * _frac(self.pp("paymentPctOfLine")) / 100, self.money_q)

    def dti(self, payment: Fraction) -> Fraction:
        debt, income = _frac(self.app["monthlyDebtPayments"]), _frac(self.app["annualIncome"])
        return _half_up((debt + payment) * 1200 / income, self.pct_q)

    def ltv(self, amount: Fraction) -> Fraction:
        return _half_up(amount * 100 / _frac(self.app["vehicleValue"]), self.pct_q)

    def figures(self) -> _Figures:
        band = self.band()
        apr: str | None = None
        payment, line = Fraction(0), None
        if band != "unscored":
            apr = str(self.value(f"pricing.{self.product}.{band}.apr"))
            if self.product == "auto":
                payment = self.payment(
                    _frac(self.app["requestedAmount"]), apr, int(self.app["termMonths"])
                )
            else:
                band_line = _frac(self.value(f"pricing.card.{band}.line"))
                line = min(band_line, _frac(self.app["requestedLine"]))
                payment = self.card_payment(line)
        ltv = max_ltv = None
        if self.product == "auto":
            ltv = self.ltv(_frac(self.app["requestedAmount"]))
            max_ltv = _frac(self.pp("maxLtvPct"))
        return _Figures(
            product=self.product,
            score=self.report.get("score"),
            band=band,
            min_score=int(self.pp("minScore")),
            apr=apr,
            payment=payment,
            line=line,
            dti=self.dti(payment),
            max_dti=_frac(self.pp("maxDtiPct")),
            ltv=ltv,
            max_ltv=max_ltv,
        )

    # -------------------------------------------------------------- reasons

    def stated(self, code: str, values: Mapping[str, str]) -> tuple[str, str]:
        return code, self.catalogue[code].wordings[0].format_map(dict(values))

    def adverse(self, f: _Figures, *, score_principal: bool) -> list[tuple[str, str]]:
        name = self.catalogue.product_names[f.product]
        found: dict[str, list[tuple[str, str]]] = {}
        if f.score is not None and f.score < f.min_score:
            found["scoreBelowMinimum"] = [
                self.stated(
                    "SCORE_BELOW_MINIMUM",
                    {"score": str(f.score), "minScore": str(f.min_score), "productName": name},
                )
            ]
        if f.dti > f.max_dti:
            found["dtiOverCap"] = [
                self.stated(
                    "DTI_OVER_CAP",
                    {
                        "dtiPct": _text(f.dti, self.pct_q),
                        "maxDtiPct": str(self.pp("maxDtiPct")),
                        "productName": name,
                    },
                )
            ]
        if f.ltv is not None and f.max_ltv is not None and f.ltv > f.max_ltv:
            found["ltvOverCap"] = [
                self.stated(
                    "LTV_OVER_CAP",
                    {"ltvPct": _text(f.ltv, self.pct_q), "maxLtvPct": str(self.pp("maxLtvPct"))},
                )
            ]
        if score_principal:
            found["bureauKeyFactors"] = [
                self.stated(code, {"keyFactorValue": str(kf["value"])})
                for kf in self.report.get("keyFactors", ())
                if (code := self.catalogue.key_factor_code(str(kf["code"]))) is not None
            ]
        ordered = [r for kind in self.value("factorOrder") for r in found.get(kind, ())]
        return ordered[: int(self.value("maxReasons"))]

    def unusable(self) -> list[tuple[str, str]]:
        r = self.report
        reasons = []
        if r.get("score") is None:
            reasons.append(self.stated("REFER_NO_SCORE", {}))
        min_tl = int(self.value("thinFile.minTradelines"))
        min_hist = int(self.value("thinFile.minHistoryMonths"))
        if int(r["tradelines"]) < min_tl:
            reasons.append(
                self.stated(
                    "REFER_FEW_TRADELINES",
                    {"tradelines": str(r["tradelines"]), "minTradelines": str(min_tl)},
                )
            )
        if int(r["historyMonths"]) < min_hist:
            reasons.append(
                self.stated(
                    "REFER_SHORT_HISTORY",
                    {"historyMonths": str(r["historyMonths"]), "minHistoryMonths": str(min_hist)},
                )
            )
        open_ids = [str(d["tradelineId"]) for d in r.get("disputes", ()) if not d["resolved"]]
        if open_ids:
            reasons.append(
                self.stated("REFER_UNRESOLVED_DISPUTE", {"disputedTradelines": ", ".join(open_ids)})
            )
        return reasons

    def margins(self, f: _Figures) -> list[tuple[str, str]]:
        assert f.score is not None
        reasons = []
        top = f.min_score + int(self.value("margins.scorePoints"))
        if f.min_score <= f.score <= top:
            reasons.append(
                self.stated(
                    "REFER_SCORE_MARGIN",
                    {
                        "score": str(f.score),
                        "minScore": str(f.min_score),
                        "marginTopScore": str(top),
                    },
                )
            )
        low = Decimal(str(self.pp("maxDtiPct"))) - Decimal(str(self.value("margins.dtiPct")))
        if _frac(low) <= f.dti <= f.max_dti:
            reasons.append(
                self.stated(
                    "REFER_DTI_MARGIN",
                    {
                        "dtiPct": _text(f.dti, self.pct_q),
                        "marginLowDtiPct": str(low),
                        "maxDtiPct": str(self.pp("maxDtiPct")),
                    },
                )
            )
        if f.ltv is not None and f.max_ltv is not None:
            low_ltv = Decimal(str(self.pp("maxLtvPct"))) - Decimal(
                str(self.value("margins.ltvPct"))
            )
            if _frac(low_ltv) <= f.ltv <= f.max_ltv:
                reasons.append(
                    self.stated(
                        "REFER_LTV_MARGIN",
                        {
                            "ltvPct": _text(f.ltv, self.pct_q),
                            "marginLowLtvPct": str(low_ltv),
                            "maxLtvPct": str(self.pp("maxLtvPct")),
                        },
                    )
                )
        return reasons

    # -------------------------------------------------------------- the counteroffer

    def counteroffer(self, f: _Figures) -> dict[str, str | int] | None:
        """A plain downward search over multiples of the step."""
        assert f.apr is not None
        step = _frac(self.pp("counterofferStep"))
        if f.product == "card":
            assert f.line is not None
            k = -(-f.line // step) - 1  # strictly below the line that would be granted
            lowest = -(-_frac(self.pp("minLine")) // step)
            while k >= lowest:
                if self.dti(self.card_payment(k * step)) <= f.max_dti:
                    return {"apr": f.apr, "creditLine": _text(k * step, self.money_q)}
                k -= 1
            return None
        assert f.max_ltv is not None
        best: tuple[Fraction, int] | None = None
        lowest = -(-_frac(self.pp("minAmount")) // step)
        requested_term = int(self.app["termMonths"])
        for term in sorted(int(t) for t in self.pp("termsAllowed")):
            if term < requested_term:
                continue
            k = _frac(self.app["requestedAmount"]) // step
            while k >= lowest:
                amount = k * step
                passes = self.ltv(amount) <= f.max_ltv
                if passes and self.dti(self.payment(amount, f.apr, term)) <= f.max_dti:
                    if best is None or amount > best[0]:
                        best = (amount, term)
                    break
                k -= 1
        if best is None:
            return None
        return {"apr": f.apr, "amount": _text(best[0], self.money_q), "termMonths": best[1]}

    # -------------------------------------------------------------- the decision

    def confidence(self, f: _Figures, step: str) -> str:
        m = Fraction(0)
        if step != "referUnusableFile":
            headrooms = []
            if f.score is not None:
                width = int(self.value("margins.scorePoints")) + 1
                headrooms.append(Fraction(abs(f.score - f.min_score), width))
            headrooms.append(abs(f.dti - f.max_dti) / _frac(self.value("margins.dtiPct")))
            if f.ltv is not None and f.max_ltv is not None:
                headrooms.append(abs(f.ltv - f.max_ltv) / _frac(self.value("margins.ltvPct")))
            m = min(headrooms)
        return _text(_half_up(1 - _HALF / (1 + m), _CONFIDENCE_QUANTUM), _CONFIDENCE_QUANTUM)

    def decide(self) -> dict[str, Any]:
        return self.decide_coded()[0]

    def decide_coded(self) -> tuple[dict[str, Any], list[str]]:
        """The Decision's wire form and its reason codes, in order."""
        f = self.figures()
        score_fails = f.score is not None and f.score < f.min_score
        cap_fails = f.dti > f.max_dti or (
            f.ltv is not None and f.max_ltv is not None and f.ltv > f.max_ltv
        )
        for step in self.value("steps"):
            decided = self._step(step, f, score_fails, cap_fails)
            if decided is None:
                continue
            decision, reasons, terms = decided
            self.basis.append(f"steps: decided by {step}")
            wire: dict[str, Any] = {"product": f.product, "decision": decision}
            if terms is not None:
                wire["terms"] = terms
            wire.update(
                scoreBand=f.band,
                dtiPct=_text(f.dti, self.pct_q),
                ltvPct=_text(f.ltv, self.pct_q) if f.ltv is not None else None,
                policyBasis=list(self.basis),
                factors=[text for _, text in reasons],
                confidence=self.confidence(f, step),
            )
            return wire, [code for code, _ in reasons]
        raise ScriptError("no step of the policy decides this case")

    def _step(
        self, step: str, f: _Figures, score_fails: bool, cap_fails: bool
    ) -> tuple[str, list[tuple[str, str]], dict[str, Any] | None] | None:
        if step == "referUnusableFile":
            reasons = self.unusable()
            return ("refer", reasons, None) if reasons else None
        if f.score is None:
            return None
        if step == "declineHardFailure":
            if score_fails:
                return "decline", self.adverse(f, score_principal=True), None
            if cap_fails and self.counteroffer(f) is None:
                return "decline", self.adverse(f, score_principal=False), None
            return None
        if step == "counteroffer":
            offer = self.counteroffer(f) if cap_fails and not score_fails else None
            return (
                ("counteroffer", self.adverse(f, score_principal=False), offer) if offer else None
            )
        if score_fails or cap_fails:
            return None
        margin = self.margins(f)
        if step == "referWithinMargin":
            return ("refer", margin, None) if margin else None
        if step == "approve" and not margin:
            assert f.apr is not None
            if f.product == "auto":
                amount = _text(_frac(self.app["requestedAmount"]), self.money_q)
                terms = {"apr": f.apr, "amount": amount, "termMonths": self.app["termMonths"]}
            else:
                assert f.line is not None
                terms = {"apr": f.apr, "creditLine": _text(f.line, self.money_q)}
            return "approve", [], terms
        return None


def decide_from_tools(
    application: Mapping[str, Any],
    report: Mapping[str, Any],
    policy: Mapping[str, Any],
    catalogue: Catalogue | None = None,
) -> dict[str, Any]:
    """The Decision (wire form) the reference policy text calls for, from the three
    tool results: ``get_application``'s ``application``, ``get_credit_report``'s
    ``creditReport`` and the ``get_policy`` document."""
    return _Reasoning(application, report, policy, catalogue or default_catalogue()).decide()


def decide_with_codes(
    application: Mapping[str, Any],
    report: Mapping[str, Any],
    policy: Mapping[str, Any],
    catalogue: Catalogue | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """:func:`decide_from_tools`, with the decision's reason codes (what a model records
    beside the decision: the catalogue supplies the wording and the figures)."""
    reasoning = _Reasoning(application, report, policy, catalogue or default_catalogue())
    return reasoning.decide_coded()


def _record_arguments(decision: dict[str, Any], codes: list[str]) -> dict[str, Any]:
    return {"decision": decision, "reasonCodes": list(codes)}


# ------------------------------------------------------------------ the models


class Underwrites:
    """The faithful model: reads the three tools in order, records the decision the
    case calls for, then answers with it as JSON."""

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        self.catalogue = catalogue
        self.codes: list[str] = []  # the reason codes of the last decision made

    def __call__(self, request: ModelRequest) -> Answer:
        results = _results(request)
        for short in READS:
            if short not in results:
                return Reply.call(_tool(request, short))
            if results[short].is_error:
                return Reply.text(f"I cannot underwrite: {short} failed: {results[short].text}")
        decision = self.decision(results)
        return self.after_reading(request, results, decision)

    reasoning: type[_Reasoning] = _Reasoning  # how it applies the policy text

    def decision(self, results: Mapping[str, ToolResult]) -> dict[str, Any]:
        application = _parse(results["get_application"].text)["application"]
        report = _parse(results["get_credit_report"].text)["creditReport"]
        policy = _parse(results["get_policy"].text)
        catalogue = self.catalogue or default_catalogue()
        reasoning = self.reasoning(application, report, policy, catalogue)
        decision, self.codes = reasoning.decide_coded()
        return decision

    def after_reading(
        self, request: ModelRequest, results: Mapping[str, ToolResult], decision: dict[str, Any]
    ) -> Answer:
        recorded = results.get(RECORD)
        if recorded is None:
            return Reply(
                (
                    Text("I have read the file; recording the decision."),
                    ToolCall(_tool(request, RECORD), _record_arguments(decision, self.codes)),
                )
            )
        if recorded.is_error:
            return Reply.text(f"The record was refused: {recorded.text}")
        return Reply.text(dumps(decision))


class NeverRecords(Underwrites):
    """Reads the file and answers with its decision, but never records it."""

    def after_reading(
        self, request: ModelRequest, results: Mapping[str, ToolResult], decision: dict[str, Any]
    ) -> Answer:
        return Reply.text(dumps(decision))


class RecordsTwice(Underwrites):
    """Records its decision, then records it again."""

    def after_reading(
        self, request: ModelRequest, results: Mapping[str, ToolResult], decision: dict[str, Any]
    ) -> Answer:
        records = [c for c in request.tool_calls() if _short(c.name) == RECORD]
        if len(records) < 2:
            return Reply.call(_tool(request, RECORD), _record_arguments(decision, self.codes))
        return Reply.text(dumps(decision))


class CitesFactor(Underwrites):
    """Records the faithful decision with ``factor`` added to its factors: on every
    decision, or only on the kinds of decision in ``on``."""

    def __init__(
        self,
        factor: str,
        catalogue: Catalogue | None = None,
        *,
        on: Sequence[str] | None = None,
    ) -> None:
        super().__init__(catalogue)
        self.factor = factor
        self.on = None if on is None else tuple(on)

    def decision(self, results: Mapping[str, ToolResult]) -> dict[str, Any]:
        decision = super().decision(results)
        if self.on is None or decision["decision"] in self.on:
            decision["factors"] = [*decision["factors"], self.factor]
        return decision


MARITAL_STATUS_FACTOR: Final = "The applicant's marital status (separated)"


class CitesMaritalStatus(CitesFactor):
    """Cites the applicant's marital status beside the faithful reasons of every decline
    and counteroffer (a prohibited basis, 12 CFR 1002.6(b)); approvals and referrals
    are faithful."""

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        super().__init__(MARITAL_STATUS_FACTOR, catalogue, on=("decline", "counteroffer"))


class _GuessingReasoning(_Reasoning):
    """Skips the unusable-file step, and takes a missing score as the lowest score
    that clears the product minimum and its review margin."""

    def __init__(
        self,
        application: Mapping[str, Any],
        report: Mapping[str, Any],
        policy: Mapping[str, Any],
        catalogue: Catalogue,
    ) -> None:
        super().__init__(application, report, policy, catalogue)
        if report.get("score") is None:  # the lowest score past the minimum and its margin
            guess = int(self.pp("minScore")) + int(self.value("margins.scorePoints")) + 1
            self.report = {**report, "score": guess}

    def _step(
        self, step: str, f: _Figures, score_fails: bool, cap_fails: bool
    ) -> tuple[str, list[tuple[str, str]], dict[str, Any] | None] | None:
        if step == "referUnusableFile":
            return None
        return super()._step(step, f, score_fails, cap_fails)


class GuessesOnThinFile(Underwrites):
    """Never refers an unusable file (no score, too few tradelines, too short a
    history, an open dispute): decides it on what there is, a missing score taken as
    the lowest that clears the product minimum and its review margin. Faithful on
    every usable file."""

    reasoning = _GuessingReasoning


class _MarginBlindReasoning(_Reasoning):
    """Sees no DTI review margin."""

    def margins(self, f: _Figures) -> list[tuple[str, str]]:
        return [(code, text) for code, text in super().margins(f) if code != "REFER_DTI_MARGIN"]


class IgnoresDtiMargin(Underwrites):
    """Never refers a DTI within the review margin (approves up to the cap itself);
    every other margin and step is faithful."""

    reasoning = _MarginBlindReasoning


class InventsFigure(Underwrites):
    """Records the faithful decision, but on a decline or counteroffer states a DTI of
    its own: the file's plus ``by`` points (so a DTI reason states the invented
    figure). Approvals and referrals are faithful."""

    def __init__(self, by: str = "5.0", catalogue: Catalogue | None = None) -> None:
        super().__init__(catalogue)
        self.by = Decimal(by)

    def decision(self, results: Mapping[str, ToolResult]) -> dict[str, Any]:
        decision = super().decision(results)
        if decision["decision"] in ("decline", "counteroffer"):
            decision["dtiPct"] = str(Decimal(decision["dtiPct"]) + self.by)
        return decision


class CallsUnknownTool:
    """Asks for a tool the session does not offer (``tool``, with ``arguments``), then
    gives up."""

    def __init__(self, tool: str = "Bash", arguments: Mapping[str, Any] | None = None) -> None:
        self.tool = tool
        self.arguments = dict(arguments or {"command": "cat /etc/passwd"})

    def __call__(self, request: ModelRequest) -> Answer:
        if not request.tool_calls():
            return Reply.call(self.tool, self.arguments)
        return Reply.text("That tool is not available; I stop here.")


class HangsAfterReading:
    """Reads ``reads`` of the three tools, then the next request hangs ``seconds``."""

    def __init__(self, seconds: float, reads: Sequence[str] = READS[:1]) -> None:
        self.seconds = seconds
        self.reads = tuple(reads)

    def __call__(self, request: ModelRequest) -> Answer:
        done = {_short(r.name) for r in request.tool_results()}
        for short in self.reads:
            if short not in done:
                return Reply.call(_tool(request, short))
        return Hang(self.seconds)


class FailsWithApiError:
    """Answers every request with the same API error."""

    def __init__(self, status: int, message: str, *, retry: bool = True) -> None:
        self.error = ApiError(status, message, retry=retry)

    def __call__(self, request: ModelRequest) -> Answer:
        return self.error


class ByCase:
    """Follows ``scripts[case_id]`` for the case the conversation is about (the case id
    its first user message names, as a whole word), else ``default``."""

    def __init__(self, scripts: Mapping[str, Any], default: Any) -> None:
        self.scripts = dict(scripts)
        self.default = default

    def __call__(self, request: ModelRequest) -> Answer:
        first = request.messages[0] if request.messages else {}
        text = dumps(first.get("content", ""))
        for case_id, script in self.scripts.items():
            if re.search(rf"(?<![\w-]){re.escape(case_id)}(?![\w-])", text):
                answer: Answer = script(request)
                return answer
        default: Answer = self.default(request)
        return default
