"""A chat turn (SPEC §5, seed 003): answer, or ask for what is missing, then continue when it comes.

post_message ─► run_turn ─► CHAT_TURN (baseline sheet + Context Index of the session)
                             ├─ answer ─────────────────────────────► conversation:message
                             └─ needs ─► what the session holds: supplied by the system
                                         the rest: ContextRequest ─► conversation:context_request
supply_context ─► conversation:context_update … all slots given ─► conversation:context_resolved ─► run_turn
SLA: a reminder at half time; at the deadline the turn answers without it, with a warning.
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from context_app import provenance
from context_app.models import ContextFile
from llm_platform import gateway, grounding, sourcerefs
from llm_platform.model_task import EnvelopePrompt, ModelTask, TaskFailed, run_model_task
from llm_platform.output import partial_string_field
from llm_platform.prompts import render_sheet, style_fragment
from llm_platform.relevance import nearness
from llm_platform.statements import is_statement
from llm_platform.terms import query_terms
from research_app.models import ResearchRun
from research_app.runs import model_tasks as research_tasks
from workspaces.claims import claim
from workspaces.errors import ApplicationError
from workspaces.jobs import queue_job
from workspaces.models import ResearchSession
from workspaces.selectors import parse_uuid

from . import events, jobs
from .artifacts import (
    evidence_sources,
    first_sourceref,
    held_text,
    known_citations,
    question_passages,
    session_artifacts,
    source_versions,
)
from .models import ChatMessage, ContextRequest, ContextSupply, Conversation
from .serializers import message_json, request_json
from .turn_text import is_bare_follow_up, item_text, plain_sentence, sentence_key

logger = logging.getLogger(__name__)

HISTORY_TURNS = 12
MAX_MESSAGE_CHARS = 4000
MAX_SUPPLY_CHARS = 20_000
SUPPLY_KINDS = {"note", "snippet", "file", "skip"}

# The task section is the rendered prompt sheet (prompts/sheets/chat_turn.txt), not fixed words.
CHAT_TURN = ModelTask(
    "CHAT_TURN",
    ("chat_turn",),
    "chat_turn",
    lambda: "chat-v2",
    offline_handler="conversation_app.offline.turn.chat_turn",
    label="Chat answers",
)


# --- messages ------------------------------------------------------------------------


def post_message(session: ResearchSession, user: AbstractBaseUser, text: str, *, force: bool = False) -> dict:
    text = (text or "").strip()
    if not text:
        raise ApplicationError("message must be a non-empty string")
    if len(text) > MAX_MESSAGE_CHARS:
        raise ApplicationError(f"message is longer than {MAX_MESSAGE_CHARS} characters")
    conversation, _ = Conversation.objects.get_or_create(session=session)
    # A question is answered (or asked about) at once, also while an earlier one waits on its
    # request card: a person goes on asking, and the card keeps waiting for its own question.
    message = ChatMessage.objects.create(
        conversation=conversation,
        role=ChatMessage.Role.USER,
        author=user,
        content=text,
        status=ChatMessage.Status.THINKING,
    )
    events.push(session.pk, "conversation:message", message=message_json(message))
    return run_turn(message, may_request=not force)


def run_turn(message: ChatMessage, *, may_request: bool, warning: str = "") -> dict:
    """Ask the model; answer, or defer the message behind a context request."""
    session = message.conversation.session
    supplied = _supplied_for(message)
    history = _history(message)
    # The library's best passages for the question come first: they hold the spans that answer it.
    searched = _searched_question(message, history)
    queries = [searched, *_model_written_queries(searched, message)]
    artifacts = question_passages(session, queries) + session_artifacts(session)
    inputs = {
        "message": message.content,
        "history": history,
        "supplied": supplied,
        "may_request": may_request,
    }
    try:
        result = run_model_task(
            CHAT_TURN,
            EnvelopePrompt(
                inputs,
                evidence_sources(artifacts),
                instructions=baseline_prompt(session, message, history, supplied),
                cache_context=True,  # the session's files, sent again every turn
            ),
            subject=f"chat:{message.pk}",
            session_id=session.pk,
            on_partial=AnswerDeltas(session.pk, message.pk),
        )
    except TaskFailed as exc:
        message.status, message.error = ChatMessage.Status.FAILED, str(exc)
        message.save(update_fields=["status", "error"])
        events.push(session.pk, "conversation:message", message=message_json(message))
        return {"status": "failed", "user_message_id": str(message.pk), "error": str(exc)}
    output = result.output
    if output["needs"] and may_request:
        return _ask_for_context(message, output["needs"], artifacts)
    versions = source_versions(session)
    answer, citations, unsupported = grounded_answer(output["answer"], output["citations"], artifacts, versions)
    if unsupported:
        logger.info("chat %s: dropped citations its text does not support: %s", message.pk, unsupported)
    links = provenance.links_for(citations, versions)
    with transaction.atomic():  # nobody sees the reply while its question still says "thinking"
        reply = ChatMessage.objects.create(
            conversation=message.conversation,
            role=ChatMessage.Role.ASSISTANT,
            content=answer,
            status=ChatMessage.Status.ANSWERED,
            reply_to=message,
            citations=citations,
            source_links=[links[c] for c in citations if c in links],
            warning=warning,
        )
        message.status = ChatMessage.Status.ANSWERED
        message.save(update_fields=["status"])
    events.push(session.pk, "conversation:message", message=message_json(reply))
    return {"status": "ok", "user_message_id": str(message.pk), "message": message_json(reply)}


class AnswerDeltas:
    """Pushes the answer of a turn as it is generated: `conversation:delta` {user_message_id, offset, delta}.

    Called with the model's raw text so far (JSON, chat_turn.schema.json), it sends what the
    `answer` field gained; `offset` is where `delta` starts in the answer, 0 when an attempt
    starts over (a retry, the repair call). Deltas are provisional: the final
    conversation:message, checked against its citations, is what is stored.
    """

    def __init__(self, session_id, message_id) -> None:
        self.session_id, self.message_id = session_id, str(message_id)
        self.sent = ""

    def __call__(self, received: str) -> None:
        answer = partial_string_field(received, "answer")
        if answer == self.sent:
            return
        offset = len(self.sent) if answer.startswith(self.sent) else 0
        self.sent = answer
        events.push(
            self.session_id, "conversation:delta", user_message_id=self.message_id, offset=offset, delta=answer[offset:]
        )


NO_SUPPORTED_ANSWER = "I found nothing in this session's material that supports an answer."
INLINE_CITATION = re.compile(rf"\[((?:digest|report|findings|supply):[^\]\s]+)\]|({sourcerefs.IN_TEXT.pattern})")


def grounded_answer(
    answer: str, citations: list[str], artifacts, versions: dict[str, str]
) -> tuple[str, list[str], list[str]]:
    """The answer with only the citations that exist and whose text supports it (llm_platform.grounding).

    A SourceRef is checked against the span of the version its link will open
    (`versions`, as source_versions pins them), an artifact key against the artifact.
    A sentence that marks only dropped citations goes; an answer that cited and kept
    none is not shown: it would be text the model invented.
    """
    allowed = known_citations(artifacts)
    asked = [key for key in dict.fromkeys(citations) if key in allowed]
    artifact_texts = {artifact.key: artifact.text for artifact in artifacts}
    span_texts = provenance.span_texts([key for key in asked if key not in artifact_texts], versions)
    cited = {key: artifact_texts.get(key) or span_texts.get(key, "") for key in asked}
    kept, unsupported = grounding.supporting(answer, cited)
    invented = [key for key in citations if key not in allowed]
    if citations and not kept:
        return NO_SUPPORTED_ANSWER, [], unsupported + invented
    gone = set(unsupported) | set(invented)
    shown = []
    for sentence in grounding.sentences(answer):
        marks = {m.group(1) or m.group(2) for m in INLINE_CITATION.finditer(sentence)}
        if marks and marks <= gone:
            continue
        shown.append(sentence)
    return " ".join(shown).strip() or NO_SUPPORTED_ANSWER, kept, unsupported + invented


def _ask_for_context(message: ChatMessage, needs: list[dict], artifacts) -> dict:
    """The session's own material is supplied at once; only the rest becomes a card for a person."""
    session = message.conversation.session
    required, held = [], []
    for number, need in enumerate(needs, start=1):
        slot = {"slot": f"s{number}", "kind": need["kind"], "description": need["description"]}
        text = held_text(need.get("anchor", ""), session, artifacts)
        (held if text else required).append((slot, text, need.get("anchor", "")))
    deadline = timezone.now() + timedelta(seconds=settings.GROUNDWORK_CONTEXT_REQUEST_SECONDS)
    suggestions = _suggestions(message.content, artifacts, source_versions(session))
    with transaction.atomic():
        request = ContextRequest.objects.create(
            conversation=message.conversation,
            message=message,
            required=[slot | {"suggestions": suggestions} for slot, _, _ in required + held],
            deadline=deadline,
        )
        for slot, text, anchor in held:
            ContextSupply.objects.create(
                request=request,
                slot=slot["slot"],
                kind=ContextSupply.Kind.AUTO,
                payload={"text": text, "anchor": anchor},
                provenance={"via": "system", "from": anchor, "at": timezone.now().isoformat()},
            )
        if not required:
            request.status, request.resolved_at = ContextRequest.Status.RESOLVED, timezone.now()
            request.save(update_fields=["status", "resolved_at"])
        else:
            # With the card, in its commit: a page reloading the history while this request still runs
            # can show the card and have it supplied at once, and the resumed turn claims its question
            # from waiting_context (a question still "thinking" then would wait on a resolved card for ever).
            message.status = ChatMessage.Status.WAITING_CONTEXT
            message.save(update_fields=["status"])
    if not required:
        return run_turn(message, may_request=False)
    events.push(session.pk, "conversation:context_request", request=request_json(request))
    _schedule_sla(request)
    return {
        "status": "context_required",
        "user_message_id": str(message.pk),
        "request_id": str(request.pk),
        "required": request.required,
    }


