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
  the pinned, reviewed frame data (they are not exactly its text); the notice was
  rendered from another frame or catalogue; or the data drifted from the reviewed lock;
- V8 approved_wording: a reason sentence is not exactly an approved variant filled
  with its values, the notice holds non-ASCII or control characters, a line matches a
  promise pattern, or a bureau value is stated in a form the bureau never uses (a
  key factor's value in a reason or in the credit-score disclosure, the bureau's
  name, address or telephone, the score model: ``bureau-formats.yaml``).

Independence: this module does not import the renderer (:mod:`credit.notices`; an
import contract enforces it). It re-derives each approved sentence from the catalogue
with its own substitution, and re-derives the legal frame from the pinned frame data
and the expectation, comparing the text exactly (the same text is the same SHA-256).
Prohibited terms are checked in reason text only: the ECOA paragraph must name race,
sex, age and the other bases, so it is checked exactly (V7) instead.

Robustness: any text, however malformed, gets a report; a check that cannot read
what it needs fails with a detail saying why (fail-closed), never with an exception.

Speed: a genuine notice passes every check, and most of what it says recurs across
applicants. The clear way (:func:`_clear_way`) reads a notice once for all eight
checks and gives a check's pass detail only where what that check reads holds as in a
notice that passes it; everywhere else (and for a check replaced with
``Verifier(checks=...)``) the check itself runs and decides, so every verdict and
detail is the check's own (a hypothesis property compares the two over notices with
any defect). What a check found for a reason as stated (its code, category, label,
sentence and values) is kept with it (:class:`_Facts`), as are the answers for other
recurring text (a line's promise verdict, a disclosure line's bureau form, a bureau
value's format, a filled wording, the frame's plan for a shape of notice, a report's
passing results), each store held by the pinned data it came from and emptied when
full. Where the credit-score disclosure is exactly the frame's plan filled with the
expectation's values, its bureau lines are judged from those values' formats
(:func:`_disclosure_clear`). Nothing kept is an
answer for a notice as a whole: the case's own values (case id, dates, amounts, score)
are read in every notice.

Not checked here: that the model is right, that a reason is causal, or that the frame
is legally adequate (model validation and legal review).
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache, partial
from itertools import chain, compress
from operator import itemgetter
from typing import NamedTuple

from credit.bureau_formats import BureauFormats
from credit.catalogue import ReasonEntry
from credit.errors import NoticeInputError
from credit.guardrails.pins import (
    BUREAU_PLACEHOLDERS,
    KEY_FACTOR_VALUE,
    BureauLine,
    Pins,
    default_pins,
)
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


_CENT = Decimal("0.01")


def _money(value: Decimal) -> str:
    """``$24,000.00``, derived here independently of the renderer: to the cent, digits
    in groups of three."""
    return f"{'-' if value < 0 else ''}${abs(value).quantize(_CENT):,f}"


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


class _TextReason(NamedTuple):
    number: int
    label: str
    sentence: str


_Pair = tuple[int, str, Mapping[str, str], str, _TextReason]


class _Facts:
    """What a check found for one reason as stated (its code, category, label,
    sentence and values), None until a check asks: whether its text cites no basis and
    it maps to no excluded attribute (V3); whether it states its values under the
    catalogue's category, without a generic phrase (V4, given the decision's values);
    whether its sentence is an approved wording filled with its values (V6, V8);
    whether a key factor's value it states is in the bureau's form, and whether its
    machine fields are printable ASCII (V8). Each depends only on the reason and the
    pinned data."""

    __slots__ = ("approved", "cites_nothing", "in_form", "plain", "specific")

    def __init__(self) -> None:
        self.cites_nothing: bool | None = None
        self.specific: bool | None = None
        self.approved: bool | None = None
        self.in_form: bool | None = None
        self.plain: bool | None = None


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
    # the values the decision states for each derived reason code
    expected_values: dict[str, Mapping[str, str]] = field(default_factory=dict)
    _facts: list[_Facts] | None = None
    _shown: list[KeyFactorFacts] | None = None
    _lines: list[str] | None = None
    _frame: tuple[_FramePlan, list[str]] | None = None

    def frame(self) -> tuple[_FramePlan, list[str]]:
        """The frame the notice must carry (:func:`_expected_frame`), derived once."""
        if self._frame is None:
            self._frame = _expected_frame(self)
        return self._frame

    def shown(self) -> list[KeyFactorFacts]:
        """The key factors the credit-score disclosure shows (none without a score)."""
        if self._shown is None:
            score = self.expectation.credit_score
            self._shown = _key_factors(self.pins, score.key_factors) if score else []
        return self._shown

    @property
    def pairs(self) -> list[_Pair]:
        """Each machine reason with the text reason in the same position: (position,
        code, values, category, text reason)."""
        return [
            (i, reason.code, reason.values, reason.category, text)
            for i, (reason, text) in enumerate(
                zip(self.notice.reasons, self.text_reasons, strict=False), start=1
            )
        ]

    def lines(self) -> list[str]:
        """The text's lines (``text.split("\\n")``), read once."""
        if self._lines is None:
            self._lines = self.notice.text.split("\n")
        return self._lines

    def paragraph_lines(self, at: int) -> list[str]:
        """The lines of paragraph ``at``: the same strings as :meth:`lines` (a
        paragraph's lines, then an empty line, then the next paragraph's)."""
        begins = sum(map(len, self.paragraphs[:at])) + 2 * at  # where it begins in the text
        start = self.notice.text.count("\n", 0, begins)
        return self.lines()[start : start + self.paragraphs[at].count("\n") + 1]

    def facts(self) -> list[_Facts]:
        """What is known of each paired reason as stated, in the order of ``pairs``:
        kept per pinned data by the reason's code, category, label, sentence and values
        (what recurs across applicants), so what a check found for a reason stated so
        before is not looked for again."""
        if self._facts is None:
            kept = self.pins.kept("reasons")
            facts = []
            for reason, text in zip(self.notice.reasons, self.text_reasons, strict=False):
                values = reason.values
                key = (reason.code, reason.category, text.label, text.sentence, *values.items())
                found: _Facts | None = kept.get(key)
                facts.append(found if found is not None else kept.put(key, _Facts()))
            self._facts = facts
        return self._facts

    @property
    def entries(self) -> Mapping[str, ReasonEntry]:
        """The catalogue's entries by reason code."""
        return self.pins.catalogue.entries


