"""HTTP and websockets in one ASGI application (served by daphne)."""

import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# daphne serves /static/ itself: one process, no separate web server needed on a fresh machine.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from config.request_limits import RefuseOversizedBodies  # noqa: E402
from context_app.routing import websocket_urlpatterns as context_websockets  # noqa: E402
from conversation_app.routing import websocket_urlpatterns as chat_websockets  # noqa: E402
from llm_platform import embeddings  # noqa: E402
from research_app.routing import websocket_urlpatterns as research_websockets  # noqa: E402
from workspaces.ws_auth import TokenOrSessionAuthMiddleware  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": RefuseOversizedBodies(django_asgi_app),
        # The Origin check (for cookie sessions) is inside: a valid ?token= needs no Origin.
        "websocket": TokenOrSessionAuthMiddleware(
            URLRouter(context_websockets + research_websockets + chat_websockets)
        ),
    }
)
# A chat question is answered in the request: its search should not wait for the model to load.
embeddings.warm_up()
