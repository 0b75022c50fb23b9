"""The system prompt a model can follow, built from the data it must apply.

:func:`methodology_prompt` writes the Spark methodology (steps 1-5, the four tools,
never a prohibited basis) for a model that records its decision *and* its reason
codes (``record_decision(decision={...}, reasonCodes=[...])``), the tools and the
catalogue then supplying the wording, the figures and the policy citation. Everything
the model must choose among comes from data, never from a list written here:

- the reason codes, their kind (adverse or referral), category, Regulation B reason,
  the figures each states and when each applies (its approved wording, its bureau
  key-factor code, its source) come from the reason catalogue
  (:class:`~credit.catalogue.Catalogue`);
- the decision steps and their order (``steps``), the order of the principal reasons
  (``factorOrder``), and every parameter the model will read through ``get_policy``
  (its key, unit and description; never its value, which the tool serves for the case
  date) come from the policy (:class:`~credit.policy.Policy`);
- the Decision's fields, which are optional and the values each may take come from the
  Decision model's JSON schema (:class:`~credit.models.Decision`), less the fields the
  tools fill in;
- the prohibited bases and their proxies come from the prohibited-terms data
  (:class:`~credit.fairness_terms.ProhibitedTerms`).

What is written here is the methodology's prose: one instruction for each decision
step and each principal-reason kind the policy format defines, keyed by its name. A
policy that names a step or a kind with no instruction here is refused
(:class:`~credit.errors.PolicyError`), never skipped. A policy key the prose cites is
written ```key``` and must exist in the policy.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from credit.catalogue import Catalogue, ReasonEntry, default_catalogue
from credit.errors import PolicyError
from credit.fairness_terms import ProhibitedTerms, default_prohibited_terms
from credit.models import Decision
from credit.policy import Policy
from credit.tools.governed import READ_TOOLS, TOOL_NAMES

__all__ = [
    "FACTOR_INSTRUCTIONS",
    "REASON_CODES_ARGUMENT",
    "STEP_INSTRUCTIONS",
    "SUPPLIED_BY_TOOLS",
    "cited_policy_keys",
    "decision_format",
    "methodology_prompt",
]

REASON_CODES_ARGUMENT: Final = "reasonCodes"
"""The name of record_decision's second argument: the reason codes, in order."""

SUPPLIED_BY_TOOLS: Final = ("factors", "policyBasis")
"""The Decision fields record_decision fills in from the reason codes and the policy
in force (the approved wordings with the case's figures; the policy citation)."""

# Methodology step 4, one instruction per decision step of the policy format
# (credit.policy.DECISION_STEPS), in the words of the reference policy text. Product
# parameters are written ``products.<product>.<name>``.
STEP_INSTRUCTIONS: Final = {
    "referUnusableFile": (
        "Refer, never guess, when the bureau returned no score, the file is thin "
        "(fewer tradelines than `thinFile.minTradelines`, or less history than "
        "`thinFile.minHistoryMonths`), or any dispute on the file is unresolved."
    ),
    "declineHardFailure": (
        "Decline on a hard policy failure that no adjusted terms can cure: the score "
        "below `products.<product>.minScore`; or the DTI over "
        "`products.<product>.maxDtiPct`, or the auto LTV over `products.auto.maxLtvPct`, "
        "when no counteroffer passes every cap."
    ),
    "counteroffer": (
        "Counteroffer when the request fails only on DTI and/or LTV and adjusted terms "
        "pass every cap. Auto: among `products.auto.termsAllowed` no shorter than the "
        "term requested, the largest amount that is a multiple of "
        "`products.auto.counterofferStep`, at most the amount requested and at least "
        "`products.auto.minAmount`; ties go to the shortest term. Card: the largest line "
        "that is a multiple of `products.card.counterofferStep`, at least "
        "`products.card.minLine`, below the line that would have been granted. The "
        "Decision states the DTI and LTV of the request as made; the offer goes in terms."
    ),
    "referWithinMargin": (
        "Refer a result within a review margin, judged on the request as made: the "
        "score from the product minimum to the minimum plus `margins.scorePoints`; the "
        "DTI from the cap less `margins.dtiPct` to the cap; the auto LTV from the cap "
        "less `margins.ltvPct` to the cap (all inclusive)."
    ),
    "approve": (
        "Otherwise approve within policy at the band's rate (auto: the amount and term "
        "requested, at `pricing.auto.<band>.apr`) or line (card: "
        "`pricing.card.<band>.line` capped at the line requested, at "
        "`pricing.card.<band>.apr`)."
    ),
}

# Methodology step 5: the principal-reason kinds of the policy's factorOrder
# (credit.policy.FACTOR_KINDS).
FACTOR_INSTRUCTIONS: Final = {
    "scoreBelowMinimum": "the score below the product minimum, where it failed",
    "dtiOverCap": "the DTI over the cap, where it failed",
    "ltvOverCap": "the auto LTV over the cap, where it failed",
    "bureauKeyFactors": (
        "the bureau's key factors for the score (the credit report's keyFactors, in the "
        "bureau's order), only where the score was a principal reason"
    ),
}

