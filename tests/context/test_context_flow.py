"""Seed 000 §10 acceptance scenarios over HTTP, with a real Redis and a real Celery worker.

Model calls are counted through LLMCall: the only honest meter of cost.
"""

import re

import pytest

from context_app.models import ContextSet
from llm_platform.models import LLMCall
from tests.factories import ContextApi, make_member, model_calls

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

SOURCE_REF = re.compile(r"^(?P<file>.+?)::(?P<span>S\d+)(?:::.*)?$")

ALPHA = b"""The pilot ran from March 2021 to June 2022 in three districts.
Water losses fell by 18 percent after the pressure valves were installed.

Maintenance costs may rise in the second year, but the data is preliminary.
The utility must report losses to the regulator every quarter.
"""
BETA = b"""# Budget notes

Non-revenue water is defined as water produced but not billed.

The 2022 budget allocated 4.2 million euros to leak detection.
It is unclear whether the acoustic sensors will last five years.
"""
GAMMA = b"""Customer survey, autumn 2022.

About 61 percent of households reported fewer interruptions.
For example, in district B the average outage fell from 9 to 4 hours.
"""


@pytest.fixture(params=["offline", "anthropic"])
def provider(request):
    """Each scenario runs with the offline provider and with the real anthropic SDK against a fake API."""
    fake = request.getfixturevalue("fake_anthropic") if request.param == "anthropic" else None
    yield fake
    # Every model call of the scenario went to the provider under test, and with
    # anthropic each one was a real HTTP request the fake answered.
    calls = LLMCall.objects.all()
    assert set(calls.values_list("provider", flat=True)) <= {request.param}
    if fake is not None:
        assert len(fake.message_requests()) == calls.count()


@pytest.fixture
def api(provider):
    user, _team = make_member()
    return ContextApi(user)


def parsed_session(api, files: dict[str, bytes]) -> str:
    sid = api.create_session()
    response = api.upload(sid, files)
    assert response.status_code == 201, response.content
    api.parse(sid)
    api.settle(sid)
    return sid


def all_sources_resolve(api, sid: str, digest: dict) -> None:
    manifest = api.manifest(sid)
    spans = {}
    for file in manifest["files"]:
        preview = api.get(file["preview_url"]).json()
        spans[file["filename"]] = {s["span_id"]: s for s in preview["spans"]}
    assert digest["facts"], "a digest without facts proves nothing"
    for fact in digest["facts"]:
        assert fact["sources"], f"fact without sources: {fact}"
        for ref in fact["sources"]:
            match = SOURCE_REF.match(ref)
            assert match, ref
            assert match["span"] in spans[match["file"]], f"{ref} points at no span"


def test_upload_stores_and_extracts_without_calling_a_model(api):
    sid = api.create_session()
    response = api.upload(sid, {"alpha.txt": ALPHA, "beta.md": BETA})
    assert response.status_code == 201
    body = response.json()
    assert body["revision"] == 1
    assert sorted((d["filename"], d["change"]) for d in body["diff"]) == [("alpha.txt", "new"), ("beta.md", "new")]
    assert {f["digest_status"] for f in body["files"]} == {"parsing"}  # the worker extracts, not the request
    manifest = api.extracted(sid)
    assert {f["digest_status"] for f in manifest["files"]} == {"stale"}
    for file in manifest["files"]:
        assert file["extracted_text_hash"] and file["spans_hash"] and file["content_hash"]
        assert file["chunking_version"] == "spans.v1"
    assert LLMCall.objects.count() == 0
    assert api.manifest(sid)["aggregate_digest_status"] == "stale"


def test_parse_now_digests_every_file_then_aggregates_once(api):
    sid = parsed_session(api, {"alpha.txt": ALPHA, "beta.md": BETA, "gamma.txt": GAMMA})
    assert model_calls(sid, "per_file_digest") == 3
    assert model_calls(sid, "aggregate_digest") == 1
    manifest = api.manifest(sid)
    assert {f["digest_status"] for f in manifest["files"]} == {"ready"}
    aggregate = api.get(f"/api/sessions/{sid}/context/digest").json()
    assert aggregate["revision"] == manifest["revision"]
    assert aggregate["digest"]["mode"] == "batch"
    assert sorted(f["filename"] for f in aggregate["digest"]["batch"]["files"]) == ["alpha.txt", "beta.md", "gamma.txt"]
    all_sources_resolve(api, sid, aggregate["digest"])
    for file in manifest["files"]:
        digest = api.get(file["digest_url"]).json()["digest"]
        assert digest["document"]["filename"] == file["filename"]
        all_sources_resolve(api, sid, digest)


