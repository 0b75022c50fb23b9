"""One bad case is one error, in the governed run and the service.

A case that fails inside the underwriter turn, a Keystone review or its notice, for any
reason, is journaled once as ``turn.failed``, becomes one ``failed`` work item for a
credit officer, and every other case goes on; a re-run neither retries it nor adds an
entry. ``credit run`` names it on stderr every time: bad input (its own content: a term
the policy does not offer, a key factor code not in the catalogue) exits 2, any other
failure (an underwriter that raised, a policy edge no rule decides, a review or a send
that broke) exits 1. The service answers a case that cannot be underwritten with a 422
naming the field on the first decide and on every one after, journaling nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import auto_case, card_case
from credit.cli import app
from credit.errors import NoticeInputError
from credit.governance.backstop import Backstop
from credit.governance.equipoise import Equipoise
from credit.governance.governor import Governor
from credit.journal import InMemoryStore, open_store
from credit.lifecycle import CaseLife, fold_all
from credit.notices import InMemoryOutbox
from credit.pipeline import BatchLine, Pipeline, RunSummary
from credit.policy import PolicyRegistry
from credit.service.auth import Role
from credit.underwriters.rules import RulesUnderwriter
from service_support import Api, service_api
from test_cases_adversarial import expected_prefix, mixed_batch

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_POLICY = ROOT / "src" / "credit" / "data" / "policies" / "reference-2026.1.yaml"

# Cases inside the case format whose own content the policy cannot decide. (A key
# factor whose code the bureau formats do not know never gets this far: intake refuses
# it, naming creditReport.keyFactors[i].code; tests/test_guard_values.py.)
UNDECIDABLE = {
    "NIP-TERM": (auto_case(case_id="NIP-TERM", term=61), "application.termMonths", "61 months"),
    "NIP-AMT": (
        auto_case(case_id="NIP-AMT", amount="10.00"),
        "application.requestedAmount",
        "below the product minimum",
    ),
    "NIP-LINE": (
        card_case(case_id="NIP-LINE", line="0.00"),
        "application.requestedLine",
        "below the product minimum",
    ),
}


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


def lives(database: str) -> dict[str, CaseLife]:
    with open_store(database) as store:
        return fold_all(store.entries(), PolicyRegistry.bundled())


def journal(database: str) -> list[Any]:
    with open_store(database) as store:
        return store.entries()


def outbox_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*"))}


def named(stderr: str) -> list[str]:
    return sorted(line.strip() for line in stderr.splitlines() if ", line " in line)


# ---------------------------------------------------------------------- credit run


def test_credit_run_over_every_malformed_class_and_undecidable_cases_exits_2_naming_each(
    tmp_path: Path,
) -> None:
    """The done-when of issue 11: a mixed batch of good cases and every class of bad
    line; both runs exit 2 with no traceback, decide every good case, name every bad
    line; the re-run changes nothing; the journal verifies."""
    path, bad_at, good_ids = mixed_batch(tmp_path)
    rows = path.read_bytes().rstrip(b"\n").split(b"\n")
    undecidable_at: dict[int, str] = {}
    for case_id, (case, _, _) in UNDECIDABLE.items():
        rows.append(json.dumps(case).encode())
        undecidable_at[len(rows)] = case_id
        rows.append(json.dumps(auto_case(case_id=f"G-AFTER-{case_id}")).encode())
        good_ids.append(f"G-AFTER-{case_id}")
    path.write_bytes(b"\n".join(rows) + b"\n")
    database = f"sqlite:///{tmp_path / 'journal.db'}"
    outbox = tmp_path / "outbox"
    args = ("run", str(path), "--database", database, "--outbox", str(outbox))

    first = invoke(*args)
    assert first.exit_code == 2, first.output[-3000:]
    assert "journal: chain verified" in first.stdout
    reported = [line.strip() for line in first.stderr.splitlines() if ", line " in line]
    assert len(reported) == len(bad_at) + len(undecidable_at)
    for number, bad in bad_at.items():
        (row,) = [r for r in reported if r.startswith(expected_prefix(path, number, bad))]
        assert bad.says in row, (bad.kind, row[:300])
    for number, case_id in undecidable_at.items():
        _, field, says = UNDECIDABLE[case_id]
        prefix = f"{path}, line {number}, case {case_id}, field {field}: "
        (row,) = [r for r in reported if r.startswith(prefix)]
        assert says in row
    states = lives(database)
    for case_id in good_ids:
        assert states[case_id].decision is not None, case_id
        assert states[case_id].state not in ("failed", "received"), case_id
    for case_id in UNDECIDABLE:
        life = states[case_id]
        assert (life.state, life.item and life.item.kind, life.item and life.item.role) == (
            "failed",
            "failed",
            "officer",
        )
        assert [e.kind for e in journal(database) if e.case_id == case_id].count("turn.failed") == 1
    assert set(states) == set(good_ids) | set(UNDECIDABLE), "a bad line reached the journal"

    before, sent = journal(database), outbox_files(outbox)
    again = invoke(*args)
    assert again.exit_code == 2
    assert journal(database) == before and outbox_files(outbox) == sent
    assert named(again.stderr) == named(first.stderr)
    verified = invoke("journal", "verify", "--database", database)
    assert verified.exit_code == 0, verified.output


@pytest.fixture
def batch_file(tmp_path: Path) -> Callable[..., Path]:
    def write(*cases: dict[str, Any]) -> Path:
        path = tmp_path / "batch.jsonl"
        path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
        return path

    return write


def test_an_underwriter_that_raises_is_one_failed_case_named_exit_1_and_never_retried(
    tmp_path: Path, batch_file: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_drive = RulesUnderwriter.drive

    async def drive(self: RulesUnderwriter, session: Any) -> str:
        # Every turn of the rules underwriter goes through drive (run opens a session
        # and drives it; a run's turns share the runtime's one session).
        case_id = (await session.call("get_application")).data["caseId"]
        calls.append(case_id)
        if case_id == "BOOM":
            raise RuntimeError("the model endpoint answered 500")
        return await real_drive(self, session)

    monkeypatch.setattr(RulesUnderwriter, "drive", drive)
    path = batch_file(auto_case(case_id="OK-1"), auto_case(case_id="BOOM"), card_case())
    database = f"sqlite:///{tmp_path / 'journal.db'}"
    args = ("run", str(path), "--database", database, "--outbox", str(tmp_path / "out"))
    first = invoke(*args)
    assert first.exit_code == 1, first.output[-2000:]
    assert (
        f"{path}, line 2, case BOOM: the underwriter could not complete (RuntimeError: the "
        "model endpoint answered 500); a failed work item for a credit officer" in first.stderr
    )
    assert "1 of 3 case(s) failed (not bad input)" in first.stderr
    states = lives(database)
    assert states["BOOM"].state == "failed" and states["BOOM"].item is not None
    assert states["OK-1"].state == "approved" and states["C-CARD"].state == "approved"
    assert sorted(calls) == ["BOOM", "C-CARD", "OK-1"]
    before = journal(database)
    again = invoke(*args)
    assert again.exit_code == 1 and named(again.stderr) == named(first.stderr)
    assert journal(database) == before and sorted(calls) == ["BOOM", "C-CARD", "OK-1"]


def test_a_policy_edge_no_rule_decides_is_one_failed_case_naming_the_rule_exit_1(
    tmp_path: Path, batch_file: Callable[..., Path]
) -> None:
    """A lender's policy whose bands leave a gap (subprime from 500, the scale from 300):
    a score of 400 is on the scale, and no rule decides it. Not the case's fault: a
    person decides it."""
    gap = REFERENCE_POLICY.read_text(encoding="utf-8").replace(
        '(300..659).\n    reference: reference-policy.md, "Score bands"\n    unit: score\n'
        "    value: 300",
        '(500..659).\n    reference: reference-policy.md, "Score bands"\n    unit: score\n'
        "    value: 500",
    )
    assert gap.count("value: 500") == 1
    policy = tmp_path / "gap.yaml"
    policy.write_text(gap, encoding="utf-8")
    path = batch_file(auto_case(case_id="LOW", score=400), auto_case(case_id="OK"))
    database = f"sqlite:///{tmp_path / 'journal.db'}"
    args = ("run", str(path), "--policy", str(policy), "--database", database)
    first = invoke(*args, "--outbox", str(tmp_path / "out"))
    assert first.exit_code == 1, first.output[-2000:]
    assert (
        f"{path}, line 1, case LOW: the underwriter could not complete (UndecidedCaseError: "
        "score 400 is below every band's minimum" in first.stderr
    )
    states = lives(database)
    assert states["LOW"].state == "failed" and states["OK"].state == "approved"
    entries = journal(database)
    assert invoke(*args, "--outbox", str(tmp_path / "out")).exit_code == 1
    assert journal(database) == entries
    # The pure underwriter says the same of the same case: not bad input (2) but a
    # case for a person (1), named, and the other case still decided.
    decided = invoke("decide", str(path), "--policy", str(policy))
    assert decided.exit_code == 1, decided.output[-2000:]
    assert (
        f"{path}, line 1, case LOW: no rule of the policy decides it; a person must "
        "(UndecidedCaseError: score 400 is below every band's minimum" in decided.stderr
    )
    assert [json.loads(line)["caseId"] for line in decided.stdout.splitlines()] == ["OK"]


# ---------------------------------------------------------------------- every stage, once

Plant = Callable[[pytest.MonkeyPatch, list[str]], None]


def _raising(calls: list[str], error: Exception) -> Callable[..., Any]:
    def boom(*args: Any, **kwargs: Any) -> Any:
        calls.append("called")
        raise error

    return boom


def _context_seam(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    monkeypatch.setattr(Governor, "check_context", _raising(calls, RuntimeError("guard broke")))


def _equipoise(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    monkeypatch.setattr(Equipoise, "review", _raising(calls, RuntimeError("pool unreadable")))


def _backstop(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    monkeypatch.setattr(Backstop, "review", _raising(calls, RuntimeError("rederive broke")))


def _render(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    import credit.casework

    monkeypatch.setattr(credit.casework, "render_notice", _raising(calls, KeyError("template")))


def _send(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    # where the outbox keeps a notice (every send, one or many, goes through it)
    monkeypatch.setattr(InMemoryOutbox, "_store", _raising(calls, OSError("the disk is full")))


STAGES: dict[str, tuple[Plant, str, str]] = {
    "context seam": (_context_seam, "underwriter", "RuntimeError: guard broke"),
    "equipoise": (_equipoise, "review", "RuntimeError: pool unreadable"),
    "backstop": (_backstop, "review", "RuntimeError: rederive broke"),
    "render": (_render, "notice", "KeyError: 'template'"),
    "send": (_send, "notice", "OSError: the disk is full"),
}


@pytest.fixture
def declined() -> Iterator[list[BatchLine]]:
    """A decline (its notice is rendered and sent) and a card approval."""
    yield [
        BatchLine(1, auto_case(case_id="D-1", debt="4800.00")),
        BatchLine(2, card_case(case_id="A-1")),
    ]


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_step_that_raises_is_journaled_once_a_failed_item_and_never_run_again(
    stage: str, declined: list[BatchLine], monkeypatch: pytest.MonkeyPatch
) -> None:
    plant, step, error = STAGES[stage]
    calls: list[str] = []
    plant(monkeypatch, calls)
    store, outbox = InMemoryStore(), InMemoryOutbox()
    summary = Pipeline(store, outbox).run(declined, source="b.jsonl")
    failed = store.entries("D-1", kinds=["turn.failed"])
    assert len(failed) == 1 and failed[0].payload["stage"] == step
    assert failed[0].payload["error"] == error and failed[0].payload["input"] is False
    work = Pipeline(store, outbox).work
    life = work.life("D-1")
    assert life.state == "failed" and life.item is not None and life.item.role == "officer"
    assert summary.failures == []
    assert [str(f) for f in summary.failed_cases if f.case_id == "D-1"] == [
        f"b.jsonl, line 1, case D-1: the {step} could not complete ({error}); a failed work "
        "item for a credit officer (credit queue)"
    ]
    once = len(calls)
    assert once == (2 if stage in ("context seam", "equipoise", "backstop") else 1)  # D-1, A-1
    before = store.entries()
    again = Pipeline(store, outbox).run(declined, source="b.jsonl")
    assert store.entries() == before and len(calls) == once, "the failed step ran again"
    assert [f.case_id for f in again.failed_cases] == [f.case_id for f in summary.failed_cases]


def test_a_notice_the_case_content_cannot_render_is_bad_input_named_with_its_field(
    declined: list[BatchLine], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    import credit.casework

    error = NoticeInputError(
        "the bureau phone is not a phone number", field="creditReport.bureau.phone"
    )
    monkeypatch.setattr(credit.casework, "render_notice", _raising(calls, error))
    store = InMemoryStore()
    summary: RunSummary = Pipeline(store, InMemoryOutbox()).run(declined, source="b.jsonl")
    assert [str(f) for f in summary.failures] == [
        "b.jsonl, line 1, case D-1, field creditReport.bureau.phone: the bureau phone is not "
        "a phone number"
    ]
    assert summary.failed_cases == [] and len(calls) == 1


def test_an_intake_that_breaks_on_one_line_names_it_and_takes_the_rest_in(
    declined: list[BatchLine], monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.pipeline
    from credit.governance.onramp import intake

    def breaks(raw: Any, store: Any, **kwargs: Any) -> Any:
        if raw["caseId"] == "D-1":
            raise KeyError("vault")
        return intake(raw, store, **kwargs)

    monkeypatch.setattr(credit.pipeline, "intake", breaks)
    store = InMemoryStore()
    summary = Pipeline(store, InMemoryOutbox()).run(declined, source="b.jsonl")
    assert summary.failures == []
    assert [str(f) for f in summary.failed_cases] == [
        "b.jsonl, line 1, case D-1: the intake could not complete (KeyError: 'vault'); not "
        "taken in, nothing journaled"
    ]
    assert (
        store.entries("D-1") == []
        and Pipeline(store, InMemoryOutbox()).work.life("A-1").state == "approved"
    )


def test_a_case_dated_at_the_end_of_the_calendar_is_decided_its_deadline_the_last_day() -> None:
    """The policy has no end date, so it covers 9999-12-31; the Regulation B deadline 30
    days on is past any date (it crashed the whole run, and the service's decide)."""
    lines = [
        BatchLine(1, auto_case(case_id="FAR-1", as_of="9999-12-31", tradelines=1)),
        BatchLine(2, auto_case(case_id="FAR-2", as_of="9999-12-20", debt="4800.00")),
    ]
    store = InMemoryStore()
    pipeline = Pipeline(store, InMemoryOutbox())
    summary = pipeline.run(lines)
    assert summary.failures == [] and summary.failed_cases == []
    referred = pipeline.work.life("FAR-1")
    assert referred.state == "referred" and referred.item is not None
    assert referred.item.deadline.isoformat() == "9999-12-31"
    assert "past any calendar date" in referred.item.why[-1]
    assert pipeline.work.life("FAR-2").state == "notified"


# ---------------------------------------------------------------------- the service


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with service_api("sqlite", tmp_path_factory.mktemp("failures")) as built:
        yield built


@pytest.mark.parametrize("case_id", list(UNDECIDABLE))
def test_a_case_the_service_cannot_underwrite_is_422_naming_the_field_on_every_decide(
    api: Api, case_id: str
) -> None:
    case, field, says = UNDECIDABLE[case_id]
    assert api.take_in(case).status_code == 201
    first = api.decide(case_id)
    assert first.status_code == 422, first.text
    error = first.json()["error"]
    assert (error["field"], error["caseId"]) == (field, case_id) and says in error["message"]
    settled = api.store.entries()
    for _ in range(3):
        again = api.decide(case_id)
        assert again.status_code == 422 and again.json()["error"] == error
    assert api.store.entries() == settled, "a repeated decide journaled something"
    assert len(api.store.entries(case_id, kinds=["turn.failed"])) == 1


def test_a_case_whose_underwriter_raises_is_failed_once_and_a_repeat_is_409_changing_nothing(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: RulesUnderwriter, *args: Any) -> str:
        raise RuntimeError("the model endpoint answered 500")

    # on its own session (run) or on the worker thread's served one (drive)
    monkeypatch.setattr(RulesUnderwriter, "run", broken)
    monkeypatch.setattr(RulesUnderwriter, "drive", broken)
    assert api.take_in(auto_case(case_id="SVC-BOOM")).status_code == 201
    first = api.decide("SVC-BOOM")
    assert first.status_code == 201 and first.json()["life"] == "failed"
    assert first.json()["item"]["kind"] == "failed"
    settled = api.store.entries()
    again = api.decide("SVC-BOOM")
    assert again.status_code == 409 and "failed" in again.json()["error"]["message"]
    assert api.store.entries() == settled


def test_a_body_that_is_json_but_not_an_object_is_422_naming_the_body(api: Api) -> None:
    for body in (b"null", b"42", b'"a case"', b"true", b"[]"):
        response = api.client.post("/v1/cases", content=body, headers=api.headers(Role.INTAKE))
        assert response.status_code == 422
        assert response.json()["error"]["field"] == "body", body


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("/v1/cases", Role.INTAKE),
        ("/v1/cases/ANY-1/release", Role.REVIEWER),
        ("/v1/cases/ANY-1/manual-decision", Role.OFFICER),
        ("/v1/cases/ANY-1/withdraw", Role.OFFICER),
    ],
)
def test_a_body_that_is_not_utf8_is_422_naming_the_body_not_a_bare_400(
    api: Api, path: str, role: Role
) -> None:
    before = api.store.entries()
    response = api.client.post(
        path,
        content=b'{"reason": "checked \xff"}',
        headers={**api.headers(role), "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == "body" and "not" in error["message"]
    assert api.store.entries() == before


def test_the_service_decides_a_case_dated_at_the_end_of_the_calendar(api: Api) -> None:
    assert api.take_in(auto_case(case_id="SVC-FAR", as_of="9999-12-31")).status_code == 201
    decided = api.decide("SVC-FAR")
    assert decided.status_code == 201, decided.text
    assert decided.json()["life"] == "approved"
