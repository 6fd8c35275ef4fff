from django.apps import AppConfig


class ResearchAppConfig(AppConfig):
    name = "research_app"
    verbose_name = "Research runs"

    def ready(self) -> None:
        from context_app import provenance

        from . import (
            receivers,  # noqa: F401  (connects the context pipeline's signals)
            tasks,  # noqa: F401  (registered in every process: jobs are queued by name)
        )
        from .selectors import cited_source_versions

        provenance.register_citer(cited_source_versions)
