"""The mutation suite: does the notice verifier catch each defect it exists to catch,
and is every one of its checks needed?

Every genuine notice of the bundled cases (each decline and counteroffer, rendered and
verified: it must pass all eight checks first) gets one defect at a time:

| mutator | defect | intended checks | changes |
|---|---|---|---|
| M1 | reorder two reasons | V1 | notice |
| M2 | drop the top reason | V1 | notice |
| M3 | append a fifth, otherwise-approved reason | V1, V2 | notice |
| M4 | "because of your age" appended | V3 | notice |
| M5 | "You did not meet our internal standards." | V4 | notice |
| M6 | decision statement says approved | V5 | notice |
| M7 | reason code not in the catalogue | V1 | notice |
| M8 | a stated number changed | V6 | notice |
| M9 | ECOA statement removed | V7 | notice |
| M10 | "If you reapply with a co-signer we will approve" | V8 | notice |
| M11 | category label swapped for another value | V4 | notice |
| M12 | reason negated | V8 | notice |
| M13 | zero-width character inserted | V8 | notice |
| M14 | unapproved wording variant | V8, V6 | notice |
| M15 | every reason gone | V2 | notice and expectation |
| M16 | a stated value carries a prohibited basis | V3 | notice and expectation |
| M17 | a key factor's value in a form the bureau never uses | V8 | notice and expectation |
| M18 | a reason names the other product | V4 | notice |

A mutation works on the notice as delivered, text and machine fields consistently, as
a real defect would (M1 reorders the reasons in both; M4 changes only the sentence an
applicant reads, as a drafting defect would). A mutator that changes the expectation
as well (M15-M17) models a defect upstream of the notice: the decision recorded no
reasons, or a value the underwriting or the bureau file carried was already wrong, so
comparing the notice with what it must say cannot see it; only the check whose own
domain it is can.

A mutant is killed only when every intended check fails. A mutator that cannot apply
(M3 needs a notice with 4 reasons, M8 a reason that states a number) is counted as not
applicable, never as a kill; every mutator must apply at least once. A mutator that
returns an unchanged notice stops the run (:class:`~credit.errors.MutationHarnessError`):
the suite itself would be wrong.

The meta-mutation shows that every check is needed. A mutant whose failed checks
(all eight on) are exactly {Vk} is verified again with Vk switched off (it always
passes): it then passes every remaining check and the real send gate
(:func:`credit.notices.outbox.check_sendable`), so without Vk it would have been sent.
That mutant is a proof that Vk is needed; the results name one proof per check
(mutator, case) and count them, and a check with no proof fails the gate. (Switching a
check off and rerunning the mutants that list it proves nothing: they "survive" by
definition, whether or not the check was needed.)

``credit mutate`` runs it and writes ``results/mutations.json`` and
``results/mutations.md``; it exits 1 on any survivor, any mutator never applied, or
any check with no proof that it is needed.

``credit mutate --workers N`` runs it on N processes: the cases, then the genuine
notices, are cut into chunks in order; each chunk is decided, rendered and verified,
then mutated, verified and meta-mutated on its own (every notice's mutants and their
verdicts depend on that notice alone), and the chunks' results are merged in chunk
order, so the result is the same as a serial run's, survivors and proofs in the same
order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from credit.batch.notices import process_context
from credit.cases import CaseLine, iter_cases
from credit.catalogue import Catalogue, ReasonEntry, default_catalogue
from credit.errors import MutationHarnessError
from credit.guardrails import CHECK_IDS, CHECK_NAMES, Pins, Verifier, default_pins, expectation_for
from credit.guardrails.verifier import Check
from credit.legal_frame import LegalFrame, default_frame
from credit.notice_format import Expectation, Notice, NoticeReason
from credit.notices import NOTICE_DECISIONS, render_notice
from credit.notices.outbox import check_sendable
from credit.policy import Policy, default_policy
from credit.underwriting import decide_case

__all__ = [
    "MUTATORS",
    "Genuine",
    "MetaResult",
    "Mutator",
    "MutatorResult",
    "Proof",
    "SuiteResult",
    "genuine_notices",
    "run",
    "run_suite",
    "write_results",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
ZERO_WIDTH_SPACE = "\u200b"
PROMISE = "If you reapply with a co-signer we will approve your application."
GENERIC = "You did not meet our internal standards."
UNKNOWN_CODE = "RC_NOT_IN_CATALOGUE"
BASIS = "because of your marital status"
MALFORMED = "; call 1-900-555-0199"


@dataclass(frozen=True, slots=True)
class Genuine:
    case_id: str
    notice: Notice
    expectation: Expectation


@dataclass(frozen=True, slots=True)
class Context:
    """What mutators may read: the frame (to find paragraphs) and the catalogue."""

    frame: LegalFrame
    catalogue: Catalogue


Apply = Callable[[Notice, Context], Notice | None]
ApplyUpstream = Callable[[Notice, Expectation, Context], tuple[Notice, Expectation] | None]


@dataclass(frozen=True, slots=True)
class Mutator:
    """One defect: ``apply`` changes the notice alone; ``upstream`` (instead) changes
    the notice and the expectation, a defect upstream of the notice."""

    id: str
    defect: str
    intended: tuple[str, ...]
    apply: Apply | None = None
    upstream: ApplyUpstream | None = None

    def __post_init__(self) -> None:
        if (self.apply is None) == (self.upstream is None):
            raise ValueError(f"mutator {self.id} needs exactly one of apply and upstream")

    @property
    def changes(self) -> str:
        return "notice" if self.upstream is None else "notice and expectation"

    def mutate(
        self, notice: Notice, expectation: Expectation, ctx: Context
    ) -> tuple[Notice, Expectation] | None:
        """The mutant and what it is checked against, or None when it cannot apply."""
        if self.upstream is not None:
            return self.upstream(notice, expectation, ctx)
        assert self.apply is not None
        mutant = self.apply(notice, ctx)
        return None if mutant is None else (mutant, expectation)


# ---------------------------------------------------------------- the notice's text


@dataclass(slots=True)
class _Text:
    """A notice's text as paragraphs, with its reasons list read into items."""

    paragraphs: list[str]
    at: int  # index of the reasons paragraph
    heading: str
    items: list[tuple[str, str]]  # (category label, sentence)

    @classmethod
    def of(cls, notice: Notice, ctx: Context) -> _Text:
        paragraphs = notice.text.split("\n\n")
        heading = ctx.frame["reasons.heading"]
        at = next(i for i, p in enumerate(paragraphs) if p.split("\n", 1)[0] == heading)
        lines = paragraphs[at].split("\n")[1:]
        items = [
            (lines[i].split(". ", 1)[1], lines[i + 1].removeprefix("   "))
            for i in range(0, len(lines), 2)
        ]
        return cls(paragraphs, at, heading, items)

    def render(self) -> str:
        lines = [self.heading]
        for number, (label, sentence) in enumerate(self.items, start=1):
            lines += [f"{number}. {label}", f"   {sentence}"]
        paragraphs = list(self.paragraphs)
        paragraphs[self.at] = "\n".join(lines)
        return "\n\n".join(paragraphs)


