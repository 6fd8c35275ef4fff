"""Server-rendered pieces (issue 23), read as HTML: the chat on the session page, its forms posted without
script, and a cited source as a page. Another team gets 404 from each."""

import uuid

import pytest
from django.test import Client

from context_app.models import FileText
from conversation_app.models import ChatMessage, ContextRequest, Conversation
from tests.factories import ContextApi, make_member
from tests.research.test_research_runs import VALVES

# What a page shows is rendered from rows the API and stack tests already check on both databases (the
# Idempotency-Key's replay too: tests/context/test_api_contract.py).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.one_database]

HOSTILE = "<script>alert(1)</script> & <b>bold</b>"


@pytest.fixture
def member():
    return make_member()[0]


@pytest.fixture
def browser_client(member):
    client = Client()
    client.force_login(member)
    return client


@pytest.fixture
def session_with_chat(member):
    """A session whose valves.md is extracted, with an answered question citing it and an open request."""
    api = ContextApi(member)
    sid = api.create_session(title="Pilot")
    api.upload_and_extract(sid, {"valves.md": VALVES.encode()})
    text = FileText.objects.current().get(file__context_set__session_id=sid, filename="valves.md")
    span = text.spans[1]["span_id"]
    ref = f"valves.md::{span}"
    link = {"sourceref": ref, "version": str(text.version), "span": span, "source_url": f"/api/sources/{text.version}/{span}"}
    conversation = Conversation.objects.create(session_id=sid)
    question = conversation.messages.create(role="user", author=member, content=HOSTILE, status="answered")
    conversation.messages.create(
        role="assistant", content=f"It cost 1.2 million euros ({ref}).", status="answered", reply_to=question,
        citations=[ref], source_links=[link],
    )
    waiting = conversation.messages.create(role="user", author=member, content="Who runs the workshop?", status="waiting_context")
    request = ContextRequest.objects.create(
        conversation=conversation, message=waiting, deadline="2030-01-01T10:00:00Z",
        required=[{"slot": "s1", "kind": "note", "description": "Who runs it", "suggestions": []}],
    )
    return sid, text, span, request


def test_the_session_page_arrives_with_its_chat_rendered_and_escaped(browser_client, session_with_chat):
    sid, text, span, request = session_with_chat
    html = browser_client.get(f"/sessions/{sid}/").content.decode()
    assert 'It cost 1.2 million euros. <a class="source-link"' in html  # the chip after its sentence's full stop
    assert f'href="/sources/{text.version}/{span}/?session={sid}"' in html  # the chip opens the exact span
    assert html.count(f'data-source="valves.md::{span}"') == 1, "the chip in the text is not repeated below it"
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert f'id="request-{request.pk}"' in html and "Who runs it" in html
    assert 'name="idempotency_key"' in html  # its forms post without script
    assert 'class="replying-to"' not in html, "an answer right below its question quotes nothing"
    # An answer that came after later questions (its card expired, or was supplied) quotes the one it answers.
    conversation = Conversation.objects.get(session_id=sid)
    first = conversation.messages.get(content=HOSTILE)
    conversation.messages.create(role="user", author=first.author, content="And the second pilot?", status="answered")
    conversation.messages.create(role="assistant", content="It ran in 2022.", status="answered", reply_to=first)
    html = browser_client.get(f"/sessions/{sid}/").content.decode()
    quoted = '<blockquote class="replying-to">“&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;”'
    assert html.count('class="replying-to"') == 1 and quoted in html


def test_a_chat_form_posted_without_script_asks_once_and_replays_a_repeat(browser_client, session_with_chat, member):
    sid, *_ = session_with_chat
    form = {"session_id": sid, "message": "How much did it cost?", "idempotency_key": str(uuid.uuid4())}
    first = browser_client.post(f"/sessions/{sid}/chat/", form)
    again = browser_client.post(f"/sessions/{sid}/chat/", form)
    assert first.status_code == again.status_code == 302 and first["Location"] == f"/sessions/{sid}/#chat-pane"
    assert ChatMessage.objects.filter(content="How much did it cost?").count() == 1

    refused = browser_client.post(f"/sessions/{sid}/chat/", {"message": " ", "idempotency_key": str(uuid.uuid4())}, follow=True)
    assert "message must be a non-empty string" in refused.content.decode()


