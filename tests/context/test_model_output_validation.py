"""Bad model output never reaches a stored digest: repair once, then drop what is still invalid."""

import json

import pytest

from context_app.models import StoredDigest
from llm_platform.models import LLMCall
from llm_platform.sourcerefs import ref_key
from tests.factories import ContextApi, make_member, model_calls

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

NOTES = b"""Valve replacement finished in April 2023 across 14 sites.
Energy use per cubic metre fell by 9 percent.

Some sites may need a second inspection.
"""


@pytest.fixture
def api(fake_anthropic):
    return ContextApi(make_member()[0])


def parse(api, files):
    sid = api.create_session()
    api.upload(sid, files)
    api.parse(sid)
    return sid, api.settle(sid)


def test_invalid_json_once_is_repaired(api, fake_anthropic):
    fake_anthropic.script(("invalid_json",))
    sid, manifest = parse(api, {"notes.txt": NOTES})
    assert manifest["files"][0]["digest_status"] == "ready"
    calls = list(LLMCall.objects.filter(task="per_file_digest").order_by("id").values_list("attempt", "outcome"))
    assert calls == [(1, "invalid"), (2, "ok")]
    repair_prompt = fake_anthropic.message_requests()[1]["body"]["messages"][0]["content"]
    assert "YOUR PREVIOUS OUTPUT WAS INVALID" in repair_prompt and "output is not JSON" in repair_prompt


def test_invented_sources_never_reach_a_stored_digest(api, fake_anthropic):
    fake_anthropic.script(("invent_sources",), ("invent_sources",))  # the repair call invents again
    sid, manifest = parse(api, {"notes.txt": NOTES})
    file = manifest["files"][0]
    assert file["digest_status"] == "ready"
    body = api.get(file["digest_url"]).json()
    spans = {s["span_id"] for s in api.get(file["preview_url"]).json()["spans"]}
    refs = [ref for fact in body["digest"]["facts"] for ref in fact["sources"]]
    assert refs and all(
        ref_key(ref).split("::")[0] == "notes.txt" and ref_key(ref).split("::")[1] in spans for ref in refs
    )
    assert "Invented claim." not in str(body["digest"])
    reasons = {item["reason"] for item in body["dropped"]}
    assert "no valid sources left" in reasons and any("ghost.pdf" in str(i.get("value")) for i in body["dropped"])
    assert model_calls(sid, "per_file_digest", attempt=None) == 2
    for digest in StoredDigest.objects.all():
        for fact in digest.content["facts"]:
            assert all("ghost.pdf" not in ref and "S4242" not in ref for ref in fact["sources"])


def test_a_provider_that_keeps_failing_marks_the_file_error_and_retry_recovers(api, fake_anthropic, settings):
    settings.GROUNDWORK_LLM_MAX_RETRIES = 1
    fake_anthropic.fail_when("Valve replacement", 500)
    sid, manifest = parse(api, {"notes.txt": NOTES, "other.txt": b"A second file about 3 pumps in 2022."})
    statuses = {f["filename"]: f for f in manifest["files"]}
    failed = [f for f in statuses.values() if f["digest_status"] == "error"]
    assert [f["filename"] for f in failed] == ["notes.txt"] and "500" in failed[0]["error"]["message"]
    assert LLMCall.objects.get(task="per_file_digest", outcome="failed").retries == 1
    assert manifest["aggregate_digest_status"] == "ready", "one failed file must not block the others"
    fake_anthropic.clear_failures()
    retry = api.post(f"/api/sessions/{sid}/context/files/{failed[0]['file_id']}/retry")
    assert retry.status_code == 202
    manifest = api.settle(sid)
    assert {f["digest_status"] for f in manifest["files"]} == {"ready"}
    aggregate = api.get(f"/api/sessions/{sid}/context/digest").json()
    assert aggregate["revision"] == manifest["revision"]
    assert len(aggregate["digest"]["batch"]["files"]) == 2


def test_the_answer_field_is_read_from_every_prefix_of_a_streamed_answer():
    from llm_platform.output import partial_string_field

    answer = 'Caf\u00e9 "quoted" \\ back\nslash, tab\t and 😀 (a surrogate pair).'
    raw = 'Here you are:\n```json\n{"needs": [{"answer": "inner"}], "citations": ["a::S1"], "answer": '
    raw += json.dumps(answer) + ', "x": "answer"}\n```'
    seen = [partial_string_field(raw[:end], "answer") for end in range(len(raw) + 1)]
    # It only ever grows (a cut escape waits for its end), ends with the whole value, never the nested one.
    assert all(later.startswith(earlier) for earlier, later in zip(seen, seen[1:]))
    assert seen[-1] == answer and "inner" not in "".join(seen)
    assert partial_string_field('{"answer": 3, "note": "answer"}', "answer") == ""
    assert partial_string_field('{"answer": "Half \\u00', "answer") == "Half "
