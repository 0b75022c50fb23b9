"""Binding to the exact notice: the outbox takes only a notice whose current hash is the
one its report verified, and whose report passed every check. A stale notice
(re-rendered after a change) and a tampered one (one byte edited) cannot be sent."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from credit.canonical import loads
from credit.errors import NoticeError, StaleNoticeError, UnverifiedNoticeError
from credit.guardrails import Verifier, expectation_for, verify
from credit.notice_format import parse_notice
from credit.notices import DirectoryOutbox, InMemoryOutbox, issue_notice, render_notice
from credit.notices.outbox import SentNotice
from notice_helpers import (
    COUNTER_AUTO,
    COUNTER_CARD,
    DECLINE_DTI,
    DECLINE_SCORE,
    changed,
    data_copy,
    decided,
    golden_case,
    notice_and_expectation,
    pins_from,
    replace_once,
)


def test_a_verified_notice_is_sent_with_its_report() -> None:
    notice, expectation = notice_and_expectation(DECLINE_SCORE)
    report = verify(notice, expectation)
    outbox = InMemoryOutbox()
    sent = outbox.send(notice, report)
    assert outbox.sent() == (sent,)
    assert sent.notice_sha256 == notice.sha256 == report.notice_sha256
    assert sent.notice_bytes == notice.canonical_bytes()
    assert sent.report is report


def test_a_stale_notice_re_rendered_after_a_change_cannot_be_sent() -> None:
    case, underwriting = decided(golden_case(DECLINE_DTI))
    verified = render_notice(case, underwriting)
    report = verify(verified, expectation_for(case, underwriting))
    assert report.passed
    rerendered = render_notice(case, underwriting, variants={"DTI_OVER_CAP": 1})
    assert verify(rerendered, expectation_for(case, underwriting)).passed  # valid, but not verified
    outbox = InMemoryOutbox()
    with pytest.raises(StaleNoticeError) as info:
        outbox.send(rerendered, report)
    assert info.value.case_id == DECLINE_DTI
    assert info.value.verified_sha256 == verified.sha256
    assert info.value.current_sha256 == rerendered.sha256
    assert "re-rendered or tampered with since it was verified" in str(info.value)
    assert outbox.sent() == ()


def test_a_tampered_notice_with_one_byte_edited_cannot_be_sent(tmp_path: Path) -> None:
    notice, expectation = notice_and_expectation(COUNTER_AUTO)
    report = verify(notice, expectation)
    path = tmp_path / "notice.json"
    path.write_bytes(notice.canonical_bytes())
    data = bytearray(path.read_bytes())
    at = data.index(b"$24,400.00") + 2
    data[at] = ord("9")  # $29,400.00
    path.write_bytes(bytes(data))
    tampered = parse_notice(loads(path.read_bytes()))
    outbox = InMemoryOutbox()
    with pytest.raises(StaleNoticeError):
        outbox.send(tampered, report)
    assert outbox.sent() == ()


def test_a_notice_whose_machine_fields_were_edited_after_verification_cannot_be_sent() -> None:
    notice, expectation = notice_and_expectation(DECLINE_SCORE)
    report = verify(notice, expectation)
    edited = notice.model_copy(update={"decision": "counteroffer"})
    with pytest.raises(StaleNoticeError):
        InMemoryOutbox().send(edited, report)


def test_a_notice_that_failed_any_check_cannot_be_sent() -> None:
    notice, expectation = notice_and_expectation(DECLINE_DTI)
    bad = replace_once(notice, "is above our maximum", "is not above our maximum")
    report = verify(bad, expectation)
    assert report.failed == ("V8",)
    outbox = InMemoryOutbox()
    with pytest.raises(UnverifiedNoticeError) as info:
        outbox.send(bad, report)  # bound to this very notice, but it failed
    assert info.value.check == "V8"
    assert str(info.value) == (
        "case G-DECLINE-DTI, V8: the notice failed verification (V8): not sent"
    )
    assert outbox.sent() == ()


def test_a_report_for_another_notice_cannot_send_this_one() -> None:
    notice, _ = notice_and_expectation(DECLINE_DTI)
    other, other_expectation = notice_and_expectation(COUNTER_CARD)
    with pytest.raises(StaleNoticeError):
        InMemoryOutbox().send(notice, verify(other, other_expectation))


def test_a_directory_outbox_stores_the_notice_bytes_and_report(tmp_path: Path) -> None:
    notice, expectation = notice_and_expectation(COUNTER_CARD)
    report = verify(notice, expectation)
    outbox = DirectoryOutbox(tmp_path / "outbox")
    outbox.send(notice, report)
    outbox.send(notice, report)  # the same notice again is a no-op
    kept = (tmp_path / "outbox" / "G-COUNTER-CARD.notice.json").read_bytes()
    assert kept == notice.canonical_bytes()  # exactly the bytes sent: nothing appended
    assert hashlib.sha256(kept).hexdigest() == notice.sha256  # sha256sum == noticeSha256
    (sent,) = outbox.sent()
    assert sent.case_id == COUNTER_CARD
    assert sent.notice_sha256 == notice.sha256
    assert sent.report == report


def test_a_directory_outbox_refuses_a_second_different_notice_for_a_case(tmp_path: Path) -> None:
    case, underwriting = decided(golden_case(DECLINE_DTI))
    outbox = DirectoryOutbox(tmp_path)
    first = render_notice(case, underwriting)
    outbox.send(first, verify(first, expectation_for(case, underwriting)))
    second = render_notice(case, underwriting, variants={"DTI_OVER_CAP": 1})
    with pytest.raises(NoticeError, match="a different notice for this case is already"):
        outbox.send(second, verify(second, expectation_for(case, underwriting)))


@pytest.mark.parametrize("by_file_system", [False, True], ids=["each-file", "file-system"])
def test_a_sent_notice_and_its_report_are_on_disk_before_send_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_file_system: bool
) -> None:
    """Each file is flushed to disk before it takes its name (one by one, or by its file
    system at once), then the folder: the journal records the notice as sent only after
    send returns, so a power cut never leaves a notice.sent entry whose file was lost."""
    import os

    from credit.journal import atomicfile

    synced: list[tuple[object, list[str]]] = []  # each flush, and the names then in the folder
    folder = tmp_path / "outbox"

    def names() -> list[str]:
        return sorted(n for n in os.listdir(folder) if not n.startswith("."))

    def fsync(fd: int) -> None:  # a file by its inode (it may have no name yet)
        target = os.fstat(fd)
        synced.append(
            (str(folder) if target.st_ino == folder.stat().st_ino else target.st_ino, names())
        )

    def syncfs(fd: int) -> None:
        synced.append(("file system", names()))

    monkeypatch.setattr(atomicfile.os, "fsync", fsync)
    monkeypatch.setattr(atomicfile, "_syncfs", lambda: syncfs if by_file_system else None)
    monkeypatch.setattr(atomicfile, "SYNCFS_FILES", 2)  # (a run's group has more files)
    notice, expectation = notice_and_expectation(COUNTER_CARD)
    outbox = DirectoryOutbox(folder)
    outbox.send(notice, verify(notice, expectation))
    named = ["G-COUNTER-CARD.notice.json", "G-COUNTER-CARD.report.json"]
    inodes = [(folder / n).stat().st_ino for n in reversed(named)]  # the report first
    flushes = [what for what, _ in synced[:-1]]
    assert flushes == (["file system"] if by_file_system else inodes)
    assert all(names == [] for _, names in synced[:-1])  # flushed, then named
    assert synced[-1] == (str(folder), named)  # the names made durable, the folder once
    assert sorted(p.name for p in folder.iterdir()) == named  # no temporary file left


@pytest.mark.parametrize("by_file_system", [False, True], ids=["each-file", "file-system"])
def test_notices_sent_together_are_each_flushed_before_any_takes_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_file_system: bool
) -> None:
    """A group's notices (credit run's): every file flushed (one by one, or by its file
    system at once), then every name made, then the folder flushed once; a notice
    refused (unverified, or another notice already sent for its case) is refused in its
    place and the others are sent."""
    import os

    from credit.journal import atomicfile

    folder = tmp_path / "outbox"
    outbox = DirectoryOutbox(folder)
    case, underwriting = decided(golden_case(DECLINE_DTI))
    sent_before = render_notice(case, underwriting)
    outbox.send(sent_before, verify(sent_before, expectation_for(case, underwriting)))
    another = render_notice(case, underwriting, variants={"DTI_OVER_CAP": 1})
    counter, counter_expected = notice_and_expectation(COUNTER_CARD)
    failing = counter.model_copy(update={"case_id": "G-OTHER"})  # its report fails V5
    good = [notice_and_expectation(name) for name in (COUNTER_CARD, COUNTER_AUTO)]
    events: list[tuple[str, str]] = []

    def fsync(fd: int) -> None:
        events.append(("flush", Path(os.readlink(f"/proc/self/fd/{fd}")).name))

    def syncfs(fd: int) -> None:
        events.append(("flush", "file system"))

    real_link, real_replace = os.link, os.replace

    def link(src: Any, dst: Any, **how: Any) -> None:
        events.append(("name", Path(dst).name))
        real_link(src, dst, **how)

    def replace(src: Any, dst: Any) -> None:
        events.append(("name", Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(atomicfile.os, "fsync", fsync)
    monkeypatch.setattr(atomicfile, "_syncfs", lambda: syncfs if by_file_system else None)
    monkeypatch.setattr(atomicfile, "SYNCFS_FILES", 2)  # (a run's group has more files)
    monkeypatch.setattr(atomicfile.os, "link", link)
    monkeypatch.setattr(atomicfile.os, "replace", replace)
    outcomes = outbox.send_all(
        [
            (good[0][0], verify(*good[0])),
            (another, verify(another, expectation_for(case, underwriting))),
            (failing, verify(failing, counter_expected)),
            (good[1][0], verify(*good[1])),
        ]
    )
    assert isinstance(outcomes[0], SentNotice) and isinstance(outcomes[3], SentNotice)
    assert isinstance(outcomes[1], NoticeError) and "different notice" in str(outcomes[1])
    assert isinstance(outcomes[2], UnverifiedNoticeError)
    kinds = [kind for kind, _ in events]
    flushes = 1 if by_file_system else 4
    assert kinds == ["flush"] * flushes + ["name"] * 4 + ["flush"]  # the folder, once, last
    assert events[-1] == ("flush", folder.name)
    assert [name for kind, name in events if kind == "name"] == [
        f"{good[0][0].case_id}.report.json",
        f"{good[0][0].case_id}.notice.json",
        f"{good[1][0].case_id}.report.json",
        f"{good[1][0].case_id}.notice.json",
    ]  # each notice's report before it
    for notice, _ in good:
        assert (folder / f"{notice.case_id}.notice.json").read_bytes() == notice.canonical_bytes()
    kept = (folder / f"{case.case_id}.notice.json").read_bytes()
    assert kept == sent_before.canonical_bytes()  # the notice sent before stands
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("ours", ["the same notice", "another notice"])
def test_a_sender_that_finds_the_notice_written_meanwhile_keeps_the_same_and_refuses_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ours: str
) -> None:
    """Two senders of one case: the one that names its file second finds it there. The
    same notice is then sent (nothing to do); another notice is refused."""
    case, underwriting = decided(golden_case(DECLINE_DTI))
    first = render_notice(case, underwriting)
    sending = (
        first
        if ours == "the same notice"
        else render_notice(case, underwriting, variants={"DTI_OVER_CAP": 1})
    )
    outbox, other = DirectoryOutbox(tmp_path), DirectoryOutbox(tmp_path)
    real = DirectoryOutbox._kept
    raced: list[bool] = []

    def kept_after_a_race(self: DirectoryOutbox, sent: Any) -> bool:
        if not raced:  # the other sender names its file between the check and ours
            raced.append(True)
            other.send(first, verify(first, expectation_for(case, underwriting)))
            return False
        return real(self, sent)

    monkeypatch.setattr(DirectoryOutbox, "_kept", kept_after_a_race)
    report = verify(sending, expectation_for(case, underwriting))
    if sending is first:
        outbox.send(sending, report)
    else:
        with pytest.raises(NoticeError, match="a different notice for this case is already"):
            outbox.send(sending, report)
    assert raced
    kept = (tmp_path / f"{case.case_id}.notice.json").read_bytes()
    assert kept == first.canonical_bytes()  # the first sender's notice stands


def test_the_workflow_sends_a_good_notice_and_blocks_one_that_fails(tmp_path: Path) -> None:
    outbox = InMemoryOutbox()
    case, underwriting = decided(golden_case(DECLINE_SCORE))
    outcome = issue_notice(case, underwriting, outbox)
    assert outcome is not None and outcome.sent and outcome.report.passed
    sources = data_copy(tmp_path)
    frame = sources.frame.read_text(encoding="utf-8")
    sources.frame.write_text(frame.replace("within 60 days", "within 90 days"), encoding="utf-8")
    unreviewed = Verifier(pins_from(sources))
    case, underwriting = decided(golden_case(COUNTER_AUTO))
    blocked = issue_notice(case, underwriting, outbox, verifier=unreviewed)
    assert blocked is not None and not blocked.sent
    assert blocked.report.failed == ("V7",)
    assert blocked.refusal == "the notice failed verification (V7): not sent"
    assert [s.case_id for s in outbox.sent()] == [DECLINE_SCORE]


def test_the_workflow_renders_no_notice_for_an_approval() -> None:
    case, underwriting = decided(
        changed(golden_case(COUNTER_CARD), "application.monthlyDebtPayments", "100.00")
    )
    outbox = InMemoryOutbox()
    assert issue_notice(case, underwriting, outbox) is None
    assert outbox.sent() == ()
