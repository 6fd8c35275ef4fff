"""The report as PDF: a Django template (autoescaped) rendered by WeasyPrint; [n] link to the source entries.

WeasyPrint fetches nothing: the stylesheet is in the template, and any URL it would
load (an image, a stylesheet) is refused, so no text of a file can make the server
read a URL or a local file. Fonts come from the system (DejaVu, Noto: the Makefile's
system packages), chosen per character by fontconfig.
"""

from __future__ import annotations

from django.template.loader import render_to_string

from .document import ReportDocument

TEMPLATE = "research/report_export.html"


def html(doc: ReportDocument) -> str:
    sections = [
        {
            "heading": section.heading,
            "paragraphs": [
                [("mark", piece) if isinstance(piece, int) else ("text", piece) for piece in pieces]
                for pieces in section.paragraphs
            ],
        }
        for section in doc.sections
    ]
    show_report_title = bool(doc.report_title) and doc.report_title != doc.title
    return render_to_string(TEMPLATE, {"doc": doc, "sections": sections, "show_report_title": show_report_title})


def render(doc: ReportDocument) -> bytes:
    import weasyprint  # loads Pango through cffi: paid by the first PDF, not by every process that imports this

    return weasyprint.HTML(string=html(doc), url_fetcher=_fetch_nothing).write_pdf()


def _fetch_nothing(url: str, *args, **kwargs):
    raise ValueError(f"a report's PDF loads no resource ({url[:80]})")
