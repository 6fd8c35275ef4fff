"""The model platform's ledger: every model call (LLMCall), provider batches, and spending holds.

The tables keep the names they had in context_app, where these models began. A call
belongs to a research session (its spending cap, its cost ledger); the platform knows
nothing of the files, runs or chats that made it.
"""

import uuid

from django.db import models

from workspaces.models import ResearchSession


class SpendingHold(models.Model):
    """The most a model call in progress may cost, held against its session's spending cap until its
    LLMCall row is written (llm_platform.spending). A worker that dies mid-call leaves its hold to expire."""

    session = models.ForeignKey(ResearchSession, on_delete=models.CASCADE, related_name="+")
    amount_usd = models.DecimalField(max_digits=12, decimal_places=6)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "context_app_spendinghold"

    def __str__(self) -> str:
        return f"${self.amount_usd} held until {self.expires_at:%H:%M:%S}"


class LLMBatch(models.Model):
    """Task A calls sent together through a provider's batch API, polled until they end (context_app.batch_ingest)."""

    class Status(models.TextChoices):
        SUBMITTED = "submitted"  # the provider is answering; poll_batches asks again
        ENDED = "ended"  # its answers were taken (each one an LLMCall with batch=True)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(ResearchSession, on_delete=models.CASCADE, related_name="llm_batches")
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=128)
    provider_batch_id = models.CharField(max_length=128, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SUBMITTED, db_index=True)
    # {custom_id: {"file_id", "extracted_text_hash"}}: what each request was for.
    requests = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "context_app_llmbatch"
        verbose_name = "LLM batch"

    def __str__(self) -> str:
        return f"batch {self.provider_batch_id} ({self.status}, {len(self.requests)} requests)"


class LLMCall(models.Model):
    class Outcome(models.TextChoices):
        OK = "ok"
        RETRIED = "retried"
        INVALID = "invalid"
        FAILED = "failed"
        # An attempt that failed and was retried (its answer, or final failure, is another row):
        THROTTLED = "throttled"  # 429 / 529: the provider asked us to slow down
        TRANSIENT = "transient"  # a timeout, a lost connection, a 5xx

    TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")

    task = models.CharField(max_length=64, db_index=True)
    attempt = models.PositiveSmallIntegerField(default=1)  # 2 = the repair call
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=128)
    prompt_version = models.CharField(max_length=32, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # Prompt caching (input_tokens excludes both): read from the cache, and written to it.
    cache_read_input_tokens = models.PositiveIntegerField(default=0)
    cache_creation_input_tokens = models.PositiveIntegerField(default=0)
    batch = models.BooleanField(default=False)  # answered through a batch API (billed at its discount)
    latency_ms = models.PositiveIntegerField(default=0)
    retries = models.PositiveSmallIntegerField(default=0)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    error = models.TextField(blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)  # HTTP status of a failed attempt
    waited_ms = models.PositiveIntegerField(default=0)  # waiting for a slot, tokens or a 429 cool-down
    # What the call was for, e.g. "file:<uuid>" or "aggregate:<context set uuid>".
    subject = models.CharField(max_length=128, blank=True)
    session = models.ForeignKey(
        ResearchSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="llm_calls"
    )
    # The research run the call worked for (research_app.ResearchRun's id; no foreign key: the platform
    # does not depend on the apps above it). Its ledger is one indexed filter.
    run_id = models.UUIDField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        db_table = "context_app_llmcall"
        verbose_name = "LLM call"

    def __str__(self) -> str:
        return f"{self.task} via {self.provider} ({self.outcome})"


class TextEmbedding(models.Model):
    """A text's vector by one embedding model, kept so that the same text is never embedded twice
    (llm_platform.embeddings): re-parsing a file, or a copy of it in another session, costs no call."""

    text_hash = models.CharField(max_length=64)  # sha256 of the text
    model = models.CharField(max_length=160)  # "provider:model", e.g. "local:all-MiniLM-L6-v2"
    vector = models.BinaryField()  # float32, little-endian, L2-normalised
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["text_hash", "model"], name="unique_text_embedding")]

    def __str__(self) -> str:
        return f"{self.model} {self.text_hash[:12]}"