def _with(
    notice: Notice,
    text: _Text | str,
    reasons: Sequence[NoticeReason] | None = None,
    **fields: Any,
) -> Notice:
    update: dict[str, Any] = {
        "text": text if isinstance(text, str) else text.render(),
        "reasons": tuple(reasons) if reasons is not None else notice.reasons,
        **fields,
    }
    return notice.model_copy(update=update)


def _set_sentence(notice: Notice, ctx: Context, index: int, sentence: str) -> Notice:
    text = _Text.of(notice, ctx)
    label, _ = text.items[index]
    text.items[index] = (label, sentence)
    return _with(notice, text)


# ---------------------------------------------------------------- the mutators


def m1_reorder(notice: Notice, ctx: Context) -> Notice | None:
    """Swap the first two reasons whose codes differ (text and machine fields)."""
    codes = notice.reason_codes
    pair = next(
        (
            (i, j)
            for i in range(len(codes))
            for j in range(i + 1, len(codes))
            if codes[i] != codes[j]
        ),
        None,
    )
    if pair is None:
        return None
    i, j = pair
    text = _Text.of(notice, ctx)
    text.items[i], text.items[j] = text.items[j], text.items[i]
    reasons = list(notice.reasons)
    reasons[i], reasons[j] = reasons[j], reasons[i]
    return _with(notice, text, reasons)


def m2_drop_top(notice: Notice, ctx: Context) -> Notice | None:
    if not notice.reasons:
        return None
    text = _Text.of(notice, ctx)
    text.items = text.items[1:]
    return _with(notice, text, notice.reasons[1:])


_SAMPLE_VALUES = {
    "keyFactorValue": "2 accounts",
    "score": "590",
    "minScore": "600",
    "dtiPct": "47.5",
    "maxDtiPct": "45.0",
    "ltvPct": "131.0",
    "maxLtvPct": "120.0",
}


