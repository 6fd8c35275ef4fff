from django.urls import path

from .consumers import RunConsumer, SessionRunsConsumer

websocket_urlpatterns = [
    path("ws/runs/<str:rid>/", RunConsumer.as_asgi()),
    path("ws/sessions/<str:sid>/runs/", SessionRunsConsumer.as_asgi()),
]
