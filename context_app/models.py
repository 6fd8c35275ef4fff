"""Context files, their extracted spans, stored digests, the digest cache and model calls.

context_app knows a research session only through a foreign key down to workspaces;
it imports nothing from the apps above it.
"""

import uuid

from django.db import models
from django.utils import timezone

from workspaces.claims import allow_moves
from workspaces.leases import LeasedJob


class DigestStatus(models.TextChoices):
    READY = "ready"
    STALE = "stale"
    PARSING = "parsing"
    ERROR = "error"


class Change(models.TextChoices):
    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    DELETED = "deleted"


class ContextSet(models.Model):
    """The files of one research session, with a revision bumped by every mutation."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.OneToOneField("workspaces.ResearchSession", on_delete=models.CASCADE, related_name="context_set")
    # Digests are shared through the cache between sets with the same scope (a team).
    cache_scope = models.CharField(max_length=64, db_index=True)
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    auto_parse = models.BooleanField(default=False)
    # Task A of a large parse through the provider's batch API (half price, answers within
    # 24 h) when GROUNDWORK_LLM_BATCH_MIN_FILES is set: context_app.batch_ingest.
    batch_ingest = models.BooleanField(default=False)
    # Set by Parse now / a run start; cleared when the set has settled. Files whose
    # extraction finishes meanwhile are parsed too.
    parse_requested = models.BooleanField(default=False)
    aggregate_digest_status = models.CharField(max_length=16, choices=DigestStatus.choices, default=DigestStatus.READY)
    aggregate_digest = models.ForeignKey(
        "StoredDigest", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The revision at which the aggregate was last known to match the files, and
    # the hash of the (filename, format, digest_hash) inputs it was built from.
    aggregate_revision = models.PositiveIntegerField(default=0)
    aggregate_inputs_hash = models.CharField(max_length=64, blank=True)
    aggregate_error = models.JSONField(null=True, blank=True)
    # The lease on a Task B job while the aggregate is `parsing` (see workspaces/leases.py):
    # empty owner = queued, no worker holds it yet.
    aggregate_lease_owner = models.CharField(max_length=200, blank=True)
    aggregate_lease_expires_at = models.DateTimeField(null=True, blank=True)
    # {filename: FileText version} the aggregate digest's SourceRefs were written against.
    aggregate_versions = models.JSONField(default=dict, blank=True)
    last_diff = models.JSONField(default=dict, blank=True)
    # Numbers every manifest read of the set (selectors.manifest_of): pushes from several
    # processes reach a page out of order, and the page keeps the highest number.
    manifest_seq = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"ContextSet {self.id} (rev {self.revision})"


class ContextFile(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    context_set = models.ForeignKey(ContextSet, on_delete=models.CASCADE, related_name="files")
    filename = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=128)
    format = models.CharField(max_length=32)
    size_bytes = models.PositiveBigIntegerField()
    uploaded_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)
    blob = models.FileField(upload_to="context/%Y/%m/", max_length=255)
    content_hash = models.CharField(max_length=64)
    # Empty until the worker has extracted the file (every file is extracted in the worker).
    extracted_text_hash = models.CharField(max_length=64, blank=True)
    chunking_version = models.CharField(max_length=32, blank=True)
    # The reader that read it (extraction.reader_version of its format): an improved reader reads it again.
    reader_version = models.CharField(max_length=32, blank=True)
    spans_hash = models.CharField(max_length=64, blank=True)
    page_count = models.PositiveIntegerField(null=True, blank=True)
    prompt_version = models.CharField(max_length=32, blank=True)
    digest_status = models.CharField(max_length=16, choices=DigestStatus.choices, default=DigestStatus.STALE)
    digest = models.ForeignKey("StoredDigest", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    digest_hash = models.CharField(max_length=64, blank=True)
    last_change = models.CharField(max_length=16, choices=Change.choices, default=Change.NEW)
    # Why the file went back to the queue without a change of its own (its digest was made
    # under another prompt or model; the worker parsing it stopped). Shown beside its chip,
    # which then moves back within one parse; cleared when its digest is written.
    requeued_because = models.CharField(max_length=200, blank=True)
    error = models.JSONField(null=True, blank=True)
    parsing_started_at = models.DateTimeField(null=True, blank=True)
    # Parsing, its Task A queued in this provider batch: not stuck while the batch runs (up to 24 h).
    llm_batch = models.ForeignKey(
        "llm_platform.LLMBatch", null=True, blank=True, on_delete=models.SET_NULL, related_name="files"
    )
    # The lease on the file's job (extraction or Task A) while it is `parsing` (see
    # workspaces/leases.py): empty owner = queued, no worker holds it yet.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Its library windows, and how many of them have their vector yet (context_app.meaning):
    # the chip's "indexing meaning 120/300". Search uses the vectors that exist meanwhile.
    meaning_windows = models.PositiveIntegerField(default=0)
    meaning_embedded = models.PositiveIntegerField(default=0)
    # While the worker reads it, how a long read goes: the chip's "OCR page 12/80" ("" otherwise).
    extraction_progress = models.CharField(max_length=64, blank=True)
    # What its extraction has to say beside the status: "low OCR confidence on pages 3, 7",
    # "no text on page 4" (extraction.ExtractedDocument.notes); [] until it is extracted.
    extraction_notes = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["context_set", "filename"], name="unique_filename_per_set")]
        ordering = ["filename"]
        indexes = [
            models.Index(fields=["digest_status", "parsing_started_at"]),
            models.Index(fields=["digest_status", "lease_expires_at"]),
        ]

    def __str__(self) -> str:
        return self.filename

    @property
    def is_extracted(self) -> bool:
        return bool(self.extracted_text_hash)

    @property
    def text(self) -> "FileText | None":
        """The current version of the file's text and spans (one query), or None."""
        return FileText.objects.current().filter(file=self).first()


