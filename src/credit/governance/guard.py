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

The guard matches whole field names only: ``ageOfOldestAccount`` is a fact of the
credit file and is kept, ``age`` is removed. Values are not read (a value naming a
basis is the matter of the decision-time fairness check, not of this guard).

Not formalised here: a basis carried in a value under an innocuous name
(``{"attribute": "sex", "value": ...}``); field names in other scripts that merely
look like a listed key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from credit.fairness_terms import (
    ProhibitedTerms,
    default_prohibited_terms,
    normalise_key,
)

__all__ = [
    "FairLendingGuard",
    "Redacted",
    "Redaction",
    "default_guard",
    "find_prohibited_keys",
    "normalise_key",
    "redact",
]


@dataclass(frozen=True, slots=True)
class Redaction:
    """One field removed: where it was, its name as given, and the basis it carries.

    ``path`` is dotted with ``[i]`` for array items (``application.applicant.dob``,
    ``tradelines[2].gender``); ``basis`` is the basis or proxy name in the data file
    (``age``, ``maritalStatus``, ``zipCode``); ``kind`` says which it is.
    """

    path: str
    key: str
    basis: str
    kind: Literal["basis", "proxy"] = "basis"

    def to_wire(self) -> dict[str, str]:
        return {"path": self.path, "key": self.key, "basis": self.basis, "kind": self.kind}


class Redacted(NamedTuple):
    """The cleaned value and the fields removed from it, in walk order."""

    value: Any
    redactions: list[Redaction]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class FairLendingGuard:
    """Redacts prohibited-basis fields by name, at any depth.

    ``include_proxies`` (default True) also removes the fields of the listed proxies
    (zip code, neighborhood, first name, surname, primary language, place of birth,
    maiden name): the underwriter is blind to them too.
    """

    def __init__(self, terms: ProhibitedTerms | None = None, *, include_proxies: bool = True):
        self.terms = terms or default_prohibited_terms()
        self.include_proxies = include_proxies
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
        """The basis (or proxy) a field name carries, compared normalised; else None."""
        return self._table.get(normalise_key(key))

    def redact(self, value: Any, *, path: str = "") -> Redacted:
        """A copy of ``value`` without any prohibited-basis field, and what was removed.

        The input is never modified. Objects become dicts, arrays keep their type
        (list or tuple); scalars are returned as they are.
        """
        found: list[Redaction] = []
        cleaned = self._walk(value, path, found, remove=True)
        return Redacted(cleaned, found)

    def extract(self, value: Any, *, path: str = "") -> tuple[Any, list[tuple[Redaction, Any]]]:
        """Like :meth:`redact`, also handing back each removed field's value (for
        intake, which moves the values into the monitoring vault)."""
        found: list[Redaction] = []
        values: list[Any] = []
        cleaned = self._walk(value, path, found, remove=True, values=values)
        return cleaned, list(zip(found, values, strict=True))

    def find_prohibited_keys(self, value: Any, *, path: str = "") -> list[Redaction]:
        """Every prohibited-basis field in ``value`` (the post-check: empty when clean)."""
        found: list[Redaction] = []
        self._walk(value, path, found, remove=False)
        return found

    def _walk(
        self,
        value: Any,
        path: str,
        found: list[Redaction],
        *,
        remove: bool,
        values: list[Any] | None = None,
    ) -> Any:
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                here = _join(path, str(key))
                hit = self.basis_of(key) if isinstance(key, str) else None
                if hit is not None:
                    found.append(Redaction(here, key, hit[0], hit[1]))
                    if values is not None:
                        values.append(item)
                    if remove:
                        continue
                out[key] = self._walk(item, here, found, remove=remove, values=values)
            return out
        if isinstance(value, (list, tuple)):
            items = [
                self._walk(item, f"{path}[{i}]", found, remove=remove, values=values)
                for i, item in enumerate(value)
            ]
            return tuple(items) if isinstance(value, tuple) else items
        return value


_DEFAULT: dict[str, FairLendingGuard] = {}


def default_guard() -> FairLendingGuard:
    """The guard over the shipped prohibited-terms data, proxies included (built once)."""
    if "g" not in _DEFAULT:
        _DEFAULT["g"] = FairLendingGuard()
    return _DEFAULT["g"]


def redact(value: Any, *, path: str = "") -> Redacted:
    """:meth:`FairLendingGuard.redact` with the default guard."""
    return default_guard().redact(value, path=path)


def find_prohibited_keys(value: Any, *, path: str = "") -> list[Redaction]:
    """:meth:`FairLendingGuard.find_prohibited_keys` with the default guard."""
    return default_guard().find_prohibited_keys(value, path=path)
