"""Prohibited bases and their proxies as versioned data, and a whole-word matcher.

The data file (``data/prohibited-terms.yaml``) lists each ECOA prohibited basis
(12 CFR 1002.2(z)), ethnicity as monitoring information (1002.13), and the common
proxies for them. Each entry has a label, a legal reference, the whole-word ``terms``
that cite it in text and the normalised field ``keys`` that carry it; a proxy also
names the bases it stands in for and why. A basis may list ``exempt`` phrases in
which a term does not cite it ("average age of accounts" is not the applicant's age),
and ``patterns``: regular expressions for citations no list of words can hold
("applicants over 62"), each with the ``words`` one of which its every match contains
(so text with none of the file's words still never matches) and an example it matches.

The loader is strict like the policy loader: unknown, missing and duplicate keys, a
missing reference, a term or key listed twice, a term not written in normalised form,
an exempt phrase that contains none of its basis's terms, and a pattern that does not
compile, has groups, or does not match its example are
:class:`~credit.errors.PolicyError` naming the file and the key.

Matching (:func:`find_prohibited`) looks for every term, and every key as a whole
word (so "application.dateOfBirth" cites age as surely as "date of birth"). The text
is NFKC-normalised, stripped of format characters (zero-width spaces, soft hyphens),
casefolded, and typographic apostrophes become ``'``. A term matches only as whole
words: not preceded or followed by a letter or digit, and its words may be separated
by any run of spaces, hyphens or underscores. So "age" matches "because of your age",
"AGE-based" and the full-width "ａｇｅ", but not "percentage" or "mortgage"; "sex" does
not match "Essex". A pattern matches the normalised text as whole words too, and only
where its match contains one of its listed words.

Not formalised here: confusable letters from other scripts (a Cyrillic "а" in "аge"),
misspellings, stemming (plurals are listed in the data), and meaning: a term is a
signal for review, not a finding that a basis was used.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from credit.errors import PolicyError
from credit.yamldata import expect_keys, load_yaml, read_source, read_str, versioned

__all__ = [
    "REQUIRED_BASES",
    "Entry",
    "Match",
    "ProhibitedTerms",
    "TermPattern",
    "canonical_term",
    "default_prohibited_terms",
    "default_prohibited_terms_path",
    "find_prohibited",
    "load_prohibited_terms",
    "normalise_key",
    "normalise_text",
]

Kind = Literal["basis", "proxy"]

# The prohibited bases the file must list, each exactly once (12 CFR 1002.2(z), and
# ethnicity as monitoring information under 1002.13). The file's `bases` mapping has
# exactly these keys.
REQUIRED_BASES = (
    "race",
    "color",
    "religion",
    "nationalOrigin",
    "sex",
    "maritalStatus",
    "age",
    "publicAssistanceIncome",
    "ccpaRights",
    "ethnicity",
)

_HEADER_REQUIRED = frozenset({"name", "version", "effectiveDate", "reference", "bases", "proxies"})
_HEADER_OPTIONAL = frozenset({"description"})
_BASIS_REQUIRED = frozenset({"label", "reference", "terms", "keys"})
_BASIS_OPTIONAL = frozenset({"exempt", "patterns"})
_PATTERN_KEYS = frozenset({"id", "description", "words", "pattern", "example"})
_PROXY_REQUIRED = frozenset({"label", "proxyFor", "reference", "reason", "terms", "keys"})

# Separators between the words of a phrase: whitespace, hyphen, underscore and the
# Unicode dashes U+2010..U+2015 (NFKC leaves most of them as they are).
_FOUND_KEPT = 16_384  # texts whose answer find keeps (each a few matches at most)
_SEP = r"[\s\-_\u2010-\u2015]+"
_SEP_RE = re.compile(_SEP)
# A term is bounded by characters that are not letters or digits (underscore counts
# as a separator, so "date_of_birth" and "my_age" match).
_BEFORE = r"(?<![^\W_])"
_AFTER = r"(?![^\W_])"
_APOSTROPHES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u2032": "'"})


def normalise_text(text: str) -> str:
    """NFKC, without format characters (category Cf), casefolded, plain apostrophes."""
    if text.isascii():  # NFKC leaves ASCII as it is, it has no Cf character: a fast path
        return text.lower()
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return unicodedata.normalize("NFKC", text.casefold()).translate(_APOSTROPHES)


def normalise_key(key: str) -> str:
    """A field name reduced to its letters and digits, normalised and casefolded:
    ``dateOfBirth``, ``date_of_birth`` and ``Date-Of-Birth`` are all ``dateofbirth``."""
    return "".join(ch for ch in normalise_text(key) if ch.isalnum())


def canonical_term(term: str) -> str:
    """A phrase's words, normalised and joined by single spaces (how terms compare)."""
    return " ".join(w for w in _SEP_RE.split(normalise_text(term)) if w)


