"""One exception hierarchy for the whole product.

Every error carries the context an operator needs to act on it: the case, the
field, the rule or the file it concerns. Each subclasses the builtin it behaves
like, so callers that only know Python's builtins still catch it sensibly::

    CreditError (Exception)
    ├── InputError (ValueError)            bad input: case, line, field, value
    │   ├── NotInPolicyError               a request the policy has no rule for
    │   ├── IntakeConflictError            a case id taken in before with other content
    │   ├── ReasonNotGroundedError         a reason whose figure the case file does not
    │   │                                  have, or that may not be cited: code, field
    │   └── NoticeInputError               a malformed notice, expectation, report or lock
    │                                      document: source, case, field
    ├── PolicyError (ValueError)           a policy/catalogue data file is wrong: file, key
    ├── UndecidedCaseError (RuntimeError)  no rule decided a case (never a fallthrough)
    ├── SafetyBoundaryError (RuntimeError) a governance seam stopped a call: boundary, case,
    │                                      tool
    ├── UnderwriterError (RuntimeError)    an underwriter turn could not run: case,
    │   │                                  underwriter
    │   └── ModelTurnError                 a model's session gave no usable outcome: reason,
    │       │                              session, the tools it called, whether a decision
    │       │                              was recorded
    │       ├── ModelApiError              the model's API answered an error: status, kind
    │       ├── ModelSessionError          the model's session failed or was stopped (the
    │       │                              CLI exited, max turns, budget): subtype, exit code
    │       ├── NoDecisionError            the session ended with no decision recorded: the
    │       │                              model's last answer, the tool errors it was sent
    │       ├── UnknownToolError           the model called a tool that is not one of the
    │       │                              four: tool
    │       └── UnderwriterTimeoutError    the turn ran past its time limit (also a
    │                                      TimeoutError): seconds
    ├── GovernanceError (RuntimeError)     a review (Keystone, Equipoise, Backstop) could
    │   │                                  not run on a case: case, reviewer
    │   └── CaseStateError                 a person's action on a case that is not in a state
    │       │                              that allows it: case, state (HTTP 409)
    │       └── CaseNotHeldError           a person released or rejected a case the Keystone
    │                                      gate does not hold: case, state
    ├── NoticeError (RuntimeError)         the notice workflow refused or broke: case, field,
    │   │                                  check
    │   ├── NoNoticeError                  the decision takes no adverse-action notice
    │   ├── SendRefusedError               the outbox refused a notice
    │   │   ├── UnverifiedNoticeError      its report has a failed check (check: which)
    │   │   └── StaleNoticeError           its hash is not the verified notice_sha256
    │   │                                  (re-rendered since, or tampered with)
    │   └── MutationHarnessError           the mutation suite itself is wrong: a mutator
    │                                      left a notice unchanged, a genuine notice failed
    ├── MissingExtraError (ImportError)    an optional extra is not installed: extra, package
    ├── AccessError (PermissionError)      the service refused a caller: status (401 no or
    │                                      bad credentials, 403 a role not allowed), field,
    │                                      principal, role
    ├── ServiceError (RuntimeError)        a service request cannot be done as asked: status
    │   │                                  (404, 409, 413, ...), case, field
    │   └── AlreadyDecidedError            decide on a case already decided (or being
    │                                      decided by another request): 409, case
    └── JournalIntegrityError (RuntimeError)
                                           the log failed verification (a malformed or
                                           badly signed checkpoint, a fork, a bad proof or
                                           entry MAC): check, checkpoint, tree size, entry
                                           seq, line
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

__all__ = [
    "AccessError",
    "AlreadyDecidedError",
    "CaseNotHeldError",
    "CaseStateError",
    "CreditError",
    "GovernanceError",
    "InputError",
    "IntakeConflictError",
    "JournalIntegrityError",
    "MissingExtraError",
    "ModelApiError",
    "ModelSessionError",
    "ModelTurnError",
    "MutationHarnessError",
    "NoDecisionError",
    "NoNoticeError",
    "NotInPolicyError",
    "NoticeError",
    "NoticeInputError",
    "PolicyError",
    "ReasonNotGroundedError",
    "SafetyBoundaryError",
    "SendRefusedError",
    "ServiceError",
    "StaleNoticeError",
    "UndecidedCaseError",
    "UnderwriterError",
    "UnderwriterTimeoutError",
    "UnknownToolError",
    "UnverifiedNoticeError",
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


class IntakeConflictError(InputError):
    """A case id was taken in before with different content. Intake is idempotent for
    the same case; it never replaces a case already taken in. ``digest`` is the new
    content's SHA-256, ``existing_digest`` the one taken in."""

    def __init__(
        self,
        message: str,
        *,
        case_id: str | None = None,
        field: str | None = None,
        line: int | None = None,
        source: str | None = None,
        digest: str | None = None,
        existing_digest: str | None = None,
    ) -> None:
        self.digest = digest
        self.existing_digest = existing_digest
        super().__init__(message, case_id=case_id, field=field, line=line, source=source)

    def located(self, *, line: int | None = None, source: str | None = None) -> InputError:
        return IntakeConflictError(
            self.message,
            case_id=self.case_id,
            field=self.field,
            line=line if line is not None else self.line,
            source=source if source is not None else self.source,
            digest=self.digest,
            existing_digest=self.existing_digest,
        )


