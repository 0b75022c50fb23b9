"""The mutation suite: does the notice verifier catch each defect it exists to catch?

Every genuine notice of the bundled cases (each decline and counteroffer, rendered and
verified: it must pass all eight checks first) gets one defect at a time:

| mutator | defect | intended checks |
|---|---|---|
| M1 | reorder two reasons | V1 |
| M2 | drop the top reason | V1 |
| M3 | append a fifth, otherwise-approved reason | V1, V2 |
| M4 | "because of your age" appended | V3 |
| M5 | "You did not meet our internal standards." | V4 |
| M6 | decision statement says approved | V5 |
| M7 | reason code not in the catalogue | V1 |
| M8 | a stated number changed | V6 |
| M9 | ECOA statement removed | V7 |
| M10 | "If you reapply with a co-signer we will approve" | V8 |
| M11 | category label swapped for another value | V4 |
| M12 | reason negated | V8 |
| M13 | zero-width character inserted | V8 |
| M14 | unapproved wording variant | V8, V6 |

A mutation works on the notice as delivered, text and machine fields consistently, as
a real defect would (M1 reorders the reasons in both; M4 changes only the sentence an
applicant reads, as a drafting defect would). A mutant is killed only when every
intended check fails. A mutator that cannot apply (M3 needs a notice with 4 reasons, M8
a reason that states a number) is counted as not applicable, never as a kill; every
mutator must apply at least once. A mutator that returns an unchanged notice stops the
run (:class:`~credit.errors.MutationHarnessError`): the suite itself would be wrong.

The meta-mutation switches each check off in turn (it always passes) and reruns the
mutants whose intended checks include it (the other mutants' verdicts do not depend on
it); the gate must then fail, with at least one survivor. That shows every check is
needed for the suite to pass.

``credit mutate`` runs it and writes ``results/mutations.json`` and
``results/mutations.md``; it exits 1 on any survivor, any mutator never applied, or
any meta-mutation the gate did not catch.

``credit mutate --workers N`` runs it on N processes: the cases, then the genuine
notices, are cut into chunks in order; each chunk is decided, rendered and verified,
then mutated, verified and meta-mutated on its own (every notice's mutants and their
verdicts depend on that notice alone), and the chunks' results are merged in chunk
order, so the result is the same as a serial run's, survivors in the same order.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from credit.cases import CaseLine, iter_cases
from credit.catalogue import Catalogue, default_catalogue
from credit.errors import MutationHarnessError
from credit.guardrails import CHECK_IDS, CHECK_NAMES, Pins, Verifier, default_pins, expectation_for
from credit.legal_frame import LegalFrame, default_frame
from credit.notice_format import Expectation, Notice, NoticeReason
from credit.notices import NOTICE_DECISIONS, render_notice
from credit.policy import Policy, default_policy
from credit.underwriting import decide_case

__all__ = [
    "MUTATORS",
    "Genuine",
    "MetaResult",
    "Mutator",
    "MutatorResult",
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


@dataclass(frozen=True, slots=True)
class Mutator:
    id: str
    defect: str
    intended: tuple[str, ...]
    apply: Apply


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
class MetaResult:
    check: str
    name: str
    mutators: tuple[str, ...]
    mutants: int
    survivors: int

    @property
    def caught(self) -> bool:
        """The gate failed with this check switched off, as it must."""
        return self.survivors > 0


@dataclass(frozen=True, slots=True)
class SuiteResult:
    cases: str
    cases_read: int
    notices: int
    mutators: tuple[MutatorResult, ...]
    meta: tuple[MetaResult, ...]

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
            f"switching {c.check} ({c.name}) off did not fail the gate"
            for c in self.meta
            if not c.caught
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
) -> tuple[int, list[Genuine]]:
    """(cases read, the genuine notices): each decline and counteroffer rendered and
    verified. A genuine notice that fails a check stops the run."""
    policy = policy or default_policy()
    entries = list(iter_cases(cases))
    if workers > 1 and verifier is None:
        chunks = _chunks(entries, workers)
        parts = _in_pool(workers, _genuine_chunk, [(chunk, policy) for chunk in chunks])
        return len(entries), [g for part in parts for g in part]
    return len(entries), _genuine_of(entries, policy, verifier or Verifier())


def _switched_off(_: object) -> tuple[bool, str]:
    return True, "switched off (meta-mutation)"


_Partial = tuple[dict[str, MutatorResult], dict[str, tuple[int, int]]]


def _suite_chunk(
    genuine: Sequence[Genuine],
    pins: Pins,
    mutators: Sequence[Mutator],
    ctx: Context,
) -> _Partial:
    """The mutators and the meta-mutation over some genuine notices: each mutator's
    counts and survivors, and for each check (mutants rerun, survivors)."""
    verifier = Verifier(pins)
    results = {m.id: MutatorResult(m.id, m.defect, m.intended) for m in mutators}
    mutants: dict[str, list[tuple[Genuine, Notice]]] = {m.id: [] for m in mutators}
    for g in genuine:
        original = g.notice.sha256
        for m in mutators:
            mutant = m.apply(g.notice, ctx)
            r = results[m.id]
            if mutant is None:
                r.not_applicable += 1
                continue
            report = verifier.verify(mutant, g.expectation)
            if report.notice_sha256 == original:
                raise MutationHarnessError(
                    "the mutator returned the notice unchanged", case_id=g.case_id, check=m.id
                )
            r.applied += 1
            mutants[m.id].append((g, mutant))
            failed = set(report.failed)
            if all(c in failed for c in m.intended):
                r.killed += 1
            else:
                r.survivors.append(
                    Survivor(g.case_id, tuple(c for c in m.intended if c not in failed))
                )
    meta: dict[str, tuple[int, int]] = {}
    for check in CHECK_IDS:
        off = Verifier(pins, checks={check: _switched_off})
        run_count = survivors = 0
        for m in (m for m in mutators if check in m.intended):
            for g, mutant in mutants[m.id]:
                run_count += 1
                failed = set(off.verify(mutant, g.expectation).failed)
                survivors += not all(c in failed for c in m.intended)
        meta[check] = (run_count, survivors)
    return results, meta


def run_suite(
    genuine: Sequence[Genuine],
    *,
    pins: Pins | None = None,
    mutators: Sequence[Mutator] = MUTATORS,
    frame: LegalFrame | None = None,
    catalogue: Catalogue | None = None,
    workers: int = 1,
) -> tuple[tuple[MutatorResult, ...], tuple[MetaResult, ...]]:
    """Inject every mutator into every genuine notice, then run the meta-mutation
    (on ``workers`` processes: the same result, merged in order)."""
    pins = pins or default_pins()
    ctx = Context(frame or default_frame(), catalogue or default_catalogue())
    if workers > 1 and len(genuine) > 1:
        chunks = _chunks(list(genuine), workers)
        parts = _in_pool(
            workers, _suite_chunk, [(chunk, pins, tuple(mutators), ctx) for chunk in chunks]
        )
    else:
        parts = [_suite_chunk(genuine, pins, mutators, ctx)]
    results = {m.id: MutatorResult(m.id, m.defect, m.intended) for m in mutators}
    totals = {check: [0, 0] for check in CHECK_IDS}
    for part_results, part_meta in parts:  # in chunk order: survivors keep their order
        for m in mutators:
            r, p = results[m.id], part_results[m.id]
            r.applied += p.applied
            r.killed += p.killed
            r.not_applicable += p.not_applicable
            r.survivors += p.survivors
        for check, (run_count, survivors) in part_meta.items():
            totals[check][0] += run_count
            totals[check][1] += survivors
    meta = tuple(
        MetaResult(
            check,
            CHECK_NAMES[check],
            tuple(m.id for m in mutators if check in m.intended),
            totals[check][0],
            totals[check][1],
        )
        for check in CHECK_IDS
    )
    return tuple(results.values()), meta


# ---------------------------------------------------------------- processes


def _chunks(items: list[Any], workers: int) -> list[list[Any]]:
    """``items`` cut in order into a few chunks a worker (to even out the load)."""
    size = max(1, -(-len(items) // (workers * 4)))
    return [items[i : i + size] for i in range(0, len(items), size)]


def _genuine_chunk(entries: Sequence[CaseLine], policy: Policy) -> list[Genuine]:
    return _genuine_of(entries, policy, Verifier())


def _in_pool(workers: int, fn: Callable[..., Any], calls: list[tuple[Any, ...]]) -> list[Any]:
    """``fn(*call)`` for each call on ``workers`` processes, results in call order.
    Forked where safe (no Arrow thread pool loaded in this process), else spawned."""
    threaded = any(name in sys.modules for name in ("polars", "pyarrow"))
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods and not threaded else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
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


def run(cases: Path | str, policy: Policy | None = None, *, workers: int = 1) -> SuiteResult:
    """The whole suite over a case file (the bundled examples by default in the CLI),
    on ``workers`` processes (the same result as one)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    read, genuine = genuine_notices(cases, policy, workers=workers)
    mutators, meta = run_suite(genuine, workers=workers)
    return SuiteResult(_shown(cases), read, len(genuine), mutators, meta)


