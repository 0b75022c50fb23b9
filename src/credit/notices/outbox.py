"""Sending notices: an outbox that takes only a verified notice, bound to its report.

:meth:`Outbox.send` refuses a notice whose verification report has any failed check
(:class:`~credit.errors.UnverifiedNoticeError`) and a notice whose SHA-256, computed
from the notice as it is now, differs from the ``notice_sha256`` the report was made
for (:class:`~credit.errors.StaleNoticeError`): a notice re-rendered after it was
verified, or tampered with by one byte, cannot be sent. The check is in the base class,
so no implementation can skip it. Each sent notice is stored with its report.

Two implementations: :class:`InMemoryOutbox` (tests, the demo) and
:class:`DirectoryOutbox` (``<caseId>.notice.json`` and ``<caseId>.report.json`` in a
folder, each written atomically and flushed to disk before it takes its name; a
second, different notice for a case is refused).

What is sent is exactly the notice's canonical bytes: ``sha256sum`` of a sent file is
the ``noticeSha256`` the journal holds for it, and nothing is appended. The outbox is
bound to the journal: :meth:`Outbox.read` gives a sent notice only when its bytes
still hash to the journaled SHA-256 (:class:`~credit.errors.JournalIntegrityError`,
check ``notice-file``, when the file is missing or changed), and :func:`outbox_problems`
lists every sent notice whose file is missing or changed (``credit outbox verify``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from credit.canonical import dumps, loads, sha256_hex
from credit.errors import (
    JournalIntegrityError,
    NoticeError,
    StaleNoticeError,
    UnverifiedNoticeError,
)
from credit.guardrails.report import VerificationReport
from credit.journal.atomicfile import AtomicWrite, write_all
from credit.journal.base import Entry
from credit.kinds import NOTICE_SENT
from credit.notice_format import Notice, parse_notice

__all__ = [
    "DirectoryOutbox",
    "InMemoryOutbox",
    "NoticeFileProblem",
    "Outbox",
    "SentNotice",
    "check_sendable",
    "notice_file_problem",
    "outbox_problems",
]


@dataclass(frozen=True, slots=True)
class SentNotice:
    case_id: str
    notice_sha256: str
    notice_bytes: bytes
    report: VerificationReport


def check_sendable(notice: Notice, report: VerificationReport) -> str:
    """Raise unless the report passed every check for exactly this notice; return the
    notice's SHA-256."""
    return _sendable(notice, report)[0]


def _sendable(notice: Notice, report: VerificationReport) -> tuple[str, bytes]:
    """:func:`check_sendable`, with the notice's bytes it hashed (written once)."""
    if not report.passed:
        failed = ", ".join(report.failed)
        raise UnverifiedNoticeError(
            f"the notice failed verification ({failed}): not sent",
            case_id=notice.case_id,
            check=failed,
        )
    data = notice.canonical_bytes()
    current = sha256_hex(data)
    if current != report.notice_sha256 or report.case_id != notice.case_id:
        raise StaleNoticeError(
            f"the notice's sha256 {current[:12]} is not the verified notice's "
            f"{report.notice_sha256[:12]} (re-rendered or tampered with since it was "
            "verified): not sent",
            case_id=notice.case_id,
            verified_sha256=report.notice_sha256,
            current_sha256=current,
        )
    return current, data


class Outbox(ABC):
    """Where verified notices go. ``send`` is the only way in."""

    def send(self, notice: Notice, report: VerificationReport) -> SentNotice:
        """Send a notice with the report that verified it (see the module docstring)."""
        sent = self.send_all([(notice, report)])[0]
        if isinstance(sent, Exception):
            raise sent
        return sent

    def send_all(
        self, notices: Sequence[tuple[Notice, VerificationReport]]
    ) -> list[SentNotice | Exception]:
        """Send each notice with its report as :meth:`send` does, together (the
        directory outbox flushes their files to disk together); for each, what was sent
        or what stopped it (one refused never stops the others)."""
        out: list[SentNotice | Exception] = []
        sendable: list[SentNotice] = []
        at: list[int] = []
        for notice, report in notices:
            try:
                sha, data = _sendable(notice, report)
            except Exception as err:
                out.append(err)
                continue
            sent = SentNotice(notice.case_id, sha, data, report)
            at.append(len(out))
            out.append(sent)
            sendable.append(sent)
        for i, problem in zip(at, self._store_all(sendable), strict=True):
            if problem is not None:
                out[i] = problem
        return out

    def _store_all(self, sent: Sequence[SentNotice]) -> list[Exception | None]:
        """Keep each sent notice; what stopped each (None: kept)."""
        problems: list[Exception | None] = []
        for one in sent:
            try:
                self._store(one)
            except Exception as err:
                problems.append(err)
            else:
                problems.append(None)
        return problems

    @abstractmethod
    def _store(self, sent: SentNotice) -> None: ...

    @abstractmethod
    def sent(self) -> tuple[SentNotice, ...]:
        """Every notice sent, in the order sent."""

    @abstractmethod
    def notice_bytes(self, case_id: str) -> bytes | None:
        """The bytes of the notice sent for the case, as kept (None: none kept)."""

    def read(self, case_id: str, journaled_sha256: str) -> bytes:
        """The sent notice's bytes, once they hash to the SHA-256 the journal holds
        for it; JournalIntegrityError (check ``notice-file``) if missing or changed."""
        data = self.notice_bytes(case_id)
        problem = notice_file_problem(data, journaled_sha256)
        if problem is not None:
            raise JournalIntegrityError(f"case {case_id}: {problem}", check="notice-file")
        assert data is not None
        return data


