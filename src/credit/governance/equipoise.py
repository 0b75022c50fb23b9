"""Equipoise: the fair-lending review (Orchestration, "Decision reviewed by Equipoise").

Equipoise legitimately reads government-monitoring information (12 CFR 1002.13)
through ``store.get_monitoring``; it runs without the fair-lending guard, and nothing
it reads goes back to the underwriter. Its parameters are data
(``data/fair-lending-review.yaml``), never constants here.

Per decision (:meth:`Equipoise.review`), each finding below **holds** the decision for
the fair-lending reviewer:

* ``equipoise.prohibited_basis_cited``: a credit factor or a policy-basis entry cites a
  prohibited basis or a proxy for one (whole words, :func:`credit.fairness_terms
  .find_prohibited`).
* ``equipoise.comparative_disparity``: the comparative file review. The decision is
  less favourable (``outcomeOrder``) than one already recorded for an applicant in
  another group of a compared attribute (race, ethnicity, sex, age band) whose file is
  equal or weaker on every factor the policy decides on (``comparative.factors``: the
  score, DTI, LTV, the amount or line asked, the term, existing obligations, income,
  collateral, the file's depth and disputes; each with its direction and how close
  counts as equal). The finding names both cases and the factors. Referrals are
  compared with nothing (``comparative.excludedOutcomes``): a referral is a decision not
  yet taken. The policy's own rules are monotone in every listed factor, so its own
  decisions never trigger this: a hold is a decision the policy would not have made
  (a model's, a person's), or a defect.
* ``equipoise.less_favourable_than_policy``: the decision is less favourable than the
  policy's own derivation for the file (the second line's, :mod:`credit.secondline`):
  a model's or a person's decision that takes from the applicant what the policy gives.
* ``equipoise.prohibited_basis_in_data``: the fair-lending guard redacted a
  prohibited-basis term from a value the underwriter was about to read (the data the
  decision stands on carried a basis).
* ``equipoise.decision_unreadable``: the decision cannot be read.

Findings recorded for information (they do not hold): no monitoring data on file, or
monitoring data that cannot be read (no comparative review then).

Per portfolio (:meth:`Equipoise.portfolio`, :mod:`credit.governance.portfolio`): for
each monitoring attribute, each group's approval rate and adverse impact ratio with
seeded bootstrap confidence intervals; a group whose interval lies wholly under the
four-fifths line (0.80) is a finding (``credit fairness``, the console).

Not formalised here: regression-based disparity analysis, intersectional groups, and
proxy methods (BISG) for applicants who did not provide monitoring information.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from credit.errors import CreditError, GovernanceError, InputError
from credit.fairness_terms import ProhibitedTerms, default_prohibited_terms, find_prohibited
from credit.governance.fair_lending import (
    NOT_PROVIDED,
    ComparedFactor,
    FairLendingConfig,
    default_fair_lending_config,
    group_of,
    monitoring_from,
    read_monitoring,
)
from credit.governance.findings import Finding, Review
from credit.governance.portfolio import PortfolioReport, adverse_impact_report, portfolio_rows
from credit.journal.base import Entry, Store
from credit.journal.naming import decision_id_of, decision_ref, names_decision
from credit.kept import Recent
from credit.kinds import DECISION_KINDS, GUARD_REDACTED, KEYSTONE_REJECTED
from credit.models import Case, Decision, MonitoringData, recorded_decision, stored_case
from credit.policy import PolicyRegistry
from credit.secondline import derive

__all__ = ["POOL_FORMAT", "POOL_MARK", "ComparisonPool", "Equipoise", "file_factors"]


_SHOWN = 5  # comparables named in a finding (the count is given in full)
_CACHED = 1024  # parsed files and monitoring records kept, the most recently used
POOL_PAGE: Final = 1000  # journal entries the comparison pool reads at a time
# The mark (Store.mark) the comparison pool is kept under, and the form of what it
# keeps: bump POOL_FORMAT whenever what a row holds, or how it is derived from a file
# (file_factors, _strength, the group codes), changes, so an older mark is not used.
POOL_MARK: Final = "equipoise.pool"
# 1: arrays as base64 of their bytes; 2: of their bytes deflated; 3: with ``changed``
POOL_FORMAT: Final = 3
_INTS: Final = "<i8"
_FLOATS: Final = "<f8"
# The rows of one outcome rank a pool keeps unsorted (a review compares each on every
# factor) before it sorts them into a run (_RankIndex); a review searches each run once
# a factor, so fewer, larger runs cost a review less and an append more.
_RUN: Final = 512


def file_factors(case: Case, decision: Decision) -> dict[str, Decimal | None]:
    """The factors of a file the comparative review can weigh (None: not this
    product's). DTI and LTV are the request's as the decision states them."""
    app, report = case.application, case.credit_report
    requested = app.requested_amount if app.product == "auto" else app.requested_line
    existing = app.monthly_debt_payments * 1200 / app.annual_income
    return {
        "score": Decimal(report.score) if report.score is not None else None,
        "dtiPct": decision.dti_pct,
        "ltvPct": decision.ltv_pct,
        "requested": requested,
        "termMonths": Decimal(app.term_months) if app.term_months is not None else None,
        "existingDebtPct": existing,
        "annualIncome": app.annual_income,
        "vehicleValue": app.vehicle_value,
        "tradelines": Decimal(report.tradelines),
        "historyMonths": Decimal(report.history_months),
        "unresolvedDisputes": Decimal(len(report.unresolved_disputes)),
    }


def _strength(value: Decimal | None, factor: ComparedFactor) -> float:
    """A factor as a strength (higher is stronger); a missing score is the weakest."""
    if value is None:
        return -np.inf if factor.stronger == "higher" else np.inf
    number = float(value)
    return number if factor.stronger == "higher" else -number


@dataclass(slots=True)
class _Rows:
    """Row indices in the order they were added, in an array grown in place."""

    rows: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    size: int = 0

    def add(self, row: int) -> None:
        if self.size == len(self.rows):
            capacity = max(64, 2 * self.size)
            self.rows = _grown(self.rows, capacity, (capacity,))
        self.rows[self.size] = row
        self.size += 1

    def view(self) -> npt.NDArray[np.int64]:
        return self.rows[: self.size]


_Indices = npt.NDArray[np.signedinteger[Any]]  # row indices, int32 or int64


def _index_type(rows: int) -> type[np.signedinteger[Any]]:
    """The narrowest integer type that holds every row index below ``rows``."""
    return np.int32 if rows <= np.iinfo(np.int32).max else np.int64


@dataclass(slots=True)
class _Run:
    """Rows of one outcome rank, sorted once on each factor: ``keys[f]`` the rows'
    strengths on factor ``f`` in ascending order (NaN last, as numpy sorts it),
    ``order[f]`` the rows in that order. The rows a factor's limit admits are a prefix
    of its order (a binary search), so a review reads the shortest such prefix
    rather than every row."""

    rows: npt.NDArray[np.int64]
    keys: npt.NDArray[np.float64]  # (factors, rows)
    order: _Indices  # (factors, rows): 4 bytes a row index while a product has < 2**31

    @classmethod
    def of(cls, rows: npt.NDArray[np.int64], strength: npt.NDArray[np.float64]) -> _Run:
        """The run of ``rows``, sorted a factor at a time (one column sorted in memory
        at once: a merge of n rows holds about 8 bytes a row and factor beside what
        it keeps)."""
        factors = strength.shape[1]
        keys = np.empty((factors, len(rows)), dtype=np.float64)
        order = np.empty((factors, len(rows)), dtype=_index_type(len(strength)))
        for f in range(factors):
            column = strength[rows, f]
            at = np.argsort(column, kind="stable")
            keys[f] = column[at]
            order[f] = rows[at]
        return cls(rows, keys, order)

    def admitted(self, limit: list[float]) -> _Indices:
        """Every row whose strength is within ``limit`` on every factor, and maybe
        others (the caller compares each on every factor): the rows of the shortest
        prefix, a factor's order up to its limit (all the rows when there is no
        factor)."""
        if not limit:
            return self.rows
        keys = self.keys
        best, shortest = 0, len(self.rows)
        for f, most in enumerate(limit):
            # NaN is within no limit and no row is within a NaN limit (numpy sorts NaN
            # last and searches it so): each prefix is then exactly the rows admitted
            k = int(np.searchsorted(keys[f], most, side="right")) if most == most else 0
            if k < shortest:
                best, shortest = f, k
                if not k:
                    break
        return self.order[best, :shortest]


@dataclass(slots=True)
class _RankIndex:
    """The rows added with one outcome rank: the latest few in the order they were
    added (compared one by one), the rest in sorted runs (:class:`_Run`) of doubling
    sizes, merged as a log-structured merge tree merges them: a row is sorted again at
    each of the O(log n) merges it takes part in, and a review binary-searches O(log n)
    runs instead of reading every row."""

    run_size: int
    latest: _Rows = field(default_factory=_Rows)
    runs: list[_Run] = field(default_factory=list)

    @classmethod
    def of(
        cls, rows: npt.NDArray[np.int64], strength: npt.NDArray[np.float64], run_size: int
    ) -> _RankIndex:
        """The index of ``rows`` (in the order added): one run, or the latest few."""
        if len(rows) >= run_size:
            return cls(run_size, runs=[_Run.of(rows, strength)])
        return cls(run_size, latest=_Rows(rows, len(rows)))

    def add(self, row: int, strength: npt.NDArray[np.float64]) -> None:
        self.latest.add(row)
        if self.latest.size >= self.run_size:
            rows = self.latest.view().copy()
            self.latest = _Rows()
            while self.runs and len(self.runs[-1].rows) <= len(rows):
                rows = np.concatenate([self.runs.pop().rows, rows])
            self.runs.append(_Run.of(rows, strength))

    def admitted(self, limit: list[float]) -> list[_Indices]:
        """Every row within ``limit`` on every factor, and maybe others (see
        :meth:`_Run.admitted`), in parts."""
        parts = [run.admitted(limit) for run in self.runs]
        if self.latest.size:
            parts.append(self.latest.view())
        return parts


@dataclass(slots=True)
class _Product:
    """The compared decisions of one product, as arrays grown in place (capacity
    doubled when full), so that adding a decision costs O(1) amortised and a review
    reads the first ``size`` rows without rebuilding anything.

    ``by_rank`` indexes the rows by the outcome rank each was added with (not kept in
    the mark: rebuilt from the ranks when a pool resumes), so a review reads only the
    rows of more favourable outcomes: none at all for the most favourable outcome,
    which most decisions are; and within a rank, only a prefix of each sorted run
    (:class:`_RankIndex`), so a review's cost grows with the logarithm of the pool and
    the rows its file could be compared with, not with every decision ever recorded. A
    row dropped later stays in its rank's index with rank -1 in the arrays, and the
    comparison's own test of the rank leaves it out. ``run_size``: the rows a rank
    keeps unsorted before it sorts them into a run."""

    case_ids: list[str] = field(default_factory=list)
    size: int = 0
    seq: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rank: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    strength: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    groups: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    by_rank: dict[int, _RankIndex] = field(default_factory=dict)
    run_size: int = _RUN

    def append(
        self, case_id: str, seq: int, rank: int, strength: list[float], groups: list[int]
    ) -> int:
        """Add a row; returns its index."""
        if self.size == len(self.seq):
            capacity = max(64, 2 * self.size)
            self.seq = _grown(self.seq, capacity, (capacity,))
            self.rank = _grown(self.rank, capacity, (capacity,))
            self.strength = _grown(self.strength, capacity, (capacity, len(strength)))
            self.groups = _grown(self.groups, capacity, (capacity, len(groups)))
        row = self.size
        self.seq[row] = seq
        self.rank[row] = rank
        self.strength[row] = strength
        self.groups[row] = groups
        self.case_ids.append(case_id)
        self.size += 1
        if rank >= 0:
            index = self.by_rank.get(rank)
            if index is None:
                index = self.by_rank[rank] = _RankIndex(self.run_size)
            index.add(row, self.strength)
        return row

    def drop(self, row: int) -> None:
        self.rank[row] = -1  # never compared again

    def to_wire(self) -> dict[str, Any]:
        """The rows as kept in the pool's mark: each array's bytes (little-endian
        int64 and float64, so infinities and every float come back exact), deflated
        (zlib, its fastest level: about a third of the bytes, so a run's last write,
        and the memory it takes, are a third too), base64."""
        n = self.size
        return {
            "caseIds": self.case_ids[:n],
            "seq": _packed(self.seq[:n], _INTS),
            "rank": _packed(self.rank[:n], _INTS),
            "strength": _packed(self.strength[:n], _FLOATS),
            "groups": _packed(self.groups[:n], _INTS),
        }

    @classmethod
    def from_wire(
        cls, wire: Mapping[str, Any], factors: int, attributes: int, run_size: int = _RUN
    ) -> _Product:
        """The rows a mark kept (ValueError when they are not ``factors`` strengths and
        ``attributes`` group codes a row), each rank's sorted into one run."""
        case_ids = list(wire["caseIds"])
        n = len(case_ids)
        seq = _unpacked(wire["seq"], _INTS, (n,))
        rank = _unpacked(wire["rank"], _INTS, (n,))
        strength = _unpacked(wire["strength"], _FLOATS, (n, factors))
        groups = _unpacked(wire["groups"], _INTS, (n, attributes))
        if not all(isinstance(c, str) for c in case_ids):
            raise ValueError("a case id that is not a string")
        by_rank = {}
        for value in np.unique(rank[rank >= 0]):
            rows = np.flatnonzero(rank == value).astype(np.int64)
            by_rank[int(value)] = _RankIndex.of(rows, strength, run_size)
        return cls(case_ids, n, seq, rank, strength, groups, by_rank, run_size)


