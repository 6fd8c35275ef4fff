"""Readers of the binary formats from the file's bytes: PDF (pypdfium2 reads its text layer and renders
its scanned pages for OCR), images (Pillow, then OCR) and DOCX (python-docx)."""

import io
import itertools
import re
from collections import Counter
from typing import NamedTuple

from llm_platform.prose import NUMBER_WORDS

from . import ocr
from .blocks import Block, _paragraphs, _path, heading_level, is_numbered_heading, section_number
from .decoding import normalise_text
from .limits import ExtractionError, _Budget, _guard_zip, _short
from .page_furniture import without_page_furniture

Read = tuple[list[Block], int, list[str]]  # a paginated reader's blocks, page count and notes


class _Line(NamedTuple):
    text: str
    size: float  # the font size of its first character, in the page's units


def _pdf_blocks(data: bytes, budget: _Budget, progress: ocr.Progress | None = None) -> Read:
    """(blocks in page order, the page count, notes for the file).

    Each page's text layer is read by PDFium; a page whose layer is empty or nearly so and
    that holds an image is a scan: it is rendered and read by OCR instead (extraction.ocr).
    Every page keeps its place and its "p. N"; a page that yields no text is named in a note.
    """
    # Lazy: pdfium loads only when a PDF comes (in the extraction child, extraction.isolation).
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium.raw.FPDF_ERR_PASSWORD:
            raise ExtractionError("encrypted", "PDF is encrypted") from None
        raise ExtractionError("corrupt", f"not a valid PDF: {_short(exc)}") from None
    page_count = len(document)
    texts: list[str] = []
    lines: list[list[_Line]] = []  # each page's lines with their font size
    tables = _ruled_tables(data, document, min(page_count, budget.limits.max_pages), budget)
    for number in range(min(page_count, budget.limits.max_pages)):
        budget.check_time()
        text, sized = _page_text(document, number, tables.get(number, []))
        texts.append(normalise_text(text))
        lines.append(sized)
    if page_count > budget.limits.max_pages:
        budget.truncated = True
    texts = without_page_furniture(texts)  # running headers and footers would glue onto the sentences they cut
    texts = _sentences_whole_across_pages(_joined_across_hyphens(texts))
    notes: list[str] = []
    read: dict[int, ocr.OcrPage] = {}
    unread: set[int] = set()  # scans OCR could not read, named in a note already
    nearly_empty = [n for n, text in enumerate(texts, start=1) if _visible_chars(text) < NEARLY_EMPTY_CHARS]
    scans = _scanned_pages(document, nearly_empty, texts, budget) if nearly_empty else {}
    if scans:
        reason = ocr.unavailable_reason(budget.limits.ocr, budget.limits.ocr_languages)
        if reason is not None:
            if not any(_visible_chars(text) for n, text in enumerate(texts, start=1) if n not in scans):
                raise ExtractionError("ocr_unavailable", f"no text layer: {reason}")
            notes.append(f"{ocr.pages_phrase(scans)} without a text layer not read: {reason}")
            unread = set(scans)
        else:
            renders = ((number, _renderer(scans[number], budget.limits)) for number in sorted(scans))
            read = ocr.read_pages(renders, len(scans), budget.limits.ocr_languages, budget, progress)
            notes = ocr.notes_of(read) + notes
    blocks: list[Block] = []
    silent: list[int] = []  # pages with no text that no note names yet
    headings = _display_lines(lines)
    for number, text in enumerate(texts, start=1):
        if number in read and read[number].paragraphs:
            page_blocks = ocr.blocks_of(read[number])
        else:  # its text layer (a page read by OCR that failed keeps the little it had)
            page_blocks = _page_blocks(text, number, headings[number - 1])
        if not page_blocks and not (number in read and read[number].failure) and number not in unread:
            silent.append(number)
        blocks.extend(page_blocks)
    if silent and blocks:
        notes.append(f"no text on {ocr.pages_phrase(silent)}")
    document.close()
    return blocks, page_count, notes


