"""Whether a notice makes a promise, without running the promise patterns over all of it.

Check V8 asks whether a promise pattern of the verifier's rules matches a notice's
normalised text (:meth:`~credit.guardrails.rules.VerifierRules.promises_in`). Running
the patterns over the whole text is most of the check's cost, though almost all of a
notice is the legal frame. :class:`PromiseScan` gives exactly the same answer while
running them only over the few stretches of text where a match could be:

- A *required literal* of a pattern is one of a set of strings, one of which every
  match contains (read from the pattern's parse: the best of a sequence's literal runs
  and of its parts, every branch of an alternation, a part repeated at least once).
- A *separator* is a punctuation character (not a word character) that no part of any
  pattern can match, even ignoring case and with ``.`` matching everything; a match
  holds no separator.
- A pattern must look at nothing outside its match but word boundaries (``\\b``,
  ``\\B``): no lookaround, no anchor, no back-reference.

So every match lies in a stretch between two separators that holds a required
literal, and a word boundary at the edge of a stretch reads the same alone as in the
text (a separator, like the edge of a string, is not a word character). The answer
for a stretch depends only on the stretch and the patterns, so it is kept (bounded):
those stretches are the frame's ("we are unable to approve your application ..."),
the same in every notice. Rules whose patterns do not allow it, and text that is not
ASCII (whose normalisation is not a per-character lower-casing), take the plain path.
"""

from __future__ import annotations

import importlib
import re
import string
from itertools import compress, repeat
from operator import is_
from typing import Any

from credit.guardrails.rules import VerifierRules

__all__ = ["PromiseScan", "composes", "required_literals", "separators"]

_parser: Any = importlib.import_module("re._parser")
_compiler: Any = importlib.import_module("re._compiler")
_c: Any = importlib.import_module("re._constants")

_CANDIDATES = tuple(ch for ch in string.punctuation if ch != "_")  # no word characters
_LEAVES = frozenset({_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN})
_REPEATS = frozenset({_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT})
_BOUNDARIES = frozenset({_c.AT_BOUNDARY, _c.AT_NON_BOUNDARY})
_KEEP = 16_384  # lines and stretches whose answer is kept; the frame has a few dozen


def _leaves(items: Any, out: list[Any]) -> bool:
    """Collect the parts that consume a character; False if the pattern looks
    outside its match (lookaround, anchor) or refers back to a group."""
    for op, av in items:
        if op in _LEAVES:
            out.append((op, av))
        elif op is _c.AT:
            if av not in _BOUNDARIES:
                return False
        elif op is _c.SUBPATTERN:
            if not _leaves(av[3], out):
                return False
        elif op in _REPEATS:
            if not _leaves(av[2], out):
                return False
        elif op is _c.BRANCH:
            if not all(_leaves(branch, out) for branch in av[1]):
                return False
        elif op is _c.ATOMIC_GROUP:
            if not _leaves(av, out):
                return False
        else:  # ASSERT, ASSERT_NOT, GROUPREF, GROUPREF_EXISTS, anything new
            return False
    return True


_SINGLE = frozenset({_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN})
_GREEDY_OR_LAZY = frozenset({_c.MAX_REPEAT, _c.MIN_REPEAT})


def _composing(items: Any) -> bool:
    for op, av in items:
        if op in _SINGLE:
            continue
        if op is _c.SUBPATTERN:
            if av[0] is not None or not _composing(av[3]):  # non-capturing groups only
                return False
        elif op in _GREEDY_OR_LAZY:
            if not _composing(av[2]):
                return False
        elif op is _c.BRANCH:
            if not all(_composing(branch) for branch in av[1]):
                return False
        else:  # AT, ASSERT, ASSERT_NOT, GROUPREF, ATOMIC_GROUP, POSSESSIVE_REPEAT, ...
            return False
    return True


