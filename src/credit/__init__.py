"""Governed consumer credit decisioning.

The public surface of the core, re-exported in one place (a test pins it).
"""

from credit.canonical import canonical_bytes, dumps, loads, sha256_hex
from credit.catalogue import Catalogue, ReasonEntry, default_catalogue, load_catalogue
from credit.errors import CreditError, InputError, NotInPolicyError, PolicyError, UndecidedCaseError
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
