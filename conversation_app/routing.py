from django.urls import path

from .consumers import ConversationConsumer

websocket_urlpatterns = [
    path("ws/sessions/<str:sid>/conversation/", ConversationConsumer.as_asgi()),
]