def test_identical_reupload_is_unchanged_and_costs_nothing(api):
    sid = parsed_session(api, {"alpha.txt": ALPHA, "beta.md": BETA, "gamma.txt": GAMMA})
    before = api.get(f"/api/sessions/{sid}/context/digest").json()
    calls_before = LLMCall.objects.count()

    response = api.upload(sid, {"alpha.txt": ALPHA})
    assert response.json()["diff"] == [
        {"file_id": api.file_id(sid, "alpha.txt"), "filename": "alpha.txt", "change": "unchanged"}
    ]
    manifest = api.settle(sid)
    assert manifest["last_diff"]["unchanged"] == 1 and manifest["last_diff"]["new"] == 0
    assert LLMCall.objects.count() == calls_before
    after = api.get(f"/api/sessions/{sid}/context/digest").json()
    assert after["digest_ref"] == before["digest_ref"]
    assert after["revision"] == manifest["revision"] == before["revision"] + 1


def test_replace_one_of_three_reparses_only_that_file(api):
    sid = parsed_session(api, {"alpha.txt": ALPHA, "beta.md": BETA, "gamma.txt": GAMMA})
    fid = api.file_id(sid, "beta.md")
    response = api.replace(sid, fid, "beta.md", BETA + b"\nThe regulator may revise the target in 2024.\n")
    assert response.status_code == 200
    assert response.json()["diff"] == [{"file_id": fid, "filename": "beta.md", "change": "changed"}]
    api.parse(sid)
    manifest = api.settle(sid)
    assert model_calls(sid, "per_file_digest") == 4  # 3 + exactly 1
    assert model_calls(sid, "aggregate_digest") == 2  # 1 + exactly 1
    digest = api.get(f"/api/sessions/{sid}/context/files/{fid}/digest").json()["digest"]
    assert "2024" in str(digest)
    assert api.get(f"/api/sessions/{sid}/context/digest").json()["revision"] == manifest["revision"]


def test_delete_recomputes_only_the_aggregate(api):
    sid = parsed_session(api, {"alpha.txt": ALPHA, "beta.md": BETA, "gamma.txt": GAMMA})
    fid = api.file_id(sid, "gamma.txt")
    response = api.delete(f"/api/sessions/{sid}/context/files/{fid}")
    assert response.status_code == 200
    assert response.json()["diff"] == [{"file_id": fid, "filename": "gamma.txt", "change": "deleted"}]
    api.parse(sid)
    manifest = api.settle(sid)
    assert model_calls(sid, "per_file_digest") == 3
    assert model_calls(sid, "aggregate_digest") == 2
    aggregate = api.get(f"/api/sessions/{sid}/context/digest").json()
    assert aggregate["revision"] == manifest["revision"]
    assert "gamma.txt" not in str(aggregate["digest"]["facts"])
    assert api.get(f"/api/sessions/{sid}/context/files/{fid}").status_code == 404


def test_multi_upload_of_two_new_and_one_unchanged(api):
    sid = parsed_session(api, {"alpha.txt": ALPHA})
    response = api.upload(sid, {"alpha.txt": ALPHA, "beta.md": BETA, "gamma.txt": GAMMA})
    changes = sorted((d["filename"], d["change"]) for d in response.json()["diff"])
    assert changes == [("alpha.txt", "unchanged"), ("beta.md", "new"), ("gamma.txt", "new")]
    api.parse(sid)
    manifest = api.settle(sid)
    assert model_calls(sid, "per_file_digest") == 1 + 2
    assert model_calls(sid, "aggregate_digest") == 1 + 1
    assert manifest["last_diff"]["new"] == 2 and manifest["last_diff"]["unchanged"] == 1


def test_auto_parse_digests_after_every_change(api):
    sid = api.create_session()
    response = api.patch(f"/api/sessions/{sid}/context", {"auto_parse": True}, format="json")
    assert response.status_code == 200 and response.json()["auto_parse"] is True
    api.upload(sid, {"alpha.txt": ALPHA, "beta.md": BETA})
    manifest = api.settle(sid)
    assert {f["digest_status"] for f in manifest["files"]} == {"ready"}
    assert model_calls(sid, "per_file_digest") == 2
    assert model_calls(sid, "aggregate_digest") == 1
    assert api.get(f"/api/sessions/{sid}/context/digest").json()["revision"] == manifest["revision"]


def test_cache_reuse_across_sessions_relabels_sources(api):
    first = parsed_session(api, {"alpha.txt": ALPHA})
    second = api.create_session("Another question")
    assert api.upload(second, {"renamed.txt": ALPHA}).status_code == 201
    file = api.extracted(second)["files"][0]
    assert file["digest_status"] == "ready"  # straight from the cache once extracted, no model call
    assert model_calls(second, "per_file_digest") == 0
    digest = api.get(file["digest_url"]).json()["digest"]
    assert digest["document"]["filename"] == "renamed.txt"
    refs = [ref for fact in digest["facts"] for ref in fact["sources"]]
    assert refs and all(ref.startswith("renamed.txt::") for ref in refs)
    assert model_calls(first, "per_file_digest") == 1


