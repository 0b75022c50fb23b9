"""Intake (Onramp): a prohibited-basis field anywhere but ``monitoring`` is moved out of
the underwriter's reach, the move is journaled without its value, and intake is
idempotent."""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from conftest import auto_case, card_case
from credit.canonical import canonical_bytes, dumps, sha256_hex
from credit.errors import InputError, IntakeConflictError
from credit.governance.fair_lending import read_monitoring
from credit.governance.guard import find_prohibited_keys
from credit.governance.onramp import (
    INTAKE_ACCEPTED,
    INTAKE_MOVED,
    case_document,
    intake,
    moved_vault_key,
    read_vault,
)
from credit.journal import InMemoryStore, open_store
from credit.models import Application, CreditReport, MonitoringData, parse_case

MONITORING = {
    "race": "Asian",
    "ethnicity": "Not Hispanic or Latino",
    "sex": "Female",
    "age": 41,
    "maritalStatus": "Married",
    "publicAssistanceIncome": False,
}


def with_monitoring(case: dict[str, Any]) -> dict[str, Any]:
    return {**case, "monitoring": dict(MONITORING)}


def journal_text(store: InMemoryStore) -> str:
    return "".join(dumps(e.payload) for e in store.entries())


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_moved_value_is_kept_in_the_vault_as_it_reads_back_from_canonical_json(
    backend: str, tmp_path: Path
) -> None:
    # a case built in code may hold a float or a date where JSON holds neither
    raw = auto_case(case_id="C-MOVED")
    raw["application"]["maritalStatus"] = {"status": "married", "share": 0.1, "since": 2001}
    raw["application"]["dateOfBirth"] = dt.date(1961, 4, 2)
    with (
        contextlib.nullcontext(InMemoryStore())
        if backend == "memory"
        else open_store(f"sqlite:///{tmp_path / 'j.db'}")
    ) as store:
        intake(raw, store)
        row = store.get_monitoring(moved_vault_key("C-MOVED"))
    assert row is not None
    assert {m["key"]: m["value"] for m in row["moved"]} == {
        "maritalStatus": {"share": Decimal("0.1"), "since": 2001, "status": "married"},
        "dateOfBirth": "1961-04-02",
    }


def test_a_date_of_birth_in_the_application_is_moved_out_of_reach_and_journaled() -> None:
    store = InMemoryStore()
    raw = with_monitoring(auto_case(case_id="C-DOB"))
    raw["application"]["dateOfBirth"] = "1961-04-02"

    result = intake(raw, store)

    assert result.taken_in
    assert [(r.path, r.basis) for r in result.moved] == [("application.dateOfBirth", "age")]
    document = store.get_case("C-DOB")
    assert document is not None
    assert "dateOfBirth" not in document["application"]
    assert find_prohibited_keys(document) == []
    vault = read_vault(store, "C-DOB")
    assert vault is not None
    assert [(m.path, m.basis, m.value) for m in vault.moved] == [
        ("application.dateOfBirth", "age", "1961-04-02")
    ]
    assert store.get_monitoring("C-DOB") == MONITORING
    assert store.get_monitoring(moved_vault_key("C-DOB")) == {
        "caseId": "C-DOB",
        "moved": [
            {
                "path": "application.dateOfBirth",
                "key": "dateOfBirth",
                "basis": "age",
                "kind": "basis",
                "value": "1961-04-02",
            }
        ],
    }
    kinds = [e.kind for e in store.entries("C-DOB")]
    assert kinds == [INTAKE_MOVED, INTAKE_ACCEPTED]
    moved = store.entries("C-DOB", kinds=[INTAKE_MOVED])[0].payload
    assert moved["paths"] == ["application.dateOfBirth"]
    assert moved["moved"] == [{"path": "application.dateOfBirth", "basis": "age", "kind": "basis"}]
    assert "1961" not in journal_text(store)


def test_prohibited_fields_at_depth_in_the_credit_report_are_moved_under_any_spelling() -> None:
    store = InMemoryStore()
    raw = auto_case(case_id="C-DEEP")
    raw["creditReport"]["derogatories"] = [{"kind": "late60", "monthsAgo": 14, "GENDER": "F"}]
    raw["creditReport"]["bureau"]["Marital_Status"] = "single"
    raw["zip_code"] = "00000"

    result = intake(raw, store)

    assert sorted((r.path, r.basis) for r in result.moved) == [
        ("creditReport.bureau.Marital_Status", "maritalStatus"),
        ("creditReport.derogatories[0].GENDER", "sex"),
        ("zip_code", "zipCode"),
    ]
    document = store.get_case("C-DEEP")
    assert document is not None
    assert find_prohibited_keys(document) == []
    assert document["creditReport"]["derogatories"] == [{"kind": "late60", "monthsAgo": 14}]


