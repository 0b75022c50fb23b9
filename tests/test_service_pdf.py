"""The notice as a PDF letter: its extracted text is the verified notice's text, and
every page's footer carries the notice's SHA-256."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import pytest
from pypdf import PdfReader

from credit.canonical import loads
from credit.notice_format import parse_notice
from credit.service.auth import Role
from credit.service.pdf import FOOTER_PREFIX, notice_pdf
from notice_helpers import GOLDEN_IDS, golden_case, notice_and_expectation
from service_support import Api, golden, service_api

FOOTER = re.compile(rf"^{re.escape(FOOTER_PREFIX)}([0-9a-f]{{64}})   Page (\d+) of (\d+)$")


def read_back(pdf: bytes) -> tuple[list[str], list[str]]:
    """(the body's lines, page by page joined; the footers' hashes). Undone: only the
    PDF's own layout: trailing blank lines above each footer, and the footer."""
    reader = PdfReader(io.BytesIO(pdf))
    body: list[str] = []
    hashes: list[str] = []
    for number, page in enumerate(reader.pages, start=1):
        lines = page.extract_text(extraction_mode="layout").split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        match = FOOTER.match(lines.pop())
        assert match is not None, "the page's last line is not the footer"
        assert (int(match[2]), int(match[3])) == (number, len(reader.pages))
        hashes.append(match[1])
        while lines and not lines[-1].strip():
            lines.pop()
        body.extend(lines)
    return body, hashes


def unwrap(extracted: list[str], text: str) -> None:
    """Each line of ``text`` must be the next extracted line, or the next few joined
    with one space (where the PDF wrapped it): nothing else may differ."""
    pending = iter(extracted)
    source = text[:-1] if text.endswith("\n") else text
    for number, line in enumerate(source.split("\n"), start=1):
        got = next(pending, None)
        assert got is not None, f"line {number} is missing: {line!r}"
        while got != line:
            assert line.startswith(got + " "), f"line {number}: {got!r} is not {line!r}"
            piece = next(pending, None)
            assert piece is not None, f"line {number} ends early: {got!r}"
            got = f"{got} {piece}"
    assert next(pending, None) is None, "the PDF has text the notice does not"


@pytest.mark.parametrize("case_id", GOLDEN_IDS)
def test_the_pdf_text_is_the_notice_text_and_each_footer_carries_its_sha256(
    case_id: str,
) -> None:
    notice, _ = notice_and_expectation(golden_case(case_id))
    body, hashes = read_back(notice_pdf(notice))
    unwrap(body, notice.text)
    assert set(hashes) == {notice.sha256}


def test_a_notice_long_enough_for_pages_keeps_every_line_and_blank_line_across_breaks() -> None:
    notice, _ = notice_and_expectation(golden_case(GOLDEN_IDS[0]))
    # Blank lines (single and double) at every offset, so some fall on a page break.
    paragraphs = [" ".join([f"Paragraph {i}:", *["word"] * (i % 40)]) for i in range(90)]
    text = "\n".join(p + ("\n" * (i % 3)) for i, p in enumerate(paragraphs)).rstrip() + "\n"
    long = notice.model_copy(update={"text": text})
    pdf = notice_pdf(long)
    body, hashes = read_back(pdf)
    assert len(hashes) >= 3 and set(hashes) == {long.sha256}
    unwrap(body, text)


def test_the_pdf_is_byte_for_byte_reproducible() -> None:
    notice, _ = notice_and_expectation(golden_case(GOLDEN_IDS[1]))
    assert notice_pdf(notice) == notice_pdf(notice)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with service_api("sqlite", tmp_path_factory.mktemp("pdf")) as built:
        built.decided(golden("G-COUNTER-AUTO", "PDF-1"))
        yield built


@pytest.mark.parametrize(
    ("path", "params"),
    [("/v1/cases/PDF-1/notice", {"format": "pdf"}), ("/v1/cases/PDF-1/notice/pdf", {})],
)
def test_the_api_serves_the_verified_notice_as_a_pdf_carrying_its_sha256(
    api: Api, path: str, params: dict[str, str]
) -> None:
    verified = api.get("/v1/cases/PDF-1/notice", Role.AUDITOR)
    body = loads(verified.content)
    assert body["verified"] is True
    notice = parse_notice(body["notice"])
    response = api.get(path, Role.UNDERWRITER, **params)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["x-notice-sha256"] == body["noticeSha256"]
    text, hashes = read_back(response.content)
    unwrap(text, body["notice"]["text"])
    assert set(hashes) == {notice.sha256} == {body["report"]["noticeSha256"]}


@pytest.mark.parametrize(
    ("path", "params"),
    [("/v1/cases/PDF-2/notice", {"format": "pdf"}), ("/v1/cases/PDF-2/notice/pdf", {})],
)
def test_no_letter_is_printed_for_a_notice_that_failed_verification_409(
    api: Api, monkeypatch: pytest.MonkeyPatch, path: str, params: dict[str, str]
) -> None:
    import credit.casework
    import credit.service.cases
    from credit.notice_format import Notice
    from credit.notices.render import render_notice

    def tampered(case: Any, decided: Any, **kwargs: Any) -> Notice:
        notice = render_notice(case, decided, **kwargs)
        return notice.model_copy(
            update={"text": notice.text.replace("Principal reasons", "Some reasons")}
        )

    monkeypatch.setattr(credit.casework, "render_notice", tampered)
    monkeypatch.setattr(credit.service.cases, "render_notice", tampered)
    if not api.store.entries("PDF-2"):
        api.decided(golden("G-DECLINE-SCORE", "PDF-2"))
    shown = loads(api.get("/v1/cases/PDF-2/notice", Role.AUDITOR).content)
    assert shown["verified"] is False  # the JSON view shows the failed report
    response = api.get(path, Role.UNDERWRITER, **params)
    assert response.status_code == 409
    assert "did not pass verification" in loads(response.content)["error"]["message"]
    assert response.headers["content-type"].startswith("application/json")
