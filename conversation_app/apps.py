from django.apps import AppConfig


class ConversationAppConfig(AppConfig):
    name = "conversation_app"
    verbose_name = "Chat"

    def ready(self) -> None:
        from context_app import provenance

        from . import tasks  # noqa: F401  (registered in every process: jobs are queued by name)
        from .artifacts import cited_source_versions

        provenance.register_citer(cited_source_versions)
