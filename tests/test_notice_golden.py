"""Golden notices, byte for byte: a decline whose reasons include the score and its key
factors (with the FCRA disclosure), a decline on DTI alone, an auto counteroffer and a
card counteroffer.

The goldens are the reviewed notices. Editing the legal frame, the reason catalogue or
the code mapping fails this test (and check V7) until the change is reviewed: accept
the data with ``credit lock --accept --by NAME``, then regenerate the goldens with
``credit notice tests/golden/cases.jsonl --out tests/golden --text`` and review their
diff.
"""

from __future__ import annotations

import pytest

from credit.canonical import loads
from credit.guardrails import DataSources, Verifier, current_pins, read_lock
from credit.guardrails.lock import drift
from credit.notice_format import parse_expectation, parse_notice
from notice_helpers import GOLDEN, GOLDEN_IDS, notice_and_expectation


def test_the_golden_notices_were_rendered_from_the_reviewed_data() -> None:
    sources = DataSources.default()
    assert drift(read_lock(sources.lock), current_pins(sources)) == (), (
        "the frame, catalogue, code mapping or rules changed since the lock was reviewed: "
        "run `credit lock` to see the diff"
    )


@pytest.mark.parametrize("case_id", GOLDEN_IDS)
def test_the_notice_renders_byte_for_byte_as_its_golden(case_id: str) -> None:
    notice, expectation = notice_and_expectation(case_id)
    assert notice.canonical_bytes() + b"\n" == (GOLDEN / f"{case_id}.notice.json").read_bytes()
    assert notice.text == (GOLDEN / f"{case_id}.notice.txt").read_text(encoding="utf-8")
    assert expectation.canonical_bytes() + b"\n" == (GOLDEN / f"{case_id}.expect.json").read_bytes()


@pytest.mark.parametrize("case_id", GOLDEN_IDS)
def test_the_golden_notice_passes_all_eight_checks(case_id: str) -> None:
    notice = parse_notice(loads((GOLDEN / f"{case_id}.notice.json").read_bytes()))
    expectation = parse_expectation(loads((GOLDEN / f"{case_id}.expect.json").read_bytes()))
    report = Verifier().verify(notice, expectation)
    assert report.passed, {k: report.checks[k].detail for k in report.failed}
    assert report.notice_sha256 == notice.sha256


def test_the_goldens_cover_the_four_kinds_of_notice() -> None:
    kinds = {}
    for case_id in GOLDEN_IDS:
        notice, expectation = notice_and_expectation(case_id)
        kinds[case_id] = (notice.decision, notice.product, notice.reason_codes)
        assert expectation.credit_score is not None
    assert kinds["G-DECLINE-SCORE"][2][0] == "SCORE_BELOW_MINIMUM"
    assert all(code.startswith("KF_") for code in kinds["G-DECLINE-SCORE"][2][1:])
    assert kinds["G-DECLINE-DTI"] == ("decline", "card", ("DTI_OVER_CAP",))
    assert kinds["G-COUNTER-AUTO"][:2] == ("counteroffer", "auto")
    assert kinds["G-COUNTER-CARD"][:2] == ("counteroffer", "card")