def notice_file_problem(data: bytes | None, journaled_sha256: str) -> str | None:
    """Why a kept notice is not the one the journal says was sent (None: it is)."""
    if data is None:
        return "the sent notice's file is missing"
    found = sha256_hex(data)
    if found != journaled_sha256:
        return (
            f"the sent notice's bytes hash to {found[:16]}..., not to the journaled "
            f"noticeSha256 {journaled_sha256[:16]}... (the file was changed)"
        )
    return None


@dataclass(frozen=True, slots=True)
class NoticeFileProblem:
    """A sent notice whose kept file is missing or changed."""

    case_id: str
    seq: int
    detail: str


class InMemoryOutbox(Outbox):
    def __init__(self) -> None:
        self._sent: list[SentNotice] = []

    def _store(self, sent: SentNotice) -> None:
        self._sent.append(sent)

    def sent(self) -> tuple[SentNotice, ...]:
        return tuple(self._sent)

    def notice_bytes(self, case_id: str) -> bytes | None:
        for sent in reversed(self._sent):
            if sent.case_id == case_id:
                return sent.notice_bytes
        return None


class DirectoryOutbox(Outbox):
    """``<caseId>.notice.json`` (the canonical bytes) and ``<caseId>.report.json``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _paths(self, case_id: str) -> tuple[Path, Path]:
        return self.root / f"{case_id}.notice.json", self.root / f"{case_id}.report.json"

    def _store(self, sent: SentNotice) -> None:
        problem = self._store_all([sent])[0]
        if problem is not None:
            raise problem

    def _store_all(self, sent: Sequence[SentNotice]) -> list[Exception | None]:
        """Both files of each notice are on disk when this returns (each flushed to
        disk before it takes its name, the report's before the notice's, then the
        folder), so a notice the journal then records as sent is never lost with the
        machine's power: the journal's commit comes after. A notice already there is
        not written again; another notice for its case is a NoticeError."""
        problems: list[Exception | None] = [None] * len(sent)
        files: list[list[AtomicWrite]] = []
        at: list[int] = []
        for i, one in enumerate(sent):
            try:
                if self._kept(one):
                    continue  # the same notice again: nothing to do
                report = (dumps(one.report.to_wire()) + "\n").encode("utf-8")
            except Exception as err:
                problems[i] = err
                continue
            notice_path, report_path = self._paths(one.case_id)
            files.append(
                [  # the notice: exactly the bytes hashed, never over another notice
                    AtomicWrite(report_path, report, 0o644, replace=True),
                    AtomicWrite(notice_path, one.notice_bytes, 0o644),
                ]
            )
            at.append(i)
        for i, problem in zip(at, write_all(files), strict=True):
            if isinstance(problem, FileExistsError):  # another sender wrote it meanwhile
                try:
                    problem = None if self._kept(sent[i]) else problem
                except Exception as err:
                    problem = err
            problems[i] = problem
        return problems

    def _kept(self, sent: SentNotice) -> bool:
        """Whether the outbox already holds this notice (NoticeError: another one)."""
        kept = self.notice_bytes(sent.case_id)
        if kept is None:
            return False
        if sha256_hex(kept) == sent.notice_sha256:
            return True
        raise NoticeError(
            f"a different notice for this case is already in the outbox {self.root} "
            "(or the one sent was changed since)",
            case_id=sent.case_id,
        )

    def notice_bytes(self, case_id: str) -> bytes | None:
        path, _ = self._paths(case_id)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    def sent(self) -> tuple[SentNotice, ...]:
        out = []
        for notice_path in sorted(self.root.glob("*.notice.json")):
            data = notice_path.read_bytes()
            notice = parse_notice(loads(data))
            _, report_path = self._paths(notice.case_id)
            report = VerificationReport.from_wire(loads(report_path.read_bytes()))
            out.append(SentNotice(notice.case_id, sha256_hex(data), data, report))
        return tuple(out)


def outbox_problems(entries: Iterable[Entry], outbox: Outbox) -> list[NoticeFileProblem]:
    """Every ``notice.sent`` entry whose notice's kept file is missing or does not
    hash to the entry's ``noticeSha256``."""
    problems = []
    for entry in entries:
        if entry.kind != NOTICE_SENT or entry.case_id is None:
            continue
        journaled = entry.payload.get("noticeSha256")
        problem = (
            notice_file_problem(outbox.notice_bytes(entry.case_id), journaled)
            if isinstance(journaled, str)
            else "the notice.sent entry holds no noticeSha256"
        )
        if problem is not None:
            problems.append(NoticeFileProblem(entry.case_id, entry.seq, problem))
    return problems
