"""The verifier's report: one pass/fail per check V1-V8, each with a readable detail,
and the SHA-256 of the exact notice it checked (what binds it to that notice)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from credit.errors import NoticeInputError

__all__ = ["CHECK_IDS", "CHECK_NAMES", "REPORT_FORMAT", "CheckResult", "VerificationReport"]

REPORT_FORMAT = "credit.verification/1"
CHECK_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "V1": "reasons_match_derivation",
        "V2": "reason_count",
        "V3": "no_prohibited_basis",
        "V4": "specific_reasons",
        "V5": "decision_consistent",
        "V6": "numbers_grounded",
        "V7": "legal_frame_intact",
        "V8": "approved_wording",
    }
)
CHECK_IDS = tuple(CHECK_NAMES)


class CheckResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    passed: bool
    detail: str


class VerificationReport(BaseModel):
    """Immutable. ``checks`` is keyed V1..V8 in order; ``passed`` is true only when
    every check passed; ``notice_sha256`` is the hash of the exact notice checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    notice_sha256: str
    expectation_sha256: str
    results: tuple[CheckResult, ...]
    passed: bool

    @field_validator("results", mode="after")
    @classmethod
    def _all_checks_in_order(cls, value: tuple[CheckResult, ...]) -> tuple[CheckResult, ...]:
        if tuple(c.id for c in value) != CHECK_IDS:
            raise ValueError(f"checks must be exactly {', '.join(CHECK_IDS)} in order")
        for result in value:
            if result.name != CHECK_NAMES[result.id]:
                raise ValueError(f"check {result.id} must be {CHECK_NAMES[result.id]}")
        return value

    @model_validator(mode="after")
    def _passed_is_all(self) -> VerificationReport:
        if self.passed != all(c.passed for c in self.results):
            raise ValueError("passed must be true exactly when every check passed")
        return self

    @property
    def checks(self) -> Mapping[str, CheckResult]:
        """The checks keyed V1..V8, in order (read-only)."""
        return MappingProxyType({c.id: c for c in self.results})

    @classmethod
    def of(
        cls, *, case_id: str, notice_sha256: str, expectation_sha256: str, checks: list[CheckResult]
    ) -> VerificationReport:
        return cls(
            case_id=case_id,
            notice_sha256=notice_sha256,
            expectation_sha256=expectation_sha256,
            results=tuple(checks),
            passed=all(c.passed for c in checks),
        )

    @classmethod
    def of_checked(
        cls,
        *,
        case_id: str,
        notice_sha256: str,
        expectation_sha256: str,
        results: tuple[CheckResult, ...],
        passed: bool,
    ) -> VerificationReport:
        """What :meth:`of` builds, from results the verifier built in order: a
        validated CheckResult for each check V1..V8, with its name, and ``passed``
        whether every one passed (so the validators hold by construction, and are not
        run again). Built as ``model_construct`` builds it with every field given (a
        test compares the three)."""
        report = cls.__new__(cls)
        _set(
            report,
            "__dict__",
            {
                "case_id": case_id,
                "notice_sha256": notice_sha256,
                "expectation_sha256": expectation_sha256,
                "results": results,
                "passed": passed,
            },
        )
        _set(report, "__pydantic_fields_set__", set(_FIELDS))
        _set(report, "__pydantic_extra__", None)
        _set(report, "__pydantic_private__", None)
        return report

    @property
    def failed(self) -> tuple[str, ...]:
        """The ids of the failed checks, in order."""
        return tuple(k for k, c in self.checks.items() if not c.passed)

    def to_wire(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "caseId": self.case_id,
            "passed": self.passed,
            "noticeSha256": self.notice_sha256,
            "expectationSha256": self.expectation_sha256,
            "checks": {
                k: {"name": c.name, "passed": c.passed, "detail": c.detail}
                for k, c in self.checks.items()
            },
        }

    @classmethod
    def from_wire(cls, data: Any) -> VerificationReport:
        """Read a report back (from an outbox directory); bad input names the field."""
        if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
            raise NoticeInputError(f"not a {REPORT_FORMAT} document", field="format")
        checks = data.get("checks")
        if not isinstance(checks, dict):
            raise NoticeInputError("expected an object", field="checks")
        try:
            return cls(
                case_id=data.get("caseId"),
                notice_sha256=data.get("noticeSha256"),
                expectation_sha256=data.get("expectationSha256"),
                results=tuple(
                    CheckResult(id=k, **v) if isinstance(v, dict) else v for k, v in checks.items()
                ),
                passed=data.get("passed"),
            )
        except (ValidationError, TypeError) as err:
            raise NoticeInputError(f"not a valid report: {err}", field="checks") from None


_set = object.__setattr__
_FIELDS = tuple(VerificationReport.model_fields)
