"""The chat's Celery jobs, by the names conversation_app/tasks.py registers them under
(queued with workspaces.jobs.queue_job: services.py does not import the tasks)."""

RESUME_TURN = "conversation.resume_turn"
REMIND = "conversation.remind"
EXPIRE = "conversation.expire"