# ---------------------------------------------------------------- results


def to_wire(result: SuiteResult) -> dict[str, Any]:
    return {
        "format": "credit.mutations/1",
        "cases": result.cases,
        "casesRead": result.cases_read,
        "genuineNotices": result.notices,
        "passed": result.passed,
        "mutators": [
            {
                "id": m.id,
                "defect": m.defect,
                "intended": list(m.intended),
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
                "switchedOff": True,
                "mutators": list(c.mutators),
                "mutantsRun": c.mutants,
                "survivors": c.survivors,
                "gateFailed": c.caught,
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
        "that cannot apply to a notice counts as not applicable, never as a kill.",
        "",
        "| mutator | defect | intended | applied | killed | not applicable | survivors |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for m in result.mutators:
        survivors = ", ".join(s.case_id for s in m.survivors) or "none"
        lines.append(
            f"| {m.id} | {m.defect} | {', '.join(m.intended)} | {m.applied} | {m.killed} | "
            f"{m.not_applicable} | {survivors} |"
        )
    lines += [
        "",
        "## Meta-mutation",
        "",
        "Each check switched off in turn (it always passes); the mutants whose intended "
        "checks include it are run again. The gate must fail (at least one survivor).",
        "",
        "| check | name | mutators rerun | mutants | survivors | gate |",
        "|---|---|---|---:|---:|---|",
    ]
    for c in result.meta:
        gate = "fails (caught)" if c.caught else "PASSES (not caught)"
        lines.append(
            f"| {c.check} | {c.name} | {', '.join(c.mutators)} | {c.mutants} | {c.survivors} | "
            f"{gate} |"
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
