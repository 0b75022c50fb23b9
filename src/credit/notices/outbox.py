"""Sending notices: an outbox that takes only a verified notice, bound to its report.

:meth:`Outbox.send` refuses a notice whose verification report has any failed check
(:class:`~credit.errors.UnverifiedNoticeError`) and a notice whose SHA-256, computed
from the notice as it is now, differs from the ``notice_sha256`` the report was made
for (:class:`~credit.errors.StaleNoticeError`): a notice re-rendered after it was
verified, or tampered with by one byte, cannot be sent. The check is in the base class,
so no implementation can skip it. Each sent notice is stored with its report.

Two implementations: :class:`InMemoryOutbox` (tests, the demo) and
:class:`DirectoryOutbox` (``<caseId>.notice.json`` and ``<caseId>.report.json`` in a
folder, written atomically; a second, different notice for a case is refused).
"""

from __future__ import annotations

import os
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from credit.canonical import dumps, loads, sha256_hex
from credit.errors import NoticeError, StaleNoticeError, UnverifiedNoticeError
from credit.guardrails.report import VerificationReport
from credit.notice_format import Notice, parse_notice

__all__ = ["DirectoryOutbox", "InMemoryOutbox", "Outbox", "SentNotice", "check_sendable"]


@dataclass(frozen=True, slots=True)
class SentNotice:
    case_id: str
    notice_sha256: str
    notice_bytes: bytes
    report: VerificationReport


def check_sendable(notice: Notice, report: VerificationReport) -> str:
    """Raise unless the report passed every check for exactly this notice; return the
    notice's SHA-256."""
    if not report.passed:
        failed = ", ".join(report.failed)
        raise UnverifiedNoticeError(
            f"the notice failed verification ({failed}): not sent",
            case_id=notice.case_id,
            check=failed,
        )
    current = notice.sha256
    if current != report.notice_sha256 or report.case_id != notice.case_id:
        raise StaleNoticeError(
            f"the notice's sha256 {current[:12]} is not the verified notice's "
            f"{report.notice_sha256[:12]} (re-rendered or tampered with since it was "
            "verified): not sent",
            case_id=notice.case_id,
            verified_sha256=report.notice_sha256,
            current_sha256=current,
        )
    return current


class Outbox(ABC):
    """Where verified notices go. ``send`` is the only way in."""

    def send(self, notice: Notice, report: VerificationReport) -> SentNotice:
        """Send a notice with the report that verified it (see the module docstring)."""
        sha = check_sendable(notice, report)
        sent = SentNotice(notice.case_id, sha, notice.canonical_bytes(), report)
        self._store(sent)
        return sent

    @abstractmethod
    def _store(self, sent: SentNotice) -> None: ...

    @abstractmethod
    def sent(self) -> tuple[SentNotice, ...]:
        """Every notice sent, in the order sent."""


class InMemoryOutbox(Outbox):
    def __init__(self) -> None:
        self._sent: list[SentNotice] = []

    def _store(self, sent: SentNotice) -> None:
        self._sent.append(sent)

    def sent(self) -> tuple[SentNotice, ...]:
        return tuple(self._sent)


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".outbox-", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class DirectoryOutbox(Outbox):
    """``<caseId>.notice.json`` (the canonical bytes) and ``<caseId>.report.json``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _paths(self, case_id: str) -> tuple[Path, Path]:
        return self.root / f"{case_id}.notice.json", self.root / f"{case_id}.report.json"

    def _store(self, sent: SentNotice) -> None:
        notice_path, report_path = self._paths(sent.case_id)
        if notice_path.exists():
            if sha256_hex(notice_path.read_bytes().rstrip(b"\n")) == sent.notice_sha256:
                return  # the same notice again: nothing to do
            raise NoticeError(
                f"a different notice for this case is already in the outbox {self.root}",
                case_id=sent.case_id,
            )
        report = (dumps(sent.report.to_wire()) + "\n").encode("utf-8")
        _write_atomically(report_path, report)
        _write_atomically(notice_path, sent.notice_bytes + b"\n")

    def sent(self) -> tuple[SentNotice, ...]:
        out = []
        for notice_path in sorted(self.root.glob("*.notice.json")):
            data = notice_path.read_bytes().rstrip(b"\n")
            notice = parse_notice(loads(data))
            _, report_path = self._paths(notice.case_id)
            report = VerificationReport.from_wire(loads(report_path.read_bytes()))
            out.append(SentNotice(notice.case_id, sha256_hex(data), data, report))
        return tuple(out)
