"""A failed file's error says whether Retry can help and what would (issue 27), in the manifest."""

import re
from pathlib import Path

import pytest

from context_app.file_errors import HELP, RETRYABLE, error_json
from tests.factories import ContextApi, make_member

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_unsupported_file_says_what_would_help_and_that_retry_cannot(eager):
    api = ContextApi(make_member()[0])
    sid = api.create_session()
    api.upload(sid, {"notes.txt": b"The pump ran 40 hours.", "blob.bin": bytes(range(256)) * 4})
    api.parse(sid)
    files = {f["filename"]: f for f in api.settle(sid)["files"]}
    error = files["blob.bin"]["error"]
    assert error["code"] == "unsupported_format" and error["retryable"] is False
    assert error["help"].startswith("Groundwork reads PDF, DOCX, text, Markdown, HTML, CSV and JSON")
    assert files["notes.txt"]["error"] is None


def test_every_error_code_a_stage_records_has_help():
    codes = set()
    root = Path(__file__).resolve().parents[2]
    for path in [*(root / "context_app").rglob("*.py"), *(root / "extraction").rglob("*.py")]:
        text = path.read_text()
        codes |= set(re.findall(r'ExtractionError\(\s*"([a-z_]+)"', text))  # extraction
        codes |= set(re.findall(r'"code": "([a-z_]+)"', text))  # a failed job
        for chosen in re.findall(r'code = "([a-z_]+)" if .* else "([a-z_]+)"', text):  # a digest's
            codes |= set(chosen)
    assert {"unsupported_format", "timeout", "digest_failed", "spending_cap", "job_failed"} <= codes
    assert codes <= set(HELP), codes - set(HELP)


def test_only_errors_of_the_moment_are_retryable():
    assert RETRYABLE <= set(HELP)
    assert error_json({"code": "digest_failed", "message": "model call failed: 503"})["retryable"] is True
    assert error_json({"code": "something_new", "message": "?"}) == {
        "code": "something_new",
        "message": "?",
        "retryable": False,
        "help": "",
    }
    assert error_json(None) is None
