from django.apps import AppConfig


class ConversationAppConfig(AppConfig):
    name = "conversation_app"
    verbose_name = "Chat"

    def ready(self) -> None:
        from context_app.llm import offline

        from . import offline as chat

        offline.register("CHAT_TURN", chat.chat_turn)
