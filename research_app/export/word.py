"""The report as a Word file (python-docx): [n] marks linked to bookmarks on the numbered sources.

Every text goes in as plain runs (python-docx writes it as XML text: nothing in it is
read as a field, a formula or markup). Why [n] marks and not Word footnotes:
docs/decisions.md, "Report export".
"""

from __future__ import annotations

import io

from docx import Document
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt, RGBColor
from docx.text.paragraph import Paragraph

from .document import Piece, ReportDocument, SourceEntry

LINK_COLOUR = RGBColor(0x1F, 0x4E, 0x9A)
MUTED = RGBColor(0x55, 0x55, 0x55)


def bookmark_name(n: int) -> str:
    return f"source_{n}"


def render(doc: ReportDocument) -> bytes:
    word = Document()
    word.core_properties.title = doc.title[:255]
    word.core_properties.subject = "Groundwork research report"
    word.add_heading(doc.title, level=0)
    for label, value in (
        ("Session", doc.session_title),
        ("Question", doc.title),
        ("Finished", doc.finished),
        ("Written by", doc.written_by),
        ("Cost", doc.cost),
    ):
        line = word.add_paragraph()
        line.paragraph_format.space_after = Pt(0)
        line.add_run(f"{label}: ").bold = True
        line.add_run(value)
    if doc.sources_changed:
        word.add_heading("Sources changed since this report", level=2)
        word.add_paragraph("Its citations still open the text they were made from.")
        for change in doc.sources_changed:
            word.add_paragraph(change, style="List Bullet")
    if doc.update:
        word.add_heading("Updated report", level=2)
        for line in doc.update:
            word.add_paragraph(line, style="List Bullet")
    if doc.report_title and doc.report_title != doc.title:
        word.add_heading(doc.report_title, level=1)
    if doc.summary:
        word.add_paragraph(doc.summary)
    for section in doc.sections:
        word.add_heading(section.heading, level=1)
        for pieces in section.paragraphs:
            _paragraph(word.add_paragraph(), pieces)
    if doc.open_questions:
        word.add_heading("Open questions", level=1)
        for question in doc.open_questions:
            word.add_paragraph(question, style="List Bullet")
    if doc.dropped:
        note = word.add_paragraph().add_run(f"Validation removed {doc.dropped} unsupported citation(s).")
        note.italic = True
    if doc.also_read:
        word.add_heading("Also read, not cited in the text", level=1)
        for entry in doc.also_read:
            _entry(word, entry, bookmark=False)
    word.add_heading("Sources", level=1)
    for entry in doc.sources:
        _entry(word, entry, bookmark=True)
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()


def _paragraph(paragraph: Paragraph, pieces: list[Piece]) -> None:
    for index, piece in enumerate(pieces):
        if isinstance(piece, int):
            if index:
                paragraph.add_run(" ")
            _link(paragraph, f"[{piece}]", anchor=bookmark_name(piece))
        else:
            paragraph.add_run(piece)


def _entry(word, entry: SourceEntry, *, bookmark: bool) -> None:
    head = word.add_paragraph()
    head.paragraph_format.space_after = Pt(2)
    if bookmark:
        _bookmark(head, entry.n, "w:bookmarkStart")
    head.add_run(f"[{entry.n}] ").bold = True
    if bookmark:
        _bookmark(head, entry.n, "w:bookmarkEnd")
    head.add_run(entry.name).bold = True
    if entry.facts:
        head.add_run(", " + ", ".join(entry.facts))
    if entry.quote:
        quoted = word.add_paragraph(style="Quote")
        quoted.paragraph_format.space_after = Pt(2)
        quoted.add_run(entry.quote)
    if entry.url:
        link = word.add_paragraph()
        _link(link, entry.url, url=entry.url, size=Pt(8))


def _bookmark(paragraph: Paragraph, n: int, tag: str) -> None:
    """The start or the end of bookmark `source_<n>` (around the entry's "[n]"): what the [n] marks open."""
    mark = OxmlElement(tag)
    mark.set(qn("w:id"), str(n))
    if tag == "w:bookmarkStart":
        mark.set(qn("w:name"), bookmark_name(n))
    paragraph._p.append(mark)


def _link(paragraph: Paragraph, text: str, *, anchor: str = "", url: str = "", size=None) -> None:
    """A run of `text` inside a hyperlink: to a bookmark of this document, or to an address."""
    hyperlink = OxmlElement("w:hyperlink")
    if anchor:
        hyperlink.set(qn("w:anchor"), anchor)
    else:
        hyperlink.set(qn("r:id"), paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK, is_external=True))
    run = paragraph.add_run(text)
    run.font.color.rgb = LINK_COLOUR
    run.font.underline = True
    if size:
        run.font.size = size
    hyperlink.append(run._r)
    paragraph._p.append(hyperlink)