def _page_blocks(text: str, number: int, headings: frozenset[str] = frozenset()) -> list[Block]:
    """A page's text layer as blocks located "p. N": its paragraphs, each heading in them opening a section
    of its own, so that a citation opens the section its sentence stands in rather than the whole page: a
    numbered one ("2. Receiving") or one of the page's `headings`, its lines set larger than the text
    (`_display_lines`). The page stays the locator: a PDF's place is its page."""
    sections = [section for paragraph in _paragraphs(text) for section in _sections(paragraph, headings)]
    return [
        Block(section, f"p. {number}", new_section=index == 0 or heads)
        for index, (section, heads) in enumerate(sections)
    ]


def _sections(paragraph: str, headings: frozenset[str]) -> list[tuple[str, bool]]:
    """A paragraph of a page, cut before each heading line (`_numbered_heading`, or the first line of one of
    `headings`: a title set over two lines is one); each piece with whether a heading opens it."""
    lines = paragraph.split("\n")
    display = [line.strip() in headings for line in lines]
    cuts = [
        0,
        *(
            index
            for index in range(1, len(lines))
            if _numbered_heading(lines, index) or (display[index] and not display[index - 1])
        ),
        len(lines),
    ]
    return [("\n".join(lines[start:end]), start > 0) for start, end in itertools.pairwise(cuts)]


def _numbered_heading(lines: list[str], index: int) -> bool:
    """Whether a page's line is a numbered section heading ("2. Receiving", extraction.blocks.is_numbered_heading)
    with its text below it: a numbered list's short items ("1. Check seals" over "2. Count pallets") are no
    headings, nor is its last item above the paragraph after the list."""
    line = lines[index]
    return (
        is_numbered_heading(line)
        and index + 1 < len(lines)
        and not section_number(lines[index - 1])
        and not section_number(lines[index + 1])
    )


# A line set this much larger than the document's text is a heading (groff sets its section headings 1.09 times
# the text, WeasyPrint and word processors an <h2> 1.2 times or more) when it is short.
DISPLAY_SIZE_RATIO = 1.05
MAX_DISPLAY_WORDS = 12


def _display_lines(pages: list[list[_Line]]) -> list[frozenset[str]]:
    """Each page's heading lines, as normalised text: lines of at most MAX_DISPLAY_WORDS words set at least
    DISPLAY_SIZE_RATIO times the size most of the document's letters are set in (its text's)."""
    letters: Counter[float] = Counter()
    for line in itertools.chain.from_iterable(pages):
        letters[round(line.size, 1)] += len(line.text)
    if not letters:
        return [frozenset() for _ in pages]
    text_size = letters.most_common(1)[0][0]
    return [
        frozenset(
            normalise_text(line.text).strip()
            for line in lines
            if line.size >= DISPLAY_SIZE_RATIO * text_size and len(line.text.split()) <= MAX_DISPLAY_WORDS
        )
        for lines in pages
    ]


# A page whose text layer has fewer visible characters than this (a stamp, a page number
# over a scan) and that holds an image is read by OCR.
NEARLY_EMPTY_CHARS = 20
# Unless its text layer is empty, a page is a scan only when its images cover this much of it:
# a title page with a logo keeps its few words.
SCAN_COVERAGE = 0.5


# PDFium joins a word hyphenated at a line's end and marks the join with U+FFFE, dropping the line
# break: "in\ufffesecure". Kept as a soft hyphen and its line break until the page's running header and
# footer are gone (a page's last word may be joined to its footer: "neces\ufffeBSD November 28, 2022").
LINE_END_HYPHEN = "\u00ad\n"