_KEY = re.compile(r"`([A-Za-z][\w<>.-]*)`")


def cited_policy_keys(text: str) -> tuple[str, ...]:
    """The policy keys (or sections of keys, ``scoreBands``) a text cites as
    ```key```, ``<product>`` and ``<band>`` left as written."""
    return tuple(dict.fromkeys(_KEY.findall(text)))


def _expand(key: str, policy: Policy) -> list[str]:
    """The policy keys a cited key stands for (``<product>``, ``<band>`` expanded)."""
    keys = [key]
    for slot in ("<product>", "<band>"):
        if any(slot in k for k in keys):
            values = sorted({p.split(".")[1] for p in policy.params if p.startswith(_prefix(slot))})
            keys = [k.replace(slot, v) for k in keys for v in values]
    return keys


def _prefix(slot: str) -> str:
    return "products." if slot == "<product>" else "scoreBands."


def _check_cited(text: str, policy: Policy, where: str) -> None:
    for key in cited_policy_keys(text):
        expanded = _expand(key, policy)
        if not any(k == p or p.startswith(f"{k}.") for k in expanded for p in policy.params):
            raise PolicyError(
                f"the methodology cites {key}, which policy {policy.label} does not have",
                file=policy.source,
                key=where,
            )


def _instruction(table: Mapping[str, str], name: str, policy: Policy, where: str) -> str:
    if name not in table:
        raise PolicyError(
            f"the policy names {name!r}, for which the methodology has no instruction",
            file=policy.source,
            key=where,
        )
    text = table[name]
    _check_cited(text, policy, where)
    return text


# ------------------------------------------------------------------ the Decision