MAX_SUGGESTIONS = 3


def _suggestions(question: str, artifacts, versions: dict[str, str]) -> list[dict]:
    """The statements of the session's material nearest the question in terms and meaning
    (llm_platform.relevance.nearness, over every line of the library's best passages for it and of the digests,
    reports and supplies; a heading or a label is no excerpt): one click to attach.

    An excerpt is shown as its sentence (a digest line without its "[fact] " marker); one that cites a
    span keeps its SourceRef and carries that span's citation (sourceref, version, span, source_url).
    """
    lines = []  # (artifact key, the line as shown, its words without references)
    for artifact in artifacts:
        for line in filter(str.strip, artifact.text.split("\n")):
            text = item_text(line)
            if is_statement(words := plain_sentence(text)):
                lines.append((artifact.key, text, words))
    scores = nearness(question, [words for _key, _text, words in lines])
    ranked = sorted(range(len(lines)), key=lambda i: (-scores[i], i))
    suggestions: dict[str, dict] = {}
    for i in ranked:
        if scores[i] <= 0 or len(suggestions) == MAX_SUGGESTIONS:
            break
        key, text, _words = lines[i]
        # One excerpt, whichever artifact holds it, and none that another already says (a report's summary
        # line holds the passage's sentence it was made from).
        said = sentence_key(text)
        if not any(said in chosen or chosen in said for chosen in suggestions):
            suggestions[said] = {"label": key, "text": text[:500]}
    chosen = list(suggestions.values())
    for suggestion in chosen:
        ref = first_sourceref(suggestion["text"])
        suggestion.update(provenance.links_for([ref] if ref else [], versions).get(ref, {}))
    return chosen