def test_other_teams_do_not_share_the_cache(api):
    parsed_session(api, {"alpha.txt": ALPHA})
    stranger, _ = make_member()
    other = ContextApi(stranger)
    sid = other.create_session()
    assert other.upload(sid, {"alpha.txt": ALPHA}).status_code == 201
    assert other.extracted(sid)["files"][0]["digest_status"] == "stale"


def test_unsupported_and_broken_files_get_a_file_level_error(api):
    sid = api.create_session()
    gif = b"GIF89a" + b"\x00" * 64  # images are read by OCR (tests/context/test_ocr.py); a GIF is not
    response = api.upload(sid, {"photo.gif": gif, "broken.pdf": b"%PDF-1.7 garbage", "alpha.txt": ALPHA})
    assert response.status_code == 201
    files = {f["filename"]: f for f in api.extracted(sid)["files"]}
    assert files["photo.gif"]["digest_status"] == "error"
    assert "image/gif" in files["photo.gif"]["error"]["message"]
    assert files["broken.pdf"]["digest_status"] == "error"
    api.parse(sid)
    manifest = api.settle(sid)
    statuses = {f["filename"]: f["digest_status"] for f in manifest["files"]}
    assert statuses == {"alpha.txt": "ready", "broken.pdf": "error", "photo.gif": "error"}
    assert manifest["aggregate_digest_status"] == "ready"


def test_every_file_is_extracted_in_the_worker(api):
    sid = api.create_session()
    body = api.upload(sid, {"alpha.txt": ALPHA}).json()
    assert body["files"][0]["digest_status"] == "parsing"
    assert body["files"][0]["extracted_text_hash"] == ""
    api.parse(sid)
    manifest = api.settle(sid)
    assert manifest["files"][0]["digest_status"] == "ready"
    assert manifest["files"][0]["extracted_text_hash"]
    assert model_calls(sid, "per_file_digest") == 1


def test_retry_a_file_in_error(api, settings):
    sid = api.create_session()
    fid = api.upload(sid, {"empty.txt": b"   \n"}).json()["files"][0]["file_id"]
    assert api.extracted(sid)["files"][0]["digest_status"] == "error"
    response = api.post(f"/api/sessions/{sid}/context/files/{fid}/retry")
    assert response.status_code == 202
    assert api.extracted(sid)["files"][0]["digest_status"] == "error"  # still empty: same answer, no crash
    response = api.post(f"/api/sessions/{sid}/context/files/{fid}/retry")
    assert response.status_code == 202
    ready_fid = api.upload(sid, {"alpha.txt": ALPHA}).json()["diff"][0]["file_id"]
    api.parse(sid)
    api.settle(sid)
    conflict = api.post(f"/api/sessions/{sid}/context/files/{ready_fid}/retry")
    assert conflict.status_code == 409 and "only files in error" in conflict.json()["error"]
    assert ContextSet.objects.get(session_id=sid).files.count() == 2


def test_the_banner_diff_sums_the_changes_since_the_last_parse(api):
    sid = parsed_session(api, {"alpha.txt": ALPHA})
    api.upload(sid, {"beta.md": BETA, "gamma.txt": GAMMA})
    api.upload(sid, {"delta.txt": b"A fourth file, written in 2023.\n"})
    api.delete(f"/api/sessions/{sid}/context/files/{api.file_id(sid, 'gamma.txt')}")  # new, then gone: no change
    api.upload(sid, {"alpha.txt": ALPHA + b"\nA line added in 2024.\n"})
    diff = api.get(f"/api/sessions/{sid}/context").json()["last_diff"]
    assert (diff["new"], diff["changed"], diff["deleted"]) == (2, 1, 0)
    assert sorted((item["filename"], item["change"]) for item in diff["items"]) == [
        ("alpha.txt", "changed"),
        ("beta.md", "new"),
        ("delta.txt", "new"),
    ]
    api.parse(sid)
    settled = api.settle(sid)
    assert (settled["last_diff"]["new"], settled["last_diff"]["changed"]) == (2, 1)  # the parse's sum, shown as done
    api.delete(f"/api/sessions/{sid}/context/files/{api.file_id(sid, 'beta.md')}")
    diff = api.get(f"/api/sessions/{sid}/context").json()["last_diff"]
    assert (diff["new"], diff["changed"], diff["deleted"]) == (0, 0, 1)  # after a parse, a new sum


def test_every_manifest_read_is_numbered_later_than_the_one_before(api):
    sid = api.create_session()
    first = api.get(f"/api/sessions/{sid}/context").json()["manifest_seq"]
    uploaded = api.upload(sid, {"alpha.txt": ALPHA}).json()["manifest_seq"]
    again = api.get(f"/api/sessions/{sid}/context").json()["manifest_seq"]
    assert first < uploaded < again
