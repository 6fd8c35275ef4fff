"""The bounds on one extraction and the error every bad file ends in.

ExtractionLimits comes from settings (or defaults); a _Budget counts one extraction's time
and characters against them; _guard_zip refuses a DOCX whose ZIP would unpack past them.
"""

import io
import time
import zipfile
from dataclasses import dataclass, field


class ExtractionError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ExtractionLimits:
    """Bounds on one extraction, each error message naming the setting it hit; and whether pages
    without a text layer are read by OCR, in which languages."""

    max_pages: int = 2000
    max_chars: int = 5_000_000
    max_decompressed_bytes: int = 64 * 1024 * 1024
    max_xml_bytes: int = 16 * 1024 * 1024
    seconds: float = 60.0  # for the whole file; for each page read by OCR
    memory_bytes: int = 1024 * 1024 * 1024  # enforced by the child process (extraction/isolation.py)
    max_image_pixels: int = 64_000_000  # an image, a frame of one, or a PDF page rendered for OCR
    ocr: str = "auto"  # "auto": pages without a text layer are read by Tesseract; "off": they are not
    ocr_languages: str = "eng"  # Tesseract's language codes, "eng+fra"

    @classmethod
    def from_settings(cls) -> "ExtractionLimits":
        # Django only when asked: the extraction child (extraction.isolation) runs without it.
        from django.conf import settings

        return cls(
            max_pages=settings.GROUNDWORK_MAX_PAGES,
            max_chars=settings.GROUNDWORK_MAX_CHARS,
            max_decompressed_bytes=settings.GROUNDWORK_MAX_DECOMPRESSED_BYTES,
            max_xml_bytes=settings.GROUNDWORK_MAX_XML_BYTES,
            seconds=settings.GROUNDWORK_EXTRACT_SECONDS,
            memory_bytes=settings.GROUNDWORK_EXTRACT_MEMORY_BYTES,
            max_image_pixels=settings.GROUNDWORK_MAX_IMAGE_PIXELS,
            ocr=settings.GROUNDWORK_OCR,
            ocr_languages=settings.GROUNDWORK_OCR_LANGUAGES,
        )

    def timeout_error(self) -> "ExtractionError":
        return ExtractionError(
            "timeout", f"extraction took longer than {self.seconds:g} seconds (limit GROUNDWORK_EXTRACT_SECONDS)"
        )

    def memory_error(self) -> "ExtractionError":
        return ExtractionError(
            "too_large",
            f"extraction needed more than {_mib(self.memory_bytes)} of memory (limit GROUNDWORK_EXTRACT_MEMORY_BYTES)",
        )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.4g} MiB"


@dataclass
class _Budget:
    limits: ExtractionLimits
    deadline: float = field(init=False)
    chars: int = 0
    truncated: bool = False

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.limits.seconds

    def restart_clock(self) -> None:
        """A page read by OCR has the wall-clock limit to itself."""
        self.deadline = time.monotonic() + self.limits.seconds

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise self.limits.timeout_error()

    @property
    def full(self) -> bool:
        return self.chars >= self.limits.max_chars

    def take(self, text: str) -> str | None:
        """The part of `text` that still fits the character limit (None once full)."""
        if self.full:
            self.truncated = True
            return None
        room = self.limits.max_chars - self.chars
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        self.chars += len(text)
        return text


def _guard_zip(data: bytes, limits: ExtractionLimits) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ExtractionError("corrupt", f"not a valid DOCX: {_short(exc)}") from None
    # zipfile never inflates a member past its declared size, so the declared sizes bound the work.
    total = sum(info.file_size for info in infos)
    if total > limits.max_decompressed_bytes:
        raise ExtractionError(
            "too_large",
            f"DOCX unpacks to {_mib(total)}, over the {_mib(limits.max_decompressed_bytes)} limit "
            "(GROUNDWORK_MAX_DECOMPRESSED_BYTES)",
        )
    for info in infos:
        if info.filename.endswith((".xml", ".rels")) and info.file_size > limits.max_xml_bytes:
            raise ExtractionError(
                "too_large",
                f"DOCX part {info.filename} is {_mib(info.file_size)} of XML, over the "
                f"{_mib(limits.max_xml_bytes)} limit (GROUNDWORK_MAX_XML_BYTES)",
            )
        if info.file_size > 10 * 1024 * 1024 and info.file_size > 100 * max(info.compress_size, 1):
            raise ExtractionError("too_large", f"DOCX member {info.filename} looks like a decompression bomb")


def _short(exc: BaseException) -> str:
    message = str(exc) or exc.__class__.__name__
    return message if len(message) <= 200 else message[:197] + "…"
