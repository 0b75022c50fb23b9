"""The main job: the governed pipeline over a batch of cases.

Orchestration (spec, "Orchestration"), each step journaled:

1. **Intake (Onramp)** validates each case, keeps monitoring data apart and moves any
   prohibited-basis field out of the underwriter's reach.
2. **The underwriter (Spark)** decides each case through the governed MCP tools; the
   commit seam records the decision as *held* (or refuses it with a typed refusal).
3. **The Keystone gate** runs Equipoise (fair lending) and Backstop (model risk) on
   every held decision and releases it, or keeps it held for a person.
4. **Notices.** Each released decline or counteroffer gets its notice rendered from
   the recorded decision, dated the day it is sent, verified (V1-V8) and sent; one
   that is not exactly the verified notice is blocked with a typed refusal
   (``notice.unverified_send``) and goes to a person.
5. **Ethics** commitments are evaluated and recorded, never refused on.

Steps 3 and 4 are :class:`credit.casework.CaseWork`'s: every run first finishes what a
crash left half way anywhere in the journal. Every case ends at a final action or as
exactly one open work item for a person (:mod:`credit.lifecycle`): a referral, a held
decision, a refused or failed turn, a blocked notice. Resumable: every step first reads
the journal, so a run killed at any point and started again finishes the batch without
deciding any case twice or losing one that was decided. The pipeline holds no domain
logic of its own: it sequences the core.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio

from credit import kinds
from credit.cases import iter_documents
from credit.casework import CaseWork
from credit.clock import Clock
from credit.errors import InputError
from credit.governance.equipoise import ComparisonPool
from credit.governance.keystone import Keystone
from credit.governance.onramp import intake
from credit.governance.safety import (
    ethics_context_from_journal,
    evaluate_ethics,
    journal_ethics,
)
from credit.guardrails.verifier import Verifier
from credit.journal.base import (
    ChainReport,
    JournalError,
    Store,
    conflict_attempts,
)
from credit.journal.verified import keep_tree, resume_kept_tree, verify_since_mark
from credit.lifecycle import CaseLife
from credit.notices.outbox import Outbox
from credit.policy import PolicyRegistry
from credit.underwriters.runtime import SparkRuntime, Underwriter

__all__ = [
    "GROUP_SIZE",
    "NOTICE_BLOCKED",
    "NOTICE_SENT",
    "NOTICE_VERIFIED",
    "BatchLine",
    "FailedCase",
    "Pipeline",
    "RunSummary",
    "read_batch",
    "stream_batch",
]

NOTICE_VERIFIED: Final = kinds.NOTICE_VERIFIED
NOTICE_SENT: Final = kinds.NOTICE_SENT
NOTICE_BLOCKED: Final = kinds.NOTICE_BLOCKED
ETHICS_FINDING: Final = kinds.ETHICS_FINDING

Progress = Callable[[str, int, int], None]  # (phase, done, total)

# Cases per group commit: each group is one transaction, so a group is kept to a
# bounded amount of work; a crash loses at most the group under way.
GROUP_SIZE: Final = 250

# The stages a run counts for its progress, and how often the parent of a run's
# workers reads their counts (seconds).
_PHASES: Final = ("intake", "underwrite", "review", "ethics")
PROGRESS_EVERY_S: Final = 0.2

# While a run works, the garbage collector's youngest generation is collected every
# YOUNG_COLLECTION container allocations instead of Python's 700, and what was alive
# when the run began (modules, the policies, the catalogue, schemas) is frozen out of
# its walks: a run allocates a great many short-lived objects, and the collector
# walked them about 250 times per 1,000 cases, 6-8% of the run's CPU (0.3-0.46 s of
# about 5 s here), 0.02 s with these settings. Restored when the run ends.
YOUNG_COLLECTION: Final = 50_000


@contextmanager
def _batch_collection() -> Iterator[None]:
    """The collector's settings for a run (:data:`YOUNG_COLLECTION`), restored after."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


