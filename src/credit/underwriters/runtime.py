"""The Spark runtime: one governed underwriter turn on one case.

A turn (spec, "Governance seams" and ADR-0001 typed refusal):

1. **Context seam.** The structured context the underwriter is given (the case's
   application and credit report as the tools will serve them, the policy in force,
   beside the methodology text) is checked for prohibited-basis fields. A hit violates
   ``fair_lending.prohibited_basis_reached_underwriter`` and the underwriter is not
   started (fail-closed).
2. **The underwriter** runs through the governed tools only (tool-result seam and
   commit seam, :mod:`credit.governance.governor`). The rules underwriter and the LLM
   underwriter take the same path and are refused alike.
3. **Verdict and surface.** The governor's boundary results make the turn's
   :class:`~credit.governance.refusal.SafetyVerdict`. The response surface is the
   underwriter's final output, *replaced* by
   :func:`~credit.governance.refusal.build_refusal_surface` when a runtime-checkable
   boundary was violated. A boundary reported ``runtime_checkable=False`` never refuses.
4. **Audit.** The underwriter's own output is journaled unchanged
   (``underwriter.turn``, with the verdict); a refusal adds ``safety.refusal`` with the
   boundary ids. An underwriter that keeps a transcript of its turn (a model: what it
   was sent and what it answered, :class:`Transcribed`) has it stored outside the
   database, content-addressed (:mod:`credit.underwriters.transcripts`), and the
   ``underwriter.turn`` entry names it (``transcript``, ``transcriptSha256``).
   :attr:`SparkRuntime.last_refusal_was_typed` keeps whether the last turn was refused
   (next-turn evidence that no refusal was silently corrected).

The methodology (the system prompt) is the runtime's when one is given, else the
underwriter's own for the policy in force on the case date when it writes one
(:class:`WritesMethodology`: the LLM underwriter's prompt from the policy, the reason
catalogue and the prohibited terms), else :data:`SPARK_METHODOLOGY`.

The decision a turn records is *held* (``status: "held"``): the Keystone gate reviews
it after the turn ends.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, TypeGuard, TypeVar, runtime_checkable

import anyio

from credit import kinds as _kinds
from credit.canonical import sha256_hex
from credit.errors import CreditError, InputError, JournalIntegrityError, ModelTurnError
from credit.governance.governor import Governor
from credit.governance.guard import FairLendingGuard, Redaction
from credit.governance.refusal import SafetyVerdict, build_refusal_surface
from credit.journal.base import Entry, Store
from credit.journal.naming import DECISION_ID, decision_ref
from credit.policy import Policy, PolicyRegistry
from credit.tools.governed import TOOL_NAMES, CaseTools, policy_document
from credit.tools.server import ToolHost, ToolSession, open_session
from credit.underwriters.transcripts import transcripts_folder, write_transcript

__all__ = [
    "SAFETY_REFUSAL",
    "SPARK_METHODOLOGY",
    "TURN_FAILED",
    "UNDERWRITER_TURN",
    "DrivesSession",
    "SparkRuntime",
    "Transcribed",
    "TurnContext",
    "TurnResult",
    "Underwriter",
    "WritesMethodology",
    "drives_session",
    "failure_payload",
    "transcribed",
    "writes_methodology",
]

UNDERWRITER_TURN: Final = _kinds.UNDERWRITER_TURN
SAFETY_REFUSAL: Final = _kinds.SAFETY_REFUSAL
TURN_FAILED: Final = _kinds.TURN_FAILED

SPARK_METHODOLOGY: Final = """\
You are Spark, a consumer credit underwriter (auto loans and credit cards).

Methodology
1. Pull the application, the credit report, and the policy (get_application,
   get_credit_report, get_policy).
2. Band the score (prime / near-prime / subprime; unscored if no score was returned).
3. Assess capacity: the debt-to-income ratio, and for auto the loan-to-value, against
   the policy maximums.
4. Decide: decline on a hard policy failure (score below the product minimum, DTI over
   the cap, auto LTV over the cap); approve within policy at the band's rate or line;
   counteroffer when approvable only on adjusted terms; refer a thin file, an
   unresolved dispute, or a within-margin result.
5. Record the specific credit factors in plain language. For a decline or
   counteroffer these become the adverse-action reasons, so they must be accurate and
   file-grounded.

Rules
- The tools are the only ground truth. You have exactly four: get_application,
  get_credit_report, get_policy (read) and record_decision (commit).
- Call record_decision exactly once, with the Decision: product, decision, terms,
  scoreBand, dtiPct, ltvPct (auto; null for card), policyBasis (the policy rules
  applied), factors (the credit factors), confidence (0..1).