def _joined(matched: str) -> str:
    """The canonical form of matched (already normalised) text."""
    return " ".join(w for w in _SEP_RE.split(matched) if w)


# A run of letters and digits: a term's words begin and end with one, and a whole-word
# match begins and ends where the text's own runs do.
_RUN = re.compile(r"[^\W_]+")


def _gap_pattern(gap: str) -> re.Pattern[str]:
    """What may stand in the text between two runs of a term: a space of the term is
    any run of separators, any other character stands for itself ("driver's")."""
    return re.compile(_SEP.join(re.escape(piece) for piece in gap.split(" ")))


@dataclass(frozen=True, slots=True)
class _Phrase:
    canon: str
    rest: tuple[str, ...]  # the runs after the first
    gaps: tuple[re.Pattern[str], ...]  # between each run and the next


class _PhraseIndex:
    r"""Canonical phrases found as whole words, indexed by their first run.

    At each place where a run of the text begins, the longest phrase (then the first in
    alphabetical order) whose runs are the text's runs from there, with what lies between
    them allowed by the phrase, is the match: the same as a regular expression that
    alternates every phrase, longest first, between ``(?<![^\W_])`` and ``(?![^\W_])``,
    without compiling one (which took most of a command's start-up) and without trying
    every phrase at every position. ``tests/reference_matcher.py`` keeps that regular
    expression, only to check this index against it."""

    __slots__ = ("_by_first", "_wholes", "first_runs")

    def __init__(self, phrases: Any) -> None:
        gaps: dict[str, re.Pattern[str]] = {}
        by_first: dict[str, list[_Phrase]] = {}
        for canon in sorted(set(phrases), key=lambda t: (-len(t), t)):
            spans = [m.span() for m in _RUN.finditer(canon)]
            between = [canon[spans[k][1] : spans[k + 1][0]] for k in range(len(spans) - 1)]
            phrase = _Phrase(
                canon=canon,
                rest=tuple(canon[a:b] for a, b in spans[1:]),
                gaps=tuple(gaps.get(g) or gaps.setdefault(g, _gap_pattern(g)) for g in between),
            )
            by_first.setdefault(canon[spans[0][0] : spans[0][1]], []).append(phrase)
        self._by_first = {run: tuple(found) for run, found in by_first.items()}
        self.first_runs = frozenset(self._by_first)
        # each first run's phrases by the runs each is made of (a match holds them all)
        self._wholes = {
            run: tuple({frozenset((run, *p.rest)) for p in found})
            for run, found in self._by_first.items()
        }

    def may_match(self, present: set[str]) -> bool:
        """Whether some phrase has every one of its runs among ``present`` (the text's
        runs): a match is a phrase's runs one after the other in the text, so a text
        for which this is False holds no match (:meth:`spans` finds none)."""
        wholes = self._wholes
        for run in self.first_runs.intersection(present):
            for whole in wholes[run]:
                if whole <= present:
                    return True
        return False

    def match_at(
        self, norm: str, runs: list[str], spans: list[tuple[int, int]], i: int
    ) -> tuple[str, int] | None:
        """The phrase that matches at the text's ``i``-th run and the index of its last
        run, or None."""
        candidates = self._by_first.get(runs[i])
        if candidates is None:
            return None
        n = len(runs)
        for phrase in candidates:
            j = i
            for run, gap in zip(phrase.rest, phrase.gaps, strict=True):
                j += 1
                if (
                    j >= n
                    or runs[j] != run
                    or gap.fullmatch(norm, spans[j - 1][1], spans[j][0]) is None
                ):
                    break
            else:
                return phrase.canon, j
        return None

    def spans(
        self,
        norm: str,
        runs: list[str] | None = None,
        spans: list[tuple[int, int]] | None = None,
        keep: Callable[[int, int, str], bool] | None = None,
    ) -> list[tuple[int, int, str]]:
        """Every match in the text, leftmost first and not overlapping: (start, end,
        phrase). ``keep``: a match it refuses is passed over, and the search goes on
        from the next run (a shorter phrase inside may still match there)."""
        if runs is None or spans is None:
            found = list(_RUN.finditer(norm))
            runs, spans = [m.group() for m in found], [m.span() for m in found]
        out: list[tuple[int, int, str]] = []
        i, n = 0, len(runs)
        while i < n:
            hit = self.match_at(norm, runs, spans, i)
            if hit is None:
                i += 1
                continue
            canon, j = hit
            start, end = spans[i][0], spans[j][1]
            if keep is not None and not keep(start, end, canon):
                i += 1
                continue
            out.append((start, end, canon))
            i = j + 1
        return out