def _starting(paragraphs: list[str], text: str) -> list[int]:
    """The paragraphs that start with ``text``, by index."""
    return [at for at, paragraph in enumerate(paragraphs) if paragraph.startswith(text)]


def _first_lines(paragraphs: list[str], line: str) -> list[int]:
    """The paragraphs whose first line (up to the first newline) is ``line``, by index."""
    if "\n" in line:
        return []
    first = line + "\n"
    return [at for at, p in enumerate(paragraphs) if p.startswith(first) or p == line]


def _headings(pins: Pins) -> tuple[str, str]:
    """The frame's label of the action statement and heading of the reasons list."""
    kept = pins.kept("headings")
    found: tuple[str, str] | None = kept.get(None)
    if found is None:
        found = kept.put(None, (pins.frame["actionTaken.label"], pins.frame["reasons.heading"]))
    return found


def _read(notice: Notice, expectation: Expectation, pins: Pins) -> _Subject:
    paragraphs = notice.text.split("\n\n")
    label, heading = _headings(pins)
    action = _starting(paragraphs, label)
    listed = _first_lines(paragraphs, heading)
    subject = _Subject(notice, expectation, pins, paragraphs, action, None, [])
    subject.expected_values = {r.code: r.values for r in expectation.reasons}
    if not listed:
        subject.reason_errors.append(f"the text has no {heading!r} paragraph")
        return subject
    if len(listed) > 1:
        subject.reason_errors.append(f"the text has {len(listed)} {heading!r} paragraphs")
    subject.reasons_at = listed[0]
    lines = paragraphs[listed[0]].split("\n")[1:]
    text_reasons = subject.text_reasons
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
        text_reasons.append(
            _TextReason(int(m.group(1)), m.group(2), lines[at + 1][len(_SENTENCE_INDENT) :])
        )
        at += 2
    numbers = [r.number for r in text_reasons]
    if numbers != list(range(1, len(numbers) + 1)):
        subject.reason_errors.append(f"the reasons are numbered {numbers}, not 1..{len(numbers)}")
    return subject


# ---------------------------------------------------------------- the expected frame


def _key_factors(pins: Pins, factors: tuple[KeyFactorFacts, ...]) -> list[KeyFactorFacts]:
    limit, inquiries = pins.frame.max_key_factors, pins.frame.inquiries_bureau_codes
    shown = list(factors[:limit])
    for k in shown:
        if k.code in inquiries:
            return shown
    for k in factors[limit:]:
        if k.code in inquiries:
            shown.append(k)
            break
    return shown


# The derived frame is compiled once per shape of notice (a counteroffer or not, the
# product, a credit score or not, a score model or not, how many key factors shown)
# into its text, paragraph by paragraph, with a place for each value the expectation
# gives (by its index in _FIELDS; a value of the frame itself is put in as text). Each
# template is filled with the values the derivation gives it and no others: a
# placeholder it lacks is missing (the frame loader allows no other names).
_FIELDS = (  # the values, by position; then each key factor shown: text, value, code
    "caseId",
    "noticeDate",
    "amount",
    "termMonths",
    "apr",
    "payment",
    "creditLine",
    "offerExpires",
    "score",
    "scoreLow",
    "scoreHigh",
    "scoreDate",
    "scoreModel",
    "bureauName",
    "bureauAddress",
    "bureauPhone",
)
_FACTOR_FIELDS = ("keyFactorText", "keyFactorValue", "keyFactorCode")
_NO_OFFER = ("",) * 6  # amount .. offerExpires


_Piece = str | int  # text as it stands, or the index of a value


def _slots(*names: str, factor: int | None = None) -> dict[str, _Piece]:
    """Each placeholder name as the index of the value it is filled with."""
    if factor is not None:
        at = len(_FIELDS) + 3 * factor
        return {name: at + k for k, name in enumerate(names)}
    return {name: _FIELDS.index(name) for name in names}