class FileTextQuerySet(models.QuerySet):
    def current(self):
        """Versions that are a file's text now: neither superseded nor deleted."""
        return self.filter(superseded_at__isnull=True, deleted_at__isnull=True)


class FileText(models.Model):
    """One extracted version of a file: its normalised text and spans, what a citation points at.

    A file has at most one current version. Extraction adds a new one when the
    text (or its spans) changed and marks the old one superseded; deleting the
    file marks its versions deleted and unlinks them. A version's text stays
    readable while it is current or anything cites it (docs/decisions.md,
    "Cited versions are kept"); `manage.py prune_source_texts` removes the rest.
    Kept apart from ContextFile so file lists never load it.
    """

    file = models.ForeignKey(ContextFile, null=True, blank=True, on_delete=models.SET_NULL, related_name="texts")
    version = models.UUIDField(unique=True, default=uuid.uuid4, editable=False)
    scope = models.CharField(max_length=64, db_index=True)  # the origin set's cache scope (team:<id>)
    # The origin set, so its session; null once that session is deleted.
    context_set = models.ForeignKey(
        ContextSet, null=True, blank=True, on_delete=models.SET_NULL, related_name="file_texts"
    )
    filename = models.CharField(max_length=255)
    format = models.CharField(max_length=32)
    extracted_text_hash = models.CharField(max_length=64)
    spans_hash = models.CharField(max_length=64, blank=True)
    text = models.TextField()
    spans = models.JSONField(default=list)  # [{span_id, text, locator, start, end}]
    created_at = models.DateTimeField(default=timezone.now)
    superseded_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = FileTextQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["file"],
                condition=models.Q(superseded_at__isnull=True, deleted_at__isnull=True),
                name="one_current_text_per_file",
            )
        ]

    def __str__(self) -> str:
        return f"{self.filename} {self.version} ({self.status})"

    @property
    def status(self) -> str:
        if self.deleted_at:
            return "deleted"
        return "superseded" if self.superseded_at else "current"


class StoredDigest(models.Model):
    class Kind(models.TextChoices):
        FILE = "file"
        AGGREGATE = "aggregate"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    content = models.JSONField()
    digest_hash = models.CharField(max_length=64, db_index=True)
    prompt_version = models.CharField(max_length=32)
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=128)
    # What validation removed: [{"where": ..., "reason": ...}]
    validation_report = models.JSONField(default=list, blank=True)
    # What the model calls whose answers make this digest cost: {calls, input_tokens, output_tokens,
    # cache_read_input_tokens, cache_creation_input_tokens} (a cache hit saves exactly that).
    usage = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} digest {self.digest_hash[:12]}"


class DigestCacheEntry(models.Model):
    """Content-addressed cache: same key within a scope → same digest, no model call."""

    scope = models.CharField(max_length=64)
    cache_key = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=StoredDigest.Kind.choices)
    digest = models.ForeignKey(StoredDigest, on_delete=models.CASCADE, related_name="+")
    # The filename the digest's SourceRefs were written with (relabelled on reuse).
    filename = models.CharField(max_length=255, blank=True)
    hits = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "cache_key"], name="unique_cache_key_per_scope")]
        verbose_name_plural = "digest cache entries"


