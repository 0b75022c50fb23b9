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
import string
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict

from credit.errors import PolicyError
from credit.kept import READ_ONLY
from credit.yamldata import expect_keys, load_yaml, read_source, read_str, versioned

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
    {
        "kind",
        "personMayCite",
        "regB",
        "category",
        "states",
        "excludedAttributes",
        "reference",
        "wordings",
    }
)
_ENTRY_OPTIONAL = frozenset(
    {"bureauCode", "derogatoryKinds", "products", "ruleStated", "holdsWhen"}
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Holds(_Frozen):
    """When a reason is true of a file: ``field`` (a figure the entry states) is
    ``below`` or ``above`` another figure it states (strictly)."""

    field: str
    relation: Literal["below", "above"]
    than: str


class ReasonEntry(_Frozen):
    code: str
    kind: Literal["adverse", "referral"]
    reg_b: str
    category: str
    states: tuple[str, ...]
    excluded_attributes: tuple[str, ...]
    reference: str
    wordings: tuple[str, ...]
    person_may_cite: bool = False
    rule_stated: bool = True
    bureau_code: str | None = None
    derogatory_kinds: tuple[str, ...] = ()
    products: tuple[str, ...] = ("auto", "card")
    holds_when: Holds | None = None

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
    # read-only: the verifier keeps answers per pinned catalogue
    product_names: Annotated[Mapping[str, str], READ_ONLY]
    entries: Annotated[Mapping[str, ReasonEntry], READ_ONLY]
    by_bureau_code: Annotated[Mapping[str, str], READ_ONLY]

    def __getitem__(self, code: str) -> ReasonEntry:
        return self.entries[code]

    def __contains__(self, code: object) -> bool:
        return code in self.entries

    def key_factor_code(self, bureau_code: str) -> str | None:
        """The reason code for a bureau key-factor code, or None if not catalogued."""
        return self.by_bureau_code.get(bureau_code)

    def codes(self, kind: str | None = None) -> tuple[str, ...]:
        return tuple(c for c, e in self.entries.items() if kind is None or e.kind == kind)

    def rule_codes(self) -> tuple[str, ...]:
        """The codes the policy's rules state (every code but those only a person cites)."""
        return tuple(c for c, e in self.entries.items() if e.rule_stated)

    def citable(self) -> tuple[str, ...]:
        """The codes a person deciding a case by hand may cite, in catalogue order."""
        return tuple(c for c, e in self.entries.items() if e.person_may_cite)


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
        may_cite = entry["personMayCite"]
        if not isinstance(may_cite, bool):
            raise PolicyError(
                f"expected true or false, got {may_cite!r}", file=file, key=f"{key}.personMayCite"
            )
        if may_cite and kind != "adverse":
            raise PolicyError(
                "only an adverse reason may be cited by a person (a referral reason is for "
                "the reviewer, never an applicant)",
                file=file,
                key=f"{key}.personMayCite",
            )
        rule_stated = entry.get("ruleStated", True)
        if not isinstance(rule_stated, bool) or (not rule_stated and not may_cite):
            raise PolicyError(
                "expected true or false; a reason the rules never state must be one a "
                "person may cite",
                file=file,
                key=f"{key}.ruleStated",
            )
        derogatory_kinds = _str_list(
            entry.get("derogatoryKinds", []), file, f"{key}.derogatoryKinds"
        )
        products_of = _str_list(entry.get("products", ["auto", "card"]), file, f"{key}.products")
        for product in products_of:
            if product not in names:
                raise PolicyError(f"unknown product {product!r}", file=file, key=f"{key}.products")
        if not products_of:
            raise PolicyError("expected at least one product", file=file, key=f"{key}.products")
        holds_when = _holds(entry.get("holdsWhen"), states, file, f"{key}.holdsWhen")
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
            person_may_cite=may_cite,
            rule_stated=rule_stated,
            bureau_code=bureau_code,
            derogatory_kinds=derogatory_kinds,
            products=products_of,
            holds_when=holds_when,
        )
    return Catalogue(
        **versioned(doc, "catalogue", file=file, raw=raw),
        product_names=names,
        entries=entries,
        by_bureau_code=by_bureau,
    )


def _holds(value: object, states: list[str], file: str, key: str) -> Holds | None:
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) != 2 or "field" not in value:
        raise PolicyError(
            "expected {field: F, below: G} or {field: F, above: G}", file=file, key=key
        )
    relation = next((r for r in ("below", "above") if r in value), None)
    if relation is None:
        raise PolicyError("expected a below or above relation", file=file, key=key)
    field, than = value["field"], value[relation]
    for name in (field, than):
        if name not in states:
            raise PolicyError(
                f"{name!r} is not among the fields the entry states", file=file, key=key
            )
    return Holds(field=str(field), relation=relation, than=str(than))


def _str_list(value: object, file: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PolicyError("expected a list of names", file=file, key=key)
    if len(set(value)) != len(value):
        raise PolicyError("a name is listed twice", file=file, key=key)
    return tuple(value)


def default_catalogue_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "reasons.yaml"))


@cache
def default_catalogue() -> Catalogue:
    return load_catalogue(default_catalogue_path())