- Never consider or cite a prohibited basis (race, color, religion, national origin,
  sex, marital status, age, receipt of public assistance, the exercise of consumer
  credit rights) or a proxy for one. You are given no such data; if any reached you,
  ignore it.
- After recording, answer with the decision you recorded, as JSON.
"""


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What an underwriter is told when its turn starts (the tools hold the data)."""

    case_id: str
    as_of: str
    methodology: str
    turn: str

    def prompt(self) -> str:
        return (
            f"Underwrite credit case {self.case_id} (case date {self.as_of}). Use the tools "
            "to read the application, the credit report and the policy, decide under the "
            "methodology, and record the decision exactly once."
        )


@runtime_checkable
class Underwriter(Protocol):
    """An underwriter: drives the governed tools of one case and returns its output."""

    @property
    def name(self) -> str: ...

    async def run(self, tools: CaseTools, context: TurnContext) -> str: ...


@runtime_checkable
class DrivesSession(Protocol):
    """An underwriter that can take its turn on an MCP session it is handed (the rules
    underwriter): the runtime's one server, bound to the turn's case
    (:meth:`SparkRuntime.serving`)."""

    async def drive(self, session: ToolSession) -> str: ...


@runtime_checkable
class WritesMethodology(Protocol):
    """An underwriter that writes its own methodology for the policy in force."""

    def methodology_for(self, policy: Policy) -> str: ...


@runtime_checkable
class Transcribed(Protocol):
    """An underwriter that keeps a transcript of each turn: ``take_transcript(turn)``
    gives it once, after the turn (ended or failed), or None when it kept none."""

    def take_transcript(self, turn: str) -> Mapping[str, Any] | None: ...


def _has_method(obj: object, name: str) -> bool:
    return callable(getattr(obj, name, None))


# Which of the optional protocols an underwriter follows, each asked with one attribute
# lookup: on Python 3.11 ``isinstance`` against a runtime-checkable Protocol walks the
# protocol's classes for its members on every call (four times a turn: 0.8% of a run).
# Each protocol has exactly the one method named here, and it must be callable (where
# isinstance lets a non-callable attribute through); tests/test_underwriters.py pins
# these guards to isinstance.
def drives_session(underwriter: object) -> TypeGuard[DrivesSession]:
    return _has_method(underwriter, "drive")


def writes_methodology(underwriter: object) -> TypeGuard[WritesMethodology]:
    return _has_method(underwriter, "methodology_for")


def transcribed(underwriter: object) -> TypeGuard[Transcribed]:
    return _has_method(underwriter, "take_transcript")


@dataclass(frozen=True)
class TurnResult:
    """The outcome of one underwriter turn.

    ``surface`` is what the caller shows: the underwriter's output, or the typed
    refusal when a runtime-checkable safety boundary was violated.
    ``audited_surface`` is the underwriter's own output, unchanged (journaled).
    ``decision_entry`` is the held ``decision.recorded`` entry this turn committed.
    ``error`` is what stopped a turn that could not complete (journaled as
    ``turn.failed``: a person takes the case over); ``failure`` says it in words.
    """

    case_id: str
    underwriter: str
    turn: str
    surface: str
    audited_surface: str
    refused: bool
    verdict: SafetyVerdict
    started: bool
    decision_entry: Entry | None
    redactions: tuple[tuple[str, Redaction], ...] = field(default=())
    error: Exception | None = None
    failure: str | None = None

    @property
    def violated(self) -> tuple[str, ...]:
        return self.verdict.violated

    @property
    def failed(self) -> bool:
        return self.failure is not None


_T = TypeVar("_T")
_Work = Callable[[], Awaitable[Any]]


