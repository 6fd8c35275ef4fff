from django.urls import path

from .consumers import ChatPaneConsumer, ConversationConsumer

websocket_urlpatterns = [
    path("ws/sessions/<str:sid>/conversation/", ConversationConsumer.as_asgi()),
    path("ws/sessions/<str:sid>/conversation/pane/", ChatPaneConsumer.as_asgi()),
]