# --- supplies --------------------------------------------------------------------------


def supply_context(session: ResearchSession, user: AbstractBaseUser, request_id, payloads) -> dict:
    pk = parse_uuid(request_id)
    request = ContextRequest.objects.filter(pk=pk, conversation__session=session).first() if pk else None
    if request is None:
        raise ApplicationError("context request not found", 404)
    if request.status != ContextRequest.Status.OPEN:
        raise ApplicationError(f"the context request is already {request.status}", 409)
    checked = [_checked_payload(session, request, p) for p in _payload_list(payloads)]
    with transaction.atomic():
        for slot, kind, payload in checked:
            ContextSupply.objects.create(
                request=request,
                slot=slot,
                kind=kind,
                payload=payload,
                supplied_by=user,
                provenance={"via": "api", "user": user.get_username(), "at": timezone.now().isoformat()},
            )
        given = set(request.supplies.values_list("slot", flat=True))
        missing = [s["slot"] for s in request.required if s["slot"] not in given]
        if not missing:
            request.status, request.resolved_at = ContextRequest.Status.RESOLVED, timezone.now()
            request.save(update_fields=["status", "resolved_at"])
    events.push(session.pk, "conversation:context_update", request=request_json(request), missing=missing)
    if missing:
        return {"status": "partial", "request_id": str(request.pk), "missing": missing}
    events.push(session.pk, "conversation:context_resolved", request=request_json(request))
    _enqueue(jobs.RESUME_TURN, request.pk)
    return {"status": "resolved", "request_id": str(request.pk), "user_message_id": str(request.message_id)}


