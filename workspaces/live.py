"""The one way a change reaches the pages watching it: a message to a Channels group.

Every push follows a change already stored, so a dead channel layer is logged, never
raised: the watcher catches up on its next read (a manifest GET, `?after=N`, a reload).
"""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)


def push(group: str, message: dict) -> None:
    """Send `message` to everyone in `group` now."""
    try:
        async_to_sync(get_channel_layer().group_send)(group, message)
    except Exception:  # noqa: BLE001 - stored already; see the module's docstring
        logger.exception("could not push %s to %s", message.get("type"), group)


def push_on_commit(group: str, message: dict) -> None:
    """Send once the transaction commits: a watcher never hears of a row it cannot read yet."""
    transaction.on_commit(lambda: push(group, message))
