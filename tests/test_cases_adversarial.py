"""Bad input never stops the work: a batch mixing good cases with one line of every
malformed class an adversarial user tries. ``credit decide`` (and ``credit batch
decide``, the pipeline's reader, the reader itself) decide every good case in order,
name every bad line by file, line, case id and field, exit 2, and never print a
traceback.

Every class below was measured as breaking a run before the one case reader (issue:
"bad input never stops the work"); the table is also the report's count of what is
tried and what each yields."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import auto_case, card_case, with_changes
from credit.canonical import loads
from credit.cases import iter_cases
from credit.cli import app
from credit.pipeline import read_batch
from credit.policy import default_policy


@dataclass(frozen=True)
class Bad:
    """One malformed line: its class, its bytes, and what the error must name."""

    kind: str
    data: bytes
    case_id: str | None
    field: str | None
    says: str


def line(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def spliced(case_id: str, path: str, json_text: str) -> bytes:
    """A case whose value at ``path`` is the raw JSON text given (what json.dumps
    cannot write: NaN spelled by hand, exponents, duplicate keys, ...)."""
    marker = "__SPLICE__"
    text = json.dumps(with_changes(auto_case(case_id=case_id), path, marker))
    return text.replace(f'"{marker}"', json_text).encode("utf-8")


def money_case(case_id: str, value: Any) -> bytes:
    return line(with_changes(auto_case(case_id=case_id), "application.annualIncome", value))


BAD: list[Bad] = [
    # nesting depth
    Bad("nesting", b"[" * 10_000 + b"]" * 10_000, None, None, "nested 10,000 deep"),
    Bad(
        "nesting",
        spliced("N-2", "application.note", "[" * 40 + "]" * 40),
        "N-2",
        None,
        "nested 42 deep",
    ),
    # numbers far outside any sane range
    Bad(
        "range",
        money_case("R-1", "1000000000000.00"),
        "R-1",
        "application.annualIncome",
        "above the most the case format allows, 100000000.00 USD",
    ),
    Bad(
        "range",
        line(with_changes(auto_case(case_id="R-2"), "creditReport.tradelines", 10**15)),
        "R-2",
        "creditReport.tradelines",
        "above the most",
    ),
    Bad(
        "range",
        spliced("R-3", "application.termMonths", "9" * 5000),
        "R-3",
        "application.termMonths",
        "5,000 digits",
    ),
    Bad(
        "range",
        line(with_changes(auto_case(case_id="R-4"), "application.monthlyDebtPayments", -5)),
        "R-4",
        "application.monthlyDebtPayments",
        "greater than or equal to 0",
    ),
    # a score outside the scale the policy uses (inside the report's own range)
    Bad(
        "score scale",
        line(auto_case(case_id="S-1", score=900, score_range=(300, 990))),
        "S-1",
        "creditReport.score",
        "off the scale 300-850",
    ),
    Bad(
        "score scale",
        line(auto_case(case_id="S-2", score=250, score_range=(150, 950))),
        "S-2",
        "creditReport.score",
        "off the scale 300-850",
    ),
    Bad(
        "score range",
        line(auto_case(case_id="S-3", score=851)),
        "S-3",
        "creditReport.score",
        "outside scoreRange [300, 850]",
    ),
    # a date no policy covers: named against the case, not the policy file
    Bad(
        "date",
        line(auto_case(case_id="D-1", as_of="2025-12-31")),
        "D-1",
        "asOf",
        "no policy is in force on 2025-12-31",
    ),
    # not UTF-8
    Bad(
        "encoding",
        line(auto_case(case_id="E-1")).replace(b"Example", b"Ex\xffample"),
        "E-1",
        None,
        "not UTF-8: byte 0xff",
    ),
    Bad("encoding", b"\xc3\x28", None, None, "not UTF-8"),
    Bad("encoding", b'{"caseId": "E-3", "x": "\xed\xa0\x80"}', "E-3", None, "not UTF-8"),
    # duplicate keys at any depth
    Bad(
        "duplicate key",
        line(auto_case(case_id="K-1"))[:-1] + b', "caseId": "K-1"}',
        "K-1",
        "caseId",
        "duplicate key 'caseId'",
    ),
    Bad(
        "duplicate key",
        spliced("K-2", "application.termMonths", '60, "termMonths": 72'),
        "K-2",
        "application.termMonths",
        "duplicate key 'termMonths'",
    ),
    Bad(
        "duplicate key",
        spliced(
            "K-3",
            "creditReport.derogatories",
            '[{"kind": "late30", "monthsAgo": 3, "monthsAgo": 4}]',
        ),
        "K-3",
        "creditReport.derogatories[0].monthsAgo",
        "duplicate key 'monthsAgo'",
    ),
    # NaN and the infinities
    *(
        Bad(
            "non-finite",
            spliced(f"F-{i}", "creditReport.utilisationPct", text),
            f"F-{i}",
            "creditReport.utilisationPct",
            f"{text} is not a number",
        )
        for i, text in enumerate(("NaN", "Infinity", "-Infinity"), start=1)
    ),
    # lenient number spellings the case format does not allow
    *(
        Bad(
            "number spelling",
            money_case(f"M-{i}", text),
            f"M-{i}",
            "application.annualIncome",
            "a decimal string is ASCII digits",
        )
        for i, text in enumerate(
            (
                "84_000.00",
                "８４０００.００",
                "+84000.00",
                "-84000.00",
                "8.4e4",
                " 84000.00",
                "84000.00 ",
                "84,000.00",
                "84000.",
                ".50",
                "",
                "0x1F",
                "٨٤٠٠٠",
                "84 000.00",
                "8⁴",
                "Infinity",
                "NaN",
            ),
            start=1,
        )
    ),
    *(
        Bad(
            "number spelling",
            spliced(f"X-{i}", "application.annualIncome", text),
            f"X-{i}",
            "application.annualIncome",
            "exponent",
        )
        for i, text in enumerate(("8.4e4", "84000E0", "1e400"), start=1)
    ),
    Bad(
        "number spelling",
        money_case("B-1", True),
        "B-1",
        "application.annualIncome",
        "expected a decimal number",
    ),
    Bad(
        "count spelling",
        line(with_changes(auto_case(case_id="B-2"), "creditReport.tradelines", "7")),
        "B-2",
        "creditReport.tradelines",
        "valid integer",
    ),
    Bad(
        "count spelling",
        spliced("B-3", "creditReport.tradelines", "7.0"),
        "B-3",
        "creditReport.tradelines",
        "valid integer",
    ),
    # shapes that are not a case
    Bad("shape", b"[1, 2, 3]", None, None, "a case must be a JSON object, got array"),
    Bad("shape", b'"a case"', None, None, "a case must be a JSON object, got string"),
    Bad("shape", b"42", None, None, "a case must be a JSON object, got number"),
    Bad("shape", b"null", None, None, "a case must be a JSON object, got null"),
    Bad("shape", b"{}", None, "caseId", "Field required"),
    Bad(
        "shape",
        line(with_changes(auto_case(case_id="H-1"), "application", "auto")),
        "H-1",
        "application",
        "valid dictionary",
    ),
    Bad(
        "shape",
        line(with_changes(auto_case(), "caseId", 12345)),
        None,
        "caseId",
        "valid string",
    ),
    # size: a huge line, a 10 MB string
    Bad(
        "size",
        line(with_changes(auto_case(case_id="Z-1"), "application.note", "x" * 100_000)),
        "Z-1",
        None,
        "the line is 100,",
    ),
    Bad(
        "size",
        b'{"caseId": "Z-2", "note": "' + b"y" * 10_000_000 + b'"}',
        "Z-2",
        None,
        "the line is 10,000,",
    ),
    Bad(
        "size",
        line(with_changes(auto_case(case_id="Z-3"), "creditReport.bureau.name", "n" * 2000)),
        "Z-3",
        "creditReport.bureau.name",
        "a string of 2,000 characters",
    ),
    Bad(
        "size",
        line(
            with_changes(
                auto_case(case_id="Z-4"),
                "creditReport.keyFactors",
                [{"code": "10", "text": "Balances too high", "value": "34%"}] * 6,
            )
        ),
        "Z-4",
        "creditReport.keyFactors",
        "6 entries; the case format allows at most 5",
    ),
    # characters that are not text
    Bad(
        "lone surrogate",
        spliced("U-1", "creditReport.bureau.name", '"\\ud800"'),
        "U-1",
        "creditReport.bureau.name",
        "lone surrogate U+D800",
    ),
    Bad("lone surrogate", b'{"caseId": "\\udfff"}', None, "caseId", "lone surrogate U+DFFF"),
    Bad(
        "control character",
        spliced("U-3", "creditReport.bureau.name", '"Bureau\\u0000"'),
        "U-3",
        "creditReport.bureau.name",
        "control character U+0000",
    ),
    # more than one JSON value, or something after it
    Bad(
        "trailing data",
        line(auto_case(case_id="T-1")) + b" garbage",
        "T-1",
        None,
        "more after the JSON value",
    ),
    Bad(
        "trailing data",
        line(auto_case(case_id="T-2")) + line(card_case(case_id="T-3")),
        "T-2",
        None,
        "more after the JSON value",
    ),
    Bad(
        "syntax",
        b'{"caseId": "T-4", "asOf": "2026-11-30", "application": {',
        "T-4",
        None,
        "not valid JSON",
    ),
    Bad("syntax", b"{'caseId': 'T-5'}", None, None, "not valid JSON"),
    # a byte order mark anywhere but the start of the file
    Bad(
        "byte order mark",
        b"\xef\xbb\xbf" + line(auto_case(case_id="O-1")),
        "O-1",
        None,
        "byte order mark",
    ),
]

# Good cases that the old reader mis-numbered or refused: a U+2028 (and a U+0085) inside
# a string is a character, not a line break; a CRLF line reads like an LF line.
GOOD = [
    lambda case_id: line(auto_case(case_id=case_id)),
    # U+2028 and U+0085 inside a string are characters, not line breaks (in a free-text
    # field: the bureau fields a notice prints have formats of their own).
    lambda case_id: line(
        with_changes(
            card_case(case_id=case_id),
            "creditReport.derogatories",
            [{"kind": "late30\u2028reported", "monthsAgo": 12}],
        )
    ),
    lambda case_id: line(auto_case(case_id=case_id, score=None)),
    lambda case_id: line(
        with_changes(
            card_case(case_id=case_id),
            "creditReport.derogatories",
            [{"kind": "late60\u0085reported", "monthsAgo": 20}],
        )
    ),
    lambda case_id: line(auto_case(case_id=case_id, score=300)) + b"\r",  # CRLF
    lambda case_id: line(auto_case(case_id=case_id, score=850)),
]


def mixed_batch(tmp_path: Path) -> tuple[Path, dict[int, Bad], list[str]]:
    """A good case, then a bad line, and so on: every bad line of BAD between two good
    cases. Returns the file, the bad line at each line number, the good case ids."""
    rows: list[bytes] = []
    bad_at: dict[int, Bad] = {}
    good_ids: list[str] = []
    for i, bad in enumerate(BAD):
        good_ids.append(f"G-{i}")
        rows.append(GOOD[i % len(GOOD)](f"G-{i}"))
        rows.append(bad.data)
        bad_at[len(rows)] = bad
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(rows) + b"\n")
    return path, bad_at, good_ids


def expected_prefix(path: Path, number: int, bad: Bad) -> str:
    where = [str(path), f"line {number}"]
    if bad.case_id is not None:
        where.append(f"case {bad.case_id}")
    if bad.field is not None:
        where.append(f"field {bad.field}")
    return ", ".join(where) + ": "


def test_the_mixed_batch_holds_every_class_of_malformed_line() -> None:
    kinds = {b.kind for b in BAD}
    assert kinds >= {
        "nesting",
        "range",
        "score scale",
        "date",
        "encoding",
        "duplicate key",
        "non-finite",
        "number spelling",
        "shape",
        "size",
        "lone surrogate",
        "trailing data",
    }
    assert len(BAD) >= 61


def test_credit_decide_decides_every_good_case_in_order_and_names_every_bad_line(
    tmp_path: Path,
) -> None:
    path, bad_at, good_ids = mixed_batch(tmp_path)
    result = CliRunner().invoke(app, ["decide", str(path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    decided = [loads(row)["caseId"] for row in result.stdout.splitlines()]
    assert decided == good_ids
    err = result.stderr
    assert "Traceback" not in err
    assert f"{len(bad_at)} of {len(bad_at) + len(good_ids)} case(s) not decided" in err
    reported = [row.strip() for row in err.splitlines()[1:]]
    assert len(reported) == len(bad_at)
    for (number, bad), row in zip(bad_at.items(), reported, strict=True):
        assert row.startswith(expected_prefix(path, number, bad)), (bad.kind, row[:300])
        assert bad.says in row, (bad.kind, row[:300])


def test_the_reader_yields_one_entry_per_line_with_the_files_line_numbers(
    tmp_path: Path,
) -> None:
    path, bad_at, good_ids = mixed_batch(tmp_path)
    entries = list(iter_cases(path, policies=default_policy()))
    assert [e.line for e in entries] == list(range(1, 2 * len(BAD) + 1))
    assert [e.case.case_id for e in entries if e.case is not None] == good_ids
    for entry in entries:
        if entry.line in bad_at:
            assert entry.case is None and entry.error is not None
            assert entry.error.line == entry.line
            assert entry.error.case_id == bad_at[entry.line].case_id
            assert entry.error.field == bad_at[entry.line].field


def test_credit_runs_reader_keeps_every_line_and_names_the_ones_it_cannot_read(
    tmp_path: Path,
) -> None:
    path, bad_at, _ = mixed_batch(tmp_path)
    lines = read_batch(path)
    assert [b.line for b in lines] == list(range(1, 2 * len(BAD) + 1))
    for item in lines:
        if item.line not in bad_at:  # every good case is read, whatever is around it
            assert item.error is None and item.raw["caseId"] == f"G-{item.line // 2}"
        elif item.error is not None:  # the rest are refused by intake, case by case
            assert item.raw is None
            assert item.error.source == str(path) and item.error.line == item.line


def test_credit_batch_decide_writes_every_good_case_and_names_every_bad_line(
    tmp_path: Path,
) -> None:
    path, bad_at, good_ids = mixed_batch(tmp_path)
    out = tmp_path / "decisions.jsonl"
    result = CliRunner().invoke(app, ["batch", "decide", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.stderr
    rows = [loads(r) for r in out.read_text(encoding="utf-8").splitlines()]
    assert [r["caseId"] for r in rows if r["errorKind"] is None] == good_ids
    assert f"{len(bad_at)} of {len(bad_at) + len(good_ids)} row(s) not decided" in result.stderr
    first = min(bad_at)
    assert expected_prefix(path, first, bad_at[first]) in result.stderr


@pytest.mark.parametrize("bad", BAD, ids=[f"{b.kind}-{i}" for i, b in enumerate(BAD)])
def test_one_bad_line_alone_is_one_error_naming_its_line(tmp_path: Path, bad: Bad) -> None:
    path = tmp_path / "one.jsonl"
    path.write_bytes(line(auto_case(case_id="C-OK")) + b"\n\n" + bad.data + b"\n")
    (good, wrong) = list(iter_cases(path, policies=default_policy()))
    assert good.case is not None and good.error is None
    assert wrong.error is not None and wrong.line == 3
    assert str(wrong.error).startswith(expected_prefix(path, 3, bad))
    assert bad.says in wrong.error.message
