"""The result of an eval run: one row per point checked, and the report of all rows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["EvalReport", "EvalResult"]


@dataclass(frozen=True, slots=True)
class EvalResult:
    """One eval row: which suite, which point, whether it passed, and why."""

    suite: str
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True, slots=True)
class EvalReport:
    """Every row of a run. It has passed when it has rows and every row passed: a run
    that checked nothing has shown nothing."""

    results: tuple[EvalResult, ...]

    @classmethod
    def of(cls, results: Iterable[EvalResult]) -> EvalReport:
        return cls(tuple(results))

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def failed(self) -> tuple[EvalResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    def suite(self, name: str) -> tuple[EvalResult, ...]:
        return tuple(r for r in self.results if r.suite == name)

    @property
    def suites(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.suite for r in self.results))
