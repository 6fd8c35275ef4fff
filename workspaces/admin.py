from django.contrib import admin

from .models import IdempotencyRecord, ResearchSession, Team, UserPreference


class ReadOnlyTabularInline(admin.TabularInline):
    """Rows listed under their parent, every field read-only and none deleted here (every app's admin uses it)."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "member_count", "created_at")
    search_fields = ("name", "members__username")
    filter_horizontal = ("members",)

    @admin.display(description="members")
    def member_count(self, team):
        return team.members.count()


@admin.register(ResearchSession)
class ResearchSessionAdmin(admin.ModelAdmin):
    list_display = ("title", "team", "spending_cap_usd", "created_by", "created_at")
    list_filter = ("team",)
    search_fields = ("title", "question")
    readonly_fields = ("id", "created_at", "updated_at")


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(admin.ModelAdmin):
    list_display = ("key", "user", "response_status", "created_at")
    list_filter = ("response_status",)
    search_fields = ("key",)
    readonly_fields = ("user", "key", "request_fingerprint", "response_status", "response_headers", "created_at")
    exclude = ("response_body",)


@admin.register(UserPreference)
class UserPreferenceAdmin(admin.ModelAdmin):
    list_display = ("user", "ui_debug")
    list_filter = ("ui_debug",)