@dataclass(frozen=True, slots=True)
class TermPattern:
    """A citation no list of words can hold, as a regular expression on normalised
    text; a match counts only where it contains one of ``words`` as a whole word."""

    id: str
    description: str
    words: tuple[str, ...]
    pattern: str
    example: str
    compiled: re.Pattern[str]

    def holds_a_word(self, matched: str) -> bool:
        """Whether the matched text has one of the listed words as a whole word."""
        return not set(_RUN.findall(matched)).isdisjoint(self.words)


@dataclass(frozen=True, slots=True)
class Entry:
    """A prohibited basis, or a proxy for one or more bases."""

    kind: Kind
    name: str
    label: str
    reference: str
    bases: tuple[str, ...]  # a basis: itself; a proxy: the bases it stands in for
    terms: tuple[str, ...]
    keys: tuple[str, ...]
    exempt: tuple[str, ...] = ()
    reason: str | None = None  # a proxy: why it stands in for its bases
    patterns: tuple[TermPattern, ...] = ()


@dataclass(frozen=True, slots=True)
class Match:
    """One citation of a prohibited basis or proxy in a text.

    ``name`` is the basis (``kind == "basis"``) or the proxy (``kind == "proxy"``);
    ``bases`` the prohibited bases concerned; ``term`` the listed term (or key) that
    matched, or for a pattern its id (and ``pattern`` is true);
    ``text`` and ``start``/``end`` locate it in the *normalised* text.
    """

    kind: Kind
    name: str
    bases: tuple[str, ...]
    term: str
    text: str
    start: int
    end: int
    reference: str
    pattern: bool = False

    def describe(self) -> str:
        if self.pattern:
            what = (
                f"prohibited basis {self.name}"
                if self.kind == "basis"
                else (f"proxy {self.name} for {', '.join(self.bases)}")
            )
            return f"{what} (pattern {self.term}: {self.text!r})"
        if self.kind == "basis":
            return f"prohibited basis {self.name} ({self.term!r})"
        return f"proxy {self.name} for {', '.join(self.bases)} ({self.term!r})"


