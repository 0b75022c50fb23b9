"""Shared helpers for the batch underwriter's tests: policy variants and frame diffs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from credit.policy import Policy, default_policy_path, load_policy

# Policies unlike the reference in every way the columnar underwriter restates: a zero
# APR (whose factor over 40 months is exactly 1/40, so payments land on half cents),
# the other step order the methodology allows and another factor order, fewer reasons,
# odd margins, a percent quantum of 0.01 with a cap finer than it, a fractional payment
# percentage, other steps; and money rounded to whole dollars with whole percents.
VARIANTS: dict[str, dict[str, Any]] = {
    "zero-apr": {
        "pricing.auto.prime.apr": "0.00",
        "products.auto.termsAllowed": [36, 40, 48, 60, 72],
    },
    "reordered": {
        "steps": [
            "referUnusableFile",
            "counteroffer",
            "declineHardFailure",
            "referWithinMargin",
            "approve",
        ],
        "factorOrder": ["bureauKeyFactors", "dtiOverCap", "scoreBelowMinimum", "ltvOverCap"],
        "maxReasons": 2,
        "margins.dtiPct": "0.7",
        "margins.ltvPct": "3",
        "margins.scorePoints": 4,
        "rounding.percent": "0.01",
        "products.auto.maxDtiPct": "43.55",
        "products.card.paymentPctOfLine": "2.75",
        "products.auto.counterofferStep": "250.00",
        "products.card.counterofferStep": "50.00",
    },
    "whole-dollars": {
        "rounding.money": "1",
        "rounding.percent": "1",
        "products.card.maxDtiPct": "38.5",
        "pricing.card.prime.apr": "18.125",
    },
}


def policy_with(changes: dict[str, Any], directory: Path, name: str = "variant") -> Policy:
    """The reference policy with some parameters' values changed, written and loaded."""
    document = yaml.safe_load(default_policy_path().read_text(encoding="utf-8"))
    document = copy.deepcopy(document)
    document["version"] = f"2026.1-{name}"
    for key, value in changes.items():
        node = document
        *path, last = key.split(".")
        for part in path:
            node = node[part]
        node[last]["value"] = value
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return load_policy(path)
