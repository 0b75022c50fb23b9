"""The application's value object and the conventions every model of a case shares.

Frozen pydantic v2 models with camelCase wire names (:class:`WireModel`); money and
percentages exact ``Decimal`` in the case format's plain spelling; a model-level check
that concerns one field raises :class:`FieldProblem`. :mod:`credit.models` builds the
rest of a case and the decision on these, and exports them too: it is the module to
import. This part stands alone so that what needs only the application (a notice's
expectation, and so the notice verifier and ``credit verify``) does not build the
models of a whole case (about 7 ms of a command's start).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "PRODUCTS",
    "Application",
    "Count",
    "DecisionMoney",
    "FieldProblem",
    "Money",
    "NonEmpty",
    "Percent",
    "Product",
    "StrictInt",
    "WireModel",
]

PRODUCTS = ("auto", "card")

Product = Literal["auto", "card"]

_PLAIN_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")


def _plain_decimal(value: Any) -> Any:
    """The case format's spelling of money and percentages (docs/case-format.md,
    "Numbers"): a JSON number (read as an exact Decimal or an int) or a string of ASCII
    digits with an optional point and decimals. No sign, exponent, underscore, space,
    thousands separator or non-ASCII digit; no float (a float has lost the digits)."""
    if isinstance(value, (bool, float)):
        raise ValueError(f"expected a decimal number or a decimal string, got {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"expected a finite decimal number, got {value}")
        return value
    if isinstance(value, str):
        if not _PLAIN_DECIMAL.fullmatch(value):
            shown = value if len(value) <= 40 else value[:37] + "..."
            raise ValueError(
                "a decimal string is ASCII digits with an optional point and decimals "
                f'("84000.00"): no sign, exponent, underscore, space or separator (got {shown!r})'
            )
        return Decimal(value)
    raise ValueError(f"expected a decimal number or a decimal string, got {type(value).__name__}")


_PLAIN = BeforeValidator(_plain_decimal)  # after the constraints: they stay in the schema
StrictInt = Annotated[int, Strict()]
Count = Annotated[int, Strict(), Field(ge=0)]
Money = Annotated[Decimal, Field(ge=0, decimal_places=2, allow_inf_nan=False), _PLAIN]
Percent = Annotated[Decimal, Field(ge=0, allow_inf_nan=False), _PLAIN]
DecisionMoney = Annotated[Decimal, Field(ge=0, decimal_places=2, allow_inf_nan=False)]
NonEmpty = Annotated[str, Field(min_length=1)]


class FieldProblem(ValueError):
    """A model-level check that concerns one named field (so the error can name it)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


class WireModel(BaseModel):
    """Frozen, camelCase on the wire, unknown fields rejected."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=False,
    )

    def to_wire(self) -> dict[str, Any]:
        """The wire form (camelCase, Decimals kept exact, absent optionals omitted)."""
        return self.model_dump(mode="python", by_alias=True, exclude_none=True)


class Application(WireModel):
    """The credit-relevant fields of an application. No prohibited-basis field."""

    product: Product
    annual_income: Annotated[Decimal, Field(gt=0, decimal_places=2, allow_inf_nan=False), _PLAIN]
    monthly_debt_payments: Money
    requested_amount: Money | None = None
    term_months: Annotated[int, Strict(), Field(gt=0)] | None = None
    vehicle_value: (
        Annotated[Decimal, Field(gt=0, decimal_places=2, allow_inf_nan=False), _PLAIN] | None
    ) = None
    requested_line: Money | None = None

    @model_validator(mode="after")
    def _fields_for_product(self) -> Application:
        needed = (
            ("requested_amount", "term_months", "vehicle_value")
            if self.product == "auto"
            else ("requested_line",)
        )
        barred = (
            ("requested_line",)
            if self.product == "auto"
            else ("requested_amount", "term_months", "vehicle_value")
        )
        article = "an" if self.product == "auto" else "a"
        for name in needed:
            if getattr(self, name) is None:
                raise FieldProblem(
                    to_camel(name),
                    f"{to_camel(name)} is required for {article} {self.product} application",
                )
        for name in barred:
            if getattr(self, name) is not None:
                raise FieldProblem(
                    to_camel(name),
                    f"{to_camel(name)} is not allowed on {article} {self.product} application",
                )
        return self
