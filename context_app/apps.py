from django.apps import AppConfig


class ContextAppConfig(AppConfig):
    name = "context_app"
    verbose_name = "Context files and digests"
