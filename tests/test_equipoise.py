"""Equipoise, the fair-lending review: prohibited-basis citations fail, the comparative
file review finds disparities for a person, and the portfolio report gives approval
rates and adverse impact ratios with seeded bootstrap intervals."""

from __future__ import annotations

import dataclasses
import sys
from decimal import Decimal
from typing import Any

import pytest

from conftest import POLICY, auto_case, card_case, decide
from credit.errors import CreditError, GovernanceError, MissingExtraError, PolicyError
from credit.governance.equipoise import Equipoise
from credit.governance.fair_lending import (
    NOT_PROVIDED,
    age_band_labels,
    default_fair_lending_config,
    default_fair_lending_config_path,
    group_of,
    load_fair_lending_config,
)
from credit.governance.findings import KIND_REJECTED
from credit.governance.portfolio import (
    FLAG_ADVERSE_IMPACT,
    FLAG_INSUFFICIENT,
    FLAG_OK,
    FLAG_REFERENCE,
    FLAG_UNDEFINED,
    FLAG_WATCH,
    PortfolioRow,
    adverse_impact_report,
)
from credit.journal import InMemoryStore
from credit.models import MonitoringData
from credit.underwriting import decide_case
from governance_support import monitoring, record

CONFIG = default_fair_lending_config()


def codes(review: Any) -> list[str]:
    return [f.code for f in review.findings]


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


# ---------------------------------------------------------------- the parameters


def test_every_parameter_of_the_fair_lending_review_is_data_with_a_unit_and_reference() -> None:
    assert CONFIG.label == "fair-lending-review v2026.1"
    assert CONFIG.outcome_order == ("decline", "counteroffer", "refer", "approve")
    assert [f.name for f in CONFIG.comparative_factors][:4] == [
        "score",
        "dtiPct",
        "ltvPct",
        "requested",
    ]
    assert CONFIG.comparative_excluded == ("refer",)
    assert (CONFIG.adverse_impact_ratio, CONFIG.watch_ratio) == (Decimal("0.80"), Decimal("0.90"))
    assert CONFIG["portfolio.adverseImpactRatio"].reference.startswith("29 CFR 1607.4(D)")
    for param in CONFIG.params.values():
        assert param.unit and param.reference


@pytest.mark.parametrize(
    ("old", "new", "key", "message"),
    [
        (
            "    value: [refer]\n  factors:",
            "    value: [refer]\n    extra: 1\n  factors:",
            "comparative.excludedOutcomes.extra",
            "unknown key",
        ),
        (
            '{factor: score, stronger: higher, tolerance: "0"}',
            '{factor: shoeSize, stronger: higher, tolerance: "0"}',
            "comparative.factors.value[0].factor",
            "not one of",
        ),
        (
            '{factor: score, stronger: higher, tolerance: "0"}',
            '{factor: score, stronger: taller, tolerance: "0"}',
            "comparative.factors.value[0].stronger",
            "higher or lower",
        ),
        (
            '{factor: score, stronger: higher, tolerance: "0"}',
            '{factor: score, stronger: higher, tolerance: "-1"}',
            "comparative.factors.value[0].tolerance",
            "negative",
        ),
        (
            "value: [decline, counteroffer, refer, approve]",
            "value: [decline, refer, approve]",
            "outcomeOrder",
            "exactly once",
        ),
        ("value: [approve]", "value: [maybe]", "portfolio.favourableOutcomes.value", "not one of"),
        (
            '    value: "0.90"',
            '    value: "0.70"',
            "portfolio.watchRatio",
            "adverseImpactRatio <= watchRatio",
        ),
        ("value: [25, 40, 62]", "value: [40, 25, 62]", "groups.ageBands.value", "ascending"),
        (
            "value: [race, ethnicity, sex, ageBand]\n",
            "value: [race, religion]\n",
            "comparative.attributes.value",
            "not one of",
        ),
    ],
)
def test_the_fair_lending_parameters_are_loaded_strictly(
    old: str, new: str, key: str, message: str
) -> None:
    text = default_fair_lending_config_path().read_text(encoding="utf-8")
    assert old in text
    with pytest.raises(PolicyError) as caught:
        load_fair_lending_config("bad.yaml", text.replace(old, new, 1))
    assert caught.value.key == key
    assert message in caught.value.message
    assert caught.value.file == "bad.yaml"