class _KeptSession:
    """One thread's event loop and the MCP session on its tool server, kept open from
    one turn to the next (the service's workers run a turn per request).

    Opening a session costs a handshake, a tool listing and the compiling of the four
    tools' output-schema validators (about 3 ms, a fifth of a decide); kept, a turn
    pays only its four calls. One holder task opens the session and runs every turn
    handed to it, so the session's task groups are entered and left by one task, as
    anyio requires; the loop runs in the calling thread (``run_until_complete``), so a
    turn's writes join the caller's group commit. The session is handed to a turn only
    while that turn runs (``served``), never to a turn of another loop."""

    def __init__(self, local: threading.local) -> None:
        self._local = local  # the runtime's per-thread state (not the runtime: no cycle)
        self.thread = threading.current_thread()  # the thread whose session it is
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._requests: asyncio.Queue[tuple[_Work | None, asyncio.Future[Any]]] | None = None
        self._holder: asyncio.Task[None] | None = None

    def run(self, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``work`` (a turn) with the kept session served to it."""
        with self._lock:
            if self._loop.is_closed():
                raise RuntimeError("the runtime was closed: no turn runs on it")
            result: _T = self._loop.run_until_complete(self._submit(work))
            return result

    async def _submit(self, work: _Work | None) -> Any:
        if self._holder is None or self._holder.done():
            if work is None:
                return None  # no session open: nothing to end
            self._requests = asyncio.Queue()
            self._holder = asyncio.get_running_loop().create_task(self._hold(self._requests))
        assert self._requests is not None
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._requests.put_nowait((work, done))
        holder = self._holder
        await asyncio.wait({done, holder}, return_when=asyncio.FIRST_COMPLETED)
        if done.done():
            return done.result()
        holder.result()  # the session ended under the turn: its error
        raise RuntimeError("the tool session ended before the turn ran")

    async def _hold(
        self, requests: asyncio.Queue[tuple[_Work | None, asyncio.Future[Any]]]
    ) -> None:
        local = self._local
        host = _thread_host(local)
        async with open_session(host.server) as session:
            while True:
                work, done = await requests.get()
                if work is None:
                    done.set_result(None)
                    return
                local.served = (host, session)
                try:
                    done.set_result(await work())
                except Exception as err:  # the turn's own error, handed back; the session goes on
                    done.set_exception(err)
                finally:
                    local.served = None

    def close(self) -> None:
        """End the session and close the loop: here, or, where another loop runs (a
        server's shutdown), on a thread of its own."""

        def end() -> None:
            with self._lock:
                if self._loop.is_closed():
                    return
                try:
                    self._loop.run_until_complete(self._submit(None))
                finally:
                    self._loop.close()

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop runs here (a worker thread, the exit)
            end()
            return
        closer = threading.Thread(target=end, name="credit-session-close")
        closer.start()
        closer.join()


def _thread_host(local: threading.local) -> ToolHost:
    """This thread's tool server, built on its first turn."""
    host: ToolHost | None = getattr(local, "host", None)
    if host is None:
        host = local.host = ToolHost()
    return host


def _close_kept(kept: list[_KeptSession]) -> None:
    while kept:
        kept.pop().close()


class SparkRuntime:
    """Runs governed underwriter turns over one store.

    ``registry`` picks the policy in force on each case date (default: the bundled
    reference policy); ``guard`` is the fair-lending guard (default: the shipped
    prohibited-terms data, proxies included); ``methodology`` is the system prompt of
    every turn (default: each underwriter's own, see the module docstring);
    ``transcripts`` is the folder turn transcripts are stored in (default:
    ``$CREDIT_TRANSCRIPTS``, else ``./transcripts``).
    """

    def __init__(
        self,
        store: Store,
        *,
        registry: PolicyRegistry | None = None,
        guard: FairLendingGuard | None = None,
        methodology: str | None = None,
        transcripts: Path | str | None = None,
    ) -> None:
        self.store = store
        self.registry = registry or PolicyRegistry.bundled()
        self.guard = guard
        self.methodology = methodology
        self.transcripts = transcripts
        self.last_refusal_was_typed = False
        # Per thread (a service runs turns in several threads at once): the tool server
        # this thread built, the session it is serving turns on now, and the session it
        # keeps open between synchronous turns (run_turn(serve=True)).
        self._local = threading.local()
        self._kept: list[_KeptSession] = []
        self._kept_lock = threading.Lock()
        self._closer = weakref.finalize(self, _close_kept, self._kept)

    @property
    def _served(self) -> tuple[ToolHost, ToolSession] | None:
        served: tuple[ToolHost, ToolSession] | None = getattr(self._local, "served", None)
        return served

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Turns run inside share one MCP server and one client session (an
        underwriter that can drive a session it is handed, :class:`DrivesSession`):
        the server is bound to each turn's case for that turn only
        (:class:`~credit.tools.server.ToolHost`). Outside, each turn opens its own.
        Each thread builds its server once and keeps it (a thread runs one turn at a
        time, and the host refuses to serve a second case while it serves one)."""
        local = self._local
        if getattr(local, "served", None) is not None:
            yield
            return
        host = _thread_host(local)
        async with open_session(host.server) as session:
            local.served = (host, session)
            try:
                yield
            finally:
                local.served = None

    def _kept_session(self) -> _KeptSession:
        kept: _KeptSession | None = getattr(self._local, "kept", None)
        if kept is None:
            with self._kept_lock:
                if not self._closer.alive:
                    raise RuntimeError("the runtime was closed: no turn runs on it")
                # A server's worker threads come and go (anyio ends one idle for 10 s):
                # the sessions of threads that have ended are ended with them.
                for ended in [k for k in self._kept if not k.thread.is_alive()]:
                    self._kept.remove(ended)
                    ended.close()
                kept = self._local.kept = _KeptSession(self._local)
                self._kept.append(kept)
        return kept

    def close(self) -> None:
        """End the sessions kept open for synchronous turns (each thread's) and close
        their loops; a served turn asked for afterwards is refused (a turn that opens
        its own session still runs). Also done when the runtime is collected."""
        with self._kept_lock:
            self._closer()

    async def _run(self, underwriter: Underwriter, tools: CaseTools, context: TurnContext) -> str:
        served = self._served
        if served is not None and drives_session(underwriter):
            host, session = served
            with host.bound(tools):
                return await underwriter.drive(session)
        return await underwriter.run(tools, context)

    def methodology_for(self, underwriter: Underwriter, policy: Policy) -> str:
        """The system prompt of a turn under ``policy``."""
        if self.methodology is not None:
            return self.methodology
        if writes_methodology(underwriter):
            return underwriter.methodology_for(policy)
        return SPARK_METHODOLOGY

    def _transcript_fields(self, underwriter: Underwriter, turn: str) -> dict[str, Any]:
        """Store the turn's transcript, if the underwriter kept one; the fields that
        name it on the ``underwriter.turn`` entry."""
        if not transcribed(underwriter):
            return {}
        transcript = underwriter.take_transcript(turn)
        if transcript is None:
            return {}
        try:
            stored = write_transcript(transcripts_folder(self.transcripts), transcript)
        except (OSError, JournalIntegrityError) as err:  # the turn is journaled all the same
            return {"transcriptError": f"{type(err).__name__}: {err}"}
        return {"transcriptSha256": stored.sha256, "transcript": stored.name}

    def _context_document(
        self, case_id: str, tools: CaseTools, methodology: str
    ) -> Mapping[str, Any]:
        document = self.store.get_case(case_id)
        if document is None:
            raise InputError("no case with this id has been taken in", case_id=case_id)
        return {
            "methodology": methodology,
            "tools": list(TOOL_NAMES),
            "caseId": case_id,
            "asOf": document["asOf"],
            "application": document["application"],
            "creditReport": document["creditReport"],
            "policy": policy_document(tools.policy()),
        }

    async def turn(self, case_id: str, underwriter: Underwriter) -> TurnResult:
        """Run one underwriter turn on a case taken in by intake."""
        if self.store.get_case(case_id) is None:  # no case to journal a failure against
            raise InputError("no case with this id has been taken in", case_id=case_id)
        turn = uuid.uuid4().hex
        governor = Governor(
            self.store, case_id, underwriter=underwriter.name, guard=self.guard, turn=turn
        )
        tools = CaseTools(self.store, case_id, governor, self.registry)
        started = False
        audited = ""
        try:  # any failure of the turn, its context seam included, is journaled once
            methodology = self.methodology_for(underwriter, tools.policy())
            context_doc = self._context_document(case_id, tools, methodology)
            context = TurnContext(case_id, str(context_doc["asOf"]), methodology, turn)
            started = governor.check_context(
                context_doc, policy_sha256=str(context_doc["policy"]["sha256"])
            ).upheld
            if started:
                audited = await self._run(underwriter, tools, context)
        except Exception as err:
            return self._failed(
                case_id,
                underwriter.name,
                turn,
                governor,
                tools,
                err,
                started=started,
                transcript=self._transcript_fields(underwriter, turn) if started else {},
            )
        verdict = governor.verdict()
        refusal = build_refusal_surface(verdict)
        surface = refusal if refusal is not None else audited
        self.store.append(
            case_id,
            UNDERWRITER_TURN,
            {
                "underwriter": underwriter.name,
                "turn": turn,
                "started": started,
                "surface": audited,
                "surfaceSha256": sha256_hex(audited.encode("utf-8")),
                "refused": refusal is not None,
                "toolCalls": list(tools.calls),
                **_decision_named(governor.committed),
                "verdict": _verdict_wire(verdict),
                **(self._transcript_fields(underwriter, turn) if started else {}),
            },
        )
        if refusal is not None:
            self.store.append(
                case_id,
                SAFETY_REFUSAL,
                {
                    "underwriter": underwriter.name,
                    "turn": turn,
                    "boundaries": list(verdict.violated),
                    "surface": refusal,
                },
            )
        self.last_refusal_was_typed = refusal is not None
        if refusal is None and governor.committed is None:
            failure = "the underwriter ended its turn without recording a decision"
            self.store.append(
                case_id,
                TURN_FAILED,
                {
                    "stage": "underwriter",
                    "underwriter": underwriter.name,
                    "turn": turn,
                    "error": failure,
                    "errorType": "NoDecisionRecorded",
                    "message": failure,
                    "input": False,
                    "toolCalls": list(tools.calls),
                },
            )
            return TurnResult(
                case_id=case_id,
                underwriter=underwriter.name,
                turn=turn,
                surface=surface,
                audited_surface=audited,
                refused=False,
                verdict=verdict,
                started=started,
                decision_entry=None,
                redactions=tuple(governor.redactions),
                failure=failure,
            )
        return TurnResult(
            case_id=case_id,
            underwriter=underwriter.name,
            turn=turn,
            surface=surface,
            audited_surface=audited,
            refused=refusal is not None,
            verdict=verdict,
            started=started,
            decision_entry=governor.committed,
            redactions=tuple(governor.redactions),
        )

    def _failed(
        self,
        case_id: str,
        name: str,
        turn: str,
        governor: Governor,
        tools: CaseTools,
        err: Exception,
        *,
        started: bool,
        transcript: Mapping[str, Any],
    ) -> TurnResult:
        verdict = governor.verdict()
        self.store.append(
            case_id,
            UNDERWRITER_TURN,
            {
                "underwriter": name,
                "turn": turn,
                "started": started,
                "error": f"{type(err).__name__}: {err}",
                "toolCalls": list(tools.calls),
                **_decision_named(governor.committed),
                "verdict": _verdict_wire(verdict),
                **transcript,
            },
        )
        payload = failure_payload("underwriter", err)
        payload.update(underwriter=name, turn=turn, toolCalls=list(tools.calls))
        if governor.committed is None:  # a decision recorded before the error stands
            self.store.append(case_id, TURN_FAILED, payload)
        return TurnResult(
            case_id=case_id,
            underwriter=name,
            turn=turn,
            surface="",
            audited_surface="",
            refused=False,
            verdict=verdict,
            started=started,
            decision_entry=governor.committed,
            redactions=tuple(governor.redactions),
            error=err,
            failure=None if governor.committed is not None else str(payload["error"]),
        )

    def run_turn(
        self, case_id: str, underwriter: Underwriter, *, serve: bool = False
    ) -> TurnResult:
        """:meth:`turn` for synchronous callers (runs its own event loop). ``serve``:
        an underwriter that drives a session it is handed (:class:`DrivesSession`) is
        handed the session this thread keeps open on its tool server (built once per
        thread: the service's workers, :class:`_KeptSession`), instead of opening its
        own."""

        async def main() -> TurnResult:
            return await self.turn(case_id, underwriter)

        if serve and drives_session(underwriter):
            return self._kept_session().run(main)
        return anyio.run(main)


def failure_payload(stage: str, err: BaseException) -> dict[str, Any]:
    """The ``turn.failed`` payload for an error at a stage (underwriter, review,
    notice): what it was, and the field and rule it names when it is one of ours."""
    message = getattr(err, "message", None) or str(err) or type(err).__name__
    payload: dict[str, Any] = {
        "stage": stage,
        "error": f"{type(err).__name__}: {message}",
        "errorType": type(err).__name__,
        "message": str(message),
        # The case's own content stopped it (a term the policy does not offer, a key
        # factor code not in the catalogue): bad input, named on every run.
        "input": isinstance(err, InputError),
    }
    if isinstance(err, CreditError):
        for name in ("field", "rule", "check", "boundary_id"):
            value = getattr(err, name, None)
            if isinstance(value, str):
                payload[name if name != "boundary_id" else "boundary"] = value
    if isinstance(err, ModelTurnError):  # a model's turn: everything it says, JSON-safe
        payload["reason"] = err.reason
        payload["detail"] = err.record()
    return payload


def _verdict_wire(verdict: SafetyVerdict) -> list[dict[str, Any]]:
    return [
        {
            "boundary": r.boundary_id,
            "runtimeCheckable": r.runtime_checkable,
            "upheld": r.upheld,
            "detail": r.detail,
        }
        for r in verdict.results
    ]


def _decision_named(committed: Entry | None) -> dict[str, Any]:
    """How a turn's entry names the decision it recorded (:mod:`credit.journal.naming`):
    by its ``decisionId``; ``{"decisionId": None}`` when it recorded none."""
    if committed is None:
        return {DECISION_ID: None}
    return decision_ref(committed.seq, committed.payload)
