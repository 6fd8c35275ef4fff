"""The chat pane's live fragments (/ws/sessions/{sid}/conversation/pane/) over the real ASGI app and the
Redis channel layer: a fragment shows the messages the page has been told of, in the order it was told."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from config.asgi import application
from conversation_app.events import conversation_group_name
from conversation_app.models import Conversation
from conversation_app.serializers import message_json
from tests.factories import ContextApi, make_member

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


def test_an_answer_stored_before_its_deltas_reach_the_page_waits_for_its_own_event():
    """On a busy server a fragment rendered for an earlier event can read an answer stored since; shown
    then, it would come before its own deltas and the draft they stream would never be drawn."""
    user, _ = make_member()
    api = ContextApi(user)
    sid = api.create_session()
    conversation = Conversation.objects.create(session_id=sid)
    question = conversation.messages.create(role="user", author=user, content="How much?", status="thinking")
    group = conversation_group_name(sid)

    def event(type_, **payload):
        return {"type": "conversation.event", "event": {"type": type_, **payload}}

    async def scenario():
        communicator = WebsocketCommunicator(
            application, f"/ws/sessions/{sid}/conversation/pane/?token={api.token}", headers=HEADERS
        )
        assert (await communicator.connect(timeout=10))[0]
        on_connect = await communicator.receive_json_from(timeout=10)
        answer = await sync_to_async(conversation.messages.create)(
            role="assistant", content="It cost 1.2 million euros.", status="answered", reply_to=question
        )
        layer = get_channel_layer()
        # Told before the answer's own event: the question's new status, then a delta of the answer.
        await layer.group_send(group, event("conversation:context_update", request_id="r"))
        before = await communicator.receive_json_from(timeout=10)
        delta_event = event("conversation:delta", user_message_id=str(question.pk), offset=0, delta="It")
        await layer.group_send(group, delta_event)
        delta = await communicator.receive_json_from(timeout=10)
        await layer.group_send(group, event("conversation:message", message=await sync_to_async(message_json)(answer)))
        after = await communicator.receive_json_from(timeout=10)
        await communicator.disconnect()
        return on_connect, before, delta, after

    on_connect, before, delta, after = async_to_sync(scenario)()
    assert "How much?" in on_connect["html"]
    assert "1.2 million euros" not in before["html"], "an answer shown before its own event"
    assert delta["type"] == "conversation:delta" and delta["delta"] == "It"
    assert after["type"] == "fragments" and "1.2 million euros" in after["html"]
