"""What a file's error means to the person who uploaded it: whether trying again can help, and what would.

The error itself (code, message, stage) is stored on the file by the stage that failed
(pipeline.extract, pipeline.digest, pipeline.failures); the manifest adds these two.
"""

# Errors of the moment (a worker, the model provider, a cap someone can raise): Retry may fix them.
# The others are the file's own: the same bytes fail the same way, so only a new file helps.
RETRYABLE = frozenset({"timeout", "storage", "job_failed", "digest_failed", "spending_cap", "ocr_unavailable"})

HELP = {
    "unsupported_format": (
        "Groundwork reads PDF, DOCX, text, Markdown, HTML, CSV and JSON, and scans as PNG, JPEG, TIFF or "
        "WebP: save the file in one of those formats and replace it, or delete it."
    ),
    "corrupt": "The file looks damaged: open it where it was made, save or export it again, and replace it.",
    "empty": "No text could be read from it (an empty file, or a scan OCR found no words on): replace it or delete it.",
    "ocr_unavailable": (
        "It is a scan: its pages are images without text. Reading them needs OCR, which an administrator "
        "turns on (GROUNDWORK_OCR=auto, Tesseract installed with the languages of GROUNDWORK_OCR_LANGUAGES); "
        "then retry."
    ),
    "encrypted": "It is password-protected: save a copy without the password and replace it.",
    "too_large": "It is over the upload's limits: split it, or replace it with the part you need.",
    "timeout": "Reading it took too long: retry, or split it into smaller files.",
    "storage": "Its stored copy could not be read: retry; if that fails too, upload it again.",
    "job_failed": "The worker stopped while reading it: retry.",
    "digest_failed": "The model could not digest it: retry, or check the model provider.",
    "spending_cap": "The session's spending cap stopped its digest: raise the cap, then retry.",
}


def error_json(error: dict | None) -> dict | None:
    """A file's stored error as the manifest shows it: plus `retryable` and `help`."""
    if not error:
        return None
    code = error.get("code", "")
    return {**error, "retryable": code in RETRYABLE, "help": HELP.get(code, "")}