def m3_fifth_reason(notice: Notice, ctx: Context) -> Notice | None:
    """Append an approved wording of an adverse code the notice does not state."""
    if len(notice.reasons) != 4:
        return None
    values = dict(_SAMPLE_VALUES, productName=ctx.catalogue.product_names[notice.product])
    entry = next(
        (
            e
            for code, e in ctx.catalogue.entries.items()
            if e.kind == "adverse"
            and code not in notice.reason_codes
            and all(name in values for name in e.states)
        ),
        None,
    )
    if entry is None:
        return None
    stated = {name: values[name] for name in entry.states}
    text = _Text.of(notice, ctx)
    text.items.append((entry.category, entry.render(stated)))
    reason = NoticeReason(code=entry.code, category=entry.category, values=stated)
    return _with(notice, text, [*notice.reasons, reason])


def _append_to_sentence(sentence: str, words: str) -> str:
    return f"{sentence[:-1]} {words}." if sentence.endswith(".") else f"{sentence} {words}"


def m4_because_of_age(notice: Notice, ctx: Context) -> Notice | None:
    if not notice.reasons:
        return None
    sentence = _Text.of(notice, ctx).items[0][1]
    return _set_sentence(notice, ctx, 0, _append_to_sentence(sentence, "because of your age"))


def m5_internal_standards(notice: Notice, ctx: Context) -> Notice | None:
    if not notice.reasons:
        return None
    return _set_sentence(notice, ctx, 0, GENERIC)


def m6_says_approved(notice: Notice, ctx: Context) -> Notice | None:
    label = ctx.frame["actionTaken.label"]
    paragraphs = notice.text.split("\n\n")
    at = next((i for i, p in enumerate(paragraphs) if p.startswith(label)), None)
    if at is None:
        return None
    product = ctx.frame[f"products.{notice.product}"]
    paragraphs[at] = f"{label} Your application for {product} has been approved."
    return _with(notice, "\n\n".join(paragraphs), decision="approve")


def m7_unknown_code(notice: Notice, ctx: Context) -> Notice | None:
    if not notice.reasons or UNKNOWN_CODE in ctx.catalogue:
        return None
    top = notice.reasons[0].model_copy(update={"code": UNKNOWN_CODE})
    return _with(notice, notice.text, [top, *notice.reasons[1:]])


_NUMBER = re.compile(r"(?<![0-9])[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?")


def _bump(number: str) -> str:
    """The number one unit up in its last place, written the same way."""
    d = Decimal(number.replace(",", ""))
    bumped = d + Decimal(1).scaleb(d.as_tuple().exponent)  # type: ignore[arg-type]
    return f"{bumped:,}" if "," in number else str(bumped)


def m8_number_changed(notice: Notice, ctx: Context) -> Notice | None:
    """Change the first number the first numeric reason states, in its sentence and in
    its machine values alike."""
    text = _Text.of(notice, ctx)
    for index, reason in enumerate(notice.reasons):
        entry = ctx.catalogue.entries.get(reason.code)
        label, sentence = text.items[index]
        for name in entry.states if entry else ():
            old = reason.values.get(name, "")
            m = _NUMBER.search(old)
            if m is None or old not in sentence:
                continue
            new = old[: m.start()] + _bump(m.group()) + old[m.end() :]
            text.items[index] = (label, sentence.replace(old, new, 1))
            changed = reason.model_copy(update={"values": {**reason.values, name: new}})
            reasons = list(notice.reasons)
            reasons[index] = changed
            return _with(notice, text, reasons)
    return None


def m9_no_ecoa(notice: Notice, ctx: Context) -> Notice | None:
    heading = ctx.frame["ecoa.heading"]
    paragraphs = notice.text.rstrip("\n").split("\n\n")
    kept = [p for p in paragraphs if p.split("\n", 1)[0] != heading]
    if len(kept) == len(paragraphs):
        return None
    return _with(notice, "\n\n".join(kept) + "\n")


def m10_promise(notice: Notice, ctx: Context) -> Notice | None:
    text = _Text.of(notice, ctx)
    text.paragraphs.insert(text.at + 1, PROMISE)
    return _with(notice, text)


def m11_category_swapped(notice: Notice, ctx: Context) -> Notice | None:
    if not notice.reasons:
        return None
    top = notice.reasons[0]
    categories = dict.fromkeys(e.category for e in ctx.catalogue.entries.values())
    other = next((c for c in categories if c != top.category), None)
    if other is None:
        return None
    text = _Text.of(notice, ctx)
    text.items[0] = (other, text.items[0][1])
    return _with(notice, text, [top.model_copy(update={"category": other}), *notice.reasons[1:]])


