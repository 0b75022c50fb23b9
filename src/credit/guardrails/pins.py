"""What the verifier checks a notice against, loaded once: the legal frame, the reason
catalogue, the verifier's rules and the prohibited-terms list, with the reviewed lock
and the data that drifted from it (check V7 fails while anything has)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, cached_property

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
from credit.guardrails.rules import VerifierRules, load_rules
from credit.legal_frame import LegalFrame, load_frame

__all__ = ["Pins", "default_pins", "load_pins"]


@dataclass(frozen=True)
class Pins:
    frame: LegalFrame
    catalogue: Catalogue
    rules: VerifierRules
    terms: ProhibitedTerms
    lock: LockFile | None
    drift: tuple[str, ...]  # pinned data no longer as reviewed, or why the lock is unusable

    @cached_property
    def term_words(self) -> frozenset[str]:
        """One word (the longest alphanumeric run) of every prohibited term: ASCII
        text that has none of them as a word cannot cite a basis, so the matcher need
        not run on it (a quick pre-check; the matcher decides)."""
        words = set()
        for entry in self.terms.entries:
            for term in entry.terms:
                runs = re.findall(r"[a-z0-9]+", canonical_term(term))
                if runs:
                    words.add(max(runs, key=len))
        return frozenset(words)

    @property
    def frame_sha256(self) -> str | None:
        """The reviewed frame's hash (from the lock), or None without a lock."""
        return self.lock.sha256_of(FRAME) if self.lock else None

    @property
    def catalogue_sha256(self) -> str | None:
        return self.lock.sha256_of(CATALOGUE) if self.lock else None


def load_pins(sources: DataSources | None = None, terms: ProhibitedTerms | None = None) -> Pins:
    """Load the data and compare it with the lock. A data file that does not load is
    an error (PolicyError); a missing or malformed lock is drift, so V7 fails closed."""
    sources = sources or DataSources.default()
    catalogue = load_catalogue(sources.catalogue)
    frame = load_frame(sources.frame)
    rules = load_rules(sources.rules)
    lock: LockFile | None
    try:
        lock = read_lock(sources.lock)
        changed = drift(lock, current_pins(sources, catalogue))
    except CreditError as err:
        lock, changed = None, (f"lock unusable: {err}",)
    return Pins(frame, catalogue, rules, terms or default_prohibited_terms(), lock, changed)


@cache
def default_pins() -> Pins:
    """The packaged data and lock (loaded once per process)."""
    return load_pins()
