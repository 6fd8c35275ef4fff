import uuid

from django.conf import settings
from django.db import models

from workspaces.models import ResearchSession


class ResearchRun(models.Model):
    """One exploration of a session's question: a bind phase, a tree of nodes, then a report (SPEC §4)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        BINDING = "binding"  # parsing the session's context into the run's ContextBundle
        RUNNING = "running"  # nodes are being explored
        REPORTING = "reporting"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(ResearchSession, on_delete=models.CASCADE, related_name="runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    question = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    max_depth = models.PositiveSmallIntegerField()
    max_children = models.PositiveSmallIntegerField()
    max_nodes = models.PositiveSmallIntegerField()
    token_budget = models.PositiveIntegerField()
    tokens_used = models.PositiveIntegerField(default=0)
    # The most the run's calls in progress may still use (prompt + output allowance each), held
    # against token_budget so parallel nodes cannot pass it together (runs/model_tasks.py).
    tokens_reserved = models.PositiveIntegerField(default=0)
    model_calls = models.PositiveIntegerField(default=0)  # with tokens_used: the progress line's "so far"
    # ContextBundle (seed 001 §3.2): {session_context_id, revision, files[], aggregate_digest}.
    context_bundle = models.JSONField(null=True, blank=True)
    # {status, files_total, files_ready, files_error} (seed 001 §9.1).
    context_processing = models.JSONField(default=dict, blank=True)
    report = models.JSONField(null=True, blank=True)
    # What the run looked at: every file of the bundle cited, read or never reached (runs/coverage.py);
    # written with the report, or when a run that bound its context ends without one.
    coverage = models.JSONField(null=True, blank=True)
    # An update of an earlier run's report (runs/update.py): the run it updates, and what its
    # re-check found ({changed, withdrawn, unchanged, claims, draft…}); the earlier run stays as it was.
    updates_run = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="updates")
    update_summary = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    last_seq = models.PositiveIntegerField(default=0)  # the seq of the newest RunEvent
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # At most one unfinished update of a run (runs/update.py): of two requests at once, the
            # database lets one insert its update run; the other is refused (409), on SQLite and PostgreSQL.
            models.UniqueConstraint(
                fields=["updates_run"],
                condition=models.Q(status__in=["queued", "binding", "running", "reporting"]),
                name="one_open_update_per_run",
            )
        ]

    def __str__(self) -> str:
        return f"{self.question[:60]} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class ResearchNode(models.Model):
    """One question in a run's tree: its search, findings, sufficiency verdict and children."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUFFICIENT = "sufficient"  # answered: a leaf
        DECOMPOSED = "decomposed"  # insufficient: its children carry on
        LIMITED = "limited"  # insufficient, but a run limit (depth, nodes, budget) stops it here
        FAILED = "failed"
        CANCELLED = "cancelled"

    DONE = (Status.SUFFICIENT, Status.DECOMPOSED, Status.LIMITED, Status.FAILED, Status.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(ResearchRun, on_delete=models.CASCADE, related_name="nodes")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    path = models.CharField(max_length=64)  # "1", "1.2", "1.2.1": the label the thought stream uses
    depth = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    question = models.TextField()
    rationale = models.TextField(blank=True)
    queries = models.JSONField(default=list, blank=True)
    # Numbered search results: [{n, title, document, page, section, url, text, score, provider}].
    results = models.JSONField(default=list, blank=True)
    findings = models.JSONField(default=list, blank=True)  # [{text, citations: [n]}]
    sufficiency = models.JSONField(null=True, blank=True)  # {is_sufficient, reasoning, gaps}
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "depth", "path"]
        constraints = [models.UniqueConstraint(fields=["run", "path"], name="unique_node_path_per_run")]

    def __str__(self) -> str:
        return f"{self.path} {self.question[:60]}"


class NodeContextSlice(models.Model):
    """The part of the user's context a node works with (seed 001 §3.2, §4.1)."""

    class Mode(models.TextChoices):
        ROOT_FULL = "root_full"
        SPLIT_FROM_PARENT = "split_from_parent"
        SPLIT_FALLBACK = "split_fallback"
        INHERITED_FROM_PARENT = "inherited_from_parent"
        FALLBACK_INHERIT_MISSING_PARENT = "fallback_inherit_missing_parent"

    node = models.OneToOneField(ResearchNode, on_delete=models.CASCADE, related_name="context_slice")
    mode = models.CharField(max_length=40, choices=Mode.choices)
    selection_reason = models.TextField(blank=True)
    selected_items = models.JSONField(default=list, blank=True)  # [{kind, text, sources: ["file::S4"]}]
    bundle_revision = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.mode}: {len(self.selected_items)} items"


class RunEvent(models.Model):
    """Everything a run did, in order: stored, replayable (`?after=N`) and pushed to watchers."""

    run = models.ForeignKey(ResearchRun, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="unique_event_seq_per_run")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"
