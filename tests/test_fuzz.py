"""Bad input never stops the work, fuzzed: intake, ``credit decide``, ``credit run`` and
the API take inputs built from mutations of real cases, arbitrary JSON and arbitrary
bytes (:mod:`test_fuzz_inputs`), bounded in examples and time.

The laws, over every input:

- **Intake** (``read_document``, ``screen``, ``intake``): a case or one InputError,
  nothing else; ``screen`` and ``intake`` agree; a refused case leaves the store as it
  was; a case taken in is stored with no prohibited-basis field left in it.
- **``credit decide``** over a batch of good cases with fuzzed lines between them: exit
  0 or 2 (2 exactly when a line was named), never a traceback; every good case is
  decided, in order, and every other line is decided or named by its line.
- **``credit run``** over such a batch, on SQLite in a temporary folder: the same, and
  every fuzzed line is taken in or named, a line named adds nothing to the journal,
  every case taken in ends decided or named, the journal verifies, and a re-run changes
  nothing (journal entries and outbox identical, the same lines named).
- **The API**: no 500; every 4xx is the one error shape, a 422 names the field, and a
  4xx adds nothing to the journal; a case that cannot be underwritten is 422 naming the
  field on every decide; the person routes take fuzzed bodies the same way.

Each law is a function (``intake_law``, ``decide_law``, ``run_law``, ...) that raises
AssertionError when broken; the tests at the end plant a defect in the product and show
each law catches it. The longer run of ``make bench`` (benchmarks/bench_fuzz.py) applies
the same laws and counts what it tried.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from credit.canonical import loads, normal_form
from credit.cases import read_document
from credit.cli import app
from credit.errors import InputError
from credit.governance import onramp
from credit.governance.guard import default_guard
from credit.journal import InMemoryStore, open_store
from credit.journal.base import Store
from credit.service.auth import Role
from service_support import Api, held_case, service_api
from test_fuzz_inputs import (
    REAL_CASES,
    REGISTRY,
    Fuzzed,
    arbitrary_json,
    fuzzed_input,
    json_values,
)


def fuzz(examples: int) -> settings:
    """Bounded: ``examples`` inputs, no per-example deadline (a run is ~1 s), no
    example database written into the work tree."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ---------------------------------------------------------------------- intake


def intake_law(store: Store, fuzzed: Fuzzed) -> str:
    """One input through the reader and intake: ``rejected`` or ``taken in``."""
    before = store.entries()
    try:
        raw = read_document(fuzzed.data)
    except InputError as err:
        assert err.message
        return "rejected"
    screened: InputError | None = None
    try:
        onramp.screen(raw, registry=REGISTRY)
    except InputError as err:
        screened = err
    case_id = raw.get("caseId") if isinstance(raw, dict) else None
    stored_before = store.get_case(case_id) if isinstance(case_id, str) else None
    try:
        result = onramp.intake(raw, store, registry=REGISTRY)
    except InputError as err:
        assert err.message
        if screened is not None:
            assert (err.message, err.field) == (screened.message, screened.field)
        assert store.entries() == before, "a refused case changed the journal"
        if isinstance(case_id, str):
            assert store.get_case(case_id) == stored_before
        return "rejected"
    assert screened is None, f"screen refused what intake took in: {screened}"
    stored = store.get_case(result.case_id)
    assert stored is not None and dict(stored) == dict(result.document)
    assert default_guard().find_prohibited_keys(stored) == [], "a prohibited field was stored"
    if result.taken_in:
        assert len(store.entries()) > len(before)
        return "taken in"
    assert store.entries() == before
    return "taken in"


def seeded_store() -> InMemoryStore:
    """A journal with cases in it, so a fuzzed case can conflict with one."""
    store = InMemoryStore()
    for doc in REAL_CASES[:20]:
        onramp.intake(doc, store, registry=REGISTRY)
    return store


@pytest.fixture(scope="module")
def intake_store() -> InMemoryStore:
    return seeded_store()


@fuzz(300)
@given(fuzzed=fuzzed_input())
def test_intake_takes_in_a_case_or_refuses_it_naming_why_and_changing_nothing(
    intake_store: InMemoryStore, fuzzed: Fuzzed
) -> None:
    intake_law(intake_store, fuzzed)


# ---------------------------------------------------------------------- the batch commands

NAMED = re.compile(rb", line (\d+)(?=[,:])")