def _page_text(document, index: int, tables: list["_Table"] = ()) -> tuple[str, list[_Line]]:
    """A page's text layer in reading order, and its lines with their font size. PDFium places words by their
    glyphs' positions, where pypdf's reading of a TJ array's kerning split groff's and TeX's words ("cop y
    the public k ey"). The lines of a ruled table (`tables`) give way to its rows, a paragraph of its own where
    its first line stood."""
    import pypdfium2.raw as pdfium_c

    page = document[index]
    try:
        text_page = page.get_textpage()
        try:
            text = text_page.get_text_range()
            lines: list[_Line] = []
            # PDFium counts a character for each UTF-16 unit: positions line up unless the page writes beyond
            # the Basic Multilingual Plane (an emoji), whose lines go without their size (and its tables are
            # read line by line).
            if len(text) == text_page.count_chars():
                start = 0
                kept: list[str] = []
                placed: set[int] = set()  # the tables whose rows stand in the text already
                for line in text.split("\r\n"):
                    if written := line.lstrip():
                        first = start + len(line) - len(written)  # its first character that is not a space
                        lines.append(_Line(line, pdfium_c.FPDFText_GetFontSize(text_page.raw, first)))
                        table = _table_at(tables, text_page.get_charbox(first), page.get_height())
                        # … and its text is the table's: a box PDFium and pdfminer place apart loses no line.
                        if table is not None and _letters(line) in tables[table].letters:
                            if table not in placed:
                                kept.extend(["", *tables[table].rows, ""])
                                placed.add(table)
                            start += len(line) + 2
                            continue
                    kept.append(line)
                    start += len(line) + 2
                text = "\r\n".join(kept) if placed else text
            text = text.replace("\ufffe", LINE_END_HYPHEN)
            # A hyphen a layout engine put at a line's end (WeasyPrint's and Chrome's are U+2010) is one too.
            return text.replace("\u2010\r\n", LINE_END_HYPHEN), lines
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad page must not lose the document
            raise ExtractionError("corrupt", f"PDF page {index + 1} could not be read: {_short(exc)}") from None
        finally:
            text_page.close()
    finally:
        page.close()


class _Table(NamedTuple):
    box: tuple[float, float, float, float]  # left, top, right, bottom, from the page's top left (pdfplumber's)
    rows: list[str]  # each its cells joined by " | ", as a DOCX's are (llm_platform.tables says them as records)
    letters: str  # its letters and digits in order, lower-cased (`_letters`)


def _letters(text: str) -> str:
    """`text`'s letters and digits, lower-cased: a line as PDFium reads it and a cell as pdfminer does compare
    whatever spaces, hyphens and dashes each puts at a wrap."""
    return "".join(character for character in text.lower() if character.isalnum())


# A page with fewer paths drawn than this has no ruled table; one with more is a drawing (a map, a chart) whose
# lines make no table, and which pdfminer would take long to read.
MIN_TABLE_PATHS = 4
MAX_TABLE_PATHS = 2_000


def _ruled_tables(data: bytes, document, pages: int, budget: _Budget) -> dict[int, list[_Table]]:
    """Each page's tables drawn with rules, by page index, as pdfplumber finds them (their cells bounded by the
    lines drawn between them). PDFium reads a page line by line, so a row whose cells wrap ("Damaged fence
    panel," over "broken gate", then "Routine 30 working days Grounds team") is read as lines no sentence or
    record can hold. A table of one row or one column is a box around text, which is read as it was; so are the
    tables of a PDF pdfminer cannot read."""
    drawn = [number for number in range(pages) if MIN_TABLE_PATHS <= _paths_drawn(document, number) <= MAX_TABLE_PATHS]
    if not drawn:
        return {}
    import pdfplumber  # lazy, as pdfium: only for a PDF with rules drawn

    found: dict[int, list[_Table]] = {}
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for number in drawn:
                budget.check_time()
                page = pdf.pages[number]
                if page.rotation:
                    continue  # its boxes would not be PDFium's
                tables = []
                for table in page.find_tables():
                    rows = [row for row in map(_row_text, table.extract()) if row]
                    if len(rows) >= 2 and any(" | " in row for row in rows):
                        tables.append(_Table(table.bbox, rows, _letters("".join(rows))))
                if tables:
                    found[number] = tables
    except (ExtractionError, MemoryError):
        raise
    except Exception:  # noqa: BLE001 - pdfminer refused what PDFium read: its lines as they are
        return found
    return found


def _paths_drawn(document, index: int) -> int:
    """How many paths a page draws, counted up to one past MAX_TABLE_PATHS."""
    import pypdfium2.raw as pdfium_c

    page = document[index]
    try:
        return sum(1 for _ in itertools.islice(page.get_objects((pdfium_c.FPDF_PAGEOBJ_PATH,)), MAX_TABLE_PATHS + 1))
    finally:
        page.close()


def _row_text(cells: list[str | None]) -> str:
    """A table row's cells joined by " | ", each cell's wrapped lines one line again (after a hyphen or a dash
    with no space: "Emergency (Oct–" "Apr)"); a cell merged into the one before it (None) is that one."""
    said = []
    for cell in cells:
        if cell is None:
            continue
        joined = ""
        for line in cell.split("\n"):
            line = line.strip()
            joined = f"{joined}{line}" if joined.endswith(("-", "–")) or not joined else f"{joined} {line}"
        said.append(joined)
    return " | ".join(said) if any(said) else ""


