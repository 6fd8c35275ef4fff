from django.urls import path

from .consumers import ResearchPaneConsumer, RunConsumer, SessionRunsConsumer

websocket_urlpatterns = [
    path("ws/runs/<str:rid>/", RunConsumer.as_asgi()),
    path("ws/sessions/<str:sid>/runs/", SessionRunsConsumer.as_asgi()),
    path("ws/sessions/<str:sid>/runs/pane/", ResearchPaneConsumer.as_asgi()),
]
