"""How the verifier's pinned data is built at start-up: built once for all the rules'
patterns, or only when a check asks, it is what building everything anew gives.

- The promise scan's separators: the characters each part of a pattern matches are
  found once per process (the combined pattern holds every part of the single ones),
  and equal what compiling every part of every pattern again finds.
"""

from __future__ import annotations

import importlib
import re
import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from credit.guardrails import promise_scan
from credit.guardrails.pins import default_pins
from credit.guardrails.promise_scan import PromiseScan, separators

_parser: Any = importlib.import_module("re._parser")
_compiler: Any = importlib.import_module("re._compiler")


def separators_compiled_anew(pattern: re.Pattern[str]) -> frozenset[str]:
    """The separators as promise_scan found them before it kept each part's answer:
    every distinct part of the pattern compiled on its own (kept here only to check the
    kept answers against)."""
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        leaves: list[Any] = []
        if not promise_scan._leaves(parsed, leaves):
            return frozenset()
        flags = parsed.state.flags | re.IGNORECASE | re.DOTALL
        left = set(promise_scan._CANDIDATES)
        for leaf in {repr(leaf): leaf for leaf in leaves}.values():
            one = _compiler.compile(_parser.SubPattern(parsed.state, [leaf]), flags)
            left = {ch for ch in left if one.fullmatch(ch) is None}
    except Exception:
        return frozenset()
    return frozenset(left)


_ATOMS = st.sampled_from(
    [
        *(re.escape(ch) for ch in string.punctuation),
        "a",
        "Z",
        "7",
        r"\w",
        r"\W",
        r"\s",
        r"\S",
        r"\d",
        r"\D",
        r"\b",
        ".",
        "[a-z]",
        "[^a-z]",
        r"[.,;:]",
        r"[^.,]",
        r"[\-/]",
        r"[!-/]",
        r"\s+",
        "x?",
        "(?:y|-)",
        "(?:k|[#$])+",
    ]
)
_FLAGS = st.sampled_from([0, re.IGNORECASE, re.ASCII, re.IGNORECASE | re.ASCII])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_ATOMS, min_size=1, max_size=6), min_size=1, max_size=3),
    _FLAGS,
    st.booleans(),
)
def test_kept_part_answers_give_the_separators_compiling_every_part_gives(
    branches: list[list[str]], flags: int, fresh: bool
) -> None:
    if fresh:  # answers kept from other patterns, or none
        promise_scan._MATCHED.clear()
    pattern = re.compile("|".join("".join(b) for b in branches), flags)
    assert separators(pattern) == separators_compiled_anew(pattern)


def test_the_packaged_rules_scan_is_the_one_compiling_every_part_gives() -> None:
    rules = default_pins().rules
    promise_scan._MATCHED.clear()
    scan = PromiseScan(rules)
    patterns = [rules.promise_any, *(p.compiled for p in rules.promise_patterns)]
    cuts = frozenset(promise_scan._CANDIDATES).intersection(
        *(separators_compiled_anew(p) for p in patterns)
    )
    assert scan.cuts == "".join(sorted(cuts)) and scan.cuts
    # the single patterns' parts were all found in the combined one's
    assert len(promise_scan._MATCHED) == len({repr(leaf) for leaf in _parts(rules.promise_any)})


def _parts(pattern: re.Pattern[str]) -> list[Any]:
    leaves: list[Any] = []
    promise_scan._leaves(_parser.parse(pattern.pattern, pattern.flags), leaves)
    return leaves
