"""Guardrails: the notice verifier (V1-V8), what a notice must say, the reviewed lock.

Nothing here imports the renderer (:mod:`credit.notices`): an import contract in
``make test`` enforces it, so the verifier's judgement is independent of the code
it judges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from credit._exports import lazy_exports

if TYPE_CHECKING:
    from credit.guardrails.expectation import ADVERSE_DECISIONS, expectation_for
    from credit.guardrails.lock import DataSources, LockFile, current_pins, lock_diff, read_lock
    from credit.guardrails.pins import Pins, default_pins, load_pins
    from credit.guardrails.report import CHECK_IDS, CHECK_NAMES, CheckResult, VerificationReport
    from credit.guardrails.verifier import Verifier, verify

# Each name is imported from its module when first used, so `credit verify` does not
# import what builds an expectation (the underwriting's derivation) only to check one.
_HOME = {
    "ADVERSE_DECISIONS": "expectation",
    "expectation_for": "expectation",
    "DataSources": "lock",
    "LockFile": "lock",
    "current_pins": "lock",
    "lock_diff": "lock",
    "read_lock": "lock",
    "Pins": "pins",
    "default_pins": "pins",
    "load_pins": "pins",
    "CHECK_IDS": "report",
    "CHECK_NAMES": "report",
    "CheckResult": "report",
    "VerificationReport": "report",
    "Verifier": "verifier",
    "verify": "verifier",
}


__getattr__, __dir__ = lazy_exports(
    __name__, {name: f"{__name__}.{home}" for name, home in _HOME.items()}
)


__all__ = [
    "ADVERSE_DECISIONS",
    "CHECK_IDS",
    "CHECK_NAMES",
    "CheckResult",
    "DataSources",
    "LockFile",
    "Pins",
    "VerificationReport",
    "Verifier",
    "current_pins",
    "default_pins",
    "expectation_for",
    "load_pins",
    "lock_diff",
    "read_lock",
    "verify",
]