@dataclass(frozen=True, slots=True)
class _Filling:
    """Text with values put in: ``texts[0] value texts[1] value ... texts[-1]``, the
    values at ``at`` of the values given, in order (read at C speed: ``pick``)."""

    texts: tuple[str, ...]
    at: tuple[int, ...]
    pick: Callable[[Sequence[str]], tuple[str, ...]]

    @classmethod
    def of(cls, pieces: list[_Piece]) -> _Filling:
        texts, at = [""], []
        for piece in pieces:
            if isinstance(piece, str):
                texts[-1] += piece
            else:
                at.append(piece)
                texts.append("")
        pick: Callable[[Sequence[str]], tuple[str, ...]]
        if len(at) > 1:
            pick = itemgetter(*at)
        elif at:
            pick = partial(_one, at[0])
        else:
            pick = _none
        return cls(tuple(texts), tuple(at), pick)

    def fill(self, values: Sequence[str]) -> str:
        # each text but the last with the value after it, then the last
        pairs = zip(self.texts, self.pick(values), strict=False)
        return "".join(chain.from_iterable(pairs)) + self.texts[-1]


def _one(at: int, values: Sequence[str]) -> tuple[str, ...]:
    return (values[at],)


def _none(values: Sequence[str]) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True, slots=True)
class _FramePlan:
    """The frame paragraphs of one shape of notice, each to be filled with the
    expectation's values (and all of them as one); and the first placeholder without a
    value, found before the offer is read (the header's) or after (the counteroffer's,
    the credit score's, the ECOA paragraph's)."""

    paragraphs: tuple[_Filling, ...]
    whole: _Filling
    missing_first: str | None
    missing_after_offer: str | None
    disclosure: _Disclosure | None  # None: its bureau lines depend on more than values


@dataclass(frozen=True, slots=True)
class _BureauSlot:
    """A line of the credit-score disclosure that prints bureau values, as a plan fills
    it: its kind, the index among the values of its key factor's code (for a kind whose
    format depends on the code) and, for each of its placeholders that has a format (a
    bureau value's or a key factor's), the index of the value it is filled with and its
    name."""

    kind: BureauLine
    code_at: int | None
    values: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class _Disclosure:
    """A plan's credit-score disclosure (None: a notice of this shape has none) and its
    bureau lines, for :func:`_disclosure_clear`."""

    paragraph: _Filling | None
    slots: tuple[_BureauSlot, ...]


def _frame_plan(
    pins: Pins, counter: bool, product: str, score: bool, model: bool, factors: int
) -> _FramePlan:
    f = pins.frame
    first: list[str] = []
    after: list[str] = []

    def fill(key: str, slots: Mapping[str, _Piece], missing: list[str]) -> list[_Piece]:
        texts, names = _template(f[key])
        out: list[_Piece] = [texts[0]]
        for name, text in zip(names, texts[1:], strict=True):
            if name not in slots:
                missing.append(name)
            out += (slots.get(name, ""), text)
        return out

    common = {**_slots("caseId", "noticeDate"), "productName": f[f"products.{product}"]}
    paras: list[list[list[_Piece]]] = [
        [[f["creditor.name"]], [f["creditor.address"]]],
        [
            [f["header.title"]],
            fill("header.date", common, first),
            fill("header.application", common, first),
        ],
    ]
    if counter:
        if product == "auto":
            terms = fill(
                "counteroffer.auto", _slots("amount", "termMonths", "apr", "payment"), after
            )
        else:
            terms = fill("counteroffer.card", _slots("creditLine", "apr", "payment"), after)
        standing = {"validDays": str(f.offer_valid_days), **_slots("offerExpires")}
        paras.append(
            [[f["counteroffer.heading"]], terms, fill("counteroffer.standing", standing, after)]
        )
    lines: list[list[_Piece]] = []  # the credit score's, each made from (key, factor)
    made: list[tuple[str | None, int | None]] = []
    if score:
        bureau = _slots("bureauName", "bureauAddress", "bureauPhone")
        scored = _slots("score", "scoreLow", "scoreHigh", "scoreDate", "scoreModel", "bureauName")
        keys = ["creditScore.intro", "creditScore.score", "creditScore.range", "creditScore.date"]
        keys += ["creditScore.model"] if model else []
        made = [(None, None), *((key, None) for key in keys), (None, None)]
        lines = [
            [f["creditScore.heading"]],
            fill("creditScore.intro", bureau, after),
            *(fill(key, scored, after) for key in keys[1:]),
            [f["creditScore.keyFactorsHeading"]],
        ]
        for k in range(factors):
            lines.append(fill("creditScore.keyFactor", _slots(*_FACTOR_FIELDS, factor=k), after))
            made.append(("creditScore.keyFactor", k))
        if not factors:
            lines.append([f["creditScore.noKeyFactors"]])
            made.append((None, None))
        for key in ("agency", "notDecision", "freeReport", "dispute"):
            lines.append(fill(f"creditScore.{key}", bureau, after))
            made.append((f"creditScore.{key}", None))
        paras.append(lines)
    agency = {"agencyName": f["ecoa.agencyName"], "agencyAddress": f["ecoa.agencyAddress"]}
    paras.append([[f["ecoa.heading"]], fill("ecoa.text", agency, after)])
    paragraphs = [_joined_pieces(lines, "\n") for lines in paras]
    paragraphs[-1].append("\n")
    fillings = tuple(_Filling.of(p) for p in paragraphs)
    # the credit score's paragraph is the one before the ECOA paragraph
    disclosure = (
        _disclosure_plan(pins, lines, made, fillings[-2]) if score else _Disclosure(None, ())
    )
    return _FramePlan(
        fillings,
        _Filling.of(_joined_pieces(paragraphs, "\n\n")),
        first[0] if first else None,
        after[0] if after else None,
        disclosure,
    )


