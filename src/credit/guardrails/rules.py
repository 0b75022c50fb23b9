"""The verifier's rule data (``data/notice-rules.yaml``): the most reasons a notice
states, generic phrases (check V4) and promise patterns (check V8), each with its
source. The loader is strict: unknown, missing and duplicate keys, a phrase listed
twice and a pattern that does not compile are :class:`~credit.errors.PolicyError`
naming file and key."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from credit.errors import PolicyError
from credit.yamldata import (
    expect_keys,
    load_yaml,
    read_int,
    read_source,
    read_str,
    versioned,
)

__all__ = [
    "PromisePattern",
    "VerifierRules",
    "default_rules",
    "default_rules_path",
    "load_rules",
    "normalise",
]


def normalise(text: str) -> str:
    """NFKC, casefolded, whitespace runs as one space: how phrases and patterns compare."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


class PromisePattern(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    id: str
    description: str
    pattern: str
    compiled: re.Pattern[str]


class VerifierRules(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str
    version: str
    effective_date: dt.date
    reference: str
    source: str
    sha256: str
    max_reasons: int
    max_reasons_reference: str
    generic_phrases: tuple[str, ...]
    generic_reference: str
    generic_pattern: re.Pattern[str]
    promise_patterns: tuple[PromisePattern, ...]
    promise_any: re.Pattern[str]
    promise_reference: str

    def generic_phrases_in(self, sentence: str) -> list[str]:
        """The generic phrases a sentence contains (whole words, case-insensitive)."""
        return sorted({m.group(0) for m in self.generic_pattern.finditer(normalise(sentence))})

    def promises_in(self, line: str) -> list[str]:
        """The ids of the promise patterns a line matches."""
        norm = normalise(line)
        if self.promise_any.search(norm) is None:  # one pass over the text first
            return []
        return [p.id for p in self.promise_patterns if p.compiled.search(norm)]


def _alternation(phrases: list[str]) -> str:
    """The phrases as one alternation, longest first, words apart by any whitespace;
    grouped by first character (``a(?:lgorithm|...)``) so that the engine tries one
    group at a position, not every phrase. Within a group the order is kept, and
    phrases with another first character cannot match there: the same phrase wins."""
    groups: dict[str, list[str]] = {}
    for phrase in sorted(phrases, key=lambda p: (-len(p), p)):
        groups.setdefault(phrase[0], []).append(r"\s+".join(map(re.escape, phrase.split(" "))))
    return "|".join(
        f"{re.escape(first)}(?:{'|'.join(alt[len(re.escape(first)) :] for alt in alts)})"
        for first, alts in groups.items()
    )


_HEADER = frozenset(
    {
        "rules",
        "version",
        "effectiveDate",
        "reference",
        "maxReasons",
        "genericPhrases",
        "promisePatterns",
    }
)


def load_rules(path: Path | str) -> VerifierRules:
    path = Path(path)
    file = str(path)
    text, raw = read_source(path)
    doc = expect_keys(load_yaml(path, text), required=_HEADER, file=file, key="")
    mr = expect_keys(
        doc["maxReasons"], required={"reference", "value"}, file=file, key="maxReasons"
    )
    max_reasons = read_int(mr["value"], file=file, key="maxReasons.value")
    if max_reasons < 1:
        raise PolicyError("must be at least 1", file=file, key="maxReasons.value")
    gp = expect_keys(
        doc["genericPhrases"], required={"reference", "phrases"}, file=file, key="genericPhrases"
    )
    phrases_raw = gp["phrases"]
    if not isinstance(phrases_raw, list) or not phrases_raw:
        raise PolicyError("expected a non-empty list", file=file, key="genericPhrases.phrases")
    phrases: list[str] = []
    for i, value in enumerate(phrases_raw):
        key = f"genericPhrases.phrases[{i}]"
        phrase = read_str(value, file=file, key=key)
        if phrase != normalise(phrase):
            raise PolicyError(
                f"phrase {phrase!r} must be written normalised, as {normalise(phrase)!r}",
                file=file,
                key=key,
            )
        if phrase in phrases:
            raise PolicyError(f"phrase {phrase!r} is listed twice", file=file, key=key)
        phrases.append(phrase)
    generic = re.compile(rf"(?<![^\W_])(?:{_alternation(phrases)})(?![^\W_])")
    pp = expect_keys(
        doc["promisePatterns"],
        required={"reference", "patterns"},
        file=file,
        key="promisePatterns",
    )
    raw_patterns = pp["patterns"]
    if not isinstance(raw_patterns, list) or not raw_patterns:
        raise PolicyError("expected a non-empty list", file=file, key="promisePatterns.patterns")
    patterns: list[PromisePattern] = []
    for i, item in enumerate(raw_patterns):
        key = f"promisePatterns.patterns[{i}]"
        entry = expect_keys(item, required={"id", "description", "pattern"}, file=file, key=key)
        pid = read_str(entry["id"], file=file, key=f"{key}.id")
        if any(p.id == pid for p in patterns):
            raise PolicyError(f"pattern id {pid!r} is listed twice", file=file, key=f"{key}.id")
        source = read_str(entry["pattern"], file=file, key=f"{key}.pattern")
        try:
            compiled = re.compile(source, re.IGNORECASE)
        except re.error as err:
            raise PolicyError(
                f"not a valid pattern: {err}", file=file, key=f"{key}.pattern"
            ) from None
        patterns.append(
            PromisePattern(
                id=pid,
                description=read_str(entry["description"], file=file, key=f"{key}.description"),
                pattern=source,
                compiled=compiled,
            )
        )
    return VerifierRules(
        **versioned(doc, "rules", file=file, raw=raw),
        max_reasons=max_reasons,
        max_reasons_reference=read_str(mr["reference"], file=file, key="maxReasons.reference"),
        generic_phrases=tuple(phrases),
        generic_reference=read_str(gp["reference"], file=file, key="genericPhrases.reference"),
        generic_pattern=generic,
        promise_patterns=tuple(patterns),
        promise_any=re.compile("|".join(f"(?:{p.pattern})" for p in patterns), re.IGNORECASE),
        promise_reference=read_str(pp["reference"], file=file, key="promisePatterns.reference"),
    )


def default_rules_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "notice-rules.yaml"))


@cache
def default_rules() -> VerifierRules:
    return load_rules(default_rules_path())
