"""Governed consumer credit decisioning.

The public surface of the core, re-exported in one place (a test pins it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from credit._exports import lazy_exports

if TYPE_CHECKING:
    from credit.canonical import canonical_bytes, dumps, loads, sha256_hex
    from credit.catalogue import Catalogue, ReasonEntry, default_catalogue, load_catalogue
    from credit.errors import (
        CreditError,
        InputError,
        NotInPolicyError,
        PolicyError,
        UndecidedCaseError,
    )
    from credit.models import (
        Application,
        Case,
        CreditReport,
        Decision,
        MonitoringData,
        Terms,
        parse_case,
        parse_decision,
    )
    from credit.policy import Policy, default_policy, load_policy
    from credit.underwriting import StatedReason, Underwriting, decide_case, underwrite

# Each public name, and the module it is defined in: imported on first use (PEP 562), so
# that ``import credit.<module>`` (the command line's start above all) costs only what
# that module needs, not the whole core.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("canonical_bytes", "dumps", "loads", "sha256_hex"), "credit.canonical"),
    **dict.fromkeys(
        ("Catalogue", "ReasonEntry", "default_catalogue", "load_catalogue"), "credit.catalogue"
    ),
    **dict.fromkeys(
        ("CreditError", "InputError", "NotInPolicyError", "PolicyError", "UndecidedCaseError"),
        "credit.errors",
    ),
    **dict.fromkeys(
        (
            "Application",
            "Case",
            "CreditReport",
            "Decision",
            "MonitoringData",
            "Terms",
            "parse_case",
            "parse_decision",
        ),
        "credit.models",
    ),
    **dict.fromkeys(("Policy", "default_policy", "load_policy"), "credit.policy"),
    **dict.fromkeys(
        ("StatedReason", "Underwriting", "decide_case", "underwrite"), "credit.underwriting"
    ),
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "Application",
    "Case",
    "Catalogue",
    "CreditError",
    "CreditReport",
    "Decision",
    "InputError",
    "MonitoringData",
    "NotInPolicyError",
    "Policy",
    "PolicyError",
    "ReasonEntry",
    "StatedReason",
    "Terms",
    "UndecidedCaseError",
    "Underwriting",
    "canonical_bytes",
    "decide_case",
    "default_catalogue",
    "default_policy",
    "dumps",
    "load_catalogue",
    "load_policy",
    "loads",
    "parse_case",
    "parse_decision",
    "sha256_hex",
    "underwrite",
]
__version__ = "0.1.0"
