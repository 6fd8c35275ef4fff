"""Celery entry points of the chat: load ids, call one service function. All safe to run twice."""

from celery import shared_task

from . import services


@shared_task(name="conversation.resume_turn")
def resume_turn(request_id: str) -> None:
    services.resume_turn(request_id)


@shared_task(name="conversation.run_queued_turn")
def run_queued_turn(message_id: str) -> None:
    services.run_queued_turn(message_id)


@shared_task(name="conversation.remind")
def remind(request_id: str) -> None:
    services.remind(request_id)


@shared_task(name="conversation.expire")
def expire(request_id: str) -> None:
    services.expire(request_id)