class ReasonNotGroundedError(InputError):
    """A reason cannot be stated for this case: the file lacks the figure its wording
    states (``missing``), or the code may not be cited here. ``code`` is the reason."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        missing: str | None = None,
        case_id: str | None = None,
        field: str | None = None,
        line: int | None = None,
        source: str | None = None,
    ) -> None:
        self.code = code
        self.missing = missing
        super().__init__(
            message, case_id=case_id, field=field or f"reasons.{code}", line=line, source=source
        )

    def located(self, *, line: int | None = None, source: str | None = None) -> InputError:
        return ReasonNotGroundedError(
            self.message,
            code=self.code,
            missing=self.missing,
            case_id=self.case_id,
            field=self.field,
            line=line if line is not None else self.line,
            source=source if source is not None else self.source,
        )

    def for_case(self, case_id: str, field: str | None = None) -> ReasonNotGroundedError:
        return ReasonNotGroundedError(
            self.message,
            code=self.code,
            missing=self.missing,
            case_id=case_id,
            field=field or self.field,
        )


class SafetyBoundaryError(CreditError, RuntimeError):
    """A governance seam stopped a call at a safety boundary (fail-closed).

    ``boundary_id`` is one of the stable ids in :mod:`credit.governance.refusal`;
    ``tool`` is the tool whose call was stopped, when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        boundary_id: str,
        case_id: str | None = None,
        tool: str | None = None,
    ) -> None:
        self.message = message
        self.boundary_id = boundary_id
        self.case_id = case_id
        self.tool = tool
        where = ", ".join(
            p for p in (f"case {case_id}" if case_id else "", f"tool {tool}" if tool else "") if p
        )
        text = f"{boundary_id}: {message}"
        super().__init__(f"{where}: {text}" if where else text)


class UnderwriterError(CreditError, RuntimeError):
    """An underwriter turn could not run (an optional extra is missing, the model
    session failed)."""

    def __init__(
        self, message: str, *, case_id: str | None = None, underwriter: str | None = None
    ) -> None:
        self.message = message
        self.case_id = case_id
        self.underwriter = underwriter
        where = ", ".join(
            p
            for p in (
                f"case {case_id}" if case_id else "",
                f"underwriter {underwriter}" if underwriter else "",
            )
            if p
        )
        super().__init__(f"{where}: {message}" if where else message)


class ModelTurnError(UnderwriterError):
    """A model underwriter's session gave no usable outcome. ``reason`` is a stable code
    naming what happened (one per subclass); ``session_id`` is the model session's id,
    ``tool_calls`` the tools the model asked for, in order, and ``decision_recorded``
    whether a (held) decision was recorded before the turn failed. :meth:`record` is
    the error as a journal payload."""

    reason: ClassVar[str] = "model_turn_failed"

    def __init__(
        self,
        message: str,
        *,
        case_id: str | None = None,
        underwriter: str | None = None,
        session_id: str | None = None,
        tool_calls: Iterable[str] = (),
        decision_recorded: bool = False,
    ) -> None:
        self.session_id = session_id
        self.tool_calls = tuple(tool_calls)
        self.decision_recorded = decision_recorded
        super().__init__(message, case_id=case_id, underwriter=underwriter)

    def detail(self) -> dict[str, Any]:
        """The fields particular to this reason, JSON-safe."""
        return {}

    def record(self) -> dict[str, Any]:
        """Everything the error says, JSON-safe, for the journal or a work item."""
        return {
            "error": type(self).__name__,
            "reason": self.reason,
            "message": self.message,
            "caseId": self.case_id,
            "underwriter": self.underwriter,
            "sessionId": self.session_id,
            "toolCalls": list(self.tool_calls),
            "decisionRecorded": self.decision_recorded,
            **self.detail(),
        }


