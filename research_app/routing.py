from django.urls import path

from .consumers import ContextConsumer, RunConsumer

websocket_urlpatterns = [
    path("ws/sessions/<str:sid>/context/", ContextConsumer.as_asgi()),
    path("ws/runs/<str:rid>/", RunConsumer.as_asgi()),
]