@dataclass(frozen=True)
class ProhibitedTerms:
    """A loaded, validated prohibited-terms file. Immutable."""

    name: str
    version: str
    effective_date: dt.date
    reference: str
    description: str | None
    source: str
    sha256: str
    entries: tuple[Entry, ...]
    _by_term: Mapping[str, tuple[Entry, str]] = field(repr=False, compare=False)
    _by_key: Mapping[str, Entry] = field(repr=False, compare=False)
    _exempt: Mapping[str, Entry] = field(repr=False, compare=False)
    _index: _PhraseIndex = field(repr=False, compare=False)
    _exempt_index: _PhraseIndex = field(repr=False, compare=False)
    _patterns: tuple[tuple[Entry, TermPattern], ...] = field(repr=False, compare=False)
    # every run that can begin a term or key, and every pattern's listed words: text
    # with none of them as a run matches nothing
    _openers: frozenset[str] = field(repr=False, compare=False)
    # what find gave for texts seen lately (the same reason and policy texts recur in
    # every case); emptied when it holds _FOUND_KEPT texts
    _found: dict[str, tuple[Match, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def bases(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.kind == "basis")

    @property
    def proxies(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.kind == "proxy")

    def __getitem__(self, name: str) -> Entry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(name)

    def entry_for_key(self, key: str) -> Entry | None:
        """The basis or proxy a field name carries (compared normalised), or None."""
        return self._by_key.get(normalise_key(key))

    def vocabulary(self) -> frozenset[str]:
        """Every word of every term, every key and every pattern's listed words: text
        without these never matches."""
        words = {w for e in self.entries for t in e.terms for w in canonical_term(t).split(" ")}
        listed = {w for e in self.entries for p in e.patterns for w in p.words}
        return frozenset(words | listed | set(self._by_key))

    @property
    def patterns(self) -> tuple[tuple[Entry, TermPattern], ...]:
        """Every pattern with the basis or proxy it cites."""
        return self._patterns

    def pattern_may_match(self, normalised: str, runs: AbstractSet[str]) -> bool:
        """Whether a pattern that may cite matches the (already normalised) text, whose
        runs are ``runs``: for a quick pre-check; :meth:`find` decides. Only the
        patterns one of whose words is a run are tried (:meth:`_worded`)."""
        return any(tp.compiled.search(normalised) for _, tp in self._worded(runs))

    def _worded(self, runs: AbstractSet[str]) -> list[tuple[Entry, TermPattern]]:
        """The patterns one of whose words is among a text's runs. A match counts only
        where it holds one of its pattern's words as a whole word, and a match begins
        and ends at a run's edge (each pattern is compiled so), so its runs are runs of
        the text: no other pattern can cite in it."""
        return [(e, tp) for e, tp in self._patterns if not runs.isdisjoint(tp.words)]

    def find(self, text: str) -> list[Match]:
        """Every citation of a basis or proxy in the text, in order of position.

        The answer for a text is kept (a bounded store of the latest texts): the
        commit seam, Equipoise and the guard ask about the same reason, factor and
        policy texts case after case. A Match is immutable, and each call gets a list
        of its own."""
        found = self._found.get(text)
        if found is None:
            found = tuple(self._find(text))
            if len(self._found) >= _FOUND_KEPT:
                self._found.clear()
            self._found[text] = found
        return list(found)

    def _find(self, text: str) -> list[Match]:
        norm = normalise_text(text)
        words = _RUN.findall(norm)
        present = set(words)
        if present.isdisjoint(self._openers):  # no run that can begin a match
            return []
        # a phrase matches only where all its runs are present; a pattern only where
        # one of its words is
        phrases = self._index.may_match(present)
        worded = self._worded(present)
        if not phrases and not worded:
            return []
        spans = [m.span() for m in _RUN.finditer(norm)]
        exempt: list[tuple[int, int, str]] | None = None  # read only once something matches

        def not_exempt(start: int, end: int, name: str) -> bool:
            nonlocal exempt
            if exempt is None:
                exempt = self._exempt_spans(norm, words, spans)
            return not any(s <= start and end <= e and n == name for s, e, n in exempt)

        def owner_not_exempt(start: int, end: int, canon: str) -> bool:
            return not_exempt(start, end, self._by_term[canon][0].name)

        found: list[Match] = []
        if phrases:
            for start, end, canon in self._index.spans(norm, words, spans, keep=owner_not_exempt):
                entry, term = self._by_term[canon]
                found.append(_cite(entry, term, norm[start:end], start, end))
        for entry, tp in worded:
            for m in tp.compiled.finditer(norm):
                if not tp.holds_a_word(m.group()) or not not_exempt(m.start(), m.end(), entry.name):
                    continue
                found.append(_cite(entry, tp.id, m.group(), m.start(), m.end(), pattern=True))
        if self._patterns:
            found.sort(key=lambda f: (f.start, f.pattern))
        return found

    def _exempt_spans(
        self, norm: str, words: list[str], spans: list[tuple[int, int]]
    ) -> list[tuple[int, int, str]]:
        return [
            (start, end, self._exempt[canon].name)
            for start, end, canon in self._exempt_index.spans(norm, words, spans)
        ]


def _cite(
    entry: Entry, term: str, text: str, start: int, end: int, *, pattern: bool = False
) -> Match:
    return Match(
        kind=entry.kind,
        name=entry.name,
        bases=entry.bases,
        term=term,
        text=text,
        start=start,
        end=end,
        reference=entry.reference,
        pattern=pattern,
    )


# ---------------------------------------------------------------- loading


def _read_list(value: Any, *, file: str, key: str, optional: bool = False) -> list[str]:
    if value is None and optional:
        return []
    if not isinstance(value, list) or not value:
        raise PolicyError("expected a non-empty list", file=file, key=key)
    return [read_str(v, file=file, key=f"{key}[{i}]") for i, v in enumerate(value)]


def _read_term(value: str, *, file: str, key: str) -> str:
    if value != normalise_text(value) or value != value.strip() or "  " in value:
        raise PolicyError(
            f"term {value!r} must be written normalised, as {canonical_term(value)!r}",
            file=file,
            key=key,
        )
    if not (value[0].isalnum() and value[-1].isalnum()):
        raise PolicyError(
            f"term {value!r} must begin and end with a letter or digit", file=file, key=key
        )
    return value


class _Builder:
    """Collects entries and rejects a term or key listed twice anywhere in the file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.entries: list[Entry] = []
        self.by_term: dict[str, tuple[Entry, str]] = {}
        self.term_where: dict[str, str] = {}
        self.by_key: dict[str, Entry] = {}
        self.key_where: dict[str, str] = {}
        self.exempt: dict[str, Entry] = {}
        self.pattern_ids: set[str] = set()

    def entry(self, kind: Kind, name: str, body: Any) -> None:
        file = self.file
        prefix = f"{'proxies' if kind == 'proxy' else 'bases'}.{name}"
        data = expect_keys(
            body,
            required=_PROXY_REQUIRED if kind == "proxy" else _BASIS_REQUIRED,
            optional=frozenset() if kind == "proxy" else _BASIS_OPTIONAL,
            file=file,
            key=prefix,
        )
        bases: tuple[str, ...] = (name,)
        if kind == "proxy":
            key = f"{prefix}.proxyFor"
            bases = tuple(_read_list(data["proxyFor"], file=file, key=key))
            for i, basis in enumerate(bases):
                if basis not in REQUIRED_BASES:
                    raise PolicyError(
                        f"{basis!r} is not a prohibited basis of this file",
                        file=file,
                        key=f"{key}[{i}]",
                    )
            if len(set(bases)) != len(bases):
                raise PolicyError("a basis is listed twice", file=file, key=key)
        label = read_str(data["label"], file=file, key=f"{prefix}.label")
        reference = read_str(data["reference"], file=file, key=f"{prefix}.reference")
        reason = None
        if kind == "proxy":
            reason = read_str(data["reason"], file=file, key=f"{prefix}.reason")
        terms = _read_list(data["terms"], file=file, key=f"{prefix}.terms")
        keys = _read_list(data["keys"], file=file, key=f"{prefix}.keys")
        exempt = _read_list(data.get("exempt"), file=file, key=f"{prefix}.exempt", optional=True)
        patterns = self.patterns(data.get("patterns"), prefix=f"{prefix}.patterns")
        entry = Entry(
            kind=kind,
            name=name,
            label=label,
            reference=reference,
            bases=bases,
            terms=tuple(terms),
            keys=tuple(keys),
            exempt=tuple(exempt),
            reason=reason,
            patterns=patterns,
        )
        for i, term in enumerate(terms):
            key = f"{prefix}.terms[{i}]"
            canon = canonical_term(_read_term(term, file=file, key=key))
            if canon in self.by_term:
                raise PolicyError(
                    f"term {term!r} is already listed at {self.term_where[canon]}",
                    file=file,
                    key=key,
                )
            self.by_term[canon], self.term_where[canon] = (entry, term), key
        for i, name_key in enumerate(keys):
            key = f"{prefix}.keys[{i}]"
            if name_key != normalise_key(name_key):
                raise PolicyError(
                    f"key {name_key!r} must be written normalised, as {normalise_key(name_key)!r}",
                    file=file,
                    key=key,
                )
            if name_key in self.by_key:
                raise PolicyError(
                    f"key {name_key!r} is already listed at {self.key_where[name_key]}",
                    file=file,
                    key=key,
                )
            self.by_key[name_key], self.key_where[name_key] = entry, key
        own = _PhraseIndex([canonical_term(t) for t in terms]) if exempt else None
        for i, phrase in enumerate(exempt):
            key = f"{prefix}.exempt[{i}]"
            canon = canonical_term(_read_term(phrase, file=file, key=key))
            if own is None or not own.spans(canon):
                raise PolicyError(
                    f"exempt phrase {phrase!r} contains none of the terms of {name}",
                    file=file,
                    key=key,
                )
            if canon in self.exempt or canon in self.by_term:
                raise PolicyError(f"phrase {phrase!r} is listed twice", file=file, key=key)
            self.exempt[canon] = entry
        self.entries.append(entry)

    def patterns(self, value: Any, *, prefix: str) -> tuple[TermPattern, ...]:
        file = self.file
        if value is None:
            return ()
        if not isinstance(value, list) or not value:
            raise PolicyError("expected a non-empty list", file=file, key=prefix)
        out: list[TermPattern] = []
        for i, item in enumerate(value):
            key = f"{prefix}[{i}]"
            data = expect_keys(item, required=_PATTERN_KEYS, file=file, key=key)
            pid = read_str(data["id"], file=file, key=f"{key}.id")
            if pid in self.pattern_ids:
                raise PolicyError(f"pattern id {pid!r} is listed twice", file=file, key=f"{key}.id")
            self.pattern_ids.add(pid)
            words = _read_list(data["words"], file=file, key=f"{key}.words")
            for j, word in enumerate(words):
                if not word.isascii() or not word.isalnum() or word != word.lower():
                    raise PolicyError(
                        f"a listed word is lower-case letters or digits, got {word!r}",
                        file=file,
                        key=f"{key}.words[{j}]",
                    )
            source = read_str(data["pattern"], file=file, key=f"{key}.pattern")
            try:
                compiled = re.compile(f"{_BEFORE}(?:{source}){_AFTER}")
            except re.error as err:
                raise PolicyError(
                    f"not a valid pattern: {err}", file=file, key=f"{key}.pattern"
                ) from None
            if compiled.groups:
                raise PolicyError(
                    "a pattern may not have capturing groups (use (?:...))",
                    file=file,
                    key=f"{key}.pattern",
                )
            example = read_str(data["example"], file=file, key=f"{key}.example")
            hit = compiled.search(normalise_text(example))
            if hit is None or set(_RUN.findall(hit.group())).isdisjoint(words):
                raise PolicyError(
                    f"the pattern does not match its example {example!r} with one of its words",
                    file=file,
                    key=f"{key}.example",
                )
            out.append(
                TermPattern(
                    id=pid,
                    description=read_str(data["description"], file=file, key=f"{key}.description"),
                    words=tuple(words),
                    pattern=source,
                    example=example,
                    compiled=compiled,
                )
            )
        return tuple(out)

    def words(self) -> dict[str, tuple[Entry, str]]:
        """What the matcher looks for: every term, and every key as a whole word (a key
        that spells another entry's term is an error)."""
        words = dict(self.by_term)
        for key, entry in self.by_key.items():
            owner = self.by_term.get(key)
            if owner is not None and owner[0] is not entry:
                raise PolicyError(
                    f"key {key!r} spells a term of {owner[0].name} ({self.term_where[key]})",
                    file=self.file,
                    key=self.key_where[key],
                )
            words.setdefault(key, (entry, key))
        return words


def load_prohibited_terms(path: Path | str) -> ProhibitedTerms:
    """Load and validate a prohibited-terms file; its SHA-256 is of the exact bytes."""
    path = Path(path)
    file = str(path)
    text, raw = read_source(path)
    doc = expect_keys(
        load_yaml(path, text),
        required=_HEADER_REQUIRED,
        optional=_HEADER_OPTIONAL,
        file=file,
        key="",
    )
    bases = expect_keys(doc["bases"], required=set(REQUIRED_BASES), file=file, key="bases")
    proxies = doc["proxies"]
    if not isinstance(proxies, dict) or not proxies:
        raise PolicyError("expected a non-empty mapping of proxies", file=file, key="proxies")
    builder = _Builder(file)
    for name in REQUIRED_BASES:
        builder.entry("basis", name, bases[name])
    for name, body in proxies.items():
        if not isinstance(name, str) or not name.strip():
            raise PolicyError("a proxy name must be text", file=file, key=f"proxies.{name}")
        builder.entry("proxy", name, body)
    words = builder.words()
    patterns = tuple((e, p) for e in builder.entries for p in e.patterns)
    index = _PhraseIndex(words)
    description = doc.get("description")
    if description is not None:
        description = read_str(description, file=file, key="description")
    return ProhibitedTerms(
        **versioned(doc, "name", file=file, raw=raw),
        description=description,
        entries=tuple(builder.entries),
        _by_term=words,
        _by_key=builder.by_key,
        _exempt=builder.exempt,
        _index=index,
        _exempt_index=_PhraseIndex(builder.exempt),
        _patterns=patterns,
        _openers=index.first_runs | {w for _, p in patterns for w in p.words},
    )


def default_prohibited_terms_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "prohibited-terms.yaml"))


@cache
def default_prohibited_terms() -> ProhibitedTerms:
    """The prohibited-terms file the product ships (loaded once)."""
    return load_prohibited_terms(default_prohibited_terms_path())


def find_prohibited(text: str, terms: ProhibitedTerms | None = None) -> list[Match]:
    """Every whole-word citation of a prohibited basis or proxy in ``text``."""
    return (terms or default_prohibited_terms()).find(text)
