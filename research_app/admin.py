from django.contrib import admin

from workspaces.admin import ReadOnlyTabularInline

from .models import NodeContextSlice, ResearchNode, ResearchRun, RunEvent


class ResearchNodeInline(ReadOnlyTabularInline):
    model = ResearchNode
    fields = ("path", "status", "question", "finished_at")
    show_change_link = True


@admin.register(ResearchRun)
class ResearchRunAdmin(admin.ModelAdmin):
    list_display = ("question", "session", "status", "tokens_used", "created_at", "finished_at")
    list_filter = ("status",)
    search_fields = ("question", "session__title")
    readonly_fields = ("id", "last_seq", "created_at", "started_at", "finished_at")
    inlines = [ResearchNodeInline]


class NodeContextSliceInline(admin.StackedInline):
    model = NodeContextSlice
    extra = 0
    can_delete = False


@admin.register(ResearchNode)
class ResearchNodeAdmin(admin.ModelAdmin):
    list_display = ("path", "question", "run", "status", "depth")
    list_filter = ("status", "depth")
    search_fields = ("question",)
    raw_id_fields = ("run", "parent")
    inlines = [NodeContextSliceInline]


@admin.register(NodeContextSlice)
class NodeContextSliceAdmin(admin.ModelAdmin):
    list_display = ("node", "mode", "bundle_revision")
    list_filter = ("mode",)
    raw_id_fields = ("node",)


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "type", "created_at")
    list_filter = ("type",)
    raw_id_fields = ("run",)
