"""Seeded example credit cases: the generator behind ``examples/cases.jsonl``.

``generate_cases(seed, count)`` returns case documents in the case format
(shared/spec/case-format.md): camelCase, money as decimal strings with two places,
percentages as strings with one. All randomness comes from one
``random.Random(seed)``; nothing reads the clock or the global generator, and no
floating-point function outside IEEE arithmetic (no ``exp``, ``log``, ``gauss``) is
used, so a seed gives the same bytes on every platform.

Two kinds of case are shuffled together and numbered ``C-000001``...:

* ordinary cases: a synthetic applicant population whose income, debts, vehicle or
  line requested and bureau file (score, tradelines, history, utilisation,
  inquiries, derogatories, disputes, key factors) hang together;
* constructed cases, built on purpose (not hoped for) to land on each edge of the
  policy: the product minimum score at minimum - 1, minimum, minimum + margin and
  minimum + margin + 1; the band floors and the score below each; DTI exactly at
  the cap, at cap - margin, one quantum under that, one quantum over the cap and
  either side of each rounding half; LTV likewise; thin files (no score, too few
  tradelines, too short a history, and the first count that passes); unresolved
  disputes; auto counteroffers that only a longer term cures; card counteroffers;
  LTV-only failures; DTI failures no counteroffer can cure; more adverse reasons
  than a notice may state.

Every threshold is read from the policy (the shipped default unless one is given)
and every exact DTI or LTV figure is computed with the underwriter's own capacity
functions (:mod:`credit.underwriting.capacity`). An exact DTI is reached by taking
an annual income that is a multiple of 1200, so that (debt + payment) x 1200 /
income is (debt + payment) / k and a target with two decimals is hit in whole
cents. The generator never imports the decision engine: it constructs, the tests
decide and check.

The ``monitoring`` object (government-monitoring information) is drawn
independently of the credit file, except that the applicant's age bounds the length
of credit history a file can show.

Run ``python -m credit.examples --seed 2026 --count 600 --out examples/cases.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from credit.canonical import dumps
from credit.catalogue import default_catalogue
from credit.policy import BANDS, Policy, default_policy
from credit.underwriting.capacity import (
    amortised_payment,
    card_payment,
    dti_pct,
    ltv_pct,
    round_half_up,
)

__all__ = ["AS_OF", "DEFAULT_COUNT", "DEFAULT_SEED", "generate_cases", "main", "write_cases"]

DEFAULT_SEED = 2026
DEFAULT_COUNT = 600
AS_OF = dt.date(2026, 11, 30)

# The bureau's scale and identity: properties of the (fictitious) bureau, not policy.
SCORE_RANGE = (300, 850)
_BUREAUS: tuple[tuple[dict[str, str], int], ...] = (
    (
        {
            "name": "Example Credit Bureau",
            "address": "PO Box 1000, Springfield, ST 00000",
            "phone": "1-800-555-0100",
        },
        5,
    ),
    (
        {
            "name": "Sample Consumer Reporting Agency",
            "address": "PO Box 2000, Riverton, ST 00000",
            "phone": "1-800-555-0101",
        },
        3,
    ),
    (
        {
            "name": "Demonstration Credit Services",
            "address": "PO Box 3000, Lakeview, ST 00000",
            "phone": "1-800-555-0102",
        },
        2,
    ),
)
_SCORE_MODELS: tuple[tuple[str, int], ...] = (("Example Score 8", 6), ("Example Score 9", 4))

# Bureau key-factor texts, by the bureau's code. Only codes that the reason catalogue
# knows are ever emitted (checked against the catalogue at generation time).
_KEY_FACTOR_TEXT: dict[str, str] = {
    "01": "Amount owed on accounts is too high",
    "02": "Level of delinquency on accounts",
    "05": "Too many accounts with balances",
    "08": "Too many inquiries last 12 months",
    "10": "Proportion of balances to credit limits on revolving accounts is too high",
    "13": "Time since delinquency is too recent or unknown",
    "14": "Length of time accounts have been established",
    "18": "Number of accounts with delinquency",
    "38": "Serious delinquency, and public record or collection filed",
}
_DELINQUENT = ("late30", "late60", "late90", "chargeoff")
_SERIOUS = ("chargeoff", "collection", "publicRecord")

_RACES: tuple[tuple[str, int], ...] = (
    ("White", 590),
    ("Black or African American", 130),
    ("Asian", 60),
    ("American Indian or Alaska Native", 10),
    ("Native Hawaiian or Other Pacific Islander", 5),
    ("Two or more races", 35),
    ("Information not provided", 80),
)
_ETHNICITIES: tuple[tuple[str, int], ...] = (
    ("Not Hispanic or Latino", 740),
    ("Hispanic or Latino", 180),
    ("Information not provided", 80),
)
_SEXES: tuple[tuple[str, int], ...] = (
    ("Female", 470),
    ("Male", 470),
    ("Information not provided", 60),
)
_MARITAL: tuple[tuple[str | None, int], ...] = (
    ("Married", 480),
    ("Unmarried", 400),
    ("Separated", 60),
    (None, 60),
)
_AGE_BRACKETS: tuple[tuple[tuple[int, int], int], ...] = (
    ((18, 24), 11),
    ((25, 34), 22),
    ((35, 44), 21),
    ((45, 54), 18),
    ((55, 64), 16),
    ((65, 84), 12),
)
_INCOME_BRACKETS: tuple[tuple[tuple[int, int], int], ...] = (
    ((25_000, 40_000), 17),
    ((40_000, 60_000), 25),
    ((60_000, 90_000), 26),
    ((90_000, 130_000), 17),
    ((130_000, 180_000), 10),
    ((180_000, 250_000), 5),
)
_CARD_LINES: tuple[tuple[int, int], ...] = (
    (1_000, 8),
    (1_500, 6),
    (2_000, 10),
    (2_500, 6),
    (3_000, 10),
    (4_000, 6),
    (5_000, 14),
    (7_500, 8),
    (10_000, 12),
    (12_000, 5),
    (15_000, 8),
    (20_000, 5),
    (25_000, 2),
)
# Weight of each allowed auto term, by its position among the policy's terms.
_TERM_WEIGHTS = (10, 20, 40, 30)

_CENT = Decimal("0.01")
_HUNDRED = Decimal(100)
_TWELVE_HUNDRED = Decimal(1200)

T = TypeVar("T")
Draft = dict[str, Any]


def _money(value: Decimal) -> str:
    return f"{round_half_up(value, _CENT):f}"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


@dataclass(frozen=True, slots=True)
class _Thresholds:
    """The policy numbers the constructed cases aim at, all read from the policy."""

    min_score: dict[str, int]
    max_dti: dict[str, Decimal]
    max_ltv: Decimal
    min_amount: Decimal
    terms: tuple[int, ...]
    min_line: Decimal
    card_line_step: Decimal
    auto_step: Decimal
    band_floor: dict[str, int]
    score_margin: int
    dti_margin: Decimal
    ltv_margin: Decimal
    pct_q: Decimal
    money_q: Decimal
    min_tradelines: int
    min_history: int

    @classmethod
    def of(cls, policy: Policy) -> _Thresholds:
        auto, card = policy.product("auto"), policy.product("card")
        assert auto.max_ltv_pct and auto.min_amount and auto.terms_allowed and card.min_line
        return cls(
            min_score={"auto": auto.min_score.value, "card": card.min_score.value},
            max_dti={"auto": auto.max_dti_pct.value, "card": card.max_dti_pct.value},
            max_ltv=auto.max_ltv_pct.value,
            min_amount=auto.min_amount.value,
            terms=tuple(auto.terms_allowed.value),
            min_line=card.min_line.value,
            card_line_step=card.counteroffer_step.value,
            auto_step=auto.counteroffer_step.value,
            band_floor={b: policy[f"scoreBands.{b}"].value for b in BANDS},
            score_margin=policy["margins.scorePoints"].value,
            dti_margin=policy["margins.dtiPct"].value,
            ltv_margin=policy["margins.ltvPct"].value,
            pct_q=policy["rounding.percent"].value,
            money_q=policy["rounding.money"].value,
            min_tradelines=policy["thinFile.minTradelines"].value,
            min_history=policy["thinFile.minHistoryMonths"].value,
        )

    def band_of(self, score: int) -> str:
        for band in sorted(BANDS, key=lambda b: self.band_floor[b], reverse=True):
            if score >= self.band_floor[band]:
                return band
        raise ValueError(f"score {score} is below every band's floor")

    def band_span(self, band: str) -> tuple[int, int]:
        floor = self.band_floor[band]
        above = [f for f in self.band_floor.values() if f > floor]
        return floor, (min(above) - 1 if above else SCORE_RANGE[1])


@dataclass(slots=True)
class _Person:
    age: int
    income: Decimal


class _Generator:
    """One seeded run: all draws go through ``self.rng`` in a fixed order."""

    def __init__(self, seed: int, policy: Policy) -> None:
        self.rng = random.Random(seed)
        self.policy = policy
        self.t = _Thresholds.of(policy)
        known = set(default_catalogue().by_bureau_code)
        unknown = sorted(set(_KEY_FACTOR_TEXT) - known)
        if unknown:
            raise ValueError(f"key-factor codes {unknown} are not in the reason catalogue")

    # ------------------------------------------------------------------ draws

    def pick(self, options: Sequence[tuple[T, int]]) -> T:
        values = [v for v, _ in options]
        weights = [w for _, w in options]
        return self.rng.choices(values, weights=weights)[0]

    def between(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def normalish(self) -> float:
        """Roughly standard normal (Irwin-Hall of 4), pure IEEE arithmetic."""
        return (sum(self.rng.random() for _ in range(4)) - 2.0) * 1.7320508075688772

    def pct_between(self, low: Decimal, high: Decimal) -> Decimal:
        """A percentage with two decimals, uniform in [low, high]."""
        lo, hi = int(low * 100), int(high * 100)
        return Decimal(self.between(lo, hi)).scaleb(-2)

    def age(self) -> int:
        low, high = self.pick(_AGE_BRACKETS)
        return self.between(low, high)

    def income(self) -> Decimal:
        low, high = self.pick(_INCOME_BRACKETS)
        step = 500 if self.chance(0.7) else 100
        return Decimal(self.between(low // step, high // step) * step).quantize(_CENT)

    def income_k(self, low: int = 30, high: int = 150) -> tuple[Decimal, int]:
        """An annual income that is 1200 x k, so exact DTI targets land in cents."""
        k = self.between(low, high)
        return (Decimal(k) * _TWELVE_HUNDRED).quantize(_CENT), k

    def term(self) -> int:
        terms = self.t.terms
        weights = [_TERM_WEIGHTS[i] if i < len(_TERM_WEIGHTS) else 10 for i in range(len(terms))]
        return self.pick(list(zip(terms, weights, strict=True)))

    def score_in(self, band: str, product: str) -> int:
        """A score in the band, clear of the product minimum and its review margin."""
        low, high = self.t.band_span(band)
        low = max(low, self.t.min_score[product] + self.t.score_margin + 1)
        high = min(high, SCORE_RANGE[1] - 20) if band == BANDS[0] else high
        if low > high:
            raise ValueError(f"band {band} has no score clear of the {product} margin")
        return self.between(low, high)

    # ------------------------------------------------------------------ capacity

    def apr(self, product: str, band: str) -> Decimal:
        value: Decimal = self.policy.pricing(product, band).apr.value
        return value

    def auto_payment(self, band: str | None, amount: Decimal, term: int) -> Decimal:
        if band is None:
            return Decimal("0.00")
        return amortised_payment(amount, self.apr("auto", band), term, self.t.money_q)

    def card_line(self, band: str | None, requested: Decimal) -> Decimal | None:
        if band is None:
            return None
        pricing = self.policy.pricing("card", band)
        assert pricing.line is not None
        line: Decimal = pricing.line.value
        return min(line, requested)

    def card_payment(self, line: Decimal | None) -> Decimal:
        if line is None:
            return Decimal("0.00")
        pct = self.policy.product("card").payment_pct_of_line
        assert pct is not None
        return card_payment(line, pct.value, self.t.money_q)

    def dti(self, debt: Decimal, payment: Decimal, income: Decimal) -> Decimal:
        return dti_pct(debt, payment, income, self.t.pct_q)

    def ltv(self, amount: Decimal, value: Decimal) -> Decimal:
        return ltv_pct(amount, value, self.t.pct_q)

    # ------------------------------------------------------------------ documents

    def application(
        self,
        product: str,
        income: Decimal,
        debt: Decimal,
        *,
        amount: Decimal | None = None,
        term: int | None = None,
        value: Decimal | None = None,
        line: Decimal | None = None,
    ) -> dict[str, Any]:
        app: dict[str, Any] = {
            "product": product,
            "annualIncome": _money(income),
            "monthlyDebtPayments": _money(debt),
        }
        if product == "auto":
            assert amount is not None and term is not None and value is not None
            assert amount >= self.t.min_amount and term in self.t.terms
            app["requestedAmount"] = _money(amount)
            app["termMonths"] = term
            app["vehicleValue"] = _money(value)
        else:
            assert line is not None and line >= self.t.min_line
            app["requestedLine"] = _money(line)
        return app

    def monitoring(self, age: int) -> dict[str, Any] | None:
        if self.chance(0.12):
            return None
        data: dict[str, Any] = {
            "race": self.pick(_RACES),
            "ethnicity": self.pick(_ETHNICITIES),
            "sex": self.pick(_SEXES),
            "age": age,
        }
        marital = self.pick(_MARITAL)
        if marital is not None:
            data["maritalStatus"] = marital
        data["publicAssistanceIncome"] = self.chance(0.06)
        return data

    def credit_report(
        self,
        score: int | None,
        person: _Person,
        *,
        tradelines: int | None = None,
        history: int | None = None,
        disputes: Sequence[bool] | None = None,
        dispute_rate: float = 0.0,
        derogatories: int | None = None,
        key_factor_count: int | None = None,
    ) -> dict[str, Any]:
        """A bureau file whose parts hang together with the score (or its absence).

        ``disputes`` lists the resolved flag of each dispute to put on the file; with
        None, a file has disputes with probability ``dispute_rate``. The applicant's
        age is raised where needed so that the history fits the person.
        """
        rng = self.rng
        low, high = SCORE_RANGE
        quality = 0.5 if score is None else (score - low) / (high - low)
        if tradelines is None:
            tradelines = (
                self.between(0, self.t.min_tradelines - 1)
                if score is None
                else self.t.min_tradelines + int(rng.random() * (4 + 22 * quality))
            )
        if history is None:
            if score is None or tradelines == 0:
                history = 0 if tradelines == 0 else self.between(1, self.t.min_history - 1)
            else:
                room = max(self.t.min_history, (person.age - 18) * 12)
                history = self.t.min_history + int(
                    rng.random() * (room - self.t.min_history) * (0.3 + 0.7 * quality)
                )
        person.age = max(person.age, 18 + -(-history // 12))
        utilisation = min(100.0, max(0.0, 92.0 - 85.0 * quality + (rng.random() - 0.5) * 36.0))
        if tradelines == 0:
            utilisation = 0.0
        util = Decimal(round(utilisation * 10)).scaleb(-1)
        inquiries = int(rng.random() * (1.5 + 7.0 * (1.0 - quality)))
        if derogatories is None:
            if score is None:
                derogatories = 0
            elif quality < 0.5:
                derogatories = self.between(2, 5)
            elif quality < 0.63:
                derogatories = self.between(1, 3)
            elif quality < 0.73:
                derogatories = self.between(0, 1)
            else:
                derogatories = 1 if self.chance(0.06) else 0
        derogs: list[tuple[str, int]] = []
        for _ in range(min(derogatories, max(tradelines, 1))):
            kind = self.pick(
                (
                    ("late30", 30),
                    ("late60", 22),
                    ("late90", 14),
                    ("chargeoff", 10),
                    ("collection", 16),
                    ("publicRecord", 3),
                )
                if quality < 0.63
                else (("late30", 70), ("late60", 25), ("late90", 5))
            )
            derogs.append((kind, self.between(1, max(2, min(84, history or 84)))))
        derogs.sort(key=lambda d: d[1])
        if disputes is None:
            disputes = (
                [self.chance(0.75) for _ in range(1 if self.chance(0.8) else 2)]
                if tradelines and self.chance(dispute_rate)
                else []
            )
        ids = sorted(rng.sample(range(1, tradelines + 1), min(len(disputes), tradelines)))
        report: dict[str, Any] = {
            "bureau": dict(self.pick(_BUREAUS)),
            "score": score,
            "scoreModel": self.pick(_SCORE_MODELS),
            "scoreRange": list(SCORE_RANGE),
        }
        if score is not None:
            report["scoreDate"] = (AS_OF - dt.timedelta(days=self.between(1, 45))).isoformat()
        balance = int(person.income * Decimal(rng.random() * 0.5 + 0.05)) * int(util) // 100
        with_balance = min(tradelines, max(1, int(tradelines * (0.2 + 0.6 * rng.random()))))
        report.update(
            {
                "tradelines": tradelines,
                "historyMonths": history,
                "utilisationPct": f"{util:f}",
                "inquiries12m": inquiries,
                "derogatories": [{"kind": k, "monthsAgo": m} for k, m in derogs],
                "disputes": [
                    {"tradelineId": f"T{i}", "resolved": resolved}
                    for i, resolved in zip(ids, disputes, strict=False)
                ],
                "keyFactors": []
                if score is None
                else self.key_factors(
                    util, balance, with_balance, inquiries, history, derogs, key_factor_count
                ),
            }
        )
        return report

    def key_factors(
        self,
        util: Decimal,
        balance: int,
        with_balance: int,
        inquiries: int,
        history: int,
        derogs: Sequence[tuple[str, int]],
        count: int | None,
    ) -> list[dict[str, str]]:
        """Up to four factors, most damaging first, each stating the file's own value."""
        delinquent = [d for d in derogs if d[0] in _DELINQUENT]
        serious = [d for d in derogs if d[0] in _SERIOUS]
        years = history // 12
        tenure = _plural(years, "year") if years else _plural(history, "month")
        candidates: list[tuple[float, str, str]] = []
        if serious:
            amount = self.between(3, 120) * 50
            candidates.append((90.0, "38", f"${amount:,}"))
        if delinquent:
            candidates.append(
                (60.0 + 5 * len(delinquent), "18", _plural(len(delinquent), "account"))
            )
            candidates.append((55.0, "02", _plural(len(delinquent), "account")))
            recent = delinquent[0][1]
            if recent < 24:
                candidates.append((70.0 - recent, "13", _plural(recent, "month")))
        if util >= 30:
            candidates.append((float(util), "10", f"{int(round_half_up(util, Decimal(1)))}%"))
        if inquiries >= 2:
            candidates.append((8.0 * inquiries, "08", _plural(inquiries, "inquiry", "inquiries")))
        if history < 84:
            candidates.append(((84 - history) / 2.0, "14", tenure))
        if balance > 5_000:
            candidates.append((balance / 1_000.0, "01", f"${balance:,}"))
        if with_balance >= 4:
            candidates.append((4.0 * with_balance, "05", _plural(with_balance, "account")))
        # weaker, still file-grounded factors for a strong file (a bureau always gives
        # some): never "too high" of a zero or "too short" of a long history
        fillers: list[tuple[float, str, str]] = []
        if util >= 10:
            fillers.append((0.0, "10", f"{int(round_half_up(util, Decimal(1)))}%"))
        if balance > 1_000:
            fillers.append((0.0, "01", f"${balance:,}"))
        if with_balance >= 2:
            fillers.append((0.0, "05", _plural(with_balance, "account")))
        if inquiries >= 1:
            fillers.append((0.0, "08", _plural(inquiries, "inquiry", "inquiries")))
        if history < 240:
            fillers.append((0.0, "14", tenure))
        candidates.sort(key=lambda c: (-c[0], c[1]))
        self.rng.shuffle(fillers)
        wanted = count if count is not None else self.between(2, 4)
        chosen: list[tuple[float, str, str]] = []
        for c in candidates + fillers:
            if len(chosen) == wanted:
                break
            if all(c[1] != x[1] for x in chosen):
                chosen.append(c)
        if not chosen:
            chosen.append((0.0, "05", _plural(with_balance, "account")))
        return [{"code": c, "text": _KEY_FACTOR_TEXT[c], "value": v} for _, c, v in chosen]

    def draft(
        self,
        app: dict[str, Any],
        report: dict[str, Any],
        person: _Person,
    ) -> Draft:
        draft: Draft = {
            "asOf": AS_OF.isoformat(),
            "application": app,
            "creditReport": report,
        }
        monitoring = self.monitoring(person.age)
        if monitoring is not None:
            draft["monitoring"] = monitoring
        return draft

    # ------------------------------------------------------------------ ordinary cases

    def ordinary(self) -> Draft:
        """One applicant from the synthetic population."""
        product = "auto" if self.chance(0.55) else "card"
        person = _Person(self.age(), self.income())
        bracket = next(i for i, (b, _) in enumerate(_INCOME_BRACKETS) if person.income <= b[1])
        kind = self.pick((("scored", 940), ("unscored", 30), ("thin", 30)))
        score: int | None = None
        tradelines: int | None = None
        history: int | None = None
        if kind != "unscored":
            raw = 700 + 5 * bracket + self.normalish() * 82
            score = min(SCORE_RANGE[1], max(SCORE_RANGE[0], round(raw)))
        if kind == "thin":
            assert score is not None
            score = min(score, 700)
            if self.chance(0.5):
                tradelines = self.between(1, self.t.min_tradelines - 1)
                history = self.between(4, 40)
            else:
                tradelines = self.between(1, 4)
                history = self.between(3, self.t.min_history - 1)
        report = self.credit_report(
            score, person, tradelines=tradelines, history=history, dispute_rate=0.07
        )
        income = person.income
        monthly = income / 12
        low, high = SCORE_RANGE
        stress = 0.0 if score is None else (1.0 - (score - low) / (high - low)) * 6.0
        existing = self.pick(
            (((2.0, 15.0), 25), ((15.0, 30.0), 45), ((30.0, 40.0), 20), ((40.0, 52.0), 10))
        )
        ratio = existing[0] + self.rng.random() * (existing[1] - existing[0]) + stress
        debt = (monthly * Decimal(round(ratio * 100)) / 10_000).quantize(_CENT)
        if self.chance(0.5):
            debt = debt.quantize(Decimal(1)).quantize(_CENT)
        if product == "auto":
            share = 0.15 + self.rng.random() * 0.4
            value = Decimal(max(6_000, min(85_000, int(float(income) * share))) // 50 * 50)
            ltv_band = self.pick(
                (((60, 100), 52), ((100, 112), 30), ((112, 122), 14), ((122, 140), 4))
            )
            ratio_ltv = Decimal(self.between(ltv_band[0] * 10, ltv_band[1] * 10)) / 1000
            amount = (value * ratio_ltv / 50).quantize(Decimal(1)) * 50
            if self.chance(0.15):
                amount += Decimal(self.between(1, 4999)).scaleb(-2)
            amount = max(amount, self.t.min_amount).quantize(_CENT)
            app = self.application(
                "auto", income, debt, amount=amount, term=self.term(), value=value.quantize(_CENT)
            )
        else:
            line = Decimal(self.pick(_CARD_LINES))
            app = self.application("card", income, debt, line=max(line, self.t.min_line))
        return self.draft(app, report, person)

    # ------------------------------------------------------------------ constructed cases

    def comfortable(
        self,
        product: str,
        band: str | None,
        *,
        ltv: Decimal | None = None,
        dti: Decimal | None = None,
    ) -> tuple[dict[str, Any], _Person]:
        """An application clear of every cap and margin, unless ``ltv`` (an exact LTV
        target, two decimals) or ``dti`` (an exact DTI target before rounding, two
        decimals) is given. ``band`` None is an unscored file: its DTI counts the
        existing debt only, as the policy assesses it."""
        t = self.t
        cap = t.max_dti[product]
        clear_ltv = t.max_ltv - t.ltv_margin
        for _ in range(200):
            income, k = self.income_k()
            target = dti if dti is not None else self.pct_between(cap / 4, cap - t.dti_margin * 8)
            if product == "auto":
                term = self.term()
                value = Decimal(self.between(60, 400) * 100)
                if ltv is None:
                    share = self.pct_between(clear_ltv - 50, clear_ltv - 18)
                    amount = (value * share / _HUNDRED / t.auto_step).quantize(1) * t.auto_step
                else:
                    amount = ltv * value / _HUNDRED
                if amount < t.min_amount:
                    continue
                payment = self.auto_payment(band, amount, term)
                debt = target * k - payment
                if debt < 0 or (dti is None and debt < Decimal(k) * 3):
                    continue
                assert ltv is None or self.ltv(amount, value) == round_half_up(ltv, t.pct_q)
                app = self.application(
                    "auto", income, debt, amount=amount, term=term, value=value.quantize(_CENT)
                )
            else:
                line = max(Decimal(self.pick(_CARD_LINES)), t.min_line)
                payment = self.card_payment(self.card_line(band, line))
                debt = target * k - payment
                if debt < 0:
                    continue
                app = self.application("card", income, debt, line=line)
            assert self.dti(debt, payment, income) == round_half_up(target, t.pct_q)
            return app, _Person(self.age(), income)
        raise RuntimeError(f"no {product} application fits dti={dti} ltv={ltv}")

    def scored(
        self,
        product: str,
        score: int,
        *,
        ltv: Decimal | None = None,
        dti: Decimal | None = None,
        **report: Any,
    ) -> Draft:
        app, person = self.comfortable(product, self.t.band_of(score), ltv=ltv, dti=dti)
        return self.draft(app, self.credit_report(score, person, **report), person)

    def clean_score(self, product: str) -> int:
        return self.score_in(self.pick(((BANDS[0], 5), (BANDS[1], 4), (BANDS[2], 2))), product)

    def score_edges(self) -> list[Draft]:
        out: list[Draft] = []
        floors = sorted(self.t.band_floor[b] for b in BANDS[:-1])
        for product in ("auto", "card"):
            m = self.t.min_score[product]
            scores = [m - 1, m, m + self.t.score_margin, m + self.t.score_margin + 1]
            for floor in floors:
                scores += [floor - 1, floor]
            for score in scores:
                out += [self.scored(product, score, disputes=[]) for _ in range(2)]
            out += [self.scored(product, s, disputes=[]) for s in SCORE_RANGE]
        return out

    def dti_edges(self) -> list[Draft]:
        out: list[Draft] = []
        q = self.t.pct_q
        for product in ("auto", "card"):
            cap = self.t.max_dti[product]
            low = cap - self.t.dti_margin
            for target in (cap, low, low - q, cap + q):
                for band in BANDS:
                    out.append(
                        self.scored(product, self.score_in(band, product), dti=target, disputes=[])
                    )
            # either side of each rounding half: cap + 0.04 rounds to the cap, cap + 0.05
            # over it; low - 0.05 rounds up into the margin, low - 0.06 stays under it
            for target in (cap + q * 4 / 10, cap + q / 2, low - q / 2, low - q * 6 / 10):
                out.append(self.scored(product, self.clean_score(product), dti=target, disputes=[]))
        return out

    def ltv_edges(self) -> list[Draft]:
        out: list[Draft] = []
        q = self.t.pct_q
        cap = self.t.max_ltv
        low = cap - self.t.ltv_margin
        for target in (cap, low, low - q, cap + q):
            for band in BANDS:
                out.append(
                    self.scored("auto", self.score_in(band, "auto"), ltv=target, disputes=[])
                )
        for target in (cap + q * 4 / 10, cap + q / 2, low - q / 2, low - q * 6 / 10):
            out.append(self.scored("auto", self.clean_score("auto"), ltv=target, disputes=[]))
        # LTV-only failures a smaller amount cures (counteroffer)
        for _ in range(3):
            target = cap + self.pct_between(Decimal(1), Decimal(18))
            out.append(self.scored("auto", self.clean_score("auto"), ltv=target, disputes=[]))
        # LTV-only failures nothing cures: even the product minimum is over the cap
        for _ in range(2):
            out.append(self.ltv_only_decline())
        return out

    def ltv_only_decline(self) -> Draft:
        ceiling = int(self.t.min_amount * _HUNDRED / self.t.max_ltv)  # value below this fails
        value = Decimal(self.between(ceiling // 100 - 15, ceiling // 100 - 2) * 100)
        amount = self.t.min_amount + self.t.auto_step * self.between(0, 20)
        score = self.clean_score("auto")
        band = self.t.band_of(score)
        income, k = self.income_k(30, 90)
        term = self.term()
        payment = self.auto_payment(band, amount, term)
        debt = self.pct_between(Decimal(10), self.t.max_dti["auto"] - 10) * k - payment
        debt = max(debt, Decimal(0))
        person = _Person(self.age(), income)
        app = self.application(
            "auto", income, debt, amount=amount, term=term, value=value.quantize(_CENT)
        )
        return self.draft(app, self.credit_report(score, person, disputes=[]), person)

    def longer_term_cures(self) -> list[Draft]:
        """Auto requests that fail DTI at the requested term but pass, in full, at a
        longer allowed term (and at no term in between)."""
        out: list[Draft] = []
        terms = self.t.terms
        pairs = [(a, b) for i, a in enumerate(terms) for b in terms[i + 1 :]]
        cap = self.t.max_dti["auto"]
        for n, (asked, cure) in enumerate(pairs * 2):
            band = BANDS[n % len(BANDS)]
            score = self.score_in(band, "auto")
            for _ in range(500):
                income, k = self.income_k(35, 120)
                value = Decimal(self.between(120, 500) * 100)
                share = Decimal(self.between(80, 100)) / _HUNDRED
                amount = (value * share / self.t.auto_step).quantize(1) * self.t.auto_step
                if amount < self.t.min_amount or amount * 100 < income * 20:
                    continue
                at = {t: self.auto_payment(band, amount, t) for t in terms}
                under = self.pct_between(self.t.pct_q, Decimal(2))
                debt = ((cap - under) * k - at[cure]).quantize(_CENT)
                if debt < 0:
                    continue
                fails = [self.dti(debt, at[t], income) > cap for t in terms if asked <= t < cure]
                if all(fails) and self.dti(debt, at[cure], income) <= cap:
                    break
            else:
                raise RuntimeError(f"no longer-term cure for {asked} -> {cure}")
            person = _Person(self.age(), income)
            app = self.application(
                "auto", income, debt, amount=amount, term=asked, value=value.quantize(_CENT)
            )
            out.append(self.draft(app, self.credit_report(score, person, disputes=[]), person))
        return out

    def dti_counteroffers(self) -> list[Draft]:
        """Auto at the longest term over the DTI cap (a smaller amount cures), one with
        LTV over the cap too, and card requests a lower line cures."""
        out: list[Draft] = []
        longest = self.t.terms[-1]
        cap = self.t.max_dti["auto"]
        for n in range(5):
            band = BANDS[n % len(BANDS)]
            score = self.score_in(band, "auto")
            over_ltv = n >= 3
            for _ in range(500):
                income, k = self.income_k(40, 120)
                value = Decimal(self.between(120, 500) * 100)
                pct = self.between(1210, 1350) if over_ltv else self.between(750, 1000)
                amount = (value * pct / 1000).quantize(Decimal(1))
                if amount < self.t.min_amount * 2:
                    continue
                payment = self.auto_payment(band, amount, longest)
                smallest = self.auto_payment(band, self.t.min_amount, longest)
                debt = (
                    (cap + self.pct_between(Decimal("0.3"), Decimal(3))) * k - payment
                ).quantize(_CENT)
                if debt >= 0 and self.dti(debt, smallest, income) <= cap - 2:
                    break
            else:
                raise RuntimeError("no DTI counteroffer fits")
            person = _Person(self.age(), income)
            app = self.application(
                "auto", income, debt, amount=amount, term=longest, value=value.quantize(_CENT)
            )
            out.append(self.draft(app, self.credit_report(score, person, disputes=[]), person))
        cap = self.t.max_dti["card"]
        for band in BANDS:
            band_line = self.card_line(band, Decimal(10**9))
            assert band_line is not None
            for requested in (band_line * 2, band_line * 3 / 5):
                step = self.t.card_line_step
                requested = max(self.t.min_line * 2, (requested / step).quantize(1) * step)
                score = self.score_in(band, "card")
                assessed = self.card_line(band, requested)
                full = self.card_payment(assessed)
                least = self.card_payment(self.t.min_line)
                for _ in range(500):
                    income, k = self.income_k(25, 90)
                    gap = (full - least) / k  # DTI points between the two lines
                    over = self.pct_between(self.t.pct_q, max(self.t.pct_q, gap * 7 / 10))
                    debt = ((cap + over) * k - full).quantize(_CENT)
                    if debt >= 0 and self.dti(debt, least, income) <= cap:
                        break
                else:
                    raise RuntimeError("no card counteroffer fits")
                person = _Person(self.age(), income)
                app = self.application("card", income, debt, line=requested)
                out.append(self.draft(app, self.credit_report(score, person, disputes=[]), person))
        return out

    def dti_declines(self) -> list[Draft]:
        """Existing debt alone is over the cap: no amount, term or line can cure it."""
        out: list[Draft] = []
        for product in ("auto", "card"):
            for band in BANDS:
                over = self.pct_between(self.t.pct_q * 5, Decimal(15))
                out.append(
                    self.scored(
                        product,
                        self.score_in(band, product),
                        dti=self.t.max_dti[product] + over,
                        disputes=[],
                    )
                )
        return out

    def many_reasons(self) -> list[Draft]:
        """Score below the minimum and over the caps, with four key factors: more
        principal reasons than a notice may state."""
        out: list[Draft] = []
        for product in ("auto", "card"):
            for _ in range(2):
                score = self.between(SCORE_RANGE[0] + 180, self.t.min_score[product] - 15)
                ltv = self.t.max_ltv + self.pct_between(Decimal(2), Decimal(15))
                over = self.pct_between(Decimal(1), Decimal(8))
                out.append(
                    self.scored(
                        product,
                        score,
                        dti=self.t.max_dti[product] + over,
                        ltv=ltv if product == "auto" else None,
                        disputes=[],
                        key_factor_count=4,
                        derogatories=3,
                    )
                )
        return out

    def thin_files(self) -> list[Draft]:
        out: list[Draft] = []
        t = self.t
        for product in ("auto", "card"):
            for _ in range(3):  # no score, thin
                app, person = self.comfortable(product, None)
                out.append(self.draft(app, self.credit_report(None, person), person))
            # no score on an otherwise established file (the bureau returned none)
            app, person = self.comfortable(product, None)
            report = self.credit_report(
                None, person, tradelines=t.min_tradelines + 2, history=t.min_history * 3
            )
            out.append(self.draft(app, report, person))
            # no score and a DTI over the cap: still referred, never guessed
            app, person = self.comfortable(
                product, None, dti=t.max_dti[product] + self.pct_between(Decimal(2), Decimal(9))
            )
            out.append(self.draft(app, self.credit_report(None, person), person))
            # each thin-file count just under and at its minimum, on a scored file
            hist = t.min_history + self.between(12, 60)
            for tl, hm in (
                (t.min_tradelines - 1, hist),
                (t.min_tradelines, hist),
                (t.min_tradelines + 3, t.min_history - 1),
                (t.min_tradelines + 3, t.min_history),
            ):
                out.append(
                    self.scored(
                        product, self.clean_score(product), tradelines=tl, history=hm, disputes=[]
                    )
                )
        return out

    def disputed(self) -> list[Draft]:
        out: list[Draft] = []
        for product in ("auto", "card"):
            for flags in ([False], [False], [False, False], [True, False], [True], [True, True]):
                out.append(self.scored(product, self.clean_score(product), disputes=flags))
            # an unresolved dispute on a file that would otherwise be declined
            score = self.between(SCORE_RANGE[0] + 200, self.t.min_score[product] - 5)
            out.append(self.scored(product, score, disputes=[False]))
        return out

    def constructed(self) -> list[Draft]:
        builders: list[Callable[[], list[Draft]]] = [
            self.score_edges,
            self.dti_edges,
            self.ltv_edges,
            self.longer_term_cures,
            self.dti_counteroffers,
            self.dti_declines,
            self.many_reasons,
            self.thin_files,
            self.disputed,
        ]
        return [draft for build in builders for draft in build()]


def generate_cases(
    seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT, *, policy: Policy | None = None
) -> list[dict[str, Any]]:
    """``count`` cases in the case format, the same for the same seed and policy.

    The constructed edge cases come first in the draw and are all kept when ``count``
    is at least their number (154 under the reference policy); the rest are
    ordinary cases. The whole set is shuffled and numbered ``C-000001``...
    """
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    gen = _Generator(seed, policy or default_policy())
    drafts = gen.constructed()
    drafts += [gen.ordinary() for _ in range(max(0, count - len(drafts)))]
    gen.rng.shuffle(drafts)
    return [{"caseId": f"C-{n:06d}", **draft} for n, draft in enumerate(drafts[:count], start=1)]


def write_cases(cases: Sequence[dict[str, Any]], out: Path) -> None:
    """JSON Lines in canonical form, one case a line, with a trailing newline."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as handle:
        for case in cases:
            handle.write(dumps(case) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m credit.examples", description="Write seeded example credit cases."
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--out", type=Path, default=None, help="JSON Lines file (default stdout)")
    args = parser.parse_args(argv)
    cases = generate_cases(args.seed, args.count)
    if args.out is None:
        for case in cases:
            sys.stdout.write(dumps(case) + "\n")
    else:
        write_cases(cases, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
