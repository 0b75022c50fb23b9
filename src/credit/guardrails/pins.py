"""What the verifier checks a notice against, loaded once: the legal frame, the reason
catalogue, the verifier's rules, the bureau-field formats and the prohibited-terms
list, with the reviewed lock and the data that drifted from it (check V7 fails while
anything has)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from types import MappingProxyType
from typing import Any

from credit.bureau_formats import BureauFormats, load_bureau_formats
from credit.catalogue import Catalogue, load_catalogue
from credit.errors import CreditError
from credit.fairness_terms import ProhibitedTerms, canonical_term, default_prohibited_terms
from credit.guardrails.lock import (
    CATALOGUE,
    FRAME,
    DataSources,
    LockFile,
    current_pins,
    drift,
    read_lock,
)
from credit.guardrails.promise_scan import PromiseScan, composes
from credit.guardrails.rules import VerifierRules, load_rules
from credit.legal_frame import LegalFrame, load_frame

__all__ = [
    "BUREAU_PLACEHOLDERS",
    "KEY_FACTOR_VALUE",
    "BureauLine",
    "Pins",
    "default_pins",
    "load_pins",
]

# The frame placeholders that print a bureau value, and the field whose format it has
# (``keyFactorValue`` has the format of its key factor's code).
BUREAU_PLACEHOLDERS: Mapping[str, str] = MappingProxyType(
    {
        "bureauName": "bureau.name",
        "bureauAddress": "bureau.address",
        "bureauPhone": "bureau.phone",
        "scoreModel": "scoreModel",
    }
)
KEY_FACTOR_VALUE = "keyFactorValue"
_PLACEHOLDER = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class BureauLine:
    """A line of the credit-score disclosure that prints bureau values: ``loose``
    finds the line whatever its values; ``strict[code]`` matches it only with every
    bureau value in its format (``code`` the key factor's, None for any code)."""

    key: str
    prefix: str  # the template's text before its first placeholder (a quick filter)
    loose: re.Pattern[str]
    strict: Mapping[str | None, re.Pattern[str]]
    each: Mapping[str, re.Pattern[str]]  # per bureau field: that field strict, the rest any


def _line_pattern(template: str, values: Mapping[str, str]) -> re.Pattern[str]:
    """A template as a pattern: its text literally, each placeholder as ``values``
    gives it (any text for a placeholder not given)."""
    parts, at = [], 0
    for m in _PLACEHOLDER.finditer(template):
        parts += [re.escape(template[at : m.start()]), f"(?:{values.get(m.group(1), '.*')})"]
        at = m.end()
    parts.append(re.escape(template[at:]))
    return re.compile("".join(parts))


_KEEP = 16_384  # answers kept per store; emptied when full


class Kept(dict[Any, Any]):
    """Answers that depend only on their key and the pinned data that holds the store
    (so other data has its own): bounded, emptied when full."""

    def put(self, key: Any, value: Any) -> Any:
        if len(self) >= _KEEP:
            self.clear()
        self[key] = value
        return value


@dataclass(frozen=True)
class Pins:
    frame: LegalFrame
    catalogue: Catalogue
    rules: VerifierRules
    terms: ProhibitedTerms
    formats: BureauFormats
    lock: LockFile | None
    drift: tuple[str, ...]  # pinned data no longer as reviewed, or why the lock is unusable

    @cached_property
    def term_words(self) -> frozenset[str]:
        """One word of every prohibited term (the one that occurs least often in the
        approved wordings and the frame, then the longest): ASCII text that has none of
        them as a word, and that no pattern matches, cannot cite a basis, so the matcher
        need not run on it (a quick pre-check; the matcher decides)."""
        corpus = [e.category for e in self.catalogue.entries.values()]
        corpus += [w for e in self.catalogue.entries.values() for w in e.wordings]
        common = Counter(
            re.findall(r"[a-z0-9]+", " ".join(corpus + list(self.frame.texts.values())).lower())
        )
        words = set()
        for entry in self.terms.entries:
            for term in entry.terms:
                runs = re.findall(r"[a-z0-9]+", canonical_term(term))
                if runs:
                    words.add(min(runs, key=lambda w: (common[w], -len(w), w)))
        return frozenset(words)

    @cached_property
    def bureau_lines(self) -> tuple[BureauLine, ...]:
        """The disclosure templates (``creditScore.*``) that print a bureau value."""
        fields = {name: self.formats.field_pattern(f) for name, f in BUREAU_PLACEHOLDERS.items()}
        codes = sorted(self.formats.key_factors)
        any_code = "|".join(f"(?:{self.formats.key_factor_pattern(c)})" for c in codes)
        lines = []
        for key, template in self.frame.texts.items():
            used = set(_PLACEHOLDER.findall(template)) if key.startswith("creditScore.") else set()
            if not used & (set(BUREAU_PLACEHOLDERS) | {KEY_FACTOR_VALUE}):
                continue
            strict: dict[str | None, re.Pattern[str]] = {
                None: _line_pattern(template, {**fields, KEY_FACTOR_VALUE: any_code})
            }
            if KEY_FACTOR_VALUE in used:
                for code in codes:
                    value = self.formats.key_factor_pattern(code)
                    strict[code] = _line_pattern(template, {**fields, KEY_FACTOR_VALUE: value})
            each = {
                BUREAU_PLACEHOLDERS[name]: _line_pattern(template, {name: fields[name]})
                for name in BUREAU_PLACEHOLDERS
                if name in used
            }
            prefix = template.split("{", 1)[0]
            lines.append(BureauLine(key, prefix, _line_pattern(template, {}), strict, each))
        return tuple(lines)

    @cached_property
    def bureau_values_compose(self) -> bool:
        """Whether each bureau field's format and each key factor's, as the part of a
        disclosure line's pattern (:attr:`bureau_lines`) written for its value, matches
        what it matches alone (:func:`~credit.guardrails.promise_scan.composes`). Then a
        line of a template filled with values each in its format is in form."""
        patterns = [self.formats.fields[f].pattern for f in BUREAU_PLACEHOLDERS.values()]
        patterns += [k.pattern for k in self.formats.key_factors.values()]
        return all(composes(p) for p in patterns)

    @cached_property
    def _stores(self) -> dict[str, Kept]:
        return {}

    def kept(self, name: str) -> Kept:
        """The store of answers named ``name`` for this data (see :class:`Kept`)."""
        store = self._stores.get(name)
        if store is None:
            store = self._stores[name] = Kept()
        return store

    @cached_property
    def promise_scan(self) -> PromiseScan:
        """The rules' promise patterns, run only where a match could be (check V8)."""
        return PromiseScan(self.rules)

    @cached_property
    def frame_sha256(self) -> str | None:
        """The reviewed frame's hash (from the lock), or None without a lock."""
        return self.lock.sha256_of(FRAME) if self.lock else None

    @cached_property
    def catalogue_sha256(self) -> str | None:
        return self.lock.sha256_of(CATALOGUE) if self.lock else None


def load_pins(sources: DataSources | None = None, terms: ProhibitedTerms | None = None) -> Pins:
    """Load the data and compare it with the lock. A data file that does not load is
    an error (PolicyError); a missing or malformed lock is drift, so V7 fails closed."""
    sources = sources or DataSources.default()
    catalogue = load_catalogue(sources.catalogue)
    frame = load_frame(sources.frame)
    rules = load_rules(sources.rules)
    formats = load_bureau_formats(sources.bureau_formats)
    lock: LockFile | None
    try:
        lock = read_lock(sources.lock)
        changed = drift(lock, current_pins(sources, catalogue))
    except CreditError as err:
        lock, changed = None, (f"lock unusable: {err}",)
    return Pins(
        frame, catalogue, rules, terms or default_prohibited_terms(), formats, lock, changed
    )


@cache
def default_pins() -> Pins:
    """The packaged data and lock (loaded once per process)."""
    return load_pins()
