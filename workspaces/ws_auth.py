"""Websocket auth: the Django session cookie (browser) or `?token=<DRF token>` (API clients).

The Origin check guards the cookie: a page on another site can make a browser open
a websocket that carries the user's cookie, so a cookie connection must come from an
allowed host's page. A token is a credential the client holds itself (no other site
can send it), and many API clients send no Origin at all, so a connection with a
valid token skips the Origin check. A token that is not valid is anonymous, never
the cookie's user.
"""

from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import AllowedHostsOriginValidator
from django.contrib.auth.models import AnonymousUser
from rest_framework.authtoken.models import Token


@database_sync_to_async
def user_for_token(key: str):
    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token and token.user.is_active else AnonymousUser()


class TokenOrSessionAuthMiddleware:
    def __init__(self, inner):
        self.inner = inner
        self.cookie_stack = AllowedHostsOriginValidator(AuthMiddlewareStack(inner))
        self.anonymous_stack = AllowedHostsOriginValidator(inner)

    async def __call__(self, scope, receive, send):
        token = parse_qs(scope.get("query_string", b"").decode()).get("token", [None])[0]
        if not token:
            return await self.cookie_stack(scope, receive, send)
        user = await user_for_token(token)
        if user.is_authenticated:
            return await self.inner({**scope, "user": user}, receive, send)
        # Not a valid token: the Origin check still applies, and the user is anonymous.
        return await self.anonymous_stack({**scope, "user": user}, receive, send)