@dataclass(frozen=True, slots=True)
class BatchLine:
    """One line of a batch: the raw case, or why it could not be read as JSON."""

    line: int
    raw: Any
    error: InputError | None = None


def read_batch(path: Path | str) -> list[BatchLine]:
    """Read a ``.jsonl`` batch (or one ``.json`` case) as raw documents, exact decimals,
    with the one case reader (:func:`credit.cases.iter_documents`): a line it refuses
    (not UTF-8, not strict JSON, too long or too deep) is a BatchLine with its error,
    and every other line is still read."""
    return [BatchLine(d.line, d.raw, d.error) for d in iter_documents(path)]


def stream_batch(path: Path | str) -> tuple[Iterator[BatchLine], int]:
    """The same lines as :func:`read_batch`, read as they are needed (a run holds one
    group at a time, so its memory does not grow with the file), with the number of
    lines for progress. A file that cannot be opened is an InputError naming it, now."""
    path = Path(path)
    total = 0
    last = b"\n"
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                total += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", source=str(path)) from None
    lines = (BatchLine(d.line, d.raw, d.error) for d in iter_documents(path))
    if last != b"\n":
        total += 1  # the last line has no newline
    return lines, total if path.suffix.lower() != ".json" else 1


@dataclass(frozen=True, slots=True)
class FailedCase:
    """A case of the batch whose underwriter turn, review or notice step could not
    complete for a reason other than its own content (an underwriter that raised, a
    policy edge no rule decides, a review or a send that broke): journaled once as
    ``turn.failed``, a ``failed`` work item for a credit officer, never retried. At the
    ``intake`` stage (intake itself broke on the line) nothing was journaled."""

    case_id: str | None
    stage: str
    error: str
    line: int | None = None
    source: str | None = None

    def __str__(self) -> str:
        where = [p for p in (self.source, f"line {self.line}" if self.line else None) if p]
        if self.case_id is not None:
            where.append(f"case {self.case_id}")
        then = (
            "not taken in, nothing journaled"
            if self.stage == "intake"
            else "a failed work item for a credit officer (credit queue)"
        )
        return f"{', '.join(where)}: the {self.stage} could not complete ({self.error}); {then}"


@dataclass(slots=True)
class RunSummary:
    """What a run did, counted from the journal for the batch's cases.

    ``failures`` is the batch's bad input, in line order: lines not read or not taken
    in, and cases whose own content stopped their turn (named again on every run while
    the case stands failed). ``failed_cases`` are the batch's cases that stand failed
    for any other reason."""

    cases: int = 0
    taken_in: int = 0
    resumed: int = 0
    failures: list[InputError] = field(default_factory=list)
    failed_cases: list[FailedCase] = field(default_factory=list)
    outcomes: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    states: Counter[str] = field(default_factory=Counter)
    items: Counter[str] = field(default_factory=Counter)
    decided: int = 0
    refused: int = 0
    failed: int = 0
    held: int = 0
    released: int = 0
    rejected: int = 0
    notices_verified: int = 0
    notices_sent: int = 0
    notices_blocked: int = 0
    ethics_findings: int = 0
    chain: ChainReport | None = None
    checkpoint: Path | None = None

    @property
    def final(self) -> int:
        """Cases at a final action (approved, notified, withdrawn)."""
        return sum(n for s, n in self.states.items() if s in ("approved", "notified", "withdrawn"))

    @property
    def open_items(self) -> int:
        return sum(self.items.values())

    def absorb(self, other: RunSummary) -> None:
        """Add what ``other`` counted (a group's intake, a worker's share of the
        batch) to this summary; its chain and checkpoint are not taken."""
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failures.extend(other.failures)
        self.failed_cases.extend(other.failed_cases)
        self.outcomes.update(other.outcomes)
        self.states.update(other.states)
        self.items.update(other.items)


# RunSummary's counts, added up by RunSummary.absorb.
_COUNTS: Final = (
    "cases",
    "taken_in",
    "resumed",
    "decided",
    "refused",
    "failed",
    "held",
    "released",
    "rejected",
    "notices_verified",
    "notices_sent",
    "notices_blocked",
    "ethics_findings",
)


