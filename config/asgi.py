"""HTTP and websockets in one ASGI application (served by daphne)."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from research_app.routing import websocket_urlpatterns  # noqa: E402
from research_app.ws_auth import TokenOrSessionAuthMiddleware  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            TokenOrSessionAuthMiddleware(URLRouter(websocket_urlpatterns))
        ),
    }
)