def _disclosure_plan(
    pins: Pins,
    lines: list[list[_Piece]],
    made: list[tuple[str | None, int | None]],
    paragraph: _Filling,
) -> _Disclosure | None:
    """The credit-score disclosure of a plan (its ``lines``, each made from a frame key
    and the key factor it shows, or a line of text alone) with its bureau lines, where
    which lines are bureau lines, and of which kind, follows from the templates for any
    values without a newline: a line that begins with text no kind's first words can
    begin or be begun by is none, and a line of a kind's template, whose first words
    are the kind's own and no other's, is of that kind alone. None where it depends on
    the values, or where a bureau value's format, as part of its line's pattern, may
    match otherwise than alone (then the check decides)."""
    if not pins.bureau_values_compose:
        return None
    kinds = pins.bureau_lines
    slots: list[_BureauSlot] = []
    seen: dict[str, int] = {}
    for pieces, (key, factor) in zip(lines, made, strict=True):
        line = _Filling.of(pieces)
        if any("\n" in text for text in line.texts):  # one line of the text each (the
            return None  # frame's loader allows no newline in a template: not relied on)
        head = line.texts[0]  # the text before its first value
        if not line.at:  # a line of text alone: a bureau line or not, whatever the values
            if any(head.startswith(k.prefix) and k.loose.fullmatch(head) for k in kinds):
                return None
            continue
        own = None
        for kind in kinds:
            if kind.key == key and head == kind.prefix:
                own = kind
            elif head.startswith(kind.prefix) or kind.prefix.startswith(head):
                return None  # of this kind or not by its values
        if own is None or key is None:
            continue
        texts, names = _template(pins.frame[key])
        if line.texts != texts or len(names) != len(line.at):
            return None
        code_at = None
        nth = seen[own.key] = seen.get(own.key, -1) + 1  # its place among its kind's lines
        if len(own.strict) > 1:  # a value in the format of the key factor's code
            if factor != nth:
                return None
            code_at = len(_FIELDS) + 3 * factor + 2
        formatted = [
            (at, name)
            for at, name in zip(line.at, names, strict=True)
            if name in BUREAU_PLACEHOLDERS or name == KEY_FACTOR_VALUE
        ]  # each other value is any text without a newline, as every value must be
        slots.append(_BureauSlot(own, code_at, tuple(formatted)))
    return _Disclosure(paragraph, tuple(slots))


def _joined_pieces(parts: list[list[_Piece]], between: str) -> list[_Piece]:
    out: list[_Piece] = []
    for k, part in enumerate(parts):
        out += [between, *part] if k else part
    return out


def _expected_frame(subject: _Subject) -> tuple[_FramePlan, list[str]]:
    """The frame the notice must carry, with the action statement and the reasons list
    left out (V5 and V1-V8 check those): the plan of the pinned frame's templates for
    the notice's shape (:func:`_frame_plan`) and the expectation's values it is filled
    with, by position (:data:`_FIELDS`)."""
    e, pins = subject.expectation, subject.pins
    s = e.credit_score
    shown = subject.shown()
    counter = e.decision == "counteroffer"
    key = (
        counter,
        e.product,
        s is not None,
        s is not None and s.score_model is not None,
        len(shown),
    )
    plans = pins.kept("frame_plans")
    plan: _FramePlan | None = plans.get(key)
    if plan is None:
        plan = plans.put(key, _frame_plan(pins, *key))
    if plan.missing_first is not None:
        raise _Missing(plan.missing_first)
    values = [e.case_id, e.notice_date.isoformat()]
    if counter:
        offer = e.offer
        if offer is None:
            raise _Missing("offer")
        if e.product == "auto":
            if offer.amount is None or offer.term_months is None:
                raise _Missing("offer.amount")
            amount, term, line = _money(offer.amount), str(offer.term_months), ""
        else:
            if offer.credit_line is None:
                raise _Missing("offer.creditLine")
            amount, term, line = "", "", _money(offer.credit_line)
        until = e.notice_date + dt.timedelta(days=pins.frame.offer_valid_days)
        values += (amount, term, str(offer.apr), _money(offer.payment), line, until.isoformat())
    else:
        values += _NO_OFFER
    if plan.missing_after_offer is not None:
        raise _Missing(plan.missing_after_offer)
    if s is not None:
        values += (
            str(s.score),
            str(s.score_low),
            str(s.score_high),
            s.score_date.isoformat(),
            s.score_model or "",
            s.bureau_name,
            s.bureau_address,
            s.bureau_phone,
        )
        for factor in shown:
            values += (factor.text, factor.value, factor.code)
    return plan, values


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
    return True, _v1_passed(expected)


