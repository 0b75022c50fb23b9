"""The notice verifier: pure Python, no network, no model.

It takes a notice and what the notice must say (an :class:`Expectation`: the
application, the derived reason codes with their values, the decision being recorded)
and returns one pass/fail per check, each with a readable detail, plus the SHA-256 of
the exact notice it checked.

Each check has its own domain, so that each has defects only it sees (the mutation
suite proves it: for every check, a mutant that fails that check alone and, with the
check switched off, would have been sent). Checks (each fails when):

- V1 reasons_match_derivation: the notice's reason codes differ from the derived ones,
  in set or order, or the text's reasons do not line up with the machine fields;
- V2 reason_count: a decline or counteroffer has 0 or more than 4 reasons; an approval
  (or a referral) has any;
- V3 no_prohibited_basis: a reason maps to an excluded attribute, or its text (label,
  sentence, values) contains a prohibited-basis term or pattern (NFKC-normalised,
  whole words);
- V4 specific_reasons: a reason does not state the applicant's actual values where
  they are not numbers: its values are not the catalogue's fields, the words of a value
  (a unit, a product name) are not the decision's, the product named is not the one
  applied for, a value is missing from its sentence, the sentence contains a generic
  phrase ("internal standards", ...), or it is labelled with another category than the
  catalogue's for its code;
- V5 decision_consistent: the decision statement or field disagrees with the decision
  being recorded (or the notice is for another case, product or date);
- V6 numbers_grounded: the numbers a reason states, in its sentence and in its machine
  values, differ from the numbers of its approved wording filled with the decision's
  values (so a number changed in the sentence and the values alike fails V6 alone);
- V7 legal_frame_intact: the frame paragraphs do not hash to the frame derived from
  the pinned, reviewed frame data; the notice was rendered from another frame or
  catalogue; or the data drifted from the reviewed lock;
- V8 approved_wording: a reason sentence is not exactly an approved variant filled
  with its values, the notice holds non-ASCII or control characters, a line matches a
  promise pattern, or a bureau value is stated in a form the bureau never uses (a
  key factor's value in a reason or in the credit-score disclosure, the bureau's
  name, address or telephone, the score model: ``bureau-formats.yaml``).

Independence: this module does not import the renderer (:mod:`credit.notices`; an
import contract enforces it). It re-derives each approved sentence from the catalogue
with its own substitution, and re-derives the legal frame from the pinned frame data
and the expectation, comparing SHA-256s. Prohibited terms are checked in reason text
only: the ECOA paragraph must name race, sex, age and the other bases, so it is checked
by exact hash (V7) instead.

Robustness: any text, however malformed, gets a report; a check that cannot read
what it needs fails with a detail saying why (fail-closed), never with an exception.

Not checked here: that the model is right, that a reason is causal, or that the frame
is legally adequate (model validation and legal review).
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

from credit.canonical import sha256_hex
from credit.catalogue import ReasonEntry
from credit.errors import NoticeInputError
from credit.guardrails.pins import KEY_FACTOR_VALUE, Pins, default_pins
from credit.guardrails.report import CHECK_IDS, CHECK_NAMES, CheckResult, VerificationReport
from credit.notice_format import Expectation, KeyFactorFacts, Notice

__all__ = ["Check", "Verifier", "numbers_in", "verify"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*)\}")
_NUMBER = re.compile(r"(?<![0-9])[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?", re.ASCII)
_ITEM = re.compile(r"([0-9]{1,6})\. (\S.*)", re.ASCII)
_SENTENCE_INDENT = "   "
_DETAIL_LIMIT = 600
_NO_NOTICE = ("approve", "refer")


class _Missing(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@lru_cache(maxsize=4096)
def _template(template: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A template read once: the text between its placeholders, and their names in
    order (keyed by the template's text, so a changed template is read anew)."""
    parts = _PLACEHOLDER.split(template)
    return tuple(parts[0::2]), tuple(parts[1::2])


def _subst(template: str, values: Mapping[str, str]) -> str:
    """The verifier's own substitution of ``{name}`` placeholders (exact strings),
    left to right: the first placeholder without a value is the one missing."""
    texts, names = _template(template)
    if not names:
        return template
    out = [texts[0]]
    for name, text in zip(names, texts[1:], strict=True):
        if name not in values:
            raise _Missing(name)
        out += (values[name], text)
    return "".join(out)