@dataclass
class Batch:
    """A batch file: good cases (ids GOOD-n) with fuzzed lines between them."""

    path: Path
    good: dict[int, str] = field(default_factory=dict)  # line -> case id
    fuzzed: dict[int, Fuzzed] = field(default_factory=dict)  # line -> input

    @property
    def lines(self) -> int:
        return len(self.good) + len(self.fuzzed)

    def counted(self) -> set[int]:
        """The lines the reader counts (a line of only spaces and tabs is skipped)."""
        return set(self.good) | {n for n, f in self.fuzzed.items() if not _blank(f.line())}


def _blank(line: bytes) -> bool:
    if line.endswith(b"\r"):
        line = line[:-1]
    return line.strip(b" \t") == b""


def write_batch(folder: Path, rows: list[Fuzzed | None], *, start: int = 0) -> Batch:
    """``rows``: None for a good case (a real case, unmutated), else a fuzzed line."""
    batch = Batch(folder / "mixed.jsonl")
    data: list[bytes] = []
    for number, row in enumerate(rows, start=1):
        if row is None:
            doc = dict(REAL_CASES[(start + number) % len(REAL_CASES)])
            doc["caseId"] = f"GOOD-{number}"
            data.append(json.dumps(doc).encode())
            batch.good[number] = doc["caseId"]
        else:
            data.append(row.line())
            batch.fuzzed[number] = row
    batch.path.write_bytes(b"\n".join(data) + b"\n")
    return batch


@st.composite
def batch_rows(draw: st.DrawFn, size: int) -> list[Fuzzed | None]:
    """A good case first (so no byte order mark can start the file), then good cases
    and fuzzed lines, at least one of each."""
    rows: list[Fuzzed | None] = [None]
    for i in range(2, size + 1):
        if i == size and all(r is None for r in rows):
            rows.append(draw(fuzzed_input(f"FZ-{i}")))
        elif draw(st.integers(0, 2)) == 0:
            rows.append(None)
        else:
            rows.append(draw(fuzzed_input(f"FZ-{i}")))
    return rows


def named_lines(stderr: bytes, batch: Batch) -> Counter[int]:
    prefix = re.escape(str(batch.path).encode())
    return Counter(int(n) for n in re.findall(prefix + NAMED.pattern, stderr))


def _no_traceback(result: Any) -> None:
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )


def decide_law(batch: Batch) -> tuple[int, int]:
    """``credit decide`` over the batch: (decided, named)."""
    result = CliRunner().invoke(app, ["decide", str(batch.path)])
    _no_traceback(result)
    named = named_lines(result.stderr_bytes, batch)
    rows = [loads(row) for row in result.stdout.splitlines()]
    decided = [row["caseId"] for row in rows]
    assert [c for c in decided if c in batch.good.values()] == list(batch.good.values())
    assert not named.keys() & batch.good.keys(), "a good case was named as bad"
    assert all(n == 1 for n in named.values()), f"a line named twice: {named}"
    assert len(rows) + len(named) == len(batch.counted()), (result.stderr[-2000:], decided)
    assert result.exit_code == (2 if named else 0), (result.exit_code, result.stderr[-2000:])
    return len(rows), len(named)