def test_an_unknown_field_that_is_not_prohibited_is_still_an_error_naming_it() -> None:
    store = InMemoryStore()
    raw = auto_case(case_id="C-UNKNOWN")
    raw["application"]["dateOfBirth"] = "1961-04-02"
    raw["application"]["favouriteColourOfCar"] = "red"

    with pytest.raises(InputError) as caught:
        intake(raw, store)

    assert caught.value.field == "application.favouriteColourOfCar"
    assert caught.value.case_id == "C-UNKNOWN"
    assert store.entries() == []
    assert store.get_case("C-UNKNOWN") is None
    assert store.get_monitoring("C-UNKNOWN") is None
    assert store.get_monitoring(moved_vault_key("C-UNKNOWN")) is None


def test_monitoring_goes_to_the_vault_and_no_monitoring_value_reaches_the_journal() -> None:
    store = InMemoryStore()
    intake(with_monitoring(card_case(case_id="C-MON")), store)

    document = store.get_case("C-MON")
    assert document is not None
    assert set(document) == {"caseId", "asOf", "application", "creditReport"}
    vault = read_vault(store, "C-MON")
    assert vault is not None and vault.monitoring is not None
    assert vault.monitoring.to_wire() == MONITORING
    assert vault.moved == ()
    # The fair-lending review reads the monitoring data where it expects it.
    assert store.get_monitoring("C-MON") == MONITORING
    assert read_monitoring(store, "C-MON") == (MonitoringData.model_validate(MONITORING), None)
    assert store.get_monitoring(moved_vault_key("C-MON")) is None
    accepted = store.entries("C-MON", kinds=[INTAKE_ACCEPTED])[0].payload
    assert accepted["digest"] == sha256_hex(canonical_bytes(document))
    assert accepted["hasMonitoring"] is True
    text = journal_text(store)
    for value in ("Asian", "Female", "Married", "Hispanic"):
        assert value not in text


def test_a_case_taken_in_twice_is_not_taken_twice() -> None:
    store = InMemoryStore()
    raw = with_monitoring(auto_case(case_id="C-TWICE"))
    raw["application"]["dob"] = "1961-04-02"
    first = intake(raw, store)
    entries = store.entries()

    again = intake(copy.deepcopy(raw), store)

    assert first.taken_in and not again.taken_in
    assert again.digest == first.digest
    assert store.entries() == entries
    assert store.case_ids() == ["C-TWICE"]


def test_the_same_case_id_with_other_content_is_refused_with_both_digests() -> None:
    store = InMemoryStore()
    first = intake(auto_case(case_id="C-CLASH"), store)
    entries = store.entries()

    with pytest.raises(IntakeConflictError) as caught:
        intake(auto_case(case_id="C-CLASH", debt="1200.00"), store)

    assert caught.value.case_id == "C-CLASH"
    assert caught.value.existing_digest == first.digest
    assert caught.value.digest != first.digest
    assert store.entries() == entries
    assert store.get_case("C-CLASH") == first.document


def test_an_interrupted_intake_is_finished_by_the_next_run() -> None:
    store = InMemoryStore()
    raw = auto_case(case_id="C-HALF")
    case = parse_case(raw)
    store.put_case("C-HALF", case_document(case)[0])  # stored, never journaled

    result = intake(raw, store)

    assert result.taken_in
    assert [e.kind for e in store.entries()] == [INTAKE_ACCEPTED]


def test_the_stored_document_validates_back_into_the_same_application_and_report() -> None:
    store = InMemoryStore()
    raw = auto_case(case_id="C-UNSCORED", score=None)
    result = intake(raw, store)
    document = store.get_case("C-UNSCORED")
    assert document is not None

    assert document["creditReport"]["score"] is None
    assert Application.model_validate(document["application"]) == result.case.application
    assert CreditReport.model_validate(document["creditReport"]) == result.case.credit_report


def test_a_sql_store_holds_the_same_document_bytes_as_the_in_memory_store(
    tmp_path: Path,
) -> None:
    raw = with_monitoring(card_case(case_id="C-SQL"))
    raw["application"]["Date-Of-Birth"] = "1961-04-02"
    memory = InMemoryStore()
    intake(raw, memory)
    with open_store(f"sqlite:///{tmp_path / 'journal.db'}") as sql:
        result = intake(raw, sql)
        again = intake(raw, sql)
        stored = sql.get_case("C-SQL")
        assert stored is not None
        assert canonical_bytes(stored) == canonical_bytes(memory.get_case("C-SQL"))
        assert result.taken_in and not again.taken_in
        vault = read_vault(sql, "C-SQL")
        assert vault is not None and [m.path for m in vault.moved] == ["application.Date-Of-Birth"]
        assert sql.verify().ok


def test_a_case_without_monitoring_or_moved_fields_leaves_the_vault_empty() -> None:
    store = InMemoryStore()
    intake(card_case(case_id="C-BARE"), store)
    assert read_vault(store, "C-BARE") is None
    assert read_monitoring(store, "C-BARE") == (None, None)


def test_a_case_that_is_not_an_object_is_an_input_error() -> None:
    with pytest.raises(InputError, match="a case must be a JSON object, got array"):
        intake([], InMemoryStore())  # type: ignore[arg-type]
