from django.urls import path

from .consumers import ContextConsumer, FilesPaneConsumer

websocket_urlpatterns = [
    path("ws/sessions/<str:sid>/context/", ContextConsumer.as_asgi()),
    path("ws/sessions/<str:sid>/context/pane/", FilesPaneConsumer.as_asgi()),
]