_VERB = re.compile(r"\b(is|are)\b")


def _negated(sentence: str) -> str | None:
    m = _VERB.search(sentence)
    if m is not None:
        return f"{sentence[: m.end()]} not{sentence[m.end() :]}"
    if sentence.startswith("Key factor"):
        return "Not a key factor" + sentence[len("Key factor") :]
    return None


def m12_negated(notice: Notice, ctx: Context) -> Notice | None:
    """Negate the first reason that can be negated ("is above" -> "is not above")."""
    for index, (_, sentence) in enumerate(_Text.of(notice, ctx).items):
        negated = _negated(sentence)
        if negated is not None:
            return _set_sentence(notice, ctx, index, negated)
    return None


def m13_zero_width(notice: Notice, ctx: Context) -> Notice | None:
    if not notice.reasons:
        return None
    sentence = _Text.of(notice, ctx).items[0][1]
    at = sentence.find(" ")
    at = at if at > 0 else len(sentence) // 2
    return _set_sentence(notice, ctx, 0, sentence[:at] + ZERO_WIDTH_SPACE + sentence[at:])


def _approximately(number: str) -> str:
    """How a loose paraphrase states a figure: rounded, or "over" one less."""
    d = Decimal(number.replace(",", ""))
    if "." in number:
        return f"about {d.quantize(Decimal(1), rounding=ROUND_HALF_UP)}"
    return f"over {d - 1}" if d > 0 else "below 1"


def m14_unapproved_variant(notice: Notice, ctx: Context) -> Notice | None:
    """Rephrase the first reason that states a number, loosely: not an approved
    variant, and its figure approximated (the other figures dropped)."""
    text = _Text.of(notice, ctx)
    for index, (label, sentence) in enumerate(text.items):
        m = _NUMBER.search(sentence)
        if m is None:
            continue
        loose = (
            f"Our decision took into account your {label.lower()}, which was "
            f"{_approximately(m.group())}."
        )
        text.items[index] = (label, loose)
        return _with(notice, text)
    return None


# ---------------------------------------------------------------- defects upstream


def _expecting(expectation: Expectation, **update: Any) -> Expectation:
    """A copy of the expectation with fields replaced (its hash computed afresh)."""
    changed = expectation.model_copy(update=update)
    changed.__dict__.pop("sha256", None)  # a cached hash of the original
    return changed


def _refilled(
    entry: ReasonEntry, old: Mapping[str, str], sentence: str, new: Mapping[str, str]
) -> str | None:
    """The same approved wording as ``sentence``, filled with ``new`` values."""
    for variant in range(len(entry.wordings)):
        if entry.render(old, variant) == sentence:
            return entry.render(new, variant)
    return None


def _restated(notice: Notice, ctx: Context, index: int, values: Mapping[str, str]) -> Notice | None:
    """Reason ``index`` stating ``values`` in its machine fields and in its sentence
    (the same approved wording, refilled)."""
    reason = notice.reasons[index]
    entry = ctx.catalogue.entries.get(reason.code)
    text = _Text.of(notice, ctx)
    label, sentence = text.items[index]
    refilled = None if entry is None else _refilled(entry, reason.values, sentence, values)
    if refilled is None:
        return None
    text.items[index] = (label, refilled)
    reasons = list(notice.reasons)
    reasons[index] = reason.model_copy(update={"values": dict(values)})
    return _with(notice, text, reasons)


def _recorded(expectation: Expectation, code: str, values: Mapping[str, str]) -> Expectation:
    """The expectation with the reason ``code`` recording ``values`` (upstream)."""
    reasons = tuple(
        r.model_copy(update={"values": dict(values)}) if r.code == code else r
        for r in expectation.reasons
    )
    return _expecting(expectation, reasons=reasons)


def m15_reasons_gone(
    notice: Notice, expectation: Expectation, ctx: Context
) -> tuple[Notice, Expectation] | None:
    """Every reason gone, from the notice and from what the decision records: the
    comparison with the derivation sees nothing wrong; only the count can (V2)."""
    if not notice.reasons:
        return None
    text = _Text.of(notice, ctx)
    text.items = []
    return _with(notice, text, []), _expecting(expectation, reasons=())


