"""The fair-lending guard: strips every prohibited-basis attribute from a JSON-like value.

The seam it guards (Governance seams, "tool results"): each ``get_application`` /
``get_credit_report`` / ``get_policy`` result is walked at every depth (objects and
arrays) before it reaches the underwriter, and every field whose name carries an
enumerated ECOA basis (race, ethnicity, color, religion, national origin, sex, marital
status, age, public assistance; and the exercise of Consumer Credit Protection Act
rights) or a proxy for one (zip code, surname, ...) is removed. Intake (Onramp) uses the
same walk to move such a field out of the underwriter's reach.

The key list is data, not code: the ``keys`` of each basis and proxy in
``data/prohibited-terms.yaml``, loaded by :mod:`credit.fairness_terms`. Field names are
compared normalised (NFKC, casefolded, letters and digits only), so ``Date_Of-Birth``,
``dateOfBirth`` and ``DATE_OF_BIRTH`` are all ``dateofbirth``, and synonyms (``dob``,
``birthDate``, ``gender``, ``spouse``, ``citizenship``, ...) are listed keys.

The guard matches whole field names: ``ageOfOldestAccount`` is a fact of the credit
file and is kept, ``age`` is removed. It also **reads values**: every string value is
scanned for prohibited-basis terms by the one matcher of the product
(:meth:`credit.fairness_terms.ProhibitedTerms.find`: the same term data, NFKC, whole
words), so a basis carried in free text under an innocuous name (a derogatory's kind
``"late30; applicant is married"``, ``{"attribute": "sex", "value": ...}``) is redacted
too: the string becomes :data:`REDACTED_VALUE` and the redaction is recorded with
``match: "value"`` (the governor journals it; Equipoise holds the case for the
fair-lending reviewer). Intake (Onramp) moves fields by name only (``extract``): a value
is the data of its field.

Not formalised here: field names in other scripts that merely look like a listed key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, NamedTuple, TypeVar, cast

from credit.fairness_terms import (
    ProhibitedTerms,
    default_prohibited_terms,
    normalise_key,
)

__all__ = [
    "REDACTED_VALUE",
    "FairLendingGuard",
    "Redacted",
    "Redaction",
    "default_guard",
    "find_prohibited_keys",
    "normalise_key",
    "opens_json",
    "redact",
]


REDACTED_VALUE = "[redacted: prohibited basis]"
# Identifiers, not text: a case id or a tradeline id may spell a word by chance.
IDENTIFIER_FIELDS = frozenset({"caseId", "tradelineId", "code", "sha256"})
_PLAIN = re.compile(r"^[0-9 .,$%:/+()-]*$")  # a figure, a date, a phone: no word to cite
_CACHE_MAX = 65_536
_MEMO_MAX = 64  # policy documents: a handful are ever in force
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Redaction:
    """One field removed, or one value redacted: where, the field's name, the basis.

    ``path`` is dotted with ``[i]`` for array items (``application.applicant.dob``,
    ``tradelines[2].gender``); ``basis`` is the basis or proxy name in the data file
    (``age``, ``maritalStatus``, ``zipCode``); ``kind`` says which it is; ``match``
    says whether the field's name carried it (``key``: the field is removed) or its
    text did (``value``: the text is replaced by :data:`REDACTED_VALUE`).
    """

    path: str
    key: str
    basis: str
    kind: Literal["basis", "proxy"] = "basis"
    match: Literal["key", "value"] = "key"

    def to_wire(self) -> dict[str, str]:
        return {
            "path": self.path,
            "key": self.key,
            "basis": self.basis,
            "kind": self.kind,
            "match": self.match,
        }


class Redacted(NamedTuple):
    """The cleaned value and the fields removed from it, in walk order."""

    value: Any
    redactions: list[Redaction]


# Leaves the walk hands back as they are (a str is read; anything else of these kinds
# holds no field and no text)
_SCALARS: frozenset[type] = frozenset({int, bool, float, Decimal, type(None)})


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class FairLendingGuard:
    """Redacts prohibited-basis fields by name, at any depth.

    ``include_proxies`` (default True) also removes the fields of the listed proxies
    (zip code, neighborhood, first name, surname, primary language, place of birth,
    maiden name): the underwriter is blind to them too.
    """

    def __init__(
        self,
        terms: ProhibitedTerms | None = None,
        *,
        include_proxies: bool = True,
        read_values: bool = True,
    ):
        self.terms = terms or default_prohibited_terms()
        self.include_proxies = include_proxies
        self.read_values = read_values
        self._hits: dict[str, tuple[tuple[str, Literal["basis", "proxy"]], ...]] = {}
        self._key_hits: dict[str, tuple[str, Literal["basis", "proxy"]] | None] = {}
        self._memo: dict[Hashable, object] = {}
        table: dict[str, tuple[str, Literal["basis", "proxy"]]] = {}
        for entry in self.terms.entries:
            if entry.kind == "proxy" and not include_proxies:
                continue
            for key in entry.keys:
                table[key] = (entry.name, entry.kind)
        self._table = table

    @property
    def keys(self) -> frozenset[str]:
        """Every normalised field name the guard removes."""
        return frozenset(self._table)

    def basis_of(self, key: str) -> tuple[str, Literal["basis", "proxy"]] | None:
        """The basis (or proxy) a field name carries, compared normalised; else None
        (remembered per name: the same few dozen field names recur in every case)."""
        try:
            return self._key_hits[key]
        except KeyError:
            pass
        hit = self._table.get(normalise_key(key))
        if len(self._key_hits) >= _CACHE_MAX:
            self._key_hits.clear()
        self._key_hits[key] = hit
        return hit

    def remembered(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()``, remembered under ``key`` for this guard: for what the guard
        finds in data that never changes (a policy document, named by its SHA-256)."""
        try:
            return cast("_T", self._memo[key])
        except KeyError:
            pass
        value = compute()
        if len(self._memo) >= _MEMO_MAX:
            self._memo.clear()
        self._memo[key] = value
        return value

    def value_bases(self, text: str) -> tuple[tuple[str, Literal["basis", "proxy"]], ...]:
        """The bases (and proxies) a text value cites, in order (remembered: the same
        texts recur in every case: bureau names, key factors, the policy's prose)."""
        if not self.read_values:
            return ()
        hits = self._hits.get(text)  # before the pattern: a plain text is never kept
        if hits is None:
            if _PLAIN.match(text):
                return ()
            found = [
                (m.name, m.kind)
                for m in self.terms.find(text)
                if m.kind == "basis" or self.include_proxies
            ]
            hits = tuple(dict.fromkeys(found))
            if len(self._hits) >= _CACHE_MAX:
                self._hits.clear()
            self._hits[text] = hits
        return hits

    def redact(self, value: Any, *, path: str = "") -> Redacted:
        """A copy of ``value`` without any prohibited-basis field, and what was removed.

        The input is never modified. Objects become dicts, arrays keep their type
        (list or tuple); scalars are returned as they are.
        """
        found: list[Redaction] = []
        cleaned = self._walk(value, path, found, remove=True)
        return Redacted(cleaned, found)

    def extract(self, value: Any, *, path: str = "") -> tuple[Any, list[tuple[Redaction, Any]]]:
        """Like :meth:`redact` by field name only, handing back each removed field's value
        (for intake, which moves the fields into the monitoring vault)."""
        found: list[Redaction] = []
        values: list[Any] = []
        cleaned = self._walk(value, path, found, remove=True, values=values, read_values=False)
        return cleaned, list(zip(found, values, strict=True))

    def find_prohibited_keys(
        self, value: Any, *, path: str = "", values: bool = True
    ) -> list[Redaction]:
        """Every prohibited-basis field in ``value`` and, with ``values``, every value
        that cites one (the post-check: empty when clean)."""
        found: list[Redaction] = []
        self._walk(value, path, found, remove=False, read_values=values)
        return found

    def _walk(
        self,
        value: Any,
        path: str,
        found: list[Redaction],
        *,
        remove: bool,
        values: list[Any] | None = None,
        read_values: bool = True,
        key: str = "",
    ) -> Any:
        kind = type(value)
        if kind is str:  # the commonest leaf first (a str is never a container)
            return self._leaf(value, path, found, remove=remove, read_values=read_values, key=key)
        if kind in _SCALARS:  # a leaf that is no text (before the ABC check of Mapping)
            return value
        if kind is dict or (kind is not list and isinstance(value, Mapping)):
            out: dict[Any, Any] = {}
            for name, item in value.items():
                hit = self.basis_of(name) if isinstance(name, str) else None
                if hit is not None:
                    found.append(Redaction(_join(path, str(name)), name, hit[0], hit[1]))
                    if values is not None:
                        values.append(item)
                    if remove:
                        continue
                if type(item) is str:  # a leaf: its path is written only if it is a hit
                    out[name] = self._leaf(
                        item,
                        path,
                        found,
                        remove=remove,
                        read_values=read_values,
                        key=str(name),
                        step=str(name),
                    )
                    continue
                out[name] = self._walk(
                    item,
                    _join(path, str(name)),
                    found,
                    remove=remove,
                    values=values,
                    read_values=read_values,
                    key=str(name),
                )
            return out
        if isinstance(value, (list, tuple)):
            items = [
                self._leaf(
                    item, path, found, remove=remove, read_values=read_values, key=key, step=i
                )
                if type(item) is str
                else self._walk(
                    item,
                    f"{path}[{i}]",
                    found,
                    remove=remove,
                    values=values,
                    read_values=read_values,
                    key=key,
                )
                for i, item in enumerate(value)
            ]
            return tuple(items) if isinstance(value, tuple) else items
        if isinstance(value, str):
            return self._leaf(value, path, found, remove=remove, read_values=read_values, key=key)
        return value

    def _leaf(
        self,
        value: str,
        path: str,
        found: list[Redaction],
        *,
        remove: bool,
        read_values: bool,
        key: str,
        step: str | int | None = None,
    ) -> str:
        """A text value, redacted if it cites a basis. Its path is ``path`` itself, or
        with ``step`` (a field's name, an item's index) after it: written only for a hit
        (most values are none, and a path is written for every hit as before)."""
        if (
            read_values
            and value != REDACTED_VALUE
            and key not in IDENTIFIER_FIELDS
            and not _json_container(value)  # embedded JSON: the governor parses and guards it
        ):
            bases = self.value_bases(value)
            if bases:
                if type(step) is int:
                    path = f"{path}[{step}]"
                elif step is not None:
                    path = _join(path, str(step))
                for basis, kind in bases:
                    found.append(Redaction(path, key, basis, kind, "value"))
                return REDACTED_VALUE if remove else value
        return value


def opens_json(text: str) -> bool:
    """Whether the text's first character after white space opens a JSON object or
    array: only such a text can hold embedded JSON (the first character read alone,
    as nearly every text begins with neither white space nor a bracket)."""
    head = text[:1]
    return head in ("{", "[") or (head.isspace() and text.lstrip()[:1] in ("{", "["))


def _json_container(text: str) -> bool:
    if not opens_json(text):
        return False
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return isinstance(parsed, (dict, list))


_DEFAULT: dict[str, FairLendingGuard] = {}


def default_guard() -> FairLendingGuard:
    """The guard over the shipped prohibited-terms data, proxies included (built once)."""
    if "g" not in _DEFAULT:
        _DEFAULT["g"] = FairLendingGuard()
    return _DEFAULT["g"]


def redact(value: Any, *, path: str = "") -> Redacted:
    """:meth:`FairLendingGuard.redact` with the default guard."""
    return default_guard().redact(value, path=path)


def find_prohibited_keys(value: Any, *, path: str = "", values: bool = True) -> list[Redaction]:
    """:meth:`FairLendingGuard.find_prohibited_keys` with the default guard."""
    return default_guard().find_prohibited_keys(value, path=path, values=values)