class ModelApiError(ModelTurnError):
    """The model's API answered an error the CLI did not (or could no longer) retry.
    ``status`` is its HTTP status (None when no answer came: a refused connection);
    ``kind`` the SDK's category (``server_error``, ``rate_limit``, ``invalid_request``,
    ``authentication_failed``, ``billing_error``, ``unknown``); ``api_message`` what the
    session reported."""

    reason: ClassVar[str] = "api_error"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        kind: str | None = None,
        api_message: str | None = None,
        **context: Any,
    ) -> None:
        self.status = status
        self.kind = kind
        self.api_message = api_message
        super().__init__(message, **context)

    def detail(self) -> dict[str, Any]:
        return {"status": self.status, "kind": self.kind, "apiMessage": self.api_message}


class ModelSessionError(ModelTurnError):
    """The model's session failed or was stopped: the CLI could not start or exited
    (``exit_code``, the last lines of its error output in ``stderr``), or the session
    ended in an error result (``subtype``: ``error_max_turns``,
    ``error_max_budget_usd``, ``error_during_execution``; ``terminal_reason``)."""

    reason: ClassVar[str] = "session_error"

    def __init__(
        self,
        message: str,
        *,
        subtype: str | None = None,
        terminal_reason: str | None = None,
        exit_code: int | None = None,
        stderr: str | None = None,
        **context: Any,
    ) -> None:
        self.subtype = subtype
        self.terminal_reason = terminal_reason
        self.exit_code = exit_code
        self.stderr = stderr
        super().__init__(message, **context)

    def detail(self) -> dict[str, Any]:
        return {
            "subtype": self.subtype,
            "terminalReason": self.terminal_reason,
            "exitCode": self.exit_code,
            "stderr": self.stderr,
        }


class NoDecisionError(ModelTurnError):
    """The model's session ended normally but no decision was recorded (and no safety
    boundary refused one). ``final`` is the model's last answer; ``tool_errors`` the
    errors its tool calls were answered with (a malformed decision, say)."""

    reason: ClassVar[str] = "no_decision"

    def __init__(
        self,
        message: str,
        *,
        final: str = "",
        tool_errors: Iterable[str] = (),
        **context: Any,
    ) -> None:
        self.final = final
        self.tool_errors = tuple(tool_errors)
        super().__init__(message, **context)

    def detail(self) -> dict[str, Any]:
        return {"final": self.final, "toolErrors": list(self.tool_errors)}


class UnknownToolError(ModelTurnError):
    """The model called a tool that is not one of the four governed tools (``tool``,
    as the model named it). The session is stopped at that call."""

    reason: ClassVar[str] = "unknown_tool"

    def __init__(self, message: str, *, tool: str, **context: Any) -> None:
        self.tool = tool
        super().__init__(message, **context)

    def detail(self) -> dict[str, Any]:
        return {"tool": self.tool}


class UnderwriterTimeoutError(ModelTurnError, TimeoutError):
    """The turn ran past its time limit (``timeout_s`` seconds) and was stopped."""

    reason: ClassVar[str] = "timeout"

    def __init__(self, message: str, *, timeout_s: float, **context: Any) -> None:
        self.timeout_s = timeout_s
        super().__init__(message, **context)

    def detail(self) -> dict[str, Any]:
        return {"timeoutS": self.timeout_s}


class GovernanceError(CreditError, RuntimeError):
    """A governance review (the Keystone gate, Equipoise, Backstop) could not run on a
    case: no decision is recorded for it, say. ``reviewer`` names the review."""

    def __init__(
        self, message: str, *, case_id: str | None = None, reviewer: str | None = None
    ) -> None:
        self.message = message
        self.case_id = case_id
        self.reviewer = reviewer
        where = ", ".join(p for p in (f"case {case_id}" if case_id else "", reviewer or "") if p)
        super().__init__(f"{where}: {message}" if where else message)


class CaseStateError(GovernanceError):
    """A person's action on a case whose state does not allow it (an officer deciding a
    case that is not at a person's work item, a withdrawal of a case at a final action,
    a second approval by the same person). ``state`` is the case's state
    (:mod:`credit.lifecycle`) when the action was refused; nothing was recorded."""

    def __init__(self, message: str, *, case_id: str, state: str, reviewer: str = "case") -> None:
        self.state = state
        super().__init__(message, case_id=case_id, reviewer=reviewer)


class CaseNotHeldError(CaseStateError):
    """A person asked to release or reject a case that the Keystone gate does not hold
    (no decision recorded, already released or already rejected). ``state`` is the
    case's state as derived from the journal."""

    def __init__(self, message: str, *, case_id: str, state: str) -> None:
        super().__init__(message, case_id=case_id, state=state, reviewer="keystone")


class MissingExtraError(CreditError, ImportError):
    """A feature needs an optional extra that is not installed
    (``pip install 'credit[fairness]'``)."""

    def __init__(self, message: str, *, extra: str, package: str) -> None:
        self.message = message
        self.extra = extra
        self.package = package
        super().__init__(f"{message} (install the {extra!r} extra: pip install 'credit[{extra}]')")


