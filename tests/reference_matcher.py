"""A second, deliberately different implementation of the prohibited-term matcher,
kept only to check :class:`credit.fairness_terms.ProhibitedTerms.find` against it.

It is the matcher as it first was: one regular expression alternating every term,
longest first, between whole-word boundaries, searched from each place a match can
begin. The product's matcher indexes the terms by their first run of letters and
digits instead (it compiles nothing and does not try every term at every position);
the two must find exactly the same citations in every text
(tests/test_fairness_terms.py checks it over generated texts).
"""

from __future__ import annotations

import re

from credit.fairness_terms import _SEP, Match, ProhibitedTerms, normalise_text

_BEFORE = r"(?<![^\W_])"
_AFTER = r"(?![^\W_])"


def _joined(matched: str) -> str:
    return " ".join(w for w in re.split(_SEP, matched) if w)


def _alternation(terms: list[str]) -> re.Pattern[str]:
    ordered = sorted(set(terms), key=lambda t: (-len(t), t))
    body = "|".join(_SEP.join(re.escape(w) for w in t.split(" ")) for t in ordered)
    return re.compile(f"{_BEFORE}(?:{body}){_AFTER}")


class ReferenceMatcher:
    def __init__(self, terms: ProhibitedTerms) -> None:
        self.terms = terms
        self.pattern = _alternation(list(terms._by_term))
        self.exempt = _alternation(list(terms._exempt)) if terms._exempt else None
        self.words = {tp.id: _alternation(list(tp.words)) for _, tp in terms.patterns}

    def find(self, text: str) -> list[Match]:
        terms = self.terms
        norm = normalise_text(text)
        exempt_spans: list[tuple[int, int, str]] = []
        if self.exempt is not None:
            for hit in self.exempt.finditer(norm):
                owner = terms._exempt[_joined(hit.group())]
                exempt_spans.append((hit.start(), hit.end(), owner.name))
        found: list[Match] = []
        pos = 0
        while (m := self.pattern.search(norm, pos)) is not None:
            entry, term = terms._by_term[_joined(m.group())]
            if any(s <= m.start() and m.end() <= e and n == entry.name for s, e, n in exempt_spans):
                pos = m.start() + 1
                continue
            found.append(
                Match(
                    kind=entry.kind,
                    name=entry.name,
                    bases=entry.bases,
                    term=term,
                    text=m.group(),
                    start=m.start(),
                    end=m.end(),
                    reference=entry.reference,
                )
            )
            pos = m.end()
        for entry, tp in terms.patterns:
            for m in tp.compiled.finditer(norm):
                if self.words[tp.id].search(m.group()) is None or any(
                    s <= m.start() and m.end() <= e and n == entry.name for s, e, n in exempt_spans
                ):
                    continue
                found.append(
                    Match(
                        kind=entry.kind,
                        name=entry.name,
                        bases=entry.bases,
                        term=tp.id,
                        text=m.group(),
                        start=m.start(),
                        end=m.end(),
                        reference=entry.reference,
                        pattern=True,
                    )
                )
        if terms.patterns:
            found.sort(key=lambda f: (f.start, f.pattern))
        return found
