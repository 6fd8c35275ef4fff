"""What the parsing pipeline tells the rest of the product, without knowing who listens.

research_app follows them to narrate a run's bind phase; context_app imports
nothing from the apps that depend on it (SPEC §1).
"""

from django.dispatch import Signal

# A file's Task A is over (ready, from the cache or a model call, or error).
# kwargs: context_set_id, file_id, filename, digest_status
file_digest_finished = Signal()

# Nothing is stale or parsing any more, the aggregate included.
# kwargs: context_set_id, session_id, revision, aggregate_digest_status
context_settled = Signal()