def _v1_passed(codes: tuple[str, ...]) -> str:
    return f"reason codes match the derivation: {', '.join(codes) or 'none'}"


def _v2_reason_count(s: _Subject) -> tuple[bool, str]:
    decision = s.expectation.decision
    most = s.pins.rules.max_reasons
    machine, text = len(s.notice.reasons), len(s.text_reasons)
    problems = []
    for where, n in (("machine fields", machine), ("text", text)):
        if decision in _NO_NOTICE and n:
            problems.append(f"a decision to {decision} states no reasons, the {where} have {n}")
        elif decision not in _NO_NOTICE and not 1 <= n <= most:
            problems.append(f"a {decision} states 1 to {most} reasons, the {where} have {n}")
    if problems:
        return False, _joined(problems)
    return True, _v2_passed(machine, decision, most)


def _v2_passed(reasons: int, decision: str, most: int) -> str:
    return f"{reasons} reasons for a {decision} (1 to {most})"


def _reason_text(category: str, values: Mapping[str, str], text: _TextReason | None) -> str:
    """A reason's text as V3 reads it: category, values, label, sentence."""
    parts = [category, *values.values()]
    if text is not None:
        parts += (text.label, text.sentence)
    return " | ".join(parts)


def _cites(pins: Pins, text: str) -> bool:
    """:func:`_may_cite`, kept by the text (the same texts recur)."""
    kept = pins.kept("may_cite")
    found: bool | None = kept.get(text)
    return found if found is not None else kept.put(text, _may_cite(pins, text))


def _v3_no_prohibited_basis(s: _Subject) -> tuple[bool, str]:
    problems = []
    reasons, text_reasons = s.notice.reasons, s.text_reasons
    entries = s.entries
    texts: list[str] = []  # each reason's text: label, sentence, values
    for i, reason in enumerate(reasons):
        entry = entries.get(reason.code)
        if entry is not None and entry.excluded_attributes:
            problems.append(
                f"reason {i + 1} ({reason.code}) maps to the excluded attribute(s) "
                f"{', '.join(entry.excluded_attributes)}"
            )
        texts.append(
            _reason_text(
                reason.category, reason.values, text_reasons[i] if i < len(text_reasons) else None
            )
        )
    texts += [f"{extra.label} | {extra.sentence}" for extra in text_reasons[len(reasons) :]]
    # A reason's text that cannot cite a basis has no citation to report, whatever
    # the whole says; the answer for each text is kept (the same texts recur).
    if any(_cites(s.pins, t) for t in texts) and _may_cite(s.pins, "\n".join(texts)):
        for i, text in enumerate(texts):  # then say which reason
            which = f"reason {i + 1}" + (f" ({reasons[i].code})" if i < len(reasons) else "")
            problems += [f"{which} text cites {m.describe()}" for m in s.pins.terms.find(text)]
    if problems:
        return False, _joined(problems)
    return True, _v3_passed(len(reasons))


def _v3_passed(reasons: int) -> str:
    return f"no excluded attribute or prohibited-basis term in {reasons} reasons"


_WORD = re.compile(r"[a-z0-9]+")


def _may_cite(pins: Pins, text: str) -> bool:
    """Whether the text cites a prohibited basis, by the matcher of
    :mod:`credit.fairness_terms`. ASCII text that has, as a word, not one term's
    longest word, and that no pattern matches (of those with one of their words in
    it: no other can cite), cannot cite a basis, so the matcher is skipped for it (a
    quick pre-check; a hypothesis test pins that it never hides a match). Non-ASCII
    text always goes to the matcher (NFKC may fold it into a term)."""
    if not text.isascii():
        return bool(pins.terms.find(text))
    lower = text.lower()  # what the matcher normalises ASCII text to
    words = set(_WORD.findall(lower))
    if words.isdisjoint(pins.term_words) and not pins.terms.pattern_may_match(lower, words):
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


def _generic(pins: Pins, sentence: str) -> list[str]:
    """The sentence's generic phrases (kept by the sentence)."""
    kept = pins.kept("generic")
    found: list[str] | None = kept.get(sentence)
    return (
        found if found is not None else kept.put(sentence, pins.rules.generic_phrases_in(sentence))
    )


def _v4_specific_reasons(s: _Subject) -> tuple[bool, str]:
    problems = []
    expected = s.expected_values
    product_name = s.pins.catalogue.product_names.get(s.expectation.product)
    entries = s.entries
    for i, code, values, category, text in s.pairs:
        entry = entries.get(code)
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
        generic = _generic(s.pins, text.sentence)
        if generic:
            problems.append(f"reason {i} ({code}) uses generic phrase(s): {', '.join(generic)}")
    for i, reason in enumerate(s.notice.reasons[len(s.text_reasons) :], len(s.text_reasons) + 1):
        problems.append(f"reason {i} ({reason.code}) has no sentence stating its values")
    if problems:
        return False, _joined(problems)
    return True, _V4_PASSED


_V4_PASSED = "every reason states the applicant's values under its catalogue category"


