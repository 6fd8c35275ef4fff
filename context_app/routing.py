from django.urls import path

from .consumers import ContextConsumer

websocket_urlpatterns = [
    path("ws/sessions/<str:sid>/context/", ContextConsumer.as_asgi()),
]