def _money(value: Decimal) -> str:
    """``$24,000.00``, derived here independently of the renderer."""
    sign = "-" if value < 0 else ""
    whole, _, cents = f"{abs(value).quantize(Decimal('0.01')):f}".partition(".")
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    return f"{sign}${','.join(groups)}.{cents}"


def numbers_in(text: str) -> list[str]:
    """The numbers a sentence states, as written (``46.2``, ``1,950``, ``600``)."""
    return _NUMBER.findall(text)


def _short(text: str, limit: int = 90) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


def _joined(problems: list[str]) -> str:
    detail = "; ".join(problems)
    return detail if len(detail) <= _DETAIL_LIMIT else detail[: _DETAIL_LIMIT - 3] + "..."


# ---------------------------------------------------------------- reading the notice


@dataclass(frozen=True, slots=True)
class _TextReason:
    number: int
    label: str
    sentence: str


@dataclass(slots=True)
class _Subject:
    """A notice read for checking: its paragraphs, the action statement and the
    reasons found in its text, and what it must say."""

    notice: Notice
    expectation: Expectation
    pins: Pins
    paragraphs: list[str]
    action: list[int]
    reasons_at: int | None
    text_reasons: list[_TextReason]
    reason_errors: list[str] = field(default_factory=list)

    @property
    def expected_values(self) -> dict[str, Mapping[str, str]]:
        return {r.code: r.values for r in self.expectation.reasons}

    def entry(self, code: str) -> ReasonEntry | None:
        return self.pins.catalogue.entries.get(code)

    def pairs(self) -> Iterable[tuple[int, str, Mapping[str, str], str, _TextReason]]:
        """Each machine reason with the text reason in the same position."""
        for i, (reason, text) in enumerate(
            zip(self.notice.reasons, self.text_reasons, strict=False), start=1
        ):
            yield i, reason.code, reason.values, reason.category, text


def _first_line_is(paragraph: str, line: str) -> bool:
    """``paragraph.split("\\n", 1)[0] == line``, without copying the paragraph."""
    if "\n" in line:
        return False  # a first line has no newline
    return paragraph.startswith(line) and paragraph[len(line) : len(line) + 1] in ("", "\n")


def _read(notice: Notice, expectation: Expectation, pins: Pins) -> _Subject:
    frame = pins.frame
    paragraphs = notice.text.split("\n\n")
    label = frame["actionTaken.label"]
    heading = frame["reasons.heading"]
    action = [i for i, p in enumerate(paragraphs) if p.startswith(label)]
    listed = [i for i, p in enumerate(paragraphs) if _first_line_is(p, heading)]
    subject = _Subject(notice, expectation, pins, paragraphs, action, None, [])
    if not listed:
        subject.reason_errors.append(f"the text has no {heading!r} paragraph")
        return subject
    if len(listed) > 1:
        subject.reason_errors.append(f"the text has {len(listed)} {heading!r} paragraphs")
    subject.reasons_at = listed[0]
    lines = paragraphs[listed[0]].split("\n")[1:]
    at = 0
    while at < len(lines):
        m = _ITEM.fullmatch(lines[at])
        if m is None:
            subject.reason_errors.append(
                f"reason line {at + 1} is not '<n>. <category>': {_short(lines[at])}"
            )
            at += 1
            continue
        if at + 1 >= len(lines) or not lines[at + 1].startswith(_SENTENCE_INDENT):
            subject.reason_errors.append(f"reason {m.group(1)} has no indented sentence")
            at += 1
            continue
        subject.text_reasons.append(
            _TextReason(int(m.group(1)), m.group(2), lines[at + 1][len(_SENTENCE_INDENT) :])
        )
        at += 2
    numbers = [r.number for r in subject.text_reasons]
    if numbers != list(range(1, len(numbers) + 1)):
        subject.reason_errors.append(f"the reasons are numbered {numbers}, not 1..{len(numbers)}")
    return subject


# ---------------------------------------------------------------- the expected frame


