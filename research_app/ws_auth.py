"""Websocket auth: the Django session cookie (browser) or `?token=<DRF token>` (API clients)."""

from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser
from rest_framework.authtoken.models import Token


@database_sync_to_async
def user_for_token(key: str):
    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token and token.user.is_active else AnonymousUser()


class TokenAuthMiddleware:
    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        token = parse_qs(scope.get("query_string", b"").decode()).get("token", [None])[0]
        if token:
            scope = {**scope, "user": await user_for_token(token)}
        return await self.inner(scope, receive, send)


def TokenOrSessionAuthMiddleware(inner):  # noqa: N802 - reads like the other Channels stacks
    return AuthMiddlewareStack(TokenAuthMiddleware(inner))
