from django.contrib import admin

from workspaces.admin import ReadOnlyTabularInline

from .models import ChatMessage, ContextRequest, ContextSupply, Conversation


class ChatMessageInline(ReadOnlyTabularInline):
    model = ChatMessage
    fields = ("role", "author", "status", "content", "created_at")


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("session", "created_at")
    inlines = [ChatMessageInline]


@admin.register(ChatMessage)
class ChatMessageAdmin(admin.ModelAdmin):
    list_display = ("content", "role", "status", "author", "created_at")
    list_filter = ("role", "status")
    search_fields = ("content",)
    raw_id_fields = ("conversation", "reply_to")


class ContextSupplyInline(admin.StackedInline):
    model = ContextSupply
    extra = 0
    raw_id_fields = ("supplied_by",)


@admin.register(ContextRequest)
class ContextRequestAdmin(admin.ModelAdmin):
    list_display = ("message", "status", "deadline", "created_at")
    list_filter = ("status",)
    raw_id_fields = ("conversation", "message")
    inlines = [ContextSupplyInline]


@admin.register(ContextSupply)
class ContextSupplyAdmin(admin.ModelAdmin):
    list_display = ("request", "slot", "kind", "supplied_by", "supplied_at")
    list_filter = ("kind",)
    raw_id_fields = ("request", "supplied_by")