def _key_factors(pins: Pins, factors: tuple[KeyFactorFacts, ...]) -> list[KeyFactorFacts]:
    limit, inquiries = pins.frame.max_key_factors, pins.frame.inquiries_bureau_codes
    shown = list(factors[:limit])
    if all(k.code not in inquiries for k in shown):
        for k in factors[limit:]:
            if k.code in inquiries:
                shown.append(k)
                break
    return shown


def _expected_frame(subject: _Subject) -> list[str]:
    """The frame paragraphs the notice must carry, in order, with the action
    statement and the reasons list left out (V5 and V1-V8 check those)."""
    f, e = subject.pins.frame, subject.expectation
    common = {
        "caseId": e.case_id,
        "noticeDate": e.notice_date.isoformat(),
        "productName": f[f"products.{e.product}"],
    }
    paras = [
        [f["creditor.name"], f["creditor.address"]],
        [
            f["header.title"],
            _subst(f["header.date"], common),
            _subst(f["header.application"], common),
        ],
    ]
    if e.decision == "counteroffer":
        offer = e.offer
        if offer is None:
            raise _Missing("offer")
        if e.product == "auto":
            if offer.amount is None or offer.term_months is None:
                raise _Missing("offer.amount")
            terms = _subst(
                f["counteroffer.auto"],
                {
                    "amount": _money(offer.amount),
                    "termMonths": str(offer.term_months),
                    "apr": str(offer.apr),
                    "payment": _money(offer.payment),
                },
            )
        else:
            if offer.credit_line is None:
                raise _Missing("offer.creditLine")
            terms = _subst(
                f["counteroffer.card"],
                {
                    "creditLine": _money(offer.credit_line),
                    "apr": str(offer.apr),
                    "payment": _money(offer.payment),
                },
            )
        until = e.notice_date + dt.timedelta(days=f.offer_valid_days)
        standing = _subst(
            f["counteroffer.standing"],
            {"validDays": str(f.offer_valid_days), "offerExpires": until.isoformat()},
        )
        paras.append([f["counteroffer.heading"], terms, standing])
    s = e.credit_score
    if s is not None:
        bureau = {
            "bureauName": s.bureau_name,
            "bureauAddress": s.bureau_address,
            "bureauPhone": s.bureau_phone,
        }
        score = {
            "score": str(s.score),
            "scoreLow": str(s.score_low),
            "scoreHigh": str(s.score_high),
            "scoreDate": s.score_date.isoformat(),
            "scoreModel": s.score_model or "",
            "bureauName": s.bureau_name,
        }
        lines = [
            f["creditScore.heading"],
            _subst(f["creditScore.intro"], bureau),
            _subst(f["creditScore.score"], score),
            _subst(f["creditScore.range"], score),
            _subst(f["creditScore.date"], score),
        ]
        if s.score_model is not None:
            lines.append(_subst(f["creditScore.model"], score))
        lines.append(f["creditScore.keyFactorsHeading"])
        factors = [
            _subst(
                f["creditScore.keyFactor"],
                {"keyFactorText": k.text, "keyFactorValue": k.value, "keyFactorCode": k.code},
            )
            for k in _key_factors(subject.pins, s.key_factors)
        ]
        lines += factors or [f["creditScore.noKeyFactors"]]
        lines += [
            _subst(f[f"creditScore.{key}"], bureau)
            for key in ("agency", "notDecision", "freeReport", "dispute")
        ]
        paras.append(lines)
    agency = {"agencyName": f["ecoa.agencyName"], "agencyAddress": f["ecoa.agencyAddress"]}
    paras.append([f["ecoa.heading"], _subst(f["ecoa.text"], agency)])
    out = ["\n".join(p) for p in paras]
    out[-1] += "\n"
    return out


# ---------------------------------------------------------------- the checks

Check = Callable[[_Subject], tuple[bool, str]]


