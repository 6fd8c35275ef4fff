from django.apps import AppConfig


class ResearchAppConfig(AppConfig):
    name = "research_app"
    verbose_name = "Research runs"

    def ready(self) -> None:
        from context_app import provenance
        from llm_platform import offline

        from . import (
            receivers,  # noqa: F401  (connects the context pipeline's signals)
            tasks,  # noqa: F401  (registered in every process: jobs are queued by name)
        )
        from .runs import model_tasks
        from .runs import offline as research
        from .selectors import cited_source_versions

        for task in model_tasks.RESEARCH_TASKS:  # each answered offline by the function of its name
            offline.register(task.name, getattr(research, task.recorded_as))
        provenance.register_citer(cited_source_versions)