def _payload_list(payloads) -> list[dict]:
    if not isinstance(payloads, list) or not payloads or not all(isinstance(p, dict) for p in payloads):
        raise ApplicationError("payloads must be a non-empty list of objects")
    return payloads


def _checked_payload(session, request: ContextRequest, payload: dict) -> tuple[str, str, dict]:
    slots = {s["slot"] for s in request.required}
    slot, kind = payload.get("slot"), payload.get("kind")
    if slot not in slots:
        raise ApplicationError(f"unknown slot {slot!r}; this request has {', '.join(sorted(slots))}")
    if kind not in SUPPLY_KINDS:
        raise ApplicationError(f"kind must be one of {', '.join(sorted(SUPPLY_KINDS))}")
    if kind == "skip":
        return slot, kind, {}
    if kind == "file":
        pk = parse_uuid(payload.get("file_id"))
        file = ContextFile.objects.filter(pk=pk, context_set__session=session).first() if pk else None
        if file is None:
            raise ApplicationError("file_id must name a file of this session's context")
        text = file.digest.content.get("summary", "") if file.digest_id else ""
        return slot, kind, {"file_id": str(file.pk), "filename": file.filename, "text": text or file.filename}
    text = payload.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ApplicationError(f"a {kind} needs its text")
    if len(text) > MAX_SUPPLY_CHARS:
        raise ApplicationError(f"a {kind} is at most {MAX_SUPPLY_CHARS} characters")
    return (
        slot,
        kind,
        {"text": text.strip(), **({"sourceref": payload["sourceref"]} if payload.get("sourceref") else {})},
    )


# --- deferred turns, SLA, queue -----------------------------------------------------------


def resume_turn(request_id) -> None:
    """The request is resolved: answer the message it held back (safe to run twice)."""
    request = ContextRequest.objects.filter(pk=request_id).select_related("message").first()
    if request is None or request.status == ContextRequest.Status.OPEN:
        return
    if claim(
        ChatMessage.objects.filter(pk=request.message_id),
        from_=ChatMessage.Status.WAITING_CONTEXT,
        to=ChatMessage.Status.THINKING,
    ):
        request.message.refresh_from_db()
        skipped_all = not request.supplies.exclude(kind=ContextSupply.Kind.SKIP).exists()
        warning = "Answered without the requested context: every item was skipped." if skipped_all else ""
        run_turn(request.message, may_request=False, warning=warning)


def remind(request_id) -> None:
    request = ContextRequest.objects.filter(pk=request_id, status=ContextRequest.Status.OPEN).first()
    if request is None or request.reminded_at:
        return
    request.reminded_at = timezone.now()
    request.save(update_fields=["reminded_at"])
    session_id = request.conversation.session_id
    events.push(session_id, "conversation:context_update", request=request_json(request), reminder=True)


def expire(request_id) -> None:
    """The SLA ran out: answer without the missing context, saying so."""
    if not claim(
        ContextRequest.objects.filter(pk=request_id),
        from_=ContextRequest.Status.OPEN,
        to=ContextRequest.Status.EXPIRED,
        resolved_at=timezone.now(),
    ):
        return
    request = ContextRequest.objects.select_related("message", "conversation").get(pk=request_id)
    events.push(request.conversation.session_id, "conversation:context_resolved", request=request_json(request))
    if claim(
        ChatMessage.objects.filter(pk=request.message_id),
        from_=ChatMessage.Status.WAITING_CONTEXT,
        to=ChatMessage.Status.THINKING,
    ):
        request.message.refresh_from_db()
        minutes = round(settings.GROUNDWORK_CONTEXT_REQUEST_SECONDS / 60, 1)
        warning = f"Answered without the requested context: nobody supplied it within {minutes:g} minutes."
        run_turn(request.message, may_request=False, warning=warning)