def _v1_reasons_match_derivation(s: _Subject) -> tuple[bool, str]:
    expected, found = s.expectation.reason_codes, s.notice.reason_codes
    problems = []
    if found != expected:
        how = "in order" if sorted(found) == sorted(expected) else "in set"
        problems.append(
            f"the notice's reason codes ({', '.join(found) or 'none'}) differ {how} from "
            f"the derived ones ({', '.join(expected) or 'none'})"
        )
    if s.reasons_at is not None or s.notice.reasons:
        problems += s.reason_errors
        if len(s.text_reasons) != len(s.notice.reasons):
            problems.append(
                f"the text states {len(s.text_reasons)} reasons, the machine fields "
                f"{len(s.notice.reasons)}"
            )
    if problems:
        return False, _joined(problems)
    return True, f"reason codes match the derivation: {', '.join(expected) or 'none'}"


def _v2_reason_count(s: _Subject) -> tuple[bool, str]:
    decision = s.expectation.decision
    most = s.pins.rules.max_reasons
    counts = {"machine fields": len(s.notice.reasons), "text": len(s.text_reasons)}
    problems = []
    for where, n in counts.items():
        if decision in _NO_NOTICE and n:
            problems.append(f"a decision to {decision} states no reasons, the {where} have {n}")
        elif decision not in _NO_NOTICE and not 1 <= n <= most:
            problems.append(f"a {decision} states 1 to {most} reasons, the {where} have {n}")
    if problems:
        return False, _joined(problems)
    return True, f"{counts['machine fields']} reasons for a {decision} (1 to {most})"


def _v3_no_prohibited_basis(s: _Subject) -> tuple[bool, str]:
    problems = []
    texts: list[tuple[str, str]] = []  # (which reason, its text: label, sentence, values)
    for i, reason in enumerate(s.notice.reasons, start=1):
        entry = s.entry(reason.code)
        if entry is not None and entry.excluded_attributes:
            problems.append(
                f"reason {i} ({reason.code}) maps to the excluded attribute(s) "
                f"{', '.join(entry.excluded_attributes)}"
            )
        parts = [reason.category, *reason.values.values()]
        if i <= len(s.text_reasons):
            parts += [s.text_reasons[i - 1].label, s.text_reasons[i - 1].sentence]
        texts.append((f"reason {i} ({reason.code})", " | ".join(parts)))
    for j, extra in enumerate(s.text_reasons[len(s.notice.reasons) :], len(s.notice.reasons) + 1):
        texts.append((f"reason {j}", f"{extra.label} | {extra.sentence}"))
    terms, kept = s.pins.terms, s.pins.kept("may_cite")
    # A reason's text that cannot cite a basis has no citation to report, whatever
    # the whole says; the answer for each text is kept (the same texts recur).
    if any(
        kept[t] if t in kept else kept.put(t, _may_cite(s.pins, t)) for _, t in texts
    ) and _may_cite(s.pins, "\n".join(t for _, t in texts)):  # then say which reason
        for which, text in texts:
            problems += [f"{which} text cites {m.describe()}" for m in terms.find(text)]
    if problems:
        return False, _joined(problems)
    return (
        True,
        f"no excluded attribute or prohibited-basis term in {len(s.notice.reasons)} reasons",
    )


_WORD = re.compile(r"[a-z0-9]+")


def _may_cite(pins: Pins, text: str) -> bool:
    """Whether the text cites a prohibited basis, by the matcher of
    :mod:`credit.fairness_terms`. ASCII text that has, as a word, not one term's
    longest word, and that no pattern matches, cannot cite a basis, so the matcher is
    skipped for it (a quick pre-check; a hypothesis test pins that it never hides a
    match). Non-ASCII text always goes to the matcher (NFKC may fold it into a term)."""
    if not text.isascii():
        return bool(pins.terms.find(text))
    lower = text.lower()  # what the matcher normalises ASCII text to
    words = set(_WORD.findall(lower))
    if words.isdisjoint(pins.term_words) and not pins.terms.pattern_may_match(lower):
        return False
    return bool(pins.terms.find(text))


def _states(sentence: str, value: str) -> bool:
    """Whether the sentence states the value as a whole token (``46.2`` is stated in
    "46.2%", not in "146.2" or "46.25")."""
    if not value:
        return False
    at = sentence.find(value)
    while at >= 0:
        before = sentence[at - 1] if at else " "
        after = sentence[at + len(value) : at + len(value) + 2]
        if not (before.isascii() and before.isalnum()) and not (
            (after[:1].isascii() and after[:1].isalnum())
            or (after[:1] == "." and after[1:2].isdigit())
        ):
            return True
        at = sentence.find(value, at + 1)
    return False


