"""Reading page images by OCR: Tesseract (the `tesseract` command, TSV output) on page images.

The readers hand over pages as (number, a function that makes its image): a PDF page
rendered by pypdfium2, an image file's frame decoded by Pillow (binary_readers). Each
image is made here, in the extraction child's own thread (neither library is
thread-safe), and read by a `tesseract` process of its own, up to OCR_PROCESSES at a
time, each single-threaded (OMP_THREAD_LIMIT=1: Tesseract's OpenMP threads fight over
the cores of parallel pages and of the other jobs of the worker).

Every page gets GROUNDWORK_EXTRACT_SECONDS of its own: the budget's clock restarts at
each page, the `tesseract` process is killed at that limit (the page is then left out,
and the file says so), and `progress` is told each page, so the worker (which kills
the child after that long without news, extraction/isolation.py) sees a long scan
moving and its chip says "OCR page 12/80".
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .blocks import Block
from .limits import ExtractionError, _Budget, _short

# A scanned PDF page is rendered at its image's own resolution, at least OCR_MIN_DPI (a fax's
# 150 dpi is enlarged: Tesseract reads small type better) and at most OCR_DPI (a 600-dpi scan is
# reduced: Tesseract's time grows with the pixels, 2.1 CPU seconds a dense page at 300 dpi, 1.5 at 200).
OCR_DPI = 300
OCR_MIN_DPI = 200
# What ends a sentence (or a clause that may close a paragraph): a paragraph ending so is not taken up by the next.
SENTENCE_END = frozenset('.!?:;…"”’)')
# `tesseract` processes at a time: the worker's two cores.
OCR_PROCESSES = 2
# Under this mean word confidence (Tesseract's 0–100), a page is named on the file.
LOW_CONFIDENCE = 70.0
# An image larger than this is scaled down before Tesseract reads it: past a page at ~500 dpi
# its time grows with no gain in what it reads.
OCR_MAX_PIXELS = 25_000_000

Progress = Callable[[str], None]


@dataclass
class OcrPage:
    number: int
    paragraphs: list[str] = field(default_factory=list)
    confidence: float | None = None  # the mean confidence of its words
    failure: str = ""  # why it could not be read ("" when it was)


def unavailable_reason(mode: str, languages: str) -> str | None:
    """Why OCR cannot run here ("OCR is off", "tesseract is not installed", a missing language), or None."""
    if mode == "off":
        return "OCR is off"
    if shutil.which("tesseract") is None:
        return "tesseract is not installed"
    try:
        listed = subprocess.run(["tesseract", "--list-langs"], capture_output=True, timeout=30, env=_environment())
    except (OSError, subprocess.SubprocessError) as exc:
        return f"tesseract does not run ({_short(exc)})"
    installed = set(listed.stdout.decode("utf-8", "replace").split()[1:]) if listed.returncode == 0 else set()
    missing = [code for code in language_codes(languages) if code not in installed]
    if missing:
        return (
            f"the OCR language {'+'.join(missing)} is not installed (GROUNDWORK_OCR_LANGUAGES; "
            f"Debian: tesseract-ocr-{missing[0]})"
        )
    return None


def language_codes(languages: str) -> list[str]:
    """ "eng", "eng+fra", "eng,fra" or "eng fra" → ["eng", "fra"]."""
    return [code for code in languages.replace(",", "+").replace(" ", "+").split("+") if code]


def read_pages(
    pages: Iterable[tuple[int, Callable[[], object]]],
    total: int,
    languages: str,
    budget: _Budget,
    progress: Progress | None,
) -> dict[int, OcrPage]:
    """{page number: what OCR read on it} for each (number, make_image) of `pages`.

    make_image returns a Pillow image (or raises ExtractionError, which ends the file:
    a page over the pixel limit is the file's, not the page's, problem).
    """
    # Imported here: every extraction's child process imports this module, and only a scan needs the pool
    # (with the logging it imports, a tenth of the child's start-up).
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    results: dict[int, OcrPage] = {}
    language = "+".join(language_codes(languages)) or "eng"
    seconds = budget.limits.seconds
    tell = progress or (lambda _label: None)
    tell(f"OCR page 1/{total}")
    with ThreadPoolExecutor(max_workers=OCR_PROCESSES) as pool:
        running: dict[Future, int] = {}

        def collect(block: bool) -> None:
            done, _ = wait(running, return_when=FIRST_COMPLETED, timeout=None if block else 0)
            for future in done:
                number = running.pop(future)
                results[number] = future.result()
                budget.restart_clock()  # each page has the wall-clock limit to itself
                tell(f"OCR page {min(len(results) + 1, total)}/{total}")

        for number, make_image in pages:
            budget.restart_clock()
            while len(running) >= OCR_PROCESSES:
                collect(block=True)
            prepared = _tesseract_input(make_image())
            if prepared is None:  # a blank page: nothing to read (and noise Tesseract would take for text)
                results[number] = OcrPage(number)
                tell(f"OCR page {min(len(results) + 1, total)}/{total}")
                continue
            running[pool.submit(_tesseract, number, *prepared, language, seconds)] = number
            collect(block=False)
        while running:
            collect(block=True)
    return results


def _tesseract_input(image) -> tuple[bytes, int | None] | None:
    """The image as Tesseract reads it fastest (grey PGM) and its resolution, if known; None for a blank page."""
    from PIL import Image

    dpi = image.info.get("ocr_dpi")
    if image.width * image.height > OCR_MAX_PIXELS:
        factor = (OCR_MAX_PIXELS / (image.width * image.height)) ** 0.5
        image = image.resize((max(1, int(image.width * factor)), max(1, int(image.height * factor))), Image.LANCZOS)
        dpi = int(dpi * factor) if dpi else None
    if image.mode != "L":
        image = image.convert("L")
    if _blank(image.histogram()):
        return None
    out = io.BytesIO()
    image.save(out, "PPM")  # PGM for mode L: no compression to spend time on
    return out.getvalue(), dpi


# A page is blank when fewer than this share of its pixels are ink: INK_CONTRAST grey levels darker
# than its paper (the median). A short word at 300 dpi is ~0.03 %. Tesseract binarises a blank page's
# noise into thousands of "letters" (35 s of CPU and confidence 22 on a noisy blank page, 2 s on text).
INK_SHARE = 0.0002
INK_CONTRAST = 60


def _blank(histogram: list[int]) -> bool:
    total = sum(histogram)
    seen, paper = 0, 255
    for level, count in enumerate(histogram):
        seen += count
        if seen * 2 >= total:
            paper = level
            break
    ink = sum(histogram[: max(paper - INK_CONTRAST, 0)])
    return ink < INK_SHARE * total


def _tesseract(number: int, image_bytes: bytes, dpi: int | None, language: str, seconds: float) -> OcrPage:
    command = ["tesseract", "stdin", "stdout", "-l", language, "--psm", "3"]
    if dpi:
        command += ["--dpi", str(dpi)]
    try:
        done = subprocess.run(
            command + ["tsv"], input=image_bytes, capture_output=True, timeout=seconds, env=_environment()
        )
    except subprocess.TimeoutExpired:
        return OcrPage(number, failure=f"OCR took longer than {seconds:g} seconds (limit GROUNDWORK_EXTRACT_SECONDS)")
    except OSError as exc:
        return OcrPage(number, failure=f"tesseract did not run ({_short(exc)})")
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return OcrPage(number, failure=f"tesseract failed ({tail[0][:200]})")
    paragraphs, confidences = paragraphs_from_tsv(done.stdout.decode("utf-8", "replace"))
    confidence = sum(confidences) / len(confidences) if confidences else None
    return OcrPage(number, paragraphs, confidence)


def paragraphs_from_tsv(tsv: str) -> tuple[list[str], list[float]]:
    """Tesseract's TSV → its paragraphs in reading order (lines kept) and each word's confidence."""
    paragraphs: dict[tuple[str, str], dict[str, list[str]]] = {}
    confidences: list[float] = []
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue  # a word is level 5; the other levels are its page, block, paragraph and line
        paragraphs.setdefault((cells[2], cells[3]), {}).setdefault(cells[4], []).append(cells[11].strip())
        try:
            confidence = float(cells[10])
        except ValueError:
            continue
        if confidence >= 0:
            confidences.append(confidence)
    texts: list[str] = []
    block = None
    for (block_number, _paragraph), lines in paragraphs.items():
        text = "\n".join(" ".join(words) for words in lines.values())
        if texts and _continues(texts[-1], text, same_block=block_number == block):
            texts[-1] = f"{texts[-1]}\n{text}"
        else:
            texts.append(text)
        block = block_number
    return texts, confidences


def _continues(before: str, text: str, *, same_block: bool) -> bool:
    """Whether a paragraph goes on with the sentence the one before it left open. Tesseract starts a new
    paragraph where a line's left edge moves, as it does on a page scanned a little askew: "… will be
    closed from" then "24 December 2026 …"; a sentence cut there would be two facts, neither true. It starts a
    new block where the gap between two lines grows ("… at the start" then "of each shift, …"): there only a
    lower-case word goes on with the sentence (a block that starts with a figure is as often a table's or a
    list's)."""
    if before[-1] in SENTENCE_END:
        return False
    return text[0].islower() or (same_block and text[0].isdigit())


def blocks_of(page: OcrPage) -> list[Block]:
    """A page read by OCR as blocks: its paragraphs, located "p. N", marked as read by OCR."""
    confidence = round(page.confidence) if page.confidence is not None else None
    return [
        Block(text, f"p. {page.number}", new_section=index == 0, read_by="ocr", confidence=confidence)
        for index, text in enumerate(page.paragraphs)
    ]


def notes_of(pages: dict[int, OcrPage]) -> list[str]:
    """What the file says about its OCR: pages of low confidence, pages it could not read."""
    notes = []
    low = sorted(
        n for n, p in pages.items() if p.paragraphs and p.confidence is not None and p.confidence < LOW_CONFIDENCE
    )
    if low:
        notes.append(f"low OCR confidence on {pages_phrase(low)} (mean word confidence under {LOW_CONFIDENCE:g}%)")
    failures: dict[str, list[int]] = {}
    for number, page in sorted(pages.items()):
        if page.failure:
            failures.setdefault(page.failure, []).append(number)
    for failure, numbers in failures.items():
        notes.append(f"{pages_phrase(numbers)} left out: {failure}")
    return notes


def pages_phrase(numbers: Iterable[int]) -> str:
    """[3] → "page 3"; [3, 7] → "pages 3, 7"; [2, 3, 4, 9] → "pages 2–4, 9"."""
    ordered = sorted(set(numbers))
    runs: list[list[int]] = []
    for number in ordered:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    text = ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs)
    return f"page {text}" if len(ordered) == 1 else f"pages {text}"


def _environment() -> dict[str, str]:
    return {**os.environ, "OMP_THREAD_LIMIT": "1"}


def refuse_oversized(width: int, height: int, limit: int, what: str) -> None:
    """A page or image over the pixel limit ends the file with an error naming the setting."""
    if width * height > limit:
        raise ExtractionError(
            "too_large",
            f"{what} is {width}×{height} pixels ({width * height / 1e6:.1f} megapixels), over the "
            f"{limit / 1e6:g}-megapixel limit (GROUNDWORK_MAX_IMAGE_PIXELS)",
        )
