"""The legal frame of an adverse-action notice, as versioned data (``data/legal-frame.yaml``).

Everything a notice says besides its principal reasons: the creditor's name and
address (12 CFR 1002.9(a)(2)), the statement of the action taken, the counteroffer's
terms and how long it stands (Form C-4), the credit-score disclosure (FCRA 615(a),
609(f)) and the ECOA paragraph with the agency's name and address (1002.9(b)(1),
Appendix A).

This module only reads the data. The renderer (:mod:`credit.notices`) fills the frame;
the verifier (:mod:`credit.guardrails`) re-derives it with its own substitution and
compares. Both read it through this loader, which is strict like the policy loader:
unknown, missing and duplicate keys, bad dates, non-ASCII text, and a placeholder the
template may not use are :class:`~credit.errors.PolicyError` naming file and key.
"""

from __future__ import annotations

import datetime as dt
import string
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict

from credit.errors import PolicyError
from credit.kept import READ_ONLY
from credit.yamldata import (
    expect_keys,
    load_yaml,
    read_int,
    read_source,
    read_str,
    versioned,
)

__all__ = [
    "LegalFrame",
    "default_frame",
    "default_frame_path",
    "load_frame",
    "template_fields",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# Each template and the placeholders it may use. A template that uses another name is
# a data error caught on load, never a KeyError while a notice is rendered.
_SCORE = {"score", "scoreLow", "scoreHigh", "scoreDate", "scoreModel", "bureauName"}
_BUREAU = {"bureauName", "bureauAddress", "bureauPhone"}
_ALLOWED: dict[str, frozenset[str]] = {
    "creditor.name": frozenset(),
    "creditor.address": frozenset(),
    "products.auto": frozenset(),
    "products.card": frozenset(),
    "header.title": frozenset(),
    "header.date": frozenset({"noticeDate", "caseId", "productName"}),
    "header.application": frozenset({"noticeDate", "caseId", "productName"}),
    "actionTaken.label": frozenset(),
    "actionTaken.decline": frozenset({"productName"}),
    "actionTaken.counteroffer": frozenset({"productName"}),
    "reasons.heading": frozenset(),
    "counteroffer.heading": frozenset(),
    "counteroffer.auto": frozenset({"amount", "termMonths", "apr", "payment"}),
    "counteroffer.card": frozenset({"creditLine", "apr", "payment"}),
    "counteroffer.standing": frozenset({"validDays", "offerExpires"}),
    "creditScore.heading": frozenset(),
    "creditScore.intro": frozenset(_BUREAU),
    "creditScore.score": frozenset(_SCORE),
    "creditScore.range": frozenset(_SCORE),
    "creditScore.date": frozenset(_SCORE),
    "creditScore.model": frozenset(_SCORE),
    "creditScore.keyFactorsHeading": frozenset(),
    "creditScore.keyFactor": frozenset({"keyFactorText", "keyFactorValue", "keyFactorCode"}),
    "creditScore.noKeyFactors": frozenset(),
    "creditScore.agency": frozenset(_BUREAU),
    "creditScore.notDecision": frozenset(_BUREAU),
    "creditScore.freeReport": frozenset(_BUREAU),
    "creditScore.dispute": frozenset(_BUREAU),
    "ecoa.heading": frozenset(),
    "ecoa.agencyName": frozenset(),
    "ecoa.agencyAddress": frozenset(),
    "ecoa.text": frozenset({"agencyName", "agencyAddress"}),
}
_SECTIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # section: (required keys, keys that are not templates)
    "creditor": (frozenset({"reference", "name", "address"}), frozenset({"reference"})),
    "products": (frozenset({"reference", "auto", "card"}), frozenset({"reference"})),
    "header": (frozenset({"reference", "title", "date", "application"}), frozenset({"reference"})),
    "actionTaken": (
        frozenset({"reference", "label", "decline", "counteroffer"}),
        frozenset({"reference"}),
    ),
    "reasons": (frozenset({"reference", "heading"}), frozenset({"reference"})),
    "counteroffer": (
        frozenset({"reference", "heading", "validDays", "auto", "card", "standing"}),
        frozenset({"reference", "validDays"}),
    ),
    "creditScore": (
        frozenset(
            {
                "reference",
                "heading",
                "intro",
                "score",
                "range",
                "date",
                "model",
                "keyFactorsHeading",
                "keyFactor",
                "noKeyFactors",
                "maxKeyFactors",
                "inquiriesBureauCodes",
                "inquiriesReference",
                "agency",
                "notDecision",
                "freeReport",
                "dispute",
            }
        ),
        frozenset({"reference", "maxKeyFactors", "inquiriesBureauCodes", "inquiriesReference"}),
    ),
    "ecoa": (
        frozenset(
            {"reference", "heading", "agencyName", "agencyAddress", "agencyReference", "text"}
        ),
        frozenset({"reference", "agencyReference"}),
    ),
}
_HEADER = frozenset({"frame", "version", "effectiveDate", "reference", *_SECTIONS})


