"""Celery entry points of the chat: load ids, call one service function. All safe to run twice."""

from celery import shared_task

from . import jobs, services


@shared_task(name=jobs.RESUME_TURN)
def resume_turn(request_id: str) -> None:
    services.resume_turn(request_id)


@shared_task(name=jobs.REMIND)
def remind(request_id: str) -> None:
    services.remind(request_id)


@shared_task(name=jobs.EXPIRE)
def expire(request_id: str) -> None:
    services.expire(request_id)
