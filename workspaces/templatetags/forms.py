"""What every server-rendered form of the product carries."""

import uuid

from django import template
from django.middleware.csrf import get_token
from django.utils.html import format_html

register = template.Library()


@register.simple_tag(takes_context=True)
def page_form_fields(context):
    """What a form posted without JavaScript carries: Django's CSRF token, and a fresh Idempotency-Key
    (SPEC §2.6: the same form posted twice replays its first answer).

    Only in a page rendered for a request: a live fragment (rendered by a consumer) is posted by
    script, which sends both as headers, a key per attempt; a key there would make every render differ.
    """
    request = context.get("request")
    if request is None:
        return ""
    return format_html(
        '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'
        '<input type="hidden" name="idempotency_key" value="{}">',
        get_token(request),
        uuid.uuid4(),
    )
