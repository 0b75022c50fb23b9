"""Guardrails: the notice verifier (V1-V8), what a notice must say, the reviewed lock.

Nothing here imports the renderer (:mod:`credit.notices`): an import contract in
``make test`` enforces it, so the verifier's judgement is independent of the code
it judges.
"""

from credit.guardrails.expectation import ADVERSE_DECISIONS, expectation_for
from credit.guardrails.lock import DataSources, LockFile, current_pins, lock_diff, read_lock
from credit.guardrails.pins import Pins, default_pins, load_pins
from credit.guardrails.report import CHECK_IDS, CHECK_NAMES, CheckResult, VerificationReport
from credit.guardrails.verifier import Verifier, verify

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
