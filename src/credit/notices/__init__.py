"""Adverse-action notices: the renderer, the outbox and the render-verify-send workflow.

The renderer (:mod:`credit.notices.render`) never imports the verifier, and the
verifier (:mod:`credit.guardrails`) never imports this package: import contracts in
``make test`` enforce both.
"""

from credit.notice_format import Notice, NoticeReason, parse_notice
from credit.notices.outbox import (
    DirectoryOutbox,
    InMemoryOutbox,
    Outbox,
    SentNotice,
    check_sendable,
)
from credit.notices.render import NOTICE_DECISIONS, format_money, render_notice
from credit.notices.workflow import NoticeOutcome, issue_notice

__all__ = [
    "NOTICE_DECISIONS",
    "DirectoryOutbox",
    "InMemoryOutbox",
    "Notice",
    "NoticeOutcome",
    "NoticeReason",
    "Outbox",
    "SentNotice",
    "check_sendable",
    "format_money",
    "issue_notice",
    "parse_notice",
    "render_notice",
]
