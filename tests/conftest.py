"""Shared builders for the underwriting tests.

A case is built in its wire form (a plain dict, money as decimal strings) with
overrides, so a test reads as the case file it decides. ``debt_for_dti`` finds the
existing monthly debt that puts a request at an exact DTI through the policy's own
capacity arithmetic; the ``oracle_*`` functions recompute the policy text's
formulas independently, in exact rational arithmetic, to check that arithmetic.
"""

from __future__ import annotations

import copy
import math
import os
import sys
import threading
from collections.abc import Callable, Iterator
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from credit import Policy, Underwriting, decide_case, default_policy, parse_case
from credit.underwriting.capacity import amortised_payment, card_payment, dti_pct

# Tests never assert on wall time: hypothesis's own deadline (200 ms an example) is one,
# and a shared machine's load (a file system's flush, another job) can pass it. Every
# property runs without it; a test may still set its own settings.
settings.register_profile("credit", deadline=None)
settings.load_profile("credit")

POLICY = default_policy()


@pytest.fixture(scope="session", autouse=True)
def journal_key_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One journal signing key for the session (a test may make its own), named by
    $CREDIT_SIGNING_KEY from the start, so that a module's fixtures use it too and no
    test makes ./credit-journal.key in the working tree."""
    from credit.journal.keys import keygen

    path = tmp_path_factory.mktemp("journal-key") / "journal.key"
    keygen(path, "credit.test/journal")
    before = os.environ.get("CREDIT_SIGNING_KEY")
    os.environ["CREDIT_SIGNING_KEY"] = str(path)
    yield path
    if before is None:
        os.environ.pop("CREDIT_SIGNING_KEY", None)
    else:
        os.environ["CREDIT_SIGNING_KEY"] = before


@pytest.fixture(autouse=True)
def _isolated_journal_and_outbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, journal_key_path: Path
) -> None:
    """No test writes ./credit.db, ./outbox, ./checkpoints or ./credit-journal.key in
    the working tree: the journal, the outbox and the checkpoints default to this
    test's own temporary folder, the signing key to the session's (a test may still
    set its own)."""
    monkeypatch.setenv("CREDIT_DATABASE_URL", f"sqlite:///{tmp_path / 'credit.db'}")
    monkeypatch.setenv("CREDIT_OUTBOX", str(tmp_path / "outbox"))
    monkeypatch.setenv("CREDIT_SIGNING_KEY", str(journal_key_path))
    monkeypatch.setenv("CREDIT_CHECKPOINTS", str(tmp_path / "checkpoints"))


CENT = Decimal("0.01")
TENTH = Decimal("0.1")
# Monthly income 10,000.00: DTI % is then (existing debt + new payment) / 100, so any
# DTI to the cent is reachable and a tie at a half tenth is exactly representable.
INCOME = Decimal("120000.00")
AS_OF = "2026-11-30"
RANK = {"decline": 0, "counteroffer": 1, "refer": 2, "approve": 3}


def money(value: Decimal | int | str) -> str:
    """Money as the case format writes it: a decimal string with cents."""
    return str(Decimal(value).quantize(CENT))


def credit_report(
    *,
    score: int | None = 750,
    tradelines: int = 7,
    history_months: int = 84,
    disputes: list[dict[str, Any]] | None = None,
    key_factors: list[dict[str, Any]] | None = None,
    score_range: tuple[int, int] = (300, 850),
) -> dict[str, Any]:
    return {
        "bureau": {
            "name": "Example Credit Bureau",
            "address": "PO Box 1000, Springfield, ST 00000",
            "phone": "1-800-555-0100",
        },
        "score": score,
        "scoreModel": "Example Score 8",
        "scoreRange": list(score_range),
        "scoreDate": "2026-11-20",
        "tradelines": tradelines,
        "historyMonths": history_months,
        "utilisationPct": "34.0",
        "inquiries12m": 2,
        "derogatories": [],
        "disputes": disputes or [],
        "keyFactors": key_factors or [],
    }


def key_factor(code: str, value: str = "34%") -> dict[str, str]:
    return {"code": code, "text": f"Bureau key factor {code}", "value": value}


def auto_case(
    *,
    case_id: str = "C-AUTO",
    as_of: str = AS_OF,
    income: Decimal | str = INCOME,
    debt: Decimal | str = "1000.00",
    amount: Decimal | str = "20000.00",
    term: int = 60,
    value: Decimal | str = "25000.00",
    **report: Any,
) -> dict[str, Any]:
    """An auto case; by default prime (750), LTV 80.0, DTI well inside the cap."""
    return {
        "caseId": case_id,
        "asOf": as_of,
        "application": {
            "product": "auto",
            "annualIncome": money(income),
            "monthlyDebtPayments": money(debt),
            "requestedAmount": money(amount),
            "termMonths": term,
            "vehicleValue": money(value),
        },
        "creditReport": credit_report(**report),
    }


def card_case(
    *,
    case_id: str = "C-CARD",
    as_of: str = AS_OF,
    income: Decimal | str = INCOME,
    debt: Decimal | str = "1000.00",
    line: Decimal | str = "5000.00",
    **report: Any,
) -> dict[str, Any]:
    """A card case; by default prime (750), 5,000 requested, DTI well inside the cap."""
    return {
        "caseId": case_id,
        "asOf": as_of,
        "application": {
            "product": "card",
            "annualIncome": money(income),
            "monthlyDebtPayments": money(debt),
            "requestedLine": money(line),
        },
        "creditReport": credit_report(**report),
    }


def build_case(product: str, **overrides: Any) -> dict[str, Any]:
    return auto_case(**overrides) if product == "auto" else card_case(**overrides)


def with_changes(case: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``case`` with the dotted ``path`` set (or removed if value is ...)."""
    out = copy.deepcopy(case)
    *parents, last = path.split(".")
    node = out
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