def _statement(pins: Pins, decision: str, product: str) -> str:
    """The statement of the action taken for a decision on a product (kept by both)."""
    kept = pins.kept("statements")
    found: str | None = kept.get((decision, product))
    if found is None:
        f = pins.frame
        found = kept.put(
            (decision, product),
            f"{f['actionTaken.label']} "
            + _subst(f[f"actionTaken.{decision}"], {"productName": f[f"products.{product}"]}),
        )
    return found


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
        statement = _statement(s.pins, e.decision, e.product)
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
    return True, _v5_passed(e.decision)


def _v5_passed(decision: str) -> str:
    return f"the statement and the decision field say {decision}, as recorded"


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
    entries = s.entries
    for i, code, values, _, text in s.pairs:
        entry = entries.get(code)
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
    return True, _V6_PASSED


_V6_PASSED = "every number a reason states is one its approved wording states"


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


def _without(items: list[str], skip: list[int]) -> list[str]:
    """The items but those at the indices ``skip`` (ascending, each once)."""
    out, at = [], 0
    for index in skip:
        out += items[at:index]
        at = index + 1
    return out + items[at:]


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
        plan, values = s.frame()
    except _Missing as missing:
        problems.append(f"the expectation lacks {missing.name} to derive the frame")
        return False, _joined(problems)
    skip = {*s.action[:1], *([] if s.reasons_at is None else [s.reasons_at])}
    got = _without(s.paragraphs, sorted(skip))
    want_hash = pins.frame_sha256 or ""
    # compared as text: the same text exactly when the same SHA-256
    if plan.whole.fill(values) != "\n\n".join(got):
        want = [p.fill(values) for p in plan.paragraphs]
        problems.append(
            f"the frame paragraphs do not hash to the pinned frame: {_first_difference(want, got)}"
        )
    if problems:
        return False, _joined(problems)
    return True, f"frame paragraphs intact; frame {want_hash[:12]} is the reviewed one"


_BAD_IN_TEXT = re.compile(r"[^\x20-\x7e\n]")
_BAD_IN_FIELD = re.compile(r"[^\x20-\x7e]")


_PRINTABLE = bytes(range(0x20, 0x7F))  # printable ASCII: U+0020..U+007E


def _bad_characters(text: str, *, newline_ok: bool) -> list[tuple[int, str]]:
    """Every character that is not printable ASCII (a newline is allowed in text)."""
    if text.isascii():  # then nothing to find when deleting the allowed bytes leaves none
        allowed = _PRINTABLE + b"\n" if newline_ok else _PRINTABLE
        if not text.encode("ascii").translate(None, allowed):
            return []
    pattern = _BAD_IN_TEXT if newline_ok else _BAD_IN_FIELD
    return [(m.start(), m.group()) for m in pattern.finditer(text)]


def _fields(n: Notice) -> str:
    """The notice's machine fields joined (checked a character at a time: joined)."""
    fields = [n.case_id, n.frame_sha256, n.catalogue_sha256]
    for r in n.reasons:
        fields += [r.code, r.category, *r.values.keys(), *r.values.values()]
    return "".join(fields)


