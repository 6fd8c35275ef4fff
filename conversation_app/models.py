"""The session chat (SPEC §5): messages, context requests and the context people supply."""

import uuid

from django.conf import settings
from django.db import models

from workspaces.models import ResearchSession


class Conversation(models.Model):
    session = models.OneToOneField(ResearchSession, on_delete=models.CASCADE, related_name="conversation")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"chat of {self.session}"


class ChatMessage(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    class Status(models.TextChoices):
        ANSWERED = "answered"  # a user message with its reply, or an assistant message
        THINKING = "thinking"  # the turn is being worked on
        WAITING_CONTEXT = "waiting_context"  # deferred until its context request is resolved
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=Role.choices)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    content = models.TextField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.THINKING)
    reply_to = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    citations = models.JSONField(default=list, blank=True)  # SourceRefs and artifact keys
    # The citation object (context_app.provenance) of each citation that is a SourceRef, pinned when written.
    source_links = models.JSONField(default=list, blank=True)
    warning = models.TextField(blank=True)  # e.g. answered without the context it asked for
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class ContextRequest(models.Model):
    """What the assistant asked a person for before it answers a message (seed 003 §4.1)."""

    class Status(models.TextChoices):
        OPEN = "open"
        RESOLVED = "resolved"  # every slot supplied (or skipped)
        EXPIRED = "expired"  # the SLA ran out: answered without it, with a warning
        FORCED = "forced"  # someone chose to answer without it

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="context_requests")
    message = models.ForeignKey(ChatMessage, on_delete=models.CASCADE, related_name="context_requests")
    # [{slot, kind: note|file|snippet, description,
    #   suggestions: [{label, text, and from a span: sourceref, version, span, source_url}]}]
    required = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    deadline = models.DateTimeField()
    reminded_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{len(self.required)} slot(s), {self.status}"


class ContextSupply(models.Model):
    """One slot's answer, with who gave it and how (provenance)."""

    class Kind(models.TextChoices):
        NOTE = "note"
        SNIPPET = "snippet"  # a suggested excerpt of the session's own material
        FILE = "file"  # a file of the session's context
        SKIP = "skip"
        AUTO = "auto"  # supplied by the system from what the session holds

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    request = models.ForeignKey(ContextRequest, on_delete=models.CASCADE, related_name="supplies")
    slot = models.CharField(max_length=32)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    payload = models.JSONField(default=dict, blank=True)  # {text, sourceref?, file_id?, filename?}
    supplied_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    supplied_at = models.DateTimeField(auto_now_add=True)
    provenance = models.JSONField(default=dict, blank=True)  # {via: "api" | "system", user, at}

    class Meta:
        ordering = ["supplied_at"]

    def __str__(self) -> str:
        return f"{self.slot}: {self.kind}"
