from django.apps import AppConfig


class ContextAppConfig(AppConfig):
    name = "context_app"
    verbose_name = "Context files and digests"

    def ready(self) -> None:
        from .digests import offline as digests
        from .llm import offline

        offline.register("PER_FILE_DIGEST", digests.per_file_digest)
        offline.register("AGGREGATE_DIGEST", digests.aggregate_digest)
