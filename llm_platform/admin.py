from django.contrib import admin

from workspaces.models import ResearchSession

from .models import LLMBatch, LLMCall
from .pricing import call_cost
from .spending import money


@admin.register(LLMBatch)
class LLMBatchAdmin(admin.ModelAdmin):
    """Task A batches (context_app.batch_ingest): read-only, the provider holds them."""

    list_display = ("provider_batch_id", "session", "provider", "model", "status", "created_at", "ended_at")
    list_filter = ("status", "provider")
    readonly_fields = [f.name for f in LLMBatch._meta.fields] + ["requests"]

    def has_add_permission(self, request):
        return False


class SessionFilter(admin.SimpleListFilter):
    """Calls of one session: the sessions that made calls, newest first."""

    title = "session"
    parameter_name = "session"
    MAX_LISTED = 100  # older sessions: ?session=<session id> still filters

    def lookups(self, request, model_admin):
        sessions = ResearchSession.objects.filter(pk__in=LLMCall.objects.values("session_id"))
        return [
            (str(pk), title)
            for pk, title in sessions.order_by("-created_at").values_list("pk", "title")[: self.MAX_LISTED]
        ]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(session_id=self.value())


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
