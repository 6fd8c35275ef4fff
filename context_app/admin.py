from django.contrib import admin

from .llm.pricing import call_cost
from .models import (
    ContextFile,
    ContextSet,
    DigestCacheEntry,
    DigestCacheHit,
    LibraryRecord,
    LLMBatch,
    LLMCall,
    StoredDigest,
)
from .usage import money


class ReadOnlyTabularInline(admin.TabularInline):
    """Rows listed under their parent, every field read-only and none deleted here (every app's admin uses it)."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields


class ContextFileInline(ReadOnlyTabularInline):
    model = ContextFile
    fields = ("filename", "format", "size_bytes", "digest_status", "last_change", "updated_at")
    show_change_link = True


@admin.register(ContextSet)
class ContextSetAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "session",
        "revision",
        "aggregate_digest_status",
        "aggregate_revision",
        "auto_parse",
        "batch_ingest",
        "updated_at",
    )
    list_filter = ("aggregate_digest_status", "auto_parse", "batch_ingest")
    list_select_related = ("session",)
    readonly_fields = ("id", "aggregate_digest", "aggregate_inputs_hash", "last_diff", "updated_at")
    inlines = [ContextFileInline]


@admin.register(LLMBatch)
class LLMBatchAdmin(admin.ModelAdmin):
    """Task A batches (batch_ingest): read-only, the provider holds them."""

    list_display = ("provider_batch_id", "context_set", "provider", "model", "status", "created_at", "ended_at")
    list_filter = ("status", "provider")
    readonly_fields = [f.name for f in LLMBatch._meta.fields] + ["requests"]

    def has_add_permission(self, request):
        return False


@admin.register(ContextFile)
class ContextFileAdmin(admin.ModelAdmin):
    list_display = ("filename", "format", "size_bytes", "digest_status", "last_change", "page_count", "uploaded_at")
    list_filter = ("digest_status", "format", "last_change")
    search_fields = ("filename", "content_hash", "extracted_text_hash")
    readonly_fields = (
        "id",
        "context_set",
        "content_hash",
        "extracted_text_hash",
        "chunking_version",
        "spans_hash",
        "prompt_version",
        "digest",
        "digest_hash",
        "error",
        "parsing_started_at",
        "uploaded_at",
        "updated_at",
    )


@admin.register(StoredDigest)
class StoredDigestAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "provider", "model", "prompt_version", "digest_hash", "created_at")
    list_filter = ("kind", "provider", "prompt_version")
    search_fields = ("digest_hash",)
    readonly_fields = ("content", "validation_report", "created_at")


@admin.register(DigestCacheEntry)
class DigestCacheEntryAdmin(admin.ModelAdmin):
    list_display = ("cache_key", "scope", "kind", "filename", "hits", "created_at")
    list_filter = ("kind", "scope")
    search_fields = ("cache_key", "filename")
    list_select_related = ("digest",)


class SessionFilter(admin.SimpleListFilter):
    """Calls of one session (through its context set): the sessions that made calls, newest first."""

    title = "session"
    parameter_name = "session"
    MAX_LISTED = 100  # older sessions: ?session=<session id> still filters

    def lookups(self, request, model_admin):
        sets = (
            ContextSet.objects.filter(pk__in=LLMCall.objects.values("context_set_id"))
            .select_related("session")
            .order_by("-session__created_at")[: self.MAX_LISTED]
        )
        return [(str(context_set.session_id), context_set.session.title) for context_set in sets]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(context_set__session_id=self.value())


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "task",
        "attempt",
        "provider",
        "model",
        "outcome",
        "retries",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "cost",
        "latency_ms",
    )
    list_filter = (SessionFilter, "task", "outcome", "provider", "batch", "prompt_version")
    search_fields = ("subject", "error")
    date_hierarchy = "created_at"

    @admin.display(description="cost (USD)")
    def cost(self, call: LLMCall) -> str:
        dollars = call_cost(
            call.provider,
            call.model,
            batch=call.batch,
            **{kind: getattr(call, kind) for kind in LLMCall.TOKEN_KINDS},
        )
        return "unpriced" if dollars is None else money(dollars)


@admin.register(DigestCacheHit)
class DigestCacheHitAdmin(admin.ModelAdmin):
    """Files made ready from the digest cache, with the calls and tokens they did not spend."""

    list_display = ("created_at", "context_set", "task", "provider", "model", "subject", "calls", "input_tokens")
    list_filter = ("task", "provider")
    search_fields = ("subject",)
    readonly_fields = [f.name for f in DigestCacheHit._meta.fields]


@admin.register(LibraryRecord)
class LibraryRecordAdmin(admin.ModelAdmin):
    """The pages and sections library search ranks; read-only (written at extraction)."""

    list_display = ("file", "position", "page", "section_path", "first_span", "last_span", "length", "scope")
    list_filter = ("scope", "file__format")
    search_fields = ("file__filename", "section_path", "text")
    list_select_related = ("file",)
    readonly_fields = [f.name for f in LibraryRecord._meta.fields]

    def has_add_permission(self, request):
        return False
