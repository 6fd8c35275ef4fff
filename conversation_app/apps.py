from django.apps import AppConfig


class ConversationAppConfig(AppConfig):
    name = "conversation_app"
    verbose_name = "Chat"
