"""Readers of the binary formats, PDF (pypdf) and DOCX (python-docx), from the file's bytes."""

import io
import re

from .blocks import Block, _paragraphs, _path
from .decoding import normalise_text
from .limits import ExtractionError, _Budget, _guard_zip, _short


def _pdf_blocks(data: bytes, budget: _Budget) -> tuple[list[Block], int]:
    # Lazy: pypdf loads only when a PDF comes (in the extraction child, context_app.isolation).
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise ExtractionError("encrypted", "PDF is encrypted")
        pages = reader.pages
        page_count = len(pages)
    except (ExtractionError, MemoryError):
        raise
    except (PdfReadError, Exception) as exc:  # pypdf raises many types on broken files
        raise ExtractionError("corrupt", f"not a valid PDF: {_short(exc)}") from None
    blocks: list[Block] = []
    for number in range(min(page_count, budget.limits.max_pages)):
        budget.check_time()
        try:
            page_text = pages[number].extract_text() or ""
        except MemoryError:
            raise
        except Exception as exc:  # one bad page must not lose the document
            raise ExtractionError("corrupt", f"PDF page {number + 1} could not be read: {_short(exc)}") from None
        first = True
        for paragraph in _paragraphs(normalise_text(page_text)):
            blocks.append(Block(paragraph, f"p. {number + 1}", new_section=first))
            first = False
    if page_count > budget.limits.max_pages:
        budget.truncated = True
    return blocks, page_count


def _docx_blocks(data: bytes, budget: _Budget) -> list[Block]:
    _guard_zip(data, budget.limits)
    # Lazy: python-docx (and lxml under it) load only when a DOCX comes.
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
    except MemoryError:
        raise
    except Exception as exc:
        raise ExtractionError("corrupt", f"not a valid DOCX: {_short(exc)}") from None
    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    for item in document.iter_inner_content():
        budget.check_time()
        if isinstance(item, Paragraph):
            text = item.text.strip()
            if not text:
                continue
            level = _heading_level(item.style.name if item.style is not None else "")
            if level is not None:
                headings = [h for h in headings if h[0] < level] + [(level, text)]
                blocks.append(Block(text, _path(headings), new_section=True))
            else:
                blocks.append(Block(text, _path(headings)))
        elif isinstance(item, Table):
            rows = []
            for row in item.rows:
                cells = [cell.text.strip() for cell in row.cells]
                rows.append(" | ".join(_dedupe_merged(cells)))
            if rows:
                blocks.append(Block("\n".join(rows), _path(headings)))
    return blocks


def _heading_level(style_name: str) -> int | None:
    if style_name == "Title":
        return 0
    match = re.match(r"Heading (\d)", style_name or "")
    return int(match.group(1)) if match else None


def _dedupe_merged(cells: list[str]) -> list[str]:
    """Merged cells repeat in python-docx; keep one copy of each run."""
    out: list[str] = []
    for cell in cells:
        if not out or cell != out[-1]:
            out.append(cell)
    return out
