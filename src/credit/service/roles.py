"""Who may call the service: a principal (a named key holder) and its one role."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Principal", "Role"]


class Role(StrEnum):
    """The four roles. Every API key carries exactly one.

    ``intake`` takes cases in; ``underwriter`` decides them and sends notices (and
    never receives monitoring data); ``reviewer`` (fair lending) reads the held queue,
    releases or rejects held cases; ``auditor`` only reads.
    """

    INTAKE = "intake"
    UNDERWRITER = "underwriter"
    REVIEWER = "reviewer"
    AUDITOR = "auditor"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: the key's (or session's) name and role."""

    name: str
    role: Role
