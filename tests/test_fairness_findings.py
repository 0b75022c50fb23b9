"""The portfolio review can say no: a group whose adverse impact ratio's interval lies
wholly under the four-fifths line is a finding (``credit fairness``, the console); one
whose interval reaches the line is not."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from console_support import service_app
from credit.cli import app
from credit.governance.fair_lending import default_fair_lending_config
from credit.governance.portfolio import PortfolioRow, adverse_impact_report
from credit.journal import InMemoryStore, open_store
from credit.models import MonitoringData
from credit.service.keys import MemoryKeyStore
from credit.service.roles import Role
from governance_support import monitoring

CONFIG = default_fair_lending_config()


def rows(group: str, approved: int, declined: int) -> list[PortfolioRow]:
    data = MonitoringData(race=group, sex="Female", ethnicity="Not Hispanic or Latino", age=40)
    return [
        PortfolioRow(f"{group}-{i}", "approve" if i < approved else "decline", data)
        for i in range(approved + declined)
    ]


def test_a_group_whose_interval_lies_wholly_under_the_line_is_a_finding() -> None:
    report = adverse_impact_report(rows("Zeta", 90, 10) + rows("Eta", 30, 70), CONFIG)
    (finding,) = report.findings
    assert (finding.attribute, finding.group, finding.reference) == ("race", "Eta", "Zeta")
    assert finding.interval[1] < 0.80
    assert "lies wholly under the four-fifths line 0.80" in finding.message


def test_a_group_below_the_line_whose_interval_reaches_it_is_no_finding() -> None:
    # A ratio under 0.80 on few applications: the interval reaches the line.
    report = adverse_impact_report(rows("Zeta", 28, 7) + rows("Eta", 21, 14), CONFIG)
    eta = report.attribute("race").group("Eta")
    assert eta.air is not None and eta.air < 0.80
    assert eta.air_ci is not None and eta.air_ci[1] >= 0.80
    assert report.findings == ()


def test_credit_fairness_prints_the_finding(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    store = open_store(url)
    try:
        for group, approved, declined in (("Zeta", 60, 6), ("Eta", 18, 48)):
            for i in range(approved + declined):
                case_id = f"{group}-{i}"
                store.put_monitoring(case_id, monitoring(race=group))
                decision = "approve" if i < approved else "decline"
                store.record_decision(case_id, {"decision": _wire(decision), "status": "held"})
    finally:
        store.close()
    result = CliRunner().invoke(app, ["fairness", "--database", url])
    assert result.exit_code == 0, result.output
    assert "FINDING race Eta: adverse impact ratio" in result.output


def _wire(decision: str) -> dict[str, object]:
    wire: dict[str, object] = {
        "product": "card",
        "decision": decision,
        "scoreBand": "prime",
        "dtiPct": "20.0",
        "ltvPct": None,
        "policyBasis": ["policy"],
        "factors": [],
        "confidence": "0.9",
    }
    if decision == "approve":
        wire["terms"] = {"apr": "19.99", "creditLine": "5000.00"}
    else:
        wire["factors"] = ["x"]
    return wire


def test_the_console_shows_the_portfolio_and_its_findings(tmp_path: Path) -> None:
    store = InMemoryStore()
    for group, approved, declined in (("Zeta", 60, 6), ("Eta", 18, 48)):
        for i in range(approved + declined):
            case_id = f"{group}-{i}"
            store.put_monitoring(case_id, monitoring(race=group))
            decision = "approve" if i < approved else "decline"
            store.record_decision(case_id, {"decision": _wire(decision), "status": "held"})
    keys = MemoryKeyStore(scrypt_n=2**10)
    _, key = keys.create(Role.AUDITOR, "Ada Auditor")
    with TestClient(service_app(tmp_path, store=store, keys=keys)) as client:
        client.post("/console/login", data={"api_key": key})
        page = client.get("/console/fairness")
        assert page.status_code == 200
        assert "equipoise.portfolio_adverse_impact" in page.text
        assert "race Eta: adverse impact ratio" in page.text
