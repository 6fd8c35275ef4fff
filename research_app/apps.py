from django.apps import AppConfig


class ResearchAppConfig(AppConfig):
    name = "research_app"
    verbose_name = "Teams and research sessions"