@dataclass
class _Seen:
    """Where a run saw its cases stand: each one's latest entry's seq (compact: a
    run's cases may be many) and those with system work (few)."""

    last_seqs: array[int] = field(default_factory=lambda: array("q"))
    pending: set[str] = field(default_factory=set)


class Pipeline:
    """Intake, underwriter, Keystone, notices and ethics over one store."""

    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        *,
        registry: PolicyRegistry | None = None,
        underwriter: Underwriter | None = None,
        keystone: Keystone | None = None,
        verifier: Verifier | None = None,
        clock: Clock | None = None,
        progress: Progress | None = None,
        checkpoints: Path | None = None,
        group_size: int = GROUP_SIZE,
    ) -> None:
        from credit.underwriters.rules import RulesUnderwriter

        self.checkpoints = checkpoints
        self.store = store
        self.outbox = outbox
        self.registry = registry or PolicyRegistry.bundled()
        self.underwriter: Underwriter = underwriter or RulesUnderwriter(self.registry)
        self.runtime = SparkRuntime(store, registry=self.registry)
        self.keystone = keystone or Keystone(store, registry=self.registry)
        self.work = CaseWork(
            store,
            outbox,
            registry=self.registry,
            keystone=self.keystone,
            verifier=verifier,
            clock=clock,
        )
        self._progress = progress
        if group_size < 1:
            raise ValueError(f"group_size must be at least 1, not {group_size}")
        self.group_size = group_size
        self._total = self._taken = self._underwritten = self._reviewed = self._ethics = 0

    def _tick(self, phase: str, done: int, total: int) -> None:
        if self._progress is not None:
            self._progress(phase, done, total)

    # ------------------------------------------------------------------ the stages

    def _take_in(
        self,
        lines: Sequence[BatchLine],
        source: str | None,
        summary: RunSummary,
        seen: dict[str, int],
    ) -> dict[str, int]:
        """Stage 1: intake. Bad cases are listed and skipped; nothing recorded changes.
        Returns these lines' case ids, in order, with their line numbers (``seen``: the
        ids of the batch before these lines, so that a repeated id is refused)."""
        case_ids: dict[str, int] = {}
        for item in lines:
            summary.cases += 1
            self._taken += 1
            self._tick("intake", self._taken, self._total)
            if item.error is not None:
                summary.failures.append(item.error)
                continue
            try:
                result = intake(item.raw, self.store, registry=self.registry)
            except InputError as err:
                summary.failures.append(err.located(line=item.line, source=source))
                continue
            except Exception as err:  # a bug, never the end of the batch: named, no trace
                error = f"{type(err).__name__}: {err}"
                failed = FailedCase(_case_id_of(item.raw), "intake", error, item.line, source)
                summary.failed_cases.append(failed)
                continue
            if result.case_id in seen or result.case_id in case_ids:
                summary.failures.append(
                    InputError(
                        "the same case id appears twice in the batch",
                        case_id=result.case_id,
                        field="caseId",
                        line=item.line,
                        source=source,
                    )
                )
                continue
            case_ids[result.case_id] = item.line
            if result.taken_in:
                summary.taken_in += 1
            else:
                summary.resumed += 1
        return case_ids

    async def _underwrite(self, case_ids: Sequence[str]) -> list[InputError]:
        """Stage 2: one governed underwriter turn per case taken in and not yet decided.

        A turn that cannot complete is journaled once as a failed turn (a person takes
        the case over) and is never retried; one that failed on the case's own content
        (a term the policy does not offer, say) is bad input too: its error is returned
        so the caller can name it. The other cases go on."""
        errors: list[InputError] = []
        for case_id in case_ids:
            if self.work.life(case_id).state == "received":
                result = await self.runtime.turn(case_id, self.underwriter)
                if isinstance(result.error, InputError):
                    errors.append(result.error)
            self._underwritten += 1
            self._tick("underwrite", self._underwritten, self._total)
        return errors

    def finish(self) -> dict[str, CaseLife]:
        """Stages 3 and 4 for every case in the journal: the Keystone review of each
        decision awaiting it, and the notice of each released decline or
        counteroffer (:meth:`credit.casework.CaseWork.finish_pending`: the journal
        read a page of cases at a time). The lives of the cases that had such work."""
        return self.work.finish_pending()

    def _review(self, case_ids: Sequence[str], pool: ComparisonPool) -> list[str]:
        """Stage 3 for these cases (:meth:`credit.casework.CaseWork.finish`, the notice
        left for later); returns the cases whose released decision awaits its notice."""
        awaiting: list[str] = []
        for case_id in case_ids:
            if self.work.finish(case_id, pool=pool, notify=False).system_work == "notice":
                awaiting.append(case_id)
            self._reviewed += 1
            self._tick("review", self._reviewed, self._total)
        return awaiting

    def _notify(self, case_ids: Sequence[str]) -> None:
        """Stage 4, after the group's release is durable: the group's notices rendered
        and verified, their verifications journaled in one commit, written to the
        outbox, and their sendings journaled in one more
        (:meth:`credit.casework.CaseWork.send_notices`: a crash between the steps
        loses nothing and sends nothing twice)."""
        self.work.send_notices(case_ids)

    def record_ethics(self, case_ids: Sequence[str]) -> None:
        """Stage 5: evaluate the ethics pack on each decided case once; recorded only."""
        today = self.work.today()
        for case_id in case_ids:
            self._ethics += 1
            self._tick("ethics", self._ethics, self._total)
            if self.store.decision_entry(case_id) is None:
                continue
            if self.store.entries(case_id, kinds=[ETHICS_FINDING]):
                continue
            sent = self.store.entries(case_id, kinds=[NOTICE_SENT])
            context = ethics_context_from_journal(
                self.store,
                case_id,
                notice_text=None,
                notified_on=today if sent else None,
            )
            journal_ethics(self.store, evaluate_ethics(context))

    # ------------------------------------------------------------------ the job

    def run(
        self,
        lines: Iterable[BatchLine],
        *,
        source: str | None = None,
        total: int | None = None,
    ) -> RunSummary:
        """The batch, a group of cases at a time (``group_size``, :data:`GROUP_SIZE`):
        each group is taken in and underwritten in one transaction with one durable
        commit (``store.group_commit``, deferred: :meth:`_decide`), then reviewed in
        the next (:meth:`_reviewed_group`), so a crash loses at most the group under
        way, which the next run does again (nothing of it was recorded; a decision
        committed and not yet reviewed is reviewed when the next run starts). Then
        the released declines and counteroffers of the group get their notices (a notice
        is sent only once its release is durable): verified in one commit, sent, the
        sendings journaled in another; and the group's ethics findings are recorded in
        one more commit. ``lines`` may be any iterable (a file
        read as it goes): the run holds one group at a time. ``total``: the number of
        lines, for progress."""
        if total is None:
            total = len(lines) if isinstance(lines, Sized) else 0
        self._total = total
        resume_kept_tree(self.store)  # the tree as the last run left it, not grown again
        self.finish()  # what an interrupted run left half way is finished first
        summary, standing, pool = self._share(lines, source)
        return self._close(summary, standing, pool.keep)

    def run_workers(
        self,
        batch: Callable[[], Iterable[BatchLine]],
        workers: int,
        *,
        source: str | None = None,
        total: int | None = None,
    ) -> RunSummary:
        """The batch over ``workers`` processes on the one journal (``credit run
        --workers N``): each reads the batch (``batch()``, called once in each) and
        takes the lines whose case id falls to it (:func:`share_of`, so a case and
        any repeat of its id go to one worker), and runs them as :meth:`run` does,
        its group commits deferred (:meth:`credit.journal.sql.SqlStore.group_commit`):
        a worker works without the journal's write lock and takes it only to
        sequence and commit a group, so the workers' work overlaps. Before they start,
        what an interrupted run left is finished; after they end, the chain is
        verified, the mark of pending work kept from what every worker saw, and a
        checkpoint signed, as :meth:`run` does, over the tree the workers grew as they
        committed (:meth:`~credit.journal.base.Store.resume_tree`: the journal's leaves
        are not read again for it). Each worker keeps its comparison pool
        (the last one kept stands); a chain that does not verify drops them.

        A worker that stops (an error, a kill) loses at most its group under way, as
        a run does; the others finish their shares, then a JournalError names it, and
        a rerun finishes the batch. One worker is :meth:`run` itself. Needs a journal
        every process can open (a SQLite file, PostgreSQL); the store is closed before
        the workers start, and opened again after."""
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        if workers == 1:
            return self.run(batch(), source=source, total=total)
        if not self.store.shared:
            raise JournalError(
                f"{workers} workers need a journal every process can open (a SQLite file "
                "or PostgreSQL), not one in memory"
            )
        self._total = total or 0
        resume_kept_tree(self.store)
        self.finish()
        self.store.close()  # no connection of this process crosses into a worker
        context = multiprocessing.get_context("fork")
        progress: Any = context.Array("q", workers * len(_PHASES), lock=False)
        running: list[tuple[int, Any, Any]] = []
        for worker in range(workers):
            receive, send = context.Pipe(duplex=False)
            process = context.Process(
                target=self._worker,
                args=(batch, worker, workers, source, send, progress),
                name=f"credit-run-worker-{worker}",
            )
            process.start()
            send.close()
            running.append((worker, process, receive))
        summary, standing, stopped = RunSummary(), _Seen(), []
        tree: tuple[int, tuple[bytes, ...]] = (0, ())  # the largest a worker grew
        for worker, process, receive in running:
            while not receive.poll(PROGRESS_EVERY_S):
                self._tick_workers(progress, workers)
            try:
                answer = receive.recv()
            except EOFError:  # it died before it could answer (a kill)
                answer = None
            process.join()  # its pipe closes as it dies, before it is reaped
            if answer is None:  # how it ended, once reaped (before, it reads None)
                answer = ("stopped", f"it ended with exit code {process.exitcode}")
            if answer[0] == "done":
                part, last_seqs, pending, grown = answer[1:]
                summary.absorb(part)
                standing.last_seqs.extend(last_seqs)
                standing.pending.update(pending)
                tree = max(tree, grown, key=lambda t: t[0])
            else:
                stopped.append(f"worker {worker + 1} of {workers}: {answer[1]}")
        self._tick_workers(progress, workers)
        if stopped:
            raise JournalError(
                "; ".join(stopped) + ". What the workers committed is kept: run the batch "
                "again to finish it"
            )
        # The tree the last worker to commit grew as it went: the checkpoint reads only
        # the leaves after it, not the whole journal again.
        self.store.resume_tree(*tree)
        return self._close(summary, standing, None)

    def _worker(
        self,
        batch: Callable[[], Iterable[BatchLine]],
        worker: int,
        workers: int,
        source: str | None,
        send: Any,
        progress: Any,
    ) -> None:
        """One worker of :meth:`run_workers` (in its own process): its share of the
        batch, its pool kept, and what it counted sent back."""
        base = worker * len(_PHASES)

        def tick(phase: str, done: int, _total: int) -> None:
            progress[base + _PHASES.index(phase)] = done

        self._progress = tick
        try:
            lines = (line for line in batch() if share_of(line, workers) == worker)
            summary, standing, pool = self._share(lines, source)
            pool.keep()
            answer: tuple[Any, ...] = (
                "done",
                summary,
                standing.last_seqs,
                standing.pending,
                self.store.tree_frontier(),
            )
        except BaseException as err:  # named to the parent, which stops the run
            answer = ("stopped", f"{type(err).__name__}: {err}")
        finally:
            self.store.close()
        send.send(answer)
        send.close()

    def _tick_workers(self, progress: Any, workers: int) -> None:
        for at, phase in enumerate(_PHASES):
            done = sum(progress[w * len(_PHASES) + at] for w in range(workers))
            self._tick(phase, done, self._total)

    def _share(
        self, lines: Iterable[BatchLine], source: str | None
    ) -> tuple[RunSummary, _Seen, ComparisonPool]:
        """The groups of ``lines`` through every stage (:meth:`run`): what they
        counted, where their cases stood, and the comparison pool as they left it."""
        self._taken = self._underwritten = self._reviewed = self._ethics = 0
        summary = RunSummary()
        seen: dict[str, int] = {}
        standing = _Seen()
        pool = self.keystone.equipoise.pool()

        async def groups() -> None:
            async with self.runtime.serving():
                for group in _groups(lines, self.group_size):
                    lines_of, stopped = await self._decide(group, source, summary, seen)
                    case_ids = list(lines_of)
                    awaiting = self._reviewed_group(case_ids, pool)
                    self._notify(awaiting)
                    with self.store.group_commit(case_ids):
                        self.record_ethics(case_ids)
                        self.summarise(
                            case_ids, summary, lines=lines_of, source=source, seen=standing
                        )
                    # A case that stands failed is named from its journal entry, the same
                    # words on every run; what is left is a turn whose decision stood
                    # despite its error.
                    named = {f.case_id for f in summary.failures}
                    for err in stopped:
                        if err.case_id not in named:
                            line = lines_of.get(err.case_id or "")
                            summary.failures.append(err.located(line=line, source=source))

        with _batch_collection():
            anyio.run(groups)
        return summary, standing, pool

    def _close(
        self, summary: RunSummary, standing: _Seen, keep_pool: Callable[[], bool] | None
    ) -> RunSummary:
        """The run's end: its failures and failed cases in line order (whichever
        worker met them), the chain verified (from the entry the last run's walk
        reached: :func:`credit.journal.verified.verify_since_mark`) and, if it
        verifies, the mark of pending work and the pool kept, a checkpoint signed and
        the tree kept for the next run (a chain that does not verify keeps no mark:
        those already kept are dropped)."""
        summary.failures.sort(key=lambda f: f.line if f.line is not None else 0)
        summary.failed_cases.sort(key=lambda f: f.line if f.line is not None else 0)
        summary.chain = verify_since_mark(self.store)
        if not summary.chain.ok:
            if keep_pool is None:  # the workers kept their pools from what they read
                self.store.drop_marks()
            return summary
        # Where the batch left its cases, and the pool as it left it: the next run and
        # service worker read only what came after.
        self.work.keep_pending(array("q", sorted(standing.last_seqs)), standing.pending)
        if keep_pool is not None:
            keep_pool()
        if self.checkpoints is not None:
            # The batch is committed: sign the tree head, so every entry is covered.
            summary.checkpoint = self.store.checkpoint(self.checkpoints)
        keep_tree(self.store)
        return summary

    async def _decide(
        self,
        group: Sequence[BatchLine],
        source: str | None,
        summary: RunSummary,
        seen: dict[str, int],
    ) -> tuple[dict[str, int], list[InputError]]:
        """Stages 1 and 2 for a group of lines, in one deferred group commit (the work
        done without the journal's write lock, the entries sequenced at its commit),
        done again from the start if another writer moved one of its cases meanwhile
        (:class:`~credit.journal.base.GroupConflictError`: nothing of it was written,
        nothing of it counted), at most ``CONFLICT_ATTEMPTS`` times in all before the run
        stops: a worker owns its cases, so only a person acting on one of them at the
        same instant, or a second run of the same batch, moves one. Returns its cases'
        lines, and the errors of turns that failed on a case's own content."""
        ids = [c for c in map(_case_id_of, (g.raw for g in group)) if c is not None]
        counters = (self._taken, self._underwritten)
        for attempt in conflict_attempts():
            with attempt, self.store.group_commit(ids, deferred=True):
                self._taken, self._underwritten = counters  # what an attempt counted
                part = RunSummary()
                lines_of = self._take_in(group, source, part, seen)
                stopped = await self._underwrite(list(lines_of))
        summary.absorb(part)
        seen.update(lines_of)
        return lines_of, stopped

    def _reviewed_group(self, case_ids: Sequence[str], pool: ComparisonPool) -> list[str]:
        """Stage 3 for a group's cases, in one deferred group commit after their
        decisions are committed (so Equipoise compares each with committed decisions
        only, and its review depends on the journal alone), done again if another
        writer moved one of its cases meanwhile."""
        reviewed = self._reviewed
        for attempt in conflict_attempts():
            with attempt, self.store.group_commit(case_ids, deferred=True):
                self._reviewed = reviewed  # what an attempt counted
                done = self._review(case_ids, pool)
        return done

    def summarise(
        self,
        case_ids: Iterable[str],
        summary: RunSummary,
        *,
        lines: Mapping[str, int] | None = None,
        source: str | None = None,
        seen: _Seen | None = None,
    ) -> RunSummary:
        """Count the batch's cases by where they stand (:mod:`credit.lifecycle`), and
        name each that stands failed (``lines``: each case's line in the batch;
        ``seen``: where to note each case's latest entry and whether it had system
        work, for the run's mark of pending work)."""
        lines = lines or {}
        named = {f.case_id for f in summary.failures if f.case_id is not None}
        for case_id in case_ids:
            entries = self.store.entries(case_id)
            life = self.work.life(case_id)
            if life.state == "failed" and life.failed is not None and case_id not in named:
                _name_failure(summary, case_id, life.failed.payload, lines.get(case_id), source)
            summary.states[life.state] += 1
            if seen is not None:
                seen.last_seqs.append(life.last_seq)
                if life.system_work is not None:
                    seen.pending.add(case_id)
            if life.item is not None:
                summary.items[life.item.kind] += 1
            decision = life.decision
            if decision is not None:
                summary.decided += 1
                band = decision.wire.get("scoreBand")
                summary.outcomes[(str(decision.product), str(band), str(decision.decision))] += 1
                gate = life.gate
                summary.released += gate.released is not None
                summary.rejected += gate.rejected is not None
                summary.held += gate.released is None and gate.rejected is None
            summary.refused += life.state == "refused"
            summary.failed += life.state == "failed"
            summary.notices_verified += any(
                e.kind == NOTICE_VERIFIED and e.payload.get("passed") is True for e in entries
            )
            summary.notices_sent += life.sent is not None
            summary.notices_blocked += life.state == "notice-blocked"
            summary.ethics_findings += sum(e.kind == ETHICS_FINDING for e in entries)
        return summary


