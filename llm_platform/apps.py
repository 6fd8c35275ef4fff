from django.apps import AppConfig


class LLMPlatformConfig(AppConfig):
    name = "llm_platform"
    verbose_name = "Model calls"
