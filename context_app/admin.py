from django.contrib import admin

from workspaces.admin import ReadOnlyTabularInline

from .models import ContextFile, ContextSet, DigestCacheEntry, DigestCacheHit, LibraryRecord, StoredDigest


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
    readonly_fields = ("id", "aggregate_digest", "aggregate_inputs_hash", "last_diff", "updated_at")
    inlines = [ContextFileInline]


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
    readonly_fields = [f.name for f in LibraryRecord._meta.fields]

    def has_add_permission(self, request):
        return False