def _type(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> tuple[str, bool]:
    """A field's type as the prompt writes it, and whether null is allowed."""
    if "$ref" in schema:
        target = defs[str(schema["$ref"]).rsplit("/", 1)[-1]]
        inner = ", ".join(
            f"{name}?" if name not in target.get("required", ()) else name
            for name in target.get("properties", {})
        )
        return "{" + inner + "}", False
    if "enum" in schema:
        return " | ".join(f'"{v}"' for v in schema["enum"]), False
    if "anyOf" in schema:
        kinds = [_type(s, defs) for s in schema["anyOf"] if s.get("type") != "null"]
        nullable = any(s.get("type") == "null" for s in schema["anyOf"])
        names = [k for k, _ in kinds]
        if set(names) == {"number", "string"}:
            return "number (or a decimal string)", nullable
        return " | ".join(names), nullable
    if schema.get("type") == "array":
        return f"[{_type(schema.get('items', {}), defs)[0]}]", False
    return str(schema.get("type", "value")), False


def decision_format(supplied: Collection[str] = SUPPLIED_BY_TOOLS) -> list[str]:
    """One line per Decision field the model writes: ``name?: type`` (``?`` optional),
    from the Decision model's JSON schema, less the ``supplied`` fields."""
    schema = Decision.model_json_schema(by_alias=True)
    defs = schema.get("$defs", {})
    required = set(schema.get("required", ()))
    lines = []
    for name, field in schema["properties"].items():
        if name in supplied:
            continue
        shown, nullable = _type(field, defs)
        optional = "" if name in required else "?"
        lines.append(f"{name}{optional}: {shown}{' | null' if nullable else ''}")
    return lines


# ------------------------------------------------------------------ the catalogue


def _reason_line(entry: ReasonEntry) -> str:
    applies = entry.wordings[0]
    parts = [f'{entry.code}: "{applies}"']
    if entry.bureau_code is not None:
        parts.append(f"when the bureau's key factor code {entry.bureau_code!r} is on the file")
    if entry.states:
        parts.append(f"states {', '.join(entry.states)}")
    parts.append(f"Reg B: {entry.reg_b}")
    parts.append(f"source: {entry.reference}")
    return "  - " + "; ".join(parts)


def _reasons(catalogue: Catalogue, kind: str) -> list[str]:
    by_category: dict[str, list[ReasonEntry]] = {}
    for code in catalogue.codes(kind):
        entry = catalogue[code]
        by_category.setdefault(entry.category, []).append(entry)
    lines = []
    for category, entries in by_category.items():
        lines.append(f"  {category}:")
        lines.extend(_reason_line(e) for e in entries)
    return lines


# ------------------------------------------------------------------ the policy


def _parameters(policy: Policy) -> list[str]:
    lines = []
    for key, param in policy.params.items():
        about = f": {param.description}" if param.description else ""
        lines.append(f"  {key} ({param.unit}){about}")
    return lines


def _bands(policy: Policy) -> list[str]:
    floors = [
        (p.value, k.split(".", 1)[1])
        for k, p in policy.params.items()
        if k.startswith("scoreBands.")
    ]
    return [band for _, band in sorted(floors, reverse=True)]


# ------------------------------------------------------------------ the prompt


def _names(items: Sequence[str]) -> str:
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def methodology_prompt(
    policy: Policy,
    catalogue: Catalogue | None = None,
    terms: ProhibitedTerms | None = None,
    *,
    supplied: Collection[str] = SUPPLIED_BY_TOOLS,
) -> str:
    """The Spark system prompt for ``policy`` (build it from the policy in force on the
    case date), ``catalogue`` (default: the bundled reason catalogue) and ``terms``
    (default: the bundled prohibited terms). ``supplied`` are the Decision fields the
    tools fill in, which the model does not write."""
    catalogue = catalogue or default_catalogue()
    terms = terms or default_prohibited_terms()
    products = [catalogue.product_names[p] for p in sorted(catalogue.product_names)]
    reads = _names(list(READ_TOOLS))
    steps = policy["steps"]
    factor_order = policy["factorOrder"]
    step_lines = [
        f"   {i}. {name}: {_instruction(STEP_INSTRUCTIONS, name, policy, 'steps')}"
        for i, name in enumerate(steps.value, start=1)
    ]
    factor_lines = [
        f"   {i}. {name}: {_instruction(FACTOR_INSTRUCTIONS, name, policy, 'factorOrder')}"
        for i, name in enumerate(factor_order.value, start=1)
    ]
    bases = _names([b.label for b in terms.bases])
    proxies = _names([p.label for p in terms.proxies])
    written = [f"  {line}" for line in decision_format(supplied)]
    filled = _names([name for name in supplied if name]) if supplied else ""
    lines = [
        f"You are Spark, a consumer credit underwriter ({_names(products)}).",
        "",
        "Methodology",
        f"1. Pull the application, the credit report and the policy ({reads}).",
        f"2. Band the score ({' / '.join(_bands(policy))}; unscored if no score was "
        "returned), by the `scoreBands` floors.",
        "3. Assess capacity: the debt-to-income ratio, and for auto the loan-to-value, "
        "against the policy maximums, each percentage rounded half-up to "
        "`rounding.percent` (the rounded figure is the one compared and stated).",
        "4. Decide: apply the policy's steps (`steps`) in this order; the first that "
        "applies decides.",
        *step_lines,
        "5. Record the decision and its reason codes. For a decline or counteroffer the "
        "adverse reason codes are the principal reasons, in the policy's `factorOrder` "
        "and at most `maxReasons`:",
        *factor_lines,
        "   For a referral, the referral reason codes that apply, in the order listed "
        "below. An approval has no reason codes.",
        "",
        f"Reason codes (the catalogue {catalogue.name} v{catalogue.version}; "
        f"{catalogue.reference}). Each is given with the approved wording the tools will "
        "fill with the case's figures, which says when it applies.",
        "Adverse-action reasons (a decline or counteroffer; they reach the applicant's "
        "notice, so each must be accurate and file-grounded):",
        *_reasons(catalogue, "adverse"),
        "Referral reasons (a refer; for the human reviewer, never sent to the applicant):",
        *_reasons(catalogue, "referral"),
        "",
        "The Decision (record_decision's decision argument; ? marks an optional field):",
        *written,
        "  terms is required for approve and counteroffer and absent for decline and "
        "refer; ltvPct is for auto only (null for card).",
        "  confidence: 1 - 0.5 / (1 + m) to the hundredth, m the smallest headroom to a "
        "threshold the decision compared, in units of its review margin (score: "
        "`margins.scorePoints` + 1 points; DTI: `margins.dtiPct`; LTV: `margins.ltvPct`); "
        "0.50 for a referral of an unusable file.",
    ]
    if filled:
        lines.append(
            f"  Do not write {filled}: record_decision fills them in from your reason codes "
            "and the policy in force."
        )
    lines += [
        "",
        "The policy (get_policy serves it for the case date; read every value there, "
        "never from this text). Its parameters, by key (unit):",
        *_parameters(policy),
        "",
        "Rules",
        f"- The tools are the only ground truth. You have exactly {len(TOOL_NAMES)}: "
        f"{reads} (read) and record_decision (commit).",
        "- Call record_decision exactly once: "
        f"record_decision(decision={{...}}, {REASON_CODES_ARGUMENT}=[...]).",
        f"- Never consider or cite a prohibited basis ({bases}) or a proxy for one "
        f"({proxies}). You are given no such data; if any reached you, ignore it.",
        "- After recording, answer with the decision you recorded, as JSON.",
    ]
    text = "\n".join(lines) + "\n"
    _check_cited(text, policy, "methodology")
    return text