def _name_failure(
    summary: RunSummary,
    case_id: str,
    payload: Mapping[str, Any],
    line: int | None,
    source: str | None,
) -> None:
    """A failed case named from its ``turn.failed`` entry: bad input when its own
    content stopped it, a failed case otherwise."""
    stage = str(payload.get("stage", "turn"))
    if payload.get("input") is True:
        message = str(payload.get("message") or payload.get("error") or "bad input")
        field_name = payload.get("field")
        summary.failures.append(
            InputError(
                message,
                case_id=case_id,
                field=field_name if isinstance(field_name, str) else None,
                line=line,
                source=source,
            )
        )
    else:
        error = str(payload.get("error") or "no reason recorded")
        summary.failed_cases.append(FailedCase(case_id, stage, error, line, source))


def share_of(line: BatchLine, workers: int) -> int:
    """The worker (0 to ``workers - 1``) that takes a line of the batch: by a stable
    hash (CRC-32) of its case id, so every line of one case id goes to one worker; a
    line without one (unreadable, say) goes to the first."""
    case_id = _case_id_of(line.raw)
    return 0 if case_id is None else zlib.crc32(case_id.encode("utf-8")) % workers


def _groups(lines: Iterable[BatchLine], size: int) -> Iterator[list[BatchLine]]:
    """The lines, ``size`` at a time, read as they are needed."""
    it = iter(lines)
    while group := list(itertools.islice(it, size)):
        yield group


def _case_id_of(raw: Any) -> str | None:
    value = raw.get("caseId") if isinstance(raw, Mapping) else None
    return value if isinstance(value, str) else None
