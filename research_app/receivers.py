"""The context pipeline's signals, turned into bind-phase steps of the session's runs."""

from django.dispatch import receiver

from context_app.models import ContextSet
from context_app.signals import context_settled, file_digest_finished

from .runs import engine


@receiver(file_digest_finished)
def narrate_parsed_file(sender, context_set_id, file_id, filename, digest_status, **kwargs):
    session_id = ContextSet.objects.filter(pk=context_set_id).values_list("session_id", flat=True).first()
    if session_id is not None:
        engine.file_parsed_during_bind(session_id, filename, digest_status)


@receiver(context_settled)
def continue_bound_runs(sender, context_set_id, session_id, **kwargs):
    engine.context_settled_during_bind(session_id)