def decide(case: dict[str, Any], policy: Policy = POLICY) -> Underwriting:
    return decide_case(parse_case(case), policy)


# ------------------------------------------------------------------ policy arithmetic


def band_of(score: int, policy: Policy = POLICY) -> str:
    for band in ("prime", "near-prime", "subprime"):
        if score >= policy[f"scoreBands.{band}"].value:
            return band
    raise AssertionError(f"score {score} is in no band")


def new_payment(
    product: str,
    score: int,
    *,
    amount: Decimal | str | None = None,
    term: int | None = None,
    line: Decimal | str | None = None,
    policy: Policy = POLICY,
) -> Decimal:
    """The new monthly payment the policy assesses for a request, via capacity.py."""
    pricing = policy.pricing(product, band_of(score, policy))
    money_q = policy["rounding.money"].value
    if product == "auto":
        assert amount is not None and term is not None
        return amortised_payment(Decimal(amount), pricing.apr.value, term, money_q)
    assert line is not None and pricing.line is not None
    assessed = min(pricing.line.value, Decimal(line))
    pct = policy["products.card.paymentPctOfLine"].value
    return card_payment(assessed, pct, money_q)


def debt_for_dti(
    target: Decimal | str,
    product: str,
    *,
    score: int = 750,
    income: Decimal | str = INCOME,
    amount: Decimal | str = "20000.00",
    term: int = 60,
    line: Decimal | str = "5000.00",
    policy: Policy = POLICY,
) -> Decimal:
    """Existing monthly debt that puts the request at exactly ``target`` DTI %."""
    target, income = Decimal(target), Decimal(income)
    payment = new_payment(product, score, amount=amount, term=term, line=line, policy=policy)
    debt = (target * income / 1200 - payment).quantize(CENT, ROUND_HALF_UP)
    got = dti_pct(debt, payment, income, policy["rounding.percent"].value)
    assert got == target, f"cannot reach DTI {target}: got {got} with debt {debt}"
    assert debt >= 0, f"DTI {target} is below the new payment alone"
    return debt


# ------------------------------------------------------------------ independent oracle
# The policy text's formulas in exact rational arithmetic, sharing no code with
# capacity.py: the figures the engine states must equal these.


def _half_up(value: Fraction, quantum: Decimal) -> Decimal:
    q = Fraction(quantum)
    steps = math.floor(value / q + Fraction(1, 2))
    return (Decimal(steps) * quantum).quantize(quantum)


@lru_cache(maxsize=64)
def _factor(apr_pct: Decimal, term: int) -> Fraction:
    r = Fraction(apr_pct) / 100 / 12
    return r / (1 - (1 + r) ** -term)


def oracle_payment_exact(amount: Decimal, apr_pct: Decimal, term: int) -> Fraction:
    """P * r / (1 - (1 + r)^-n), r = APR / 12, exactly."""
    return Fraction(amount) * _factor(apr_pct, term)


def oracle_payment(amount: Decimal, apr_pct: Decimal, term: int) -> Decimal:
    return _half_up(oracle_payment_exact(amount, apr_pct, term), CENT)


def oracle_card_payment(line: Decimal, pct_of_line: Decimal) -> Decimal:
    return _half_up(Fraction(line) * Fraction(pct_of_line) / 100, CENT)


def oracle_dti(debt: Decimal, payment: Decimal, income: Decimal) -> Decimal:
    """(existing debt + new payment) / (annual income / 12) x 100, half-up to 0.1."""
    monthly_income = Fraction(income) / 12
    return _half_up((Fraction(debt) + Fraction(payment)) / monthly_income * 100, TENTH)


def oracle_ltv(amount: Decimal, value: Decimal) -> Decimal:
    return _half_up(Fraction(amount) / Fraction(value) * 100, TENTH)


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="session")
def policy() -> Policy:
    return POLICY


@pytest.fixture(scope="session")
def case_builder() -> Callable[..., dict[str, Any]]:
    """``case_builder("auto", score=610, debt=...)``: a case dict with overrides."""
    return build_case


def in_threads(step: Callable[[int, int], None], threads: int = 8) -> list[str]:
    """``step(seed, i)`` for i in range(20,000) on each of ``threads`` threads at once,
    with the interpreter's switch interval made tiny so that a thread may switch between
    any two steps of another's; what each thread met (none: an empty list)."""
    errors: list[str] = []

    def work(seed: int) -> None:
        try:
            for i in range(20_000):
                step(seed, i)
        except Exception as err:  # what a thread met, reported to the caller
            errors.append(repr(err))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        running = [threading.Thread(target=work, args=(seed,)) for seed in range(threads)]
        for thread in running:
            thread.start()
        for thread in running:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    return errors