def _packed(array: npt.NDArray[Any], dtype: str) -> str:
    raw = np.ascontiguousarray(array, dtype=dtype).tobytes()
    return base64.b64encode(zlib.compress(raw, 1)).decode("ascii")


def _unpacked(text: Any, dtype: str, shape: tuple[int, ...]) -> npt.NDArray[Any]:
    if not isinstance(text, str):
        raise ValueError("an array that is not base64 text")
    try:
        data = zlib.decompress(base64.b64decode(text, validate=True))
    except zlib.error as err:
        raise ValueError(f"an array that does not inflate: {err}") from None
    raw = np.frombuffer(data, dtype=dtype)
    return raw.reshape(shape).astype(np.dtype(dtype).newbyteorder("="))  # a writable copy


_A = TypeVar("_A", bound=np.generic)


def _grown(array: npt.NDArray[_A], capacity: int, shape: tuple[int, ...]) -> npt.NDArray[_A]:
    grown = np.zeros(shape, dtype=array.dtype)
    if len(array):  # the first growth has nothing to keep (and no width yet)
        grown[: len(array)] = array
    return grown


class ComparisonPool:
    """The decisions a comparative file review compares with: each case's current
    decision (the underwriter's, or the latest officer's) that a person has not
    rejected and that is not an excluded outcome, with its file's factors and its
    applicant's groups. Read from the journal incrementally.

    ``through``: a pool that reads no entry after that seq (and starts from the journal,
    not from a kept mark), to compare as a review did (up to the later of the decision
    it reviewed and its basis's ``poolChanged``; :mod:`credit.governance.replay`). It
    may be raised between refreshes, never lowered."""

    def __init__(self, equipoise: Equipoise, *, through: int | None = None) -> None:
        self._eq = equipoise
        self.through = through
        self._mark = 0
        self._mark_hash: str | None = None  # the hash of entry _mark, as read
        self._changed = 0  # the seq of the last entry that took a row out (0: none yet)
        self._resumed = through is not None  # a bounded pool reads the journal itself
        self._products: dict[str, _Product] = {}
        self._where: dict[str, tuple[str, int]] = {}  # case -> (product, row) now in use
        self._codes: list[dict[str, int]] = [{} for _ in equipoise.config.comparative_attributes]

    def refresh(self) -> ComparisonPool:
        """Read what the journal recorded since the last refresh: a page of entries at
        a time (:data:`POOL_PAGE`), and the files of a page's decisions in a few reads
        (:meth:`credit.journal.base.Store.case_files`), so a pool built over a long
        journal neither holds it all at once nor reads each case alone. The first
        refresh starts from the pool's mark (:meth:`keep`) when there is one of this
        form and configuration, and reads only what came after it."""
        eq = self._eq
        if not self._resumed:
            self._resumed = True
            self._resume()
        kinds = [*DECISION_KINDS, KEYSTONE_REJECTED]
        while True:
            page = eq.store.entries(kinds=kinds, after_seq=self._mark, limit=POOL_PAGE)
            if self.through is not None and page and page[-1].seq > self.through:
                page = [e for e in page if e.seq <= self.through]  # and the last page
            decided: dict[int, Decision] = {}
            for entry in page:
                if entry.kind != KEYSTONE_REJECTED and entry.case_id is not None:
                    decision = self._comparable(entry.case_id, entry)
                    if decision is not None:
                        decided[entry.seq] = decision
            files = eq.files_of([e.case_id for e in page if e.seq in decided and e.case_id])
            for entry in page:
                self._mark, self._mark_hash = entry.seq, entry.hash
                case_id = entry.case_id
                if case_id is None:
                    continue
                if entry.kind == KEYSTONE_REJECTED:
                    if self._rejects(entry, case_id):
                        self._take_out(case_id, entry.seq)
                    continue
                self._take_out(case_id, entry.seq)  # a case's later decision replaces it
                decision = decided.get(entry.seq)
                if decision is not None:
                    case, monitoring = files.get(case_id, (None, None))
                    self._add(case_id, entry, decision, case, monitoring)
            if len(page) < POOL_PAGE:
                return self

    @property
    def mark(self) -> int:
        """The seq of the last decision or rejection the pool has read (0: none)."""
        return self._mark

    @property
    def changed(self) -> int:
        """The seq of the last entry that took a decision out of the pool (a person's
        rejection, or a case's later decision replacing its row; 0: none). A review
        compares a decision with the rows recorded before it, so what it found depends
        only on the entries up to that decision and up to this seq: a pool that reads
        the journal up to the later of the two finds the same (and it does not depend
        on how far this pool has read past them, nor on how a run grouped its work)."""
        return self._changed

    def keep(self) -> bool:
        """Keep the pool as it stands (:data:`POOL_MARK`, :meth:`Store.put_mark`: sealed
        with the lender's key, bound to the last entry it read), so the next pool
        starts from it instead of reading every decision and its file again. Only a
        pool the journal holds is kept: nothing when it has read nothing, or when the
        entry it read last is no longer there as it read it (a group that rolled
        back). Whether it was kept.

        The mark holds, for each decision compared, its case id, seq, outcome rank,
        factor strengths and group codes (the applicant's monitoring groups, coded):
        it is read by this review alone, as the vault is."""
        if self._mark == 0 or self._mark_hash is None:
            return False
        store = self._eq.store
        last = store.entries(after_seq=self._mark - 1, limit=1)
        if not last or (last[0].seq, last[0].hash) != (self._mark, self._mark_hash):
            return False
        config = self._eq.config
        store.put_mark(
            POOL_MARK,
            self._mark,
            {
                "format": POOL_FORMAT,
                "configSha256": config.sha256,
                "codes": self._codes,
                "changed": self._changed,
                "products": {name: block.to_wire() for name, block in self._products.items()},
            },
        )
        return True

    def _resume(self) -> None:
        """Start from the pool's mark, if one of this form and configuration is kept
        (any other is left for the journal to rebuild from the start)."""
        mark = self._eq.store.mark(POOL_MARK)
        config = self._eq.config
        if mark is None or mark.data.get("format") != POOL_FORMAT:
            return
        if mark.data.get("configSha256") != config.sha256:
            return
        factors, attributes = len(config.comparative_factors), len(config.comparative_attributes)
        try:
            codes = [{str(k): int(v) for k, v in c.items()} for c in mark.data["codes"]]
            changed = int(mark.data["changed"])
            products = {
                str(name): _Product.from_wire(wire, factors, attributes)
                for name, wire in mark.data["products"].items()
            }
        except (KeyError, TypeError, ValueError, AttributeError):
            return
        if len(codes) != attributes:
            return
        where: dict[str, tuple[str, int]] = {}
        for name, block in products.items():
            for row in np.flatnonzero(block.rank[: block.size] >= 0):
                where[block.case_ids[row]] = (name, int(row))
        self._codes, self._products, self._where = codes, products, where
        self._mark, self._mark_hash = mark.seq, None
        self._changed = changed

    def _take_out(self, case_id: str, seq: int) -> None:
        """Take the case's row out (if it has one), by the entry at ``seq``."""
        if case_id in self._where:
            self._changed = seq
            self._drop(case_id)

    def _rejects(self, rejection: Entry, case_id: str) -> bool:
        """Whether a person's rejection is of the decision the case's row holds: the one
        it names (:func:`~credit.journal.naming.names_decision`), read back by its seq
        when it is named by ``decisionId`` (rejections are few: a read each keeps the
        pool from holding every decision's name)."""
        where = self._where.get(case_id)
        if where is None:
            return False
        product, row = where
        seq = int(self._products[product].seq[row])
        named: str | None = None
        if decision_id_of(rejection.payload) is not None:
            found = self._eq.store.entries(
                case_id, kinds=list(DECISION_KINDS), after_seq=seq - 1, limit=1
            )
            if found and found[0].seq == seq:
                named = decision_id_of(found[0].payload)
        return names_decision(rejection.payload, seq, named) is not False

    def _drop(self, case_id: str) -> None:
        where = self._where.pop(case_id, None)
        if where is not None:
            product, row = where
            self._products[product].drop(row)

    def _comparable(self, case_id: str, entry: Entry) -> Decision | None:
        """The recorded decision, if it is one the pool compares with (readable, and not
        an excluded outcome)."""
        try:
            decision = recorded_decision(entry)
        except InputError:
            return None
        if decision.decision in self._eq.config.comparative_excluded:
            return None
        return decision

    def _add(
        self,
        case_id: str,
        entry: Entry,
        decision: Decision,
        case: Case | None,
        monitoring: MonitoringData | None,
    ) -> None:
        eq = self._eq
        if case is None or monitoring is None:
            return
        factors = file_factors(case, decision)
        strength = [_strength(factors[f.name], f) for f in eq.config.comparative_factors]
        groups = [
            self._code(i, group_of(attribute, monitoring, eq.config))
            for i, attribute in enumerate(eq.config.comparative_attributes)
        ]
        block = self._products.setdefault(decision.product, _Product())
        rank = eq.config.rank(decision.decision)
        self._where[case_id] = (
            decision.product,
            block.append(case_id, entry.seq, rank, strength, groups),
        )

    def _code(self, attribute: int, group: str) -> int:
        if group == NOT_PROVIDED:
            return -1
        codes = self._codes[attribute]
        return codes.setdefault(group, len(codes))

    def more_favourable_weaker(
        self,
        product: str,
        seq: int,
        rank: int,
        strength: list[float],
        groups: list[int],
        tolerances: list[float],
    ) -> tuple[list[str], npt.NDArray[np.bool_]]:
        """The cases recorded before ``seq`` with a more favourable outcome, a file
        equal or weaker on every factor (within tolerance), in another group on at
        least one compared attribute; and, per attribute, whether it differs."""
        block = self._products.get(product)
        if block is None or not block.size:
            return [], np.zeros(0, dtype=bool)
        # Only the rows added with a more favourable outcome (the rank index), and of
        # those, in each sorted run, the shortest prefix a factor's limit admits; each
        # test then narrows the rows left, a factor at a time, so a review reads what
        # could still match rather than every row on every factor. A test of the
        # review's pool holds it to the whole-table comparison over any rows, runs and
        # drops (tests/test_equipoise_pool.py).
        limit = [s + t for s, t in zip(strength, tolerances, strict=True)]  # float64 sums
        parts = [
            part
            for r, index in block.by_rank.items()
            if r > rank
            for part in index.admitted(limit)
            if len(part)
        ]
        if not parts:
            return [], np.zeros((0, len(groups)), dtype=bool)
        rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        rows = rows[(block.seq[rows] < seq) & (block.rank[rows] > rank)]
        for factor, most in enumerate(limit):
            if not rows.size:
                break
            rows = rows[block.strength[rows, factor] <= most]
        if not rows.size:
            return [], np.zeros((0, len(groups)), dtype=bool)
        rows = np.sort(rows)  # the rows in the order they were added, as the table holds them
        mine = np.array(groups, dtype=np.int64)
        others = block.groups[rows]
        differs = (others >= 0) & (mine >= 0) & (others != mine)
        kept = np.any(differs, axis=1)
        return [block.case_ids[i] for i in rows[kept]], differs[kept]