@pytest.mark.parametrize(
    ("attribute", "data", "group"),
    [
        ("race", {"race": "Asian"}, "Asian"),
        ("race", {"race": "Information not provided"}, NOT_PROVIDED),
        ("race", {}, NOT_PROVIDED),
        ("ageBand", {"age": 24}, "under 25"),
        ("ageBand", {"age": 25}, "25-39"),
        ("ageBand", {"age": 61}, "40-61"),
        ("ageBand", {"age": 62}, "62 and over"),
        ("publicAssistanceIncome", {"publicAssistanceIncome": True}, "yes"),
        ("publicAssistanceIncome", {"publicAssistanceIncome": False}, "no"),
        ("maritalStatus", {"maritalStatus": "Married"}, "Married"),
    ],
)
def test_an_applicant_is_grouped_from_the_monitoring_data(
    attribute: str, data: dict[str, Any], group: str
) -> None:
    assert group_of(attribute, MonitoringData.model_validate(data), CONFIG) == group


def test_an_applicant_with_no_monitoring_data_is_in_the_not_provided_group() -> None:
    assert group_of("sex", None, CONFIG) == NOT_PROVIDED
    assert age_band_labels(CONFIG) == ("under 25", "25-39", "40-61", "62 and over")


# ---------------------------------------------------------------- per decision


def test_a_clean_decision_with_no_comparable_applicants_passes_without_findings(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="E1"), monitor=monitoring())
    review = Equipoise(store).review("E1")
    assert review.passed
    assert review.findings == ()
    assert review.basis["config"] == CONFIG.label


@pytest.mark.parametrize(
    ("field", "text", "basis"),
    [
        ("factors", "Declined because of your age.", "prohibited basis age ('age')"),
        ("factors", "Applicants who are Married-Filing-Jointly get better terms.", "married"),
        ("policyBasis", "applicant zip code considered", "proxy zipCode for race"),
        ("factors", "Income from SSI is not counted.", "publicAssistanceIncome"),
    ],
)
def test_a_decision_citing_a_prohibited_basis_or_proxy_fails_the_review(
    store: InMemoryStore, field: str, text: str, basis: str
) -> None:
    case = card_case(case_id="E2", score=600)
    wire_list = list(
        getattr(decide(case).decision, "factors" if field == "factors" else "policy_basis")
    )
    record(store, case, monitor=monitoring(), changes={field: [*wire_list, text]})
    review = Equipoise(store).review("E2")
    assert not review.passed
    assert codes(review) == ["equipoise.prohibited_basis_cited"]
    finding = review.findings[0]
    assert finding.holds
    assert finding.detail["field"] == f"{field}[{len(wire_list)}]"
    assert basis in finding.message
    assert finding.detail["text"] == text


def test_the_age_of_accounts_in_a_bureau_reason_is_not_a_citation_of_age(
    store: InMemoryStore,
) -> None:
    case = auto_case(case_id="E3", score=590)
    factors = [*decide(case).decision.factors, "Average age of accounts is 3 years."]
    record(store, case, monitor=monitoring(), changes={"factors": factors})
    assert "equipoise.prohibited_basis_cited" not in codes(Equipoise(store).review("E3"))


def record_declined(store: InMemoryStore, case: dict[str, Any], **monitor: Any) -> None:
    """Record a decline for a case the rules approve (a model's or a person's)."""
    underwriting = decide(case)
    assert underwriting.decision.decision == "approve"
    wire = underwriting.decision.to_wire()
    wire["decision"] = "decline"
    wire.pop("terms")
    store.put_case(
        case["caseId"], {k: case[k] for k in ("caseId", "asOf", "application", "creditReport")}
    )
    store.put_monitoring(case["caseId"], monitoring(**monitor))
    store.record_decision(
        case["caseId"],
        {"decision": wire, "reasons": [], "status": "held", "underwriter": "a-model"},
    )