def test_a_supply_form_posted_without_script_answers_the_request(browser_client, session_with_chat):
    sid, _text, _span, request = session_with_chat
    form = {
        "session_id": sid, "request_id": str(request.pk), "idempotency_key": str(uuid.uuid4()),
        "payloads.0.slot": "s1", "payloads.0.kind": "note", "payloads.0.text": "Ana runs the workshop.",
    }
    assert browser_client.post(f"/sessions/{sid}/chat/supply/", form).status_code == 302
    request.refresh_from_db()
    assert request.status == "resolved"
    assert request.supplies.get().payload["text"] == "Ana runs the workshop."


def test_a_source_page_shows_the_cited_span_and_its_fragment_fills_the_dialog(browser_client, session_with_chat):
    sid, text, span, _request = session_with_chat
    page = browser_client.get(f"/sources/{text.version}/{span}/?session={sid}").content.decode()
    assert f'class="preview-span highlight" id="span-{span}"' in page
    assert 'data-provenance="current"' in page and 'data-provenance="library"' not in page
    fragment = browser_client.get(f"/sources/{text.version}/{span}/?fragment&session={sid}").content.decode()
    assert fragment.startswith('<h2 id="source-dialog-title">valves.md · ') and "<html" not in fragment
    assert 'id="source-dialog-meta"' in fragment and 'id="source-dialog-spans"' in fragment
    # Seen from another session of the team, the version says where it comes from.
    elsewhere = browser_client.get(f"/sources/{text.version}/{span}/?session={uuid.uuid4()}").content.decode()
    assert "from the team library: session “Pilot”" in elsewhere


def test_another_team_gets_404_from_every_page_and_form(session_with_chat):
    sid, text, span, request = session_with_chat
    stranger = Client()
    stranger.force_login(make_member()[0])
    assert stranger.get(f"/sessions/{sid}/").status_code == 404
    assert stranger.get(f"/sources/{text.version}/{span}/").status_code == 404
    form = {"session_id": sid, "message": "hi", "idempotency_key": str(uuid.uuid4())}
    assert stranger.post(f"/sessions/{sid}/chat/", form).status_code == 404
    supply = {"request_id": str(request.pk), "payloads.0.slot": "s1", "payloads.0.kind": "skip", "idempotency_key": "k"}
    assert stranger.post(f"/sessions/{sid}/chat/supply/", supply).status_code == 404
    assert not ChatMessage.objects.filter(content="hi").exists()
    request.refresh_from_db()
    assert request.status == "open"


# --- the Context tab's file list --------------------------------------------------------------------


def test_the_file_list_arrives_rendered_and_its_forms_work_without_script(browser_client, member):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from context_app.models import ContextSet

    sid = ContextApi(member).create_session(title="Files")
    key = lambda: str(uuid.uuid4())  # noqa: E731
    upload = SimpleUploadedFile("R&D \"notes\".txt", b"The pump was replaced in May.", content_type="text/plain")
    response = browser_client.post(f"/sessions/{sid}/context/files/", {"files": upload, "idempotency_key": key(), "revision": 0})
    assert response.status_code == 302 and response["Location"] == f"/sessions/{sid}/#context-tab"
    page = browser_client.get(f"/sessions/{sid}/").content.decode()
    assert 'data-filename="R&amp;D &quot;notes&quot;.txt"' in page and 'R&D "notes"' not in page
    assert 'data-status="parsing"' in page or 'data-status="stale"' in page
    assert "+1 new, ~0 changed, -0 deleted" in page

    # A form made at revision 0 acts on what the page showed: the context moved on, so it is refused.
    file_id = ContextSet.objects.get(session_id=sid).files.get().pk
    stale = browser_client.post(f"/sessions/{sid}/context/files/{file_id}/delete/", {"idempotency_key": key(), "revision": 0}, follow=True)
    assert "revision" in stale.content.decode().split('class="messages"')[1][:300]
    assert ContextSet.objects.get(session_id=sid).files.count() == 1

    browser_client.post(f"/sessions/{sid}/context/files/{file_id}/delete/", {"idempotency_key": key(), "revision": 1})
    assert ContextSet.objects.get(session_id=sid).files.count() == 0


def test_the_file_list_fragments_answer_only_members(browser_client, member):
    sid = ContextApi(member).create_session(title="Files")
    body = browser_client.get(f"/sessions/{sid}/context/pane/").json()
    assert body["type"] == "fragments" and 'id="file-rows"' in body["html"] and body["manifest"]["revision"] == 0
    stranger = Client()
    stranger.force_login(make_member()[0])
    assert stranger.get(f"/sessions/{sid}/context/pane/").status_code == 404
    assert stranger.post(f"/sessions/{sid}/context/parse/", {"idempotency_key": "k"}).status_code == 404
