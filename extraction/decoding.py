"""Bytes of a text file → str: BOMs, UTF-8, UTF-16/32 without a BOM, code pages; then normalised."""

import re
import unicodedata

# Byte-order marks, the 4-byte ones first (UTF-32-LE's starts with UTF-16-LE's).
BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
# Without a BOM or valid UTF-8, the detector picks among the code pages Western and Central
# European text is written in (the first wins a tie: short samples decode the same in several)...
COMMON_CODE_PAGES = ["cp1252", "iso8859_15", "latin_1", "cp1250", "iso8859_2"]
# ...and goes outside them (Cyrillic, Greek, …) only when its best guess reads as a language.
SURE_COHERENCE = 0.5
# Where the text decoder looks: the first bytes tell the encoding of the whole.
DETECTION_SAMPLE_BYTES = 64 * 1024


def _wide_encoding(sample: bytes) -> str | None:
    """UTF-16/32 by BOM, or without one by where the NUL bytes fall (text mostly below U+0100)."""
    for bom, encoding in BOMS[1:]:
        if sample.startswith(bom):
            return encoding
    sample = sample[: len(sample) - len(sample) % 4]
    if len(sample) < 8:
        return None

    def nul_share(offset: int, step: int) -> float:
        lane = sample[offset::step]
        return lane.count(0) / len(lane)

    for encoding, zero_lanes, text_lane in (("utf-32-le", (1, 2, 3), 0), ("utf-32-be", (0, 1, 2), 3)):
        if all(nul_share(lane, 4) > 0.95 for lane in zero_lanes) and nul_share(text_lane, 4) < 0.05:
            return encoding
    even, odd = nul_share(0, 2), nul_share(1, 2)
    if odd > 0.6 and even < 0.05:
        return "utf-16-le"
    if even > 0.6 and odd < 0.05:
        return "utf-16-be"
    return None


def normalise_text(text: str) -> str:
    """NFC, \\n line ends, no trailing spaces, at most one blank line in a row."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\x00", "").replace("\u00a0", " ").replace("\x0c", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def decode_text(data: bytes) -> str:
    """UTF-8 first, then UTF-16/32 (BOM or NUL pattern), then the detector (see COMMON_CODE_PAGES)."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            return data.decode("utf-8", errors="replace")  # cut in the middle of a character
    wide = _wide_encoding(data[:DETECTION_SAMPLE_BYTES])
    if wide is not None:
        return data.decode(wide, errors="replace")
    return data.decode(_detect_code_page(data[:DETECTION_SAMPLE_BYTES]), errors="replace")


def _detect_code_page(sample: bytes) -> str:
    # Imported here, not at the top: every extraction starts a child process (extraction.isolation),
    # and this import is a fifth of its start-up; only a file that is not UTF-8 needs the detector.
    import charset_normalizer

    preference = {name: index for index, name in enumerate(COMMON_CODE_PAGES)}
    common = sorted(
        charset_normalizer.from_bytes(sample, cp_isolation=COMMON_CODE_PAGES),
        key=lambda match: (match.chaos, -match.coherence, preference.get(match.encoding, len(preference))),
    )
    best_anywhere = charset_normalizer.from_bytes(sample).best()
    if best_anywhere is not None and best_anywhere.encoding not in preference:
        beats_common = not common or best_anywhere.chaos < common[0].chaos
        if best_anywhere.coherence >= SURE_COHERENCE and beats_common:
            return best_anywhere.encoding
    return common[0].encoding if common else COMMON_CODE_PAGES[0]