def _table_at(tables: list[_Table], charbox: tuple[float, float, float, float], height: float) -> int | None:
    """The index of the table whose box holds the middle of a character (PDFium's box: left, bottom, right,
    top, from the page's bottom left), or None."""
    left, bottom, right, top = charbox
    x, y = (left + right) / 2, height - (bottom + top) / 2
    return next(
        (
            index
            for index, table in enumerate(tables)
            if table.box[0] <= x <= table.box[2] and table.box[1] <= y <= table.box[3]
        ),
        None,
    )


def _joined_across_hyphens(texts: list[str]) -> list[str]:
    """The pages' texts with each word hyphenated at a line's end one word again ("pretreat-" "ment"), unless
    the document writes it with its hyphen elsewhere ("low-" "salt" where it says "low-salt buffer": PDFium
    marks every hyphen that ends a line alike), or ends another compound with the word after the break
    ("Part-" "time" where it says "Full-time": a syllable is no compound's last word), or a number comes
    before the hyphen ("12-" "month", "one-" "year": no typesetter breaks a word after a figure or a number's
    name, so the hyphen is the compound's), or both its halves are words the document uses on their own, of
    MIN_COMPOUND_HALF letters or more, and never joined ("tenant-" "responsibility": a word processor breaks a
    line at an author's hyphen, not inside a word); at the page's end a word keeps its hyphen."""
    written = {
        word.strip(_PUNCTUATION).lower() for text in texts for word in text.split() if "-" in word.strip(_PUNCTUATION)
    }
    last_words = {compound.rpartition("-")[2] for compound in written} - {""}
    alone = {  # the words the document writes whole on a line (a half of a word broken at a line's end is not)
        word.strip(_PUNCTUATION).lower()
        for text in texts
        for word in text.replace(LINE_END_HYPHEN, LINE_END_HYPHEN[0]).split()
        if LINE_END_HYPHEN[0] not in word
    }
    joined = []
    for text in texts:
        pieces = text.split(LINE_END_HYPHEN)
        for index in range(1, len(pieces)):
            before, after = pieces[index - 1].split(), pieces[index].split()
            compound = f"{before[-1] if before else ''}-{after[0] if after else ''}".strip(_PUNCTUATION).lower()
            counted, last = compound.split("-")[0], compound.rpartition("-")[2]
            head = compound.rpartition("-")[0].rpartition("-")[2]
            words = (
                min(len(head), len(last)) >= MIN_COMPOUND_HALF and {head, last} <= alone and head + last not in alone
            )
            kept = compound in written or last in last_words or counted.isdigit() or counted in NUMBER_WORDS or words
            pieces[index] = ("-" if kept else "") + pieces[index]
        joined.append("".join(pieces).replace(LINE_END_HYPHEN[0], "-"))
    return joined


_PUNCTUATION = "\"'“”‘’()[]{}.,;:!?"
MIN_COMPOUND_HALF = 4  # letters: "in-" "secure" is one word broken, whatever "in" and "secure" are alone
MAX_CARRIED_CHARS = 400  # the most of a sentence a page break cut that moves up to the page it starts on


def _sentences_whole_across_pages(texts: list[str]) -> list[str]:
    """The pages' texts with a sentence that a page break cuts ("… has eaten within the" | "fasting window, the
    procedure is moved …") whole on the page it starts on: its rest, up to its full stop, moves up. Half a
    sentence is no statement a digest or a report can quote, and a citation opens the page it starts on. Only a
    page that ends without a stop before one that starts in lower case, and a rest within its paragraph."""
    texts = list(texts)
    for index in range(len(texts) - 1):
        head, tail = texts[index].rstrip(), texts[index + 1].lstrip()
        if not head or not tail[:1].islower() or head[-1] in ".!?:;":
            continue
        stops = [found + 1 for stop in (". ", ".\n", "? ", "! ") if (found := tail.find(stop)) >= 0]
        end = min(stops, default=len(tail) if tail.endswith((".", "?", "!")) else 0)
        rest = tail[:end]
        if not end or end > MAX_CARRIED_CHARS or "\n\n" in rest:
            continue
        texts[index] = f"{head} {' '.join(rest.split())}"
        texts[index + 1] = tail[end:].lstrip()
    return texts