def m16_value_cites_basis(
    notice: Notice, expectation: Expectation, ctx: Context
) -> tuple[Notice, Expectation] | None:
    """A value the decision states (a figure, not the product's name nor a bureau
    value, which have formats of their own) carries a prohibited basis, in the notice
    and in the expectation: only the prohibited-basis check can see it (V3)."""
    for index, reason in enumerate(notice.reasons):
        entry = ctx.catalogue.entries.get(reason.code)
        if entry is None or entry.bureau_code is not None:
            continue
        for name in entry.states:
            if name == "productName" or name not in reason.values:
                continue
            values = {**reason.values, name: f"{reason.values[name]} {BASIS}"}
            mutant = _restated(notice, ctx, index, values)
            if mutant is None:
                return None
            return mutant, _recorded(expectation, reason.code, values)
    return None


def m17_bureau_value_malformed(
    notice: Notice, expectation: Expectation, ctx: Context
) -> tuple[Notice, Expectation] | None:
    """The first key factor's value in a form the bureau never uses ("59%; call
    1-900-555-0199"), in the bureau file the expectation holds, in the credit-score
    disclosure and in every reason that states it: only the format check sees it (V8)."""
    score = expectation.credit_score
    if score is None or not score.key_factors:
        return None
    first = score.key_factors[0]
    old, new = first.value, first.value + MALFORMED
    line = ctx.frame["creditScore.keyFactor"]
    filled = {"keyFactorText": first.text, "keyFactorCode": first.code}
    before = line.format_map({**filled, "keyFactorValue": old})
    after = line.format_map({**filled, "keyFactorValue": new})
    if before not in notice.text.split("\n"):
        return None
    factors = (first.model_copy(update={"value": new}), *score.key_factors[1:])
    expectation = _expecting(
        expectation, credit_score=score.model_copy(update={"key_factors": factors})
    )
    lines = notice.text.split("\n")
    lines[lines.index(before)] = after
    notice = _with(notice, "\n".join(lines))
    for index, reason in enumerate(notice.reasons):
        entry = ctx.catalogue.entries.get(reason.code)
        if entry is None or entry.bureau_code != first.code:
            continue
        if reason.values.get("keyFactorValue") != old:
            continue
        values = {**reason.values, "keyFactorValue": new}
        restated = _restated(notice, ctx, index, values)
        if restated is None:
            return None
        notice, expectation = restated, _recorded(expectation, reason.code, values)
    return notice, expectation


def m18_other_product(notice: Notice, ctx: Context) -> Notice | None:
    """The first reason that names the product names the other product, in its
    sentence and its values alike (an approved wording, filled with its own values)."""
    names = ctx.catalogue.product_names
    for index, reason in enumerate(notice.reasons):
        named = reason.values.get("productName")
        other = next((n for n in names.values() if n != named), None)
        if named is None or other is None:
            continue
        restated = _restated(notice, ctx, index, {**reason.values, "productName": other})
        if restated is not None:
            return restated
    return None


MUTATORS: tuple[Mutator, ...] = (
    Mutator("M1", "reorder two reasons", ("V1",), m1_reorder),
    Mutator("M2", "drop the top reason", ("V1",), m2_drop_top),
    Mutator("M3", "append a fifth, otherwise-approved reason", ("V1", "V2"), m3_fifth_reason),
    Mutator("M4", '"because of your age" appended', ("V3",), m4_because_of_age),
    Mutator("M5", f'"{GENERIC}"', ("V4",), m5_internal_standards),
    Mutator("M6", "decision statement says approved", ("V5",), m6_says_approved),
    Mutator("M7", "reason code not in the catalogue", ("V1",), m7_unknown_code),
    Mutator("M8", "a stated number changed", ("V6",), m8_number_changed),
    Mutator("M9", "ECOA statement removed", ("V7",), m9_no_ecoa),
    Mutator("M10", f'"{PROMISE}"', ("V8",), m10_promise),
    Mutator("M11", "category label swapped for another value", ("V4",), m11_category_swapped),
    Mutator("M12", "reason negated", ("V8",), m12_negated),
    Mutator("M13", "zero-width character inserted", ("V8",), m13_zero_width),
    Mutator("M14", "unapproved wording variant", ("V8", "V6"), m14_unapproved_variant),
    Mutator(
        "M15",
        "every reason gone, in the notice and in what the decision records",
        ("V2",),
        upstream=m15_reasons_gone,
    ),
    Mutator(
        "M16",
        f'a stated value carries a prohibited basis ("{BASIS}"), in the notice and the expectation',
        ("V3",),
        upstream=m16_value_cites_basis,
    ),
    Mutator(
        "M17",
        f'a key factor\'s value in a form the bureau never uses ("{MALFORMED.strip("; ")}" '
        "appended), in the notice and the expectation",
        ("V8",),
        upstream=m17_bureau_value_malformed,
    ),
    Mutator(
        "M18",
        "a reason names the other product, in its sentence and values",
        ("V4",),
        m18_other_product,
    ),
)