class DigestCacheHit(models.Model):
    """A file made ready from the digest cache: the model calls it did not make, for the cost ledger.

    The tokens are the cached digest's `usage` as of the hit, so the ledger prices
    what was saved with the same table as what was spent.
    """

    context_set = models.ForeignKey(ContextSet, on_delete=models.CASCADE, related_name="digest_cache_hits")
    digest = models.ForeignKey(StoredDigest, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    task = models.CharField(max_length=64)  # the task the hit stands in for: per_file_digest
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=128)
    subject = models.CharField(max_length=128, blank=True)  # "file:<uuid>"
    calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_input_tokens = models.PositiveIntegerField(default=0)
    cache_creation_input_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.task} cache hit for {self.subject}"


class LibraryRecord(models.Model):
    """A page (PDF) or section of an extracted file, as the team's library search sees it."""

    file = models.ForeignKey(ContextFile, on_delete=models.CASCADE, related_name="library_records")
    # The version the record was cut from (the file's current one: records are rewritten with it).
    file_text = models.ForeignKey(
        FileText, null=True, blank=True, on_delete=models.CASCADE, related_name="library_records"
    )
    scope = models.CharField(max_length=64, db_index=True)  # the set's cache scope: one library per team
    # The extracted text hash: the same document uploaded twice is one document.
    document_id = models.CharField(max_length=64)
    position = models.PositiveIntegerField()  # 1-based order within the file
    page = models.PositiveIntegerField(null=True, blank=True)  # PDF page; None when unpaginated
    section_path = models.CharField(max_length=500, blank=True)  # "Methods > Sampling"
    parent_heading = models.CharField(max_length=255, blank=True)
    text = models.TextField()
    first_span = models.CharField(max_length=16)
    last_span = models.CharField(max_length=16)
    length = models.PositiveIntegerField()  # index terms, BM25's document length

    class Meta:
        ordering = ["file", "position"]

    def __str__(self) -> str:
        return f"{self.file.filename} #{self.position}"


class LibraryWindow(models.Model):
    """A stretch of a library record short enough for the embedding model, and its vector once made."""

    record = models.ForeignKey(LibraryRecord, on_delete=models.CASCADE, related_name="windows")
    scope = models.CharField(max_length=64)  # the record's, so a team's matrix is one indexed query
    model = models.CharField(max_length=160)  # the embedding model's key (llm_platform.embeddings.model_key)
    start = models.PositiveIntegerField()  # character offsets into the record's text
    end = models.PositiveIntegerField()
    embedding = models.ForeignKey(
        "llm_platform.TextEmbedding", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["scope", "model"], name="library_window_scope")]
        constraints = [models.UniqueConstraint(fields=["record", "model", "start"], name="unique_library_window")]


class LibraryPosting(models.Model):
    """Inverted index: how often `term` occurs in a record (BM25 term frequency)."""

    record = models.ForeignKey(LibraryRecord, on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=64)
    term = models.CharField(max_length=64)
    tf = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["scope", "term"], name="library_posting_term")]


# The moves a file's digest and a set's aggregate may make (SPEC §2.3–2.5); every write of
# either status is a claim() or a move() that checks them (workspaces/claims.py).
S = DigestStatus
FILE_DIGEST_MOVES = {
    S.STALE: {S.PARSING},  # claimed for Task A; a new upload waits for its extraction
    S.PARSING: {S.READY, S.ERROR, S.STALE},  # a job's outcome (stale: its worker stopped, or no cached digest)
    S.READY: {S.STALE, S.PARSING},  # its digest was made under another prompt or model; new bytes
    S.ERROR: {S.STALE, S.PARSING},  # Retry; new bytes
}
AGGREGATE_MOVES = {
    S.READY: {S.STALE, S.ERROR},  # the files changed; every file failed
    S.STALE: {S.PARSING, S.READY, S.ERROR},  # claimed for Task B; the files are back to what it was built from
    S.PARSING: {S.READY, S.STALE, S.ERROR},  # a job's outcome
    S.ERROR: {S.PARSING, S.READY, S.STALE},  # Parse now; the files changed
}
allow_moves(ContextFile, "digest_status", FILE_DIGEST_MOVES)
allow_moves(ContextSet, "aggregate_digest_status", AGGREGATE_MOVES)

# Where each kind of job keeps its status and its lease (workspaces/leases.py).
FILE_JOB = LeasedJob(ContextFile, "digest_status", S.PARSING, "lease_owner", "lease_expires_at", "parsing_started_at")
AGGREGATE_JOB = LeasedJob(
    ContextSet, "aggregate_digest_status", S.PARSING, "aggregate_lease_owner", "aggregate_lease_expires_at"
)
