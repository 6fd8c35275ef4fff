"""What the chat pane shows (templates/conversation/_chat.html), read in a fixed number of queries."""

import re
from dataclasses import dataclass, field

from context_app.models import ContextFile
from context_app.selectors import files_of
from llm_platform import sourcerefs
from workspaces.models import ResearchSession

from .models import ChatMessage, ContextRequest, Conversation

# A stored artifact key ("digest:<uuid>", "supply:<uuid>") names no span: shown as a tag, its id dropped.
ARTIFACT_ID = re.compile(r":.{36}")


@dataclass
class MessageSource:
    """One entry of a message's sources: a citation chip (link) or a tag naming an artifact."""

    ref: str
    link: dict | None = None
    tag: str = ""


@dataclass
class ShownMessage:
    message: ChatMessage
    sources: list[MessageSource] = field(default_factory=list)
    # The question an answer replies to, where the log does not show it just above: an answer given when its
    # request card expired, or after a supply, comes after the questions asked since.
    replying_to: str = ""


@dataclass
class ShownSlot:
    slot: dict
    done: bool


@dataclass
class ShownRequest:
    request: ContextRequest
    question: str
    slots: list[ShownSlot]


@dataclass
class ChatPane:
    session: ResearchSession
    messages: list[ShownMessage]
    open_requests: list[ShownRequest]
    files: list[ContextFile]

    @property
    def state(self) -> str:
        """The pane head's word: what the chat waits for, if anything."""
        if self.open_requests:
            return "needs context"
        if any(shown.message.status == ChatMessage.Status.THINKING for shown in self.messages):
            return "thinking…"
        return ""


def _sources(message: ChatMessage) -> list[MessageSource]:
    """The citations the answer's text does not already show as chips ("… in a week. [a.pdf::S2]"): every answer
    showed each chip twice, in its text and again below it."""
    if message.role != ChatMessage.Role.ASSISTANT:
        return []
    links = {link.get("sourceref"): link for link in message.source_links or [] if isinstance(link, dict)}
    # As {% text_with_citations %} chips them: a resolved SourceRef the text writes
    resolved = [ref for ref in links if isinstance(ref, str) and ref]
    inline = set(sourcerefs.written_refs(resolved).findall(message.content or "")) if resolved else set()
    shown = []
    for ref in message.citations or []:
        if ref in inline:
            continue
        if sourcerefs.split_ref(ref) is not None:
            shown.append(MessageSource(ref=ref, link=links.get(ref)))
        elif isinstance(ref, str):
            tag = "supplied note" if ref.startswith("supply:") else ARTIFACT_ID.sub("", ref, count=1)
            shown.append(MessageSource(ref=ref, tag=tag))
    return shown


def message_ids(session: ResearchSession) -> set[str]:
    return {str(pk) for pk in ChatMessage.objects.filter(conversation__session=session).values_list("pk", flat=True)}


def chat_pane(session: ResearchSession, announced: set[str] | None = None) -> ChatPane:
    """The pane; with `announced`, only those messages (a live page's: what it has been told of so far)."""
    conversation = Conversation.objects.filter(session=session).first()
    files = files_of(session.context_set) if hasattr(session, "context_set") else []
    if conversation is None:
        return ChatPane(session=session, messages=[], open_requests=[], files=files)
    messages = [
        message
        for message in conversation.messages.select_related("author")
        if announced is None or str(message.pk) in announced
    ]
    questions = {message.pk: message.content for message in messages}
    above = dict(zip((m.pk for m in messages), [None, *(m.pk for m in messages)], strict=False))  # the one above
    open_requests = conversation.context_requests.filter(status=ContextRequest.Status.OPEN).prefetch_related("supplies")
    shown_requests = []
    for request in open_requests:
        given = {supply.slot for supply in request.supplies.all()}
        slots = [ShownSlot(slot=slot, done=slot["slot"] in given) for slot in request.required]
        shown_requests.append(
            ShownRequest(request=request, question=questions.get(request.message_id, ""), slots=slots)
        )
    return ChatPane(
        session=session,
        messages=[
            ShownMessage(
                message=message,
                sources=_sources(message),
                replying_to=""
                if message.reply_to_id in (None, above[message.pk])
                else questions.get(message.reply_to_id, ""),
            )
            for message in messages
        ],
        open_requests=shown_requests,
        files=files,
    )