def composes(pattern: re.Pattern[str]) -> bool:
    """Whether the pattern matches the same texts inside a larger pattern as alone: it
    reads no character outside its match (no anchor, word boundary or lookaround),
    refers to no group, and never gives up a way of matching once taken (no atomic
    group or possessive repeat). Then a text made of pieces, each matched alone by the
    part of a concatenated pattern (``(?:a)(?:b)...``) written for it, is matched by the
    whole. False for any pattern this reading does not know."""
    try:
        return _composing(_parser.parse(pattern.pattern, pattern.flags))
    except Exception:
        return False


def separators(pattern: re.Pattern[str]) -> frozenset[str]:
    """The punctuation characters no part of the pattern can match (ignoring case,
    ``.`` matching everything); none if the pattern looks outside its match."""
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        leaves: list[Any] = []
        if not _leaves(parsed, leaves):
            return frozenset()
        flags = parsed.state.flags | re.IGNORECASE | re.DOTALL
        left = set(_CANDIDATES)
        # Each distinct part once: a pattern repeats the same letters and classes.
        for key, leaf in {repr(leaf): leaf for leaf in leaves}.items():
            left -= _matched(key, leaf, parsed.state, flags)
    except Exception:  # a pattern this reading does not know: the plain path
        return frozenset()
    return frozenset(left)


_MATCHED: dict[tuple[str, int], frozenset[str]] = {}


def _matched(key: str, leaf: Any, state: Any, flags: int) -> frozenset[str]:
    """The candidate characters one part matches (``key`` its repr), compiled once per
    process for all the rules' patterns: the combined pattern holds every part of the
    single ones, which would otherwise compile each again."""
    found = _MATCHED.get((key, flags))
    if found is None:
        one = _compiler.compile(_parser.SubPattern(state, [leaf]), flags)
        found = frozenset(ch for ch in _CANDIDATES if one.fullmatch(ch) is not None)
        if len(_MATCHED) >= _KEEP:
            _MATCHED.clear()
        _MATCHED[key, flags] = found
    return found


def _best(options: list[frozenset[str]]) -> frozenset[str] | None:
    """The most selective set: the longest shortest string, then the fewest strings."""
    if not options:
        return None
    return max(options, key=lambda s: (min(len(w) for w in s), -len(s), sorted(s)))


def _required(items: Any) -> frozenset[str] | None:
    options: list[frozenset[str]] = []
    run: list[str] = []
    for op, av in [*items, (None, None)]:
        if op is _c.LITERAL and chr(av).isascii() and not chr(av).isspace():
            run.append(chr(av).lower())
            continue
        if run:
            options.append(frozenset({"".join(run)}))
            run = []
        part: frozenset[str] | None = None
        if op is _c.SUBPATTERN:
            part = _required(av[3])
        elif op in _REPEATS and av[0] >= 1:
            part = _required(av[2])
        elif op is _c.ATOMIC_GROUP:
            part = _required(av)
        elif op is _c.BRANCH:
            each = [_required(branch) for branch in av[1]]
            if all(e is not None for e in each):
                part = frozenset().union(*(e for e in each if e is not None))
        if part:
            options.append(part)
    return _best(options)