def _words(value: str) -> str:
    """A value's words, its numbers left out: ``3 accounts`` reads ``# accounts``."""
    return _NUMBER.sub("#", value)


def _v4_specific_reasons(s: _Subject) -> tuple[bool, str]:
    problems = []
    expected = s.expected_values
    product_name = s.pins.catalogue.product_names.get(s.expectation.product)
    for i, code, values, category, text in s.pairs():
        entry = s.entry(code)
        if entry is None:
            problems.append(f"reason {i} ({code}) is not in the catalogue: no value to confirm")
            continue
        if category != entry.category or text.label != entry.category:
            problems.append(
                f"reason {i} ({code}) is labelled {text.label!r} (field {category!r}); the "
                f"catalogue's category is {entry.category!r}"
            )
        want = expected.get(code)
        names = sorted(want) if want is not None else sorted(entry.states)
        if sorted(values) != names:
            problems.append(
                f"reason {i} ({code}) states the values {', '.join(sorted(values)) or 'none'}; "
                f"it states {', '.join(names) or 'none'}"
            )
        for name in sorted(set(values) & set(want or {})):
            assert want is not None
            if _words(values[name]) != _words(want[name]):
                problems.append(
                    f"reason {i} ({code}) states {name}={values[name]!r}, not the applicant's "
                    f"{want[name]!r}"
                )
        if "productName" in values and values["productName"] != product_name:
            problems.append(
                f"reason {i} ({code}) names the product {values['productName']!r}; the "
                f"application is for {product_name!r}"
            )
        for name in entry.states:
            if not _states(text.sentence, values.get(name, "")):
                problems.append(f"reason {i} ({code}) does not state {name}")
        sentence, kept = text.sentence, s.pins.kept("generic")
        generic = (
            kept[sentence]
            if sentence in kept
            else kept.put(sentence, s.pins.rules.generic_phrases_in(sentence))
        )
        if generic:
            problems.append(f"reason {i} ({code}) uses generic phrase(s): {', '.join(generic)}")
    for i, reason in enumerate(s.notice.reasons[len(s.text_reasons) :], len(s.text_reasons) + 1):
        problems.append(f"reason {i} ({reason.code}) has no sentence stating its values")
    if problems:
        return False, _joined(problems)
    return True, "every reason states the applicant's values under its catalogue category"


def _v5_decision_consistent(s: _Subject) -> tuple[bool, str]:
    n, e, f = s.notice, s.expectation, s.pins.frame
    problems = []
    if n.decision != e.decision:
        problems.append(
            f"the decision field says {n.decision}, the decision recorded is {e.decision}"
        )
    for name, got, want in (
        ("caseId", n.case_id, e.case_id),
        ("product", n.product, e.product),
        ("noticeDate", n.notice_date.isoformat(), e.notice_date.isoformat()),
    ):
        if got != want:
            problems.append(f"the {name} field is {got!r}, the decision recorded is for {want!r}")
    key = f"actionTaken.{e.decision}"
    if e.decision in _NO_NOTICE or key not in f.texts:
        problems.append(f"a decision to {e.decision} takes no adverse-action notice")
    else:
        statement = f"{f['actionTaken.label']} " + _subst(
            f[key], {"productName": f[f"products.{e.product}"]}
        )
        found = [s.paragraphs[i] for i in s.action]
        if not found:
            problems.append("the text has no statement of the action taken")
        elif len(found) > 1:
            problems.append(f"the text has {len(found)} statements of the action taken")
        elif found[0] != statement:
            problems.append(
                f"the statement of the action taken reads {_short(found[0])}; for a "
                f"{e.decision} it is {_short(statement)}"
            )
    if problems:
        return False, _joined(problems)
    return True, f"the statement and the decision field say {e.decision}, as recorded"


def _variants(pins: Pins, entry: ReasonEntry, values: Mapping[str, str]) -> tuple[str, ...]:
    """The entry's approved wordings filled with the values (kept by wordings and
    values; a missing value raises, and is not kept)."""
    key = (entry.wordings, tuple(values.items()))
    kept = pins.kept("variants")
    found: tuple[str, ...] | None = kept.get(key)
    if found is None:
        found = kept.put(key, tuple(_subst(w, values) for w in entry.wordings))
    return found


