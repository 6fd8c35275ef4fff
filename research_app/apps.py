from django.apps import AppConfig


class ResearchAppConfig(AppConfig):
    name = "research_app"
    verbose_name = "Teams, sessions and research runs"

    def ready(self) -> None:
        from context_app import provenance
        from context_app.llm import offline

        from . import receivers  # noqa: F401  (connects the context pipeline's signals)
        from .runs import offline as research
        from .selectors import cited_source_versions

        offline.register("NODE_QUERIES", research.node_queries)
        offline.register("NODE_FINDINGS", research.node_findings)
        offline.register("NODE_SUFFICIENCY", research.node_sufficiency)
        offline.register("NODE_DECOMPOSE", research.node_decompose)
        offline.register("CONTEXT_SPLIT", research.context_split)
        offline.register("REPORT", research.report)
        provenance.register_citer(cited_source_versions)