class LegalFrame(_Frozen):
    """A loaded, validated legal frame. ``texts`` maps each dotted key
    (``ecoa.text``) to its template; ``sha256`` is of the file's exact bytes."""

    name: str
    version: str
    effective_date: dt.date
    reference: str
    source: str
    sha256: str
    # read-only: the verifier keeps answers per pinned frame
    texts: Annotated[dict[str, str], READ_ONLY]
    references: Annotated[dict[str, str], READ_ONLY]
    offer_valid_days: int
    max_key_factors: int
    inquiries_bureau_codes: tuple[str, ...]

    def __getitem__(self, key: str) -> str:
        return self.texts[key]


def template_fields(template: str) -> tuple[str, ...]:
    """The ``{name}`` placeholders of a frame template, in order."""
    return tuple(name for _, name, _, _ in string.Formatter().parse(template) if name is not None)


def _check_template(text: str, *, file: str, key: str) -> None:
    if not text.isascii():
        raise PolicyError("frame text must be ASCII", file=file, key=key)
    if any(ch in text for ch in "\r\n\t") or text != text.strip():
        raise PolicyError(
            "frame text must be one line without tabs or outer spaces", file=file, key=key
        )
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as err:
        raise PolicyError(f"bad placeholder: {err}", file=file, key=key) from None
    allowed = _ALLOWED[key]
    for literal, name, spec, conversion in parts:
        if "{" in literal or "}" in literal:
            raise PolicyError("escaped braces are not allowed in frame text", file=file, key=key)
        if name is None:
            continue
        if spec or conversion or not name.isidentifier():
            raise PolicyError(
                f"placeholder {{{name}}} must be a bare name (no format or conversion)",
                file=file,
                key=key,
            )
        if name not in allowed:
            shown = ", ".join(sorted(allowed)) or "none"
            raise PolicyError(
                f"placeholder {{{name}}} is not allowed here (allowed: {shown})",
                file=file,
                key=key,
            )


def load_frame(path: Path | str) -> LegalFrame:
    path = Path(path)
    file = str(path)
    decoded, raw = read_source(path)
    doc = expect_keys(load_yaml(path, decoded), required=_HEADER, file=file, key="")
    texts: dict[str, str] = {}
    references: dict[str, str] = {}
    sections: dict[str, dict[str, Any]] = {}
    for section, (required, plain) in _SECTIONS.items():
        body = expect_keys(doc[section], required=required, file=file, key=section)
        sections[section] = body
        references[section] = read_str(body["reference"], file=file, key=f"{section}.reference")
        for name in sorted(required - plain):
            key = f"{section}.{name}"
            text = read_str(body[name], file=file, key=key)
            _check_template(text, file=file, key=key)
            texts[key] = text
    score = sections["creditScore"]
    max_kf = read_int(score["maxKeyFactors"], file=file, key="creditScore.maxKeyFactors")
    if max_kf < 1:
        raise PolicyError("must be at least 1", file=file, key="creditScore.maxKeyFactors")
    codes = score["inquiriesBureauCodes"]
    if not isinstance(codes, list):
        raise PolicyError("expected a list", file=file, key="creditScore.inquiriesBureauCodes")
    inquiries = tuple(
        read_str(c, file=file, key=f"creditScore.inquiriesBureauCodes[{i}]")
        for i, c in enumerate(codes)
    )
    references["creditScore.inquiries"] = read_str(
        score["inquiriesReference"], file=file, key="creditScore.inquiriesReference"
    )
    references["ecoa.agency"] = read_str(
        sections["ecoa"]["agencyReference"], file=file, key="ecoa.agencyReference"
    )
    days = read_int(sections["counteroffer"]["validDays"], file=file, key="counteroffer.validDays")
    if days < 1:
        raise PolicyError("must be at least 1", file=file, key="counteroffer.validDays")
    return LegalFrame(
        **versioned(doc, "frame", file=file, raw=raw),
        texts=texts,
        references=references,
        offer_valid_days=days,
        max_key_factors=max_kf,
        inquiries_bureau_codes=inquiries,
    )


def default_frame_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "legal-frame.yaml"))


@cache
def default_frame() -> LegalFrame:
    """The legal frame the product ships (loaded once)."""
    return load_frame(default_frame_path())
