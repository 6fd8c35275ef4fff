"""What every server-rendered form of the product carries."""

import uuid

from django import template
from django.utils.html import format_html

register = template.Library()


@register.simple_tag(takes_context=True)
def idempotency_key_field(context):
    """A fresh Idempotency-Key for a form posted without JavaScript (SPEC §2.6: a repeated post replays).

    Only in a page rendered for a request: a live fragment (rendered by a consumer) is posted by
    script, which sends its own key per attempt, and a key there would make every render differ.
    """
    if context.get("request") is None:
        return ""
    return format_html('<input type="hidden" name="idempotency_key" value="{}">', uuid.uuid4())