# ---------------------------------------------------------------- running the suite


@dataclass(frozen=True, slots=True)
class Survivor:
    case_id: str
    passed: tuple[str, ...]  # the intended checks that passed


@dataclass(slots=True)
class MutatorResult:
    id: str
    defect: str
    intended: tuple[str, ...]
    applied: int = 0
    killed: int = 0
    not_applicable: int = 0
    survivors: list[Survivor] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Proof:
    """A mutant that fails exactly one check and, with that check switched off, passes
    every other check and the send gate: without the check it would have been sent."""

    mutator: str
    case_id: str


@dataclass(frozen=True, slots=True)
class MetaResult:
    check: str
    name: str
    proofs: int
    first: Proof | None
    mutators: tuple[str, ...]  # the mutators with a proof for this check, in order

    @property
    def needed(self) -> bool:
        """Some mutant gets through with this check off, and is caught with it on."""
        return self.proofs > 0


@dataclass(frozen=True, slots=True)
class SuiteResult:
    cases: str
    cases_read: int
    notices: int
    mutators: tuple[MutatorResult, ...]
    meta: tuple[MetaResult, ...]
    changes: Mapping[str, str] = field(default_factory=dict)  # mutator id -> what it changes

    @property
    def problems(self) -> tuple[str, ...]:
        out = []
        for m in self.mutators:
            if m.survivors:
                ids = ", ".join(s.case_id for s in m.survivors[:10])
                more = f" and {len(m.survivors) - 10} more" if len(m.survivors) > 10 else ""
                out.append(f"{m.id} ({m.defect}): {len(m.survivors)} survivor(s): {ids}{more}")
            if not m.applied:
                out.append(f"{m.id} ({m.defect}) never applied")
        out += [
            f"{c.check} ({c.name}): no mutant fails it alone and gets through with it "
            "switched off: nothing shows it is needed"
            for c in self.meta
            if not c.needed
        ]
        return tuple(out)

    @property
    def passed(self) -> bool:
        return not self.problems


def _genuine_of(entries: Sequence[CaseLine], policy: Policy, verifier: Verifier) -> list[Genuine]:
    """Each decline and counteroffer among ``entries`` rendered and verified."""
    genuine: list[Genuine] = []
    for entry in entries:
        if entry.case is None:
            continue
        underwriting = decide_case(entry.case, policy)
        if underwriting.decision.decision not in NOTICE_DECISIONS:
            continue
        notice = render_notice(entry.case, underwriting)
        expectation = expectation_for(entry.case, underwriting)
        report = verifier.verify(notice, expectation)
        if not report.passed:
            details = "; ".join(f"{k}: {report.checks[k].detail}" for k in report.failed)
            raise MutationHarnessError(
                f"the genuine notice fails before any mutation: {details}",
                case_id=notice.case_id,
                check=",".join(report.failed),
            )
        genuine.append(Genuine(notice.case_id, notice, expectation))
    return genuine


def genuine_notices(
    cases: Path | str,
    policy: Policy | None = None,
    verifier: Verifier | None = None,
    *,
    workers: int = 1,
    checks: Mapping[str, Check] | None = None,
) -> tuple[int, list[Genuine]]:
    """(cases read, the genuine notices): each decline and counteroffer rendered and
    verified (by ``verifier``, or one with ``checks`` replaced). A genuine notice that
    fails a check stops the run."""
    policy = policy or default_policy()
    entries = list(iter_cases(cases))
    if workers > 1 and verifier is None:
        chunks = _chunks(entries, workers)
        parts = _in_pool(
            workers, _genuine_chunk, [(chunk, policy, dict(checks or {})) for chunk in chunks]
        )
        return len(entries), [g for part in parts for g in part]
    return len(entries), _genuine_of(entries, policy, verifier or Verifier(checks=checks))


def _switched_off(_: object) -> tuple[bool, str]:
    return True, "switched off (meta-mutation)"


_Partial = tuple[dict[str, MutatorResult], dict[str, list[Proof]]]