class Equipoise:
    """The fair-lending review. Reads monitoring data; never runs behind the guard."""

    name = "equipoise"

    def __init__(
        self,
        store: Store,
        *,
        config: FairLendingConfig | None = None,
        terms: ProhibitedTerms | None = None,
        registry: PolicyRegistry | None = None,
    ) -> None:
        self.store = store
        self.registry = registry or PolicyRegistry.bundled()
        self.config = config or default_fair_lending_config()
        self.terms = terms or default_prohibited_terms()
        # Stored documents and monitoring data never change once written: the recent
        # ones are kept (a bounded cache, so a long run's memory does not grow with it;
        # the comparison pool keeps only each file's factors).
        self._monitoring: Recent[str, MonitoringData] = Recent(_CACHED)
        self._cases: Recent[str, Case] = Recent(_CACHED)
        self._pool = ComparisonPool(self)

    def monitoring_of(self, case_id: str) -> tuple[MonitoringData | None, str | None]:
        cached = self._monitoring.get(case_id)
        if cached is not None:
            return cached, None
        data, problem = read_monitoring(self.store, case_id)
        if data is not None:
            self._monitoring.put(case_id, data)
        return data, problem

    def files_of(self, case_ids: list[str]) -> dict[str, tuple[Case | None, MonitoringData | None]]:
        """Many cases' files (document and monitoring data), read together: as
        :meth:`case_of` and :meth:`monitoring_of` read each (an unreadable document or
        invalid monitoring data is None), and kept as they keep them: the pool reads a
        run group's decided cases just before their reviews ask for them."""
        out: dict[str, tuple[Case | None, MonitoringData | None]] = {}
        for case_id, (document, raw) in self.store.case_files(case_ids).items():
            case = None if document is None else self._cases.get(case_id)
            if document is not None and case is None:  # a case's document never changes
                try:
                    case = stored_case(document)
                except InputError:
                    case = None
                if case is not None:
                    self._cases.put(case_id, case)
            monitoring = monitoring_from(raw)[0]
            if monitoring is not None:
                self._monitoring.put(case_id, monitoring)
            out[case_id] = (case, monitoring)
        return out

    def case_of(self, case_id: str) -> Case | None:
        cached = self._cases.get(case_id)
        if cached is not None:
            return cached
        document = self.store.get_case(case_id)
        if document is None:
            return None
        try:
            case = stored_case(document)
        except InputError:
            return None
        self._cases.put(case_id, case)
        return case

    def _basis(self, **extra: Any) -> dict[str, Any]:
        return {
            "config": self.config.label,
            "configSha256": self.config.sha256,
            "prohibitedTerms": f"{self.terms.name} v{self.terms.version}",
            "prohibitedTermsSha256": self.terms.sha256,
            **extra,
        }

    def pool(self) -> ComparisonPool:
        """The comparison pool, brought up to date with the journal. Read once and pass
        it to :meth:`review` to review a batch."""
        return self._pool.refresh()

    def pool_of_reviews(self) -> ComparisonPool:
        """The pool the reviews compared with, as far as they read (not refreshed)."""
        return self._pool

    def review(
        self,
        case_id: str,
        *,
        pool: ComparisonPool | None = None,
        entry: Entry | None = None,
        through: int | None = None,
    ) -> Review:
        """Review one recorded decision (``entry``, default the underwriter's).

        The basis records, beside the configuration and terms, the decision (by its
        ``decisionId``) and ``poolChanged`` (:attr:`ComparisonPool.changed`), so the
        review can be done again from the journal alone
        (:mod:`credit.governance.replay`). ``through``: read the case's guard
        redactions up to that seq only (a review done again reads what it read)."""
        entry = entry or self.store.decision_entry(case_id)
        if entry is None:
            raise GovernanceError("no decision is recorded", case_id=case_id, reviewer=self.name)
        raw = entry.payload.get("decision")
        wire: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        findings = _citations(wire, self.terms)
        findings += self._redacted_data(case_id, through)
        try:
            decision = recorded_decision(entry)
        except InputError as err:
            findings.append(
                Finding(
                    code="equipoise.decision_unreadable",
                    holds=True,
                    message=f"the recorded decision is not a valid Decision: {err}",
                    detail={"field": err.field or ""},
                )
            )
            return Review(
                reviewer="equipoise", case_id=case_id, findings=tuple(findings), basis=self._basis()
            )
        case = self.case_of(case_id)
        if case is not None:
            findings += self._against_policy(case, decision)
        pool = (pool or self._pool).refresh()
        findings += self._comparative(case_id, entry.seq, case, decision, pool)
        return Review(
            reviewer="equipoise",
            case_id=case_id,
            findings=tuple(findings),
            basis=self._basis(**decision_ref(entry.seq, entry.payload), poolChanged=pool.changed),
        )

    def _redacted_data(self, case_id: str, through: int | None = None) -> list[Finding]:
        """The redactions of values the decision's data held. Each is named by its place
        among the case's ``guard.redacted`` entries (1 for the first), not by seq: the
        turn's redactions are written in the same group as this review (ADR-0002)."""
        hits = [
            (place, e)
            for place, e in enumerate(self.store.entries(case_id, kinds=[GUARD_REDACTED]), 1)
            if e.payload.get("match") == "value" and (through is None or e.seq <= through)
        ]
        if not hits:
            return []
        return [
            Finding(
                code="equipoise.prohibited_basis_in_data",
                holds=True,
                message=(
                    f"the fair-lending guard redacted a prohibited basis from "
                    f"{len(hits)} value(s) of the data the decision stands on: "
                    + "; ".join(
                        f"{h.payload.get('tool')} {h.payload.get('path')} "
                        f"({h.payload.get('basis')})"
                        for _, h in hits[:_SHOWN]
                    )
                ),
                detail={
                    "redactions": [
                        {
                            "redaction": place,
                            "tool": h.payload.get("tool"),
                            "path": h.payload.get("path"),
                            "basis": h.payload.get("basis"),
                        }
                        for place, h in hits
                    ]
                },
            )
        ]

    def _against_policy(self, case: Case, decision: Decision) -> list[Finding]:
        """Less favourable than the policy's own derivation for the file."""
        try:
            policy = self.registry.in_force(case.as_of)
            derived = derive(
                case.application,
                case.credit_report,
                policy,
                case_id=case.case_id,
                as_of=case.as_of,
            )
        except CreditError:
            return []  # no derivation to weigh against (Backstop holds what it cannot derive)
        excluded = self.config.comparative_excluded
        if derived.decision in excluded or decision.decision in excluded:
            return []
        if self.config.rank(decision.decision) >= self.config.rank(derived.decision):
            return []
        return [
            Finding(
                code="equipoise.less_favourable_than_policy",
                holds=True,
                message=(
                    f"a {decision.decision} is less favourable than the {derived.decision} "
                    f"the policy ({policy.label}) derives for this file"
                ),
                detail={"decision": decision.decision, "derived": derived.decision},
            )
        ]

    def _comparative(
        self,
        case_id: str,
        seq: int,
        case: Case | None,
        decision: Decision,
        pool: ComparisonPool,
    ) -> list[Finding]:
        config = self.config
        monitoring, problem = self.monitoring_of(case_id)
        if problem is not None:
            return [
                Finding(
                    code="equipoise.monitoring_unreadable",
                    holds=False,
                    message=f"the monitoring data cannot be read ({problem}); "
                    "no comparative file review",
                    detail={"problem": problem},
                )
            ]
        if monitoring is None:
            return [
                Finding(
                    code="equipoise.no_monitoring_data",
                    holds=False,
                    message="no monitoring data is on file; no comparative file review",
                )
            ]
        if case is None or decision.decision in config.comparative_excluded:
            return []
        factors = file_factors(case, decision)
        compared = config.comparative_factors
        strength = [_strength(factors[f.name], f) for f in compared]
        tolerances = [float(f.tolerance) for f in compared]
        groups = [
            pool._code(i, group_of(attribute, monitoring, config))
            for i, attribute in enumerate(config.comparative_attributes)
        ]
        found, differs = pool.more_favourable_weaker(
            decision.product, seq, config.rank(decision.decision), strength, groups, tolerances
        )
        if not found:
            return []
        attributes = config.comparative_attributes
        comparables = []
        for other, diff in zip(found, differs, strict=True):
            other_decision = self._decision_of(pool, other)
            comparables.append(
                {
                    "caseId": other,
                    "decision": other_decision,
                    "differsOn": [a for a, d in zip(attributes, diff, strict=True) if d],
                }
            )
        comparables.sort(key=lambda c: (-config.rank(str(c["decision"])), str(c["caseId"])))
        mine = {a: group_of(a, monitoring, config) for a in attributes}
        named = ", ".join(f"{c['caseId']} ({c['decision']})" for c in comparables[:_SHOWN])
        return [
            Finding(
                code="equipoise.comparative_disparity",
                holds=True,
                message=(
                    f"this {decision.decision} is less favourable than the decision recorded "
                    f"for {len(comparables)} applicant(s) in another group whose file is equal "
                    f"or weaker on every factor the policy uses: {named}"
                ),
                detail={
                    "caseId": case_id,
                    "decision": decision.decision,
                    "groups": mine,
                    "factors": [f.name for f in compared],
                    "comparables": comparables[:_SHOWN],
                    "count": len(comparables),
                },
            )
        ]

    def _decision_of(self, pool: ComparisonPool, case_id: str) -> str:
        product, row = pool._where[case_id]
        rank = int(pool._products[product].rank[row])
        return self.config.outcome_order[rank]

    def portfolio(self) -> PortfolioReport:
        """The portfolio report over every recorded decision not rejected by a person."""
        rows, rejected, unreadable = portfolio_rows(self.store)
        return adverse_impact_report(
            rows, self.config, rejected_by_person=rejected, unreadable=unreadable
        )


def _citations(decision_wire: Mapping[str, Any], terms: ProhibitedTerms) -> list[Finding]:
    findings: list[Finding] = []
    for name in ("factors", "policyBasis"):
        texts = decision_wire.get(name) or ()
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            continue
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                continue
            matches = find_prohibited(text, terms)
            if not matches:
                continue
            findings.append(
                Finding(
                    code="equipoise.prohibited_basis_cited",
                    holds=True,
                    message=f"{name}[{i}] cites "
                    + "; ".join(dict.fromkeys(m.describe() for m in matches)),
                    detail={
                        "field": f"{name}[{i}]",
                        "text": text,
                        "matches": [
                            {
                                "kind": m.kind,
                                "name": m.name,
                                "bases": list(m.bases),
                                "term": m.term,
                                "reference": m.reference,
                            }
                            for m in matches
                        ],
                    },
                )
            )
    return findings
