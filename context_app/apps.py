from django.apps import AppConfig


class ContextAppConfig(AppConfig):
    name = "context_app"
    verbose_name = "Context files and digests"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        # The pipeline's stages queue each other's jobs by task name (workspaces.jobs): every
        # process that queues one (web, worker, a script) has the tasks registered.
        from . import tasks  # noqa: F401
        from .models import ContextFile

        # Every way a file goes (delete_file, or its session's cascade) marks its versions deleted first.
        pre_delete.connect(_mark_versions_deleted, sender=ContextFile, dispatch_uid="context_file_versions_deleted")


def _mark_versions_deleted(sender, instance, **kwargs) -> None:
    from .provenance import mark_deleted  # apps.py loads before the models: no model import at its top

    mark_deleted([instance.pk])