def _suite_chunk(
    genuine: Sequence[Genuine],
    pins: Pins,
    mutators: Sequence[Mutator],
    ctx: Context,
    checks: Mapping[str, Check],
) -> _Partial:
    """The mutators and the meta-mutation over some genuine notices: each mutator's
    counts and survivors, and for each check its proofs, in order."""
    verifier = Verifier(pins, checks=checks)
    off = {k: Verifier(pins, checks={**checks, k: _switched_off}) for k in CHECK_IDS}
    results = {m.id: MutatorResult(m.id, m.defect, m.intended) for m in mutators}
    proofs: dict[str, list[Proof]] = {k: [] for k in CHECK_IDS}
    for g in genuine:
        original = g.notice.sha256
        for m in mutators:
            mutated = m.mutate(g.notice, g.expectation, ctx)
            r = results[m.id]
            if mutated is None:
                r.not_applicable += 1
                continue
            mutant, expectation = mutated
            report = verifier.verify(mutant, expectation)
            if report.notice_sha256 == original:
                raise MutationHarnessError(
                    "the mutator returned the notice unchanged", case_id=g.case_id, check=m.id
                )
            r.applied += 1
            failed = report.failed
            if all(c in failed for c in m.intended):
                r.killed += 1
            else:
                r.survivors.append(
                    Survivor(g.case_id, tuple(c for c in m.intended if c not in failed))
                )
            if len(failed) == 1:
                (only,) = failed
                without = off[only].verify(mutant, expectation)
                if without.passed:
                    check_sendable(mutant, without)  # the real send gate lets it through
                    proofs[only].append(Proof(m.id, g.case_id))
    return results, proofs


def run_suite(
    genuine: Sequence[Genuine],
    *,
    pins: Pins | None = None,
    mutators: Sequence[Mutator] = MUTATORS,
    frame: LegalFrame | None = None,
    catalogue: Catalogue | None = None,
    workers: int = 1,
    checks: Mapping[str, Check] | None = None,
) -> tuple[tuple[MutatorResult, ...], tuple[MetaResult, ...]]:
    """Inject every mutator into every genuine notice, then run the meta-mutation
    (on ``workers`` processes: the same result, merged in order). ``checks`` replaces
    checks of the verifier under test (a test does, to show a disabled check fails the
    gate)."""
    pins = pins or default_pins()
    ctx = Context(frame or default_frame(), catalogue or default_catalogue())
    replaced = dict(checks or {})
    if workers > 1 and len(genuine) > 1:
        chunks = _chunks(list(genuine), workers)
        parts = _in_pool(
            workers,
            _suite_chunk,
            [(chunk, pins, tuple(mutators), ctx, replaced) for chunk in chunks],
        )
    else:
        parts = [_suite_chunk(genuine, pins, mutators, ctx, replaced)]
    results = {m.id: MutatorResult(m.id, m.defect, m.intended) for m in mutators}
    proofs: dict[str, list[Proof]] = {k: [] for k in CHECK_IDS}
    for part_results, part_proofs in parts:  # in chunk order: survivors keep their order
        for m in mutators:
            r, p = results[m.id], part_results[m.id]
            r.applied += p.applied
            r.killed += p.killed
            r.not_applicable += p.not_applicable
            r.survivors += p.survivors
        for check, found in part_proofs.items():
            proofs[check] += found
    meta = tuple(
        MetaResult(
            check,
            CHECK_NAMES[check],
            len(proofs[check]),
            proofs[check][0] if proofs[check] else None,
            tuple(dict.fromkeys(p.mutator for p in proofs[check])),
        )
        for check in CHECK_IDS
    )
    return tuple(results.values()), meta


# ---------------------------------------------------------------- processes