def test_the_comparative_file_review_holds_a_planted_disparity_naming_both_cases(
    store: InMemoryStore,
) -> None:
    # B's file is weaker on the score and equal on everything else, and B was
    # approved; A, in another race group, was declined.
    record(store, auto_case(case_id="P-B", score=650), monitor=monitoring(race="White"))
    record_declined(store, auto_case(case_id="P-A", score=700), race="Asian")
    review = Equipoise(store).review("P-A")
    assert not review.passed
    assert codes(review) == [
        "equipoise.less_favourable_than_policy",
        "equipoise.comparative_disparity",
    ]
    finding = review.findings[1]
    assert finding.holds
    assert finding.detail["caseId"] == "P-A"
    assert finding.detail["comparables"] == [
        {"caseId": "P-B", "decision": "approve", "differsOn": ["race"]}
    ]
    assert "P-B (approve)" in finding.message
    assert "equal or weaker on every factor the policy uses" in finding.message
    less = review.findings[0]
    assert less.holds and less.detail == {"decision": "decline", "derived": "approve"}


def test_a_review_reads_no_file_again_that_the_pool_has_just_read(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison pool reads a run group's decided cases just before their reviews:
    what it parsed (the file, the monitoring data) is what the reviews use, and a case
    it has not read is read as before."""
    import credit.models as models_module
    from credit.kept import KeptPer

    record(store, auto_case(case_id="P-B", score=650), monitor=monitoring(race="White"))
    record_declined(store, auto_case(case_id="P-A", score=700), race="Asian")
    equipoise = Equipoise(store)
    pool = equipoise.pool()  # reads both cases' files
    parsed: list[str] = []
    real = models_module.parse_case

    def counted(data: Any) -> Any:
        parsed.append(data["caseId"])
        return real(data)

    monkeypatch.setattr(models_module, "parse_case", counted)
    # the review's own keeping, alone
    monkeypatch.setattr(models_module, "_stored", KeptPer(counted))
    review = equipoise.review("P-A", pool=pool)
    assert parsed == []  # the pool's reading of P-A served the review
    assert codes(review) == [
        "equipoise.less_favourable_than_policy",
        "equipoise.comparative_disparity",
    ]  # the same review as read afresh (the planted disparity above)
    record(store, auto_case(case_id="P-C", score=700), monitor=monitoring(race="White"))
    equipoise.review("P-C", pool=pool)  # recorded after the pool's reading: read now
    assert parsed == ["P-C"]


def test_the_rules_underwriters_own_decisions_never_hold_the_comparative_review(
    store: InMemoryStore,
) -> None:
    # A declined on its score, B approved: B's file is stronger (score), so they are
    # not comparable; the policy's rules are monotone in every factor.
    record(store, auto_case(case_id="P-A", score=650), monitor=monitoring(race="White"))
    record(store, auto_case(case_id="P-D", score=590), monitor=monitoring(race="Asian"))
    assert Equipoise(store).review("P-D").passed


@pytest.mark.parametrize(
    ("other", "why"),
    [
        (auto_case(case_id="P-B", score=650), "same group"),
        (auto_case(case_id="P-B", score=710), "a stronger score"),
        (auto_case(case_id="P-B", score=650, debt="500.00"), "a lower DTI"),
        (auto_case(case_id="P-B", score=650, value="30000.00"), "a lower LTV"),
        (auto_case(case_id="P-B", score=650, amount="15000.00"), "a smaller request"),
        (auto_case(case_id="P-B", score=650, tradelines=12), "a deeper file"),
        (card_case(case_id="P-B", score=650), "another product"),
    ],
)
def test_an_applicant_whose_file_is_stronger_somewhere_or_in_the_same_group_is_not_compared(
    store: InMemoryStore, other: dict[str, Any], why: str
) -> None:
    group = "Asian" if why == "same group" else "White"
    record(store, other, monitor=monitoring(race=group))
    record_declined(store, auto_case(case_id="P-A", score=700), race="Asian")
    review = Equipoise(store).review("P-A")
    assert "equipoise.comparative_disparity" not in codes(review), why


def test_a_decision_recorded_after_the_one_reviewed_is_not_compared(store: InMemoryStore) -> None:
    record_declined(store, auto_case(case_id="P-A", score=700), race="Asian")
    record(store, auto_case(case_id="P-B", score=650), monitor=monitoring(race="White"))
    assert "equipoise.comparative_disparity" not in codes(Equipoise(store).review("P-A"))


def test_a_referral_is_compared_with_nothing(store: InMemoryStore) -> None:
    record(store, auto_case(case_id="P-B", score=650), monitor=monitoring(race="White"))
    record(
        store,
        auto_case(case_id="P-A", score=700),
        monitor=monitoring(race="Asian"),
        changes={"decision": "refer", "terms": None},
    )
    assert "equipoise.comparative_disparity" not in codes(Equipoise(store).review("P-A"))


def test_a_group_not_provided_is_never_compared(store: InMemoryStore) -> None:
    record(
        store,
        auto_case(case_id="P-B", score=650),
        monitor=monitoring(race="Information not provided", sex=None, ethnicity=None, age=None),
    )
    record_declined(store, auto_case(case_id="P-A", score=700), race="Asian")
    assert "equipoise.comparative_disparity" not in codes(Equipoise(store).review("P-A"))


def test_a_decision_with_no_monitoring_data_is_noted_and_not_compared(
    store: InMemoryStore,
) -> None:
    record(store, auto_case(case_id="P-A", score=650), monitor=monitoring(race="White"))
    record(store, auto_case(case_id="P-D", score=590))
    review = Equipoise(store).review("P-D")
    assert review.passed
    assert codes(review) == ["equipoise.no_monitoring_data"]


def test_a_decision_rejected_by_a_person_is_not_a_comparable(store: InMemoryStore) -> None:
    record(store, auto_case(case_id="P-A", score=650), monitor=monitoring(race="White"))
    record(store, auto_case(case_id="P-D", score=590), monitor=monitoring(race="Asian"))
    store.append("P-A", KIND_REJECTED, {"by": "Dana", "reason": "test"})
    assert Equipoise(store).review("P-D").findings == ()


def test_equipoise_refuses_a_case_with_no_recorded_decision(store: InMemoryStore) -> None:
    with pytest.raises(GovernanceError, match="case Z, equipoise: no decision is recorded"):
        Equipoise(store).review("Z")


# ---------------------------------------------------------------- per portfolio


def rows(
    spec: dict[str, tuple[int, int]], *, attribute: str = "race", refer: int = 0
) -> list[PortfolioRow]:
    """``{group: (applicants, approved)}``: the rest are declined."""
    out: list[PortfolioRow] = []
    for group, (n, approved) in spec.items():
        data = MonitoringData.model_validate({attribute: group})
        for i in range(n):
            outcome = "approve" if i < approved else "decline"
            out.append(PortfolioRow(f"{group}-{i}", outcome, data))
        for i in range(refer):
            out.append(PortfolioRow(f"{group}-r{i}", "refer", data))
    return out


def race_config() -> Any:
    return dataclasses.replace(
        CONFIG,
        params={
            **CONFIG.params,
            "portfolio.attributes": CONFIG["portfolio.attributes"].model_copy(
                update={"value": ("race",)}
            ),
        },
    )


def test_a_portfolio_with_a_known_disparity_is_flagged_under_the_four_fifths_rule() -> None:
    report = adverse_impact_report(rows({"White": (100, 60), "Asian": (100, 30)}), race_config())
    race = report.attribute("race")
    assert race.reference_group == "White"
    asian, white = race.group("Asian"), race.group("White")
    assert (asian.rate, white.rate) == (0.30, 0.60)
    assert asian.air == pytest.approx(0.5)
    assert asian.flag == FLAG_ADVERSE_IMPACT
    assert white.flag == FLAG_REFERENCE and white.air == 1.0
    assert asian.air_ci is not None and asian.rate_ci is not None
    assert asian.air_ci[0] < 0.5 < asian.air_ci[1] < 0.80
    assert asian.rate_ci[0] < 0.30 < asian.rate_ci[1]
    assert report.flagged == ((("race", asian)),)


def test_a_portfolio_without_a_disparity_is_not_flagged() -> None:
    report = adverse_impact_report(rows({"White": (100, 60), "Asian": (100, 60)}), race_config())
    race = report.attribute("race")
    assert race.reference_group == "Asian"  # a tie goes to the first in report order
    assert [g.flag for g in race.groups] == [FLAG_REFERENCE, FLAG_OK]
    white = race.group("White")
    assert white.air == 1.0
    assert white.air_ci is not None and white.air_ci[0] < 1.0 < white.air_ci[1]
    assert report.flagged == ()


def test_a_ratio_exactly_at_four_fifths_is_on_watch_not_adverse_impact() -> None:
    report = adverse_impact_report(rows({"White": (100, 50), "Asian": (100, 40)}), race_config())
    assert report.attribute("race").group("Asian").flag == FLAG_WATCH
    report = adverse_impact_report(rows({"White": (100, 50), "Asian": (100, 39)}), race_config())
    assert report.attribute("race").group("Asian").flag == FLAG_ADVERSE_IMPACT
    report = adverse_impact_report(rows({"White": (100, 50), "Asian": (100, 45)}), race_config())
    assert report.attribute("race").group("Asian").flag == FLAG_OK


def test_a_group_with_too_few_applicants_is_reported_as_insufficient_never_dropped() -> None:
    spec = {"White": (100, 60), "Asian": (100, 55), "American Indian or Alaska Native": (5, 5)}
    report = adverse_impact_report(rows(spec), race_config())
    race = report.attribute("race")
    small = race.group("American Indian or Alaska Native")
    assert small.flag == FLAG_INSUFFICIENT
    assert (small.applications, small.decided, small.approved, small.rate) == (5, 5, 5, 1.0)
    assert race.reference_group == "White"  # a tiny perfect group is never the reference
    assert [g.group for g in race.groups] == [
        "American Indian or Alaska Native",
        "Asian",
        "White",
    ]


def test_referrals_are_counted_but_left_out_of_the_rates() -> None:
    report = adverse_impact_report(
        rows({"White": (100, 60), "Asian": (100, 60)}, refer=10), race_config()
    )
    white = report.attribute("race").group("White")
    assert (white.applications, white.decided, white.approved) == (110, 100, 60)
    assert report.excluded == {"refer": 20}
    assert (report.applications, report.decided) == (220, 200)


def test_applicants_who_did_not_provide_a_group_are_shown_but_never_the_reference() -> None:
    spec = {"White": (100, 50), "Information not provided": (100, 90)}
    race = adverse_impact_report(rows(spec), race_config()).attribute("race")
    assert race.reference_group == "White"
    assert [g.group for g in race.groups] == ["White", NOT_PROVIDED]
    assert race.group(NOT_PROVIDED).flag == FLAG_OK


def test_an_attribute_nobody_provided_has_no_reference_group() -> None:
    report = adverse_impact_report(rows({"White": (100, 50)}))
    sex = report.attribute("sex")
    assert sex.reference_group is None
    assert [(g.group, g.flag, g.air) for g in sex.groups] == [(NOT_PROVIDED, FLAG_UNDEFINED, None)]


def test_the_portfolio_report_is_deterministic_for_the_same_portfolio() -> None:
    portfolio = rows({"White": (80, 50), "Asian": (60, 20), "Black or African American": (70, 40)})
    first = adverse_impact_report(portfolio)
    second = adverse_impact_report(list(portfolio))
    assert first == second
    reseeded = dataclasses.replace(
        CONFIG,
        params={
            **CONFIG.params,
            "portfolio.bootstrapSeed": CONFIG["portfolio.bootstrapSeed"].model_copy(
                update={"value": 7}
            ),
        },
    )
    other = adverse_impact_report(portfolio, reseeded)
    assert (
        other.attribute("race").group("Asian").rate == first.attribute("race").group("Asian").rate
    )
    assert (
        other.attribute("race").group("Asian").air_ci
        != first.attribute("race").group("Asian").air_ci
    )


def test_the_bootstrap_intervals_agree_with_fairlearns_own_bootstrap() -> None:
    from fairlearn.metrics import MetricFrame, selection_rate

    portfolio = rows({"White": (150, 90), "Asian": (120, 48)})
    report = adverse_impact_report(portfolio, race_config())
    frame = MetricFrame(
        metrics={"selection_rate": selection_rate},
        y_true=[int(r.outcome == "approve") for r in portfolio],
        y_pred=[int(r.outcome == "approve") for r in portfolio],
        sensitive_features={"race": [r.monitoring.race for r in portfolio if r.monitoring]},
        n_boot=300,
        ci_quantiles=[0.025, 0.975],
        random_state=11,
    )
    low, high = frame.by_group_ci
    for group in ("White", "Asian"):
        ours = report.attribute("race").group(group)
        assert ours.rate == pytest.approx(frame.by_group["selection_rate"][group])
        assert ours.rate_ci is not None
        assert ours.rate_ci[0] == pytest.approx(low["selection_rate"][group], abs=0.03)
        assert ours.rate_ci[1] == pytest.approx(high["selection_rate"][group], abs=0.03)


def test_the_portfolio_is_read_from_the_journal_with_monitoring_data(
    store: InMemoryStore,
) -> None:
    for i in range(3):
        record(store, auto_case(case_id=f"W{i}"), monitor=monitoring(race="White", age=30))
        record(store, auto_case(case_id=f"A{i}", score=560), monitor=monitoring(race="Asian"))
    record(store, auto_case(case_id="N0"))
    store.append("W0", KIND_REJECTED, {"by": "Dana", "reason": "test"})
    report = Equipoise(store).portfolio()
    assert report.applications == 6
    assert report.rejected_by_person == 1
    race = report.attribute("race")
    assert [(g.group, g.decided, g.approved) for g in race.groups] == [
        ("Asian", 3, 0),
        ("White", 2, 2),
        (NOT_PROVIDED, 1, 1),
    ]
    assert all(g.flag == FLAG_INSUFFICIENT for g in race.groups)  # 30 needed
    assert [a.attribute for a in report.attributes] == list(CONFIG.portfolio_attributes)


def test_the_portfolio_report_without_fairlearn_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "fairlearn.metrics", None)
    with pytest.raises(MissingExtraError) as caught:
        adverse_impact_report(rows({"White": (10, 5)}))
    assert (caught.value.extra, caught.value.package) == ("fairness", "fairlearn")
    assert str(caught.value) == (
        "the portfolio fairness report needs fairlearn "
        "(install the 'fairness' extra: pip install 'credit[fairness]')"
    )


def test_no_decision_of_the_policys_own_rules_is_held_by_the_comparative_review() -> None:
    """The policy's rules are monotone in every compared factor: over the bundled cases
    and 3,000 generated ones, each with an applicant drawn into groups at random, the
    rules underwriter's decisions never trigger a comparative hold or a decision less
    favourable than the policy's own. (A review that holds everything is as useless as
    one that holds nothing.)"""
    import random

    from credit.governance.onramp import case_document
    from secondline_support import bundled_cases, generated_cases

    rng = random.Random(20261201)
    store = InMemoryStore()
    cases = bundled_cases() + generated_cases(20261201, 3_000, POLICY)
    recorded = 0
    for i, case in enumerate(cases):
        case = case.model_copy(update={"case_id": f"M{i:05d}"})
        try:
            underwriting = decide_case(case, POLICY)
        except CreditError:
            continue
        store.put_case(case.case_id, case_document(case)[0])
        store.put_monitoring(
            case.case_id,
            monitoring(
                race=rng.choice(["White", "Asian", "Black or African American"]),
                sex=rng.choice(["Female", "Male"]),
                age=rng.choice([23, 35, 50, 70]),
            ),
        )
        store.record_decision(
            case.case_id,
            {"decision": underwriting.decision.to_wire(), "status": "held", "underwriter": "rules"},
        )
        recorded += 1
    equipoise = Equipoise(store)
    pool = equipoise.pool()
    holding = [
        (case_id, f.code)
        for case_id in store.case_ids()
        for f in equipoise.review(case_id, pool=pool).findings
        if f.holds
    ]
    assert recorded > 3_000
    assert holding == []
