from django.apps import AppConfig


class ResearchAppConfig(AppConfig):
    name = "research_app"
    verbose_name = "Teams, sessions and research runs"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects the context pipeline's signals)
