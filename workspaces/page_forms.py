"""A form a page posts without JavaScript: it calls the service its JSON endpoint calls, then returns to
the page (a redirect, so a reload does not post again), where a refusal is shown as a message. With
JavaScript the same forms post to the JSON API instead (static/groundwork.js)."""

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import redirect
from rest_framework.decorators import api_view

from .api.decorators import idempotent, with_session
from .errors import ApplicationError

Result = TypeVar("Result")


def page_form(view):
    """POST only, signed in (api_view), done once per form key (idempotent), on a session the user sees."""
    return api_view(["POST"])(idempotent(with_session(view)))


def back_to_page(
    request, action: Callable[[], Result], page: str | Callable[[Result | None], str]
) -> HttpResponseRedirect:
    """Does `action`, then redirects to `page` (or to what `page` makes of the action's result: None
    when it was refused), with the refusal's message."""
    try:
        result = action()
    except ApplicationError as exc:
        messages.error(request, exc.message)
        result = None
    return redirect(page(result) if callable(page) else page)