def _variant_numbers(
    pins: Pins, entry: ReasonEntry, values: Mapping[str, str]
) -> tuple[list[str], ...]:
    """The numbers each filled variant states, each list sorted (kept likewise)."""
    key = (entry.wordings, tuple(values.items()))
    kept = pins.kept("variant_numbers")
    found: tuple[list[str], ...] | None = kept.get(key)
    if found is None:
        variants = _variants(pins, entry, values)
        found = kept.put(key, tuple(sorted(numbers_in(v)) for v in variants))
    return found


def _v6_numbers_grounded(s: _Subject) -> tuple[bool, str]:
    problems = []
    expected = s.expected_values
    for i, code, values, _, text in s.pairs():
        entry = s.entry(code)
        if entry is None:
            problems.append(f"reason {i} ({code}) has no approved wording to ground its numbers")
            continue
        grounding = expected.get(code, values)
        for name in sorted(set(values) & set(grounding)):
            got, want = numbers_in(values[name]), numbers_in(grounding[name])
            if got != want:
                problems.append(
                    f"reason {i} ({code}) value {name} states the numbers "
                    f"[{' '.join(got)}], the decision [{' '.join(want)}]"
                )
        try:  # each as a sorted list: equal exactly when equal as multisets
            allowed = _variant_numbers(s.pins, entry, grounding)
        except _Missing as missing:
            problems.append(f"reason {i} ({code}) lacks the value {missing.name}")
            continue
        stated = sorted(numbers_in(text.sentence))
        if stated not in allowed:
            want_all, got_all = " ".join(allowed[0]), " ".join(stated)
            problems.append(f"reason {i} ({code}) states the numbers [{got_all}], not [{want_all}]")
    if problems:
        return False, _joined(problems)
    return True, "every number a reason states is one its approved wording states"


def _first_difference(want: list[str], got: list[str]) -> str:
    """Where the notice's frame first departs from the derived frame, in words."""
    w = [p.rstrip("\n") for p in want]
    g = [p.rstrip("\n") for p in got]
    opcodes = difflib.SequenceMatcher(None, w, g, autojunk=False).get_opcodes()
    for tag, i1, _, j1, _ in opcodes:
        if tag == "equal":
            continue
        if tag == "delete":
            return f"the frame paragraph {_short(w[i1].split(chr(10))[0], 70)} is missing"
        if tag == "insert":
            return f"the text has a paragraph the frame lacks: {_short(g[j1], 70)}"
        a_lines, b_lines = w[i1].split("\n"), g[j1].split("\n")
        for k, (x, y) in enumerate(zip(a_lines, b_lines, strict=False)):
            if x != y:
                at = next((n for n, (a, b) in enumerate(zip(x, y, strict=False)) if a != b), None)
                at = min(len(x), len(y)) if at is None else at
                start = max(0, at - 30)
                return (
                    f"frame paragraph {i1 + 1} line {k + 1}, column {at + 1}, reads "
                    f"{_short(y[start : at + 40])}; the frame says {_short(x[start : at + 40])}"
                )
        return (
            f"frame paragraph {i1 + 1} ({_short(a_lines[0], 50)}) has {len(b_lines)} lines, "
            f"the frame {len(a_lines)}"
        )
    return "the text does not end with exactly one newline"


def _v7_legal_frame_intact(s: _Subject) -> tuple[bool, str]:
    pins = s.pins
    problems = []
    if pins.drift:
        problems.append(
            "the data changed since the reviewed lock: "
            + ", ".join(pins.drift)
            + " (review and accept with `credit lock --accept`)"
        )
    if pins.frame_sha256 is not None and s.notice.frame_sha256 != pins.frame_sha256:
        problems.append(
            f"the notice was rendered from frame {s.notice.frame_sha256[:12]}, the reviewed "
            f"frame is {pins.frame_sha256[:12]}"
        )
    if pins.catalogue_sha256 is not None and s.notice.catalogue_sha256 != pins.catalogue_sha256:
        problems.append(
            f"the notice was rendered from catalogue {s.notice.catalogue_sha256[:12]}, the "
            f"reviewed catalogue is {pins.catalogue_sha256[:12]}"
        )
    try:
        want = _expected_frame(s)
    except _Missing as missing:
        problems.append(f"the expectation lacks {missing.name} to derive the frame")
        return False, _joined(problems)
    skip = set(s.action[:1]) | ({s.reasons_at} if s.reasons_at is not None else set())
    got = [p for i, p in enumerate(s.paragraphs) if i not in skip]
    want_hash = pins.frame_sha256 or ""
    if _digest(want) != _digest(got):
        problems.append(
            f"the frame paragraphs do not hash to the pinned frame: {_first_difference(want, got)}"
        )
    if problems:
        return False, _joined(problems)
    return True, f"frame paragraphs intact; frame {want_hash[:12]} is the reviewed one"