def _visible_chars(text: str) -> int:
    return len("".join(text.split()))  # in C: a text page's check costs microseconds


def _scanned_pages(document, candidates: list[int], texts: list[str], budget: _Budget) -> dict:
    """{page number: its pdfium page} of the candidates (pages with little or no text layer)
    that hold an image: those OCR reads. An image over the pixel limit ends the file."""
    import pypdfium2 as pdfium

    limit = budget.limits.max_image_pixels
    scans = {}
    for number in candidates:
        budget.check_time()
        if number > len(document):
            break
        page = document[number - 1]
        width, height = page.get_size()
        covered, resolution = 0.0, 0.0
        for index, image in enumerate(page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE])):
            if index % 64 == 0:
                budget.check_time()
            pixels = image.get_px_size()
            ocr.refuse_oversized(pixels[0], pixels[1], limit, f"the image on page {number}")
            left, bottom, right, top = image.get_bounds()
            covered += max(0.0, right - left) * max(0.0, top - bottom)
            if right - left > 1:
                resolution = max(resolution, pixels[0] * 72 / (right - left))  # the scan's own dpi
        if covered and (not _visible_chars(texts[number - 1]) or covered >= SCAN_COVERAGE * width * height):
            scans[number] = (page, resolution)
        else:
            page.close()
    return scans


def _renderer(scan, limits):
    """The page as a grey image for OCR: at its scan's own resolution within OCR_MIN_DPI–OCR_DPI
    (more adds pixels to read and nothing to see), less when that would pass the pixel limit."""
    page, resolution = scan

    def render():
        width, height = page.get_size()  # points, 72 to the inch
        fitting = (min(limits.max_image_pixels, ocr.OCR_MAX_PIXELS) / max(width * height, 1)) ** 0.5
        scale = min(min(max(resolution, ocr.OCR_MIN_DPI), ocr.OCR_DPI) / 72, fitting)
        bitmap = page.render(scale=scale, grayscale=True)
        image = bitmap.to_pil().copy()  # the bitmap's buffer goes with the bitmap
        bitmap.close()
        page.close()
        image.info["ocr_dpi"] = round(scale * 72)
        return image

    return render


def _image_blocks(data: bytes, budget: _Budget, progress: ocr.Progress | None = None) -> Read:
    """An image (PNG, JPEG, TIFF with each frame a page, WebP) read by OCR: (blocks, pages, notes)."""
    import warnings

    from PIL import Image, UnidentifiedImageError

    limits = budget.limits
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own limit is checked below
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        pixels = re.search(r"\d+", str(exc))
        size = f"{int(pixels.group()) / 1e6:.1f} megapixels" if pixels else "too many pixels"
        raise ExtractionError(
            "too_large",
            f"the image is {size}, over the {limits.max_image_pixels / 1e6:g}-megapixel limit "
            "(GROUNDWORK_MAX_IMAGE_PIXELS): refused unread, as a decompression bomb",
        ) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise ExtractionError("corrupt", f"not a valid image: {_short(exc)}") from None
    ocr.refuse_oversized(*image.size, limits.max_image_pixels, "the image")
    # A TIFF's frames are the pages of a scan; an animated PNG or WebP is read at its first frame.
    frames = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1
    if frames > limits.max_pages:
        budget.truncated = True
    reason = ocr.unavailable_reason(limits.ocr, limits.ocr_languages)
    if reason is not None:
        raise ExtractionError("ocr_unavailable", f"no text layer: {reason}")
    count = min(frames, limits.max_pages)
    frames_read = ((n, _frame_reader(image, n, limits)) for n in range(1, count + 1))
    read = ocr.read_pages(frames_read, count, limits.ocr_languages, budget, progress)
    blocks = [block for number in sorted(read) for block in ocr.blocks_of(read[number])]
    notes = ocr.notes_of(read)
    silent = [n for n, page in read.items() if not page.paragraphs and not page.failure]
    if blocks and silent:
        notes.append(f"no text found by OCR on {ocr.pages_phrase(silent)}")
    if not blocks:
        why = f" ({'; '.join(notes)})" if notes else ""
        raise ExtractionError("empty", f"no text could be read from the image by OCR{why}")
    return blocks, frames, notes