def _schedule_sla(request: ContextRequest) -> None:
    seconds = settings.GROUNDWORK_CONTEXT_REQUEST_SECONDS
    queue_job(jobs.REMIND, str(request.pk), countdown=seconds / 2)
    queue_job(jobs.EXPIRE, str(request.pk), countdown=seconds)


def _enqueue(job: str, object_id) -> None:
    transaction.on_commit(lambda: queue_job(job, str(object_id)))


# --- what a turn sees ----------------------------------------------------------------------


def _history(message: ChatMessage) -> list[dict]:
    earlier = message.conversation.messages.filter(created_at__lt=message.created_at).exclude(
        status=ChatMessage.Status.FAILED
    )
    turns = list(earlier.order_by("-created_at")[:HISTORY_TURNS])[::-1]
    return [{"role": m.role, "content": m.content} for m in turns]


def _searched_question(message: ChatMessage, history: list[dict]) -> str:
    """What the library is searched for: the message, and for a bare follow-up ("and in 2023?") the
    previous user message as well."""
    if not is_bare_follow_up(message.content, len(query_terms(message.content))):
        return message.content
    previous = next((turn["content"] for turn in reversed(history) if turn["role"] == "user"), "")
    return f"{message.content} {previous}".strip()


MODEL_QUERIES = 3


def _model_written_queries(question: str, message: ChatMessage) -> list[str]:
    """Search queries in the documents' words, written by the configured model (research's NODE_QUERIES
    task): a question in a colleague's words then also finds the page in the manual's. None from the
    offline provider, whose queries would be the question's own words again, nor when the call fails
    (the question alone is searched, as before)."""
    if gateway.get_provider().name == "offline":
        return []
    try:
        result = run_model_task(
            research_tasks.NODE_QUERIES,
            EnvelopePrompt({"question": question, "max_queries": MODEL_QUERIES}, []),
            subject=f"chat:{message.pk}",
            session_id=message.conversation.session_id,
        )
    except (TaskFailed, gateway.GatewayError) as exc:
        logger.warning("chat %s searched with the question alone: %s", message.pk, exc)
        return []
    return [query for query in result.output["queries"][:MODEL_QUERIES] if query.strip() and query != question]


def _supplied_for(message: ChatMessage) -> list[dict]:
    supplies = ContextSupply.objects.filter(request__message=message).select_related("supplied_by")
    return [{"slot": s.slot, "kind": s.kind, "text": s.payload.get("text", "")} for s in supplies]


def baseline_prompt(session: ResearchSession, message: ChatMessage, history: list[dict], supplied: list[dict]) -> str:
    """The prompt sheet's sections, filled from the session (seed 003 §4.1.5)."""
    context_set = getattr(session, "context_set", None)
    aggregate = context_set.aggregate_digest.content if context_set and context_set.aggregate_digest_id else None
    runs = ResearchRun.objects.filter(session=session, status=ResearchRun.Status.COMPLETED)[:3]
    return render_sheet(
        "chat_turn",
        {
            "message": message.content,
            "history": history,
            "style": style_fragment(settings.GROUNDWORK_CHAT_STYLE),
            "data_abstract": (aggregate or {}).get("summary", ""),
            "user_guidance": session.question,
            "system_role": "You are the research assistant of this session's team.",
            "research_role": "You answer from the team's own files and research, and ask when something is missing.",
            "goal": session.question,
            "research_outputs": [
                {
                    "title": r.report["title"],
                    "summary": r.report["summary"],
                    "open_questions": r.report["open_questions"],
                }
                for r in runs
                if r.report
            ],
            "attachments": [{"slot": s["slot"], "kind": s["kind"], "by": "", "text": s["text"]} for s in supplied],
        },
    )
