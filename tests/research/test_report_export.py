"""Report export (SPEC §9, issue 24): a real run's report as Markdown, Word and PDF, read back.

Every [n] in the body has a source entry, and every entry quotes the text its source_url
opens (fetched through the API, as the source dialog does). Untrusted text stays text.
"""

import io
import re
from urllib.parse import quote, unquote, urlsplit

import docx
import pypdf
import pytest

from research_app import export
from research_app.export import document, markdown, pdf
from research_app.models import ResearchRun
from tests.factories import ContextApi, extract_uploads, make_member
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES, finished, start
from workspaces.models import ResearchSession

HOSTILE = (
    "# Valve notes\n\n"
    'The valve programme cost notes: <script>alert(1)</script> =HYPERLINK("x") **bold** [x](y) '
    "water losses in district 3 were checked by the valve crew.\n"
)
VALVES_V2 = VALVES.replace("42 gate valves", "57 butterfly valves")
KINDS = {
    "md": "text/markdown; charset=utf-8",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pdf": "application/pdf",
}


def plain(text: str) -> str:
    return " ".join(text.split())


def unescape_markdown(text: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def resolved_text(api, url: str) -> dict:
    response = api.get(urlsplit(url).path)
    assert response.status_code == 200, (url, response.content)
    return response.json()


# --- reading each format back: (marks in the body, {n: (quote, url, head)}) -------------------------


def read_markdown(text: str) -> tuple[list[int], dict[int, tuple[str, str, str]]]:
    body, _, sources = text.partition("\n## Sources\n")
    marks = [int(n) for n in re.findall(r"\[\^(\d+)\]", body)]
    entries = {}
    for block in re.split(r"\n(?=\[\^\d+\]: )", sources.strip()):
        head = re.match(r"\[\^(\d+)\]: (.*)", block)
        quote = "\n".join(line[6:] for line in block.split("\n") if line.startswith("    > ") or line == "    >")
        url = re.search(r"^    <(\S+)>$", block, re.M)
        entries[int(head.group(1))] = (unescape_markdown(quote), url.group(1) if url else "", head.group(2))
    return marks, entries


def read_docx(content: bytes) -> tuple[list[int], dict[int, tuple[str, str, str]], docx.document.Document]:
    word = docx.Document(io.BytesIO(content))
    paragraphs = word.paragraphs
    start = next(i for i, p in enumerate(paragraphs) if p.text == "Sources" and p.style.name.startswith("Heading"))
    marks = []
    for paragraph in paragraphs[:start]:
        for link in paragraph.hyperlinks:
            if link.fragment:
                assert link.text == f"[{link.fragment.removeprefix('source_')}]"
                marks.append(int(link.fragment.removeprefix("source_")))
    bookmarks = set(re.findall(r'w:bookmarkStart[^>]*w:name="(source_\d+)"', word.element.xml))
    entries = {}
    rest = paragraphs[start + 1 :]
    for i, paragraph in enumerate(rest):
        head = re.match(r"\[(\d+)\] ", paragraph.text)
        if not head:
            continue
        n = int(head.group(1))
        assert f"source_{n}" in bookmarks, n
        quote = rest[i + 1].text if i + 1 < len(rest) and rest[i + 1].style.name == "Quote" else ""
        url = next((link.address for p in rest[i + 1 : i + 3] for link in p.hyperlinks if link.address), "")
        entries[n] = (quote, url, paragraph.text)
    return marks, entries, word


def read_pdf(content: bytes) -> tuple[str, list[int], list[int], list[str], int]:
    """(text, marks in the body, entry numbers, external link URIs, internal links)."""
    reader = pypdf.PdfReader(io.BytesIO(content))
    text = "\n".join(page.extract_text() for page in reader.pages)
    body, _, sources = text.rpartition("\nSources\n")
    uris, internal = [], 0
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            action = annot.get("/A")
            if action is not None and action.get("/URI"):
                uris.append(str(action["/URI"]))
            elif annot.get("/Dest") is not None or (action is not None and action.get("/S") == "/GoTo"):
                internal += 1
    body = body.split("\nAlso read, not cited in the text\n")[0]
    marks = [int(n) for n in re.findall(r"\[(\d+)\]", body)]
    numbers = [int(n) for n in re.findall(r"^\[(\d+)\] ", sources, re.M)]
    return text, marks, numbers, uris, internal


# --- the real thing ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker_thread")
def test_each_export_keeps_every_citation_and_quotes_what_its_source_url_opens(artifacts):
    member, team = make_member()
    api = ContextApi(member)
    question = QUESTION.replace("valve programme", "valve programme in Zürich")
    # The hostile notes are another session's file: the run finds them in the team library.
    api.upload_and_extract(api.create_session(title="Field notes"), {"notes.md": HOSTILE.encode()})
    sid = api.create_session(title="Pilot — Zürich", question=question)
    api.upload_and_extract(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid, max_depth=0)
    assert finished(api, rid)["status"] == "completed"
    # valves.md is replaced after the report: its citations now open a superseded version.
    assert api.replace(sid, api.file_id(sid, "valves.md"), "valves.md", VALVES_V2.encode()).status_code == 200
    extract_uploads()
    report = api.get(f"/api/runs/{rid}/report").json()["report"]
    assert [c["filename"] for c in report["sources_changed"]] == ["valves.md"]
    superseded_on = report["sources_changed"][0]["changed_at"][:10]

    files = {}
    for kind, content_type in KINDS.items():
        response = api.get(f"/api/runs/{rid}/report.{kind}", HTTP_ACCEPT=content_type.split(";")[0])
        assert response.status_code == 200, response.content
        assert response["Content-Type"] == content_type
        disposition = response["Content-Disposition"]
        stem = "Did the valve programme in Zürich reduce water losses and how did maintenance"  # cut at a word
        assert disposition == (
            f'attachment; filename="{stem.replace("ü", "u").replace(" ", "-")}.{kind}"; '
            f"filename*=UTF-8''{quote(stem + '.' + kind, safe='')}"
        ), disposition
        assert unquote(disposition.split("''")[1]) == f"{stem}.{kind}"
        files[kind] = response.content
        (artifacts / f"report-export.{kind}").write_bytes(response.content)

    # Markdown: every [^n] has its definition; each quotes what its source_url opens.
    text = files["md"].decode()
    marks, entries = read_markdown(text)
    assert marks and set(marks) == set(entries), (marks, entries.keys())
    cited = {n for s in report["sections"] for p in s["paragraphs"] for n in p["citations"]}
    assert cited <= set(marks), "the report's own [n] keep their numbers"
    states = set()
    for n, (quoted, url, head) in entries.items():
        resolved = resolved_text(api, url)
        assert quoted == document.cut(resolved["text"]), (n, quoted, resolved["text"])
        assert head.startswith(f"**{markdown.inline(resolved['filename'])}**"), head
        if resolved["status"] == "superseded":
            assert f"superseded on {superseded_on}" in head, head
            states.add("superseded")
        library = resolved["origin_session"]["id"] != sid
        assert ("from session “Field notes”" in head) == library, head
        states.add("library" if library else "own")
    assert states == {"superseded", "library", "own"}, "valves.md was superseded; notes.md is the library's"
    header = text.split("\n## ")[0]
    assert f"# {markdown.inline(question)}" in header and "- **Session:** Pilot — Zürich" in header
    assert "- **Written by:** offline extractive" in header
    assert "- **Cost:** $0.00 (" in header and "model calls; the offline mode costs nothing)" in header
    assert f"> - valves.md — superseded on {superseded_on}" in header, "the sources-changed notice"
    # Untrusted text stays text: nothing a Markdown reader would render as HTML, a link or emphasis.
    assert not re.search(r"(?<!\\)<(?!http://testserver/api/sources/)", text), "every < is escaped or our link"
    assert "\\<script>alert(1)\\</script>" in text
    assert "\\*\\*bold\\*\\*" in text and "\\[x\\](y)" in text and '=HYPERLINK("x")' in text

    # Word: [n] link to bookmarks on the source entries; the same quotes, as plain runs.
    marks, entries, word = read_docx(files["docx"])
    assert marks and set(marks) == set(entries)
    for n, (quoted, url, head) in entries.items():
        resolved = resolved_text(api, url)
        assert quoted == document.cut(resolved["text"]), (n, quoted)
        assert head.startswith(f"[{n}] {resolved['filename']}"), head
        assert (f"superseded on {superseded_on}" in head) == (resolved["status"] == "superseded"), head
        assert ("from session “Field notes”" in head) == (resolved["origin_session"]["id"] != sid), head
    everything = "\n".join(p.text for p in word.paragraphs)
    assert '<script>alert(1)</script> =HYPERLINK("x") **bold** [x](y)' in everything
    assert "w:fldSimple" not in word.element.xml and "w:instrText" not in word.element.xml, "no field, no formula"
    assert f"valves.md — superseded on {superseded_on}" in everything
    (artifacts / "report-export-docx.txt").write_text(everything)

    # PDF: [n] are internal links to the entries; each source_url's text is quoted.
    pdf_text, marks, numbers, uris, internal = read_pdf(files["pdf"])
    assert marks and set(marks) == set(numbers) == set(entries), (marks, numbers)
    assert internal == len(marks), "every [n] links to its source entry"
    assert len(uris) == len(numbers)
    for url in uris:
        resolved = resolved_text(api, url)
        assert plain(document.cut(resolved["text"])) in plain(pdf_text), url
    assert '<script>alert(1)</script> =HYPERLINK("x") **bold** [x](y)' in plain(pdf_text)
    assert "Sources changed since this report" in pdf_text and f"superseded on {superseded_on}" in pdf_text
    assert plain(question) in plain(pdf_text) and "Pilot — Zürich" in pdf_text
    html = pdf.html(document.build(ResearchRun.objects.get(pk=rid), member, lambda path: f"http://testserver{path}"))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html

    # A teammate downloads the same files; another team gets the API's 404 for each.
    teammate = ContextApi(make_member(team=ResearchSession.objects.get(pk=sid).team)[0])
    stranger = ContextApi(make_member()[0])
    for kind in KINDS:
        assert teammate.get(f"/api/runs/{rid}/report.{kind}").status_code == 200
        refused = stranger.get(f"/api/runs/{rid}/report.{kind}")
        assert refused.status_code == 404 and refused.json() == {"error": "run not found"}


@pytest.mark.django_db(transaction=True)
def test_a_run_without_a_report_answers_the_json_404_of_report():
    api = ContextApi(make_member()[0])
    run = ResearchRun.objects.create(
        session_id=api.create_session(),
        question="Q?",
        status="running",
        max_depth=1,
        max_children=2,
        max_nodes=3,
        token_budget=1000,
    )
    expected = {"error": "the run has no report yet (status: running)", "run_status": "running"}
    for path in ("report", "report.md", "report.docx", "report.pdf"):
        response = api.get(f"/api/runs/{run.pk}/{path}")
        assert response.status_code == 404 and response.json() == expected, path
    # A client that asks for the file's type gets the same JSON error, not a 406.
    response = api.get(f"/api/runs/{run.pk}/report.pdf", HTTP_ACCEPT="application/pdf")
    assert response.status_code == 404 and response.json() == expected


# --- no database: names and escaping -------------------------------------------------------------


def test_file_names_are_safe_and_headers_carry_an_ascii_fallback():
    assert export.file_stem('Why did "A/B" fail?\n') == "Why did A B fail"
    assert export.file_stem("../../etc/passwd") == "etc passwd"
    assert export.file_stem("???") == "report"
    assert len(export.file_stem("word " * 100)) <= export.FILENAME_CHARS
    assert export.content_disposition("水道の漏水.pdf") == (
        "attachment; filename=\"report.pdf\"; filename*=UTF-8''%E6%B0%B4%E9%81%93%E3%81%AE%E6%BC%8F%E6%B0%B4.pdf"
    )
    assert export.content_disposition("Crème brûlée.md").startswith('attachment; filename="Creme-brulee.md"; ')


def test_markdown_escapes_markup_and_html_and_links_are_http_only():
    hostile = (
        "# not a heading\n- not a list\n1. not a list\n> not a quote\n"
        "<img src=x onerror=alert(1)> `code` _u_ a|b ~s~ &amp; R&D"
    )
    escaped = markdown.escape(hostile)
    assert escaped.split("\n") == [
        "\\# not a heading",
        "\\- not a list",
        "1\\. not a list",
        "\\> not a quote",
        "\\<img src=x onerror=alert(1)> \\`code\\` \\_u\\_ a\\|b \\~s\\~ \\&amp; R&D",
    ]
    assert unescape_markdown(escaped) == hostile
    assert document.safe_url("javascript:alert(1)") == "" and document.safe_url("data:text/html,x") == ""
    assert document.safe_url('https://example.org/a b"<c>') == "https://example.org/a%20b%22%3Cc%3E"
    assert document.cut("word " * 100).endswith("…") and len(document.cut("word " * 100)) <= document.QUOTE_CHARS + 1
