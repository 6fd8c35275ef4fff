from django.urls import path

from .consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<str:rid>/", RunConsumer.as_asgi()),
]
