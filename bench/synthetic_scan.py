"""Scans made from text we know: pages rendered with DejaVu Serif (Debian's fonts-dejavu-core) at
300 dpi, turned by a slight angle and sprinkled with noise as a scanner or a phone would, saved
as a PNG or as an image-only PDF (Pillow), or put between text pages (bench/synthetic_pdf.py)
into a mixed PDF. Used by tests/context/test_ocr.py and bench/ocr_bench.py.
"""

from __future__ import annotations

import io
import random
import re
from collections import Counter

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
DPI = 300

_SUBJECTS = (
    "The night crew",
    "The district engineer",
    "The board",
    "The survey team",
    "The pump station in zone {z}",
    "The contractor",
    "The finance office",
    "The meter reading team",
)
_CLAUSES = (
    "replaced {n} valves on the northern ring main during week {w}",
    "measured a pressure of {p} bar at the reservoir outlet before dawn",
    "reported water losses of {q} percent across district {z}",
    "approved a budget of {m} thousand euros for the second phase",
    "inspected {n} hydrants and found {k} of them leaking",
    "signed the maintenance contract for another {k} years",
    "recorded {n} cubic metres of night flow in zone {z}",
    "trained {k} new operators on the telemetry system",
)
_ENDINGS = (
    "as the minutes of the meeting record.",
    "according to the quarterly report.",
    "before the winter inspection began.",
    "while the old pipes were still in service.",
    "after the leak survey of the spring.",
)


def paragraphs(count: int, seed: int, sentences: int = 4) -> list[str]:
    """`count` paragraphs of plain sentences about a water utility's operations (deterministic)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        said = []
        for _ in range(sentences):
            values = {
                "z": rng.randint(1, 9),
                "w": rng.randint(1, 52),
                "n": rng.randint(12, 480),
                "k": rng.randint(2, 9),
                "p": f"{rng.randint(2, 6)}.{rng.randint(0, 9)}",
                "q": rng.randint(8, 31),
                "m": rng.randint(120, 950),
            }
            subject = rng.choice(_SUBJECTS).format(**values)
            said.append(f"{subject} {rng.choice(_CLAUSES).format(**values)} {rng.choice(_ENDINGS)}")
        out.append(" ".join(said))
    return out


def page_image(texts: list[str], *, dpi: int = DPI, angle: float = 0.6, noise: float = 10.0, seed: int = 0):
    """A letter page (8.5 × 11 in) of the paragraphs in 11 pt type, turned by `angle` degrees, with
    Gaussian noise of `noise` grey levels: a greyscale Pillow image carrying its dpi."""
    import numpy
    from PIL import Image, ImageDraw, ImageFont

    width, height = int(8.5 * dpi), int(11 * dpi)
    page = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.truetype(FONT, round(11 / 72 * dpi))
    margin, line_height = dpi, round(font.size * 1.45)
    y = margin
    for text in texts:
        for line in _wrap(text, font, width - 2 * margin):
            draw.text((margin, y), line, font=font, fill=0)
            y += line_height
        y += line_height // 2
    page = page.rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=255)
    grey = numpy.asarray(page, dtype=numpy.float32)
    grey = grey + numpy.random.default_rng(seed).normal(0.0, noise, grey.shape)
    scanned = Image.fromarray(grey.clip(0, 255).astype(numpy.uint8), "L")
    scanned.info["dpi"] = (dpi, dpi)
    return scanned


def _wrap(text: str, font, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        candidate = f"{line} {word}".strip()
        if line and font.getlength(candidate) > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    return lines + ([line] if line else [])


def png(texts: list[str], **options) -> bytes:
    out = io.BytesIO()
    image = page_image(texts, **options)
    image.save(out, "PNG", dpi=image.info["dpi"])
    return out.getvalue()


def scanned_pdf(pages: list[list[str]], *, dpi: int = DPI, **options) -> bytes:
    """An image-only PDF, one scanned page per list of paragraphs (no text layer at all)."""
    images = [page_image(texts, dpi=dpi, seed=number, **options) for number, texts in enumerate(pages)]
    out = io.BytesIO()
    images[0].save(out, "PDF", save_all=True, append_images=images[1:], resolution=dpi)
    return out.getvalue()


def mixed_pdf(pages: list[tuple[str, list[str]]]) -> bytes:
    """Text pages ("text", lines) and scanned pages ("scan", paragraphs), in the order given."""
    import pypdf

    from bench.synthetic_pdf import build_pdf

    writer = pypdf.PdfWriter()
    for kind, content in pages:
        made = build_pdf([content]) if kind == "text" else scanned_pdf([content])
        writer.add_page(pypdf.PdfReader(io.BytesIO(made)).pages[0])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def words(text: str) -> Counter:
    return Counter(re.findall(r"[a-z0-9]+", text.lower()))


def word_recall(original: str, extracted: str) -> float:
    """The share of the original's words (with their counts) found in the extracted text."""
    expected, found = words(original), words(extracted)
    return sum(min(count, found[word]) for word, count in expected.items()) / max(sum(expected.values()), 1)