def _frame_reader(image, number: int, limits):
    """Frame `number` (from 1) of the image, upright (EXIF orientation) and grey on white."""

    def read():
        from PIL import Image, ImageOps

        try:
            image.seek(number - 1)
            ocr.refuse_oversized(*image.size, limits.max_image_pixels, f"page {number} of the image")
            frame = ImageOps.exif_transpose(image)  # a copy, loaded
        except ExtractionError:
            raise
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - Pillow's decoders raise many types on broken data
            raise ExtractionError("corrupt", f"page {number} of the image could not be read: {_short(exc)}") from None
        if frame.mode in ("RGBA", "LA", "PA") or (frame.mode == "P" and "transparency" in frame.info):
            frame = frame.convert("RGBA")
            background = Image.new("RGBA", frame.size, "white")  # transparent is paper, not black
            frame = Image.alpha_composite(background, frame)
        if frame.mode == "I" or frame.mode.startswith("I;16"):  # 16-bit grey: convert("L") would clip it white
            frame = frame.convert("I").point(lambda value: value / 256)
        frame = frame.convert("L")
        dpi = image.info.get("dpi")
        if dpi and 70 <= float(dpi[0]) <= 1200:
            frame.info["ocr_dpi"] = round(float(dpi[0]))
        return frame

    return read


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
    styled = 1  # the level of the last heading set in one of Word's heading styles
    blocks: list[Block] = []
    for item in document.iter_inner_content():
        budget.check_time()
        if isinstance(item, Paragraph):
            text = _paragraph_text(item._p).strip()
            if not text:
                continue
            level = _heading_level(item.style.name if item.style is not None else "")
            if level is not None:
                styled = level
            elif _bold_heading(item, text):
                # One below the styled heading it stands under: a memo's bold "Risks" and "Budget" are sections
                # of its "Heading 1" title, side by side.
                level = styled + 1
            if level is not None:
                headings = [h for h in headings if h[0] < level] + [(level, text)]
                blocks.append(Block(text, _path(headings), new_section=True))
            else:
                blocks.append(Block(text, _path(headings)))
        elif isinstance(item, Table):
            rows = []
            for row in item.rows:
                cells = ["\n".join(_paragraph_text(p._p) for p in cell.paragraphs).strip() for cell in row.cells]
                rows.append(" | ".join(_dedupe_merged(cells)))
            if rows:
                blocks.append(Block("\n".join(rows), _path(headings)))
    return blocks


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
# What a paragraph shows once its tracked changes are accepted, as Word's "No Markup" view does: an insertion
# (w:ins) is text, a deletion (w:del, w:moveFrom) is not. python-docx's `Paragraph.text` reads only the runs
# directly under the paragraph, so a draft's tracked insertions were lost ("mileage at  for trips …"). A drawing
# or an alternate content block (a text box, its fallback repeating it) is left out, as before.
_NOT_SHOWN = {f"{_W}del", f"{_W}moveFrom", f"{_W}drawing", f"{_W}pict", f"{_W}pPr", f"{_W}rPr"} | {
    "{http://schemas.openxmlformats.org/markup-compatibility/2006}AlternateContent"
}
_SHOWN_AS = {f"{_W}tab": "\t", f"{_W}ptab": "\t", f"{_W}br": "\n", f"{_W}cr": "\n", f"{_W}noBreakHyphen": "-"}


def _paragraph_text(element) -> str:
    parts: list[str] = []
    for child in element:
        if child.tag == f"{_W}t":
            parts.append(child.text or "")
        elif child.tag in _SHOWN_AS:
            parts.append(_SHOWN_AS[child.tag])
        elif child.tag not in _NOT_SHOWN:
            parts.append(_paragraph_text(child))
    return "".join(parts)


def _bold_heading(paragraph, text: str) -> bool:
    """Whether a paragraph of the body style heads what follows as a heading does: a line set bold throughout
    that reads as a heading (extraction.blocks.heading_level: a few words, capitalised, not closed by
    punctuation), as many a memo heads its sections without Word's heading styles."""
    runs = [run for run in paragraph.runs if run.text.strip()]
    style_bold = bool(paragraph.style is not None and paragraph.style.font.bold)
    return (
        bool(runs)
        and "\n" not in text
        and all(run.bold or (run.bold is None and style_bold) for run in runs)
        and heading_level(text) is not None
    )


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
