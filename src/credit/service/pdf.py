"""The verified notice as a printable PDF letter (reportlab, pure Python).

Each line of the notice's text is drawn as it is, in order; a line wider than the page
is wrapped at spaces (a wrapped line's pieces, joined with one space each, are the
line), and nothing else is added to the body: the PDF's extracted text (pypdf's layout
mode keeps the blank lines) is the notice's text, line for line, apart from that
wrapping. Every page's footer carries the notice's
SHA-256 (the hash its verification report was made for) and the page number, so a
printed letter can be matched to the journal's ``notice.verified`` / ``notice.sent``.

The font is Bitstream Vera Sans, shipped with reportlab and embedded in the PDF. The
output is byte-for-byte reproducible (reportlab's ``invariant`` mode).
"""

from __future__ import annotations

import io
from functools import cache
from typing import Final

from reportlab.lib.pagesizes import LETTER
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen.canvas import Canvas

from credit.notice_format import Notice

__all__ = ["FOOTER_PREFIX", "footer_text", "notice_pdf", "wrap_line"]

FONT: Final = "CreditVera"
FONT_SIZE: Final = 10.0
LEADING: Final = 13.0
FOOTER_SIZE: Final = 7.5
MARGIN_X: Final = 60.0
MARGIN_TOP: Final = 60.0
MARGIN_BOTTOM: Final = 64.0
FOOTER_Y: Final = 36.0
FOOTER_PREFIX: Final = "Notice SHA-256: "


@cache
def _font() -> str:
    pdfmetrics.registerFont(TTFont(FONT, "Vera.ttf"))
    return FONT


def _width(text: str, size: float = FONT_SIZE) -> float:
    return float(pdfmetrics.stringWidth(text, _font(), size))


def wrap_line(line: str, width: float) -> list[str]:
    """Split ``line`` at single spaces into pieces no wider than ``width`` points (a
    word wider than that stands alone). ``" ".join(pieces) == line``."""
    if _width(line) <= width:
        return [line]
    pieces: list[str] = []
    words = line.split(" ")
    current = words[0]
    for word in words[1:]:
        candidate = f"{current} {word}"
        if _width(candidate) <= width or not current.strip():
            current = candidate
        else:
            pieces.append(current)
            current = word
    pieces.append(current)
    return pieces


def footer_text(sha256: str, page: int, pages: int) -> str:
    return f"{FOOTER_PREFIX}{sha256}   Page {page} of {pages}"


def _pages(text: str) -> list[list[str]]:
    """The wrapped lines, a page at a time. A page never starts or ends with a blank
    line (the break moves up a line or two), so no blank line of the notice is lost at
    a page's edge when the text is read back. The text's final newline ends its last
    line (no empty line is drawn for it)."""
    page_width, page_height = LETTER
    width = page_width - 2 * MARGIN_X
    per_page = int((page_height - MARGIN_TOP - MARGIN_BOTTOM) // LEADING)
    source = text[:-1] if text.endswith("\n") else text
    lines = [piece for line in source.split("\n") for piece in wrap_line(line, width)]
    pages: list[list[str]] = []
    start = 0
    while start < len(lines):
        end = min(start + per_page, len(lines))
        while end < len(lines) and end - start > 1 and not (lines[end - 1] and lines[end]):
            end -= 1
        pages.append(lines[start:end])
        start = end
    return pages or [[]]


def notice_pdf(notice: Notice) -> bytes:
    """The notice as a PDF letter; the footer of each page carries its SHA-256."""
    sha = notice.sha256
    font = _font()
    page_height = LETTER[1]
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=LETTER, invariant=1, pageCompression=1)
    canvas.setTitle(f"Notice of action taken, application {notice.case_id}")
    canvas.setSubject(f"sha256:{sha}")
    canvas.setCreator("credit")
    pages = _pages(notice.text)
    for number, lines in enumerate(pages, start=1):
        y = page_height - MARGIN_TOP
        canvas.setFont(font, FONT_SIZE)
        for line in lines:
            canvas.drawString(MARGIN_X, y, line)
            y -= LEADING
        canvas.setFont(font, FOOTER_SIZE)
        canvas.drawString(MARGIN_X, FOOTER_Y, footer_text(sha, number, len(pages)))
        canvas.showPage()
    canvas.save()
    return buffer.getvalue()