def _digest(paragraphs: list[str]) -> str:
    return sha256_hex("\n\n".join(paragraphs).encode("utf-8", "surrogatepass"))


_BAD_IN_TEXT = re.compile(r"[^\x20-\x7e\n]")
_BAD_IN_FIELD = re.compile(r"[^\x20-\x7e]")


def _bad_characters(text: str, *, newline_ok: bool) -> list[tuple[int, str]]:
    """Every character that is not printable ASCII (a newline is allowed in text)."""
    if text.isascii() and (text.replace("\n", " ") if newline_ok else text).isprintable():
        return []  # printable ASCII is exactly U+0020..U+007E: nothing to find
    pattern = _BAD_IN_TEXT if newline_ok else _BAD_IN_FIELD
    return [(m.start(), m.group()) for m in pattern.finditer(text)]


def _v8_approved_wording(s: _Subject) -> tuple[bool, str]:
    n = s.notice
    problems = []
    bad = _bad_characters(n.text, newline_ok=True)
    if bad:
        shown = ", ".join(f"U+{ord(ch):04X} at {i}" for i, ch in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        problems.append(f"the text has non-ASCII or control characters: {shown}{more}")
    fields = [n.case_id, n.frame_sha256, n.catalogue_sha256]
    for r in n.reasons:
        fields += [r.code, r.category, *r.values.keys(), *r.values.values()]
    if _bad_characters("".join(fields), newline_ok=False):  # a character at a time: joined
        problems.append("a machine field has non-ASCII or control characters")
    for i, code, values, _, text in s.pairs():
        entry = s.entry(code)
        if entry is None:
            problems.append(f"reason {i} ({code}) has no approved wording (not in the catalogue)")
            continue
        try:
            approved = _variants(s.pins, entry, values)
        except _Missing as missing:
            problems.append(f"reason {i} ({code}) lacks the value {missing.name}")
            continue
        if text.sentence not in approved:
            problems.append(
                f"reason {i} ({code}) is not an approved wording: {_short(text.sentence)}"
            )
    problems += _bureau_values(s)
    if len(s.text_reasons) > len(n.reasons):
        problems.append(f"{len(s.text_reasons) - len(n.reasons)} reason sentence(s) without a code")
    if len(n.reasons) > len(s.text_reasons):
        problems.append(f"{len(n.reasons) - len(s.text_reasons)} reason(s) without a sentence")
    if s.pins.promise_scan.promises_in(n.text):  # one pass; then say which lines
        lines = [
            f"line {number} makes a promise ({', '.join(found)}): {_short(line)}"
            for number, line in enumerate(n.text.split("\n"), start=1)
            if (found := s.pins.promise_scan.promises_in(line))
        ]
        problems += lines or [
            f"the text makes a promise ({', '.join(s.pins.promise_scan.promises_in(n.text))})"
        ]
    if problems:
        return False, _joined(problems)
    return True, "ASCII text; every reason an approved wording; no promise; bureau values in form"


def _bureau_values(s: _Subject) -> list[str]:
    """Every bureau value the notice states, in its strict format: a key factor's value
    in a reason's values, and the credit-score disclosure's lines that print one."""
    formats, problems = s.pins.formats, []
    for i, reason in enumerate(s.notice.reasons, start=1):
        entry = s.entry(reason.code)
        if entry is None or entry.bureau_code is None or KEY_FACTOR_VALUE not in reason.values:
            continue
        wrong = formats.check_key_factor(entry.bureau_code, reason.values[KEY_FACTOR_VALUE])
        if wrong is not None:
            problems.append(f"reason {i} ({reason.code}) states a bureau value: {wrong}")
    heading = s.pins.frame["creditScore.heading"]
    disclosure = [p for p in s.paragraphs if _first_line_is(p, heading)]
    if not disclosure:
        return problems
    score = s.expectation.credit_score
    shown = _key_factors(s.pins, score.key_factors) if score is not None else []
    disclosure_lines = disclosure[0].split("\n")
    # which bureau lines each line of the disclosure is (kept by its text)
    kinds, strict = s.pins.kept("bureau_kinds"), s.pins.kept("bureau_strict")
    belongs = [
        kind
        if (kind := kinds.get(line)) is not None
        else kinds.put(
            line,
            frozenset(
                lp.key
                for lp in s.pins.bureau_lines
                if line.startswith(lp.prefix) and lp.loose.fullmatch(line)
            ),
        )
        for line in disclosure_lines
    ]
    for line_pins in s.pins.bureau_lines:
        per_factor = len(line_pins.strict) > 1
        lines = [
            line
            for line, kind in zip(disclosure_lines, belongs, strict=True)
            if line_pins.key in kind
        ]
        for k, line in enumerate(lines):
            code = shown[k].code if per_factor and k < len(shown) else None
            if code is not None and code not in line_pins.strict:
                problems.append(f"key factor {code} has no format in {formats.name}")
                continue
            in_form = (
                strict[key]
                if (key := (line_pins.key, code, line)) in strict
                else strict.put(key, line_pins.strict[code].fullmatch(line) is not None)
            )
            if not in_form:
                off = [f for f, p in line_pins.each.items() if p.fullmatch(line) is None]
                if per_factor:
                    off.append(f"key factor {code}" if code else "a key factor")
                what = ", ".join(off) or "its bureau values"
                problems.append(
                    f"the credit-score disclosure states {what} in a form the bureau never "
                    f"uses: {_short(line)}"
                )
    return problems


_CHECKS: dict[str, Check] = {
    "V1": _v1_reasons_match_derivation,
    "V2": _v2_reason_count,
    "V3": _v3_no_prohibited_basis,
    "V4": _v4_specific_reasons,
    "V5": _v5_decision_consistent,
    "V6": _v6_numbers_grounded,
    "V7": _v7_legal_frame_intact,
    "V8": _v8_approved_wording,
}


class Verifier:
    """Checks notices against the pinned data. ``checks`` replaces check functions by
    id: only the meta-mutation does that, to switch a check off and show the gate
    then fails."""

    def __init__(self, pins: Pins | None = None, *, checks: Mapping[str, Check] | None = None):
        self.pins = pins or default_pins()
        self.checks: dict[str, Check] = dict(_CHECKS)
        for key, fn in (checks or {}).items():
            if key not in _CHECKS:
                raise KeyError(f"no check {key}")
            self.checks[key] = fn

    def verify(self, notice: Notice, expectation: Expectation) -> VerificationReport:
        try:
            notice_sha256 = notice.sha256
        except UnicodeEncodeError:  # only a notice built in code, not parsed, can get here
            raise NoticeInputError(
                "the notice's text is not valid Unicode (a lone surrogate): it has no bytes "
                "to verify or send",
                case_id=notice.case_id,
                field="text",
            ) from None
        subject = _read(notice, expectation, self.pins)
        results = []
        for key in CHECK_IDS:
            try:
                passed, detail = self.checks[key](subject)
            except Exception as err:  # fail closed: a check that cannot run fails
                passed, detail = False, f"internal error: {type(err).__name__}: {err}"
            results.append(CheckResult(id=key, name=CHECK_NAMES[key], passed=passed, detail=detail))
        return VerificationReport.of(
            case_id=notice.case_id,
            notice_sha256=notice_sha256,
            expectation_sha256=expectation.sha256,
            checks=results,
        )


def verify(
    notice: Notice, expectation: Expectation, *, pins: Pins | None = None
) -> VerificationReport:
    """Check one notice against what it must say (with the packaged, pinned data)."""
    return Verifier(pins).verify(notice, expectation)