class NoticeInputError(InputError):
    """A notice, expectation, verification report or lock document is malformed:
    not JSON, an unknown or missing field, a value of the wrong kind. ``field`` is the
    dotted path of the first bad field in the document's wire names
    (``reasons[0].values``); ``source`` is the file."""

    def located(self, *, line: int | None = None, source: str | None = None) -> InputError:
        return NoticeInputError(
            self.message,
            case_id=self.case_id,
            field=self.field,
            line=line if line is not None else self.line,
            source=source if source is not None else self.source,
        )


class NoticeError(CreditError, RuntimeError):
    """The notice workflow refused a notice or could not go on.

    ``case_id`` is the case the notice is for; ``field`` the notice field concerned,
    when there is one; ``check`` the verifier check(s) (``V1``..``V8``) or the mutator
    (``M1``..``M14``) concerned, when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        case_id: str | None = None,
        field: str | None = None,
        check: str | None = None,
    ) -> None:
        self.message = message
        self.case_id = case_id
        self.field = field
        self.check = check
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.case_id is not None:
            where.append(f"case {self.case_id}")
        if self.check is not None:
            where.append(self.check)
        if self.field is not None:
            where.append(f"field {self.field}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class NoNoticeError(NoticeError):
    """An adverse-action notice was asked for a decision that takes none: an approval,
    or a referral (its reasons are for the human reviewer and never reach a notice)."""


class SendRefusedError(NoticeError):
    """The outbox refused a notice. Nothing unverified is ever sent."""


class UnverifiedNoticeError(SendRefusedError):
    """The notice's verification report has at least one failed check; ``check`` names
    the failed checks."""


class StaleNoticeError(SendRefusedError):
    """The notice's current SHA-256 is not the ``notice_sha256`` of its verification
    report: it was re-rendered after it was verified, or it was tampered with."""

    def __init__(
        self,
        message: str,
        *,
        case_id: str | None = None,
        verified_sha256: str | None = None,
        current_sha256: str | None = None,
    ) -> None:
        self.verified_sha256 = verified_sha256
        self.current_sha256 = current_sha256
        super().__init__(message, case_id=case_id, field="notice_sha256")


class MutationHarnessError(NoticeError):
    """The mutation suite itself is wrong, so its verdict would mean nothing: a mutator
    returned the notice unchanged, or a genuine notice failed verification before any
    defect was injected. ``check`` names the mutator."""


class AccessError(CreditError, PermissionError):
    """The service refused a caller. ``status`` is 401 (no or invalid credentials) or
    403 (the caller's role may not do this); ``field`` names the credential checked."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 401,
        field: str | None = None,
        principal: str | None = None,
        role: str | None = None,
    ) -> None:
        self.message = message
        self.status = status
        self.field = field
        self.principal = principal
        self.role = role
        who = f"{principal} ({role})" if principal else None
        super().__init__(f"{who}: {message}" if who else message)


class ServiceError(CreditError, RuntimeError):
    """A service request that cannot be done as asked: ``status`` is its HTTP status
    (404 no such case, 409 a conflict with the case's state, 413 too large, ...)."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        case_id: str | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.status = status
        self.case_id = case_id
        self.field = field
        super().__init__(f"case {case_id}: {message}" if case_id else message)


class AlreadyDecidedError(ServiceError):
    """A decide request for a case that already has its decision (or whose decision
    another request is making right now). Nothing was changed."""

    def __init__(self, message: str, *, case_id: str | None = None) -> None:
        super().__init__(message, status=409, case_id=case_id)


class JournalIntegrityError(CreditError, RuntimeError):
    """The journal, or what vouches for it outside the database, failed verification.

    ``check`` names the check that failed (``note``, ``body``, ``unknown-key``,
    ``signature``, ``origin``, ``fork``, ``file-name``, or the store's own:
    ``inclusion``, ``consistency``, ``entry-mac``, ...); ``checkpoint`` is the
    checkpoint file, ``tree_size`` the tree size, ``seq`` the journal entry and
    ``line`` the 1-based line of the checkpoint text, each when known.
    """

    def __init__(
        self,
        message: str,
        *,
        check: str,
        checkpoint: str | None = None,
        tree_size: int | None = None,
        seq: int | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.check = check
        self.checkpoint = checkpoint
        self.tree_size = tree_size
        self.seq = seq
        self.line = line
        super().__init__(self.__str__())

    def __str__(self) -> str:
        places = (
            ("checkpoint", self.checkpoint),
            ("tree size", self.tree_size),
            ("entry", self.seq),
            ("line", self.line),
        )
        prefix = ", ".join(f"{name} {value}" for name, value in places if value is not None)
        text = f"{self.check}: {self.message}"
        return f"{prefix}: {text}" if prefix else text
