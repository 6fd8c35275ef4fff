"""The report as Markdown: footnotes `[^n]` for the citations, the numbered sources last.

Every text from the report or a file is escaped: the characters Markdown reads as
markup are backslash-escaped (`<` too, so HTML is shown, never rendered; `&` before
what reads as an entity), and a line that would start a heading, list, quote, rule or
setext underline has its first character escaped.
"""

from __future__ import annotations

import re

from .document import Piece, ReportDocument, SourceEntry

MARKUP = re.compile(r"([\\`*_\[\]<|~]|&(?=#?\w+;))")
LINE_START = re.compile(r"^(\s*)([#+\-=>]|\d+(?=[.)]))")


def escape(text: str) -> str:
    """`text` shown as it is by any CommonMark or GFM reader."""
    escaped = MARKUP.sub(r"\\\1", text)
    lines = [LINE_START.sub(_escape_start, line) for line in escaped.split("\n")]
    return "\n".join(lines)


def _escape_start(match: re.Match) -> str:
    indent, start = match.groups()
    if start[0].isdigit():  # "1." starts a list: the dot is escaped after the number
        return indent + start + "\\"
    return f"{indent}\\{start}"


def inline(text: str) -> str:
    """One line: a paragraph's or a heading's text with its line ends as spaces."""
    return escape(" ".join(text.split()))


def paragraph(pieces: list[Piece]) -> str:
    out = []
    for piece in pieces:
        out.append(f"[^{piece}]" if isinstance(piece, int) else inline(piece))
    return " ".join(out)


def quote_block(text: str, indent: str = "") -> list[str]:
    return [f"{indent}> {line}".rstrip() for line in escape(text).split("\n")]


def entry_line(entry: SourceEntry) -> str:
    name = f"**{inline(entry.name)}**" if entry.name else ""
    return ", ".join(filter(None, [name, *(inline(fact) for fact in entry.facts)]))


def render(doc: ReportDocument) -> str:
    lines = [f"# {inline(doc.title)}", ""]
    lines += [
        f"- **Session:** {inline(doc.session_title)}",
        f"- **Question:** {inline(doc.title)}",
        f"- **Finished:** {doc.finished}",
        f"- **Written by:** {inline(doc.written_by)}",
        f"- **Cost:** {inline(doc.cost)}",
        "",
    ]
    if doc.sources_changed:
        lines += [
            "> **Sources changed since this report.** Its citations still open the text they were made from.",
            ">",
            *(f"> - {inline(change)}" for change in doc.sources_changed),
            "",
        ]
    if doc.update:
        lines += ["> **Updated report.**", ">", *(f"> - {inline(line)}" for line in doc.update), ""]
    if doc.report_title and doc.report_title != doc.title:
        lines += [f"## {inline(doc.report_title)}", ""]
    if doc.summary:
        lines += [inline(doc.summary), ""]
    for section in doc.sections:
        lines += [f"## {inline(section.heading)}", ""]
        for pieces in section.paragraphs:
            lines += [paragraph(pieces), ""]
    if doc.open_questions:
        lines += ["## Open questions", "", *(f"- {inline(q)}" for q in doc.open_questions), ""]
    if doc.dropped:
        lines += [f"_Validation removed {doc.dropped} unsupported citation{'s' * (doc.dropped != 1)}._", ""]
    if doc.also_read:
        lines += ["## Also read, not cited in the text", ""]
        for entry in doc.also_read:
            link = f" <{entry.url}>" if entry.url else ""
            lines.append(f"- \\[{entry.n}\\] {entry_line(entry)}{link}")
        lines.append("")
    lines += ["## Sources", ""]
    for entry in doc.sources:
        lines.append(f"[^{entry.n}]: {entry_line(entry)}")
        if entry.quote:
            lines += ["", *quote_block(entry.quote, indent="    ")]
        if entry.url:
            lines += ["", f"    <{entry.url}>"]
        lines.append("")
    return "\n".join(lines)
