"""The formats files are read in, as the media types a source declares: one table for the extractors
(extraction, which imports it in every extraction's child process, so it stands outside the
IR package and its imports) and the Context IR (llm_platform.ir)."""

MIME_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "text": "text/plain",
    "markdown": "text/markdown",
    "html": "text/html",
    "csv": "text/csv",
    "json": "application/json",
}
