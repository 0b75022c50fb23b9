"""The reference policy as a GoRules JDM (JSON Decision Model) graph, generated from the
policy YAML: no threshold is typed here by hand.

``build_jdm(policy)`` returns the graph; ``python -m benchmarks.peers.jdm`` (from the
repository root) rewrites ``benchmarks/peers/reference-policy.jdm.json``, and
``tests/test_peers.py`` fails when the committed file is stale.

The graph, in evaluation order (one node each unless noted):

1. ``case`` (input): one flat case, money in integer cents (see ``zen_peer.zen_context``).
2. ``product rules`` (decision table keyed by product): the product's minimum score,
   DTI / LTV caps, minimum amount / line, allowed terms, payment % of line and
   counteroffer step.
3. ``score band`` (decision table, first hit, floors in descending order): prime /
   near-prime / subprime, and unscored when the bureau returned no score.
4. ``pricing`` (decision table keyed by product and band): APR and card line.
5. ``capacity`` (expressions): the amortised or card payment, half-up to the money
   quantum; DTI and LTV, half-up to the percent quantum (the rounded figure is the one
   compared, as the policy requires).
6. ``checks`` (expressions): unusable file, score / DTI / LTV failures, margins.
7. ``counteroffer search`` (expressions): the largest passing amount per allowed term
   (auto) or the largest passing line (card), by inverting the half-up roundings in
   closed form, then the ties-to-shortest-term choice; ``offer check`` recomputes the
   offer's own figures and those one step above it, forward, and flags whether the
   closed form found the true maximum (``offerVerified``).
8. ``decide`` (decision table, first hit): one row per decision step, in the policy's
   ``steps`` order; no row matches an undecidable case (no fallthrough).
9. ``decision`` (expressions, no pass-through): the figures the peer is compared on.

Not modelled (the peer's documented scope, benchmarks/peers/README.md): the
credit factors and reason codes, the policy basis, the confidence, and input
validation (terms not offered, amounts below the product minimum, unknown bureau
key-factor codes), which ``credit`` checks before any rule runs.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
JDM_PATH = Path(__file__).resolve().parent / "reference-policy.jdm.json"

if str(ROOT / "src") not in sys.path:  # runnable from a bare checkout as well
    sys.path.insert(0, str(ROOT / "src"))

from credit.policy import BANDS, Policy, default_policy  # noqa: E402

__all__ = ["JDM_PATH", "build_jdm", "main", "render"]

_CENTS = Decimal(100)


def _num(value: Decimal | int) -> str:
    """A number literal for the ZEN expression language (exact decimal digits)."""
    if isinstance(value, int):
        return str(value)
    return format(value, "f")


def _cents(value: Decimal) -> str:
    cents = value * _CENTS
    if cents != cents.to_integral_value():
        raise ValueError(f"{value} is not a whole number of cents")
    return str(int(cents))


def _places(quantum: Decimal, key: str) -> int:
    """Decimal places of a power-of-ten rounding quantum (0.1 -> 1, 0.01 -> 2)."""
    normal = quantum.normalize()
    sign, digits, exponent = normal.as_tuple()
    if sign or digits != (1,) or not isinstance(exponent, int):
        raise ValueError(f"{key}={quantum}: the JDM peer needs a power-of-ten quantum")
    return -exponent


def _str(text: str) -> str:
    return json.dumps(text)


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []

    def add(self, node_id: str, kind: str, content: dict[str, Any] | None, name: str) -> None:
        node: dict[str, Any] = {
            "id": node_id,
            "type": kind,
            "name": name,
            "position": {"x": 80 + 320 * len(self.nodes), "y": 240},
        }
        if content is not None:
            node["content"] = content
        if self.nodes:
            source = self.nodes[-1]["id"]
            self.edges.append(
                {"id": f"{source}->{node_id}", "sourceId": source, "targetId": node_id}
            )
            self.edges[-1]["type"] = "edge"
        self.nodes.append(node)

    def expressions(
        self, node_id: str, name: str, pairs: list[tuple[str, str]], *, pass_through: bool = True
    ) -> None:
        content = {
            "expressions": [
                {"id": f"{node_id}.{key}", "key": key, "value": value} for key, value in pairs
            ],
            "passThrough": pass_through,
            "inputField": None,
            "outputPath": None,
            "executionMode": "single",
        }
        self.add(node_id, "expressionNode", content, name)

    def table(
        self,
        node_id: str,
        name: str,
        inputs: list[tuple[str, str | None]],
        outputs: list[str],
        rows: list[tuple[str, list[str], list[str]]],
    ) -> None:
        """A first-hit decision table; ``inputs`` are (label, field or None for a cell
        that is a whole boolean expression); each row is (id, input cells, outputs)."""
        in_cols = [
            {"id": f"{node_id}.in{i}", "name": label, **({"field": field} if field else {})}
            for i, (label, field) in enumerate(inputs)
        ]
        out_cols = [
            {"id": f"{node_id}.out{i}", "name": field, "field": field}
            for i, field in enumerate(outputs)
        ]
        rules = []
        for row_id, cells, values in rows:
            rule: dict[str, str] = {"_id": f"{node_id}.{row_id}"}
            for col, cell in zip(in_cols, cells, strict=True):
                rule[col["id"]] = cell
            for col, value in zip(out_cols, values, strict=True):
                rule[col["id"]] = value
            rules.append(rule)
        content = {
            "hitPolicy": "first",
            "inputs": in_cols,
            "outputs": out_cols,
            "rules": rules,
            "passThrough": True,
            "inputField": None,
            "outputPath": None,
            "executionMode": "single",
        }
        self.add(node_id, "decisionTableNode", content, name)


def build_jdm(policy: Policy) -> dict[str, Any]:
    """The JDM graph of ``policy`` (every number read from it)."""
    money_dp = _places(policy["rounding.money"].value, "rounding.money") - 2
    if money_dp < 0:
        raise ValueError("rounding.money coarser than a cent is not modelled")
    pct_q: Decimal = policy["rounding.percent"].value
    pct_dp = _places(pct_q, "rounding.percent")
    # A figure x rounds half-up to at most cap (a multiple of the quantum) iff
    # x < cap + quantum / 2: the boundary the counteroffer search inverts.
    half_pct = _num(pct_q / 2)
    # Cents are whole, so a payment rounded to the cent (money_dp == 0) is at most P
    # iff the unrounded payment is below P + 1/2.
    half_money = _num(Decimal(1).scaleb(-money_dp) / 2)

    def money(expr: str) -> str:
        return f"round({expr}, {money_dp})"

    def pct(expr: str) -> str:
        return f"round({expr}, {pct_dp})"

    g = _Graph()
    g.add("case", "inputNode", None, "case")

    # 2. product rules ------------------------------------------------------------
    auto, card = policy.product("auto"), policy.product("card")
    assert auto.max_ltv_pct and auto.min_amount and auto.terms_allowed
    assert card.min_line and card.payment_pct_of_line
    product_outputs = [
        "minScore",
        "maxDtiPct",
        "maxLtvPct",
        "minAmountCents",
        "termsAllowed",
        "minLineCents",
        "paymentPctOfLine",
        "stepCents",
    ]
    g.table(
        "product",
        "product rules",
        [("product", "product")],
        product_outputs,
        [
            (
                "auto",
                [_str("auto")],
                [
                    _num(auto.min_score.value),
                    _num(auto.max_dti_pct.value),
                    _num(auto.max_ltv_pct.value),
                    _cents(auto.min_amount.value),
                    "[" + ", ".join(_num(t) for t in auto.terms_allowed.value) + "]",
                    "null",
                    "null",
                    _cents(auto.counteroffer_step.value),
                ],
            ),
            (
                "card",
                [_str("card")],
                [
                    _num(card.min_score.value),
                    _num(card.max_dti_pct.value),
                    "null",
                    "null",
                    "[]",
                    _cents(card.min_line.value),
                    _num(card.payment_pct_of_line.value),
                    _cents(card.counteroffer_step.value),
                ],
            ),
        ],
    )

    # 3. score band ---------------------------------------------------------------
    floors = sorted(BANDS, key=lambda b: policy[f"scoreBands.{b}"].value, reverse=True)
    band_rows = [("unscored", ["score == null"], [_str("unscored")])]
    band_rows += [
        (band, [f"score >= {_num(policy[f'scoreBands.{band}'].value)}"], [_str(band)])
        for band in floors
    ]
    g.table("band", "score band", [("score", None)], ["band"], band_rows)

    # 4. pricing ------------------------------------------------------------------
    price_rows = []
    for product in ("auto", "card"):
        for band in BANDS:
            pricing = policy.pricing(product, band)
            line = _cents(pricing.line.value) if pricing.line is not None else "null"
            price_rows.append(
                (
                    f"{product}.{band}",
                    [_str(product), _str(band)],
                    [_num(pricing.apr.value), line],
                )
            )
    g.table(
        "pricing",
        "pricing",
        [("product", "product"), ("band", "band")],
        ["aprPct", "bandLineCents"],
        price_rows,
    )

    # 5. capacity -----------------------------------------------------------------
    def amortised(amount: str, term: str, rate: str = "rate") -> str:
        """The unrounded monthly payment, P r (1 + r)^n / ((1 + r)^n - 1), r = APR / 1200
        (12 months x percent); a zero APR repays P / n."""
        grow = f"(1 + {rate}) ^ {term}"
        return f"({rate} == 0 ? {amount} / {term} : {amount} * {rate} * {grow} / ({grow} - 1))"

    g.expressions(
        "capacity",
        "capacity",
        [
            ("rate", "aprPct == null ? null : aprPct / 1200"),
            (
                "assessedLineCents",
                'product == "card" and bandLineCents != null '
                "? min([bandLineCents, requestedLineCents]) : null",
            ),
            (
                "paymentCents",
                'band == "unscored" ? 0 : (product == "auto" ? '
                + money(amortised("requestedAmountCents", "termMonths", "$.rate"))
                + " : "
                + money("$.assessedLineCents * paymentPctOfLine / 100")
                + ")",
            ),
            (
                "dtiPct",
                pct("(monthlyDebtCents + $.paymentCents) * 1200 / annualIncomeCents"),
            ),
            (
                "ltvPct",
                'product == "auto" ? '
                + pct("requestedAmountCents * 100 / vehicleValueCents")
                + " : null",
            ),
        ],
    )

    # 6. checks -------------------------------------------------------------------
    min_tl = _num(policy["thinFile.minTradelines"].value)
    min_hist = _num(policy["thinFile.minHistoryMonths"].value)
    score_pts = _num(policy["margins.scorePoints"].value)
    dti_m = _num(policy["margins.dtiPct"].value)
    ltv_m = _num(policy["margins.ltvPct"].value)
    g.expressions(
        "checks",
        "checks",
        [
            (
                "unusableFile",
                f"score == null or tradelines < {min_tl} or historyMonths < {min_hist} "
                "or unresolvedDisputes > 0",
            ),
            ("scoreFails", "score != null and score < minScore"),
            ("dtiFails", "dtiPct > maxDtiPct"),
            ("ltvFails", "maxLtvPct != null and ltvPct > maxLtvPct"),
            (
                "inMargin",
                f"(score != null and score >= minScore and score <= minScore + {score_pts}) "
                f"or (dtiPct >= maxDtiPct - {dti_m} and dtiPct <= maxDtiPct) "
                f"or (maxLtvPct != null and ltvPct >= maxLtvPct - {ltv_m} "
                "and ltvPct <= maxLtvPct)",
            ),
            (
                "needsSearch",
                'score != null and band != "unscored" and not $.scoreFails '
                "and ($.dtiFails or $.ltvFails)",
            ),
        ],
    )

    # 7. counteroffer search --------------------------------------------------------
    # payCapCents: the largest whole-cent payment whose DTI rounds to at most the cap.
    # Per term, the largest k (amount = k x step) with an unrounded payment below
    # payCapCents + 1/2 and an unrounded LTV below cap + quantum/2, at most the request,
    # at least the product minimum. Terms ascend (the policy loader checks), so the
    # first option with the largest k is the shortest term among the ties.
    factor = "(rate == 0 ? 1 / # : rate * (1 + rate) ^ # / ((1 + rate) ^ # - 1))"
    auto_k = (
        "min(["
        "floor(requestedAmountCents / stepCents), "
        f"ceil(($.payCapCents + {half_money}) / (stepCents * {factor})) - 1, "
        f"ceil((maxLtvPct + {half_pct}) * vehicleValueCents / (100 * stepCents)) - 1"
        "])"
    )
    card_k = (
        "min(["
        "ceil(assessedLineCents / stepCents) - 1, "
        f"ceil(($.payCapCents + {half_money}) * 100 / (stepCents * paymentPctOfLine)) - 1"
        "])"
    )
    g.expressions(
        "search",
        "counteroffer search",
        [
            (
                "payCapCents",
                f"needsSearch ? ceil((maxDtiPct + {half_pct}) * annualIncomeCents / 1200 "
                "- monthlyDebtCents) - 1 : null",
            ),
            (
                "autoOptions",
                'needsSearch and product == "auto" ? filter(map(filter(termsAllowed, '
                f"# >= termMonths), {{term: #, k: {auto_k}}}), "
                "#.k >= ceil(minAmountCents / stepCents)) : []",
            ),
            ("autoBestK", "len($.autoOptions) > 0 ? max(map($.autoOptions, #.k)) : null"),
            (
                "autoBest",
                "$.autoBestK != null ? filter($.autoOptions, #.k == $.autoBestK)[0] : null",
            ),
            (
                "cardK",
                f'needsSearch and product == "card" ? {card_k} : null',
            ),
            (
                "offerTermMonths",
                "$.autoBest != null ? $.autoBest.term : null",
            ),
            (
                "offerAmountCents",
                "$.autoBest != null ? $.autoBest.k * stepCents : null",
            ),
            (
                "offerLineCents",
                "$.cardK != null and $.cardK >= ceil(minLineCents / stepCents) "
                "? $.cardK * stepCents : null",
            ),
        ],
    )

    # The offer's own figures, and whether one step more would fail (the closed form's
    # self-check: the offer passes every cap and is the largest that does).
    def auto_pay(amount: str) -> str:
        return money(amortised(amount, "offerTermMonths"))

    def dti_of(payment: str) -> str:
        return pct(f"(monthlyDebtCents + {payment}) * 1200 / annualIncomeCents")

    def auto_passes(amount: str) -> str:
        return (
            f"{dti_of(auto_pay(amount))} <= maxDtiPct and "
            f"{pct(f'{amount} * 100 / vehicleValueCents')} <= maxLtvPct"
        )

    def card_passes(line: str) -> str:
        return f"{dti_of(money(f'{line} * paymentPctOfLine / 100'))} <= maxDtiPct"

    g.expressions(
        "offer",
        "offer check",
        [
            ("hasOffer", "offerAmountCents != null or offerLineCents != null"),
            (
                "offerVerified",
                "offerAmountCents != null ? ("
                + auto_passes("offerAmountCents")
                + " and (offerAmountCents + stepCents > requestedAmountCents or not ("
                + auto_passes("(offerAmountCents + stepCents)")
                + "))) : (offerLineCents != null ? ("
                + card_passes("offerLineCents")
                + " and (offerLineCents + stepCents >= assessedLineCents or not ("
                + card_passes("(offerLineCents + stepCents)")
                + "))) : true)",
            ),
        ],
    )

    # 8. decide: one row per step, in the policy's order ---------------------------
    passes_all = "score != null and not scoreFails and not dtiFails and not ltvFails"
    step_rules = {
        "referUnusableFile": ("unusableFile", "refer"),
        "declineHardFailure": (
            "score != null and (scoreFails or ((dtiFails or ltvFails) and not hasOffer))",
            "decline",
        ),
        "counteroffer": (
            "score != null and not scoreFails and (dtiFails or ltvFails) and hasOffer",
            "counteroffer",
        ),
        "referWithinMargin": (f"{passes_all} and inMargin", "refer"),
        "approve": (f"{passes_all} and not inMargin", "approve"),
    }
    g.table(
        "decide",
        "decide (policy steps, in order)",
        [("step condition", None)],
        ["decision", "step"],
        [
            (step, [step_rules[step][0]], [_str(step_rules[step][1]), _str(step)])
            for step in policy["steps"].value
        ],
    )

    # 9. the decision -----------------------------------------------------------------
    g.expressions(
        "decision",
        "decision",
        [
            ("decision", "decision"),
            ("step", "step"),
            ("band", "band"),
            ("dtiPct", "dtiPct"),
            ("ltvPct", "ltvPct"),
            ("apr", 'decision == "approve" or decision == "counteroffer" ? aprPct : null'),
            (
                "amountCents",
                'product != "auto" ? null : (decision == "approve" ? requestedAmountCents '
                ': (decision == "counteroffer" ? offerAmountCents : null))',
            ),
            (
                "termMonths",
                'product != "auto" ? null : (decision == "approve" ? termMonths '
                ': (decision == "counteroffer" ? offerTermMonths : null))',
            ),
            (
                "lineCents",
                'product != "card" ? null : (decision == "approve" ? assessedLineCents '
                ': (decision == "counteroffer" ? offerLineCents : null))',
            ),
            ("offerVerified", "offerVerified"),
        ],
        pass_through=False,
    )
    g.add("result", "outputNode", None, "result")
    return {
        "contentType": "application/vnd.gorules.decision",
        "metadata": {
            "generatedBy": "benchmarks/peers/jdm.py",
            "policy": policy.name,
            "version": policy.version,
            "effectiveDate": policy.effective_date.isoformat(),
            "sha256": policy.sha256,
        },
        "nodes": g.nodes,
        "edges": g.edges,
    }


def render(policy: Policy) -> str:
    """The JDM file's exact text (stable: sorted nothing, 2-space indent, final newline)."""
    return json.dumps(build_jdm(policy), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    JDM_PATH.write_text(render(default_policy()), encoding="utf-8")
    print(f"wrote {JDM_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
