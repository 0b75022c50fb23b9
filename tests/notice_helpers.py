"""Shared builders for the notice, verifier and mutation tests.

The four golden cases (``tests/golden/cases.jsonl``) are the base cases: a test takes
one in its wire form and changes what it needs, so it reads as the case file whose
notice it checks. ``data_copy`` copies the pinned data (frame, catalogue, rules, bureau
formats, lock) to a folder a test may edit, to show what an edit does.
"""

from __future__ import annotations

import copy
import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from credit import Case, decide_case, default_policy, parse_case
from credit.guardrails import DataSources, Pins, expectation_for, load_pins
from credit.notice_format import Expectation, Notice
from credit.notices import render_notice
from credit.underwriting import Underwriting

GOLDEN = Path(__file__).resolve().parent / "golden"
GOLDEN_CASES = GOLDEN / "cases.jsonl"
DECLINE_SCORE = "G-DECLINE-SCORE"  # auto, score below the minimum, 3 key factors
DECLINE_DTI = "G-DECLINE-DTI"  # card, DTI over the cap with no counteroffer
COUNTER_AUTO = "G-COUNTER-AUTO"
COUNTER_CARD = "G-COUNTER-CARD"
GOLDEN_IDS = (DECLINE_SCORE, DECLINE_DTI, COUNTER_AUTO, COUNTER_CARD)


@cache
def _golden_wire() -> dict[str, str]:
    lines = GOLDEN_CASES.read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["caseId"]: line for line in lines if line.strip()}


def golden_case(case_id: str) -> dict[str, Any]:
    """A golden case in its wire form (a fresh copy to change)."""
    return copy.deepcopy(json.loads(_golden_wire()[case_id]))


def changed(case: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of a wire case with one dotted path set (``creditReport.score``)."""
    out = copy.deepcopy(case)
    *parents, last = path.split(".")
    node = out
    for part in parents:
        node = node[part]
    node[last] = value
    return out


def decided(case: dict[str, Any]) -> tuple[Case, Underwriting]:
    parsed = parse_case(case)
    return parsed, decide_case(parsed, default_policy())


def notice_and_expectation(case: dict[str, Any] | str) -> tuple[Notice, Expectation]:
    """The genuine notice of a case (or of a golden case by id) and its expectation."""
    wire = golden_case(case) if isinstance(case, str) else case
    parsed, underwriting = decided(wire)
    return render_notice(parsed, underwriting), expectation_for(parsed, underwriting)


def with_text(notice: Notice, text: str) -> Notice:
    return notice.model_copy(update={"text": text})


def replace_once(notice: Notice, old: str, new: str) -> Notice:
    assert old in notice.text, f"{old!r} is not in the notice"
    return with_text(notice, notice.text.replace(old, new, 1))


def data_copy(tmp_path: Path) -> DataSources:
    """The packaged data (frame, catalogue, rules, bureau formats) and lock, copied to a
    folder the test may edit."""
    src = DataSources.default()
    folder = tmp_path / "data"
    folder.mkdir()
    for path in (src.frame, src.catalogue, src.rules, src.lock, src.bureau_formats):
        shutil.copy(path, folder / path.name)
    return DataSources.in_directory(folder)


def pins_from(sources: DataSources) -> Pins:
    return load_pins(sources)