def _v8_approved_wording(s: _Subject) -> tuple[bool, str]:
    n = s.notice
    problems = []
    bad = _bad_characters(n.text, newline_ok=True)
    if bad:
        shown = ", ".join(f"U+{ord(ch):04X} at {i}" for i, ch in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        problems.append(f"the text has non-ASCII or control characters: {shown}{more}")
    if _bad_characters(_fields(n), newline_ok=False):
        problems.append("a machine field has non-ASCII or control characters")
    entries = s.entries
    for i, code, values, _, text in s.pairs:
        entry = entries.get(code)
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
    return True, _V8_PASSED


_V8_PASSED = "ASCII text; every reason an approved wording; no promise; bureau values in form"


def _bureau_values(s: _Subject) -> list[str]:
    """Every bureau value the notice states, in its strict format: a key factor's value
    in a reason's values, and the credit-score disclosure's lines that print one."""
    problems = []
    for i, reason in enumerate(s.notice.reasons, start=1):
        wrong = _key_factor_problem(s.pins, reason.code, reason.values)
        if wrong is not None:
            problems.append(f"reason {i} ({reason.code}) states a bureau value: {wrong}")
    return problems + _disclosure_problems(s)


def _key_factor_problem(pins: Pins, code: str, values: Mapping[str, str]) -> str | None:
    """What is wrong with the key factor's value a reason states, if it states one."""
    entry = pins.catalogue.entries.get(code)
    if entry is None or entry.bureau_code is None or KEY_FACTOR_VALUE not in values:
        return None
    return pins.formats.check_key_factor(entry.bureau_code, values[KEY_FACTOR_VALUE])


def _disclosure_problems(s: _Subject) -> list[str]:
    """The credit-score disclosure's lines that print a bureau value out of form."""
    formats, problems = s.pins.formats, list[str]()
    disclosure = _first_lines(s.paragraphs, s.pins.frame["creditScore.heading"])
    if not disclosure:
        return problems
    shown = s.shown()
    # which bureau lines each line of the disclosure is (kept by its text), and the
    # lines of each, in order
    kinds, strict = s.pins.kept("bureau_kinds"), s.pins.kept("bureau_strict")
    lines = s.paragraph_lines(disclosure[0])
    belong: list[frozenset[str] | None] = list(map(kinds.get, lines))  # at C speed
    if None in belong:
        for at, line in enumerate(lines):
            if belong[at] is None:
                belong[at] = kinds.put(
                    line,
                    frozenset(
                        lp.key
                        for lp in s.pins.bureau_lines
                        if line.startswith(lp.prefix) and lp.loose.fullmatch(line)
                    ),
                )
    lines_of: dict[str, list[str]] = {}
    for line, kind in compress(zip(lines, belong, strict=True), belong):  # those that are any
        for name in kind or ():
            lines_of.setdefault(name, []).append(line)
    if not lines_of:
        return problems
    for line_pins in s.pins.bureau_lines:
        per_factor = len(line_pins.strict) > 1
        for k, line in enumerate(lines_of.get(line_pins.key, ())):
            code = shown[k].code if per_factor and k < len(shown) else None
            if code is not None and code not in line_pins.strict:
                problems.append(f"key factor {code} has no format in {formats.name}")
                continue
            in_form = strict.get(key := (line_pins.key, code, line))
            if in_form is None:
                in_form = strict.put(key, line_pins.strict[code].fullmatch(line) is not None)
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


def _disclosure_clear(s: _Subject) -> bool:
    """Whether the check of the disclosure's bureau lines finds nothing
    (:func:`_disclosure_problems`), decided from the values the frame's plan fills them
    with: the notice's disclosure (the first paragraph under its heading, the one the
    check reads) is the plan's, exactly, and none of its values holds a newline (so its
    lines are the plan's lines filled, each a bureau line of the kind the plan says or
    none), and each value of a bureau line is in its format (kept by value: the
    bureau's name, address and telephone recur in every notice). Then each line matches
    its kind's pattern, whose parts are those formats. False where it cannot be decided
    so: then the check decides."""
    try:
        plan, values = s.frame()
    except _Missing:
        return False
    disclosure = plan.disclosure
    if disclosure is None:
        return False
    found = _first_lines(s.paragraphs, s.pins.frame["creditScore.heading"])
    paragraph = disclosure.paragraph
    if paragraph is None:
        return not found
    if not found or s.paragraphs[found[0]] != paragraph.fill(values):  # the one checked
        return False
    if "\n" in "".join(paragraph.pick(values)):
        return False
    kept, formats = s.pins.kept("bureau_values"), s.pins.formats
    for slot in disclosure.slots:
        code = None if slot.code_at is None else values[slot.code_at]
        if code is not None and code not in slot.kind.strict:
            return False
        for at, name in slot.values:
            key = (name, code, values[at])
            in_form: bool | None = kept.get(key)
            if in_form is None:
                in_form = kept.put(key, _in_format(formats, name, code, values[at]))
            if not in_form:
                return False
    return True


def _in_format(formats: BureauFormats, name: str, code: str | None, value: str) -> bool:
    """Whether a value matches the part of its line's pattern written for its
    placeholder ``name``: the bureau field's format, or the key factor's (by its code)."""
    field = BUREAU_PLACEHOLDERS.get(name)
    if field is not None:
        return formats.fields[field].pattern.fullmatch(value) is not None
    return code is not None and formats.key_factors[code].pattern.fullmatch(value) is not None


# ---------------------------------------------------------------- the clear way
#
# A genuine notice passes every check. The clear way reads it once for all eight: for
# each check, whether the parts of the notice that check reads hold as a notice that
# passes it has them (its reasons as stated before, with what each check found for
# them kept as _Facts; the decision's values; the frame; the disclosure; no promise);
# if so it gives the check's pass detail, and the check is not run. Otherwise (or when
# it cannot read what it needs, or the check was replaced) the check itself decides
# and says why it fails. So every verdict and detail is the check's own: a hypothesis
# property compares them over notices with any defect (tests/test_verifier_fast.py),
# and the mutation suite, which replaces checks, gives the same results.


def _clear_way(s: _Subject) -> list[str | None]:
    """For each check V1..V8 in order, its pass detail if the clear way finds that it
    passes, else None."""
    n, e, pins = s.notice, s.expectation, s.pins
    reasons, texts = n.reasons, s.text_reasons
    count, stated = len(reasons), len(texts)
    out: list[str | None] = [None] * len(CHECK_IDS)
    decision = e.decision

    expected = e.reason_codes  # V1
    if n.reason_codes == expected and (
        (s.reasons_at is None and not reasons) or (not s.reason_errors and stated == count)
    ):
        out[0] = _v1_passed(expected)

    most = pins.rules.max_reasons  # V2
    if (0 == count == stated) if decision in _NO_NOTICE else (1 <= count == stated <= most):
        out[1] = _v2_passed(count, decision, most)

    # V3, V4, V6, V8: each reason as stated, with what each check found for it kept
    cites, specific, grounded, approved = stated == count, count <= stated, True, stated == count
    values_of, entries = s.expected_values, pins.catalogue.entries
    product_name = pins.catalogue.product_names.get(e.product)
    for reason, text, facts in zip(reasons, texts, s.facts(), strict=False):
        code, values, category = reason.code, reason.values, reason.category
        want = values_of.get(code)
        if cites:  # no excluded attribute, and a text that cannot cite a basis
            clear = facts.cites_nothing
            if clear is None:
                entry = entries.get(code)
                clear = facts.cites_nothing = not (
                    entry is not None and entry.excluded_attributes
                ) and not _cites(pins, _reason_text(category, values, text))
            cites = clear
        if specific:  # the catalogue's category, each value stated, no generic phrase
            clear = facts.specific
            if clear is None:
                entry = entries.get(code)
                clear = facts.specific = (
                    entry is not None
                    and category == entry.category == text.label
                    and all(_states(text.sentence, values.get(name, "")) for name in entry.states)
                    and not _generic(pins, text.sentence)
                )
            # and the decision's values (so the same names and words), its product
            specific = (
                clear and values == want and values.get("productName", product_name) == product_name
            )
        if grounded or approved:  # a sentence that is an approved wording of its values
            clear = facts.approved
            if clear is None:
                entry = entries.get(code)
                try:
                    clear = entry is not None and text.sentence in _variants(pins, entry, values)
                except _Missing:
                    clear = False
                facts.approved = clear
            # V6: and the decision's values, so it states the numbers of its variant
            grounded = grounded and clear and (want is None or values == want)
            if approved:  # V8: a key factor's value it states in the bureau's form, ASCII
                in_form, plain = facts.in_form, facts.plain
                if in_form is None:
                    in_form = facts.in_form = _key_factor_problem(pins, code, values) is None
                if plain is None:
                    plain = facts.plain = not _bad_characters(
                        "".join([code, category, *values.keys(), *values.values()]),
                        newline_ok=False,
                    )
                approved = clear and in_form and plain
    if cites:
        out[2] = _v3_passed(count)
    if specific:
        out[3] = _V4_PASSED
    if grounded:
        out[5] = _V6_PASSED

    f = pins.frame  # V5
    if (
        n.decision == decision
        and n.case_id == e.case_id
        and n.product == e.product
        and n.notice_date.isoformat() == e.notice_date.isoformat()
        and decision not in _NO_NOTICE
        and f"actionTaken.{decision}" in f.texts
        and len(s.action) == 1
        and s.paragraphs[s.action[0]] == _statement(pins, decision, e.product)
    ):
        out[4] = _v5_passed(decision)

    passed, detail = _v7_legal_frame_intact(s)  # V7: its own way is the clear way
    if passed:
        out[6] = detail

    if (  # V8
        approved
        and not _bad_characters(n.text, newline_ok=True)
        and not _bad_characters(n.case_id + n.frame_sha256 + n.catalogue_sha256, newline_ok=False)
        and (_disclosure_clear(s) or not _disclosure_problems(s))
        and not pins.promise_scan.promises_in(n.text, lines=s.lines())
    ):
        out[7] = _V8_PASSED
    return out


_UNCLEAR: list[str | None] = [None] * len(CHECK_IDS)


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
        try:
            clear = _clear_way(subject)
        except Exception:  # what it cannot read, each check reads itself
            clear = _UNCLEAR
        checks = self.checks
        if None not in clear and checks == _CHECKS:  # every check passes, as before
            kept = self.pins.kept("passed")
            details = tuple(clear)
            results = kept.get(details)
            if results is None:
                results = kept.put(details, self._results(subject, clear))
            return _report(notice.case_id, notice_sha256, expectation.sha256, results, True)
        results = self._results(subject, clear)
        passed = all(result.passed for result in results)
        return _report(notice.case_id, notice_sha256, expectation.sha256, results, passed)

    def _results(self, subject: _Subject, clear: list[str | None]) -> tuple[CheckResult, ...]:
        """Each check's result: the clear way's pass, or the check's own verdict."""
        results = []
        for key, cleared in zip(CHECK_IDS, clear, strict=True):
            check = self.checks[key]
            if cleared is not None and check is _CHECKS[key]:
                passed, detail = True, cleared
            else:
                try:
                    passed, detail = check(subject)
                except Exception as err:  # fail closed: a check that cannot run fails
                    passed, detail = False, f"internal error: {type(err).__name__}: {err}"
            results.append(CheckResult(id=key, name=CHECK_NAMES[key], passed=passed, detail=detail))
        return tuple(results)


def _report(
    case_id: str,
    notice_sha256: str,
    expectation_sha256: str,
    results: tuple[CheckResult, ...],
    passed: bool,
) -> VerificationReport:
    """What :meth:`VerificationReport.of` builds from the results :meth:`Verifier.verify`
    built, without validating again what holds by construction: each result is a
    validated CheckResult of the check its position names (V1..V8 in order, with its
    name), ``passed`` is whether every one passed and the hashes are hex strings (a
    test compares it with the validated report). A case id that is not a string (a notice
    built without validation) takes the validated way."""
    if type(case_id) is not str:
        return VerificationReport.of(
            case_id=case_id,
            notice_sha256=notice_sha256,
            expectation_sha256=expectation_sha256,
            checks=list(results),
        )
    return VerificationReport.of_checked(
        case_id=case_id,
        notice_sha256=notice_sha256,
        expectation_sha256=expectation_sha256,
        results=results,
        passed=passed,
    )


def verify(
    notice: Notice, expectation: Expectation, *, pins: Pins | None = None
) -> VerificationReport:
    """Check one notice against what it must say (with the packaged, pinned data)."""
    return Verifier(pins).verify(notice, expectation)