def _chunks(items: list[Any], workers: int) -> list[list[Any]]:
    """``items`` cut in order into a few chunks a worker (to even out the load)."""
    size = max(1, -(-len(items) // (workers * 4)))
    return [items[i : i + size] for i in range(0, len(items), size)]


def _genuine_chunk(
    entries: Sequence[CaseLine], policy: Policy, checks: Mapping[str, Check]
) -> list[Genuine]:
    return _genuine_of(entries, policy, Verifier(checks=checks))


def _in_pool(workers: int, fn: Callable[..., Any], calls: list[tuple[Any, ...]]) -> list[Any]:
    """``fn(*call)`` for each call on ``workers`` processes, results in call order.
    Forked where safe (no Arrow thread pool loaded in this process), else spawned
    (:func:`credit.batch.notices.process_context`)."""
    with ProcessPoolExecutor(max_workers=workers, mp_context=process_context()) as pool:
        futures = [pool.submit(_captured, fn, *call) for call in calls]
        outcomes = [future.result() for future in futures]
    for outcome in outcomes:  # the first chunk's error, in order, as a serial run raises
        if isinstance(outcome, _Raised):
            raise outcome.rebuilt()
    return outcomes


@dataclass(frozen=True, slots=True)
class _Raised:
    """An error a worker raised, with its fields (a plain pickle keeps only args)."""

    kind: type[Exception]
    args: tuple[Any, ...]
    fields: dict[str, Any]

    def rebuilt(self) -> Exception:
        err = self.kind.__new__(self.kind)
        err.args = self.args
        err.__dict__.update(self.fields)
        return err


def _captured(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except MutationHarnessError as err:
        return _Raised(type(err), err.args, dict(err.__dict__))


def _shown(path: Path | str) -> str:
    p = Path(path).resolve()
    return str(p.relative_to(REPO_ROOT)) if p.is_relative_to(REPO_ROOT) else str(p)


def run(
    cases: Path | str,
    policy: Policy | None = None,
    *,
    workers: int = 1,
    checks: Mapping[str, Check] | None = None,
) -> SuiteResult:
    """The whole suite over a case file (the bundled examples by default in the CLI),
    on ``workers`` processes (the same result as one)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    read, genuine = genuine_notices(cases, policy, workers=workers, checks=checks)
    mutators, meta = run_suite(genuine, workers=workers, checks=checks)
    changes = {m.id: m.changes for m in MUTATORS}
    return SuiteResult(_shown(cases), read, len(genuine), mutators, meta, changes)


# ---------------------------------------------------------------- results


def to_wire(result: SuiteResult) -> dict[str, Any]:
    return {
        "format": "credit.mutations/2",
        "cases": result.cases,
        "casesRead": result.cases_read,
        "genuineNotices": result.notices,
        "passed": result.passed,
        "mutators": [
            {
                "id": m.id,
                "defect": m.defect,
                "intended": list(m.intended),
                "changes": result.changes.get(m.id, "notice"),
                "applied": m.applied,
                "killed": m.killed,
                "notApplicable": m.not_applicable,
                "survivors": [
                    {"caseId": s.case_id, "intendedChecksPassed": list(s.passed)}
                    for s in m.survivors
                ],
            }
            for m in result.mutators
        ],
        "meta": [
            {
                "check": c.check,
                "name": c.name,
                "needed": c.needed,
                "proofs": c.proofs,
                "proof": (
                    {"mutator": c.first.mutator, "caseId": c.first.case_id} if c.first else None
                ),
                "mutators": list(c.mutators),
            }
            for c in result.meta
        ],
        "problems": list(result.problems),
    }


def to_markdown(result: SuiteResult) -> str:
    lines = [
        "# Mutation suite results",
        "",
        f"Generated by `credit mutate` from `{result.cases}`: {result.cases_read} cases, "
        f"{result.notices} genuine notices (each passed all eight checks before any "
        "mutation). A mutant is killed only when every intended check fails; a mutator "
        "that cannot apply to a notice counts as not applicable, never as a kill. A "
        "mutator that changes the expectation as well models a defect upstream of the "
        "notice.",
        "",
        "| mutator | defect | intended | changes | applied | killed | not applicable | survivors |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for m in result.mutators:
        survivors = ", ".join(s.case_id for s in m.survivors) or "none"
        lines.append(
            f"| {m.id} | {m.defect} | {', '.join(m.intended)} | "
            f"{result.changes.get(m.id, 'notice')} | {m.applied} | {m.killed} | "
            f"{m.not_applicable} | {survivors} |"
        )
    lines += [
        "",
        "## Meta-mutation: every check is needed",
        "",
        "A proof that a check is needed is a mutant that fails that check alone (all "
        "eight on) and that, with the check switched off, passes every other check and "
        "the send gate (`check_sendable`): without the check it would have been sent. "
        "A check with no proof fails the gate.",
        "",
        "| check | name | proofs | a proof (mutator, case) | mutators with a proof | gate |",
        "|---|---|---:|---|---|---|",
    ]
    for c in result.meta:
        proof = f"{c.first.mutator}, {c.first.case_id}" if c.first else "none"
        gate = "needed" if c.needed else "NOT SHOWN NEEDED"
        lines.append(
            f"| {c.check} | {c.name} | {c.proofs} | {proof} | "
            f"{', '.join(c.mutators) or 'none'} | {gate} |"
        )
    lines += ["", f"Overall: {'pass' if result.passed else 'FAIL'}."]
    lines += [f"- {p}" for p in result.problems]
    return "\n".join(lines) + "\n"


def write_results(result: SuiteResult, directory: Path | str) -> tuple[Path, Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    json_path, md_path = directory / "mutations.json", directory / "mutations.md"
    json_path.write_text(json.dumps(to_wire(result), indent=2) + "\n", encoding="utf-8")
    md_path.write_text(to_markdown(result), encoding="utf-8")
    return json_path, md_path