def required_literals(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Strings (lower-cased ASCII) one of which every match contains, or None if the
    pattern has none this reading finds."""
    try:
        return _required(_parser.parse(pattern.pattern, pattern.flags))
    except Exception:
        return None


_CLEAR, _HIT, _WHOLE = 0, 1, 2  # a line: no stretch can match; one does; ask the text


class PromiseScan:
    """``rules.promises_in(text)``, exactly, over the stretches of text where a promise
    pattern could match (see the module's docstring).

    A notice is read a line at a time, and each line's verdict is kept: no stretch of
    it can match, one does (then the rules answer for the whole text, as before), or a
    stretch runs past the line's end (then the stretches are found in the whole
    normalised text). A required literal has no space, so it is found in a line as in
    the normalised text, and a stretch between two separators of one line is that
    line's text with its spaces collapsed. (Finding the literals in the whole text
    instead reads it once per literal, and takes longer than looking up its lines.)"""

    def __init__(self, rules: VerifierRules) -> None:
        self.rules = rules
        patterns = [rules.promise_any, *(p.compiled for p in rules.promise_patterns)]
        cuts = frozenset(_CANDIDATES).intersection(*(separators(p) for p in patterns))
        literals = required_literals(rules.promise_any) or frozenset()
        # a literal that holds another is found by finding the other
        self.literals: tuple[str, ...] = tuple(
            sorted(w for w in literals if not any(o != w and o in w for o in literals))
        )
        self.cuts = "".join(sorted(cuts)) if self.literals else ""
        if self.cuts:  # every separator byte read as the first, so one find finds any
            self._one = self.cuts[0].encode("ascii")
            self._table = bytes.maketrans(self.cuts.encode("ascii"), self._one * len(self.cuts))
        self._lines: dict[str, int] = {}
        self._stretches: dict[str, bool] = {}

    def promises_in(self, text: str, *, lines: list[str] | None = None) -> list[str]:
        """The ids of the promise patterns the text matches (normalised), as
        :meth:`VerifierRules.promises_in` gives them (``lines``: the text's lines, if
        split already)."""
        if not self.cuts or not text.isascii():
            return self.rules.promises_in(text)
        lines = text.split("\n") if lines is None else lines
        each = list(map(self._lines.get, lines))  # the lines seen before, at C speed
        verdicts = set(each)
        if None in verdicts:  # and each line not seen before, read
            verdicts.discard(None)
            verdicts.update(map(self._line, compress(lines, map(is_, each, repeat(None)))))
        if _HIT in verdicts:
            return self.rules.promises_in(text)
        if _WHOLE in verdicts:
            norm = " ".join(text.lower().split())  # normalise() of ASCII text
            if self._stretches_match(norm, self._spans(norm), whole=True):
                return [p.id for p in self.rules.promise_patterns if p.compiled.search(norm)]
        return []

    def _line(self, line: str) -> int:
        low = line.lower()
        spans = self._spans(low)
        if self._stretches_match(low, spans, whole=False):
            verdict = _HIT
        elif any(start < 0 or end == len(low) for start, end in spans):
            verdict = _WHOLE  # a stretch runs past the line
        else:
            verdict = _CLEAR
        _keep(self._lines, line, verdict)
        return verdict

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """Each stretch between separators (or the text's ends, as -1 and its length)
        that holds a required literal, once."""
        spans: list[tuple[int, int]] = []
        marks = b""
        for literal in self.literals:
            at = text.find(literal)
            while at >= 0:
                marks = marks or text.encode("ascii").translate(self._table)
                start = marks.rfind(self._one, 0, at)
                end = marks.find(self._one, at + len(literal))
                end = len(text) if end < 0 else end
                if (start, end) not in spans:
                    spans.append((start, end))
                at = text.find(literal, end)
        return spans

    def _stretches_match(self, text: str, spans: list[tuple[int, int]], *, whole: bool) -> bool:
        """Whether the combined pattern matches one of the stretches: of the normalised
        text (``whole``), or of a lower-cased line between two of its separators."""
        for start, end in spans:
            if whole:
                stretch = text[start + 1 : end]
            elif start < 0 or end == len(text):
                continue  # runs past the line: the whole text decides
            else:
                raw = text[start + 1 : end]
                lead = " " if raw[:1].isspace() else ""
                trail = " " if raw[-1:].isspace() else ""
                stretch = lead + " ".join(raw.split()) + trail
            found = self._stretches.get(stretch)
            if found is None:
                found = self.rules.promise_any.search(stretch) is not None
                _keep(self._stretches, stretch, found)
            if found:
                return True
        return False


def _keep(kept: dict[str, Any], key: str, value: Any) -> None:
    if len(kept) >= _KEEP:
        kept.clear()
    kept[key] = value
