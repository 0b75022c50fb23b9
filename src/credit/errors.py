"""One exception hierarchy for the whole product.

Every error carries the context an operator needs to act on it: the case, the
field, the rule or the file it concerns. Each subclasses the builtin it behaves
like, so callers that only know Python's builtins still catch it sensibly::

    CreditError (Exception)
    ├── InputError (ValueError)            bad input: case, line, field, value
    │   └── NotInPolicyError               a request the policy has no rule for
    ├── PolicyError (ValueError)           a policy/catalogue data file is wrong: file, key
    └── UndecidedCaseError (RuntimeError)  no rule decided a case (never a fallthrough)
"""

from __future__ import annotations

__all__ = [
    "CreditError",
    "InputError",
    "NotInPolicyError",
    "PolicyError",
    "UndecidedCaseError",
]


class CreditError(Exception):
    """Base of every error this package raises on purpose."""


class InputError(CreditError, ValueError):
    """A case (or another input document) is malformed.

    ``field`` is a dotted path in the case's wire names (``application.termMonths``);
    ``line`` is the 1-based line of a JSON Lines batch, when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        case_id: str | None = None,
        field: str | None = None,
        line: int | None = None,
        source: str | None = None,
    ) -> None:
        self.message = message
        self.case_id = case_id
        self.field = field
        self.line = line
        self.source = source
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.source is not None:
            where.append(self.source)
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.case_id is not None:
            where.append(f"case {self.case_id}")
        if self.field is not None:
            where.append(f"field {self.field}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message

    def located(self, *, line: int | None = None, source: str | None = None) -> InputError:
        """The same error with its position in a batch filled in."""
        err = type(self)(
            self.message,
            case_id=self.case_id,
            field=self.field,
            line=line if line is not None else self.line,
            source=source if source is not None else self.source,
        )
        return err


class NotInPolicyError(InputError):
    """The application asks for something the policy has no rule for (a term it does
    not offer, an amount under the product minimum)."""


class PolicyError(CreditError, ValueError):
    """A policy, catalogue or other governed data file is invalid."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None) -> None:
        self.message = message
        self.file = file
        self.key = key
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ", ".join(
            part for part in (self.file, f"key {self.key}" if self.key else None) if part
        )
        return f"{where}: {self.message}" if where else self.message


class UndecidedCaseError(CreditError, RuntimeError):
    """No rule of the policy decided the case. Nothing is decided by fallthrough."""

    def __init__(self, message: str, *, case_id: str | None = None, rule: str | None = None):
        self.message = message
        self.case_id = case_id
        self.rule = rule
        super().__init__(f"case {case_id}: {message}" if case_id else message)