@fuzz(40)
@given(rows=batch_rows(8))
def test_credit_decide_decides_every_good_case_and_names_every_other_line(
    rows: list[Fuzzed | None],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        decide_law(write_batch(Path(folder), rows))


@dataclass(frozen=True)
class RunOutcome:
    decided: int
    named: int
    exit_code: int


def _outbox(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*"))} if folder.is_dir() else {}


def run_law(batch: Batch, folder: Path) -> RunOutcome:
    """``credit run`` over the batch, twice, on a fresh SQLite journal."""
    database = f"sqlite:///{folder / 'journal.db'}"
    outbox = folder / "outbox"
    args = ["run", str(batch.path), "--database", database, "--outbox", str(outbox)]
    # each journal its own checkpoints (hypothesis runs many in one test)
    env = {"CREDIT_CHECKPOINTS": str(folder / "checkpoints")}
    first = CliRunner().invoke(app, args, env=env)
    _no_traceback(first)
    named = named_lines(first.stderr_bytes, batch)
    assert not named.keys() & batch.good.keys(), "a good case was named as bad"
    assert all(n == 1 for n in named.values()), f"a line named twice: {named}"
    assert "journal: chain verified" in first.stdout, first.stdout[-1000:]
    assert first.exit_code == (2 if named else 0), (first.exit_code, first.stderr[-2000:])
    with open_store(database) as store:
        entries = store.entries()
        from credit.casework import CaseWork
        from credit.notices import DirectoryOutbox

        work = CaseWork(store, DirectoryOutbox(outbox), registry=REGISTRY)
        lives = work.lives()
    for case_id in batch.good.values():
        life = lives[case_id]
        assert life.decision is not None and life.state not in ("failed", "received"), (
            case_id,
            life.state,
        )
    others = {c: life for c, life in lives.items() if c not in batch.good.values()}
    for case_id, life in others.items():  # a fuzzed line taken in is decided, or named
        assert life.state != "received", case_id
        if life.state == "failed":
            assert life.failed is not None and life.failed.payload.get("input") is True, (
                case_id,
                life.failed.payload if life.failed else None,
            )
    failed_named = sum(life.state == "failed" for life in others.values())
    taken_in = len(others) - failed_named
    fuzzed_named = len(named.keys() & batch.fuzzed.keys())
    counted = batch.counted() - set(batch.good)
    assert taken_in + fuzzed_named == len(counted), (
        "every fuzzed line is taken in or named, and a named line adds nothing",
        sorted(others),
        sorted(named),
        sorted(counted),
    )
    sent = _outbox(outbox)
    again = CliRunner().invoke(app, args, env=env)
    _no_traceback(again)
    with open_store(database) as store:
        assert store.entries() == entries, "a re-run changed the journal"
    assert _outbox(outbox) == sent, "a re-run changed the outbox"
    assert named_lines(again.stderr_bytes, batch) == named
    assert again.exit_code == first.exit_code
    decided = sum(life.decision is not None for life in lives.values())
    return RunOutcome(decided, len(named), first.exit_code)


@fuzz(12)
@given(rows=batch_rows(6))
def test_credit_run_decides_every_good_case_names_every_bad_line_and_a_rerun_changes_nothing(
    rows: list[Fuzzed | None],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run_law(write_batch(Path(folder), rows), Path(folder))


# ---------------------------------------------------------------------- the API

KNOWN: Final = ("FZ-HELD", "FZ-THIN", "FZ-TERM", "FZ-DECLINED")


def error_of(response: Any) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "field", "caseId"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if response.status_code in (400, 422):  # a malformed request names what is wrong
        assert body["error"]["field"], f"a {response.status_code} that names no field: {body}"
    detail: dict[str, Any] = body["error"]
    return detail


def answered(api: Api, response: Any, before: list[Any]) -> int:
    """The law of every answer: no 5xx; a 4xx is the error shape and adds nothing."""
    status: int = response.status_code
    assert status < 500, (status, response.text[:500])
    if status >= 400:
        error_of(response)
        assert api.store.entries() == before, f"a {status} changed the journal"
    return status


def api_case_law(api: Api, fuzzed: Fuzzed) -> str:
    """POST /v1/cases with the body, then decide (twice) what was taken in."""
    before = api.store.entries()
    taken = api.client.post(
        "/v1/cases",
        content=fuzzed.data,
        headers={**api.headers(Role.INTAKE), "Content-Type": "application/json"},
    )
    status = answered(api, taken, before)
    assert status in (200, 201, 409, 413, 422), status
    if status >= 400:
        return "rejected"
    case_id = taken.json()["caseId"]
    first = api.decide(case_id)
    assert first.status_code in (201, 409, 422), (first.status_code, first.text[:500])
    assert first.status_code < 500
    if first.status_code >= 400:
        error_of(first)
    settled = api.store.entries()
    again = api.decide(case_id)
    answered(api, again, settled)
    if first.status_code == 422:  # cannot be underwritten: the same 422 every time
        assert again.status_code == 422 and error_of(again)["field"] == error_of(first)["field"]
        return "not decidable"
    assert again.status_code == 409, (again.status_code, again.text[:300])
    return "decided"


@contextmanager
def fuzz_api(folder: Path) -> Iterator[Api]:
    """The service on SQLite with a held, a referred, an undecidable and a declined
    case; its client answers an unexpected error with the 500 a caller would see."""
    with service_api("sqlite", folder) as built:
        held_case(built, "FZ-HELD")
        thin = dict(REAL_CASES[0], caseId="FZ-THIN")
        thin["creditReport"] = dict(thin["creditReport"], tradelines=1)
        built.decided(thin)
        term = json.loads(json.dumps(REAL_CASES[0]))
        term.update(caseId="FZ-TERM")
        term["application"]["termMonths"] = 84
        assert built.take_in(term).status_code == 201
        assert built.decide("FZ-TERM").status_code == 422
        declined = json.loads(json.dumps(REAL_CASES[1]))
        declined.update(caseId="FZ-DECLINED")
        built.decided(declined)
        yield dataclasses.replace(
            built, client=TestClient(built.app, raise_server_exceptions=False)
        )


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with fuzz_api(tmp_path_factory.mktemp("fuzz-api")) as built:
        yield built


@fuzz(60)
@given(fuzzed=fuzzed_input())
def test_the_api_answers_every_case_body_with_a_named_4xx_or_takes_it_in_and_decides_it(
    api: Api, fuzzed: Fuzzed
) -> None:
    api_case_law(api, fuzzed)


ROUTES: Final = (
    ("release", Role.REVIEWER, "reason"),
    ("reject", Role.REVIEWER, "reason"),
    ("manual-decision", Role.OFFICER, "why"),
    ("withdraw", Role.OFFICER, "why"),
)


OFFICER_REASONS: Final = ("DTI_OVER_CAP", "SCORE_BELOW_MIN", "LTV_OVER_CAP", "THIN_FILE")
ODD_TEXT: Final = ("0", "0.00", "99999999999.99", "1e5", "-1", " ", "\u200b", "\u202e", "x" * 3000)


@st.composite
def person_body(draw: st.DrawFn, route: str) -> bytes:
    """A body for the route: the route's own fields, none to three of them changed (or
    an extra one added), or arbitrary JSON, or arbitrary bytes."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(arbitrary_json()).data
    if kind == 1:
        return draw(st.binary(max_size=200))
    body: dict[str, Any]
    if route in ("release", "reject"):
        body = {"reason": "checked by hand"}
    elif route == "withdraw":
        body = {"why": "the applicant called"}
    else:
        body = {
            "decision": draw(st.sampled_from(("approve", "decline", "counteroffer"))),
            "reasons": draw(
                st.lists(
                    st.sampled_from(("DTI_OVER_CAP", "SCORE_BELOW_MIN", "THIN_FILE")), max_size=3
                )
            ),
            "why": "checked the file by hand",
        }
    fields = (*body, "amount", "termMonths", "creditLine", "apr", "extra")
    for _ in range(draw(st.integers(0, 3))):
        body[draw(st.sampled_from(fields))] = draw(json_values | st.sampled_from(ODD_TEXT))
    return json.dumps(body, allow_nan=True).encode("utf-8", "surrogatepass")


person_request = st.sampled_from(ROUTES).flatmap(
    lambda route: st.tuples(
        st.just(route), st.sampled_from(KNOWN) | st.text(max_size=70), person_body(route[0])
    )
)


@fuzz(80)
@given(request=person_request)
def test_the_person_routes_answer_every_body_without_a_server_error_or_a_change_on_a_4xx(
    api: Api, request: tuple[tuple[str, Role, str], str, bytes]
) -> None:
    person_law(api, *request)


def person_law(api: Api, route: tuple[str, Role, str], case_id: str, body: bytes) -> str:
    """A person's route with the body: ``rejected`` (a 4xx) or ``acted on``."""
    name, role, _ = route
    before = api.store.entries()
    response = api.client.post(
        f"/v1/cases/{quote(case_id, safe='')}/{name}",
        content=body,
        headers={**api.headers(role), "Content-Type": "application/json"},
    )
    return "rejected" if answered(api, response, before) >= 400 else "acted on"


@fuzz(40)
@given(
    case_id=st.sampled_from(KNOWN),
    params=st.dictionaries(
        st.sampled_from(("format", "x", "limit", "")), st.text(max_size=20), max_size=3
    ),
    path=st.sampled_from(("", "/notice", "/notice/pdf", "/journal")),
)
def test_query_parameters_are_a_named_422_or_ignored_never_a_server_error(
    api: Api, case_id: str, params: dict[str, str], path: str
) -> None:
    before = api.store.entries()
    response = api.client.get(
        f"/v1/cases/{case_id}{path}", headers=api.headers(Role.AUDITOR), params=params
    )
    status = answered(api, response, before)
    if "format" in params and params["format"] not in ("json", "pdf") and path == "/notice":
        assert status == 422 and error_of(response)["field"] == "format"
    queue = api.client.get("/v1/queue", headers=api.headers(Role.OFFICER), params=params)
    assert answered(api, queue, before) == 200


# ---------------------------------------------------------------------- the laws can fail

BAD_INCOME: Final = json.dumps(dict(REAL_CASES[0], caseId="PLANT-1", asOf="2025-01-01")).encode()
GOOD_CASE: Final = json.dumps(dict(REAL_CASES[2], caseId="PLANT-2")).encode()


def test_the_intake_law_catches_a_refusal_that_journals(monkeypatch: pytest.MonkeyPatch) -> None:
    real = onramp.intake

    def journals_then_refuses(raw: Any, store: Store, **kwargs: Any) -> Any:
        store.append(raw["caseId"], "intake.accepted", {"digest": "planted"})
        return real(raw, store, **kwargs)

    monkeypatch.setattr(onramp, "intake", journals_then_refuses)
    with pytest.raises(AssertionError, match="a refused case changed the journal"):
        intake_law(InMemoryStore(), Fuzzed(BAD_INCOME, ("planted",)))


def test_the_intake_law_catches_a_prohibited_field_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    real = onramp.case_document
    monkeypatch.setattr(
        onramp, "case_document", lambda case: normal_form({**real(case)[0], "race": "planted"})
    )
    with pytest.raises(AssertionError, match="a prohibited field was stored"):
        intake_law(InMemoryStore(), Fuzzed(GOOD_CASE, ("planted",)))


def test_the_intake_law_lets_any_error_but_input_error_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def breaks(raw: Any, **kwargs: Any) -> Any:
        raise KeyError("planted")

    monkeypatch.setattr(onramp, "screen", breaks)
    with pytest.raises(KeyError, match="planted"):
        intake_law(InMemoryStore(), Fuzzed(GOOD_CASE, ("planted",)))


def _planted_rows() -> list[Fuzzed | None]:
    return [None, Fuzzed(BAD_INCOME, ("planted",)), None, Fuzzed(b"{nope", ("planted",))]


def test_the_decide_law_catches_a_bad_line_dropped_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.cases

    real = credit.cases.iter_cases
    monkeypatch.setattr(
        credit.cases,
        "iter_cases",
        lambda *a, **k: (e for e in real(*a, **k) if e.error is None or e.line != 4),
    )
    batch = write_batch(tmp_path, _planted_rows())
    with pytest.raises(AssertionError):
        decide_law(batch)
    monkeypatch.undo()
    assert decide_law(batch) == (2, 2)


def test_the_run_law_catches_a_rerun_that_journals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from credit.pipeline import Pipeline

    def every_time(self: Pipeline, case_ids: Any) -> None:
        self.store.append(case_ids[0], "ethics.finding", {"planted": True})

    monkeypatch.setattr(Pipeline, "record_ethics", every_time)
    with pytest.raises(AssertionError, match="a re-run changed the journal"):
        run_law(write_batch(tmp_path, _planted_rows()), tmp_path)


def test_the_run_law_catches_a_bad_line_that_reaches_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from credit.pipeline import Pipeline

    real = Pipeline._take_in

    def leaks(self: Pipeline, lines: Any, source: Any, *more: Any) -> Any:
        # A refused line that leaves a trace: a case the journal says was withdrawn.
        self.store.append("LEAKED", "case.withdrawn", {"planted": True})
        return real(self, lines, source, *more)

    monkeypatch.setattr(Pipeline, "_take_in", leaks)
    with pytest.raises(AssertionError, match="a named line adds nothing"):
        run_law(write_batch(tmp_path, _planted_rows()), tmp_path)


def test_the_api_law_catches_a_server_error_and_a_4xx_that_journals(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from credit.service.cases import CaseService

    def breaks(self: CaseService, raw: Any) -> Any:
        raise KeyError("planted")

    monkeypatch.setattr(CaseService, "take_in", breaks)
    with pytest.raises(AssertionError, match="500"):
        api_case_law(api, Fuzzed(GOOD_CASE, ("planted",)))

    def journals_then_refuses(self: CaseService, raw: Any) -> Any:
        self.store.append("PLANT-2", "intake.accepted", {"digest": "planted"})
        raise InputError("planted", field="caseId")

    monkeypatch.setattr(CaseService, "take_in", journals_then_refuses)
    with pytest.raises(AssertionError, match="a 422 changed the journal"):
        api_case_law(api, Fuzzed(GOOD_CASE, ("planted",)))


def test_the_api_law_catches_a_422_that_names_no_field(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from credit.service.cases import CaseService

    def unnamed(self: CaseService, raw: Any) -> Any:
        raise InputError("planted")

    monkeypatch.setattr(CaseService, "take_in", unnamed)
    with pytest.raises(AssertionError, match="a 422 that names no field"):
        api_case_law(api, Fuzzed(GOOD_CASE, ("planted",)))
