"""The reason catalogue (versioned data): codes, Regulation B mapping, approved wordings.

Each entry names the Form C-1 reason it corresponds to (or a creditor-specific one,
as 12 CFR 1002 Appendix C para 3 allows), a category label, the applicant fields its
wordings state, its excluded-attribute mapping and one or more approved wordings with
``{field}`` placeholders. Every wording must state every field the entry lists, so any
approved variant states the applicant's actual values.

The loader is strict like the policy loader: unknown, missing and duplicate keys, bad
dates, placeholders that the entry does not declare are errors naming file and key.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import string
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from credit.errors import PolicyError
from credit.yamldata import expect_keys, load_yaml, read_date, read_source, read_str

__all__ = [
    "Catalogue",
    "ReasonEntry",
    "default_catalogue",
    "default_catalogue_path",
    "load_catalogue",
    "placeholders",
]

_HEADER = frozenset({"catalogue", "version", "effectiveDate", "reference", "products", "reasons"})
_ENTRY_REQUIRED = frozenset(
    {"kind", "regB", "category", "states", "excludedAttributes", "reference", "wordings"}
)
_ENTRY_OPTIONAL = frozenset({"bureauCode"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReasonEntry(_Frozen):
    code: str
    kind: Literal["adverse", "referral"]
    reg_b: str
    category: str
    states: tuple[str, ...]
    excluded_attributes: tuple[str, ...]
    reference: str
    wordings: tuple[str, ...]
    bureau_code: str | None = None

    def render(self, values: Mapping[str, str], variant: int = 0) -> str:
        """Fill an approved wording with the stated values (exact strings)."""
        return self.wordings[variant].format_map(dict(values))


class Catalogue(_Frozen):
    name: str
    version: str
    effective_date: dt.date
    reference: str
    source: str
    sha256: str
    product_names: Mapping[str, str]
    entries: Mapping[str, ReasonEntry]
    by_bureau_code: Mapping[str, str]

    def __getitem__(self, code: str) -> ReasonEntry:
        return self.entries[code]

    def __contains__(self, code: object) -> bool:
        return code in self.entries

    def key_factor_code(self, bureau_code: str) -> str | None:
        """The reason code for a bureau key-factor code, or None if not catalogued."""
        return self.by_bureau_code.get(bureau_code)

    def codes(self, kind: str | None = None) -> tuple[str, ...]:
        return tuple(c for c, e in self.entries.items() if kind is None or e.kind == kind)


def placeholders(wording: str) -> tuple[str, ...]:
    """The ``{field}`` names of a wording, in order."""
    return tuple(name for _, name, _, _ in string.Formatter().parse(wording) if name is not None)


def load_catalogue(path: Path | str) -> Catalogue:
    path = Path(path)
    file = str(path)
    text, raw = read_source(path)
    doc = expect_keys(load_yaml(path, text), required=_HEADER, file=file, key="")
    products = expect_keys(doc["products"], required={"auto", "card"}, file=file, key="products")
    names = {k: read_str(v, file=file, key=f"products.{k}") for k, v in products.items()}
    reasons = doc["reasons"]
    if not isinstance(reasons, dict) or not reasons:
        raise PolicyError("expected a non-empty mapping of reason codes", file=file, key="reasons")
    entries: dict[str, ReasonEntry] = {}
    by_bureau: dict[str, str] = {}
    for code, body in reasons.items():
        key = f"reasons.{code}"
        entry = expect_keys(
            body, required=_ENTRY_REQUIRED, optional=_ENTRY_OPTIONAL, file=file, key=key
        )
        kind = entry["kind"]
        if kind not in ("adverse", "referral"):
            raise PolicyError(
                f"kind must be adverse or referral, got {kind!r}", file=file, key=f"{key}.kind"
            )
        states = entry["states"]
        if not isinstance(states, list) or not all(isinstance(s, str) for s in states):
            raise PolicyError("expected a list of field names", file=file, key=f"{key}.states")
        if kind == "adverse" and not states:
            raise PolicyError(
                "an adverse reason must state at least one of the applicant's values "
                "(12 CFR 1002.9(b)(2): specific reasons)",
                file=file,
                key=f"{key}.states",
            )
        excluded = entry["excludedAttributes"]
        if not isinstance(excluded, list) or not all(isinstance(s, str) for s in excluded):
            raise PolicyError(
                "expected a list of attributes", file=file, key=f"{key}.excludedAttributes"
            )
        wordings = entry["wordings"]
        if not isinstance(wordings, list) or not wordings:
            raise PolicyError("expected at least one wording", file=file, key=f"{key}.wordings")
        for i, wording in enumerate(wordings):
            wkey = f"{key}.wordings[{i}]"
            read_str(wording, file=file, key=wkey)
            if not wording.isascii():
                raise PolicyError("an approved wording must be ASCII", file=file, key=wkey)
            used = placeholders(wording)
            for name in used:
                if name not in states:
                    raise PolicyError(
                        f"placeholder {{{name}}} is not among the fields the entry states",
                        file=file,
                        key=wkey,
                    )
            for name in states:
                if name not in used:
                    raise PolicyError(
                        f"wording does not state the field {name}", file=file, key=wkey
                    )
        bureau_code = entry.get("bureauCode")
        if bureau_code is not None:
            bureau_code = read_str(bureau_code, file=file, key=f"{key}.bureauCode")
            if bureau_code in by_bureau:
                raise PolicyError(
                    f"bureau code {bureau_code} already mapped to {by_bureau[bureau_code]}",
                    file=file,
                    key=f"{key}.bureauCode",
                )
            by_bureau[bureau_code] = code
        entries[code] = ReasonEntry(
            code=code,
            kind=kind,
            reg_b=read_str(entry["regB"], file=file, key=f"{key}.regB"),
            category=read_str(entry["category"], file=file, key=f"{key}.category"),
            states=tuple(states),
            excluded_attributes=tuple(excluded),
            reference=read_str(entry["reference"], file=file, key=f"{key}.reference"),
            wordings=tuple(wordings),
            bureau_code=bureau_code,
        )
    return Catalogue(
        name=read_str(doc["catalogue"], file=file, key="catalogue"),
        version=read_str(str(doc["version"]), file=file, key="version"),
        effective_date=read_date(doc["effectiveDate"], file=file, key="effectiveDate"),
        reference=read_str(doc["reference"], file=file, key="reference"),
        source=file,
        sha256=hashlib.sha256(raw).hexdigest(),
        product_names=names,
        entries=entries,
        by_bureau_code=by_bureau,
    )


def default_catalogue_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "reasons.yaml"))


@cache
def default_catalogue() -> Catalogue:
    return load_catalogue(default_catalogue_path())
